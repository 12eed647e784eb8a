"""What every dialect's request renderer shares: the conversation read once, the common options.

Input: `messages` as OpenAI chat-style dicts and/or `Message` objects, `tools`
as OpenAI-style function tools, `Tool`s or provider-native tool dicts, and
the options. Output: `Turn`s (`System`, `User`, `Assistant`, `ToolResult`),
`Tool`s (or native dicts, passed through), and `Options` (the common knobs
apart, the rest passed through to the body unchanged; `output=` resolved by
`rxstream.core.schema`, its forced tool added when it asks for one).

Invariants: pure, no I/O; a caller mistake (a role rxstream does not know, a
tool result whose call id no assistant turn made, a knob of the wrong type)
is a `ValueError` or `TypeError` saying what arrived.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ...models import (
    JSON,
    Citation,
    JSONObject,
    Message,
    MessageBlock,
    ReasoningBlock,
    TextBlock,
    Tool,
    ToolCall,
)
from ..schema import OutputSpec, output_spec
from ..tools import is_generated_call_id

__all__ = [
    "OUTPUT_TOOL_DESCRIPTION",
    "Assistant",
    "ChatInput",
    "Options",
    "RequestSpec",
    "System",
    "ToolResult",
    "Turn",
    "User",
    "apply_extra",
    "arguments_object",
    "matched_by_name",
    "merged_option",
    "read_input",
    "result_object",
    "taken_by_output",
    "text_of",
    "thinking_budget",
    "unknown_option",
]


@dataclass(frozen=True, slots=True)
class RequestSpec:
    """A provider request without credentials: what the core renders, the io layer sends.

    Attributes:
        method: the HTTP method.
        path: the path under the API's base URL (the model in it where the
            provider wants it there), without a query.
        query: the query parameters.
        headers: the headers that are not credentials.
        body: the JSON body.
    """

    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: JSONObject


@dataclass(frozen=True, slots=True)
class System:
    """A system (or developer) message."""

    text: str


@dataclass(frozen=True, slots=True)
class User:
    """A user message: OpenAI-style content parts (`text`, `image_url`)."""

    parts: tuple[JSONObject, ...]


@dataclass(frozen=True, slots=True)
class Assistant:
    """An assistant turn: its blocks in order, a refusal if it had one, its citations.

    `citations` are the `Message`'s (`Message.citations`), for the dialects
    that take them on a turn apart from its blocks (Cohere, Bedrock).
    """

    blocks: tuple[MessageBlock, ...]
    refusal: str = ""
    citations: tuple[Citation, ...] = ()


@dataclass(frozen=True, slots=True)
class ToolResult:
    """The result of a client tool call.

    Attributes:
        call_id: the id of the call it answers (None for a provider that
            gave the call none: Gemini, Ollama).
        name: the called function (as given, else found in the assistant
            turn that made the call; None if neither says).
        content: the result text.
    """

    call_id: str | None
    name: str | None
    content: str


Turn = System | User | Assistant | ToolResult


@dataclass(frozen=True, slots=True)
class Options:
    """The common knobs, and everything else to pass through unchanged.

    Attributes:
        max_tokens: the output limit.
        temperature: the sampling temperature.
        reasoning: an effort (`"low"`, `"medium"`, `"high"`, ...), a token
            budget (`int`), or True / False (on with the provider's default,
            or off).
        tool_choice: `"auto"`, `"none"`, `"required"`, or a function name
            (also as OpenAI's `{"type": "function", "function": {"name": ...}}`).
        stop: the stop sequences.
        output: the typed answer asked for (`output=`), resolved; None when
            none is. With `via="tool"` the forced tool is already among the
            tools and `tool_choice` names it: a renderer maps only the native form.
        extra: every other option, for the body as it is (None leaves that
            field out, also one rxstream would send: `stream_options=None`).
    """

    max_tokens: int | None = None
    temperature: float | None = None
    reasoning: str | int | bool | None = None
    tool_choice: str | None = None
    stop: tuple[str, ...] = ()
    output: OutputSpec | None = None
    extra: JSONObject = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ChatInput:
    """The conversation, tools and options, read once for every dialect."""

    model: str
    turns: tuple[Turn, ...]
    tools: tuple[Tool | JSONObject, ...]
    options: Options


def text_of(parts: Iterable[JSONObject]) -> str:
    """The text of OpenAI-style content parts, joined."""
    return "".join(str(p.get("text", "")) for p in parts if p.get("type") == "text")


def _parts(content: JSON, where: str) -> tuple[JSONObject, ...]:
    if content is None:
        return ()
    if isinstance(content, str):
        return ({"type": "text", "text": content},)
    if isinstance(content, list) and all(isinstance(p, dict) for p in content):
        return tuple(content)
    raise TypeError(f"{where}.content must be a string or a list of parts, got {content!r:.200}")


def _content_text(content: JSON, where: str) -> str:
    if isinstance(content, str):
        return content
    if content is None:
        return ""
    if isinstance(content, list):
        return text_of(_parts(content, where))
    return json.dumps(content, separators=(",", ":"))


def _assistant_from_dict(message: Mapping[str, Any], where: str) -> Assistant:
    blocks: list[MessageBlock] = []
    text = text_of(_parts(message.get("content"), where))
    if text:
        blocks.append(TextBlock(text))
    calls = message.get("tool_calls") or []
    if not isinstance(calls, list):
        raise TypeError(f"{where}.tool_calls must be a list, got {calls!r:.200}")
    for i, call in enumerate(calls):
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise TypeError(
                f"{where}.tool_calls[{i}] must be {{'id', 'type': 'function', "
                f"'function': {{'name', 'arguments'}}}}, got {call!r:.200}"
            )
        arguments = function.get("arguments", "")
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments, separators=(",", ":"))
        blocks.append(ToolCall(i, call.get("id"), function["name"], arguments))
    refusal = message.get("refusal")
    return Assistant(tuple(blocks), refusal if isinstance(refusal, str) else "")


def _assistant_from_message(message: Message) -> Assistant:
    if message.blocks:
        return Assistant(message.blocks, message.refusal, message.citations)
    # Built by hand (or by an older rxstream): reasoning, then text, then calls.
    blocks: list[MessageBlock] = []
    states = list(message.reasoning_state)
    closing = next((s for s in states if s.kind in ("thinking", "reasoning_item")), None)
    if message.reasoning or closing is not None:
        blocks.append(ReasoningBlock(message.reasoning, closing))
    blocks.extend(s for s in states if s is not closing)
    if message.content:
        blocks.append(TextBlock(message.content))
    blocks.extend(message.tool_calls)
    return Assistant(tuple(blocks), message.refusal, message.citations)


def _read_turns(messages: Iterable[Mapping[str, Any] | Message]) -> tuple[Turn, ...]:
    turns: list[Turn] = []
    names: dict[str, str] = {}
    for i, message in enumerate(messages):
        where = f"messages[{i}]"
        if isinstance(message, Message):
            turn: Turn = _assistant_from_message(message)
        elif isinstance(message, Mapping):
            role = message.get("role")
            if role in ("system", "developer"):
                turn = System(_content_text(message.get("content"), where))
            elif role == "user":
                turn = User(_parts(message.get("content"), where))
            elif role == "assistant":
                turn = _assistant_from_dict(message, where)
            elif role == "tool":
                call_id = message.get("tool_call_id")
                name = message.get("name")
                if not isinstance(call_id, str) and not isinstance(name, str):
                    raise ValueError(
                        f"{where} (a tool result) needs a 'tool_call_id' string (or, for a "
                        "call that came without an id, the function's 'name')"
                    )
                turn = ToolResult(
                    call_id if isinstance(call_id, str) else None,
                    name if isinstance(name, str) else names.get(call_id or ""),
                    _content_text(message.get("content"), where),
                )
            else:
                raise ValueError(
                    f"{where} has role {role!r}; one of 'system', 'developer', 'user', "
                    "'assistant', 'tool'"
                )
        else:
            raise TypeError(
                f"{where} must be an OpenAI chat-style dict or an rs.Message, "
                f"got {type(message).__name__}"
            )
        if isinstance(turn, Assistant):
            names.update(
                (b.id, b.name) for b in turn.blocks if isinstance(b, ToolCall) and b.id and b.name
            )
        turns.append(turn)
    return tuple(turns)


def _read_tool(tool: Tool | Mapping[str, Any], i: int) -> Tool | JSONObject:
    if isinstance(tool, Tool):
        return tool
    if not isinstance(tool, Mapping):
        raise TypeError(f"tools[{i}] must be an rs.Tool or a dict, got {type(tool).__name__}")
    function = tool.get("function") if tool.get("type") == "function" else None
    if isinstance(function, Mapping) and isinstance(function.get("name"), str):
        return Tool(
            function["name"],
            function.get("description") or "",
            function.get("parameters") or {"type": "object", "properties": {}},
        )
    return dict(tool)  # a provider's own tool (web search, code execution, ...): as it is


def _tool_choice(value: JSON) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        function = value.get("function")
        if isinstance(function, Mapping) and isinstance(function.get("name"), str):
            return str(function["name"])
        if isinstance(value.get("name"), str):
            return str(value["name"])
    raise TypeError(
        "tool_choice must be 'auto', 'none', 'required', a function name, or "
        f"{{'type': 'function', 'function': {{'name': ...}}}}, got {value!r:.200}"
    )


def _options(options: Mapping[str, Any]) -> Options:
    extra = dict(options)
    max_tokens = extra.pop("max_tokens", None)
    if max_tokens is not None and (type(max_tokens) is not int or max_tokens < 1):
        raise ValueError(f"max_tokens must be a positive int, got {max_tokens!r}")
    temperature = extra.pop("temperature", None)
    if temperature is not None and not isinstance(temperature, int | float):
        raise TypeError(f"temperature must be a number, got {temperature!r}")
    reasoning = extra.pop("reasoning", None)
    if reasoning is not None and not isinstance(reasoning, str | int):
        raise TypeError(
            f"reasoning must be an effort ('low', 'medium', 'high'), a token budget (int) "
            f"or a bool, got {reasoning!r}"
        )
    stop = extra.pop("stop", None)
    if isinstance(stop, str):
        stops: tuple[str, ...] = (stop,)
    elif stop is None:
        stops = ()
    elif isinstance(stop, list | tuple) and all(isinstance(s, str) for s in stop):
        stops = tuple(stop)
    else:
        raise TypeError(f"stop must be a string or a list of strings, got {stop!r}")
    output = extra.pop("output", None)
    return Options(
        max_tokens,
        None if temperature is None else float(temperature),
        reasoning,
        _tool_choice(extra.pop("tool_choice", None)),
        stops,
        None if output is None else output_spec(output),
        extra,
    )


#: What the forced tool of `Output(via="tool")` tells the model.
OUTPUT_TOOL_DESCRIPTION = "Give your answer by calling this function: its arguments are the answer."


def _with_output_tool(
    tools: tuple[Tool | JSONObject, ...], options: Options
) -> tuple[tuple[Tool | JSONObject, ...], Options]:
    """The tools and options with `Output(via="tool")`'s forced tool added (else as they are)."""
    output = options.output
    if output is None or output.via != "tool":
        return tools, options
    if options.tool_choice not in (None, output.name):
        raise ValueError(
            f"output= with via='tool' forces the tool {output.name!r}; it cannot go with "
            f"tool_choice={options.tool_choice!r}"
        )
    if any(isinstance(t, Tool) and t.name == output.name for t in tools):
        raise ValueError(
            f"output= with via='tool' adds a tool named {output.name!r}, and tools has one "
            "already: give the Output another name"
        )
    forced = Tool(output.name, OUTPUT_TOOL_DESCRIPTION, output.schema)
    return (*tools, forced), replace(options, tool_choice=output.name)


def read_input(
    model: str,
    messages: Iterable[Mapping[str, Any] | Message],
    tools: Iterable[Tool | Mapping[str, Any]] | None,
    options: Mapping[str, Any],
) -> ChatInput:
    """Read the conversation, tools and options once, for any dialect's renderer.

    Raises:
        ValueError, TypeError: a message, tool or option of a shape rxstream
            does not know, saying which and what arrived.

    >>> read_input("m", [{"role": "user", "content": "Hi"}], None, {"stop": "x"}).options.stop
    ('x',)
    """
    if not isinstance(model, str) or not model:
        raise ValueError(f"model must be a non-empty string, got {model!r}")
    if isinstance(messages, str | bytes | Mapping | Message):
        raise TypeError("messages must be a list of messages, not a single one")
    read_tools, read_options = _with_output_tool(
        tuple(_read_tool(t, i) for i, t in enumerate(tools or ())), _options(options)
    )
    return ChatInput(model, _read_turns(messages), read_tools, read_options)


def matched_by_name(turns: Sequence[Turn], dialect: str) -> list[Turn]:
    """`turns` for a provider that matches tool results to calls by name and order.

    Gemini and Ollama calls may come without an id; rxstream gives such a
    call one (`is_generated_call_id`), which a tool result answers as in any
    OpenAI-style loop. For these providers such a result needs the name of
    the call it answers (found in the assistant turn that made it when not
    given), and the results after an assistant turn go in the order of the
    calls they answer, which is how the provider pairs them.

    Raises:
        ValueError: a result answers an id rxstream made for a call no
            assistant turn before it holds, and names no function.
    """
    out: list[Turn] = []
    order: dict[str, int] = {}  # the latest assistant turn's calls, by id
    run: list[ToolResult] = []

    def flush() -> None:
        if all(is_generated_call_id(r.call_id) for r in run):
            run.sort(key=lambda r: order.get(r.call_id or "", len(order)))
        out.extend(run)
        run.clear()

    for turn in turns:
        if not isinstance(turn, ToolResult):
            flush()
            out.append(turn)
            if isinstance(turn, Assistant):
                calls = [b for b in turn.blocks if isinstance(b, ToolCall) and b.id]
                order = {call.id: n for n, call in enumerate(calls) if call.id}
            continue
        if turn.name is None and is_generated_call_id(turn.call_id):
            raise ValueError(
                f"{dialect} matches a tool result to its call by name: the result for "
                f"{turn.call_id!r} names no function, and no assistant turn before it made "
                "that call"
            )
        run.append(turn)
    flush()
    return out


def arguments_object(call: ToolCall) -> JSON:
    """A call's arguments decoded (for providers that take an object); `{}` when empty.

    Arguments that are not JSON are sent as the text they are, which the
    provider will refuse with its own error.
    """
    try:
        return json.loads(call.arguments) if call.arguments.strip() else {}
    except ValueError:
        return call.arguments


def result_object(content: str) -> JSONObject:
    """A tool result as an object: the JSON object it holds, else `{"output": text}`."""
    try:
        value = json.loads(content)
    except ValueError:
        return {"output": content}
    return value if isinstance(value, dict) else {"output": content}


def apply_extra(body: JSONObject, extra: Mapping[str, Any]) -> None:
    """Put the pass-through options on `body`: each as it is, and None leaves its field out.

    >>> body = {"model": "m", "stream_options": {"include_usage": True}}
    >>> apply_extra(body, {"stream_options": None, "seed": 7})
    >>> body
    {'model': 'm', 'seed': 7}
    """
    for key, value in extra.items():
        if value is None:
            body.pop(key, None)
        else:
            body[key] = value


def merged_option(extra: JSONObject, key: str, value: JSONObject) -> JSONObject:
    """`value` merged over the caller's own `key` option, which leaves `extra`.

    For a field rxstream fills that holds other settings too (Anthropic's
    `output_config` with its `effort`, Responses' `text` with its
    `verbosity`): both are kept.

    >>> extra = {"text": {"verbosity": "low"}}
    >>> merged_option(extra, "text", {"format": {"type": "json_object"}}), extra
    ({'verbosity': 'low', 'format': {'type': 'json_object'}}, {})
    """
    own = extra.pop(key, None)
    return {**own, **value} if isinstance(own, dict) else value


def taken_by_output(dialect: str, extra: JSONObject, key: str) -> None:
    """Refuse an option of the caller's own in the field `output=` fills (it would replace it).

    Raises:
        ValueError: `key` is among the options.
    """
    if extra.get(key) is not None:
        raise ValueError(
            f"{dialect}: output= fills {key}; pass one or the other, not both "
            f"(got {key}={extra[key]!r:.120})"
        )


def unknown_option(dialect: str, name: str, why: str) -> ValueError:
    """The error for a common option a dialect cannot carry."""
    return ValueError(f"{dialect} does not take {name}: {why}")


#: Claude's thinking budgets (tokens) per `reasoning=` effort (Anthropic's API and Bedrock).
BUDGETS = {"minimal": 1024, "low": 1024, "medium": 4096, "high": 16384}


def thinking_budget(dialect: str, value: object) -> JSONObject:
    """Claude's `thinking` object for `reasoning=value`: False or "none" disables it,
    True is "medium", an integer is the budget itself, an effort is its `BUDGETS` entry.

    Raises:
        ValueError: any other value.
    """
    if value is False or value == "none":
        return {"type": "disabled"}
    if value is True:
        return {"type": "enabled", "budget_tokens": BUDGETS["medium"]}
    if isinstance(value, int):
        return {"type": "enabled", "budget_tokens": value}
    if isinstance(value, str) and value in BUDGETS:
        return {"type": "enabled", "budget_tokens": BUDGETS[value]}
    raise unknown_option(
        dialect, f"reasoning={value!r}", f"an effort is one of {', '.join(BUDGETS)}"
    )

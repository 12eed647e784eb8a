"""A whole tool-using run, scripted: the fake server's answers depend on the results it gets back.

`RunScript(step, step, ..., answer)` is a `Reply` (a `FakeLLMServer` takes it
in place of a `Scenario`). Each step but the last calls tools (`ScriptCall`s,
which run in parallel when there are several); the last answers with text. A
step may be a function of the results the client sent back so far
(`SeenResults`): a call whose arguments come from an earlier result, a text
that quotes them.

The server keeps no state between requests: each request's conversation says
which step it is at. `tool_results(request)` reads every tool result the
conversation carries, in order, in the asked dialect's own form (the calls'
names found from the assistant turns where a result names only its call id):

| dialect | a tool result |
|---|---|
| openai-chat, cohere | `{"role": "tool", "tool_call_id", "content"}` |
| ollama | `{"role": "tool", "tool_name", "content"}` (no id) |
| openai-responses | `{"type": "function_call_output", "call_id", "output"}` |
| anthropic | a `tool_result` block (`tool_use_id`, `content`, `is_error`) in a user turn |
| gemini | a `functionResponse` part (`name`, `id`, `response`) |
| bedrock | a `toolResult` block (`toolUseId`, `content`, `status`) |
| ai-sdk | an assistant UI message's `tool-NAME` (or `dynamic-tool`) part, in an `output-*` state |

A result's `output` is the same JSON value in every dialect: text that is JSON
is decoded, Gemini's `{"output": text}` wrapper is taken off, Bedrock's
`json` block is its value. The script matches the results of step N to its
calls by their ids (`call_N_I`: step N, call I), by name where a dialect sends
no id back. A request that answers only some of a step's calls, answers calls
the script never made, or goes on after the final answer is refused with an
HTTP 400 in the provider's shape, saying what arrived.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from ..models import Delta, Finish, JSONObject, TextDelta, ToolCallDelta, Usage
from ._routes import route
from ._scenario import JSON, RecordedRequest, Scenario

__all__ = ["RunScript", "ScriptCall", "SeenResult", "SeenResults", "tool_results"]


@dataclass(frozen=True, slots=True)
class ScriptCall:
    """One tool call a scripted step makes: the tool's name and its arguments (a JSON object)."""

    name: str
    arguments: JSONObject = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SeenResult:
    """One tool result a request carries.

    Attributes:
        call_id: the id of the call it answers (None: the dialect sends none, as Ollama).
        name: the called tool's name (None: neither the result nor its call names it).
        output: the result as a JSON value (text that is JSON decoded, see the module).
        error: the result is marked as an error (Anthropic's `is_error`, Bedrock's
            `status: "error"`, the AI SDK's `output-error` and `output-denied`).
    """

    call_id: str | None
    name: str | None
    output: JSON
    error: bool = False


class SeenResults(Sequence[SeenResult]):
    """The results a step may depend on, in order; `results["get_weather"]` is the output of
    the latest result of that tool (a `KeyError` naming the tools seen when there is none).

    Example:
        >>> seen = SeenResults([SeenResult("call_1_0", "get_weather", {"temp_c": 18})])
        >>> seen["get_weather"]["temp_c"], len(seen)
        (18, 1)
    """

    def __init__(self, results: Sequence[SeenResult]) -> None:
        self._results = tuple(results)

    def __len__(self) -> int:
        return len(self._results)

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            for result in reversed(self._results):
                if result.name == key:
                    return result.output
            names = sorted({r.name for r in self._results if r.name is not None})
            raise KeyError(f"no result of the tool {key!r} was sent back; results of: {names}")
        return self._results[key]

    def __iter__(self) -> Iterator[SeenResult]:
        return iter(self._results)

    def __repr__(self) -> str:
        return f"SeenResults({list(self._results)!r})"


#: What a step does: call tools, or answer with text; or a function of the results so far
#: that says which.
StepSpec: TypeAlias = (
    Sequence[ScriptCall] | str | Callable[[SeenResults], "Sequence[ScriptCall] | str"]
)


class RunScript:
    """A multi-step run for the fake server: tool calls that depend on the results sent back.

    Args:
        steps: in order; each is a sequence of `ScriptCall`s (a step that calls
            those tools, in parallel), a `str` (the final answer), or a function
            of the `SeenResults` so far giving either. The last step must answer
            with text.
        usage: each answer ends with a `Usage` (a token per four bytes of the
            request in, a token per piece out).

    Attributes:
        steps_asked: the step (from 1) each answered request was at, in order
            (a refused request is not counted).

    Example:
        >>> script = RunScript(
        ...     [ScriptCall("get_weather", {"city": "Paris"}), ScriptCall("get_time")],
        ...     lambda seen: [ScriptCall("to_fahrenheit", {"c": seen["get_weather"]["c"]})],
        ...     lambda seen: f"It is {seen['to_fahrenheit']} F.",
        ... )
        >>> with FakeLLMServer(script) as server:  # doctest: +SKIP
        ...     ...  # a run against server.url_for(dialect)
    """

    def __init__(self, *steps: StepSpec, usage: bool = True) -> None:
        if not steps:
            raise ValueError("a RunScript needs at least one step (the final answer)")
        for step in steps:
            if not (callable(step) or isinstance(step, str) or _is_calls(step)):
                raise TypeError(
                    "each step is a sequence of ScriptCall, a str or a function of the "
                    f"results so far, got {step!r}"
                )
        self._steps = steps
        self._usage = usage
        self._lock = threading.Lock()
        self.steps_asked: list[int] = []

    def __call__(self, request: RecordedRequest) -> Scenario:
        dialect = route(request.path, request.json) or "openai-chat"
        seen = tool_results(request, dialect=dialect)
        try:
            number, spec = self._step_of(seen)
        except _Refused as refused:
            return Scenario.error(400, str(refused), type="invalid_request_error")
        with self._lock:
            self.steps_asked.append(number)
        deltas: list[Delta]
        if isinstance(spec, str):
            deltas = [TextDelta(spec), Finish("stop")]
        else:
            deltas = [*_calls(number, spec), Finish("tool_calls")]
        if self._usage:
            prompt = max(1, len(request.body) // 4)
            deltas.append(Usage(prompt, len(deltas) - 1, prompt + len(deltas) - 1))
        return Scenario.answer(*deltas)

    def _step_of(self, seen: tuple[SeenResult, ...]) -> tuple[int, Sequence[ScriptCall] | str]:
        """The step (numbered from 1) the results so far lead to, and what it does."""
        used = 0
        for number, step in enumerate(self._steps, start=1):
            spec = step(SeenResults(seen[:used])) if callable(step) else step
            if isinstance(spec, str):
                if used < len(seen):
                    raise _Refused(
                        f"step {number} is the final answer, but the request carries "
                        f"{len(seen) - used} more tool result(s): {_brief(seen[used:])}"
                    )
                return number, spec
            if not _is_calls(spec):
                raise TypeError(f"step {number} gave {spec!r}: a sequence of ScriptCall or a str")
            if used == len(seen):
                return number, spec
            answered = seen[used : used + len(spec)]
            _check_answers(number, spec, answered)
            used += len(spec)
        raise _Refused(
            f"the script's {len(self._steps)} steps are over; the request carries "
            f"{len(seen)} tool result(s): {_brief(seen)}"
        )


class _Refused(Exception):
    """A request the script cannot answer: the 400's message."""


def _is_calls(value: object) -> bool:
    return (
        isinstance(value, Sequence)
        and not isinstance(value, str)
        and bool(value)
        and all(isinstance(call, ScriptCall) for call in value)
    )


def _call_id(step: int, index: int) -> str:
    return f"call_{step}_{index}"


def _calls(step: int, calls: Sequence[ScriptCall]) -> list[Delta]:
    """Each call in two fragments (a streamed call comes in pieces), in parallel."""
    out: list[Delta] = []
    for index, call in enumerate(calls):
        arguments = json.dumps(call.arguments, ensure_ascii=False, separators=(",", ":"))
        half = len(arguments) // 2
        out.append(ToolCallDelta(index, arguments[:half], id=_call_id(step, index), name=call.name))
        out.append(ToolCallDelta(index, arguments[half:]))
    return out


def _check_answers(
    step: int, calls: Sequence[ScriptCall], answered: tuple[SeenResult, ...]
) -> None:
    """Refuse results that do not answer exactly `step`'s calls (by id, else by name)."""
    wanted = [(_call_id(step, i), call.name) for i, call in enumerate(calls)]
    if len(answered) < len(wanted):
        raise _Refused(
            f"step {step} made {len(wanted)} call(s) ({_names(wanted)}); the request answers "
            f"{len(answered)}: {_brief(answered)}"
        )
    open_calls = list(wanted)
    for result in answered:
        match = next(
            (
                c
                for c in open_calls
                if (result.call_id == c[0]) or (result.call_id is None and result.name == c[1])
            ),
            None,
        )
        if match is None:
            raise _Refused(
                f"step {step} made the call(s) {_names(open_calls)}; the result "
                f"{_brief((result,))} answers none of them"
            )
        open_calls.remove(match)


def _names(calls: Sequence[tuple[str, str]]) -> str:
    return ", ".join(f"{id} {name}" for id, name in calls)


def _brief(results: Sequence[SeenResult]) -> str:
    text = ", ".join(f"{r.call_id} {r.name}: {json.dumps(r.output)[:60]}" for r in results)
    return text or "none"


# ----------------------------------------------------------------- reading results


def tool_results(request: RecordedRequest, *, dialect: str | None = None) -> tuple[SeenResult, ...]:
    """Every tool result `request`'s conversation carries, in order (see the module docstring).

    Args:
        request: a request the fake server recorded (`server.requests[i]`).
        dialect: the dialect to read it in (default: the one its path and body ask for).

    Example:
        >>> body = {"messages": [
        ...     {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function",
        ...         "function": {"name": "f", "arguments": "{}"}}]},
        ...     {"role": "tool", "tool_call_id": "c1", "content": '{"ok": true}'}]}
        >>> tool_results(RecordedRequest("POST", "/v1/chat/completions", {}, b"", body))
        (SeenResult(call_id='c1', name='f', output={'ok': True}, error=False),)
    """
    dialect = dialect or route(request.path, request.json) or "openai-chat"
    body = request.json if isinstance(request.json, dict) else {}
    reader = _READERS.get(dialect)
    if reader is None:
        raise ValueError(f"no tool results to read in the dialect {dialect!r}")
    return tuple(reader(body))


def _output(value: JSON) -> JSON:
    """A result's value: text that is JSON decoded, else the value as it is."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _content_text(content: JSON) -> JSON:
    """Content as text parts (`[{"type": "text", "text"}]`) or a str: the text; else as it is."""
    if isinstance(content, list) and all(isinstance(p, dict) and "text" in p for p in content):
        return "".join(str(p["text"]) for p in content)
    return content


def _str(value: JSON) -> str | None:
    return value if isinstance(value, str) else None


def _dicts(value: JSON) -> list[dict[str, Any]]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _openai_style(body: Mapping[str, Any]) -> Iterator[SeenResult]:
    """OpenAI Chat, Cohere, Ollama: `role: "tool"` messages (names from the assistant calls)."""
    names: dict[str, str | None] = {}
    for message in _dicts(body.get("messages")):
        for call in _dicts(message.get("tool_calls")):
            function = call.get("function")
            if isinstance(call.get("id"), str) and isinstance(function, dict):
                names[call["id"]] = _str(function.get("name"))
        if message.get("role") != "tool":
            continue
        call_id = message.get("tool_call_id")
        call_id = call_id if isinstance(call_id, str) else None
        name = message.get("tool_name", message.get("name"))
        name = name if isinstance(name, str) else names.get(call_id or "")
        yield SeenResult(call_id, name, _output(_content_text(message.get("content"))))


def _responses(body: Mapping[str, Any]) -> Iterator[SeenResult]:
    items = body.get("input")
    names: dict[str, str | None] = {}
    for item in _dicts(items):
        if item.get("type") == "function_call" and isinstance(item.get("call_id"), str):
            names[item["call_id"]] = _str(item.get("name"))
        elif item.get("type") == "function_call_output":
            call_id = item.get("call_id")
            call_id = call_id if isinstance(call_id, str) else None
            output = _content_text(item.get("output"))
            yield SeenResult(call_id, names.get(call_id or ""), _output(output))


def _anthropic(body: Mapping[str, Any]) -> Iterator[SeenResult]:
    names: dict[str, str | None] = {}
    for message in _dicts(body.get("messages")):
        for block in _dicts(message.get("content")):
            if block.get("type") == "tool_use" and isinstance(block.get("id"), str):
                names[block["id"]] = _str(block.get("name"))
            elif block.get("type") == "tool_result":
                call_id = block.get("tool_use_id")
                call_id = call_id if isinstance(call_id, str) else None
                output = _output(_content_text(block.get("content")))
                error = block.get("is_error") is True
                yield SeenResult(call_id, names.get(call_id or ""), output, error)


def _gemini(body: Mapping[str, Any]) -> Iterator[SeenResult]:
    for content in _dicts(body.get("contents")):
        for part in _dicts(content.get("parts")):
            response = part.get("functionResponse")
            if not isinstance(response, dict):
                continue
            value = response.get("response")
            if isinstance(value, dict) and list(value) == ["output"]:
                value = _output(value["output"])
            call_id, name = response.get("id"), response.get("name")
            yield SeenResult(
                call_id if isinstance(call_id, str) else None,
                name if isinstance(name, str) else None,
                value,
            )


def _bedrock(body: Mapping[str, Any]) -> Iterator[SeenResult]:
    names: dict[str, str | None] = {}
    for message in _dicts(body.get("messages")):
        for block in _dicts(message.get("content")):
            use = block.get("toolUse")
            if isinstance(use, dict) and isinstance(use.get("toolUseId"), str):
                names[use["toolUseId"]] = _str(use.get("name"))
            result = block.get("toolResult")
            if not isinstance(result, dict):
                continue
            call_id = result.get("toolUseId")
            call_id = call_id if isinstance(call_id, str) else None
            parts = _dicts(result.get("content"))
            if len(parts) == 1 and "json" in parts[0]:
                output: JSON = parts[0]["json"]
            else:
                output = _output(_content_text(parts))
            error = result.get("status") == "error"
            yield SeenResult(call_id, names.get(call_id or ""), output, error)


_UI_DONE = {"output-available", "output-error", "output-denied"}


def _ai_sdk(body: Mapping[str, Any]) -> Iterator[SeenResult]:
    """The AI SDK's UI messages: a client tool's result is in the assistant's own message."""
    for message in _dicts(body.get("messages")):
        if message.get("role") != "assistant":
            continue
        for part in _dicts(message.get("parts")):
            kind, state = part.get("type"), part.get("state")
            if not isinstance(kind, str) or state not in _UI_DONE:
                continue
            if kind == "dynamic-tool":
                name = part.get("toolName")
            elif kind.startswith("tool-"):
                name = kind.removeprefix("tool-")
            else:
                continue
            call_id = part.get("toolCallId")
            output = part.get("output") if state == "output-available" else part.get("errorText")
            yield SeenResult(
                call_id if isinstance(call_id, str) else None,
                name if isinstance(name, str) else None,
                _output(output),
                state != "output-available",
            )


_READERS: dict[str, Callable[[Mapping[str, Any]], Iterator[SeenResult]]] = {
    "openai-chat": _openai_style,
    "cohere": _openai_style,
    "ollama": _openai_style,
    "openai-responses": _responses,
    "anthropic": _anthropic,
    "gemini": _gemini,
    "bedrock": _bedrock,
    "ai-sdk": _ai_sdk,
}

"""The OpenAI chat completions request body (`POST {base}/chat/completions`), sans I/O.

Input: the conversation, tools and options (`read_input`). Output: a
`RequestSpec` without credentials.

Rules:

- messages go as they are written (the lingua franca is this format); an
  `rs.Message` becomes `{"role": "assistant", "content", "tool_calls"}`
  (and `refusal`); its reasoning is not sent, as chat completions take none
  back;
- tools: `{"type": "function", "function": {name, description, parameters}}`;
  a provider's own tool dict goes as it is;
- `max_tokens` is sent as `max_tokens`, which every OpenAI-compatible server
  reads (OpenAI's reasoning models want `max_completion_tokens`: pass that
  name instead, it goes through as it is), `stop`, `temperature`,
  `tool_choice` as written (a function name as
  `{"type": "function", "function": {"name"}}`), `reasoning` as
  `reasoning_effort` (an effort only: a token budget is an error);
- usage is asked for: `stream_options.include_usage` (`stream_options=None`
  sends none);
- `output=` is `response_format: {"type": "json_schema", "json_schema":
  {name, schema, strict}}`, the schema rewritten for strict mode when strict
  (`rxstream.core.schema.strict_schema`), as the openai SDK sends it for
  `response_format=Model`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ....models import JSONObject, Message, TextBlock, Tool, ToolCall
from ...schema import OutputSpec, strict_schema
from ..chat_input import (
    Assistant,
    ChatInput,
    RequestSpec,
    System,
    ToolResult,
    User,
    apply_extra,
    read_input,
    taken_by_output,
    unknown_option,
)

__all__ = ["chat_tool", "json_schema_format", "render_request", "render_turns"]

_DIALECT = "openai-chat"


def chat_tool(tool: Tool | JSONObject) -> JSONObject:
    """A tool in the chat completions form (a provider's own dict as it is)."""
    if isinstance(tool, Tool):
        return {
            "type": "function",
            "function": {
                "name": tool.name,
                "description": tool.description,
                "parameters": tool.parameters,
            },
        }
    return tool


def _call(call: ToolCall) -> JSONObject:
    return {
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": call.arguments},
    }


def render_turns(chat: ChatInput) -> list[JSONObject]:
    """The conversation as chat completions messages (also Cohere's starting point)."""
    out: list[JSONObject] = []
    for turn in chat.turns:
        match turn:
            case System(text=text):
                out.append({"role": "system", "content": text})
            case User(parts=parts):
                if len(parts) == 1 and parts[0].get("type") == "text":
                    out.append({"role": "user", "content": parts[0].get("text", "")})
                else:
                    out.append({"role": "user", "content": list(parts)})
            case Assistant(blocks=blocks, refusal=refusal):
                text = "".join(b.text for b in blocks if isinstance(b, TextBlock))
                calls = [_call(b) for b in blocks if isinstance(b, ToolCall)]
                message: JSONObject = {"role": "assistant", "content": text or None}
                if refusal:
                    message["refusal"] = refusal
                if calls:
                    message["tool_calls"] = calls
                out.append(message)
            case ToolResult(call_id=call_id, content=content):
                out.append({"role": "tool", "tool_call_id": call_id, "content": content})
    return out


def json_schema_format(output: OutputSpec) -> JSONObject:
    """`output=` as chat completions' `response_format` (Responses' `text.format` holds it too)."""
    schema = strict_schema(output.schema) if output.strict else output.schema
    return {
        "type": "json_schema",
        "json_schema": {"name": output.name, "schema": schema, "strict": output.strict},
    }


def _reasoning_effort(value: str | int | bool) -> str:
    if isinstance(value, bool):
        return "medium" if value else "none"
    if isinstance(value, int):
        raise unknown_option(
            _DIALECT, f"reasoning={value!r}", "it takes an effort ('low', 'medium', 'high')"
        )
    return value


def render_request(
    model: str,
    messages: Iterable[Mapping[str, Any] | Message],
    tools: Iterable[Tool | Mapping[str, Any]] | None = None,
    **options: Any,
) -> RequestSpec:
    """The streaming chat completions request.

    Raises:
        ValueError, TypeError: see `read_input`; a token budget for `reasoning`.

    >>> spec = render_request("gpt-4o-mini", [{"role": "user", "content": "Hi"}])
    >>> spec.path, spec.body["stream_options"]
    ('/chat/completions', {'include_usage': True})
    """
    chat = read_input(model, messages, tools, options)
    opts = chat.options
    body: JSONObject = {"model": chat.model, "messages": render_turns(chat)}
    if chat.tools:
        body["tools"] = [chat_tool(t) for t in chat.tools]
    if opts.max_tokens is not None:
        body["max_tokens"] = opts.max_tokens
    if opts.temperature is not None:
        body["temperature"] = opts.temperature
    if opts.stop:
        body["stop"] = list(opts.stop)
    if opts.reasoning is not None:
        body["reasoning_effort"] = _reasoning_effort(opts.reasoning)
    if opts.tool_choice is not None:
        choice = opts.tool_choice
        body["tool_choice"] = (
            choice
            if choice in ("auto", "none", "required")
            else {"type": "function", "function": {"name": choice}}
        )
    if opts.output is not None and opts.output.via == "native":
        taken_by_output(_DIALECT, opts.extra, "response_format")
        body["response_format"] = json_schema_format(opts.output)
    body["stream"] = True
    body["stream_options"] = {"include_usage": True}
    apply_extra(body, opts.extra)
    return RequestSpec("POST", "/chat/completions", {}, {}, body)

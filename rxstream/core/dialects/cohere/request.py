"""The Cohere v2 chat request body (`POST {base}/v2/chat`), sans I/O.

Input: the conversation, tools and options (`read_input`). Output: a
`RequestSpec` without credentials.

Rules:

- messages are chat completions messages (Cohere v2 reads the same roles,
  `tool_calls` and `tool_call_id`); an assistant turn's reasoning goes back
  as `tool_plan` when it made tool calls (what Cohere streams as reasoning
  there), and is left out otherwise; an assistant turn with no text has no
  `content`; its Cohere citations (`Message.citations` read from
  `citation-start` events) go back as its `citations`, each citation once
  as the stream sent it (the cohere SDK's `AssistantChatMessageV2.citations`);
  other dialects' citations are left out;
- tools are chat completions tools;
- `max_tokens`, `temperature` as written; `stop` is `stop_sequences`;
  `reasoning` is `thinking` (`{"type": "enabled"}`, with `token_budget` for
  an int; False or `"none"` disables); `tool_choice` is `"REQUIRED"` or
  `"NONE"` (`"auto"` sends nothing; a function name is an error: Cohere
  cannot force one tool; `Output(via="tool")` alone among the tools is
  forced by `"REQUIRED"`);
- `output=` is `response_format: {"type": "json_object", "json_schema"}`,
  the schema as written (Cohere's JSON mode follows it; it has no strict
  flag).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ....models import Citation, JSONObject, Message, ReasoningBlock, Tool
from ..chat_input import (
    Assistant,
    RequestSpec,
    apply_extra,
    read_input,
    taken_by_output,
    unknown_option,
)
from ..openai_chat.request import chat_tool, render_turns

__all__ = ["render_request"]

_DIALECT = "cohere"

# The fields of a Cohere v2 citation (`citation-start`'s `delta.message.citations`).
_CITATION_KEYS = frozenset({"start", "end", "text", "sources", "content_index", "type"})


def render_request(
    model: str,
    messages: Iterable[Mapping[str, Any] | Message],
    tools: Iterable[Tool | Mapping[str, Any]] | None = None,
    **options: Any,
) -> RequestSpec:
    """The streaming v2 chat request.

    Raises:
        ValueError, TypeError: see `read_input`; a function name as `tool_choice`.

    >>> render_request("command-a-03-2025", [{"role": "user", "content": "Hi"}]).body
    {'model': 'command-a-03-2025', 'messages': [{'role': 'user', 'content': 'Hi'}], 'stream': True}
    """
    chat = read_input(model, messages, tools, options)
    opts = chat.options
    out = render_turns(chat)
    for turn, message in zip(chat.turns, out, strict=True):
        if isinstance(turn, Assistant):
            message.pop("refusal", None)
            if message.get("content") is None:
                del message["content"]
            plan = "".join(b.text for b in turn.blocks if isinstance(b, ReasoningBlock))
            if plan and "tool_calls" in message:
                message["tool_plan"] = plan
            cited = _cohere_citations(turn.citations)
            if cited:
                message["citations"] = cited
    body: JSONObject = {"model": chat.model, "messages": out}
    if chat.tools:
        body["tools"] = [chat_tool(t) for t in chat.tools]
    if opts.max_tokens is not None:
        body["max_tokens"] = opts.max_tokens
    if opts.temperature is not None:
        body["temperature"] = opts.temperature
    if opts.stop:
        body["stop_sequences"] = list(opts.stop)
    if opts.reasoning is not None:
        value = opts.reasoning
        if value is False or value == "none":
            body["thinking"] = {"type": "disabled"}
        elif isinstance(value, int) and not isinstance(value, bool):
            body["thinking"] = {"type": "enabled", "token_budget": value}
        else:
            body["thinking"] = {"type": "enabled"}
    choice = opts.tool_choice
    if opts.output is not None and opts.output.via == "tool" and len(chat.tools) == 1:
        choice = "required"  # the output's tool is the only one: requiring a call forces it
    if choice is not None and choice != "auto":
        choices = {"required": "REQUIRED", "none": "NONE"}
        if choice not in choices:
            raise unknown_option(
                _DIALECT,
                f"tool_choice={choice!r}",
                "it takes 'auto', 'required' or 'none', never one named tool (an "
                "Output(via='tool') can be forced only as the one tool)",
            )
        body["tool_choice"] = choices[choice]
    if opts.output is not None and opts.output.via == "native":
        taken_by_output(_DIALECT, opts.extra, "response_format")
        body["response_format"] = {"type": "json_object", "json_schema": opts.output.schema}
    apply_extra(body, opts.extra)
    body["stream"] = True
    return RequestSpec("POST", "/v2/chat", {}, {}, body)


def _cohere_citations(citations: Iterable[Citation]) -> list[JSONObject]:
    """The turn's Cohere citations, each once, as the stream sent them (`Citation.raw`).

    The decoder gives one `Citation` per source of a `citation-start`, each
    with the whole citation as `raw` (one with no source gives one): the
    run of them goes back as that one object. A citation of another
    dialect has no Cohere form and is left out.
    """
    out: list[JSONObject] = []
    given = list(citations)
    at = 0
    while at < len(given):
        raw = given[at].raw
        if not _is_cohere(raw):
            at += 1
            continue
        assert raw is not None
        sources = raw.get("sources")
        at += max(1, len(sources) if isinstance(sources, list) else 0)
        out.append(raw)
    return out


def _is_cohere(raw: JSONObject | None) -> bool:
    return (
        raw is not None
        and raw.keys() <= _CITATION_KEYS
        and ("sources" in raw or ("start" in raw and "end" in raw))
    )

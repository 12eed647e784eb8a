"""The Ollama chat request body (`POST {base}/api/chat`), sans I/O.

Input: the conversation, tools and options (`read_input`). Output: a
`RequestSpec` without credentials.

Rules:

- messages are `{"role", "content"}` with the text; an `image_url` part with
  a `data:` URL goes in `images` (its base64), other image URLs are an error
  (Ollama takes image data only);
- an assistant turn is its text (no `content` when empty, as the ollama SDK
  sends it), its reasoning as `thinking` (what Ollama streams it as), and
  its client calls as `tool_calls`
  (`{"function": {"name", "arguments": object}}`); server tools and
  reasoning state have no place in Ollama and are not sent, nor are call
  ids; a tool result is `{"role": "tool", "content", "tool_name"}`, Ollama
  pairing results with calls by name and order: a result that answers a
  call by the id rxstream gave it takes the call's name, and such results go
  in the order of the calls (`matched_by_name`);
- tools are chat completions tools;
- only the fields asked for are sent: `max_tokens` is `options.num_predict`,
  `temperature` and `stop` go in `options`, `reasoning` is `think` (True /
  False or an effort; a token budget is an error); no `think: false` is sent
  unasked; `tool_choice` other than `"auto"` is an error (Ollama has none);
- `output=` is `format: <the JSON Schema>`, as the ollama SDK sends
  `format=Model.model_json_schema()`; `Output(via="tool")` is an error, as
  Ollama cannot force a tool.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ....models import JSONObject, Message, ReasoningBlock, TextBlock, Tool, ToolCall
from ..chat_input import (
    Assistant,
    RequestSpec,
    System,
    ToolResult,
    User,
    apply_extra,
    arguments_object,
    matched_by_name,
    read_input,
    taken_by_output,
    unknown_option,
)
from ..openai_chat.request import chat_tool

__all__ = ["render_request"]

_DIALECT = "ollama"


def _user(parts: Iterable[JSONObject]) -> JSONObject:
    texts: list[str] = []
    images: list[str] = []
    for part in parts:
        kind = part.get("type")
        if kind == "text":
            texts.append(str(part.get("text", "")))
        elif kind == "image_url":
            image = part.get("image_url")
            url = str(image.get("url") if isinstance(image, dict) else image)
            if not (url.startswith("data:") and ";base64," in url):
                raise unknown_option(
                    _DIALECT, f"the image {url[:80]!r}", "it takes image data (a data: URL) only"
                )
            images.append(url.partition(";base64,")[2])
        else:
            raise unknown_option(_DIALECT, f"a {kind!r} part", "it takes text and images only")
    message: JSONObject = {"role": "user", "content": "".join(texts)}
    if images:
        message["images"] = images
    return message


def _assistant(turn: Assistant) -> JSONObject:
    message: JSONObject = {"role": "assistant"}
    text = "".join(b.text for b in turn.blocks if isinstance(b, TextBlock))
    if text:
        message["content"] = text
    thinking = "".join(b.text for b in turn.blocks if isinstance(b, ReasoningBlock))
    if thinking:
        message["thinking"] = thinking
    calls = [
        {"function": {"name": b.name, "arguments": arguments_object(b)}}
        for b in turn.blocks
        if isinstance(b, ToolCall)
    ]
    if calls:
        message["tool_calls"] = calls
    return message


def render_request(
    model: str,
    messages: Iterable[Mapping[str, Any] | Message],
    tools: Iterable[Tool | Mapping[str, Any]] | None = None,
    **options: Any,
) -> RequestSpec:
    """The streaming `/api/chat` request.

    Raises:
        ValueError, TypeError: see `read_input`; a token budget for
            `reasoning`, a `tool_choice` other than `"auto"`, an image URL.

    >>> render_request("llama3.2", [{"role": "user", "content": "Hi"}]).body
    {'model': 'llama3.2', 'messages': [{'role': 'user', 'content': 'Hi'}], 'stream': True}
    """
    chat = read_input(model, messages, tools, options)
    opts = chat.options
    out: list[JSONObject] = []
    for turn in matched_by_name(chat.turns, _DIALECT):
        match turn:
            case System(text=text):
                out.append({"role": "system", "content": text})
            case User(parts=parts):
                out.append(_user(parts))
            case Assistant():
                out.append(_assistant(turn))
            case ToolResult(call_id=call_id, name=name, content=content):
                out.append({"role": "tool", "content": content, "tool_name": name or call_id})
    body: JSONObject = {"model": chat.model, "messages": out}
    if chat.tools:
        body["tools"] = [chat_tool(t) for t in chat.tools]
    model_options: JSONObject = {}
    if opts.max_tokens is not None:
        model_options["num_predict"] = opts.max_tokens
    if opts.temperature is not None:
        model_options["temperature"] = opts.temperature
    if opts.stop:
        model_options["stop"] = list(opts.stop)
    if model_options:
        body["options"] = model_options
    if opts.reasoning is not None:
        value = opts.reasoning
        if isinstance(value, int) and not isinstance(value, bool):
            raise unknown_option(
                _DIALECT, f"reasoning={value!r}", "it takes True, False or an effort"
            )
        body["think"] = value
    if opts.output is not None:
        if opts.output.via == "tool":
            raise unknown_option(
                _DIALECT, "Output(via='tool')", "Ollama cannot force a tool; use via='native'"
            )
        taken_by_output(_DIALECT, opts.extra, "format")
        body["format"] = opts.output.schema
    if opts.tool_choice not in (None, "auto"):
        raise unknown_option(
            _DIALECT, f"tool_choice={opts.tool_choice!r}", "Ollama has no tool choice"
        )
    apply_extra(body, opts.extra)
    body["stream"] = True
    return RequestSpec("POST", "/api/chat", {}, {}, body)

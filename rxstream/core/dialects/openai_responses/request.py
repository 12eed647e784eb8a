"""The OpenAI Responses request body (`POST {base}/responses`), sans I/O.

Input: the conversation, tools and options (`read_input`). Output: a
`RequestSpec` without credentials.

Rules:

- system messages become `instructions` when they come first (joined by a
  blank line), else `{"role": "developer"}` input messages; user messages are
  `{"role": "user", "content": [input_text | input_image]}` (a lone text as
  a string);
- an assistant turn goes back item by item in the order the items came: a
  reasoning block whose state is a Responses reasoning item (and any
  compaction item) as the item it came as (its `id`, `status` and
  `encrypted_content` kept; for a `Message` decoded from a Responses stream,
  as the final response's `output` holds it, which is what the openai SDK
  sends back: the API encrypts the content again for each event), text as
  an assistant `message` item with `output_text` (for a decoded `Message`,
  the final response's message item that holds that text, as it came: its
  id, status and annotations), a tool the provider ran (a `ServerToolCall`
  decoded from a Responses stream: `web_search_call`, ...) as its item,
  from the final response's output when it is there, each client tool call as a
  `function_call` item (`call_id`, `name`, `arguments`; for a `Message`
  decoded from a Responses stream also the item's own `fc_...` `id` and
  `"status": "completed"`, as the item came: the decoder keeps the ids in
  `Message.metadata["function_call_item_ids"]`, by `call_id`, since
  `ToolCall` has no field for them; a call from a dict or another dialect
  has no item id and goes without both);
  reasoning without such state (from another dialect) is not sent, since
  Responses takes no foreign reasoning;
- a tool result is a `function_call_output` item;
- tools are flat `{"type": "function", name, description, parameters,
  "strict": false}`: the API treats a function tool without `strict` as
  strict, which chat-style schemas do not satisfy;
- `max_tokens` is `max_output_tokens`; `reasoning` is
  `{"effort": ..., "summary": "auto"}` (the summary is what streams);
  `tool_choice` as written (a function name as `{"type": "function", name}`);
  `stop` is an error (Responses has no stop sequences);
- `output=` is `text.format: {"type": "json_schema", name, schema, strict}`
  (the schema rewritten for strict mode when strict), as the openai SDK sends
  it for `text_format=Model`; a `text=` option of the caller's own
  (`verbosity`) is kept beside it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ....models import (
    JSONObject,
    Message,
    ReasoningBlock,
    ReasoningState,
    ServerToolCall,
    TextBlock,
    Tool,
    ToolCall,
)
from ..chat_input import (
    Assistant,
    RequestSpec,
    System,
    ToolResult,
    User,
    apply_extra,
    merged_option,
    read_input,
    unknown_option,
)
from ..openai_chat.request import json_schema_format
from .decode import CALL_ITEM_IDS
from .fields import is_server_item

__all__ = ["render_request"]

_DIALECT = "openai-responses"


def _tool(tool: Tool | JSONObject) -> JSONObject:
    if isinstance(tool, Tool):
        return {
            "type": "function",
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.parameters,
            "strict": False,
        }
    return tool


def _user_part(part: JSONObject) -> JSONObject:
    kind = part.get("type")
    if kind == "text":
        return {"type": "input_text", "text": part.get("text", "")}
    if kind == "image_url":
        image = part.get("image_url")
        url = image.get("url") if isinstance(image, dict) else image
        return {"type": "input_image", "image_url": url}
    return part


def _item_ids(messages: Iterable[Mapping[str, Any] | Message]) -> dict[str, str]:
    """The `fc_...` ids of the function_call items the decoded `Message`s came with, by call_id."""
    found: dict[str, str] = {}
    for message in messages:
        if isinstance(message, Message):
            ids = message.metadata.get(CALL_ITEM_IDS)
            if isinstance(ids, dict):
                found.update(
                    (call, item)
                    for call, item in ids.items()
                    if isinstance(call, str) and isinstance(item, str)
                )
    return found


def _final_reasoning(messages: Iterable[Mapping[str, Any] | Message]) -> dict[int, JSONObject]:
    """The final response's reasoning items of the decoded `Message`s, by their state object.

    The API's last word on an item (`response.completed`'s output) is what
    the openai SDK sends back (`input += response.output`); the state holds
    the item as its done event carried it (the encrypted content differs:
    the API encrypts it again for each event). An item is found by its id,
    else by its place among the message's reasoning items (OpenRouter gives
    the final item a new id). Each turn's items come from its own response
    (keyed by the state object the turn carries): two turns whose streams
    named their items alike keep their own items.
    """
    found: dict[int, JSONObject] = {}
    for message in messages:
        if not isinstance(message, Message):
            continue
        final = [item for item in _final_output(message) if item.get("type") == "reasoning"]
        by_id = {item.get("id"): item for item in final}
        states = [
            b.state
            for b in message.blocks
            if isinstance(b, ReasoningBlock)
            and b.state is not None
            and b.state.kind == "reasoning_item"
            and b.state.id
        ]
        for place, state in enumerate(states):
            item = by_id.get(state.id)
            if item is None and len(states) == len(final):
                item = final[place]
            if item is not None:
                found[id(state)] = item
    return found


def _final_messages(messages: Iterable[Mapping[str, Any] | Message]) -> dict[int, JSONObject]:
    """The final response's message items of the decoded `Message`s, by their text block.

    A message item goes back as it came (its id, status, annotations), as the
    openai SDK sends it: the n-th text block of a `Message` is the n-th message
    item of its final response when there are as many and each holds that text
    (keyed by the block object, which the turn carries as it is).
    """
    found: dict[int, JSONObject] = {}
    for message in messages:
        if not isinstance(message, Message):
            continue
        output = _final_output(message)
        items = [item for item in output if item.get("type") == "message"]
        found.update(_server_items(message, output))
        texts = [b for b in message.blocks if isinstance(b, TextBlock)]
        if len(items) != len(texts):
            continue
        for block, item in zip(texts, items, strict=True):
            if _item_text(item) == block.text:
                found[id(block)] = item
    return found


def _final_output(message: Message) -> list[JSONObject]:
    """The output items of a decoded turn's final response (`response.completed`), if kept."""
    response = message.metadata.get("response")
    output = response.get("output") if isinstance(response, dict) else None
    return [item for item in output if isinstance(item, dict)] if isinstance(output, list) else []


def _server_items(message: Message, output: list[JSONObject]) -> dict[int, JSONObject]:
    """The items of the tools the provider ran in a decoded turn, by their `ServerToolCall`
    block: as the final response's output holds the item with that id, else as it came."""
    final = {item.get("id"): item for item in output if is_server_item(item)}
    return {
        id(block): final.get(block.raw.get("id"), block.raw)
        for block in message.blocks
        if isinstance(block, ServerToolCall) and block.raw is not None and is_server_item(block.raw)
    }


def _item_text(item: JSONObject) -> str | None:
    """The text of a message item's `output_text` parts (None if it holds anything else)."""
    parts = item.get("content")
    if not isinstance(parts, list):
        return None
    texts = [p.get("text") for p in parts if isinstance(p, dict)]
    kinds = {p.get("type") for p in parts if isinstance(p, dict)}
    if kinds != {"output_text"} or not all(isinstance(t, str) for t in texts):
        return None
    return "".join(t for t in texts if isinstance(t, str))


def _assistant(
    blocks: Iterable[object],
    item_ids: Mapping[str, str],
    final: Mapping[int, JSONObject],
    final_messages: Mapping[int, JSONObject],
) -> list[JSONObject]:
    items: list[JSONObject] = []
    for block in blocks:
        if isinstance(block, ReasoningBlock):
            state = block.state
            if state is not None and state.kind == "reasoning_item" and state.raw is not None:
                items.append(final.get(id(state), state.raw))
        elif isinstance(block, ReasoningState):
            if block.kind == "compaction" and block.raw is not None and "type" in block.raw:
                items.append(block.raw)
        elif isinstance(block, ServerToolCall):
            if id(block) in final_messages:
                items.append(final_messages[id(block)])
        elif isinstance(block, TextBlock):
            if id(block) in final_messages:
                items.append(final_messages[id(block)])
            elif block.text:
                items.append(
                    {
                        "type": "message",
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": block.text}],
                    }
                )
        elif isinstance(block, ToolCall):
            call: JSONObject = {
                "type": "function_call",
                "call_id": block.id,
                "name": block.name,
                "arguments": block.arguments,
            }
            item_id = item_ids.get(block.id) if block.id is not None else None
            if item_id is not None:
                # As the item came (the API keeps items sent back by their id and status).
                call = {"id": item_id, **call, "status": "completed"}
            items.append(call)
    return items


def render_request(
    model: str,
    messages: Iterable[Mapping[str, Any] | Message],
    tools: Iterable[Tool | Mapping[str, Any]] | None = None,
    **options: Any,
) -> RequestSpec:
    """The streaming Responses request.

    Raises:
        ValueError, TypeError: see `read_input`; `stop`, or a token budget for
            `reasoning`.

    >>> render_request("gpt-5", [{"role": "user", "content": "Hi"}]).body["input"]
    [{'role': 'user', 'content': 'Hi'}]
    """
    messages = list(messages)  # read twice: once here, once for the item ids
    chat = read_input(model, messages, tools, options)
    item_ids = _item_ids(messages)
    final = _final_reasoning(messages)
    final_messages = _final_messages(messages)
    opts = chat.options
    instructions: list[str] = []
    items: list[JSONObject] = []
    for turn in chat.turns:
        match turn:
            case System(text=text):
                if items:
                    items.append({"role": "developer", "content": text})
                else:
                    instructions.append(text)
            case User(parts=parts):
                if len(parts) == 1 and parts[0].get("type") == "text":
                    items.append({"role": "user", "content": parts[0].get("text", "")})
                else:
                    items.append({"role": "user", "content": [_user_part(p) for p in parts]})
            case Assistant(blocks=blocks):
                items.extend(_assistant(blocks, item_ids, final, final_messages))
            case ToolResult(call_id=call_id, content=content):
                items.append(
                    {"type": "function_call_output", "call_id": call_id, "output": content}
                )
    body: JSONObject = {"model": chat.model, "input": items}
    if instructions:
        body["instructions"] = "\n\n".join(instructions)
    if chat.tools:
        body["tools"] = [_tool(t) for t in chat.tools]
    if opts.max_tokens is not None:
        body["max_output_tokens"] = opts.max_tokens
    if opts.temperature is not None:
        body["temperature"] = opts.temperature
    if opts.stop:
        raise unknown_option(_DIALECT, "stop", "the Responses API has no stop sequences")
    if opts.reasoning is not None:
        effort = opts.reasoning
        if isinstance(effort, bool):
            effort = "medium" if effort else "none"
        if isinstance(effort, int):
            raise unknown_option(
                _DIALECT, f"reasoning={effort!r}", "it takes an effort ('low', 'medium', 'high')"
            )
        body["reasoning"] = {"effort": effort, "summary": "auto"}
    if opts.tool_choice is not None:
        choice = opts.tool_choice
        body["tool_choice"] = (
            choice
            if choice in ("auto", "none", "required")
            else {"type": "function", "name": choice}
        )
    extra = dict(opts.extra)
    if opts.output is not None and opts.output.via == "native":
        chat_format = json_schema_format(opts.output)
        body["text"] = merged_option(
            extra, "text", {"format": {"type": "json_schema", **chat_format["json_schema"]}}
        )
    apply_extra(body, extra)
    body["stream"] = True
    return RequestSpec("POST", "/responses", {}, {}, body)

"""The AWS Bedrock ConverseStream request body (`{base}/model/{model}/converse-stream`), sans I/O.

Input: the conversation, tools and options (`read_input`). Output: a
`RequestSpec` without credentials (signing is the io layer's).

Rules:

- system messages are `system: [{"text"}]`; turns are `user` / `assistant`
  with content blocks; an `image_url` part with a `data:` URL is an `image`
  block (`format` from the media type, `source.bytes` the base64), other
  image URLs are an error; consecutive tool results go in one `user` turn as
  `toolResult` blocks (`content: [{"json": object}]` for a JSON object, else
  `[{"text"}]`);
- an assistant turn goes back block by block in its order: a reasoning run
  with a signature as `reasoningContent.reasoningText` (text and
  signature), redacted thinking as `reasoningContent.redactedContent`, text
  as `text` (a text block Bedrock cited, `TextBlock.citations` from this
  dialect, as `citationsContent`: `{"content": [{"text"}], "citations":
  [...]}`, each citation as the stream sent it, as boto3's users send the
  block back; another dialect's citations are not sent), a client call as
  `toolUse` (`toolUseId`, `name`, `input` object), a tool Bedrock ran
  (Nova's code interpreter, grounding) as the
  `toolUse` block of type `server_tool_use` and the `toolResult` block it
  came as; reasoning without a signature (from another dialect), another
  provider's server tools and state Bedrock has no place for are not sent;
- tools are `toolConfig.tools: [{"toolSpec": {name, description,
  inputSchema: {"json": schema}}}]`; `tool_choice` is `toolConfig.toolChoice`
  (`auto`, `any`, `tool`; `"none"` is an error: Converse has no such choice);
- `max_tokens`, `temperature` and `stop` go in `inferenceConfig` (`maxTokens`,
  `temperature`, `stopSequences`); `reasoning` is Claude's `thinking` in
  `additionalModelRequestFields` (as in the anthropic dialect: an int is the
  budget, an effort 1024 / 4096 / 16384 tokens); other options go on the body
  as they are (`additionalModelRequestFields`, `guardrailConfig`, ...);
- `output=` is `outputConfig.textFormat: {"type": "json_schema", "structure":
  {"jsonSchema": {"schema": <the schema as a JSON string>, "name"}}}`, the
  schema in the subset Bedrock's structured outputs take (the one Anthropic's
  take: `rxstream.core.schema.subset_schema`); an `outputConfig=` of the
  caller's own (its `effort`) is kept beside it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import quote

from ....models import (
    Citation,
    JSONObject,
    Message,
    ReasoningBlock,
    ReasoningState,
    ServerToolCall,
    ServerToolResult,
    TextBlock,
    Tool,
    ToolCall,
)
from ...schema import OutputSpec, subset_schema
from ..chat_input import (
    Assistant,
    RequestSpec,
    System,
    ToolResult,
    User,
    arguments_object,
    merged_option,
    read_input,
    thinking_budget,
    unknown_option,
)

__all__ = ["model_path", "render_request"]

_DIALECT = "bedrock"


def model_path(model: str) -> str:
    """The ConverseStream path of `model` (ids and ARNs hold ':' and '/': one encoded segment).

    >>> model_path("amazon.nova-lite-v1:0")
    '/model/amazon.nova-lite-v1%3A0/converse-stream'
    """
    return f"/model/{quote(model, safe='')}/converse-stream"


def _user_block(part: JSONObject) -> JSONObject:
    kind = part.get("type")
    if kind == "text":
        return {"text": part.get("text", "")}
    if kind == "image_url":
        image = part.get("image_url")
        url = str(image.get("url") if isinstance(image, dict) else image)
        if url.startswith("data:image/") and ";base64," in url:
            media, _, data = url[5:].partition(";base64,")
            return {"image": {"format": media.removeprefix("image/"), "source": {"bytes": data}}}
        raise unknown_option(
            _DIALECT, f"the image {url[:80]!r}", "it takes image data (a data: URL) only"
        )
    return part


def _assistant(blocks: Iterable[object]) -> list[JSONObject]:
    out: list[JSONObject] = []
    for block in blocks:
        if isinstance(block, ReasoningBlock):
            state = block.state
            if state is not None and state.kind == "thinking" and state.data:
                out.append(
                    {
                        "reasoningContent": {
                            "reasoningText": {"text": block.text, "signature": state.data}
                        }
                    }
                )
        elif isinstance(block, ReasoningState):
            if block.kind == "redacted_thinking" and block.data:
                out.append({"reasoningContent": {"redactedContent": block.data}})
        elif isinstance(block, TextBlock):
            if block.text:
                out.append(_text_block(block))
        elif isinstance(block, ToolCall):
            out.append(
                {
                    "toolUse": {
                        "toolUseId": block.id,
                        "name": block.name,
                        "input": arguments_object(block),
                    }
                }
            )
        elif isinstance(block, ServerToolCall | ServerToolResult):
            out += _server_block(block)
    return out


def _text_block(block: TextBlock) -> JSONObject:
    """A text block; one Bedrock cited as `citationsContent`, its citations as they came."""
    cited = [c.raw for c in block.citations or () if c.raw is not None and _is_bedrock(c)]
    if not cited:
        return {"text": block.text}
    return {"citationsContent": {"content": [{"text": block.text}], "citations": cited}}


def _is_bedrock(citation: Citation) -> bool:
    """Whether a citation is one the bedrock decoder made (its kind a location kind of its raw)."""
    raw = citation.raw or {}
    location = raw.get("location")
    if citation.kind == "citation":
        return "type" not in raw and not location
    return isinstance(location, dict) and citation.kind in location


def _server_block(block: ServerToolCall | ServerToolResult) -> list[JSONObject]:
    """A tool Bedrock ran (Nova's `nova_code_interpreter`, `nova_grounding`), as it came.

    A `toolUse` block of type `server_tool_use` and its `toolResult` block go
    back in the assistant turn, as boto3's turn keeps them; another
    provider's server tool has no place in Converse and is not sent.
    """
    raw = block.raw or {}
    key = "toolUse" if isinstance(block, ServerToolCall) else "toolResult"
    inner = raw.get(key)
    if len(raw) != 1 or not isinstance(inner, dict):
        return []
    return [{key: dict(inner)}]


def _result(call_id: str | None, content: str) -> JSONObject:
    try:
        value = json.loads(content)
    except ValueError:
        value = None
    blocks = [{"json": value}] if isinstance(value, dict) else [{"text": content}]
    return {"toolResult": {"toolUseId": call_id, "content": blocks}}


def _text_format(output: OutputSpec) -> JSONObject:
    schema = json.dumps(subset_schema(output.schema), ensure_ascii=False, separators=(",", ":"))
    return {
        "type": "json_schema",
        "structure": {"jsonSchema": {"schema": schema, "name": output.name}},
    }


def render_request(
    model: str,
    messages: Iterable[Mapping[str, Any] | Message],
    tools: Iterable[Tool | Mapping[str, Any]] | None = None,
    **options: Any,
) -> RequestSpec:
    """The ConverseStream request (unsigned).

    Raises:
        ValueError, TypeError: see `read_input`; `tool_choice="none"`, an image URL.

    >>> render_request("amazon.nova-lite-v1:0", [{"role": "user", "content": "Hi"}]).body
    {'messages': [{'role': 'user', 'content': [{'text': 'Hi'}]}]}
    """
    chat = read_input(model, messages, tools, options)
    opts = chat.options
    body = _messages(chat.turns)
    config: JSONObject = {}
    if opts.max_tokens is not None:
        config["maxTokens"] = opts.max_tokens
    if opts.temperature is not None:
        config["temperature"] = opts.temperature
    if opts.stop:
        config["stopSequences"] = list(opts.stop)
    if config:
        body["inferenceConfig"] = config
    if chat.tools:
        body["toolConfig"] = _tool_config(chat.tools, opts.tool_choice)
    if opts.reasoning is not None:
        fields = dict(opts.extra.get("additionalModelRequestFields") or {})
        fields["thinking"] = thinking_budget(_DIALECT, opts.reasoning)
        body["additionalModelRequestFields"] = fields
    extra = dict(opts.extra)
    if opts.output is not None and opts.output.via == "native":
        text_format = _text_format(opts.output)
        body["outputConfig"] = merged_option(extra, "outputConfig", {"textFormat": text_format})
    body.update({k: v for k, v in extra.items() if k not in body})
    return RequestSpec("POST", model_path(chat.model), {}, {}, body)


def _messages(turns: Iterable[Any]) -> JSONObject:
    """The body's `messages` (and `system`): consecutive user blocks go in one user turn."""
    system: list[JSONObject] = []
    out: list[JSONObject] = []

    def add(role: str, blocks: list[JSONObject]) -> None:
        if out and out[-1]["role"] == role == "user":
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})

    for turn in turns:
        match turn:
            case System(text=text):
                system.append({"text": text})
            case User(parts=parts):
                add("user", [_user_block(p) for p in parts])
            case Assistant(blocks=blocks):
                add("assistant", _assistant(blocks))
            case ToolResult(call_id=call_id, content=content):
                add("user", [_result(call_id, content)])
    body: JSONObject = {"messages": out}
    if system:
        body["system"] = system
    return body


def _tool_config(tools: Iterable[Tool | JSONObject], choice: str | None) -> JSONObject:
    """The body's `toolConfig`: each `Tool` as a `toolSpec` (a mapping as given), and the choice."""
    specs: list[JSONObject] = [
        {
            "toolSpec": {
                "name": t.name,
                "description": t.description,
                "inputSchema": {"json": t.parameters},
            }
        }
        if isinstance(t, Tool)
        else t
        for t in tools
    ]
    config: JSONObject = {"tools": specs}
    if choice == "none":
        raise unknown_option(
            _DIALECT, "tool_choice='none'", "Converse has no such choice; send no tools"
        )
    if choice is not None:
        config["toolChoice"] = (
            {"auto": {}}
            if choice == "auto"
            else {"any": {}}
            if choice == "required"
            else {"tool": {"name": choice}}
        )
    return config

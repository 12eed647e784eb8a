"""The Anthropic Messages request body (`POST {base}/v1/messages`), sans I/O.

Input: the conversation, tools and options (`read_input`). Output: a
`RequestSpec` without credentials; its `anthropic-version` header is chosen
here.

Rules:

- system messages are joined into `system` (by a blank line); user messages
  are their text (a lone text part) or content blocks (`text`; an
  `image_url` part as an `image` block, a `data:` URL as base64, else as a
  URL source); consecutive tool results go
  in one user message as `tool_result` blocks;
- an assistant turn goes back block by block in its order: a reasoning
  block with a thinking signature as `thinking` (text and signature),
  redacted thinking as `redacted_thinking`, a compaction block as
  `compaction`, text as `text` (a text block that came with `citations`
  keeps them, each as the API sent it, and one whose list came empty
  sends `"citations": []`, as the anthropic SDK sends its final message's
  blocks back), a client call as `tool_use` (arguments as an
  object), a server tool call and result as the blocks they came as;
  reasoning with no signature (from another dialect) is not sent, as the API
  takes no unsigned thinking;
- tools: `{name, description, input_schema}`; a provider's own tool dict
  (`web_search_20250305`, ...) as it is;
- `max_tokens` is required by the API: 4096 when not given; `reasoning` is
  `thinking` with a budget (an int as it is; an effort as 1024 / 4096 /
  16384 tokens for low / medium / high; True as 4096; False disables);
  `stop` is `stop_sequences`; `tool_choice` is `{"type": "auto" | "any" |
  "none" | "tool"}`;
- `output=` is `output_config.format: {"type": "json_schema", "schema"}`,
  the schema in the subset the API takes (`rxstream.core.schema.subset_schema`),
  as the anthropic SDK sends it for `output_format=Model` (an
  `output_config=` of the caller's own, its `effort`, is kept beside it);
- `betas=[...]` is the `anthropic-beta` header (comma-separated, as the
  anthropic SDK's `betas=`): what a beta feature needs, e.g. compaction's
  `context_management` edits; structured outputs (`output_config`) need none;
- `anthropic-version` is `2023-06-01` unless `anthropic_version=` says
  otherwise. The anthropic SDK now sends `2026-10-21`, whose API refuses
  `temperature`; an option the chosen version does not take is a
  `ValueError`, never dropped in silence.
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
    ServerToolResult,
    TextBlock,
    Tool,
    ToolCall,
)
from ...schema import subset_schema
from ..chat_input import (
    Assistant,
    RequestSpec,
    System,
    ToolResult,
    User,
    apply_extra,
    arguments_object,
    merged_option,
    read_input,
    thinking_budget,
    unknown_option,
)

__all__ = ["ANTHROPIC_VERSION", "DEFAULT_MAX_TOKENS", "REFUSED_OPTIONS", "render_request"]

_DIALECT = "anthropic"

#: The `anthropic-version` sent unless the caller picks another.
ANTHROPIC_VERSION = "2023-06-01"

#: What each known version refuses (a version not listed here is sent as asked).
REFUSED_OPTIONS: dict[str, frozenset[str]] = {
    "2023-06-01": frozenset(),
    "2026-10-21": frozenset({"temperature"}),
}

#: The output limit when none is given (the API requires one).
DEFAULT_MAX_TOKENS = 4096


def _tool(tool: Tool | JSONObject) -> JSONObject:
    if isinstance(tool, Tool):
        return {"name": tool.name, "description": tool.description, "input_schema": tool.parameters}
    return tool


def _user_block(part: JSONObject) -> JSONObject:
    kind = part.get("type")
    if kind == "text":
        return {"type": "text", "text": part.get("text", "")}
    if kind == "image_url":
        image = part.get("image_url")
        url = str(image.get("url") if isinstance(image, dict) else image)
        if url.startswith("data:") and ";base64," in url:
            media, _, data = url[5:].partition(";base64,")
            return {
                "type": "image",
                "source": {"type": "base64", "media_type": media, "data": data},
            }
        return {"type": "image", "source": {"type": "url", "url": url}}
    return part


def _text(block: TextBlock) -> JSONObject:
    """A text block, with its citations list as the API sent it (`[]` when it came empty)."""
    if block.citations is None:
        return {"type": "text", "text": block.text}
    cited = [c.raw for c in block.citations if c.raw is not None and "type" in c.raw]
    if not cited and block.citations:
        return {"type": "text", "text": block.text}  # another dialect's: no Anthropic form
    return {"type": "text", "text": block.text, "citations": cited}


def _assistant(blocks: Iterable[object]) -> list[JSONObject]:
    out: list[JSONObject] = []
    for block in blocks:
        if isinstance(block, ReasoningBlock):
            state = block.state
            if state is not None and state.kind == "thinking" and state.data:
                out.append({"type": "thinking", "thinking": block.text, "signature": state.data})
        elif isinstance(block, ReasoningState):
            if block.kind == "redacted_thinking" and block.data:
                out.append({"type": "redacted_thinking", "data": block.data})
            elif block.kind == "compaction" and block.raw is not None and "type" in block.raw:
                out.append(block.raw)
        elif isinstance(block, TextBlock):
            if block.text:
                out.append(_text(block))
        elif isinstance(block, ToolCall):
            out.append(
                {
                    "type": "tool_use",
                    "id": block.id,
                    "name": block.name,
                    "input": arguments_object(block),
                }
            )
        elif (
            isinstance(block, ServerToolCall | ServerToolResult)
            and block.raw is not None
            and "type" in block.raw
        ):
            out.append(block.raw)
    return out


def render_request(
    model: str,
    messages: Iterable[Mapping[str, Any] | Message],
    tools: Iterable[Tool | Mapping[str, Any]] | None = None,
    *,
    anthropic_version: str = ANTHROPIC_VERSION,
    betas: Iterable[str] | None = None,
    **options: Any,
) -> RequestSpec:
    """The streaming Messages request.

    Args:
        anthropic_version: the `anthropic-version` header.
        betas: the beta features to turn on (`["compact-2026-01-12"]`), sent
            as the `anthropic-beta` header, comma-separated in the order
            given, as the anthropic SDK's `betas=` sends them; None or empty
            sends no header.

    Raises:
        ValueError, TypeError: see `read_input`; an option the chosen
            `anthropic_version` refuses; an unknown reasoning effort;
            `betas` that is a string or holds anything but strings.

    >>> spec = render_request("claude-haiku-4-5", [{"role": "user", "content": "Hi"}])
    >>> spec.headers, spec.body["max_tokens"]
    ({'anthropic-version': '2023-06-01'}, 4096)
    """
    chat = read_input(model, messages, tools, options)
    opts = chat.options
    refused = REFUSED_OPTIONS.get(anthropic_version, frozenset())
    asked = {"temperature": opts.temperature, **opts.extra}
    for name in sorted(refused):
        if asked.get(name) is not None:
            raise unknown_option(
                _DIALECT,
                name,
                f"anthropic-version {anthropic_version} refuses it; send "
                f"anthropic_version={ANTHROPIC_VERSION!r} to use it",
            )
    system: list[str] = []
    out: list[JSONObject] = []

    def add(role: str, blocks: list[JSONObject]) -> None:
        if out and out[-1]["role"] == role == "user":
            last = out[-1]
            if isinstance(last["content"], str):
                last["content"] = [{"type": "text", "text": last["content"]}]
            last["content"].extend(blocks)  # tool results and what follows them: one turn
        else:
            out.append({"role": role, "content": blocks})

    for turn in chat.turns:
        match turn:
            case System(text=text):
                system.append(text)
            case User(parts=parts):
                if (
                    len(parts) == 1
                    and parts[0].get("type") == "text"
                    and not (out and out[-1]["role"] == "user")
                ):
                    out.append({"role": "user", "content": parts[0].get("text", "")})
                else:
                    add("user", [_user_block(p) for p in parts])
            case Assistant(blocks=blocks):
                add("assistant", _assistant(blocks))
            case ToolResult(call_id=call_id, content=content):
                add("user", [{"type": "tool_result", "tool_use_id": call_id, "content": content}])
    body: JSONObject = {
        "model": chat.model,
        "max_tokens": opts.max_tokens if opts.max_tokens is not None else DEFAULT_MAX_TOKENS,
        "messages": out,
    }
    if system:
        body["system"] = "\n\n".join(system)
    if chat.tools:
        body["tools"] = [_tool(t) for t in chat.tools]
    if opts.temperature is not None:
        body["temperature"] = opts.temperature
    if opts.stop:
        body["stop_sequences"] = list(opts.stop)
    if opts.reasoning is not None:
        body["thinking"] = thinking_budget(_DIALECT, opts.reasoning)
    if opts.tool_choice is not None:
        choice = opts.tool_choice
        kinds = {"auto": "auto", "required": "any", "none": "none"}
        body["tool_choice"] = (
            {"type": kinds[choice]} if choice in kinds else {"type": "tool", "name": choice}
        )
    extra = dict(opts.extra)
    if opts.output is not None and opts.output.via == "native":
        output_format = {"type": "json_schema", "schema": subset_schema(opts.output.schema)}
        body["output_config"] = merged_option(extra, "output_config", {"format": output_format})
    apply_extra(body, extra)
    body["stream"] = True
    headers = {"anthropic-version": anthropic_version}
    beta = _beta_header(betas)
    if beta:
        headers["anthropic-beta"] = beta
    return RequestSpec("POST", "/v1/messages", {}, headers, body)


def _beta_header(betas: Iterable[str] | None) -> str:
    """The `anthropic-beta` header's value for `betas` (`""`: none)."""
    if betas is None:
        return ""
    if isinstance(betas, str | bytes) or not isinstance(betas, Iterable):
        raise TypeError(
            f"betas= takes a list of beta names (['compact-2026-01-12']), got {betas!r:.200}"
        )
    names = list(betas)
    for name in names:
        if not isinstance(name, str) or not name:
            raise TypeError(f"betas= holds beta names (non-empty strings), got {name!r:.200}")
    return ",".join(names)

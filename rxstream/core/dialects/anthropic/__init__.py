"""The `"anthropic"` dialect: Anthropic Messages API streams, frames to deltas and back.

Input: the `SSEFrame`s of a `POST /v1/messages` answer with `"stream": true`
(`event: <type>` lines optional: the type is read from the data, so the
data-only copies some proxies and recorders make decode too). Output: deltas.

The wire, as Anthropic documents it ("Streaming Messages") and sends it::

    message_start
    (content_block_start  content_block_delta*  content_block_stop)*
    message_delta         (stop_reason, stop_sequence, cumulative usage)
    message_stop          (the end marker)

with `ping` anywhere and `error` anywhere. Bodies may be padded with blanks
before the final brace (the JSON decoder does not mind).

What becomes what:

- `text_delta` -> `TextDelta`; `thinking_delta` -> `ReasoningDelta` (text
  of several blocks is concatenated in wire order with nothing added); a
  text block that starts right after a text block with text and no
  `citations` list -> `TextBlockStart(raw=<its start>)` before its text, so
  the two stay two blocks, as the anthropic SDK's final message keeps them;
- a `thinking` block -> `ReasoningState(kind="thinking", data=<signature>,
  text=<the block's thinking>)` when it ends (its `signature_delta`s
  joined); a `redacted_thinking` block -> `ReasoningState(kind=
  "redacted_thinking", data=<data>)` at once (it comes whole); a
  `compaction` block (the provider's summary of the earlier turns) ->
  `ReasoningState(kind="compaction", data=<the summary>)` when it ends (its
  `compaction_delta`s joined: the API opens the block with null `content`
  and `encrypted_content` and sends one delta carrying both; the
  `encrypted_content` a delta carries is kept in `raw`, the last one given;
  a block no summary came for, a compaction that failed, keeps `content`
  null in `raw`, as the API takes it back). `raw` is the block to send back
  on the next turn;
- a client `tool_use` block -> `ToolCallDelta`s: the first with the block's
  `id` (the id the client answers with) and `name`, `index` = the order of
  `tool_use` blocks (not the content-block index), then the `input_json_delta`
  fragments verbatim (the leading `""` dropped). A block that ends having sent
  no fragment text gets its `input` serialised compactly (`"{}"` for a tool
  without arguments). A block cut by `max_tokens` (no `content_block_stop`)
  keeps the arguments as sent, valid JSON or not;
- `server_tool_use` / `mcp_tool_use` blocks -> one `ServerToolCall` when the
  block ends (its input decoded; kept as text when it is not JSON); every
  `*_tool_result` block -> a `ServerToolResult` (they come whole);
- `citations_delta` (and citations in a text block's start) -> `Citation`s,
  given when their text block ends, with `start`/`end` the span of that
  block's text in the answer (`str` indexes into `Message.content`); the
  provider's object (document offsets, `encrypted_index`, ...) is `raw`; a
  text block whose start has `citations` and which gets none (the list
  stays empty) -> `EmptyCitations` with the same span, so it stays a block
  of its own (a block without text gives none);
- `message_delta` -> `Metadata` (the stop sequence and other delta fields,
  when set), `Finish`, then `Usage`; `message_start` -> `Metadata` with the
  message `id` and `model` (and any other field it sets); fields of
  `message_stop` (Bedrock adds `amazon-bedrock-invocationMetrics`) ->
  `Metadata`;
- a `message_start` may carry blocks whole in its `content` and its
  `stop_reason` already set (a turn resumed after client tool results, as in
  programmatic tool calling, then `message_stop` with no `message_delta`):
  each block gives what a block of its type gives from its start to its
  stop (content position = its index), and the `stop_reason` is the `Finish`
  at `message_stop` unless a `message_delta` sent one;
- event types and block types this module does not know are kept, whole, in
  `Metadata({"events": [...]})` (Anthropic says new ones may appear); `ping`
  is dropped.

Finish: `end_turn`, `stop_sequence` -> `"stop"`; `max_tokens`,
`model_context_window_exceeded` -> `"length"`; `tool_use` -> `"tool_calls"`;
`refusal` -> `"content_filter"` (in every dialect a safety stop is a content filter);
anything else (`pause_turn`, `compaction`, ...) stays the provider's word.
`Finish.raw` is always the `stop_reason` sent.

Usage: `message_start`'s usage with each field `message_delta` sends on top
(its numbers are cumulative and win); `prompt_tokens` = `input_tokens` +
`cache_creation_input_tokens` + `cache_read_input_tokens`, `completion_tokens`
= `output_tokens`, total computed, `cached_tokens` = `cache_read_input_tokens`,
`cache_write_tokens` = `cache_creation_input_tokens` (Anthropic's `input_tokens`
leaves both cache counts out: the prompt adds them back),
`reasoning_tokens` = `output_tokens_details.thinking_tokens` where sent.
`Usage.raw` is the merged object (server tool counts, service tier, ...). One
`Usage` per `message_delta` (in practice one per stream); a `message_stop`
with no `message_delta` before it gives `message_start`'s.

Blocks still open when `message_delta` (or `message_stop`) comes, cut by
`max_tokens`, end there: what they hold is given, nothing is made up. State
is per open block and O(1) per event (a thinking block keeps its pieces, for
its `ReasoningState` text); text, thinking and tool-argument deltas are read
by the hot reader of the decoders' one loop, each frame's JSON read once.

Errors and ends: an `error` event (`{"type": "error", "error": {"type":
"overloaded_error", "message": ...}}`) is `ProviderError` with that type;
`message_stop` ends the stream; end of input before it is
`TruncatedStreamError` (`EmptyStreamError` when not even `message_start`
came). A frame of another dialect, JSON that is not an object, a field of the
wrong type, a delta for a block that is not open, a `message_start` of
another message id while one is open (two streams spliced together), is
`MalformedChunkError`; the same `message_start` repeated is ignored.

`AnthropicRenderer` turns deltas back into such a stream, and `http_error`
builds Anthropic's HTTP error bodies.
"""

from __future__ import annotations

from .decode import FINISH_REASONS, AnthropicDecoder
from .errors import ERROR_TYPES, http_error
from .render import STOP_REASONS, AnthropicRenderer

__all__ = [
    "ERROR_TYPES",
    "FINISH_REASONS",
    "STOP_REASONS",
    "AnthropicDecoder",
    "AnthropicRenderer",
    "http_error",
]

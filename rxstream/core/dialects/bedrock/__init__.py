"""The `"bedrock"` dialect: AWS Bedrock ConverseStream, event-stream messages to deltas and back.

Input: `EventStreamMessage`s (what `EventStreamParser` / `rs.eventstream_frames()`
cut from an `application/vnd.amazon.eventstream` body). Output: deltas.

The stream, by its `:event-type` header (payloads are JSON objects; every one
carries a random-length `p` padding string, which is ignored)::

    messageStart  ([contentBlockStart] contentBlockDelta* contentBlockStop)*  messageStop  metadata

- `contentBlockDelta.delta.text` is `TextDelta` (text blocks have no
  `contentBlockStart`, or one with an empty `start`, which gives nothing);
  the first text after a text block with text and no citations ended (its
  `contentBlockStop`), with no other block between, comes after a
  `TextBlockStart`: two text content blocks stay two;
  `reasoningContent.text` is `ReasoningDelta`.
- A `contentBlockStart` with `toolUse {toolUseId, name}` begins a client tool
  call: `ToolCallDelta` with `id` = `toolUseId` (the id the client answers
  with) and `index` = the order of the tool-use blocks (not
  `contentBlockIndex`); its `toolUse.input` deltas are the JSON text
  fragments; a call whose input stayed empty gets `"{}"` at its
  `contentBlockStop`.
- `toolUse` with `type: "server_tool_use"` is a provider-side tool
  (`ServerToolCall` at its stop, its input decoded); a `toolResult` block is
  its result (`ServerToolResult`, the content items of its deltas).
- A reasoning block's `signature` becomes, at its stop, `ReasoningState`
  kind `"thinking"` (data: the signature, text: the block's thinking) and its
  `redactedContent` (base64) kind `"redacted_thinking"`; `raw` is the
  `reasoningContent` block to send back (`{"reasoningText": {"text",
  "signature"}}` or `{"redactedContent": ...}`).
- `citation` deltas are `Citation`s (kind: the location kind, `"web"`,
  `"documentChar"`, ...; url, title and the cited source text), given at the
  `contentBlockStop` of their text block with its span of the answer's text
  as `start`/`end` (`whole_block`; Bedrock's own offsets point into the
  source and stay in `raw`); in a block with no text, without a span.
- `messageStop.stopReason` is `Finish`: `end_turn`/`stop_sequence` -> `stop`
  (`tool_calls` when client tool calls were asked for), `max_tokens`/
  `model_context_window_exceeded` -> `length`, `tool_use` -> `tool_calls`,
  `guardrail_intervened`/`content_filtered` -> `content_filter`, any other
  word as it is; `raw` keeps it. `additionalModelResponseFields` is `Metadata`.
- `metadata.usage` is `Usage`: prompt = `inputTokens + cacheReadInputTokens +
  cacheWriteInputTokens` (AWS counts cache reads and writes apart), completion
  = `outputTokens`, total = `totalTokens` as sent, cached =
  `cacheReadInputTokens`, cache write = `cacheWriteInputTokens`; `metrics`,
  `trace`, `performanceConfig` and `serviceTier` are `Metadata`. Image blocks
  and event types this module does not know are kept as `Metadata` under
  `"events"` (the service adds members), and so are `reasoningContent` deltas
  with members other than `text`, `signature` and `redactedContent`.
- A message with `:message-type: exception` is `ProviderError` with `type` =
  its `:exception-type` (`throttlingException`, `modelStreamErrorException`,
  ...), the payload's `message` and, where sent, `originalStatusCode` as
  `code`; `:message-type: error` carries `:error-code`/`:error-message`.

The end: the answer is complete at `messageStop`, but its usage follows in
`metadata`. So `done` turns True only at a `metadata` after `messageStop`
(then the operator ends the stream and releases the connection); input that
ends right after `messageStop` is a normal end too (no usage). Input that ends
before `messageStop` is `TruncatedStreamError`. After `messageStop` only
`metadata` (and errors, and unknown event types) may come; content is
`MalformedChunkError`.

Spec: the ConverseStream API reference and botocore's service model
(`bedrock-runtime/2023-09-30/service-2.json`); the AWS event-stream framing
is `rxstream.core.eventstream`'s.
"""

from __future__ import annotations

from .decode import FINISH_REASONS, BedrockDecoder
from .errors import ERROR_TYPES, http_error
from .render import BedrockRenderer, event_message

__all__ = [
    "ERROR_TYPES",
    "FINISH_REASONS",
    "BedrockDecoder",
    "BedrockRenderer",
    "event_message",
    "http_error",
]

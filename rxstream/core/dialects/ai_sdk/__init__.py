"""The `"ai-sdk"` dialect: the AI SDK's UI message stream (what `useChat` reads).

The format the `ai` npm package's `toUIMessageStreamResponse()` writes and its
`DefaultChatTransport` reads (protocol v1, response header
`x-vercel-ai-ui-message-stream: v1`): SSE events without a name, each
`data: {"type": <chunk type>, ...}`, ending with `data: [DONE]`. Input to the
decoder: `SSEFrame`s. Output: deltas.

What becomes what (decoding):

- `start` is `Metadata({"messageId": ...})` (and its `messageMetadata`, below);
- `text-delta` is `TextDelta` (`RefusalDelta` when its `text-start` carried
  `providerMetadata: {"rxstream": {"refusal": true}}`, which is how the renderer
  writes a refusal), `reasoning-delta` `ReasoningDelta`; `*-start`/`*-end`
  carry nothing new (their `providerMetadata` is `Metadata({"providerMetadata": ...})`);
- a client tool call: `tool-input-start` is `ToolCallDelta(index, id=toolCallId,
  name=toolName)`, each `tool-input-delta` a fragment of its arguments;
  `tool-input-available` adds the input as compact JSON when no fragment came
  (a provider that sends tool calls whole); `index` is the order of appearance;
- a call with `providerExecuted: true` is `ServerToolCall` (at
  `tool-input-available`), `tool-output-available` is `ServerToolResult`
  (whoever ran it: an AI SDK backend that runs a tool itself sends its output);
- `source-url` is `Citation("source-url", url, title)`, `source-document`
  `Citation("source-document", title=...)`;
- `messageMetadata` (on `start`, `finish` and `message-metadata`): a
  `"usage"` object in the AI SDK's `LanguageModelUsage` shape (`inputTokens`,
  `outputTokens`, `totalTokens`, `reasoningTokens`, `cachedInputTokens`,
  `inputTokenDetails.cacheReadTokens` and `.cacheWriteTokens`) is `Usage`;
  the rest is `Metadata` (an object as it is, any other value as
  `{"messageMetadata": value}`);
- every other chunk the schema allows (`data-*`, `file`, `tool-input-error`,
  `tool-output-error`, `tool-output-denied`, `tool-approval-request`, `abort`,
  and types of a later protocol version) is `Metadata({"events": [<chunk>]})`;
  `start-step`, `finish-step` and the renderer's `data-rxstream-step` parts
  only mark steps and carry nothing;
- with `runs=True` (`rs.decode("ai-sdk", runs=True)`), a run's items too:
  `StepStart` at `start-step` (the one the `data-rxstream-step` part before
  it carries, else `StepStart(n, "", "")` numbered in order), `StepEnd` at the
  part that carries it (else `StepEnd(n, None)` at `finish-step`),
  `ToolResult` for a client call's `tool-output-available` / `-error` /
  `-denied` (a denial without its reason; the name `""` for a call this
  stream did not show), `ApprovalRequest` for `tool-approval-request` (the
  call's name and input); a call's index counts from 0 in each step.

`finish` carries the finish: `finishReason` `stop`, `length`, `tool-calls`,
`content-filter` are the normalised reasons (`Finish.raw` keeps the hyphenated
word), `error` and `other` stay as they are; a `finish` without one is `"stop"`
(`"tool_calls"` when the answer asked for client tool calls). The stream ends
at `data: [DONE]`, which follows `finish` (or `abort`); end of input after
`finish` without `[DONE]` is accepted too, end of input before it is
`TruncatedStreamError`. An `error` chunk is `ProviderError` with `errorText`
as its message. A chunk that is not an object with a string `type`, or whose
fields have the wrong JSON types, is `MalformedChunkError` naming the dialect.

A run's items (`rs.run`) render as one UI message of several steps, tools'
results and approval requests (see `AISDKRenderer`), which `runs=True` reads
back; the decisions come back in the page's next request, which
`approval_responses` reads.

Follows the `ai` package (6.x): `uiMessageChunkSchema`, `JsonToSseTransformStream`,
`UI_MESSAGE_STREAM_HEADERS`.
"""

from __future__ import annotations

from .approvals import approval_responses
from .decode import AISDKDecoder
from .errors import HEADERS, http_error
from .render import AISDKRenderer, approval_id

__all__ = [
    "HEADERS",
    "AISDKDecoder",
    "AISDKRenderer",
    "approval_id",
    "approval_responses",
    "http_error",
]

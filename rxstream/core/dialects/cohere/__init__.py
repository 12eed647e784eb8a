"""The `"cohere"` dialect: Cohere v2 chat streams (`POST /v2/chat`, `"stream": true`).

Input: `SSEFrame`s, each `event: <type>` with `data: {"type": <type>, ...}`
(recordings without the `event:` line read the same: the type is taken from
the data). Output: deltas.

What becomes what:

- `message-start` is `Metadata({"id": <message id>})`;
- `content-delta` text is `TextDelta`; thinking content (`{"thinking":
  ...}`, reasoning models) and `tool-plan-delta` are `ReasoningDelta`;
  `logprobs` on a delta are `Metadata({"logprobs": [<logprobs>, ...]})`;
- `tool-call-start` / `tool-call-delta` are `ToolCallDelta`s: the id and name
  on the first, then the argument fragments as sent; `index` is the call's
  order of appearance (Cohere's own per-call `index` picks the call);
- `citation-start` is one `Citation` per source (`kind` = the source's type,
  `"document"` or `"tool"`; url and title from the document or tool output
  where they have them; `start`/`end`/`text` as Cohere sends them, character
  offsets into the content the citation's `type` names: the text, the
  thinking or the plan; raw = the whole citation object), or one
  `Citation("citation")` when it names no source;
- `debug` is `Metadata({"debug": ...})`; an event of a type this decoder does
  not know (Cohere's event types are lower-case hyphenated words, and new
  ones may appear) is `Metadata({"events": [<event>]})`;
- `content-start` is read like `content-delta` (its text or thinking is
  usually empty); `content-end`, `tool-call-end`, `citation-end` carry nothing
  new. Fields of `message-start` and `message-end` that rxstream does not
  read are kept as `Metadata`.

`message-end` ends the stream: `finish_reason` `COMPLETE` and
`STOP_SEQUENCE` are `"stop"` (`"tool_calls"` if the answer asked for tool
calls), `MAX_TOKENS` `"length"`, `TOOL_CALL` `"tool_calls"`, others
(`TIMEOUT`, `ERROR` without a message) the provider's word; `Finish.raw`
keeps it. A `message-end` with `delta.error` is `ProviderError`, and so is
an `{"error": ...}` object without a type (a gateway's, mid-stream). Usage comes
from `usage.tokens` (what the model read and wrote), not `billed_units`
(which leaves out the system prompt and template tokens: 12 billed input
tokens against 507 read in a recorded stream); `billed_units` is used only
when `tokens` is absent, and `Usage.raw` keeps both. `cached_tokens` is
`cached_tokens`; Cohere reports no reasoning count. End of input before
`message-end` is `TruncatedStreamError`; `data: [DONE]`, which the official
SDK tolerates, is ignored.

Follows Cohere's v2 chat streaming reference (`StreamedChatResponseV2`,
`ChatFinishReason`, `Usage`).
"""

from __future__ import annotations

from .decode import CohereDecoder
from .errors import http_error
from .render import CohereRenderer

__all__ = ["CohereDecoder", "CohereRenderer", "http_error"]

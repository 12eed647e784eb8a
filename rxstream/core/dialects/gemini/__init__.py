"""The `"gemini"` dialect: Gemini API / Vertex AI `streamGenerateContent?alt=sse`.

Input: `SSEFrame`s whose data is one whole `GenerateContentResponse` each
(no `event:` lines, no `[DONE]`; the real API frames them with CRLF, which
`sse_frames` reads like LF). Output: deltas.

What becomes what (per candidate; `choice` is the candidate's `index`, 0
when absent):

- a `text` part is `TextDelta`, a `thought: true` text part `ReasoningDelta`
  (empty texts give nothing);
- a `thoughtSignature` (on any part) is `ReasoningState("thought_signature",
  data=<signature>, index=<the tool call it rode on, else None>,
  raw=<the part>)`: the next turn must send it back on the same part;
- a `functionCall` is a client tool call, `ToolCallDelta(index=<order of
  appearance>, id=functionCall.id or None, name, arguments)`: an `args`
  object is serialised compactly (`{}` when absent). Vertex streamed
  arguments (`partialArgs` + `willContinue`) are written out as JSON text
  while they stream, so the fragments concatenate to the compact JSON of the
  final arguments (see `_json_paths`); the call ends at an empty
  `functionCall`, at a chunk that says it will not continue, at the next
  call, or at the candidate's `finishReason` (streams may end with
  `{"text": ""}` instead of a closing `functionCall`);
- `executableCode` / `codeExecutionResult` (code execution) and `toolCall` /
  `toolResponse` (Gemini 3 built-in tools) are `ServerToolCall` /
  `ServerToolResult` (`name` "code_execution" or the `toolType`; a result
  without an id answers the code run just before it);
- `groundingMetadata` (`{}` until the last chunk; the last non-empty one is
  used) becomes one `Citation("grounding")` per grounding support and chunk
  it cites (url and title from the chunk's `web`, `retrievedContext` or
  `maps`, text and span from the support's segment; raw
  `{"groundingSupport", "groundingChunk"}`) and one per chunk no support
  cites; `citationMetadata` sources (`citationSources` on the Gemini API,
  `citations` on Vertex) become `Citation("citation")`. Both are emitted at
  the candidate's finish. Their offsets are UTF-8 byte offsets on the wire;
  `start`/`end` are converted to character offsets into the candidate's
  answer text (`Message.content`), None when they point outside it. The
  whole `groundingMetadata` (search entry point, queries) is also kept as
  `Metadata({"groundingMetadata": ...})`;
- other information is `Metadata`: `{"id": responseId, "model":
  modelVersion}` (when they change), `createTime`, `promptFeedback`,
  `safetyRatings` (the candidate's last, at its finish), `finishMessage`,
  `urlContextMetadata`, `avgLogprobs`, `logprobsResult` (a list, one entry
  per chunk), parts of other kinds (`inlineData` images and audio,
  `fileData`, kinds rxstream does not know) as `{"parts": [<part>, ...]}`
  in wire order, and any field rxstream does not know, under its own name.

Finish: `STOP` is `"stop"`, or `"tool_calls"` when that candidate asked for
client function calls; `MAX_TOKENS` is `"length"`; the safety, recitation,
blocklist, prohibited-content and SPII reasons are `"content_filter"`; any
other reason (`MALFORMED_FUNCTION_CALL`, `LANGUAGE`, `OTHER`, ...) is the
provider's word. `Finish.raw` keeps what was sent. A prompt blocked before
any candidate (`promptFeedback.blockReason`) is `Finish("content_filter",
raw=<blockReason>)`.

Usage: the last `usageMetadata` with counts wins, emitted once at the end:
prompt = `promptTokenCount` + `toolUsePromptTokenCount` (tool results fed
back to the model are input too, and with them prompt + completion adds up
to `totalTokenCount`), completion = `candidatesTokenCount` +
`thoughtsTokenCount`, reasoning = `thoughtsTokenCount`, cached =
`cachedContentTokenCount`, total = `totalTokenCount`; `Usage.raw` keeps the
object.

The end: the stream is done at the chunk on which every candidate seen has
its `finishReason` (or the prompt was blocked); then the decoder takes no
more input and `rs.decode` releases the connection, so nothing after it is
read. One exception: Gemini sends `finishReason` on the chunk that starts a
code run (an `executableCode` whose `codeExecutionResult` has not come yet)
and then the result and the rest of the answer, ending with another
`finishReason`; such a finish is held back, and is the candidate's end only
if the input ends with nothing more for it. Content for a candidate after
its own finish (while others go on) is `MalformedChunkError`. End of input before the end is
`TruncatedStreamError`. The decoder keeps each candidate's answer text (to
convert citation offsets) and the open containers of a streamed call;
every chunk is read once. `{"error": {"code", "message", "status"}}` (also
wrapped in a one-element list) is `ProviderError` (type = `status`, code =
`code`).

Follows the `GenerateContentResponse` reference (Gemini API and Vertex AI),
the `FinishReason` and `BlockedReason` enums, and Vertex's
`streamFunctionCallArguments` (`FunctionCall.partialArgs`, JSON paths per
RFC 9535).
"""

from __future__ import annotations

from .decode import GeminiDecoder
from .errors import http_error
from .render import GeminiRenderer

__all__ = ["GeminiDecoder", "GeminiRenderer", "http_error"]

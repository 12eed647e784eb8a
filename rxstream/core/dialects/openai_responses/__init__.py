"""The `"openai-responses"` dialect: OpenAI Responses API streams (`response.*` events).

Input: `SSEFrame`s of a `/v1/responses` stream (`stream: true`), with or
without `event:` lines (OpenAI, Azure, DeepSeek and Bedrock-mantle send them,
OpenRouter and the converted recordings do not), with or without
`sequence_number` (absent before mid-2025), with `obfuscation` padding or not.
Output: the common deltas.

Mapping (what each event becomes):

- `output_text.delta` -> `TextDelta`, `refusal.delta` -> `RefusalDelta`,
  `reasoning_summary_text.delta` and `reasoning_text.delta` ->
  `ReasoningDelta`: the text of every output item and content part in wire
  order, with nothing added between them. A delta's `logprobs` come as
  `Metadata({"logprobs": [...]})` just before its text. A `message` item
  added right after a message item with text ended (no other item
  between) -> `TextBlockStart(raw=<the item>)`: each message item is a
  block of its own, as the openai SDK's final output keeps it.
- `function_call` items -> `ToolCallDelta`: `id` is the item's `call_id`
  (what the client answers with; the `fc_...` item id only when a server
  sends no `call_id`), the name from `output_item.added`, the arguments from
  `function_call_arguments.delta`; `index` is the order in which client calls
  appear. `custom_tool_call` items are client calls too (their free-text
  `input` is the arguments: not JSON), and so are the built-in tools the
  client runs (`shell_call` without a server `environment`, `local_shell_call`,
  `apply_patch_call`, `computer_call`, `tool_search_call` with `execution:
  "client"`, any other `*_call` with a `call_id`): named by the type without
  `_call`, the item's other fields as the JSON arguments, the item itself also
  under `Metadata` `items` (what is sent back with the call's output).
- `reasoning` items -> `ReasoningState(kind="reasoning_item", id, data=
  encrypted_content or "", raw=item)` when the item's `output_item.done`
  comes, so the state stands where the item did (the API wants a call's
  reasoning item before it); an item only in `response.completed`'s
  `output` (not streamed) then. The encrypted content differs between
  `output_item.added`, `output_item.done` and `response.completed`, and
  OpenRouter changes the item id: the request renderer sends the item back
  as `response.completed` holds it (the final `Metadata`'s `response`); a
  `compaction` item (the earlier turns summarised, encrypted) -> `ReasoningState(kind=
  "compaction", id, data=encrypted_content, raw=item)` when it is done.
- `output_text.annotation.added` -> `Citation` (`kind` the annotation type;
  `url`, `title` or `filename`, `start_index`/`index`, `end_index`).
- Items the provider ran (`web_search_call`, `file_search_call`,
  `code_interpreter_call`, `image_generation_call`, `mcp_call`,
  `mcp_list_tools`, `mcp_approval_request`, and any other `*_call` without a
  `call_id`, with `execution: "server"` or run in a container) ->
  `ServerToolCall(id, name, input)` when the item is done: the
  name is the type without `_call` (`mcp_call` is `"mcp"`), the input the
  item's other fields; their results (`results`, `outputs`, `result`,
  `output`, `tools`) -> `ServerToolResult`.
- `response.completed` -> `Finish("tool_calls")` when the output holds a client
  call, else `Finish("stop")` (raw: the status, `"completed"`);
  `response.incomplete` -> `Finish` from `incomplete_details.reason`
  (`max_output_tokens` -> `"length"`, `content_filter` -> `"content_filter"`,
  any other reason as it is; raw: the reason). Both end the stream; `Usage`
  comes from `response.usage` (`input_tokens`, `output_tokens` with reasoning
  in them, `reasoning_tokens`, `cached_tokens`, `cache_write_tokens`).
- `Metadata`: `id` and `model` (from `response.created`, again at the end),
  the whole terminal `response` object, `function_call_item_ids` (each
  `function_call` item's own `fc_...` id by its `call_id`, which
  `ToolCall.id` is: `rs.request("openai-responses", ...)` sends a decoded
  turn's calls back with them), Azure's `content_filters`, output
  items of other kinds (`shell_call_output`, ...) under `items`,
  partial images under `partial_images`, and events of `response.*` types
  this module does not know under `events` (OpenAI adds event types often).
  Keep-alives (`{"type": "keepalive"}`, which OpenAI sends on long streams
  without documenting it) give nothing.
- `error` (flat `{"code", "message"}` as documented, or nested `{"error":
  {...}}` as sent) and `response.failed` (with `response.error`) ->
  `ProviderError` with the provider's type, code and message.

Invariants:

- Text is never doubled: each `.done` event, `output_item.done` item and
  `response.completed` output item only fills in what no finer event
  delivered (LM Studio sends `function_call_arguments.done` without any delta;
  a server that sends only whole items still gives all their text).
  `response.completed`'s output items are matched to the streamed ones by
  id, by position only when a gateway gave the item a new id.
- Items may interleave (OpenRouter streams a message inside a reasoning
  item): everything is keyed by `output_index` and part index.
- Done at `response.completed` / `response.incomplete`; a `data: [DONE]` that
  follows (OpenRouter) is never read, and one before them is ignored. The end
  of input before them is `TruncatedStreamError` (`EmptyStreamError` when no
  event came at all). A frame of another dialect, a field of the wrong type,
  or an `event:` name that contradicts `data.type` is `MalformedChunkError`.
- Linear: a constant amount of work per delta; whole items are read once.

`ResponsesRenderer` turns deltas back into such a stream, and `http_error`
gives an HTTP error body in OpenAI's shape.

Follows the OpenAI Responses streaming reference (the event types of the
openai SDK's `ResponseStreamEvent`) and the recordings in tests/data.
"""

from __future__ import annotations

from .decode import ResponsesDecoder
from .errors import http_error
from .render import ResponsesRenderer

__all__ = ["ResponsesDecoder", "ResponsesRenderer", "http_error"]

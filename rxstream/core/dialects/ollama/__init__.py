"""The `"ollama"` dialect: Ollama `/api/chat` NDJSON lines to deltas and back.

Input: lines (`str`, one JSON object each, as `rs.lines()` cuts an
`application/x-ndjson` body); blank lines are ignored. Output: deltas.

Every line is `{"model", "created_at", "message": {"role", "content",
"thinking"?, "tool_calls"?}, "done": bool, ...}`:

- `message.content` is `TextDelta`, `message.thinking` `ReasoningDelta`
  (empty strings give nothing);
- `message.tool_calls` arrive whole: each is one `ToolCallDelta` with
  `id` = its `id` (None when absent, as before Ollama 0.5), `index` = the
  order of appearance across the stream, and `arguments` = the JSON object
  `function.arguments` serialised compactly (a string is taken as the JSON
  text it is);
- `logprobs` (a list per line) and output `images` are `Metadata`;
- the line with `"done": true` ends the stream: `done_reason` is `Finish`
  (`stop` -> `stop`, or `tool_calls` when the answer asked for tool calls,
  for which Ollama says `stop` too; `length` -> `length`; `load`/`unload`
  as they are; absent or `""` -> `stop` with `raw` None), `prompt_eval_count`
  / `eval_count` are `Usage` (a count Ollama omits is 0;
  `prompt_eval_cached_count`, the prompt tokens read from the cache and
  counted in `prompt_eval_count` too, is `cached_tokens`; `Usage.raw` keeps
  the counts and durations), and `model`, `created_at` and the durations
  (nanoseconds) are `Metadata`;
- a top-level field of a line that rxstream does not know (`_debug_info`,
  fields of newer servers) is `Metadata` under its own name.

A line `{"error": "..."}` is `ProviderError` (Ollama's error after the
stream began). Input that ends without `"done": true` is
`TruncatedStreamError`; a JSON object that is no `/api/chat` line (an
`/api/generate` line, an OpenAI chunk, ...) is `MalformedChunkError`.

Spec: Ollama's API documentation (`docs/api.md`, "Generate a chat
completion") and its server (`server/routes.go`, `api/types.go`).
"""

from __future__ import annotations

from .decode import COUNTS, DURATIONS, OllamaDecoder
from .errors import http_error
from .render import DEFAULT_CREATED_AT, OllamaRenderer

__all__ = [
    "COUNTS",
    "DEFAULT_CREATED_AT",
    "DURATIONS",
    "OllamaDecoder",
    "OllamaRenderer",
    "http_error",
]

"""The `"openai-chat"` dialect: `/v1/chat/completions` streams, frames to chunks to deltas.

The chat decoder in its parts: `chunks` (`ChunkDecoder`: frames -> `ChatChunk`,
`rs.decode_chunks()`), `reader` (`ChunkReader`: the chunk-to-delta rules, every
field checked), `deltas` (`DeltaDecoder`: chunks -> deltas, `rs.deltas()`),
`decode` (`OpenAIChatDecoder`: both in one machine, `rs.decode("openai-chat")`),
`render` (deltas -> chat chunks) and `errors` (OpenAI's HTTP error answers).

Input: `SSEFrame`s of a chat-completion stream (`stream: true`), as every
OpenAI-compatible server sends them. Output: the deltas `deltas()` gives.

`OpenAIChatDecoder` is `ChunkDecoder` followed by `DeltaDecoder`, fused: one
machine that reads each chunk once, with the same items and the same errors
as the long spelling `decode_chunks(), deltas()` (which stays for
chunk-level access), the dialect named in `MalformedChunkError`.
It is done at `data: [DONE]`; a stream that stops before it with a choice
unfinished is `TruncatedStreamError`, one that brought no choice at all
`EmptyStreamError`.

Finish reasons are OpenAI's own words already (`stop`, `length`,
`tool_calls`, `content_filter`); the legacy `function_call` is normalised to
`tool_calls`. `Finish.raw` keeps what was sent.
"""

from __future__ import annotations

from .chunks import ChatFrameDecoder, ChunkDecoder
from .decode import OpenAIChatDecoder
from .deltas import DeltaDecoder, deltas_of
from .errors import http_error
from .reader import TOO_DEEP, ChunkReader, chunk_text, parse_usage
from .render import OpenAIChatRenderer

__all__ = [
    "TOO_DEEP",
    "ChatFrameDecoder",
    "ChunkDecoder",
    "ChunkReader",
    "DeltaDecoder",
    "OpenAIChatDecoder",
    "OpenAIChatRenderer",
    "chunk_text",
    "deltas_of",
    "http_error",
    "parse_usage",
]

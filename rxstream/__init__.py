"""rxstream: streaming LLM chat completions as ReactiveX observables.

    import httpx, rxstream as rs

    with httpx.Client() as client:
        rs.from_request(client, "POST", url, json=payload).pipe(
            rs.sse_frames(),        # lines -> SSEFrame
            rs.decode_chunks(),     # SSEFrame -> ChatChunk, ends at [DONE]
            rs.deltas(),            # ChatChunk -> TextDelta | ToolCallDelta | ...
            rs.accumulate_message(),
        ).subscribe(print)

This module is the one front door: it re-exports the public names and nothing
else. The sans-I/O machines live in `rxstream.core`.
"""

from .__about__ import __version__
from .bridges import to_async_iterator, to_iterator
from .errors import (
    BufferOverflowError,
    EmptyStreamError,
    HTTPStatusError,
    LineTooLongError,
    MalformedChunkError,
    ProviderError,
    StreamError,
    StreamTimeoutError,
    ToolArgumentsError,
    TransportError,
    TruncatedStreamError,
    UnexpectedContentTypeError,
)
from .models import (
    ChatChunk,
    Delta,
    DeltaType,
    Finish,
    Message,
    ReasoningDelta,
    RefusalDelta,
    SSEFrame,
    TextDelta,
    TokenCount,
    ToolCall,
    ToolCallDelta,
    Usage,
)
from .multicast import Multicast, multicast
from .operators import (
    accumulate_message,
    accumulate_tool_calls,
    coalesce,
    count_tokens,
    decode_chunks,
    deltas,
    lines,
    split_by_delta_type,
    sse_frames,
    think_tags,
    timeouts,
)
from .sources import from_lines, from_request, from_response

__all__ = [
    "BufferOverflowError",
    "ChatChunk",
    "Delta",
    "DeltaType",
    "EmptyStreamError",
    "Finish",
    "HTTPStatusError",
    "LineTooLongError",
    "MalformedChunkError",
    "Message",
    "Multicast",
    "ProviderError",
    "ReasoningDelta",
    "RefusalDelta",
    "SSEFrame",
    "StreamError",
    "StreamTimeoutError",
    "TextDelta",
    "TokenCount",
    "ToolArgumentsError",
    "ToolCall",
    "ToolCallDelta",
    "TransportError",
    "TruncatedStreamError",
    "UnexpectedContentTypeError",
    "Usage",
    "__version__",
    "accumulate_message",
    "accumulate_tool_calls",
    "coalesce",
    "count_tokens",
    "decode_chunks",
    "deltas",
    "from_lines",
    "from_request",
    "from_response",
    "lines",
    "multicast",
    "split_by_delta_type",
    "sse_frames",
    "think_tags",
    "timeouts",
    "to_async_iterator",
    "to_iterator",
]

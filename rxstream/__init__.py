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

Models and errors load with the package; the operators and the I/O layer
(which bring reactivex, httpx's world, asyncio and threads) load on first use
of one of their names, so `import rxstream.core` stays free of all of them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .__about__ import __version__
from .errors import (
    BufferOverflowError,
    EmptyStreamError,
    HTTPStatusError,
    JSONStreamError,
    LimiterError,
    LineTooLongError,
    MalformedChunkError,
    OutputValidationError,
    ProviderError,
    RetryError,
    StoredStreamError,
    StreamError,
    StreamTimeoutError,
    ToolArgumentsError,
    ToolError,
    TransportError,
    TruncatedStreamError,
    UnexpectedContentTypeError,
)
from .models import (
    ApprovalRequest,
    ApprovalResponse,
    ChatChunk,
    Citation,
    Cost,
    Delta,
    DeltaType,
    EmptyCitations,
    EventStreamMessage,
    Finish,
    JSONPatch,
    Message,
    MessageBlock,
    Metadata,
    Output,
    Partial,
    ReasoningBlock,
    ReasoningDelta,
    ReasoningState,
    RefusalDelta,
    Reset,
    RunEnd,
    RunItem,
    ServerToolCall,
    ServerToolResult,
    SSEFrame,
    StepEnd,
    StepStart,
    StreamEntry,
    TextBlock,
    TextBlockStart,
    TextDelta,
    TokenCount,
    Tool,
    ToolCall,
    ToolCallDelta,
    ToolResult,
    Usage,
)

if TYPE_CHECKING:
    from .core.continuation import continuation_messages, trim_partial
    from .io import (
        from_lines,
        from_redis_stream,
        from_request,
        from_response,
        to_async_iterator,
        to_iterator,
        to_redis_stream,
    )

    # From its own module: `multicast` is also the name of a submodule of `.io`, which
    # mypy can take for the function when `.io` is in an import cycle with this package.
    from .io.multicast import Multicast, multicast
    from .io.requests import request
    from .operators import (
        accumulate_message,
        accumulate_tool_calls,
        count_tokens,
        decode_chunks,
        eventstream_frames,
        split_by_delta_type,
        sse_frames,
        think_tags,
    )

    # From their own modules: these names are also those of the modules, which
    # mypy can take for one another when it defers the package's imports.
    from .operators.coalesce import coalesce
    from .operators.continuation import continue_from
    from .operators.decode import decode
    from .operators.deltas import deltas
    from .operators.lines import lines
    from .operators.stop import StopSignal, stop_on
    from .operators.telemetry import telemetry
    from .operators.timeouts import timeouts
    from .operators.to_sse import to_sse
    from .operators.typed import elements, json_patches, object_text, partial_object
    from .runs.batch import ChatResult, chats
    from .runs.limits import Limiter
    from .runs.pricing import cost, run_cost
    from .runs.redis_limits import RedisLimiter
    from .runs.retry import Retry, Route, chat, retrying
    from .runs.run import RunState, RunStep, run, tool_called
    from .runs.telemetry import RunTelemetry
    from .runs.tools import CancelToken, FunctionTool, tool

# The names that load their layer on first use: name -> module.
_LAZY = {
    **dict.fromkeys(
        (
            "Multicast",
            "from_lines",
            "from_redis_stream",
            "from_request",
            "from_response",
            "multicast",
            "to_async_iterator",
            "to_iterator",
            "to_redis_stream",
        ),
        ".io",
    ),
    **dict.fromkeys(
        (
            "accumulate_message",
            "accumulate_tool_calls",
            "coalesce",
            "continue_from",
            "count_tokens",
            "decode",
            "decode_chunks",
            "deltas",
            "eventstream_frames",
            "lines",
            "split_by_delta_type",
            "sse_frames",
            "think_tags",
            "timeouts",
            "to_sse",
        ),
        ".operators",
    ),
    **dict.fromkeys(("StopSignal", "stop_on"), ".operators.stop"),
    **dict.fromkeys(
        ("elements", "json_patches", "object_text", "partial_object"), ".operators.typed"
    ),
    **dict.fromkeys(("continuation_messages", "trim_partial"), ".core.continuation"),
    "telemetry": ".operators.telemetry",
    **dict.fromkeys(("ChatResult", "chats"), ".runs.batch"),
    "Limiter": ".runs.limits",
    **dict.fromkeys(("cost", "run_cost"), ".runs.pricing"),
    "RedisLimiter": ".runs.redis_limits",
    "request": ".io.requests",
    **dict.fromkeys(("Retry", "Route", "chat", "retrying"), ".runs.retry"),
    **dict.fromkeys(("RunState", "RunStep", "run", "tool_called"), ".runs.run"),
    **dict.fromkeys(("CancelToken", "FunctionTool", "tool"), ".runs.tools"),
    "RunTelemetry": ".runs.telemetry",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'rxstream' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = [
    "ApprovalRequest",
    "ApprovalResponse",
    "BufferOverflowError",
    "CancelToken",
    "ChatChunk",
    "ChatResult",
    "Citation",
    "Cost",
    "Delta",
    "DeltaType",
    "EmptyCitations",
    "EmptyStreamError",
    "EventStreamMessage",
    "Finish",
    "FunctionTool",
    "HTTPStatusError",
    "JSONPatch",
    "JSONStreamError",
    "Limiter",
    "LimiterError",
    "LineTooLongError",
    "MalformedChunkError",
    "Message",
    "MessageBlock",
    "Metadata",
    "Multicast",
    "Output",
    "OutputValidationError",
    "Partial",
    "ProviderError",
    "ReasoningBlock",
    "ReasoningDelta",
    "ReasoningState",
    "RedisLimiter",
    "RefusalDelta",
    "Reset",
    "Retry",
    "RetryError",
    "Route",
    "RunEnd",
    "RunItem",
    "RunState",
    "RunStep",
    "RunTelemetry",
    "SSEFrame",
    "ServerToolCall",
    "ServerToolResult",
    "StepEnd",
    "StepStart",
    "StopSignal",
    "StoredStreamError",
    "StreamEntry",
    "StreamError",
    "StreamTimeoutError",
    "TextBlock",
    "TextBlockStart",
    "TextDelta",
    "TokenCount",
    "Tool",
    "ToolArgumentsError",
    "ToolCall",
    "ToolCallDelta",
    "ToolError",
    "ToolResult",
    "TransportError",
    "TruncatedStreamError",
    "UnexpectedContentTypeError",
    "Usage",
    "__version__",
    "accumulate_message",
    "accumulate_tool_calls",
    "chat",
    "chats",
    "coalesce",
    "continuation_messages",
    "continue_from",
    "cost",
    "count_tokens",
    "decode",
    "decode_chunks",
    "deltas",
    "elements",
    "eventstream_frames",
    "from_lines",
    "from_redis_stream",
    "from_request",
    "from_response",
    "json_patches",
    "lines",
    "multicast",
    "object_text",
    "partial_object",
    "request",
    "retrying",
    "run",
    "run_cost",
    "split_by_delta_type",
    "sse_frames",
    "stop_on",
    "telemetry",
    "think_tags",
    "timeouts",
    "to_async_iterator",
    "to_iterator",
    "to_redis_stream",
    "to_sse",
    "tool",
    "tool_called",
    "trim_partial",
]

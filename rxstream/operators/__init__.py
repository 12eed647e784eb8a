"""The Rx operators: one small module per concept, each a thin wrapper over a core machine."""

from .chunks import decode_chunks
from .coalesce import coalesce
from .continuation import continue_from
from .decode import decode
from .deltas import deltas
from .eventstream import eventstream_frames
from .lines import lines
from .message import accumulate_message
from .split import split_by_delta_type
from .sse import sse_frames
from .think import think_tags
from .timeouts import timeouts
from .to_sse import to_sse
from .tokens import count_tokens
from .tools import accumulate_tool_calls
from .typed import elements, json_patches, object_text, partial_object

__all__ = [
    "accumulate_message",
    "accumulate_tool_calls",
    "coalesce",
    "continue_from",
    "count_tokens",
    "decode",
    "decode_chunks",
    "deltas",
    "elements",
    "eventstream_frames",
    "json_patches",
    "lines",
    "object_text",
    "partial_object",
    "split_by_delta_type",
    "sse_frames",
    "think_tags",
    "timeouts",
    "to_sse",
]

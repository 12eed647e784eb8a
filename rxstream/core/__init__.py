"""The sans-I/O core: pure incremental state machines.

Each machine is a `Machine`: `feed(x)` returns a list of items (possibly
empty), `feed_all(xs, out)` does the same for many at once, `close()` flushes
what is buffered and raises if the input stopped half-way, and `done` tells
that the input's own end marker arrived. After `close()` or an error, a
machine refuses all input with a `RuntimeError`; an item of the wrong kind is
a `TypeError` that names the operator missing in front.
No I/O, no threads, no clocks, no reactivex, no httpx: the same input always
gives the same output, so the same machine serves an Rx operator, a `for` loop
and an `async for`:

    from rxstream.core import ChunkDecoder, DeltaDecoder, LineSplitter, SSEParser

    splitter, parser, decoder, deltas = LineSplitter(), SSEParser(), ChunkDecoder(), DeltaDecoder()
    for piece in response.iter_bytes():
        for line in splitter.feed(piece):
            for frame in parser.feed(line):
                for chunk in decoder.feed(frame):
                    for delta in deltas.feed(chunk):
                        print(delta)

Speed shortcuts (fused machines, a shared chunk reader, faster JSON loading
and item constructors) give the same results as the plain code; to step
through the plain code, turn them off with `fast_paths(False)` or the
environment variable `RXSTREAM_NO_FAST=1` (see docs/performance.md).
"""

from .._fast import fast_paths
from ._machine import Feeder, Machine
from .continuation import ContinuationTrimmer, OverlapTrimmer
from .dialects.openai_chat import ChunkDecoder, DeltaDecoder
from .eventstream import EventStreamParser
from .json_stream import JSONStreamParser
from .lines import LineSplitter
from .message import MessageAccumulator
from .objects import (
    ElementSplitter,
    JSONPatchEncoder,
    ObjectTextDecoder,
    PartialObjectAccumulator,
)
from .pipeline import Chained
from .sse import SSEParser
from .think import ThinkTagSplitter
from .tokens import TokenCounter
from .tools import ToolCallAccumulator

__all__ = [
    "Chained",
    "ChunkDecoder",
    "ContinuationTrimmer",
    "DeltaDecoder",
    "ElementSplitter",
    "EventStreamParser",
    "Feeder",
    "JSONPatchEncoder",
    "JSONStreamParser",
    "LineSplitter",
    "Machine",
    "MessageAccumulator",
    "ObjectTextDecoder",
    "OverlapTrimmer",
    "PartialObjectAccumulator",
    "SSEParser",
    "ThinkTagSplitter",
    "TokenCounter",
    "ToolCallAccumulator",
    "fast_paths",
]

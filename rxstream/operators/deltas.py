"""`deltas()`: `ChatChunk` -> flat delta events, over `DeltaDecoder`
(`rxstream.core.dialects.openai_chat.deltas`)."""

from __future__ import annotations

from collections.abc import Callable

from reactivex import Observable

from ..core import DeltaDecoder
from ..models import ChatChunk, Delta
from ._machine import machine_operator

__all__ = ["deltas"]


def deltas() -> Callable[[Observable[ChatChunk | Delta]], Observable[Delta]]:
    """Flatten chat chunks into `TextDelta`, `ReasoningDelta`, `RefusalDelta`,
    `ToolCallDelta`, `Finish` and `Usage` events, in wire order.

    Within one choice the order is reasoning, text, refusal, tool calls, then
    `Finish`; a chunk's `Usage` follows its choices. Empty strings give no
    delta; a `finish_reason` repeated with the same reason gives one `Finish`;
    a `Usage` equal to the previous one is not repeated. Delta items pass
    through unchanged, so the operator composes in any order. Each
    subscription gets its own decoder.

    Marble sketch (`a` = a chunk with text "Hi" and finish_reason "stop")::

        -a-|   ->   -(TF)-|      (T = TextDelta("Hi"), F = Finish("stop"))

    Returns:
        An operator from chunks (or deltas) to deltas.

    Errors sent downstream: `MalformedChunkError` for a chunk with a field of
    the wrong JSON type (the message names its path); `TypeError` for an item
    that is neither a chunk nor a delta, naming what is missing in front
    (frames: "add rs.decode_chunks() before it"). The upstream is disposed.
    As after `rs.decode`, every `StreamError` that ends the stream here
    carries the `Message` of the deltas given before it as `error.partial`.

    >>> import reactivex
    >>> chunk = ChatChunk({"choices": [{"index": 0, "delta": {"content": "Hi"}}]})
    >>> _ = reactivex.of(chunk).pipe(deltas()).subscribe(print)
    TextDelta(text='Hi', choice=0)
    """
    return machine_operator(DeltaDecoder, gives_deltas=True)

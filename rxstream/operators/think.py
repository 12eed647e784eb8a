"""`think_tags()`: move `<think>...</think>` text into `ReasoningDelta`, over
`rxstream.core.think.ThinkTagSplitter`."""

from __future__ import annotations

from collections.abc import Callable

from reactivex import Observable

from ..core.think import ThinkTagSplitter
from ..models import ChatChunk, Delta
from ._chunk_input import chunks_or_deltas
from ._machine import machine_operator

__all__ = ["think_tags"]


def think_tags() -> Callable[[Observable[ChatChunk | Delta]], Observable[Delta]]:
    """Turn the text inside `<think>...</think>` into `ReasoningDelta` (opt-in).

    For models that put their reasoning in the content (DeepSeek-R1 distills
    on Groq or Together). The tags are dropped; the rest of the text stays
    `TextDelta`; other deltas pass through. A tag split across fragments is
    still found: only a piece that could be the start of a tag is held back,
    and released before the choice's next non-text delta or at completion.
    Chunks are decoded to deltas first. Each subscription gets its own state.

    Marble sketch (`a`=`"<think>hm"`, `b`=`"</th"`, `c`=`"ink>Hi"`)::

        -a-b-c-|   ->   -R---T-|       (R = ReasoningDelta("hm"), T = TextDelta("Hi"))

    Errors sent downstream: `MalformedChunkError` for a chunk with a field of
    the wrong JSON type; `TypeError` for an item that is neither a chunk nor a
    delta, naming what is missing in front of `rs.think_tags()`.

    Returns:
        An operator from chunks (or deltas) to deltas.

    >>> import reactivex
    >>> from rxstream.models import TextDelta
    >>> src = reactivex.of(TextDelta("<think>hm</think>Hi"))
    >>> _ = src.pipe(think_tags()).subscribe(print)
    ReasoningDelta(text='hm', choice=0)
    TextDelta(text='Hi', choice=0)
    """
    return machine_operator(chunks_or_deltas(ThinkTagSplitter, "rs.think_tags()"))

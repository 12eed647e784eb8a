"""`accumulate_message()`: deltas -> one final `Message` per choice, over
`rxstream.core.message.MessageAccumulator`."""

from __future__ import annotations

from collections.abc import Callable

from reactivex import Observable

from ..core.message import MessageAccumulator
from ..models import ChatChunk, Delta, Message
from ._chunk_input import chunks_or_deltas
from ._machine import machine_operator

__all__ = ["accumulate_message"]


def accumulate_message() -> Callable[[Observable[ChatChunk | Delta]], Observable[Message]]:
    """Accumulate the stream into one final `Message` per choice, emitted at completion.

    Each message holds the choice's role, content, reasoning, refusal, tool
    calls (in index order), last finish reason and the stream's last `Usage`.
    With `n > 1` the choices stay apart and come in choice order. On error
    nothing is emitted: the error passes through. Each subscription gets its
    own state.

    Marble sketch (`a`, `b` = deltas of choice 0)::

        -a-b-|   ->   -----(M|)
        -a-#     ->   ---#

    Errors sent downstream: `MalformedChunkError` for a chunk with a field of
    the wrong JSON type; `TypeError` for an item that is neither a chunk nor a
    delta, naming what is missing in front of `rs.accumulate_message()`.

    Returns:
        An operator from chunks (or deltas) to messages.

    >>> import reactivex
    >>> from rxstream.models import TextDelta
    >>> src = reactivex.of(TextDelta("He"), TextDelta("llo"))
    >>> _ = src.pipe(accumulate_message()).subscribe(lambda m: print(m.content))
    Hello
    """
    return machine_operator(
        chunks_or_deltas(MessageAccumulator, "rs.accumulate_message()", reads_chunks=True)
    )

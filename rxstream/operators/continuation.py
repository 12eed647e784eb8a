"""`continue_from(partial)`: a continuing attempt's deltas, made to follow the partial answer,
over `rxstream.core.continuation.ContinuationTrimmer`."""

from __future__ import annotations

from collections.abc import Callable

from reactivex import Observable

from ..core.continuation import DEFAULT_WINDOW, ContinuationTrimmer
from ..models import Delta, Message
from ._machine import machine_operator

__all__ = ["continue_from"]


def continue_from(
    partial: Message, *, attempt: int = 2, reason: str = "", window: int = DEFAULT_WINDOW
) -> Callable[[Observable[Delta]], Observable[Delta]]:
    """Make a continuing attempt's deltas follow `partial`, as one answer.

    Put it on the deltas of the request `rs.continuation_messages(...)` built:
    what the consumer already saw (`partial`) followed by what this gives
    accumulates to one answer. The start of the new text (and reasoning) that
    repeats the end of the partial's is left out (held back only while it may
    still be a repeat, at most `window` characters); the new tool calls are
    numbered after the partial's; everything else passes. A partial holding a
    tool call cut in its arguments, which no continuation can take back,
    makes the output open with `Reset(attempt, reason)` and the trimmed
    partial's deltas again (`rs.trim_partial`). Each subscription gets its
    own state.

    Marble sketch (partial text `"The cat sat"`; `a` = `" sat on"`, `b` = `" the mat"`)::

        -a-b-|   ->   -A-b-|       (A = TextDelta(" on"))

    Args:
        partial: the partial `Message` the consumer was shown (untrimmed).
        attempt: the attempt number of this continuation (for the `Reset`).
        reason: why the previous attempt ended (for the `Reset`).
        window: how far back in the partial text a repeat may start.

    Returns:
        An operator from deltas to deltas.

    Raises:
        TypeError: `partial` is not a `Message`.
        ValueError: `window` below 1.

    >>> import reactivex
    >>> from rxstream.models import TextDelta
    >>> src = reactivex.of(TextDelta("cat sat on"), TextDelta(" the mat"))
    >>> _ = src.pipe(continue_from(Message(content="The cat sat"))).subscribe(print)
    TextDelta(text=' on', choice=0)
    TextDelta(text=' the mat', choice=0)
    """

    def make() -> ContinuationTrimmer:
        return ContinuationTrimmer(partial, attempt=attempt, reason=reason, window=window)

    make()  # a mistake in the arguments shows here, not at the first subscription
    return machine_operator(make)

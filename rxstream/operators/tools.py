"""`accumulate_tool_calls()`: fragments -> complete `ToolCall`s, over
`rxstream.core.tools.ToolCallAccumulator`."""

from __future__ import annotations

from collections.abc import Callable

from reactivex import Observable

from ..core.tools import ToolCallAccumulator
from ..models import ChatChunk, Delta, Reset, ToolCall
from ._chunk_input import chunks_or_deltas
from ._machine import machine_operator

__all__ = ["accumulate_tool_calls"]


def accumulate_tool_calls(
    *, partial: bool = False
) -> Callable[[Observable[ChatChunk | Delta]], Observable[ToolCall | Reset]]:
    """Reassemble tool-call fragments into one complete `ToolCall` per call.

    A choice's calls are emitted (in index order) when its `Finish` arrives,
    or when the source completes for a choice that never finished. Fragments
    are matched per choice by index, else by id, else continue the latest
    call; `id` and `name` are never doubled. Chunks are decoded to deltas
    first; non-tool deltas are ignored. Each subscription gets its own state.
    A `Reset` (a new answer replaces the one so far) drops the calls not yet
    emitted and is emitted itself, in its place: the calls (and snapshots)
    emitted before it belonged to the dropped answer.

    Marble sketch (`a`, `b` = fragments of one call, `f` = its `Finish`)::

        -a-b-f-|   ->   -----C-|        (C = the complete ToolCall)
        -a-b-|     ->   -----C|         (emitted at completion)
        -a-R-b-f-| ->   ---R---C-|      (R = a Reset: the call of a is dropped)

    Args:
        partial: also emit snapshots `ToolCall(complete=False, partial=...)`
            as the arguments grow; `partial` holds what an incremental JSON
            reader has read of them (complete scalars only, an open string
            with its text so far; None once they are not JSON).
            Snapshots come after every fragment while a call's arguments are
            under 2,048 characters, then each time they have grown by 1/8
            since the last one (and whenever a call gets its id or name), so
            the cost stays linear in the arguments' length; the complete
            call follows at its choice's `Finish`.

    Returns:
        An operator from chunks (or deltas) to tool calls (and the `Reset`s).

    >>> import reactivex
    >>> from rxstream.models import Finish, ToolCallDelta
    >>> src = reactivex.of(ToolCallDelta(0, "{}", id="c1", name="f"), Finish("tool_calls"))
    >>> _ = src.pipe(accumulate_tool_calls()).subscribe(lambda c: print(c.name, c.arguments))
    f {}
    """
    return machine_operator(
        chunks_or_deltas(lambda: ToolCallAccumulator(partial=partial), "rs.accumulate_tool_calls()")
    )

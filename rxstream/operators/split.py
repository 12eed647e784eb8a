"""`split_by_delta_type()`: one sub-stream per `DeltaType`."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import reactivex
from reactivex import GroupedObservable, Observable
from reactivex import operators as ops

from ..core import DeltaDecoder
from ..models import ChatChunk, Delta, DeltaType
from ._machine import machine_operator

__all__ = ["split_by_delta_type"]


def _delta_type(delta: Delta) -> DeltaType:
    return delta.type


def split_by_delta_type() -> Callable[
    [Observable[ChatChunk | Delta]], Observable[GroupedObservable[DeltaType, Delta]]
]:
    """Split a delta stream into one `GroupedObservable` per `DeltaType`.

    A group (its `.key` is the `DeltaType`) is emitted at the first delta of
    that type; it then receives every delta of that type, in order. An error
    or the completion of the source reaches every group and the outer stream.
    Chunks are decoded to deltas first. Subscribe to a group when it arrives
    (inside the outer `on_next`), or items emitted meanwhile are missed: this
    is Rx's `group_by`. Also as in `group_by`, the source (and its connection)
    is released only when the outer subscription and every subscribed group
    are disposed, or when the source ends.

    Marble sketch (`t` = text, `u` = tool call, `f` = finish)::

        -t-u-t-f-|   ->   -T-U---F-|     (outer: one group per type)
                           T: t---t---|
                           U:   u-----|
                           F:       f-|

    Returns:
        An operator from chunks (or deltas) to grouped observables.

    >>> import reactivex
    >>> from rxstream.models import TextDelta, Finish
    >>> src = reactivex.of(TextDelta("a"), Finish("stop"), TextDelta("b"))
    >>> _ = src.pipe(split_by_delta_type()).subscribe(lambda g: print(g.key))
    text
    finish
    """
    return reactivex.compose(
        machine_operator(partial(DeltaDecoder, operator="rs.split_by_delta_type()")),
        ops.group_by(_delta_type),
    )

"""`split_by_delta_type()`: one sub-stream per `DeltaType`."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import reactivex
from reactivex import GroupedObservable, Observable, abc
from reactivex import operators as ops

from ..core import DeltaDecoder
from ..models import ChatChunk, Delta, DeltaType, Reset
from ._machine import machine_operator

__all__ = ["split_by_delta_type"]

_Keyed = tuple[DeltaType, Delta]


def _keyed(source: Observable[Delta]) -> Observable[_Keyed]:
    """Each delta with its group's key; a `Reset` once for every group opened, then its own."""

    def subscribe(
        observer: abc.ObserverBase[_Keyed], scheduler: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        opened: dict[DeltaType, None] = {}  # the groups so far, in the order they opened

        def on_next(delta: Delta) -> None:
            key = delta.type
            if type(delta) is Reset:
                for other in list(opened):
                    if other is not key:
                        observer.on_next((other, delta))
            opened[key] = None
            observer.on_next((key, delta))

        return source.subscribe(
            on_next, observer.on_error, observer.on_completed, scheduler=scheduler
        )

    return Observable(subscribe)


def _key(pair: _Keyed) -> DeltaType:
    return pair[0]


def _delta(pair: _Keyed) -> Delta:
    return pair[1]


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

    A `Reset` (a new answer replaces the one so far) goes to every group
    opened before it, so each group's consumer learns to drop what it showed,
    and then to a `DeltaType.RESET` group of its own.

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
        _keyed,
        ops.group_by(_key, _delta),
    )

"""`DeltaSource`: a source of deltas that the machine operators piped after it run inside.

A machine operator (`accumulate_message()`, `count_tokens()`, ...) piped after
another machine operator fuses with it (`rxstream.operators._machine`); piped
after any other observable, it subscribes to it as a stage of its own, behind
the `DeltaDecoder` that lets it take chunks too. A source that gives deltas
only (no `ChatChunk`) and delivers them from one place (the retry run of
`rs.chat(..., retry=)`, in `rxstream.runs`) can do better: it subclasses
`DeltaSource`, and the operators after it are handed its observer itself
(`subscribe_observer`, no wrapper per item), with the delta decoder in front
of their machines left out (a fast path: kept when the fast paths are off).
What an observer sees is the same either way.
"""

from __future__ import annotations

from typing import Any, Protocol, cast

from reactivex import Observable, abc

__all__ = ["DeltaSource", "Observing"]


class Observing(Protocol):
    """What `subscribe_observer` takes: the three notifications (an `ObserverBase`, or
    the machine operators' own run)."""

    def on_next(self, value: Any, /) -> None: ...

    def on_error(self, error: Exception, /) -> None: ...

    def on_completed(self) -> None: ...


class DeltaSource(Observable[Any]):
    """An observable of deltas only that machine operators may subscribe to directly."""

    def subscribe_observer(
        self, observer: Observing, scheduler: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        """Subscribe `observer` as it is: it ignores what comes after its end itself, and
        the returned disposable ends the subscription."""
        return self._subscribe_core(cast(abc.ObserverBase[Any], observer), scheduler)

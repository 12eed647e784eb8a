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

`BatchSource` is the other end of a run: a source whose items come a read's
worth at a time (the lines, or byte blocks, of one read of a response). A run
of machine operators piped after it is handed each read whole
(`subscribe_batches`) and feeds it to its machines in one call (`feed_all`),
instead of one `on_next`, and one pass down the machines, per line. What an
observer sees is the same either way.
"""

from __future__ import annotations

from typing import Any, Protocol, cast

from reactivex import Observable, abc

__all__ = ["BatchSource", "Batching", "DeltaSource", "Observing", "subscribe_direct"]


class Observing(Protocol):
    """What `subscribe_observer` takes: the three notifications (an `ObserverBase`, or
    the machine operators' own run)."""

    def on_next(self, value: Any, /) -> None: ...

    def on_error(self, error: Exception, /) -> None: ...

    def on_completed(self) -> None: ...


class Batching(Observing, Protocol):
    """What `subscribe_batches` takes: an observer that also takes many items in one call."""

    def on_batch(self, values: list[Any], /) -> None: ...


class BatchSource(Observable[Any]):
    """An observable whose items come in batches (one read's worth), which a run of machine
    operators may take whole."""

    def subscribe_batches(
        self, observer: Batching, scheduler: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        """Subscribe `observer`, handing it each batch with one `on_batch` call (the items
        of one batch, in order, as `on_next` would give them one by one); it ignores what
        comes after its end itself, and the returned disposable ends the subscription."""
        raise NotImplementedError  # pragma: no cover


class DeltaSource(Observable[Any]):
    """An observable of deltas only that machine operators may subscribe to directly."""

    def subscribe_observer(
        self, observer: Observing, scheduler: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        """Subscribe `observer` as it is: it ignores what comes after its end itself, and
        the returned disposable ends the subscription."""
        return self._subscribe_core(cast(abc.ObserverBase[Any], observer), scheduler)


def subscribe_direct(
    source: Observable[Any],
    observer: Observing,
    scheduler: abc.SchedulerBase | None = None,
    *,
    partial: bool = True,
) -> abc.DisposableBase:
    """Subscribe `observer` to `source`, as it is where the source takes it so.

    A run of machine operators (what `rs.decode`, `rs.chat` give) hands its
    items to `observer` with a plain call, and sends nothing after its end;
    any other observable is subscribed as usual (an observer wrapper per
    item). `partial=False` says that `observer` gives the errors it passes on
    their partial `Message` itself (a retry run, which keeps what the consumer
    was shown): a run of machines then keeps nothing for one.
    """
    direct = getattr(source, "subscribe_observer", None)
    if direct is not None and not isinstance(source, DeltaSource):
        disposable: abc.DisposableBase = direct(observer, scheduler, partial=partial)
        return disposable
    return source.subscribe(
        observer.on_next, observer.on_error, observer.on_completed, scheduler=scheduler
    )

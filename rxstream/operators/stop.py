"""`stop_on` and `StopSignal`: stop a stream on purpose and keep what arrived.

Disposing a pipeline closes the connection, but its observers hear nothing
more: no completion, so no final `Message` and no final `TokenCount`. A stop
is different: the upstream is disposed at once (an rxstream source closes its
response, so the provider stops generating), every choice that had begun and
not finished gets a `Finish(reason="cancelled")`, and the stream completes
normally. The accumulators after it then emit what arrived: the partial
`Message` (`finish_reason == "cancelled"`) and the final `TokenCount`.

Where the end is delivered: if an item is being delivered when the stop comes
(a stop from the observer's own `on_next`, or from another thread while the
source's thread is busy), the `Finish` items and the completion follow it on
the source's thread, once that call returns; otherwise they are delivered on
the thread that stopped. Either way the observer sees one call at a time, and
a sync source on the current thread returns from `subscribe` only after they
were delivered.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import partial
from typing import Any, Generic, TypeVar, cast

from reactivex import Observable, abc
from reactivex.disposable import CompositeDisposable, Disposable, SingleAssignmentDisposable

from ..core.message import Arrived
from ..models import (
    Citation,
    Finish,
    Metadata,
    ReasoningDelta,
    ReasoningState,
    RefusalDelta,
    Reset,
    ServerToolCall,
    ServerToolResult,
    TextDelta,
    ToolCallDelta,
)
from .timing import timer_scheduler

__all__ = ["StopSignal", "stop_on"]

T = TypeVar("T")

#: The deltas that show a choice has begun (a `Usage` names no choice; a `Finish` ends one).
_BEGINS = frozenset(
    (
        TextDelta,
        ReasoningDelta,
        RefusalDelta,
        ToolCallDelta,
        Citation,
        ServerToolCall,
        ServerToolResult,
        ReasoningState,
        Metadata,
    )
)

#: `Finish.reason` of a choice cut short by a stop.
CANCELLED = "cancelled"


class StopSignal(Observable[None]):
    """A stop button: `stop()` ends every stream watching it, keeping what arrived.

    Give it to `rs.stop_on(...)` (any number of pipelines may watch one
    signal), and call `stop()` from anywhere: a UI callback, another thread,
    an observer's own `on_next`, the event loop. It is an observable too,
    which emits one `None` and completes when stopped. Once stopped it stays
    stopped: a stream that subscribes to it later stops at once, before it
    makes its request. Make a new signal for each new request.

    Example:
        >>> signal = StopSignal()
        >>> signal.stopped
        False
        >>> signal.stop()
        >>> signal.stop()  # a second stop does nothing
        >>> signal.stopped
        True
    """

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self._stopped = False
        self._observers: list[abc.ObserverBase[None]] = []

    @property
    def stopped(self) -> bool:
        """Whether `stop()` was called."""
        return self._stopped

    def stop(self) -> None:
        """Stop every stream watching this signal (and those that watch it later).

        Thread-safe; calling it again does nothing. The ends of the streams
        are delivered here unless an item is being delivered in them (see
        `rs.stop_on`); if a watcher raises, the others are still stopped and
        the first error is raised afterwards.
        """
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
            observers, self._observers = self._observers, []
        # Every watcher hears the stop, even if one of them raises; the first error then goes on.
        failure: Exception | None = None
        for observer in observers:
            try:
                observer.on_next(None)
                observer.on_completed()
            except Exception as exc:
                failure = failure or exc
        if failure is not None:
            raise failure

    def _subscribe_core(
        self, observer: abc.ObserverBase[None], scheduler: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        with self._lock:
            if not self._stopped:
                self._observers.append(observer)
                return Disposable(partial(self._forget, observer))
        observer.on_next(None)
        observer.on_completed()
        return Disposable()

    def _forget(self, observer: abc.ObserverBase[None]) -> None:
        with self._lock:
            if observer in self._observers:
                self._observers.remove(observer)


class _Choices:
    """The choices that have begun and not finished, in the order they began."""

    __slots__ = ("_finished", "_open")

    def __init__(self) -> None:
        self._open: dict[int, None] = {}
        self._finished: set[int] = set()

    def see(self, item: object) -> None:
        kind = type(item)
        if kind in _BEGINS:
            choice: int = getattr(item, "choice")  # noqa: B009 (every kind in _BEGINS has it)
            if choice not in self._open and choice not in self._finished:
                self._open[choice] = None
        elif kind is Finish:
            assert isinstance(item, Finish)
            self._open.pop(item.choice, None)
            self._finished.add(item.choice)
        elif kind is Reset:
            # A new answer follows: its choices begin (and finish) afresh.
            self._open.clear()
            self._finished.clear()

    def cancelled(self) -> list[Finish]:
        return [Finish(CANCELLED, choice=n) for n in sorted(self._open)]


def stop_on(signal: Observable[Any]) -> Callable[[Observable[T]], Observable[T]]:
    """Stop the stream when `signal` emits, keeping what arrived: the stream completes normally.

    Put it right after `rs.decode(...)` (or `rs.deltas()`), before the
    accumulators. Items pass unchanged until `signal` emits its first item;
    then, at once:

    1. the upstream is disposed: an rxstream source closes its response, so
       the provider sees the client go and stops generating;
    2. every choice that brought a delta but no `Finish` yet gets
       `Finish(reason="cancelled", raw=None, choice=n)`, in choice order;
    3. the stream completes.

    A `Reset` in the stream (a new answer replaces the one so far) forgets
    the choices before it: only the new answer's open choices get a
    cancelled `Finish`.

    So `rs.accumulate_message()` after it emits the partial `Message` with
    `finish_reason == "cancelled"` (with the content, reasoning and tool calls
    that had arrived; a tool call cut in its arguments keeps the partial
    arguments with `complete=False`, and its `parse_arguments()` raises
    `ToolArgumentsError`; check `finish_reason` and `complete` before running
    tools), and
    `rs.count_tokens()` emits its final counts. On a stream of other items
    (lines, frames, chunks) a stop just completes it. A stop after the
    stream ended does nothing; a stop before the stream began completes it
    with nothing (and, if the signal had already fired when the pipeline was
    subscribed, no request is made). A signal that completes without an item
    never stops the stream; a signal that fails ends the stream with its
    error (the upstream disposed too), which, a `StreamError`, carries the
    `Message` of the deltas that passed as its `partial`.

    Args:
        signal: any observable: a `rs.StopSignal` (a button whose `stop()`
            may be called from anywhere, an observer's own `on_next`
            included), `reactivex.timer(5)`, a subject, a `take_until`-style
            trigger. It is subscribed before the upstream, on the
            subscriber's scheduler unless that is the current-thread or
            immediate one (a timer then runs on reactivex's timer threads).

    Returns:
        An operator `Observable[T] -> Observable[T]`, where T, for a stream
        of deltas, includes `Finish` (it is typed for `rs.Delta` streams; on
        others nothing is added).

    Raises:
        TypeError: `signal` is not an observable (e.g. a `threading.Event`:
            use a `rs.StopSignal` instead).

    Marbles (`s` the signal's item; `C` = `Finish("cancelled")`)::

        source:  -a-b-c-d-|
        signal:  ----s
        result:  -a-b(C|)           # the source disposed when s came

    >>> import reactivex
    >>> from rxstream.models import TextDelta
    >>> button = StopSignal()
    >>> out = []
    >>> def on_next(item):
    ...     out.append(item)
    ...     button.stop()  # the observer stops the stream after the first item
    >>> _ = reactivex.of(TextDelta("Hi"), TextDelta(" there")).pipe(
    ...     stop_on(button)).subscribe(on_next, on_completed=lambda: out.append("done"))
    >>> out
    [TextDelta(text='Hi', choice=0), Finish(reason='cancelled', choice=0, raw=None), 'done']
    """
    if not isinstance(signal, Observable):
        raise TypeError(
            "stop_on(signal) needs an observable (a rs.StopSignal, reactivex.timer(...), "
            f"a subject), got {type(signal).__name__}"
        )

    def operator(source: Observable[T]) -> Observable[T]:
        def subscribe(
            observer: abc.ObserverBase[T], scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            return _StopRun(observer).start(source, signal, scheduler)

        return Observable(subscribe)

    return operator


class _StopRun(Generic[T]):
    """One subscription of `stop_on`: its state, a method per notification and per step.

    `ended`: stopped, completed, failed or disposed (nothing new goes out);
    `busy`: an item is being delivered (the end then follows it, from
    `pending`); `stopper`: the thread delivering the end of a stop, which
    `start` waits for (`delivered`) when it is another one.
    """

    def __init__(self, observer: abc.ObserverBase[T]) -> None:
        self.observer = observer
        self.lock = threading.Lock()
        self.upstream = SingleAssignmentDisposable()
        self.watch = SingleAssignmentDisposable()
        self.choices = _Choices()
        self.arrived = Arrived()  # the deltas passed on, for an error's partial
        self.ended = False
        self.busy = False
        self.pending: list[Callable[[], None]] = []
        self.stopper: int | None = None
        self.delivered = threading.Event()

    def start(
        self,
        source: Observable[T],
        signal: Observable[Any],
        scheduler: abc.SchedulerBase | None,
    ) -> abc.DisposableBase:
        """Subscribe the signal, then (unless it already fired) the source."""
        self.watch.disposable = signal.subscribe(
            self.on_signal, self.on_signal_error, scheduler=timer_scheduler(None, scheduler)
        )
        with self.lock:
            started = not self.ended
        if started:
            self.upstream.disposable = source.subscribe(
                self.on_next, self.on_error, self.on_completed, scheduler=scheduler
            )
            # A sync source stopped from another thread returns as soon as its
            # socket is shut down: its caller must find the end delivered.
            with self.lock:
                elsewhere = self.stopper is not None and self.stopper != threading.get_ident()
            if elsewhere:
                self.delivered.wait()
        return CompositeDisposable(Disposable(self.dispose), self.watch, self.upstream)

    def run(self, calls: list[Callable[[], None]]) -> None:
        try:
            for call in calls:
                call()
        finally:
            self.delivered.set()

    def end(self, terminal: Callable[[], None], *, cut: bool, cancel: bool = False) -> None:
        """End with `terminal`; cut: dispose the upstream; cancel: finish the open choices first."""
        with self.lock:
            if self.ended:
                return
            self.ended = True
            calls: list[Callable[[], None]] = []
            if cancel:
                # Only a stream of deltas has open choices, and a `Finish` is a delta.
                finishes = cast(list[T], self.choices.cancelled())
                calls.extend(partial(self.observer.on_next, f) for f in finishes)
            calls.append(terminal)
            if self.busy:
                self.pending.extend(calls)
                calls = []
            else:
                self.stopper = threading.get_ident()
        self.watch.dispose()
        if cut:
            # At once, before anything is delivered: the connection closes now.
            self.upstream.dispose()
        if calls:
            self.run(calls)

    def on_next(self, item: T) -> None:
        with self.lock:
            if self.ended:
                return
            self.choices.see(item)
            self.arrived.see(item)
            self.busy = True
        try:
            self.observer.on_next(item)
        finally:
            with self.lock:
                self.busy = False
                calls = self.pending[:]
                self.pending.clear()
            if calls:
                self.run(calls)

    def on_signal(self, _: Any) -> None:
        self.end(self.observer.on_completed, cut=True, cancel=True)

    def on_signal_error(self, error: Exception) -> None:
        with self.lock:
            self.arrived.keep_partial(error)
        self.end(partial(self.observer.on_error, error), cut=True)

    def on_error(self, error: Exception) -> None:
        self.arrived.keep_partial(error)
        self.end(partial(self.observer.on_error, error), cut=False)

    def on_completed(self) -> None:
        self.end(self.observer.on_completed, cut=False)

    def dispose(self) -> None:
        with self.lock:
            self.ended = True
            self.pending.clear()
        self.delivered.set()

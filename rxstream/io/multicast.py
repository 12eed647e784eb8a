"""Multicasting: one upstream subscription (one HTTP request) fanned out to N observers.

Rx's own tools leave two traps with a synchronous source such as a stream read
with `httpx.Client` on the current thread: `share()` starts the request at the
first subscription, so the whole stream has ended before the second observer
subscribes (it sees nothing, or makes a second request); `publish()` waits for
`connect()`, which is easy to forget (nothing happens at all). A `Multicast`
hub makes the order explicit: attach the observers first, then `connect()`
(or leave a `with` block, which connects), and only then does the source run,
so every observer attached before `connect()` sees every item.

Observers may also join a live hub, after `connect()` (a server's clients
arrive over time): a late observer gets the items from the moment it joins,
not the earlier ones (to give a late client what it missed, write the stream
to a durable log and follow it from there: `rs.to_redis_stream`,
`rs.from_redis_stream(after=...)`). An observer that joins a hub whose stream
has ended gets that end at once: the completion, or the very error. A join
and the end racing on two threads are ordered by the hub: the joiner gets
either the end through its outlet or the end at once, never both, never
neither. A hub that was disposed (by `dispose()`, or because its last
observer left) has no stream any more: joining it is a `RuntimeError`.

Each observer chooses what happens when it falls behind, i.e. when it consumes
on its own scheduler (a thread pool, the asyncio loop) more slowly than the
source produces:

- `"block"`: at most `maxsize` items wait; then the source waits too. A sync
  source's thread blocks; an async source (on the loop) stops reading the
  socket until the observer catches up (the `rxstream._flow` gate).
- `"latest"`: at most `maxsize` items wait (default 1); the oldest are
  dropped, so a status display shows the newest item without slowing anyone.
- `"error"`: at most `maxsize` items wait; one more ends that observer with
  `BufferOverflowError` (after the items already buffered), whose `partial`
  is the `Message` of the deltas the stream brought before that item. The
  others go on.

Without a scheduler an observer is called on the source's thread as each item
arrives: it cannot fall behind, it slows the source (`"block"` in effect).
Disposing one observer leaves the others running; when the last one is gone the
upstream subscription is disposed, which closes the connection.

`hub.stop()` stops the stream on purpose and keeps what arrived (the hub's
source runs through `rs.stop_on`): the connection closes at once, and every
observer gets a `Finish("cancelled")` for each unfinished choice and then
completes normally, after what it already had, so accumulators after it give
the partial message and the final counts. `hub.dispose()`, by contrast,
silences every observer.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from collections.abc import Callable
from types import TracebackType
from typing import Any, Generic, Literal, TypeVar

from reactivex import Observable, abc
from reactivex.disposable import Disposable, SingleAssignmentDisposable
from reactivex.scheduler import CurrentThreadScheduler, ImmediateScheduler, VirtualTimeScheduler

from .._flow import Demand, demand_scope
from ..core.message import Arrived
from ..errors import BufferOverflowError
from ..operators.stop import StopSignal, stop_on
from ._args import check_count

__all__ = ["Multicast", "Overflow", "multicast"]

T = TypeVar("T")

#: What an observer does when its buffer is full (see the module docstring).
Overflow = Literal["block", "latest", "error"]

_OVERFLOWS = ("block", "latest", "error")
_DEFAULT_MAXSIZE = {"block": 64, "latest": 1, "error": 64}


def multicast(source: Observable[T]) -> Multicast[T]:
    """Share one subscription of `source` (one HTTP request) among several observers.

    Attach every observer with `hub.subscribe(...)` or `hub.observe()`, then call
    `hub.connect()` (or use the hub as a context manager: leaving the block
    connects). A sync source runs inside `connect()` and has ended when it
    returns; an async source runs as a task on the loop.

    Args:
        source: any observable, typically `rs.from_request(...)` piped through
            the parsing operators.

    Returns:
        A `Multicast` hub, not yet connected.

    Example:
        >>> import reactivex
        >>> hub = multicast(reactivex.of(1, 2))
        >>> ui, log = [], []
        >>> _ = hub.subscribe(ui.append)
        >>> _ = hub.subscribe(log.append)
        >>> _ = hub.connect()
        >>> ui, log
        ([1, 2], [1, 2])

    Marbles (one upstream subscription, every observer sees every item)::

        source:   -a-b-c-|
        ui:       -a-b-c-|
        logger:   -a-b-c-|
    """
    return Multicast(source)


class Multicast(Generic[T]):
    """A hub that subscribes to its source once, at `connect()`, for all its observers.

    Made by `rs.multicast(source)`. Thread-safe: observers may consume on their
    own schedulers and dispose from any thread.
    """

    def __init__(self, source: Observable[T]) -> None:
        self._source = source
        self._lock = threading.Lock()
        self._outlets: list[_Outlet[T]] = []
        self._state: Literal["open", "connected", "ended", "disposed"] = "open"
        self._upstream = SingleAssignmentDisposable()
        self._demand = Demand()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None
        self._stop = StopSignal()
        # How the stream ended (None: completed), for observers that join after the end.
        self._terminal: Exception | None = None
        # The deltas the stream brought (on the source's thread), for an overflow's partial.
        self._arrived = Arrived()

    # ----------------------------------------------------------------- public

    def observe(
        self,
        *,
        overflow: Overflow = "block",
        maxsize: int | None = None,
        scheduler: abc.SchedulerBase | None = None,
        name: str | None = None,
    ) -> Observable[T]:
        """An observable of the shared items, for piping (`hub.observe().pipe(rs.coalesce(0.05))`).

        Each subscription to it attaches one observer to the hub. After
        `connect()` it joins the live stream (items from then on); after the
        stream ended it gets the end at once; a disposed hub fails it with
        `RuntimeError` (via `on_error`).

        Args:
            overflow: `"block"`, `"latest"` or `"error"`, for when the observer
                falls behind (see `rxstream.multicast`).
            maxsize: how many items may wait for this observer (default 64;
                1 for `"latest"`).
            scheduler: where this observer is called; None: on the source's
                thread, as items arrive (then it cannot fall behind). Give each
                observer its own scheduler: with `"block"`, a source waiting
                for an observer queued behind it on the same single thread
                would wait forever.
            name: a name for error messages (`BufferOverflowError`).

        Returns:
            An observable of the source's items, from `connect()` (or from
            the moment of subscribing, for a late observer).

        Raises:
            ValueError: an unknown `overflow`, `maxsize` below 1, or
                `"latest"`/`"error"` without a scheduler (such an observer can
                never fall behind, so the choice would silently do nothing).
            TypeError: `maxsize` is not an int.

        Marbles (`"latest"`, maxsize=1, an observer busy while b and c arrive)::

            source:   -a-b-c---|
            observer: -a-----c-|
        """
        size = _check_options(overflow, maxsize, scheduler)
        if isinstance(scheduler, CurrentThreadScheduler | ImmediateScheduler):
            scheduler = None  # they run the observer right here, on the source's thread

        def subscribe(
            observer: abc.ObserverBase[T], _: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            outlet = self._attach(observer, overflow, size, scheduler, name)
            return Disposable(outlet.dispose)

        return Observable(subscribe)

    def subscribe(
        self,
        on_next: abc.ObserverBase[T] | Callable[[T], None] | None = None,
        on_error: Callable[[Exception], None] | None = None,
        on_completed: Callable[[], None] | None = None,
        *,
        overflow: Overflow = "block",
        maxsize: int | None = None,
        scheduler: abc.SchedulerBase | None = None,
        name: str | None = None,
    ) -> abc.DisposableBase:
        """Attach an observer (or callbacks); its disposable detaches only this one.

        Args:
            on_next: an observer, or the item callback.
            on_error: the error callback (with a callable `on_next`).
            on_completed: the completion callback (with a callable `on_next`).
            overflow: as for `observe`.
            maxsize: as for `observe`.
            scheduler: as for `observe`.
            name: as for `observe`.

        Returns:
            A disposable: disposing it stops this observer; the last one to go
            disposes the upstream subscription (closing the connection).

        A late observer (after `connect()`) gets the items from now on; one
        that joins after the stream ended gets its end at once.

        Raises:
            RuntimeError: the hub was disposed (by `dispose()`, or when its
                last observer left): it has no stream to join.
            ValueError, TypeError: bad options, as for `observe`.

        Example:
            >>> import reactivex
            >>> hub = multicast(reactivex.of("a"))
            >>> _ = hub.subscribe(print, overflow="block")
            >>> _ = hub.connect()
            a
        """
        with self._lock:
            self._check_joinable()
        observable = self.observe(
            overflow=overflow, maxsize=maxsize, scheduler=scheduler, name=name
        )
        return observable.subscribe(on_next, on_error, on_completed)

    def connect(self) -> abc.DisposableBase:
        """Subscribe to the source, once, for every observer attached so far.

        A sync source on the current thread runs to its end before this
        returns; an async source starts a task on the running loop.

        Returns:
            A disposable that stops the stream for everybody (closing the connection).

        Raises:
            RuntimeError: already connected, or no observer is attached.

        Example:
            >>> import reactivex
            >>> hub = multicast(reactivex.of(1))
            >>> _ = hub.subscribe(print)
            >>> _ = hub.connect()
            1
        """
        with self._lock:
            self._check_open()
            if not self._outlets:
                raise RuntimeError(
                    "connect() with no observer attached: subscribe the observers first"
                )
            self._state = "connected"
        try:
            self._loop = asyncio.get_running_loop()
            self._loop_thread = threading.get_ident()
        except RuntimeError:
            self._loop = None

        def start(_: abc.SchedulerBase, __: Any = None) -> None:
            # An async source captures the hub's demand while it is subscribed.
            with demand_scope(self._demand):
                stoppable = self._source.pipe(stop_on(self._stop))
                subscription = stoppable.subscribe(
                    self._on_next, self._on_error, self._on_completed
                )
            self._upstream.disposable = subscription

        # Inside a running trampoline a sync source queues its first read, so
        # its disposable is assigned before it reads: the last observer to go
        # can then dispose it mid-stream.
        CurrentThreadScheduler.singleton().schedule(start)
        return Disposable(self.dispose)

    def dispose(self) -> None:
        """Stop the stream for every observer (they receive nothing more)."""
        with self._lock:
            if self._state in ("open", "connected"):
                self._state = "disposed"
            outlets, self._outlets = self._outlets, []
        for outlet in outlets:
            outlet.silence()
        self._upstream.dispose()
        # A source waiting on the gate wakes, sees it was disposed, and ends.
        self._demand.reset()

    def stop(self) -> None:
        """Stop the stream for every observer, keeping what arrived: each one completes normally.

        The upstream is disposed at once (the connection closes); each
        observer then receives `Finish(reason="cancelled")` for every choice
        that had begun and not finished (on a stream of deltas; see
        `rs.stop_on`) and completes, through its own buffer and scheduler,
        after the items it already has. So an `rs.accumulate_message()` after
        `hub.observe()` emits the partial message and `rs.count_tokens()` its
        final count. Thread-safe, and allowed from an observer's own `on_next`.
        A stop after the stream ended (or after `dispose()`) does nothing; a
        stop before `connect()` makes `connect()` complete every observer
        without making the request.

        Example:
            >>> import reactivex
            >>> from rxstream.models import TextDelta
            >>> hub = multicast(reactivex.of(TextDelta("Hi"), TextDelta(" there")))
            >>> seen = []
            >>> def on_next(item):
            ...     seen.append(item)
            ...     hub.stop()
            >>> _ = hub.subscribe(on_next, on_completed=lambda: seen.append("done"))
            >>> _ = hub.connect()
            >>> seen
            [TextDelta(text='Hi', choice=0), Finish(reason='cancelled', choice=0, raw=None), 'done']
        """
        self._stop.stop()

    @property
    def connected(self) -> bool:
        """Whether the hub is past its open state (connected, ended or disposed)."""
        return self._state != "open"

    def __enter__(self) -> Multicast[T]:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Connect on a normal exit (if not yet connected); dispose on an exception."""
        if exc_type is not None:
            self.dispose()
        elif self._state == "open":
            self.connect()

    # ----------------------------------------------------------------- internals

    def _check_open(self) -> None:
        if self._state != "open":
            raise RuntimeError(
                f"this multicast hub is {self._state}: connect() runs the source once "
                "(make a new hub, and a new request, for a new stream)"
            )

    def _check_joinable(self) -> None:
        if self._state == "disposed":
            raise RuntimeError(
                "this multicast hub is disposed (by dispose(), or its last observer left): "
                "there is no stream to join (make a new hub, and a new request, for a new stream)"
            )

    def _attach(
        self,
        observer: abc.ObserverBase[T],
        overflow: Overflow,
        maxsize: int,
        scheduler: abc.SchedulerBase | None,
        name: str | None,
    ) -> _Outlet[T]:
        outlet = _Outlet(self, observer, overflow, maxsize, scheduler, name)
        with self._lock:
            self._check_joinable()
            ended = self._state == "ended"
            if not ended:
                self._outlets.append(outlet)
            terminal = self._terminal
        if ended:
            # Joined after the end (decided under the lock `_end` takes): the end, at once.
            outlet.end(terminal)
        return outlet

    def _detach(self, outlet: _Outlet[T]) -> None:
        with self._lock:
            if outlet not in self._outlets:
                return
            self._outlets.remove(outlet)
            last = not self._outlets and self._state == "connected"
            if last:
                self._state = "disposed"
        if outlet.paused:
            self._unpause(outlet)
        if last:
            self._upstream.dispose()
            self._demand.reset()

    def _live(self) -> list[_Outlet[T]]:
        with self._lock:
            return list(self._outlets)

    def _on_next(self, item: T) -> None:
        for outlet in self._live():
            outlet.push(item)
        # After the push: an observer that overflows on this item did not get it.
        self._arrived.see(item)

    def _on_error(self, error: Exception) -> None:
        for outlet in self._end(error):
            outlet.end(error)

    def _on_completed(self) -> None:
        for outlet in self._end(None):
            outlet.end(None)

    def _end(self, error: Exception | None) -> list[_Outlet[T]]:
        with self._lock:
            if self._state == "connected":
                self._state = "ended"
                self._terminal = error
            return list(self._outlets)

    # Each full "block" observer holds the hub's demand gate closed until it drains
    # (the gate is thread-safe: a drain on another thread hands its release to the loop).

    def _on_loop(self) -> bool:
        return self._loop is not None and threading.get_ident() == self._loop_thread

    def _pause(self, outlet: _Outlet[T]) -> None:
        outlet.paused = True
        self._demand.hold(outlet)

    def _unpause(self, outlet: _Outlet[T]) -> None:
        outlet.paused = False
        self._demand.release(outlet)


class _Outlet(Generic[T]):
    """One observer of a hub: its buffer, its overflow policy and its drain."""

    def __init__(
        self,
        hub: Multicast[T],
        observer: abc.ObserverBase[T],
        overflow: Overflow,
        maxsize: int,
        scheduler: abc.SchedulerBase | None,
        name: str | None,
    ) -> None:
        self._hub = hub
        self._observer = observer
        self._overflow = overflow
        self._maxsize = maxsize
        self._scheduler = scheduler
        self._name = name
        self._cond = threading.Condition()
        self._buffer: deque[T] = deque()
        self._end: Callable[[], None] | None = None  # the terminal call, after the buffer
        self._stopped = False  # no more items accepted (ended or overflowed)
        self._gone = False  # nothing more is delivered (disposed, failed, terminal sent)
        self._draining = False
        self._drain_thread: int | None = None
        self.paused = False  # this observer holds the hub's demand gate closed

    # ----------------------------------------------------------------- producer side

    def push(self, item: T) -> None:
        if self._scheduler is None:
            if not self._gone:
                self._deliver(item)
            return
        overflowed = False
        with self._cond:
            if self._stopped or self._gone:
                return
            if len(self._buffer) >= self._maxsize:
                if self._overflow == "latest":
                    self._buffer.popleft()
                elif self._overflow == "error":
                    overflowed = self._stopped = True
                    error = BufferOverflowError(self._maxsize, observer=self._name, item=item)
                    self._hub._arrived.keep_partial(error)
                    self._end = lambda: self._observer.on_error(error)
                elif self._may_wait():
                    while len(self._buffer) >= self._maxsize and not self._gone:
                        self._cond.wait()
                    if self._gone:
                        return
            if not overflowed:
                self._buffer.append(item)
            pause = (
                self._overflow == "block"
                and len(self._buffer) >= self._maxsize
                and self._hub._on_loop()
            )
            start = self._claim_drain()
        if pause:
            self._hub._pause(self)
        if overflowed:
            # The others go on; this one gets its buffered items, then the error.
            self._hub._detach(self)
        if start:
            self._scheduler.schedule(self._drain)

    def end(self, error: Exception | None) -> None:
        def terminal() -> None:
            if error is None:
                self._observer.on_completed()
            else:
                self._observer.on_error(error)

        if self._scheduler is None:
            if not self._gone:
                self._gone = True
                terminal()
            return
        with self._cond:
            if self._stopped or self._gone:
                return
            self._stopped = True
            self._end = terminal
            start = self._claim_drain()
        if start:
            self._scheduler.schedule(self._drain)

    def _may_wait(self) -> bool:
        # Waiting is only safe where someone else can drain: never on the drain's
        # own thread, never on a running event loop (it would stall), never in
        # virtual time (the test's one thread is the drain).
        if threading.get_ident() == self._drain_thread:
            return False
        if isinstance(self._scheduler, VirtualTimeScheduler):
            return False
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return True
        return False

    def _claim_drain(self) -> bool:
        if self._draining or (not self._buffer and self._end is None):
            return False
        self._draining = True
        return True

    # ----------------------------------------------------------------- consumer side

    def _drain(self, _: abc.SchedulerBase, __: Any = None) -> None:
        self._drain_thread = threading.get_ident()
        try:
            while True:
                resume = False
                with self._cond:
                    if self._gone:
                        self._draining = False
                        return
                    if self._buffer:
                        item = self._buffer.popleft()
                        self._cond.notify_all()
                        resume = self.paused and len(self._buffer) < self._maxsize
                    elif self._end is not None:
                        terminal, self._end = self._end, None
                        self._gone = True
                        self._draining = False
                        break
                    else:
                        self._draining = False
                        return
                if resume:
                    self._hub._unpause(self)
                self._deliver(item)
        finally:
            self._drain_thread = None
        terminal()

    def _deliver(self, item: T) -> None:
        try:
            self._observer.on_next(item)
        except Exception as exc:  # an observer's bug ends that observer only
            with self._cond:
                if self._gone:
                    return
                self._gone = self._stopped = True
                self._buffer.clear()
                self._cond.notify_all()
            self._hub._detach(self)
            self._observer.on_error(exc)

    # ----------------------------------------------------------------- disposal

    def silence(self) -> None:
        with self._cond:
            self._gone = self._stopped = True
            self._buffer.clear()
            self._end = None
            self._cond.notify_all()

    def dispose(self) -> None:
        self.silence()
        self._hub._detach(self)


def _check_options(overflow: str, maxsize: int | None, scheduler: abc.SchedulerBase | None) -> int:
    if overflow not in _OVERFLOWS:
        raise ValueError(f"overflow must be one of {_OVERFLOWS}, got {overflow!r}")
    maxsize = check_count("maxsize", _DEFAULT_MAXSIZE[overflow] if maxsize is None else maxsize)
    if overflow != "block" and (
        scheduler is None or isinstance(scheduler, CurrentThreadScheduler | ImmediateScheduler)
    ):
        raise ValueError(
            f"overflow={overflow!r} needs a scheduler for the observer (e.g. a "
            "ThreadPoolScheduler or AsyncIOScheduler): an observer called on the "
            "source's own thread never falls behind"
        )
    return maxsize

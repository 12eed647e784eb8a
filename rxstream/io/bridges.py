"""Bridges from an observable to a pull-based iterator, with a bounded buffer.

Rx pushes; a `for` loop pulls. The bridges hold at most `maxsize` items
between the two and make the producer wait when the buffer is full:

- `to_iterator` subscribes on a worker thread, so a synchronous source (one
  that runs the whole stream inside `subscribe`) runs there, and its
  `on_next` blocks while the buffer is full: the socket is not read ahead.
- `to_async_iterator` subscribes inside the running loop, within a
  `demand_scope`, so an rxstream async source awaits the bridge's `Demand`
  before each read; items pushed from another thread (a sync source on a
  thread pool) are handed over thread-safely, and that thread blocks while
  the buffer is full.

Leaving the loop early (`break`, an exception in the loop body, `close()` /
`aclose()`, or dropping the iterator) disposes the subscription, which closes
the connection. Items that arrived before an error are delivered first; the
error itself is raised, as the very exception object, at the pull after them.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import deque
from types import TracebackType
from typing import Any, Generic, TypeVar

from reactivex import Observable, abc
from reactivex.scheduler import CurrentThreadScheduler

from .._flow import Demand, demand_scope
from ._args import check_count

__all__ = ["ObservableAsyncIterator", "ObservableIterator", "to_async_iterator", "to_iterator"]

T = TypeVar("T")


class _ConsumerGone(Exception):
    """Raised in `on_next` on the worker thread once the consumer has left.

    A source that produces inside `subscribe` (without scheduling its reads)
    has not handed out its disposable yet, so disposing cannot reach it; the
    exception unwinds its loop instead (its `finally` closes the response).
    """


# What `_Channel._next_locked` hands out when there is no item.
_WAIT: Any = object()  # nothing yet: wait for the producer
_STOP: Any = object()  # the end (completed, or the consumer left)


class _Channel(Generic[T]):
    """What the two bridges share: a bounded buffer between an observer and a puller.

    Kept apart from the iterator objects: the worker and the source reference
    the channel, never the iterator, so dropping the iterator (a `break`, an
    exception in the loop body) runs its `__del__`, which closes the channel.
    Subclasses add how the puller waits (a condition, or a future on the
    loop) and how the producer is held back (`_on_next`).
    """

    def __init__(self, observable: Observable[T], maxsize: int) -> None:
        self._observable = observable
        self._maxsize = check_count("maxsize", maxsize)
        self._cond = threading.Condition()
        self._buffer: deque[T] = deque()
        self._error: Exception | None = None
        self._completed = False
        self._started = False
        self._closed = False  # the consumer is gone, or has seen the end
        self._subscription: abc.DisposableBase | None = None

    def close(self) -> None:
        """The consumer leaves: drop the buffer and dispose the subscription (any thread)."""
        with self._cond:
            if self._closed and self._subscription is None:
                return
            self._closed = True
            self._buffer.clear()
            subscription, self._subscription = self._subscription, None
        # Dispose before waking a producer blocked on the full buffer: woken
        # first, a source on another thread could read on before the disposal
        # reached it.
        if subscription is not None:
            subscription.dispose()
        with self._cond:
            self._cond.notify_all()
        self._closed_now()

    def _next_locked(self) -> T:
        """Under the lock: the next item, `_STOP` or `_WAIT`; raises the stream's error once."""
        if self._buffer:
            item = self._buffer.popleft()
            self._cond.notify_all()
            self._taken_locked()
            return item
        if self._closed:
            return _STOP  # type: ignore[no-any-return]
        if self._ended():
            self._closed = True
            error, self._error = self._error, None
            if error is not None:
                raise error
            return _STOP  # type: ignore[no-any-return]
        return _WAIT  # type: ignore[no-any-return]

    def _keep(self, subscription: abc.DisposableBase) -> None:
        """Hold `subscription` for `close`, or dispose it if the consumer already left."""
        with self._cond:
            if not self._closed:
                self._subscription = subscription
                return
        subscription.dispose()

    def _ended(self) -> bool:
        return self._completed or self._error is not None

    def _on_error(self, error: Exception) -> None:
        with self._cond:
            if self._closed or self._ended():
                return
            self._error = error
            self._cond.notify_all()
        self._wake()

    def _on_completed(self) -> None:
        with self._cond:
            if self._closed or self._ended():
                return
            self._completed = True
            self._cond.notify_all()
        self._wake()

    # Hooks: an item was taken (under the lock), the puller may wait (after a
    # change), the channel was just closed.

    def _taken_locked(self) -> None:
        pass

    def _wake(self) -> None:
        pass

    def _closed_now(self) -> None:
        pass


class _SyncChannel(_Channel[T]):
    """The channel of an `ObservableIterator`: a worker thread subscribes, the puller blocks."""

    def __init__(self, observable: Observable[T], maxsize: int) -> None:
        super().__init__(observable, maxsize)
        self._worker: int | None = None
        self._consumer: int | None = None

    def pull(self) -> T:
        with self._cond:
            self._consumer = threading.get_ident()
            if not self._started and not self._closed:
                self._started = True
                threading.Thread(target=self._run, name="rxstream-to-iterator", daemon=True).start()
            while (item := self._next_locked()) is _WAIT:
                self._cond.wait()
        if item is _STOP:
            raise StopIteration
        return item

    def _run(self) -> None:
        self._worker = threading.get_ident()

        def subscribe(_: abc.SchedulerBase, __: Any = None) -> None:
            # Inside a running trampoline a source that schedules its reads on
            # the current thread (rxstream's sync sources, `from_iterable`)
            # returns its disposable before the first read, so `close()` can
            # reach it even while a read is blocked.
            self._keep(
                self._observable.subscribe(self._on_next, self._on_error, self._on_completed)
            )

        try:
            CurrentThreadScheduler.singleton().schedule(subscribe)
        except _ConsumerGone:
            pass
        except Exception as exc:  # a source that raises instead of calling on_error
            self._on_error(exc)

    def _on_next(self, item: T) -> None:
        with self._cond:
            # Never block the consumer's own thread: nobody would ever pull.
            if threading.get_ident() != self._consumer:
                while len(self._buffer) >= self._maxsize and not self._closed:
                    self._cond.wait()
            if self._closed:
                if threading.get_ident() == self._worker:
                    raise _ConsumerGone("the iterator was closed")
                return
            if self._ended():
                return
            self._buffer.append(item)
            self._cond.notify_all()


class ObservableIterator(Generic[T]):
    """An iterator over an observable's items, made by `to_iterator`.

    Also a context manager: leaving the `with` block closes it.
    """

    def __init__(self, observable: Observable[T], maxsize: int) -> None:
        self._channel = _SyncChannel(observable, maxsize)

    def __iter__(self) -> ObservableIterator[T]:
        return self

    def __next__(self) -> T:
        return self._channel.pull()

    def close(self) -> None:
        """Dispose the subscription (closing the connection); later pulls stop."""
        self._channel.close()

    def __enter__(self) -> ObservableIterator[T]:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __del__(self) -> None:
        channel = getattr(self, "_channel", None)
        if channel is not None:
            channel.close()


def to_iterator(observable: Observable[T], *, maxsize: int = 64) -> ObservableIterator[T]:
    """Iterate an observable at the consumer's pace, buffering at most `maxsize` items.

    The subscription starts at the first `next()`, on a worker thread: a
    synchronous source runs there and blocks in `on_next` while the buffer is
    full. Leaving the loop early (break, an exception in the body, `close()`,
    or the end of a `with` block) disposes the subscription and unblocks the
    worker. An error from the stream is raised at the pull after the items
    that came before it.

    Args:
        observable: the stream to consume.
        maxsize: how many items may wait between producer and consumer.

    Returns:
        An iterator, also usable as a context manager.

    Raises:
        ValueError: `maxsize` is below 1.
        TypeError: `maxsize` is not an int.

    >>> import reactivex
    >>> list(to_iterator(reactivex.of(1, 2, 3), maxsize=2))
    [1, 2, 3]
    """
    return ObservableIterator(observable, maxsize)


class _AsyncChannel(_Channel[T]):
    """The channel of an `ObservableAsyncIterator`: subscribed on the loop, pulled with `await`."""

    def __init__(self, observable: Observable[T], maxsize: int) -> None:
        super().__init__(observable, maxsize)
        self._demand = Demand()
        self._paused = False  # this channel holds the demand gate closed
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None
        self._waiter: asyncio.Future[None] | None = None

    async def pull(self) -> T:
        if self._closed and not self._buffer:
            raise StopAsyncIteration
        if not self._started:
            self._start()
        assert self._loop is not None
        while True:
            with self._cond:
                item = self._next_locked()
                if item is not _WAIT:
                    break
                waiter = self._waiter = self._loop.create_future()
            try:
                await waiter
            finally:
                self._waiter = None
        if item is _STOP:
            raise StopAsyncIteration
        return item

    def _start(self) -> None:
        self._started = True
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        # An rxstream async source captures the demand while it is subscribed.
        with demand_scope(self._demand):
            subscription = self._observable.subscribe(
                self._on_next, self._on_error, self._on_completed
            )
        self._keep(subscription)

    def _on_next(self, item: T) -> None:
        on_loop = threading.get_ident() == self._loop_thread
        with self._cond:
            if not on_loop:
                # A producer thread may wait; the loop thread never does.
                while len(self._buffer) >= self._maxsize and not self._closed:
                    self._cond.wait()
            if self._closed or self._ended():
                return
            self._buffer.append(item)
            if on_loop and not self._paused and len(self._buffer) >= self._maxsize:
                self._paused = True
                self._demand.pause()
        self._wake()

    def _taken_locked(self) -> None:
        # Only a pause is undone: a resume per item would cost every item a trip to the gate.
        if self._paused and len(self._buffer) < self._maxsize:
            self._paused = False
            self._demand.resume()

    def _closed_now(self) -> None:
        # A source waiting for demand wakes, sees it was disposed, and ends
        # (`close` may run on any thread, e.g. at garbage collection).
        self._demand.reset()
        self._wake()

    def _wake(self) -> None:
        loop = self._loop
        if loop is None:
            return
        if threading.get_ident() == self._loop_thread:
            self._wake_here()
            return
        # A closed loop raises: nobody is waiting any more.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(self._wake_here)

    def _wake_here(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)


class ObservableAsyncIterator(Generic[T]):
    """An async iterator over an observable's items, made by `to_async_iterator`.

    Also an async context manager: leaving the `async with` block closes it.
    """

    def __init__(self, observable: Observable[T], maxsize: int) -> None:
        self._channel = _AsyncChannel(observable, maxsize)

    def __aiter__(self) -> ObservableAsyncIterator[T]:
        return self

    async def __anext__(self) -> T:
        return await self._channel.pull()

    async def aclose(self) -> None:
        """Dispose the subscription (closing the connection); later pulls stop."""
        self._channel.close()

    async def __aenter__(self) -> ObservableAsyncIterator[T]:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._channel.close()

    def __del__(self) -> None:
        channel = getattr(self, "_channel", None)
        if channel is None:
            return
        # Best effort at garbage collection: `__del__` must not raise.
        with contextlib.suppress(Exception):
            channel.close()


def to_async_iterator(
    observable: Observable[T], *, maxsize: int = 64
) -> ObservableAsyncIterator[T]:
    """Iterate an observable with `async for`, buffering at most `maxsize` items.

    The subscription starts at the first `__anext__`, on the running loop,
    inside a `demand_scope`: an rxstream async source pauses its reads while
    the buffer is full. Items pushed from another thread (a sync source on a
    thread pool) are handed to the loop thread-safely, and that thread blocks
    while the buffer is full. A synchronous source subscribed on the loop
    thread cannot be made to wait there (the loop would stall), so it fills
    the buffer past `maxsize`; give it a `ThreadPoolScheduler`. `break`, an
    exception in the body, `aclose()` or the end of an `async with` block
    dispose the subscription. An error from the stream is raised at the pull
    after the items that came before it.

    Args:
        observable: the stream to consume.
        maxsize: how many items may wait between producer and consumer.

    Returns:
        An async iterator, also usable as an async context manager.

    Raises:
        ValueError: `maxsize` is below 1.
        TypeError: `maxsize` is not an int.

    >>> import asyncio, reactivex
    >>> async def main():
    ...     return [x async for x in to_async_iterator(reactivex.of(1, 2))]
    >>> asyncio.run(main())
    [1, 2]
    """
    return ObservableAsyncIterator(observable, maxsize)

"""One tool call as an Observable of its output: where the function runs, and how it stops.

- an async function: a task on the run's event loop (disposing cancels it);
  with no loop (a sync client), a fresh loop on a worker thread, its task
  cancelled from outside on dispose;
- a sync function (`blocking=True`): a worker thread of the run's pool; on
  dispose its `CancelToken` is set and the thread is not waited for;
- `blocking=False`: called on the run's own thread; an Observable it returns
  is followed (its last item is the output).

Results from a worker thread go back to the run's loop when it has one.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
from collections.abc import Callable
from typing import Any

import reactivex
from reactivex import Observable, abc
from reactivex import operators as ops
from reactivex.disposable import Disposable

from ..models import JSON, JSONObject
from .tools import CancelToken, FunctionTool

__all__ = ["Invoker"]


class Invoker:
    """Makes the Observable of one call; owns the run's worker pool (made on first need)."""

    def __init__(self, *, max_parallel: int, loop: asyncio.AbstractEventLoop | None) -> None:
        self._max_parallel = max_parallel
        self._loop = loop
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    def shutdown(self) -> None:
        """Let the workers go: queued calls are dropped, running ones not waited for."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)

    def call(self, tool: FunctionTool, keywords: JSONObject) -> Observable[JSON]:
        """The call's output as a cold Observable of one item."""

        def subscribe(observer: abc.ObserverBase[JSON], _: abc.SchedulerBase | None) -> Any:
            token = CancelToken()
            arguments = dict(keywords)
            if tool.token_parameter is not None:
                arguments[tool.token_parameter] = token
            if tool.is_async:
                stop = self._start_async(tool.fn, arguments, observer)
            elif tool.blocking:
                stop = self._start_thread(tool.fn, arguments, observer)
            else:
                return self._call_inline(tool.fn, arguments, observer)

            def dispose() -> None:
                token.cancel()
                stop()

            return Disposable(dispose)

        return reactivex.create(subscribe)

    # ------------------------------------------------------------------ kinds

    def _call_inline(
        self, fn: Callable[..., Any], arguments: JSONObject, observer: abc.ObserverBase[JSON]
    ) -> abc.DisposableBase:
        try:
            value = fn(**arguments)
        except Exception as exc:
            observer.on_error(exc)
            return Disposable()
        if isinstance(value, Observable):
            return value.pipe(ops.last()).subscribe(observer)
        observer.on_next(value)
        observer.on_completed()
        return Disposable()

    def _start_thread(
        self, fn: Callable[..., Any], arguments: JSONObject, observer: abc.ObserverBase[JSON]
    ) -> Callable[[], None]:
        future = self._worker_pool().submit(fn, **arguments)
        future.add_done_callback(lambda done: self._deliver(done, observer))
        return lambda: _cancel(future)

    def _start_async(
        self, fn: Callable[..., Any], arguments: JSONObject, observer: abc.ObserverBase[JSON]
    ) -> Callable[[], None]:
        if self._loop is not None:
            task = self._loop.create_task(fn(**arguments))
            task.add_done_callback(lambda done: _settle(done, observer))
            return lambda: _cancel(task)
        # No loop of the run's own (a sync client): the coroutine gets a loop on a worker.
        held: list[tuple[asyncio.AbstractEventLoop, asyncio.Task[Any]]] = []
        ready = threading.Event()

        async def main() -> Any:
            current = asyncio.current_task()
            assert current is not None
            held.append((asyncio.get_running_loop(), current))
            ready.set()
            return await fn(**arguments)

        def cancel() -> None:
            if ready.wait(1.0):
                loop, task = held[0]
                with contextlib.suppress(RuntimeError):  # the loop has closed: it is over
                    loop.call_soon_threadsafe(task.cancel)

        future = self._worker_pool().submit(asyncio.run, main())
        future.add_done_callback(lambda done: self._deliver(done, observer))
        return cancel

    # ------------------------------------------------------------------ plumbing

    def _worker_pool(self) -> concurrent.futures.ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = concurrent.futures.ThreadPoolExecutor(
                    max_workers=self._max_parallel, thread_name_prefix="rxstream-tool"
                )
            return self._pool

    def _deliver(
        self, done: concurrent.futures.Future[Any], observer: abc.ObserverBase[JSON]
    ) -> None:
        if done.cancelled():
            return
        if self._loop is None:
            _settle(done, observer)
            return
        with contextlib.suppress(RuntimeError):  # the loop has closed: nobody is listening
            self._loop.call_soon_threadsafe(_settle, done, observer)


def _settle(
    done: concurrent.futures.Future[Any] | asyncio.Future[Any], observer: abc.ObserverBase[JSON]
) -> None:
    if done.cancelled():
        return
    error = done.exception()
    if error is not None:
        observer.on_error(error if isinstance(error, Exception) else RuntimeError(repr(error)))
        return
    observer.on_next(done.result())
    observer.on_completed()


def _cancel(future: concurrent.futures.Future[Any] | asyncio.Future[Any]) -> None:
    future.cancel()

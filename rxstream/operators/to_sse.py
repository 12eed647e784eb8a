"""`to_sse`: items to the bytes of server-sent events, with keep-alives while idle.

The events come from the core's `SSEEncoder` (formats, ids, the closing
event and the error event are its rules); this operator adds the keep-alive
timer and turns the stream's end into the closing event, its error into the
error event. Timers run on a reactivex scheduler; notifications are still
delivered one at a time, and a timer never waits on a downstream call in
progress (see `SerialQueue`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from reactivex import Observable, abc
from reactivex.disposable import (
    CompositeDisposable,
    Disposable,
    SerialDisposable,
    SingleAssignmentDisposable,
)

from .._deprecate import deprecated_arguments
from ..core.dialects.sse_encoder import SSEEncoder
from .timing import Duration, SerialQueue, duration, timer_scheduler

__all__ = ["SSEWriter", "to_sse"]


@deprecated_arguments(renamed={"format": "dialect", "last_event_id": "after"})
def to_sse(
    dialect: str = "openai-chat",
    *,
    keepalive: Duration | None = 15.0,
    scheduler: abc.SchedulerBase | None = None,
    retry: int | None = None,
    after: str | None = None,
    **options: Any,
) -> Callable[[Observable[Any]], Observable[bytes]]:
    """Send items as server-sent events: one `bytes` per event, ending with the format's end.

    Deltas are rendered in a dialect (`"openai-chat"` by default, or
    `"openai-responses"`, `"anthropic"`, `"gemini"`, `"cohere"`), `SSEFrame`s
    are passed on as they are, and with `dialect="rxstream"` any item goes out
    as rxstream's own JSON event (`event: text`, `data: {"type":"text",...}`;
    see `rxstream.core.dialects.sse_encoder` for the format). Items may come wrapped in
    `StreamEntry(id, item)` (as `rs.from_redis_stream(ids=True)` gives them):
    the entry's id becomes the event id, so a browser that reconnects with
    `Last-Event-ID` resumes right after the last item it saw. Other events
    are numbered `1`, `2`, ...

    The end of the stream becomes the format's end (`data: [DONE]`,
    `message_stop`, ..., `event: done`); an error upstream becomes the
    format's error event and the stream then completes: the error is the
    stream's last word to the client, never a cut response. An item the
    format cannot send (a `ChatChunk` to `"anthropic"`) is a mistake in the
    pipeline: an error event goes out, then the `TypeError` itself, and the
    upstream is disposed.

    While no event went out for `keepalive` seconds, a comment (`: keep-alive`)
    is sent, so proxies and browsers keep an idle connection open. (Behind a
    bounded buffer keep-alives are better written by whoever writes to the
    socket: that one knows when the connection is idle. `rxstream.serve.sse_response`
    does so: it writes with the same `SSEEncoder`, and its own keep-alive timer.)

    Args:
        dialect: the event format (see above). `"ollama"` and `"bedrock"`
            do not stream SSE and raise `ValueError`. (Formerly `format=`,
            deprecated.)
        keepalive: seconds (or a `timedelta`) of silence before a keep-alive
            comment; None sends none.
        scheduler: where the keep-alive timer runs; default the scheduler
            given to `subscribe` (unless it is the current-thread or
            immediate one), else reactivex's `TimeoutScheduler`.
        retry: a reconnection delay in milliseconds for the browser, written
            on the first event.
        after: the `Last-Event-ID` the stream resumes after, which the
            closing event repeats when no entry followed it. (Formerly
            `last_event_id=`, deprecated.)
        options: passed to the dialect's renderer (`model`, `id`, ...).

    Returns:
        An operator from items to the `bytes` of events.

    Raises:
        ValueError: an unknown dialect or one that is not SSE, a bad
            `keepalive`, `retry` or `after`.

    Marbles (keepalive=3; a, b deltas; A, B their events; D the end marker,
    E the error event, k a keep-alive)::

        -a-b-|           -a----#
        -A-B-(D|)        -A--k-(E|)

    >>> import reactivex, reactivex.operators as ops
    >>> from rxstream.models import TextDelta
    >>> events = reactivex.of(TextDelta("Hi")).pipe(to_sse("rxstream", keepalive=None))
    >>> print(b"".join(events.pipe(ops.to_list()).run()).decode(), end="")
    event: text
    id: 1
    data: {"type":"text","text":"Hi","choice":0}
    <BLANKLINE>
    event: done
    id: 2
    data: {"type":"done","version":1}
    <BLANKLINE>
    """
    options = dict(options)

    def make() -> SSEEncoder:
        # The core encoder still spells the dialect `format` and the resume id `last_event_id`.
        return SSEEncoder(dialect, retry=retry, after=after, **options)

    make()  # a bad dialect or option fails here, not at subscribe time
    seconds = None if keepalive is None else duration(keepalive, "keepalive")

    def operator(source: Observable[Any]) -> Observable[bytes]:
        def subscribe(
            observer: abc.ObserverBase[bytes], subscribe_scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            timers = None if seconds is None else timer_scheduler(scheduler, subscribe_scheduler)
            writer = SSEWriter(observer, make(), timers, seconds)
            return writer.run(source, subscribe_scheduler)

        return Observable(subscribe)

    return operator


class SSEWriter:
    """One subscription of `to_sse`: the encoder, the keep-alive timer, the events sent.

    `on_next`, `on_error` and `on_completed` are the upstream's notifications;
    the keep-alive timer calls `keepalive_due`. State is guarded by one lock;
    calls to the observer go through a `SerialQueue`, outside the lock.
    """

    def __init__(
        self,
        observer: abc.ObserverBase[bytes],
        encoder: SSEEncoder,
        timers: abc.SchedulerBase | None = None,
        keepalive: float | None = None,
    ) -> None:
        self._observer = observer
        self._encoder = encoder
        self._timers = timers
        self._keepalive = keepalive
        self._lock = threading.Lock()
        self._queue = SerialQueue()
        self.upstream = SingleAssignmentDisposable()
        self._timer = SerialDisposable()
        self._stopped = False
        self._generation = 0  # bumped per event sent, so an earlier keep-alive timer is stale

    @property
    def generation(self) -> int:
        """How many times the silence clock was (re)started; a timer names the one it ends."""
        return self._generation

    def run(
        self, source: Observable[Any], scheduler: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        """Start the silence clock, subscribe to `source`, return the subscription's disposable."""
        with self._lock:
            self._arm_locked()
        self.upstream.disposable = source.subscribe(
            self.on_next, self.on_error, self.on_completed, scheduler=scheduler
        )
        return CompositeDisposable(Disposable(self.dispose), self.upstream)

    def on_next(self, item: Any) -> None:
        with self._lock:
            if self._stopped:
                return
            failure: Exception | None = None
            try:
                events = self._encoder.feed(item)
            except Exception as exc:
                failure = exc
            if failure is None:
                self._send_locked(events)
            else:
                error = failure
                self._end_locked(self._encoder.error(error), lambda: self._observer.on_error(error))
        if failure is not None:
            self.upstream.dispose()
        self._queue.drain()

    def on_error(self, error: Exception) -> None:
        with self._lock:
            if self._stopped:
                return
            self._end_locked(self._encoder.error(error), self._observer.on_completed)
        self._queue.drain()

    def on_completed(self) -> None:
        with self._lock:
            if self._stopped:
                return
            self._end_locked(self._encoder.close(), self._observer.on_completed)
        self._queue.drain()

    def keepalive_due(self, armed: int) -> None:
        """The silence clock started as number `armed` ran out: send a keep-alive comment."""
        with self._lock:
            if self._stopped or armed != self._generation:
                return
            self._send_locked([self._encoder.keepalive()])
        self._queue.drain()

    def dispose(self) -> None:
        with self._lock:
            self._stopped = True
        self._timer.dispose()

    def _emit(self, event: bytes) -> Callable[[], None]:
        return lambda: self._observer.on_next(event)

    def _arm_locked(self) -> None:
        # (Re)start the silence clock; a timer armed before is stale.
        if self._timers is not None and self._keepalive is not None:
            self._generation += 1
            armed = self._generation

            def fire(_: abc.SchedulerBase, __: Any = None) -> None:
                self.keepalive_due(armed)

            self._timer.disposable = self._timers.schedule_relative(self._keepalive, fire)

    def _send_locked(self, events: list[bytes]) -> None:
        for event in events:
            self._queue.put(self._emit(event))
        if events:
            self._arm_locked()

    def _end_locked(self, events: list[bytes], last: Callable[[], None]) -> None:
        self._stopped = True
        self._timer.dispose()
        for event in events:
            self._queue.put(self._emit(event))
        self._queue.put(last)

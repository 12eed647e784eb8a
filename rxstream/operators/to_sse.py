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

from ..core.dialects.sse_encoder import SSEEncoder
from ._timing import Duration, SerialQueue, duration, timer_scheduler

__all__ = ["to_sse"]


def to_sse(
    format: str = "openai-chat",
    *,
    keepalive: Duration | None = 15.0,
    scheduler: abc.SchedulerBase | None = None,
    retry: int | None = None,
    last_event_id: str | None = None,
    **options: Any,
) -> Callable[[Observable[Any]], Observable[bytes]]:
    """Send items as server-sent events: one `bytes` per event, ending with the format's end.

    Deltas are rendered in a dialect (`"openai-chat"` by default, or
    `"openai-responses"`, `"anthropic"`, `"gemini"`, `"cohere"`), `SSEFrame`s
    are passed on as they are, and with `format="rxstream"` any item goes out
    as rxstream's own JSON event (`event: text`, `data: {"type":"text",...}`;
    see `rxstream.core.sse_encoder` for the format). Items may come wrapped in
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
    bounded buffer, such as `rxstream.serve.sse_response` uses, keep-alives
    are better written by whoever writes to the socket: that one knows when the
    connection is idle; `sse_response` does so and passes `keepalive=None`.)

    Args:
        format: the event format (see above). `"ollama"` and `"bedrock"`
            do not stream SSE and raise `ValueError`.
        keepalive: seconds (or a `timedelta`) of silence before a keep-alive
            comment; None sends none.
        scheduler: where the keep-alive timer runs; default the scheduler
            given to `subscribe` (unless it is the current-thread or
            immediate one), else reactivex's `TimeoutScheduler`.
        retry: a reconnection delay in milliseconds for the browser, written
            on the first event.
        last_event_id: the `Last-Event-ID` the stream resumes after, which
            the closing event repeats when no entry followed it.
        options: passed to the dialect's renderer (`model`, `id`, ...).

    Returns:
        An operator from items to the `bytes` of events.

    Raises:
        ValueError: an unknown format or one that is not SSE, a bad
            `keepalive`, `retry` or `last_event_id`.

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
        return SSEEncoder(format, retry=retry, last_event_id=last_event_id, **options)

    make()  # a bad format or option fails here, not at subscribe time
    seconds = None if keepalive is None else duration(keepalive, "keepalive")

    def operator(source: Observable[Any]) -> Observable[bytes]:
        def subscribe(
            observer: abc.ObserverBase[bytes], subscribe_scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            encoder = make()
            timers = None if seconds is None else timer_scheduler(scheduler, subscribe_scheduler)
            lock = threading.Lock()
            queue = SerialQueue()
            upstream = SingleAssignmentDisposable()
            timer = SerialDisposable()
            stopped = False
            generation = 0  # bumped per event sent, so an earlier keep-alive timer is stale

            def emit(event: bytes) -> Callable[[], None]:
                return lambda: observer.on_next(event)

            def arm_locked() -> None:
                # (Re)start the silence clock; a timer armed before is stale.
                nonlocal generation
                if timers is not None and seconds is not None:
                    generation += 1
                    timer.disposable = timers.schedule_relative(seconds, fire(generation))

            def send_locked(events: list[bytes]) -> None:
                for event in events:
                    queue.put(emit(event))
                if events:
                    arm_locked()

            def fire(armed: int) -> Callable[[abc.SchedulerBase, Any], None]:
                def action(_: abc.SchedulerBase, __: Any = None) -> None:
                    with lock:
                        if stopped or armed != generation:
                            return
                        send_locked([encoder.keepalive()])
                    queue.drain()

                return action

            def end_locked(events: list[bytes], last: Callable[[], None]) -> None:
                nonlocal stopped
                stopped = True
                timer.dispose()
                for event in events:
                    queue.put(emit(event))
                queue.put(last)

            def on_next(item: Any) -> None:
                with lock:
                    if stopped:
                        return
                    failure: Exception | None = None
                    try:
                        events = encoder.feed(item)
                    except Exception as exc:
                        failure = exc
                    if failure is None:
                        send_locked(events)
                    else:
                        error = failure
                        end_locked(encoder.error(error), lambda: observer.on_error(error))
                if failure is not None:
                    upstream.dispose()
                queue.drain()

            def on_error(error: Exception) -> None:
                with lock:
                    if stopped:
                        return
                    end_locked(encoder.error(error), observer.on_completed)
                queue.drain()

            def on_completed() -> None:
                with lock:
                    if stopped:
                        return
                    end_locked(encoder.close(), observer.on_completed)
                queue.drain()

            with lock:
                arm_locked()
            upstream.disposable = source.subscribe(
                on_next, on_error, on_completed, scheduler=subscribe_scheduler
            )

            def dispose() -> None:
                nonlocal stopped
                with lock:
                    stopped = True
                timer.dispose()

            return CompositeDisposable(Disposable(dispose), upstream)

        return Observable(subscribe)

    return operator

"""The producer's job as a step machine: what `rs.to_redis_stream` writes, when (no I/O).

`Writing` holds one subscription's queue and end, and decides: the first
write and what its reply means (`starting`), then the writer's loop
(`steps`): wait for items (or until a heartbeat is due), take the queue as
one batch, have `EntryWriter` spell its commands (items, heartbeat, the end,
the expiry), and end the stream when the end is written, when an item cannot
be encoded, or when a write fails (the error mapped). The shells in
`rxstream.io.redis.producer` (a thread and a `Condition`, or a task, an
`Event` and the demand signal) hold the queue back, wake the writer, and
perform the steps (`rxstream.io.redis.steps`).

State that the source's thread and the writer share (the queue, the end) is
changed under the shell's lock for a sync client (the machine is given it, as
`guard`, and holds it while it takes a batch or sets the end, never across a
step), on the event loop's thread for an async one.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from ...errors import BufferOverflowError, StoredStreamError, TruncatedStreamError, excerpt
from .client import map_redis_error
from .entries import EntryWriter, Reply, encodable, error_payload, item_payload
from .steps import Command, Fail, Idle, Steps, Turn, Write

__all__ = ["End", "Writing"]

#: The end of a stream as the writer writes it: `(b"end", None)` or `(b"error", data)`.
End = tuple[bytes, bytes | None]


class Writing:
    """One producer's queue and end, and the writer's steps.

    Args:
        writer: the entries' numbering and commands (`EntryWriter`).
        maxsize: how many entries may wait to be written (the shell holds the source
            back then).
        where: where the client connects (for messages).
        encoded: the queue holds item payloads (encoded by the shell as they came), not
            the items (encoded here, by the writer, as the sync shell wants).
        gather: before taking a batch, let the source add to it while it grows (a
            `Turn` a round; for a shell whose source runs between the writer's steps, on
            one event loop).
    """

    def __init__(
        self, writer: EntryWriter, *, maxsize: int, where: str, encoded: bool, gather: bool
    ) -> None:
        self.writer = writer
        self.maxsize = maxsize
        self.where = where
        self.encoded = encoded
        self.gather = gather
        self.queue: deque[Any] = deque()  # items, or their payloads (`encoded`)
        self.end: End | None = None
        self.error: Exception | None = None  # the upstream error, passed on after the end
        self.failure: Exception | None = None  # what went wrong writing

    @property
    def key(self) -> str:
        return self.writer.key

    @property
    def full(self) -> bool:
        """Whether `maxsize` entries wait: the source is to be held back."""
        return len(self.queue) >= self.maxsize

    @property
    def closed(self) -> bool:
        """Whether the queue takes no more: the stream has its end, or a write failed."""
        return self.end is not None or self.failure is not None

    def admit(self, item: Any) -> Any:
        """What the queue is to hold for `item`: its payload (`encoded`), or the item itself
        (checked: the writer encodes it).

        Raises:
            TypeError: an item of a type the format does not encode, or (`encoded`) one
                holding a value that is not JSON.
            BufferOverflowError: (`encoded`) twice `maxsize` entries wait already: a source
                that was asked to pause ran on.
        """
        if not self.encoded:
            if not encodable(item):
                item_payload(item)  # raises the TypeError that says why
                raise TypeError(f"to_redis_stream cannot encode {type(item).__name__}")
            return item
        data = item_payload(item)
        if len(self.queue) >= 2 * self.maxsize:
            raise BufferOverflowError(
                2 * self.maxsize, observer=f"to_redis_stream({self.key!r})", item=item
            )
        return data

    @property
    def has_work(self) -> bool:
        """Whether the writer has something to write (items, or the end)."""
        return bool(self.queue) or self.end is not None

    @property
    def outcome(self) -> Exception | None:
        """What downstream is told at the end: the upstream error, or the write's failure."""
        return self.error or self.failure

    def ended(self, end: End, error: Exception | None) -> bool:
        """The source ended (`error`, or completed when None): False when it had already."""
        if self.end is not None:
            return False
        self.end, self.error = end, error
        return True

    def truncate(self) -> bool:
        """Disposed downstream: the stream ends with `TruncatedStreamError`, unless it has
        an end already; whether the writer is to be woken for it."""
        if self.end is not None:
            return False
        self.end = (b"error", self._truncated())
        return True

    def mapped(self, exc: Exception) -> Exception:
        return map_redis_error(exc, self.key, self.where) or exc

    def starting(self, clock: Callable[[], float]) -> Steps:
        """The first write: create the stream with its start entry (sent once), or raise
        `StoredStreamError` when the key holds anything already."""
        self._started((yield Command(self.writer.start(clock()), failover=False)))

    def steps(
        self,
        clock: Callable[[], float],
        *,
        start: bool,
        guard: AbstractContextManager[Any] | None = None,
    ) -> Steps:
        """The writer's steps, from the first write (when `start`) to the end.

        Yields `Idle` while there is nothing to write, `Write` for each batch,
        `Fail` when the stream ends early (an item that cannot be encoded, a
        write that failed: `failure`, mapped).

        Args:
            clock: a monotonic clock, in seconds.
            start: make the first write (else the shell made it already).
            guard: the shell's lock around what the source's thread shares with the
                writer (the queue, the end): held while the batch is taken and while the
                end or the failure is set, never across a step nor while items are encoded.
        """
        lock = guard if guard is not None else nullcontext()
        try:
            if start:
                yield from self.starting(clock)
            while True:
                # Read without the lock: a shell performs `Idle` by waiting for `has_work`
                # under its lock, so work that comes meanwhile ends the wait at once.
                while (wait := self._beat_wait(clock())) is not None:
                    yield Idle(wait)
                if self.gather:
                    # A source that is producing right now (one item per turn of the loop)
                    # adds to this batch while it grows: fewer, larger writes. A source
                    # that waits (a model between two tokens) costs one turn, no more.
                    size = -1
                    while size != len(self.queue) < self.maxsize and self.end is None:
                        size = len(self.queue)
                        yield Turn()
                with lock:
                    items, end = list(self.queue), self.end
                    self.queue.clear()
                # Encoded here, outside the lock, rather than in the shell's `on_next`: the
                # source's thread does the least, so the two threads contend less for the GIL.
                data, refused = (items, None) if self.encoded else _encoded(items)
                if refused is not None:
                    end = (b"error", error_payload(refused))
                yield Write(self.writer.commands(data, end, clock()))
                if refused is not None:
                    # Its error entry is written: the stream ends with it.
                    with lock:
                        ended = self.end is not None  # then the source's end passes it on
                        self.end, self.error = self.end or (b"error", b""), refused
                    if not ended:
                        yield Fail(refused, ended=False)
                if end is not None:
                    return
        except Exception as exc:
            with lock:
                self.failure = self.mapped(exc)
                ended = self.end is not None
                told = self.error or self.failure
            yield Fail(told, ended=ended)

    def _started(self, reply: Reply) -> None:
        held = reply.decode() if isinstance(reply, bytes) else str(reply)
        if held == "none":
            return
        if held == "stream":
            reason = (
                "the key already holds a stream (an earlier or a concurrent producer): "
                "to_redis_stream writes one new stream per key and subscription; use a fresh "
                "key, or delete the old stream"
            )
        else:
            reason = f"the key holds a {excerpt(held)}, not a stream"
        raise StoredStreamError(self.key, reason)

    def _truncated(self) -> bytes:
        return error_payload(
            TruncatedStreamError(
                f"the producer of Redis stream {self.key!r} stopped before the end: its "
                f"subscription was disposed after {self.writer.items + len(self.queue)} item(s)"
            )
        )

    def _beat_wait(self, now: float) -> float | None:
        """How long the writer may wait for work before the next heartbeat is due, or None
        when it has work (items queued, or the end) or the heartbeat is due now."""
        if self.has_work:
            return None
        wait = self.writer.next_beat() - now
        return wait if wait > 0 else None


def _encoded(items: list[Any]) -> tuple[list[bytes], TypeError | None]:
    """The payloads of `items`, up to one holding a value that is not JSON (and that error)."""
    data = []
    for item in items:
        try:
            data.append(item_payload(item))
        except TypeError as exc:
            return data, exc
    return data, None

"""How `rs.from_redis_stream` follows a key: one subscription's plan, and one reader per key
shared by every follower of it in a process; the rules only, without I/O.

- `FollowPlan` is one subscription's own part: the commands that open it (the
  key's type, Redis's clock, where to resume), its deadline (the producer's
  heartbeat), and its own `EntryReader` (its numbering, what it has read).
- `Feed` is the one reader of a key that every follower of that key shares
  (per client, and per event loop for an async client): the `XREAD` it sends
  next, the entries it read, decoded once, and which follower gets which.
- `Member` is one follower in a feed: the batches queued for it, and what it
  still skips.

The shells in `rxstream.io.redis.follower` send the commands and wake the
followers (a thread per feed for a sync client, a task for an async one).

Joining a feed that is already reading (the race between a joiner's backlog
and the live feed): the joiner registers with the feed and takes the feed's
position P (the last entry the feed read) in one step (under the feed's lock,
or in one step of the event loop). From then on every batch the feed reads,
all of it after P, is held for the joiner (`Member.pending`) while it reads
its backlog, from its own `after=` (exclusive) to P (inclusive), with
`XRANGE`, through its own reader; then `Feed.settle` moves what was held to
its queue and it is live. No entry after P is missed (the feed reads them
all and holds them), none up to P arrives twice (the held batches all come
after P); entries of the backlog that are gone (trimmed meanwhile) are a gap
(`EntryReader.reached`). A joiner whose `after` lies beyond P goes live at
once and skips the feed's entries up to its `after`. The first follower of a
key is not a joiner: the feed starts where that follower resumes.

Backpressure is each follower's own, as when it read alone: a follower gets
a batch the feed read only if it is back for more (done with the batch it
took last); one that is still busy with it (a consumer slower than the
stream) is dropped from the feed (`Member.drop`), stands where its last batch
ended, and once done with that batch joins again as a joiner, reading what it
missed from Redis. So a slow consumer neither slows the others nor holds more
than about one read in memory (`MAX_QUEUED` items at most, also while it
reads a backlog), and one slower than `maxlen` allows finds the entries it
missed trimmed (`StoredStreamError`), as a follower reading alone would.

Everything that ends the feed (the end marker, the producer's stored error,
a gap, Redis failing, the key replaced) reaches every follower, after the
items each was due; a follower's own deadline (no entry for
`heartbeat_timeout`) ends that follower only.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any, Literal

from ...errors import StoredStreamError, StreamError, excerpt
from ...models import StreamEntry
from .entries import EntryReader, Reply, entries_of, parse_id

__all__ = [
    "BACKLOG_COUNT",
    "MAX_QUEUED",
    "READ_COUNT",
    "Backlog",
    "Feed",
    "FollowPlan",
    "Member",
    "diagnosis",
    "explained",
    "explains",
    "gone_cause",
    "id_key",
]

#: How many entries one `XREAD` asks for.
READ_COUNT = 512
#: How many entries one `XRANGE` of a joiner's backlog asks for.
BACKLOG_COUNT = 4096
#: Items a follower may have waiting before it is dropped from the feed (it then reads them
#: again from Redis, and joins again): about one read's worth, as a follower reading alone holds.
MAX_QUEUED = READ_COUNT


def id_key(entry_id: str) -> tuple[int, int]:
    """An entry id as a pair that sorts as Redis sorts ids (a malformed id sorts first)."""
    return parse_id(entry_id) or (0, 0)


class FollowPlan:
    """One subscription's plan: which commands open it, and what their replies mean.

    Time comes in as arguments (a monotonic clock); no I/O here.
    """

    def __init__(self, key: str, after: str | None, *, ids: bool, timeout: float) -> None:
        self.key = key
        self.after = after
        self.timeout = timeout
        self.reader = EntryReader(key, ids=ids)
        self.offset = 0.0  # Redis's clock minus ours, in seconds
        self.opened_at = 0.0
        self.existed = False

    @property
    def done(self) -> bool:
        return self.reader.done

    def opening(self) -> list[tuple[Any, ...]]:
        """The first commands, sent together: the key's type, Redis's clock, where to resume."""
        if self.after is not None and parse_id(self.after) is None:
            raise StoredStreamError(
                self.key,
                f"cannot resume after {excerpt(self.after)!r}: not a stream entry id (expected "
                "'<milliseconds>-<sequence>', e.g. '1700000000000-0', as sent in the "
                "Last-Event-ID header)",
                after=self.after,
            )
        commands: list[tuple[Any, ...]] = [("TYPE", self.key), ("TIME",)]
        if self.after is not None:
            commands += [
                ("XRANGE", self.key, self.after, self.after),
                ("XRANGE", self.key, "-", "+", "COUNT", 1),
                ("XREVRANGE", self.key, "+", "-", "COUNT", 1),
            ]
        return commands

    def opened(self, replies: list[Any], now: float) -> None:
        """Take in the replies of `opening()`, received at `now`.

        Raises:
            StoredStreamError: a key of another type, a resume of a key that
                does not exist, an `after` the stream does not hold.
        """
        # Sent with raise_on_error=False: the key's type explains the other replies' errors.
        held = _text(replies[0])
        if not isinstance(replies[0], Exception) and held not in ("none", "stream"):
            raise StoredStreamError(self.key, f"the key holds a {excerpt(held)}, not a stream")
        for reply in replies:
            if isinstance(reply, Exception):
                raise reply
        self.offset = _seconds_of(replies[1]) - now
        self.opened_at = now
        if held == "none":
            if self.after is not None:
                raise StoredStreamError(
                    self.key,
                    f"cannot resume after {self.after!r}: there is no stream at this key (it "
                    "expired after its ttl, was deleted, or never existed)",
                    after=self.after,
                )
            return
        self.existed = True
        if self.after is not None:
            found, first, last = (entries_of(r, xread=False) for r in replies[2:5])
            self.reader.resume(self.after, found, first, last)

    def adopt(self, offset: float, *, existed: bool, now: float) -> None:
        """Take another follower's opening of the same key (from the start only)."""
        assert self.after is None
        self.offset, self.existed, self.opened_at = offset, existed, now

    def deadline(self) -> float:
        """When the producer counts as dead (or the key as never coming), on our clock."""
        newest = self.reader.newest_ms
        if newest is None:
            return self.opened_at + self.timeout
        return newest / 1000 - self.offset + self.timeout

    def backlog(self, upto: str) -> tuple[Any, ...]:
        """The `XRANGE` of a backlog's next entries: after this reader's position, up to `upto`."""
        return ("XRANGE", self.key, f"({self.reader.position}", upto, "COUNT", BACKLOG_COUNT)

    def timed_out(self) -> StreamError:
        return self.reader.timeout(self.timeout, started=self.existed)


class Member:
    """One follower in a `Feed`: what is queued for it, and what it still skips.

    Args:
        plan: the follower's plan (its reader is kept in step with the feed's).
        wake: called (by whoever feeds the member) when its queue got something.

    The queue holds batches (lists of items, or of `StreamEntry` with
    `ids=True`, each with the feed's position after it), then at most one
    end: None (completed) or the error. `pop` takes the next one and moves
    the follower's reader to where that batch ends.
    """

    __slots__ = (
        "busy",
        "detached",
        "ended",
        "ids",
        "pending",
        "plan",
        "queue",
        "queued",
        "skip",
        "wake",
    )

    def __init__(self, plan: FollowPlan, wake: Callable[[], object]) -> None:
        self.plan = plan
        self.ids = plan.reader.ids
        self.wake = wake
        self.queue: deque[tuple[list[Any], str, int] | Exception | None] = deque()
        self.queued = 0  # items in the queue
        # While the backlog is read: what the feed read meanwhile (None: live).
        self.pending: list[tuple[list[StreamEntry], str, int] | Exception | None] | None = None
        self.skip: tuple[int, int] | None = None  # entries up to this id are not for it
        self.detached = False
        self.ended: Exception | None = None  # the feed's error, once `next` has met it
        # Still on the batch it took last (not back for the next): a batch read now
        # is not queued for it; it reads that from Redis itself (`drop`).
        self.busy = False

    def take(
        self, entries: list[StreamEntry], items: list[Any] | None, position: str, expected: int
    ) -> None:
        """Queue `entries` (`items`: their items, if made already), but those up to `skip`.

        `position` and `expected` are the feed's after them (its last entry
        read, and the next entry's number).
        """
        if self.skip is not None:
            skip = self.skip
            kept = [entry for entry in entries if id_key(entry.id) > skip]
            if not kept:
                return
            self.skip = None
            if len(kept) < len(entries):
                entries, items = kept, None
        if self.ids:
            self.queue.append((entries, position, expected))
        else:
            batch = items if items is not None else [entry.item for entry in entries]
            self.queue.append((batch, position, expected))
        self.queued += len(entries)

    def end(self, error: Exception | None) -> None:
        if self.pending is not None:
            self.pending.append(error)
        else:
            self.queue.append(error)

    def pop(self) -> tuple[bool, list[Any] | Exception | None]:
        """`(True, the next batch or end)`, or `(False, None)` when nothing is queued."""
        if not self.queue:
            self.busy = False
            return False, None
        got = self.queue.popleft()
        if isinstance(got, tuple):
            self.busy = True
            batch, position, expected = got
            reader = self.plan.reader
            reader.position, reader.expected = position, expected
            reader.items += len(batch)
            self.queued -= len(batch)
            return True, batch
        return True, got

    def next(self) -> tuple[Literal["batch", "wait", "rejoin", "end"], list[Any] | None]:
        """What the follower does next: take a batch (the second value), wait for one, join
        the feed again (it was dropped for being slow), or end (`ended`: None or the feed's
        error)."""
        has, got = self.pop()
        if not has:
            return ("rejoin" if self.detached else "wait"), None
        if isinstance(got, list):
            return "batch", got
        self.ended = got
        return "end", None

    def drop(self) -> None:
        """Leave the feed for being slow: what is queued is read again, from Redis, on joining."""
        self.queue.clear()
        self.queued = 0
        self.pending = None
        self.detached = True


class Backlog:
    """A joiner's backlog: the `XRANGE`s from its reader's position up to where the feed stood.

    Args:
        plan: the joiner's plan (its reader reads the backlog).
        mark: what `Feed.join` returned: the feed's position and the number it expects next.
    """

    def __init__(self, plan: FollowPlan, mark: tuple[str, int]) -> None:
        self._plan = plan
        self._upto, self._expected = mark
        self._target = id_key(self._upto)
        self._exhausted = False  # an XRANGE came back empty: what is left is gone

    def command(self) -> tuple[Any, ...] | None:
        """The next `XRANGE`, or None once the backlog is read (its reader then stands at
        the feed's position, or fails on the entries that are gone)."""
        reader = self._plan.reader
        if not (self._exhausted or reader.done) and id_key(reader.position) < self._target:
            return self._plan.backlog(self._upto)
        reader.reached(self._upto, self._expected)
        return None

    def received(self, reply: Reply) -> list[Any]:
        """The items of an `XRANGE`'s reply (none, possibly)."""
        entries = entries_of(reply, xread=False)
        if not entries:
            self._exhausted = True
            return []
        self._plan.existed = True
        return self._plan.reader.feed(entries)


class Feed:
    """The one reader of a key for every follower of it (see the module docstring).

    Not thread-safe: a sync shell calls it (and `Member.pop`) under its lock,
    an async one from its loop only.
    """

    def __init__(self, key: str) -> None:
        self.key = key
        self.reader = EntryReader(key, ids=True)
        self.members: dict[Member, None] = {}
        self.started = False
        self.closed = False
        # From the first follower's opening: Redis's clock minus ours, and whether the key
        # held a stream then (None: not opened yet).
        self.offset: float | None = None
        self.existed = False

    def join(self, member: Member) -> tuple[str, int] | None:
        """Add `member` (its plan opened); return the backlog it must read, or None.

        The backlog is `(position, expected)`: the member reads its entries
        after its own position up to the entry `position` (inclusive), whose
        next entry number is `expected`, then calls `settle`.
        """
        if self.closed:
            raise RuntimeError(f"the feed of {self.key!r} is closed")
        own = member.plan.reader
        self.members[member] = None
        member.detached = False
        if not self.started:
            # The first follower: the feed starts where it resumes.
            self.started = True
            mine = self.reader
            mine.position, mine.expected = own.position, own.expected
            mine.newest_ms, mine.heartbeat = own.newest_ms, own.heartbeat
            return None
        ahead = id_key(own.position)
        here = id_key(self.reader.position)
        if ahead >= here:
            member.skip = ahead if ahead > here else None
            self._follow(member)
            return None
        member.pending = []
        return self.reader.position, self.reader.expected

    def settle(self, member: Member) -> bool:
        """`member` has read its backlog: what the feed read meanwhile goes to its queue.

        False (nothing done) when the member was dropped meanwhile: too much
        was held for it (a consumer slower than the stream); it joins again.
        """
        if member.detached:
            return False
        held, member.pending = member.pending or [], None
        member.queued = 0
        for got in held:
            if isinstance(got, tuple):
                member.take(got[0], None, got[1], got[2])
            else:
                member.queue.append(got)
        if member in self.members:
            self._follow(member)
        if member.queue:
            member.wake()
        return True

    def leave(self, member: Member) -> bool:
        """Remove `member`; True when that left the feed without followers (it is closed then)."""
        self.members.pop(member, None)
        if not self.members and not self.closed:
            self.closed = True
            return True
        return False

    def command(self, now: float, poll: float) -> tuple[Any, ...]:
        """The next `XREAD`: blocking up to `poll` seconds, never past a live follower's deadline.

        (Followers still reading their backlog have no deadline here.)
        """
        head: tuple[Any, ...] = ("XREAD", "COUNT", READ_COUNT)
        deadline = min(
            (m.plan.deadline() for m in self.members if m.pending is None), default=now + poll
        )
        remaining = deadline - now
        if remaining > 0:
            head += ("BLOCK", max(1, int(min(poll, remaining) * 1000)))
        return (*head, "STREAMS", self.key, self.reader.position)

    def received(self, reply: Reply, now: float) -> None:
        """Hand the entries of an `XREAD` reply to the followers, or end those whose producer
        is silent past their deadline (a reply without entries).

        A follower still busy with its last batch, or with more than
        `MAX_QUEUED` items waiting, is dropped (it catches up on its own, see
        `Member.drop`). After it, `reader.done` says the stream ended
        (`reader.failure`: how); the shell then calls `finish`, with that
        error explained where it can.
        """
        entries = entries_of(reply, xread=True)
        if not entries:
            for member in [m for m in self.members if m.pending is None]:
                if now >= member.plan.deadline():
                    del self.members[member]
                    member.queue.append(member.plan.timed_out())
                    member.wake()
        else:
            reader = self.reader
            batch: list[StreamEntry] = reader.feed(entries)
            items = [entry.item for entry in batch] if batch else None
            position, expected = reader.position, reader.expected
            for member in list(self.members):
                if member.pending is not None:
                    if batch:
                        member.pending.append((batch, position, expected))
                        member.queued += len(batch)
                        if member.queued > MAX_QUEUED:
                            del self.members[member]
                            member.drop()
                    continue
                member.plan.existed = True
                if batch:
                    if member.busy:
                        del self.members[member]
                        member.drop()
                        member.wake()
                        continue
                    member.take(batch, items, position, expected)
                    if member.queued > MAX_QUEUED:
                        del self.members[member]
                        member.drop()
                        member.wake()
                        continue
                    member.wake()
                self._follow(member)
        if not self.members and not self.reader.done:
            self.closed = True

    def finish(self, error: Exception | None) -> None:
        """End every follower: completed (None) or with `error`; the feed is closed."""
        self.closed = True
        members, self.members = list(self.members), {}
        for member in members:
            member.end(error)
            member.wake()

    def _follow(self, member: Member) -> None:
        """Keep a live member's clock in step with the feed's (its deadline: the newest entry)."""
        own, mine = member.plan.reader, self.reader
        if mine.newest_ms is not None and (own.newest_ms is None or mine.newest_ms > own.newest_ms):
            own.newest_ms = mine.newest_ms
        if mine.heartbeat is not None:
            own.heartbeat = mine.heartbeat
        if member.skip is None and not member.queue:
            # Nothing of it waits: it stands where the feed stands (past heartbeats too).
            own.position, own.expected = mine.position, mine.expected


# --------------------------------------------------------------------------- entries gone


def explains(error: Exception) -> bool:
    """Whether `error` says entries are gone, which `diagnosis()` can tell the cause of."""
    return isinstance(error, StoredStreamError) and error.missing is not None


def diagnosis(key: str) -> list[tuple[Any, ...]]:
    """The commands that show why entries are gone: the key's type, its stream's counters."""
    return [("TYPE", key), ("XINFO", "STREAM", key)]


def explained(error: Exception, replies: list[Any] | None) -> Exception:
    """`error` (entries gone) saying what happened, by the replies of `diagnosis()`."""
    assert isinstance(error, StoredStreamError)
    assert error.missing is not None
    cause = gone_cause(replies)
    reason = error.reason
    for said in _GONE_SAID:
        if said in reason:
            reason = reason.replace(said, cause)
            break
    else:
        reason = f"{reason}; {cause}"
    return StoredStreamError(error.key, reason, after=error.after, missing=error.missing)


# What the entry reader says when entries are gone; `explained` puts what happened in its place.
_GONE_SAID = (
    "trimmed by MAXLEN (a follower slower than maxlen allows, or one that "
    "started late) or lost in a restart of Redis",
    "trimmed by MAXLEN, or lost in a restart of Redis",
)


def gone_cause(replies: list[Any] | None) -> str:
    """Why entries of a stream are gone, by what Redis shows of its key.

    Args:
        replies: the replies of `TYPE key` and `XINFO STREAM key` (None: not read).

    Returns:
        The cause, in words: the key deleted (or expired, or lost in a restart
        of Redis without its data) when the key is missing; the stream reset
        (deleted or lost, then written again by its producer) when Redis has
        counted fewer entries added to the key than the producer numbered;
        trimmed by `MAXLEN` when it counted them all, or when its
        `max-deleted-entry-id` shows trimming. Redis before 7.0 keeps no
        such counters: then the message says both causes are possible.
    """
    unknown = (
        "trimmed by MAXLEN (a follower slower than maxlen allows, or one that started late), "
        "or lost with the key (deleted, or in a restart of Redis without its data)"
    )
    if not replies or len(replies) < 2 or isinstance(replies[0], Exception):
        return unknown
    if _text(replies[0]) == "none":
        return (
            "the key is gone: it was deleted (DEL), expired, or lost in a restart of Redis "
            "without its data; the entries were not trimmed"
        )
    info = _xinfo(replies[1])
    added = info.get("entries-added")
    newest = _entry_number(info.get("last-entry"))
    if not isinstance(added, int) or newest is None:
        return unknown + " (Redis before 7.0 does not count the entries added to a key)"
    # Entry numbers start at 0: a stream never reset has had at least `newest + 1` entries
    # added; one deleted (or lost) and written again only those written since.
    written = newest + 1
    if added < written:
        return (
            f"the stream was reset: the key was deleted or lost in a restart of Redis without "
            f"its data, then written again (Redis counts {added} entries added to it, the "
            f"producer had numbered {written}); not trimmed by MAXLEN"
        )
    return "trimmed by MAXLEN (a follower slower than maxlen allows, or one that started late)"


def _xinfo(reply: Any) -> dict[str, Any]:
    """`XINFO STREAM`'s reply (a dict, or a flat list of names and values) by name, as text."""
    if isinstance(reply, dict):
        pairs = list(reply.items())
    elif isinstance(reply, list | tuple):
        pairs = [(reply[i], reply[i + 1]) for i in range(0, len(reply) - 1, 2)]
    else:
        return {}
    return {
        _text(name).replace("_", "-"): (int(value) if _is_int(value) else value)
        for name, value in pairs
    }


def _entry_number(entry: Any) -> int | None:
    """The `n` field (the producer's entry number) of an entry in an `XINFO` reply."""
    if not isinstance(entry, list | tuple) or len(entry) != 2:
        return None
    fields = entry[1]
    if isinstance(fields, list | tuple):
        fields = {fields[i]: fields[i + 1] for i in range(0, len(fields) - 1, 2)}
    if not isinstance(fields, dict):
        return None
    for name, value in fields.items():
        if _text(name) == "n" and _is_int(value):
            return int(value)
    return None


def _is_int(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return isinstance(value, bytes | str) and _text(value).isdigit()


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _seconds_of(time_reply: Any) -> float:
    seconds, micros = time_reply[0], time_reply[1]
    return int(seconds) + int(micros) / 1_000_000

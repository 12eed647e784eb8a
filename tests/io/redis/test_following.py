"""The follower's step machines, without Redis: `following` (one follower) and `reading` (a
key's one reader), steps out, replies in, by hand.

Table-driven: each case plays a machine move by move against the real rules
(`Feed`, `Member`, `FollowPlan`), with what the other side does meanwhile (the
feed reading entries, another follower, the clock) as actions between the
steps (`tests.support.redis_steps.play`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

import rxstream as rs
from rxstream.io.redis.feed import Feed, FollowPlan, Member
from rxstream.io.redis.following import following, reading
from tests.support.redis_steps import Clock, Move, entry, later, play, xread

START = entry(0, "start", {"heartbeat": 2.0, "maxlen": None})
REFUSED = ConnectionRefusedError(111, "Connection refused")
STORED = rs.ProviderError("the model broke", code=500)
#: `TIME`'s reply: Redis's clock one second ahead of the test's (entry ids are ms since 1000).
TIME = [b"1", b"0"]


@dataclass
class World:
    """One key's feed and the followers in it, played by hand."""

    feed: Feed = field(default_factory=lambda: Feed("k"))
    clock: Clock = field(default_factory=Clock)
    disposed: bool = False

    def follower(self, after: str | None = None) -> tuple[FollowPlan, Member]:
        plan = FollowPlan("k", after, ids=False, timeout=10.0)
        return plan, Member(plan, lambda: None)

    def opened(self, plan: FollowPlan) -> Callable[[], None]:
        """The shell's `Open`: the key holds a stream (replies of `plan.opening()`)."""
        return lambda: plan.opened([b"stream", TIME], self.clock.now)

    def joined(self) -> tuple[FollowPlan, Member]:
        """A follower that opened and joined the feed before the one under test."""
        plan, member = self.follower()
        self.opened(plan)()
        self.feed.join(member)
        return plan, member

    def reads(self, *entries: Any) -> Callable[[], None]:
        """The feed reads `entries` (its shell's XREAD); at the end it ends every follower."""

        def act() -> None:
            self.feed.received(xread("k", *entries), self.clock.now)
            if self.feed.reader.done:
                self.feed.finish(self.feed.reader.failure)

        return act


#: A follower's plan and member, and its moves.
Script = tuple[FollowPlan, Member, list[Move]]


def xrange(*entries: Any) -> list[Any]:
    return [(e.id.encode(), dict(e.fields)) for e in entries]


def alone(w: World) -> Script:
    plan, member = w.follower()
    return (
        plan,
        member,
        [
            ("open", w.opened(plan)),
            ("join", lambda: w.feed.join(member)),
            ("next", member.next),
            ("wait", w.reads(START, entry(1), entry(2), entry(3, "end"))),
            ("next", member.next),
            ("emit 1 2", None),
            ("next", member.next),
        ],
    )


def stored_error(w: World) -> Script:
    plan, member = w.follower()
    return (
        plan,
        member,
        [
            ("open", w.opened(plan)),
            ("join", lambda: w.feed.join(member)),
            ("next", later(w.reads(START, entry(1)), member.next)),
            ("emit 1", None),
            ("next", later(lambda: w.feed.finish(STORED), member.next)),
        ],
    )


def late(w: World, *moves: Move) -> Script:
    """A follower that joins a feed another follower's reading brought to entry 3: it opens,
    joins, then `moves` (its backlog first)."""
    w.joined()
    w.reads(START, entry(1), entry(2), entry(3))()
    plan, member = w.follower()
    opening: list[Move] = [("open", w.opened(plan)), ("join", lambda: w.feed.join(member))]
    return plan, member, [*opening, *moves]


def joiner(w: World) -> Script:
    plan, member, moves = late(
        w,
        # While the joiner reads its backlog, the feed reads entry 4: held for it.
        (
            "XRANGE k (0-0 1003-0 COUNT 4096",
            later(w.reads(entry(4)), lambda: xrange(START, *map(entry, (1, 2, 3)))),
        ),
        ("emit 1 2 3", None),
    )
    return (
        plan,
        member,
        [
            *moves,
            ("settle", lambda: w.feed.settle(member)),
            ("next", member.next),
            ("emit 4", None),
            ("next", member.next),
            ("wait", w.reads(entry(5, "end"))),
            ("next", member.next),
        ],
    )


def backlog_gone(w: World) -> Script:
    return late(
        w,
        ("XRANGE k (0-0 1003-0 COUNT 4096", xrange(entry(2), entry(3))),
        ("diagnose TYPE k, XINFO STREAM k", [b"none", None]),
    )


def dropped_and_back(w: World) -> Script:
    w.joined()  # another follower: the feed goes on without the slow one
    plan, member = w.follower()
    return (
        plan,
        member,
        [
            ("open", w.opened(plan)),
            ("join", lambda: w.feed.join(member)),
            ("next", later(w.reads(START, entry(1)), member.next)),
            # Busy with its batch when the feed reads entry 2: dropped, it reads 2 from Redis.
            ("emit 1", w.reads(entry(2))),
            ("next", member.next),
            ("join", lambda: w.feed.join(member)),
            ("XRANGE k (1001-0 1002-0 COUNT 4096", xrange(entry(2))),
            ("emit 2", None),
            ("settle", lambda: w.feed.settle(member)),
            ("next", member.next),
            ("wait", w.reads(entry(3, "end"))),
            ("next", member.next),
        ],
    )


def open_fails(w: World) -> Script:
    plan, member = w.follower()
    return plan, member, [("open", REFUSED)]


def disposed(w: World) -> Script:
    plan, member = w.follower()
    w.disposed = True
    return plan, member, [("open", w.opened(plan)), ("join", lambda: w.feed.join(member))]


#: (the moves of one follower, what it emitted, what it raised at its end and says)
FOLLOWING: dict[str, tuple[Callable[[World], Script], list[str], type[Exception] | None, str]] = {
    "alone-from-the-start": (alone, ["emit 1 2"], None, ""),
    "the-producers-stored-error": (stored_error, ["emit 1"], rs.ProviderError, "the model broke"),
    "a-joiner-reads-its-backlog-then-what-was-held": (
        joiner,
        ["emit 1 2 3", "emit 4"],
        None,
        "",
    ),
    "a-backlog-whose-entries-are-gone-is-explained": (
        backlog_gone,
        [],
        rs.StoredStreamError,
        "entries 0 to 1 are gone (2 in all, before the first entry this reader read) before "
        "this reader read them: the key is gone",
    ),
    "dropped-for-being-slow-then-back": (dropped_and_back, ["emit 1", "emit 2"], None, ""),
    "the-opening-fails": (open_fails, [], rs.TransportError, "Connection refused"),
    "disposed": (disposed, [], None, ""),
}


@pytest.mark.parametrize("case", FOLLOWING)
def test_a_follower_steps(case: str) -> None:
    script, emitted, raises, words = FOLLOWING[case]
    w = World()
    plan, member, moves = script(w)
    got, raised = play(following(plan, member, "test", lambda: w.disposed), moves)
    assert got == emitted
    if raises is None:
        assert raised is None
    else:
        assert isinstance(raised, raises), raised
        assert words in str(raised)


# --------------------------------------------------------------------------- a key's reader

XINFO_ALL_COUNTED = {b"entries-added": 3, b"last-entry": [b"1002-0", [b"n", b"2"]]}


def reads_to_the_end(w: World, member: Member) -> list[Move]:
    return [
        ("XREAD COUNT 512 BLOCK 250 STREAMS k 0-0", xread("k", START, entry(1), entry(2, "end")))
    ]


def reads_twice(w: World, member: Member) -> list[Move]:
    return [
        ("XREAD COUNT 512 BLOCK 250 STREAMS k 0-0", xread("k", START, entry(1))),
        ("XREAD COUNT 512 BLOCK 250 STREAMS k 1001-0", xread("k", entry(2, "end"))),
    ]


def silent_producer(w: World, member: Member) -> list[Move]:
    w.clock.now = 9.875  # the follower's deadline is 10 s after it opened: the read waits less
    return [
        (
            "XREAD COUNT 512 BLOCK 125 STREAMS k 0-0",
            later(lambda: setattr(w.clock, "now", 10.0), list),
        ),
    ]


def read_fails(w: World, member: Member) -> list[Move]:
    return [("XREAD COUNT 512 BLOCK 250 STREAMS k 0-0", REFUSED)]


def gap(w: World, member: Member) -> list[Move]:
    return [
        ("XREAD COUNT 512 BLOCK 250 STREAMS k 0-0", xread("k", START, entry(2))),
        ("diagnose TYPE k, XINFO STREAM k", [b"stream", XINFO_ALL_COUNTED]),
    ]


def last_follower_left(w: World, member: Member) -> list[Move]:
    return [
        (
            "XREAD COUNT 512 BLOCK 250 STREAMS k 0-0",
            later(lambda: w.feed.leave(member), lambda: xread("k", START, entry(1))),
        )
    ]


#: (the reader's moves, what the follower then finds queued: batches' texts, then its end as
#: the error's class and words, or "completed"; None: nothing, the feed left unfinished)
READING: dict[str, tuple[Callable[[World, Member], list[Move]], list[Any]]] = {
    "to-the-end": (reads_to_the_end, [["1"], "completed"]),
    "two-reads": (reads_twice, [["1"], "completed"]),
    "a-silent-producer-times-out": (
        silent_producer,
        [(rs.StreamTimeoutError, "no stream at Redis key 'k': nothing was written there")],
    ),
    "a-read-that-fails": (read_fails, [(rs.TransportError, "Connection refused")]),
    "a-gap-is-explained": (
        gap,
        [(rs.StoredStreamError, "entry 1 is gone (1 in all, between ids '1000-0' and '1002-0')")],
    ),
    "the-last-follower-left": (last_follower_left, []),
}


def queued(member: Member) -> list[Any]:
    out: list[Any] = []
    for got in member.queue:
        if isinstance(got, tuple):
            out.append([item.text for item in got[0]])
        elif got is None:
            out.append("completed")
        else:
            out.append(got)
    return out


@pytest.mark.parametrize("case", READING)
def test_a_keys_reader_steps(case: str) -> None:
    script, expected = READING[case]
    w = World()
    plan, member = w.follower()
    plan.opened([b"none", TIME], w.clock.now)
    w.feed.join(member)
    moves = script(w, member)
    got, raised = play(reading(w.feed, "test", 0.25, w.clock), moves)
    assert (got, raised) == ([], None)
    found = queued(member)
    assert len(found) == len(expected), found
    for value, want in zip(found, expected, strict=True):
        if isinstance(want, tuple):
            assert isinstance(value, want[0]), value
            assert want[1] in str(value)
        else:
            assert value == want
    assert w.feed.closed


def test_a_followers_error_carries_the_deltas_it_emitted_and_the_shared_error_stays_bare() -> None:
    w = World()
    plan, member, moves = stored_error(w)
    _, raised = play(following(plan, member, "test", lambda: w.disposed), moves)
    assert isinstance(raised, rs.ProviderError)
    assert raised.partial is not None
    assert raised.partial.content == "1"
    assert raised is not STORED  # a copy: another follower may have read another part
    assert STORED.partial is None
    assert raised.__cause__ is STORED.__cause__

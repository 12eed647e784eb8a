"""The producer's step machine (`Writing`), without Redis: steps out, replies in, by hand.

Table-driven: each case plays one subscription's writer from its first write
to its end (`tests.support.redis_steps.play`), with what the source and the
shell do meanwhile (items queued, the end, a dispose, the clock moving) as
actions between the steps, and checks what downstream is told at the end.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

import rxstream as rs
from rxstream.io.redis.entries import EntryWriter, error_payload, item_payload
from rxstream.io.redis.writing import Writing
from tests.support.redis_steps import Clock, Move, play


@dataclass(frozen=True)
class Do:
    """What the source or the shell does between two steps (the reply sent in: None)."""

    act: Callable[[Writing, Clock], object]


def add(*texts: str) -> Do:
    """The source's items queued (payloads for an async shell, items for a sync one)."""

    def act(w: Writing, _: Clock) -> None:
        for text in texts:
            item: Any = text if text.startswith("raw:") else rs.TextDelta(text)
            w.queue.append(item_payload(item) if w.encoded else item)

    return Do(act)


def ended(error: Exception | None = None) -> Do:
    """The source ended: completed, or with `error`."""
    end = (b"end", None) if error is None else (b"error", error_payload(error))
    return Do(lambda w, _: w.ended(end, error))


def both(*dos: Do) -> Do:
    return Do(lambda w, clock: [do.act(w, clock) for do in dos])


TRUNCATED = Do(lambda w, _: w.truncate())


def at(now: float) -> Do:
    """The clock moved to `now`."""
    return Do(lambda _, clock: setattr(clock, "now", now))


def writing(shell: str, writer: EntryWriter | None = None) -> Writing:
    """The machine of a sync or an async shell, `maxsize` 4, heartbeat 2 s."""
    asynchronous = shell == "async"
    writer = writer or EntryWriter("k", maxlen=None, ttl=60, heartbeat=2)
    return Writing(writer, maxsize=4, where="test", encoded=asynchronous, gather=asynchronous)


class Guard:
    """A lock that says whether it is held, and how often it was taken."""

    def __init__(self) -> None:
        self.held = False
        self.entered = 0

    def __enter__(self) -> None:
        assert not self.held
        self.held, self.entered = True, self.entered + 1

    def __exit__(self, *exc_info: object) -> None:
        self.held = False


UPSTREAM = rs.ProviderError("upstream broke", code=500)
REFUSED = ConnectionRefusedError(111, "Connection refused")

#: (what the shell is, the moves, the class of what downstream is told at the end: None is
#: completion)
CASES: dict[str, tuple[str, list[Move], type[Exception] | None]] = {
    "items-then-the-end": (
        "sync",
        [
            ("EVAL k (once)", b"none"),
            ("idle 2", add("a", "b")),
            ("write item#1 item#2", None),
            ("idle 2", ended()),
            ("write end#3 PEXPIRE", None),
        ],
        None,
    ),
    "a-heartbeat-when-idle": (
        "sync",
        [
            ("EVAL k (once)", "none"),
            ("idle 2", at(2.0)),
            ("write beat#1 PEXPIRE", None),
            ("idle 2", both(at(3.0), add("a"))),
            ("write item#2", None),
            ("idle 2", ended()),
            ("write end#3 PEXPIRE", None),
        ],
        None,
    ),
    "the-key-holds-a-stream": (
        "sync",
        [("EVAL k (once)", b"stream"), ("fail StoredStreamError", None)],
        rs.StoredStreamError,
    ),
    "the-key-holds-a-list": (
        "async",
        [("EVAL k (once)", b"list"), ("fail StoredStreamError", None)],
        rs.StoredStreamError,
    ),
    "an-item-that-is-not-json-ends-the-stream": (
        "sync",
        [
            ("EVAL k (once)", b"none"),
            ("idle 2", add("a", "raw:line", "b")),
            ("write item#1 error#2 PEXPIRE", None),
            ("fail TypeError", None),
        ],
        TypeError,
    ),
    "an-item-that-is-not-json-after-the-end": (
        "sync",
        [
            ("EVAL k (once)", b"none"),
            ("idle 2", both(add("raw:line"), ended())),
            ("write error#1 PEXPIRE", None),
        ],
        TypeError,
    ),
    "a-write-that-fails": (
        "sync",
        [
            ("EVAL k (once)", b"none"),
            ("idle 2", add("a")),
            ("write item#1", REFUSED),
            ("fail TransportError", None),
        ],
        rs.TransportError,
    ),
    "a-write-that-fails-after-the-end": (
        "async",
        [
            ("EVAL k (once)", b"none"),
            ("idle 2", both(add("a"), ended())),
            ("write item#1 end#2 PEXPIRE", REFUSED),
            ("fail TransportError ended", None),
        ],
        rs.TransportError,
    ),
    "a-start-that-fails": (
        "async",
        [("EVAL k (once)", REFUSED), ("fail TransportError", None)],
        rs.TransportError,
    ),
    "the-upstream-error-is-stored-then-passed-on": (
        "sync",
        [
            ("EVAL k (once)", b"none"),
            ("idle 2", ended(UPSTREAM)),
            ("write error#1 PEXPIRE", None),
        ],
        rs.ProviderError,
    ),
    "disposed-before-the-end": (
        "sync",
        [
            ("EVAL k (once)", b"none"),
            ("idle 2", TRUNCATED),
            ("write error#1 PEXPIRE", None),
        ],
        None,
    ),
    "async-gathers-while-the-source-adds": (
        "async",
        [
            ("EVAL k (once)", b"none"),
            ("idle 2", add("a")),
            ("turn", add("b")),
            ("turn", None),
            ("write item#1 item#2", None),
            ("idle 2", ended()),
            ("write end#3 PEXPIRE", None),
        ],
        None,
    ),
    "async-gathers-no-more-than-maxsize": (
        "async",
        [
            ("EVAL k (once)", b"none"),
            ("idle 2", add("a", "b", "c", "d")),
            ("write item#1 item#2 item#3 item#4", None),
            ("idle 2", both(add("e"), ended())),
            ("write item#5 end#6 PEXPIRE", None),
        ],
        None,
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_the_writer_steps(case: str) -> None:
    shell, moves, told = CASES[case]
    clock = Clock()
    w = writing(shell)

    guard = Guard()

    def outcome(reply: object) -> object:
        if isinstance(reply, BaseException):
            return reply  # thrown in

        def then() -> object:
            assert not guard.held, "the guard is held across a step"
            return reply.act(w, clock) if isinstance(reply, Do) else reply

        return then

    steps = w.steps(clock, start=True, guard=guard)
    emitted, raised = play(steps, [(s, outcome(r)) for s, r in moves])
    assert (emitted, raised) == ([], None)
    assert guard.entered > 0
    if told is None:
        assert w.outcome is None
    else:
        assert isinstance(w.outcome, told), w.outcome


def test_the_start_alone_raises_what_the_key_holds() -> None:
    w = writing("sync")
    _, raised = play(w.starting(Clock()), [("EVAL k (once)", b"hash")])
    assert isinstance(raised, rs.StoredStreamError)
    assert "the key holds a hash, not a stream" in str(raised)
    _, raised = play(w.starting(Clock()), [("EVAL k (once)", REFUSED)])
    assert raised is REFUSED  # mapped by the shell, which knows it was the first write


def test_a_truncated_end_counts_the_items_written_and_queued() -> None:
    writer = EntryWriter("k", maxlen=None, ttl=60, heartbeat=2)
    w = writing("sync", writer)
    writer.commands([b"{}"] * 3, None, 0.0)
    w.queue.extend([rs.TextDelta("x")] * 2)
    assert w.truncate()
    assert not w.truncate()  # one end only
    assert w.end is not None
    assert b"disposed after 5 item(s)" in (w.end[1] or b"")
    assert not w.ended((b"end", None), None)  # the source's end comes too late


@pytest.mark.parametrize(
    ("queued", "end", "now", "wait"),
    [
        (0, False, 0.5, 1.5),
        (0, False, 2.0, None),
        (1, False, 0.0, None),
        (0, True, 0.0, None),
    ],
    ids=["idle", "beat-due", "items", "the-end"],
)
def test_when_the_writer_waits(queued: int, end: bool, now: float, wait: float | None) -> None:
    w = writing("sync")
    w.writer.start(0.0)
    w.queue.extend([rs.TextDelta("x")] * queued)
    if end:
        w.ended((b"end", None), None)
    steps = w.steps(Clock(now), start=False)
    first = next(steps)
    assert (getattr(first, "seconds", None)) == wait


@pytest.mark.parametrize(
    ("shell", "waiting", "item", "admitted"),
    [
        ("sync", 0, rs.TextDelta("a"), "the item"),
        ("sync", 9, rs.TextDelta("a"), "the item"),  # a sync shell holds its source back itself
        ("sync", 0, "a raw line", TypeError),
        ("async", 0, rs.TextDelta("a"), "its payload"),
        ("async", 7, rs.TextDelta("a"), "its payload"),
        ("async", 8, rs.TextDelta("a"), rs.BufferOverflowError),
        ("async", 0, "a raw line", TypeError),
    ],
    ids=[
        "sync",
        "sync-full",
        "sync-not-encodable",
        "async",
        "async-full",
        "async-ran-on",
        "async-not-encodable",
    ],
)
def test_what_the_queue_admits(shell: str, waiting: int, item: Any, admitted: Any) -> None:
    w = writing(shell)
    w.queue.extend([b"{}"] * waiting)
    assert w.full == (waiting >= 4)
    if isinstance(admitted, type):
        with pytest.raises(admitted):
            w.admit(item)
    else:
        expected = item if admitted == "the item" else item_payload(item)
        assert w.admit(item) == expected

"""The follower's jobs as step machines: a key's one reader, and each follower (no I/O).

`reading` is what the thread (sync) or task (async) that reads a key for all
its followers does: `XREAD` from the `Feed`'s position until the stream ends
or the last follower leaves, then ends every follower. `following` is one
subscription of `rs.from_redis_stream`: open (resume), join the key's feed,
read the backlog the feed is ahead by, take the feed's batches, and join again
after being dropped for slowness. `failure` turns what went wrong into the
error a follower reports (mapped, and, when entries are gone, saying why).

The rules they follow are `rxstream.io.redis.feed`'s; the steps they yield are
`rxstream.io.redis.steps`'s, performed by the shells in
`rxstream.io.redis.follower`.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Generator
from typing import Any

from ...core.message import Arrived, partial_message
from ...errors import StreamError
from .client import map_redis_error
from .feed import Backlog, Feed, FollowPlan, Member, diagnosis, explained, explains
from .steps import Command, Diagnose, Emit, Join, Next, Open, Settle, Step, Steps, Wait

__all__ = ["failure", "following", "reading"]


def failure(exc: Exception, key: str, where: str) -> Generator[Step, Any, Exception]:
    """`exc` as a follower reports it: mapped, and when entries are gone, saying why
    (by the replies of a `Diagnose` step)."""
    error = map_redis_error(exc, key, where) or exc
    if not explains(error):
        return error
    return explained(error, (yield Diagnose(diagnosis(key))))


def reading(feed: Feed, where: str, poll: float, clock: Callable[[], float]) -> Steps:
    """The steps of a key's one reader: `XREAD` (blocking `poll` seconds at most) until the
    stream ends, then `feed.finish`; nothing more once the feed is closed (its last
    follower left)."""
    error: Exception | None
    try:
        while True:
            if feed.closed:
                return
            reply = yield Command(feed.command(clock(), poll))
            if feed.closed:
                return
            feed.received(reply, clock())
            if feed.reader.done:
                break
        error = feed.reader.failure
    except Exception as exc:
        error = exc
    if error is not None:
        error = yield from failure(error, feed.key, where)
    feed.finish(error)


def following(plan: FollowPlan, member: Member, where: str, disposed: Callable[[], bool]) -> Steps:
    """The steps of one follower (`member`, of `plan`) until its end, its error, or `disposed()`.

    Emits the items (a batch a step); raises the feed's end error, or what went wrong
    here, carrying as `partial` the `Message` of the deltas this follower emitted.
    """
    arrived = Arrived()
    try:
        yield Open(plan)
        while not plan.done:
            mark = yield Join(member)
            if mark is not None:
                yield from _backlog(Backlog(plan, mark), arrived)
                if plan.done:
                    break
                if not (yield Settle(member)):
                    continue  # dropped meanwhile, for being slow: join again
            yield from _live(member, disposed, arrived)
            if disposed() or not member.detached:
                break  # the end, or disposed; else dropped for being slow: join again
        plan.reader.check()
    except Exception as exc:
        error = yield from failure(exc, plan.key, where)
    else:
        if member.ended is None:
            return
        # The feed's error, made (mapped, explained) once and shared by every follower:
        # each raises it with a traceback of its own.
        error = member.ended.with_traceback(None)
    own = _with_partial(error, arrived)
    if own is error:
        raise error
    raise own from error.__cause__


def _backlog(backlog: Backlog, arrived: Arrived) -> Steps:
    """What the feed read before this follower joined: its entries after its own, by XRANGE."""
    while (command := backlog.command()) is not None:
        batch = backlog.received((yield Command(command)))
        if batch:
            yield _emitted(batch, arrived)


def _live(member: Member, disposed: Callable[[], bool], arrived: Arrived) -> Steps:
    """The feed's batches for `member`, until its end, disposal, or until it is dropped."""
    while not disposed():
        what, batch = yield Next(member)
        if batch is not None:
            yield _emitted(batch, arrived)
        elif what == "wait":
            yield Wait()
        else:
            return


def _emitted(batch: list[Any], arrived: Arrived) -> Emit:
    for item in batch:
        arrived.see(item)
    return Emit(batch)


def _with_partial(error: Exception, arrived: Arrived) -> Exception:
    """`error`, or a copy of it with the partial `Message` of what this follower read.

    A copy: the key's feed hands one error to every follower, and followers
    that resumed at different entries read different parts of the answer.
    """
    if not isinstance(error, StreamError) or error.partial is not None:
        return error
    partial = partial_message(arrived.items)
    if partial is None:
        return error
    own = copy.copy(error)
    own.partial = partial
    return own

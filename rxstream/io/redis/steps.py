"""The steps a Redis job asks for, and the two drivers that perform them: one per world.

Each job (a producer's writer, a key's reader, a follower) is written once, as
a generator (`rxstream.io.redis.writing`, `rxstream.io.redis.following`): it
yields a step, what to do next (send this command, wait, hand on this batch),
and is sent what came of it (the reply), or thrown the exception the step
raised. The generator decides everything (which command, what a reply means,
when a stream ends and with which error); it does no I/O and reads no clock
of its own (it is given one), so a test drives it with replies written by hand.

The sync and async shells only perform the steps: `drive` (sync) and `adrive`
(async) run a job with the shell's `perform`, which sends, waits or wakes in
its own world. Why one machine and two drivers rather than the sync code
generated from the async code (as httpcore does with unasync): the two worlds
differ in more than `await` (a thread and a `Condition` against a task, an
`Event` and the demand signal; a lock around the shared feed against none),
so a generated twin would still need hand-written parts, and the rules would
again sit in two places. Here the rules are in one place, and what is
particular to a world is only how a step is performed.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias

if TYPE_CHECKING:
    from .feed import FollowPlan, Member

__all__ = [
    "Command",
    "Diagnose",
    "Emit",
    "Fail",
    "Idle",
    "Join",
    "Next",
    "Open",
    "Settle",
    "Step",
    "Steps",
    "Turn",
    "Wait",
    "Write",
    "adrive",
    "arun",
    "drive",
    "run",
]


@dataclass(frozen=True, slots=True)
class Command:
    """Send one command; the reply comes back. Sent again while a cluster fails over,
    unless `failover` is False (a command whose second run would not be harmless)."""

    command: tuple[Any, ...]
    failover: bool = True


@dataclass(frozen=True, slots=True)
class Diagnose:
    """Send `commands` (in one pipeline) to explain an error: their replies, or None when
    they cannot be had (this step never raises: the error at hand is the one to report)."""

    commands: list[tuple[Any, ...]]


@dataclass(frozen=True, slots=True)
class Emit:
    """Hand `batch` (items, or `StreamEntry`s) to the consumer; nothing comes back."""

    batch: list[Any]


@dataclass(frozen=True, slots=True)
class Open:
    """Open a follower's plan: send `plan.opening()` and give `plan.opened` the replies
    (or take another follower's opening of the key, where the shell shares them)."""

    plan: FollowPlan


@dataclass(frozen=True, slots=True)
class Join:
    """Join the key's shared feed (the shell finds or starts it); the backlog mark comes
    back (`Feed.join`'s answer)."""

    member: Member


@dataclass(frozen=True, slots=True)
class Settle:
    """`Feed.settle(member)` on the feed joined last; whether it settled comes back."""

    member: Member


@dataclass(frozen=True, slots=True)
class Next:
    """`member.next()` on the feed joined last (under its lock, if it has one)."""

    member: Member


@dataclass(frozen=True, slots=True)
class Wait:
    """Wait until the member is woken (a batch or its end queued); a shell that cannot
    be woken while it waits (a thread) waits one poll at most."""


@dataclass(frozen=True, slots=True)
class Idle:
    """Wait up to `seconds` for work (`Writing.has_work`: items queued, or the end), or not
    at all when there is work already (checked where the shell's lock covers it); the
    machine then looks again."""

    seconds: float


@dataclass(frozen=True, slots=True)
class Turn:
    """Let the event loop run the others once (a source on it may add to the queue)."""


@dataclass(frozen=True, slots=True)
class Write:
    """The writer took a batch (the queue has room again): send `commands`, if any, in
    one pipeline."""

    commands: list[tuple[Any, ...]]


@dataclass(frozen=True, slots=True)
class Fail:
    """The write failed (`error`, to be passed downstream) or ended the stream early; the
    source is to be unsubscribed. `ended`: the source had ended already, and its end waits
    for the writer (a sync shell passes the error on there)."""

    error: Exception
    ended: bool


Step: TypeAlias = (
    Command | Diagnose | Emit | Open | Join | Settle | Next | Wait | Idle | Turn | Write | Fail
)
#: A job: yields steps, is sent their outcome (or thrown their exception), returns at its end.
Steps: TypeAlias = Generator[Step, Any, None]


def _advance(steps: Steps, reply: Any, error: Exception | None) -> Step | None:
    """The job's next step, sent the last step's reply or thrown its error; None at its end."""
    try:
        return steps.send(reply) if error is None else steps.throw(error)
    except StopIteration:
        return None


def drive(
    steps: Steps,
    perform: Callable[[Step], Any],
    lock: contextlib.AbstractContextManager[Any] | None = None,
) -> Iterator[list[Any]]:
    """Run `steps` in this thread, `perform`ing each step; yield the batches it emits.

    `lock` (a shell's lock around state other threads share) is held while the
    machine decides, never while a step is performed. An exception a step
    raises is thrown into the machine; what the machine raises leaves here.
    """
    guard = lock if lock is not None else contextlib.nullcontext()
    reply: Any = None
    error: Exception | None = None
    try:
        while True:
            with guard:
                step = _advance(steps, reply, error)
            if step is None:
                return
            reply = error = None
            if isinstance(step, Emit):
                yield step.batch
                continue
            try:
                reply = perform(step)
            except Exception as exc:
                error = exc
    finally:
        steps.close()


def run(
    steps: Steps,
    perform: Callable[[Step], Any],
    lock: contextlib.AbstractContextManager[Any] | None = None,
) -> None:
    """`drive` a job that emits nothing, to its end."""
    for batch in drive(steps, perform, lock):
        raise RuntimeError(f"a job that emits nothing emitted {len(batch)} item(s)")


async def adrive(
    steps: Steps, perform: Callable[[Step], Awaitable[Any]]
) -> AsyncIterator[list[Any]]:
    """`drive` on an event loop: each step is awaited (the machine runs on the loop only)."""
    reply: Any = None
    error: Exception | None = None
    try:
        while (step := _advance(steps, reply, error)) is not None:
            reply = error = None
            if isinstance(step, Emit):
                yield step.batch
                continue
            try:
                reply = await perform(step)
            except Exception as exc:
                error = exc
    finally:
        steps.close()


async def arun(steps: Steps, perform: Callable[[Step], Awaitable[Any]]) -> None:
    """`run` on an event loop."""
    async for batch in adrive(steps, perform):
        raise RuntimeError(f"a job that emits nothing emitted {len(batch)} item(s)")

"""What the I/O layer's entry points check of their arguments: caller mistakes, not StreamErrors.

One copy of each check for every module of the package: a count (`check_count`)
and the event loop an async source runs on (`loop_for`).
"""

from __future__ import annotations

import asyncio

from reactivex import abc
from reactivex.scheduler.eventloop import AsyncIOScheduler

__all__ = ["check_count", "loop_for"]


def check_count(name: str, value: object, *, minimum: int = 1) -> int:
    """`value` if it is an int of at least `minimum`; else the caller's mistake, named.

    Raises:
        TypeError: `value` is not an int (a bool is not a count either).
        ValueError: `value` is below `minimum`.

    >>> check_count("maxsize", 0)
    Traceback (most recent call last):
    ...
    ValueError: maxsize must be at least 1, got 0
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {value!r}")
    return value


def loop_for(
    scheduler: abc.SchedulerBase | None,
    *,
    what: str = "an async client or response",
    instead: str = "a sync client",
) -> asyncio.AbstractEventLoop:
    """The loop an async source runs on: an `AsyncIOScheduler`'s, else the running one.

    Args:
        scheduler: the scheduler the source was given or subscribed with.
        what: what needs the loop, for the message (e.g. "an async Redis client").
        instead: what to use without a loop, for the message.

    Raises:
        RuntimeError: no `AsyncIOScheduler` and no running loop (subscribed
            outside a coroutine).
    """
    if isinstance(scheduler, AsyncIOScheduler):
        loop: asyncio.AbstractEventLoop = scheduler._loop
        return loop
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        raise RuntimeError(
            f"{what} needs a running asyncio event loop: subscribe inside a coroutine "
            f"(or pass scheduler=AsyncIOScheduler(loop)), or use {instead}"
        ) from None

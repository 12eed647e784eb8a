"""Redis Cluster failover: which errors a failover explains, and the sends that ride it out.

A read that Redis unblocks because its master is failed over, and, with a
cluster client, a command that meets a master failing over, is sent again
with backoff for up to `FAILOVER_WINDOW` seconds (`Failover` decides each
wait; it reads the clock, sleeps nowhere). `send` / `send_all` and their
async twins `asend` / `asend_all` are the only I/O here: one command, or one
pipeline of commands, sent again while `Failover` says so.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import inspect
import time
from typing import Any

from .client import AsyncRedis, SyncRedis

__all__ = [
    "FAILOVER_WINDOW",
    "Failover",
    "asend",
    "asend_all",
    "failing_over",
    "pipeline_of",
    "refresh",
    "send",
    "send_all",
]

#: How long a command is sent again while a Redis Cluster fails a master over (seconds).
FAILOVER_WINDOW = 10.0


def failing_over(exc: Exception, client: object) -> bool:
    """Whether `exc` is what a command meets while a Redis Cluster master fails over.

    Redis answers a read blocked on a master that is being failed over
    (`CLUSTER FAILOVER`) with `-UNBLOCKED ... (master -> replica?)`, with any
    client. A cluster client (`redis.cluster.RedisCluster`, its asyncio twin)
    also meets the dead master's refused connection, `CLUSTERDOWN`, `TRYAGAIN`
    and `READONLY` (the old master, now a replica) until the cluster has
    promoted a replica; redis-py retries those at once, without waiting, so
    a failover that takes seconds outlasts its retries. Sent again, the
    command finds the new master: a read is safe to repeat, and so is a write
    of numbered entries (a reader skips an entry it has read).
    """
    if type(exc).__name__ == "ResponseError" and str(exc).startswith("UNBLOCKED"):
        return True
    if not hasattr(client, "nodes_manager"):  # not a cluster client: its retry policy rules
        return False
    try:
        errors = importlib.import_module("redis.exceptions")
    except ImportError:  # pragma: no cover - a client that is not redis-py
        return False
    if isinstance(
        exc, errors.AuthenticationError | errors.AuthorizationError | errors.MaxConnectionsError
    ):
        return False
    return isinstance(
        exc,
        errors.ConnectionError
        | errors.TimeoutError
        | errors.ClusterDownError
        | errors.TryAgainError
        | errors.ReadOnlyError
        | errors.SlotNotCoveredError,
    )


class Failover:
    """The waits between the attempts of one command while a cluster fails over."""

    def __init__(self) -> None:
        self._deadline: float | None = None
        self._delay = 0.05

    def wait(self, exc: Exception, client: object) -> float:
        """Seconds to wait before sending again; raises `exc` when not to send again."""
        if not failing_over(exc, client):
            raise exc
        now = time.monotonic()
        if self._deadline is None:
            self._deadline = now + FAILOVER_WINDOW
        if now >= self._deadline:
            raise exc
        delay = min(self._delay, self._deadline - now)
        self._delay = min(self._delay * 2, 1.0)
        return delay


def pipeline_of(client: Any, commands: list[tuple[Any, ...]]) -> Any:
    """A pipeline (no transaction) of `client` holding `commands`, not sent yet."""
    pipe = client.pipeline(transaction=False)
    for command in commands:
        pipe.execute_command(*command)
    return pipe


def _checked(replies: list[Any], client: object) -> list[Any]:
    """`replies` (of a pipeline sent with `raise_on_error=False`), or the one a failover explains
    raised."""
    for reply in replies:
        if isinstance(reply, Exception) and failing_over(reply, client):
            raise reply
    return replies


def send(client: SyncRedis, command: tuple[Any, ...]) -> Any:
    """`client.execute_command(*command)`, sent again while a master fails over."""
    failover = Failover()
    while True:
        try:
            return client.execute_command(*command)
        except Exception as exc:
            time.sleep(failover.wait(exc, client))
            refresh(client)


def refresh(client: object) -> None:
    """Have a sync cluster client ask the cluster again which node serves which slot.

    redis-py does so after a connection error, but a client whose command was
    under way on the master when it died can keep the dead master for its slots
    (seen with redis-py 8.1); asking again once the failover is done helps.
    """
    manager = getattr(client, "nodes_manager", None)
    initialize = getattr(manager, "initialize", None)
    if initialize is not None and not inspect.iscoroutinefunction(initialize):
        with contextlib.suppress(Exception):
            initialize()


async def asend(client: AsyncRedis, command: tuple[Any, ...]) -> Any:
    failover = Failover()
    while True:
        try:
            return await client.execute_command(*command)
        except Exception as exc:
            await asyncio.sleep(failover.wait(exc, client))


def send_all(
    client: SyncRedis, commands: list[tuple[Any, ...]], *, raise_on_error: bool = True
) -> list[Any]:
    """Send `commands` in one pipeline, again while a master fails over; the replies."""
    failover = Failover()
    while True:
        pipe = pipeline_of(client, commands)
        try:
            return _checked(pipe.execute(raise_on_error=raise_on_error), client)
        except Exception as exc:
            time.sleep(failover.wait(exc, client))


async def asend_all(
    client: AsyncRedis, commands: list[tuple[Any, ...]], *, raise_on_error: bool = True
) -> list[Any]:
    failover = Failover()
    while True:
        pipe = pipeline_of(client, commands)
        try:
            return _checked(await pipe.execute(raise_on_error=raise_on_error), client)
        except Exception as exc:
            await asyncio.sleep(failover.wait(exc, client))

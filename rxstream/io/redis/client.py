"""What the Redis Streams shells share: the client protocols, the client's facts, the errors.

The protocols type what rxstream uses of redis-py (any client with the same
`execute_command` and `pipeline` fits); `map_redis_error` is the one place
where Redis's errors become rxstream's; the rest reads a client (async or
not, where it connects, how long a read may block) and checks arguments.
"""

from __future__ import annotations

import importlib
import inspect
from datetime import timedelta
from typing import Any, Protocol

from ...errors import StoredStreamError, TransportError, excerpt

__all__ = [
    "TASKS",
    "AsyncPipeline",
    "AsyncRedis",
    "SyncPipeline",
    "SyncRedis",
    "as_seconds",
    "check_key",
    "is_async",
    "map_redis_error",
    "poll_of",
    "where_of",
]

#: The tasks (writers, feeds) under way: held here so that the loop does not lose them.
TASKS: set[Any] = set()


class SyncPipeline(Protocol):
    """What rxstream uses of a redis-py pipeline (`redis.Redis.pipeline()`)."""

    def execute_command(self, *args: Any, **options: Any) -> Any: ...

    def execute(self, raise_on_error: bool = ...) -> list[Any]: ...


class SyncRedis(Protocol):
    """What rxstream uses of a sync Redis client (`redis.Redis`, `redis.RedisCluster`)."""

    def execute_command(self, *args: Any, **options: Any) -> Any: ...

    def pipeline(self, transaction: bool = ..., shard_hint: Any = ...) -> SyncPipeline: ...


class AsyncPipeline(Protocol):
    """What rxstream uses of a redis-py asyncio pipeline."""

    def execute_command(self, *args: Any, **kwargs: Any) -> Any: ...

    async def execute(self, raise_on_error: bool = ...) -> list[Any]: ...


class AsyncRedis(Protocol):
    """What rxstream uses of an async Redis client (`redis.asyncio.Redis`)."""

    async def execute_command(self, *args: Any, **options: Any) -> Any: ...

    def pipeline(self, transaction: bool = ..., shard_hint: Any = ...) -> AsyncPipeline: ...


def map_redis_error(exc: BaseException, key: str, where: str) -> Exception | None:
    """The rxstream error for an exception of redis-py (or the socket), or None if not one.

    The one place where Redis's errors are mapped: a connection that fails is
    `TransportError` (saying where and what redis-py reported), a `WRONGTYPE`
    reply is `StoredStreamError`, any other error reply is `TransportError`.
    """
    if isinstance(exc, OSError):
        return TransportError(
            f"Redis at {where} failed on stream {key!r}: {type(exc).__name__}: {excerpt(str(exc))}"
        )
    try:
        exceptions = importlib.import_module("redis.exceptions")
    except ImportError:  # pragma: no cover - a client that is not redis-py
        return None
    if isinstance(exc, exceptions.ResponseError):
        text = str(exc)
        if "WRONGTYPE" in text:
            return StoredStreamError(
                key, f"the key holds a value of another type, not a stream ({excerpt(text)})"
            )
        return TransportError(
            f"Redis at {where} refused a command on stream {key!r}: {excerpt(text)}"
        )
    if isinstance(exc, exceptions.RedisError):
        return TransportError(
            f"Redis at {where} failed on stream {key!r}: {type(exc).__name__}: {excerpt(str(exc))}"
        )
    return None


def is_async(client: object) -> bool:
    return inspect.iscoroutinefunction(getattr(client, "execute_command", None))


def where_of(client: object) -> str:
    """Where the client connects (host:port or a socket path), never with a password."""
    nodes = getattr(getattr(client, "nodes_manager", None), "startup_nodes", None)
    if isinstance(nodes, dict) and nodes:  # a Redis Cluster client: its startup nodes
        names = sorted(str(name) for name in nodes)
        shown = ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")
        return f"cluster {shown}"
    pool = getattr(client, "connection_pool", None)
    kwargs = getattr(pool, "connection_kwargs", None)
    if isinstance(kwargs, dict):
        if kwargs.get("path"):
            return f"unix:{kwargs['path']}"
        if kwargs.get("host") is not None:
            return f"{kwargs['host']}:{kwargs.get('port', 6379)}"
    return type(client).__name__


def poll_of(client: object, default: float) -> float:
    # An XREAD that blocks longer than the client's socket timeout fails with a
    # timeout: stay well under it.
    pool = getattr(client, "connection_pool", None)
    kwargs = getattr(pool, "connection_kwargs", None)
    limit = kwargs.get("socket_timeout") if isinstance(kwargs, dict) else None
    if isinstance(limit, int | float) and limit > 0:
        return min(default, limit / 2)
    return default


def check_key(key: object) -> None:
    if not isinstance(key, str):
        raise TypeError(f"key must be a str, got {type(key).__name__}")
    if not key:
        raise ValueError("key must not be empty")


def as_seconds(name: str, value: object) -> float:
    if isinstance(value, timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, int | float) and not isinstance(value, bool):
        seconds = float(value)
    else:
        raise TypeError(f"{name} must be seconds (a number) or a timedelta, got {value!r:.80}")
    if not seconds > 0:
        raise ValueError(f"{name} must be positive, got {value!r}")
    return seconds

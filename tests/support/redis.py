"""Shared helpers for the Redis Streams tests: clients that fail fast, producing, following."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterable
from typing import Any, cast

import reactivex
import redis
import redis.asyncio
from redis.asyncio.retry import Retry as AsyncRetry
from redis.backoff import ExponentialBackoff, NoBackoff
from redis.retry import Retry

import rxstream as rs
from rxstream.testing.redis_server import RedisServer
from tests.support.sources import TIMEOUT, Outcome, arun, run

__all__ = [
    "TIMEOUT",
    "Outcome",
    "aclient",
    "afollow",
    "aproduce",
    "arun",
    "client",
    "follow",
    "in_thread",
    "produce",
    "run",
    "until",
    "xrange",
]


def client(server: RedisServer, *, retries: int = 0, **kwargs: Any) -> redis.Redis:
    """A sync client that retries `retries` times with a short backoff (none: fails at once)."""
    backoff = ExponentialBackoff(cap=0.05, base=0.01) if retries else NoBackoff()
    return redis.Redis(host=server.host, port=server.port, retry=Retry(backoff, retries), **kwargs)


def aclient(server: RedisServer, *, retries: int = 0, **kwargs: Any) -> redis.asyncio.Redis:
    """The async twin of `client`."""
    backoff = ExponentialBackoff(cap=0.05, base=0.01) if retries else NoBackoff()
    return redis.asyncio.Redis(
        host=server.host, port=server.port, retry=AsyncRetry(backoff, retries), **kwargs
    )


def produce(r: redis.Redis, key: str, items: Iterable[Any], **options: Any) -> Outcome:
    """Write `items` through `to_redis_stream` with a sync client; what passed downstream."""
    return run(reactivex.from_iterable(list(items)).pipe(rs.to_redis_stream(r, key, **options)))


def follow(r: redis.Redis, key: str, **options: Any) -> Outcome:
    """Read a stream with a sync client on the current thread, to its end."""
    return run(rs.from_redis_stream(r, key, **options))


async def aproduce(
    r: redis.asyncio.Redis, key: str, items: Iterable[Any], **options: Any
) -> Outcome:
    """Write `items` through `to_redis_stream` with an async client."""
    return await arun(
        reactivex.from_iterable(list(items)).pipe(rs.to_redis_stream(r, key, **options))
    )


async def afollow(r: redis.asyncio.Redis, key: str, **options: Any) -> Outcome:
    """Read a stream with an async client, to its end."""
    return await arun(rs.from_redis_stream(r, key, **options))


def xrange(
    r: redis.Redis, key: str, count: int | None = None
) -> list[tuple[bytes, dict[bytes, bytes]]]:
    """The entries of a stream as a sync client without `decode_responses` returns them."""
    return cast(list[tuple[bytes, dict[bytes, bytes]]], r.xrange(key, count=count))


def in_thread(target: Any) -> threading.Thread:
    """Start `target` on a daemon thread."""
    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread


async def until(condition: Any, timeout: float = TIMEOUT) -> None:
    """Wait (bounded) on the loop until `condition()` holds."""
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.005)

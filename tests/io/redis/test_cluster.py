"""`to_redis_stream` and `from_redis_stream` on a Redis Cluster, through a failover.

One cluster for the module (3 masters, 3 replicas, `tests/support/redis_cluster.py`),
driven with redis-py's cluster clients, sync and async. A master is failed over
mid-stream, gracefully (`CLUSTER FAILOVER` on its replica) and by killing it:
every follower gets every item exactly once, or ends with a clear
`rs.StreamError` (entries lost with the killed master, named), never hangs.
Skips where `redis-server`/`redis-cli` are missing, except where CI requires them.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import reactivex
from reactivex.scheduler import ThreadPoolScheduler
from reactivex.subject import Subject

import rxstream as rs
from tests.support.redis import TIMEOUT, Outcome, arun, run
from tests.support.redis_cluster import RedisClusterNodes, cluster_tools

ITEMS = [rs.TextDelta(f"token {i} ") for i in range(40)]
REQUIRED = ("RXSTREAM_REQUIRE_REDIS", "RXSTREAM_REQUIRE_BROWSER", "RXSTREAM_REQUIRE_NODE")


@pytest.fixture(scope="module")
def cluster() -> Iterator[RedisClusterNodes]:
    if cluster_tools() is None:
        reason = (
            "the Redis Cluster tests need redis-server and redis-cli on the PATH "
            "(apt-get install redis-server)"
        )
        # CI installs them and sets these: there, a skip would hide a gap.
        required = [name for name in REQUIRED if os.environ.get(name)]
        if required:
            pytest.fail(f"{reason} ({', '.join(required)} set)", pytrace=False)
        pytest.skip(reason)
    with RedisClusterNodes() as nodes:
        yield nodes


def test_the_cluster_has_three_masters_with_a_replica_each(cluster: RedisClusterNodes) -> None:
    roles = [cluster.node(port).execute_command("ROLE")[0] for port in cluster.ports]  # type: ignore[no-untyped-call]
    assert sorted(roles) == [b"master"] * 3 + [b"slave"] * 3


def test_streams_go_through_a_cluster_sync(cluster: RedisClusterNodes) -> None:
    r = cluster.client()
    keys = ["answer:1", "answer:2", "{chat:7}:answer"]  # three slots (and a hash tag)
    assert len({r.keyslot(key) for key in keys}) == 3  # type: ignore[no-untyped-call]
    for key in keys:
        written = run(reactivex.from_iterable(ITEMS).pipe(rs.to_redis_stream(r, key)))
        assert written.completed, written.error
        read = run(rs.from_redis_stream(r, key, ids=True))
        assert read.completed, read.error
        assert [e.item for e in read.items] == ITEMS
        resumed = run(rs.from_redis_stream(r, key, after=read.items[9].id))
        assert resumed.items == ITEMS[10:]
    refused = run(reactivex.from_iterable(ITEMS).pipe(rs.to_redis_stream(r, keys[0])))
    assert isinstance(refused.error, rs.StoredStreamError)  # one stream per key, as ever
    r.close()


def test_streams_go_through_a_cluster_async(cluster: RedisClusterNodes) -> None:
    async def main() -> None:
        r = cluster.async_client()
        for key in ("async:1", "{chat:8}:answer"):
            written = await arun(reactivex.from_iterable(ITEMS).pipe(rs.to_redis_stream(r, key)))
            assert written.completed, written.error
            reads = await asyncio.gather(*(arun(rs.from_redis_stream(r, key)) for _ in range(5)))
            for read in reads:
                assert read.completed, read.error
                assert read.items == ITEMS
        missing = await arun(rs.from_redis_stream(r, "never", after="1-0"))
        assert isinstance(missing.error, rs.StoredStreamError)
        assert "cluster 127.0.0.1:" not in str(missing.error)  # said by the key, not a failure
        await r.aclose()

    asyncio.run(main())


def test_an_error_names_the_cluster(cluster: RedisClusterNodes) -> None:
    r = cluster.client()
    r.set("plain", "a string")
    read = run(rs.from_redis_stream(r, "plain"))
    assert isinstance(read.error, rs.StoredStreamError)
    assert "not a stream" in str(read.error)
    from rxstream.io.redis.client import where_of

    assert where_of(r).startswith("cluster 127.0.0.1:")
    r.close()


class Followers:
    """Sync followers on a thread pool and async ones on a loop of their own, of one key."""

    def __init__(self, cluster: RedisClusterNodes, key: str, count: int) -> None:
        self.sync = [Outcome() for _ in range(count)]
        self.async_ = [Outcome() for _ in range(count)]
        self._pool = ThreadPoolScheduler(count)
        r = self._client = cluster.client()
        for outcome in self.sync:
            rs.from_redis_stream(r, key, heartbeat_timeout=5, scheduler=self._pool).subscribe(
                outcome.on_next, outcome.on_error, outcome.on_completed
            )
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self._aclient = cluster.async_client()

        def subscribe() -> None:
            for outcome in self.async_:
                rs.from_redis_stream(self._aclient, key, heartbeat_timeout=5).subscribe(
                    outcome.on_next, outcome.on_error, outcome.on_completed
                )

        self._loop.call_soon_threadsafe(subscribe)

    @property
    def all(self) -> list[Outcome]:
        return self.sync + self.async_

    def wait(self) -> None:
        for outcome in self.all:
            assert outcome.ended.wait(3 * TIMEOUT), "a follower hung"
        asyncio.run_coroutine_threadsafe(self._aclient.aclose(), self._loop).result(TIMEOUT)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(TIMEOUT)
        self._loop.close()
        self._pool.executor.shutdown(wait=True)
        self._client.close()


def every_item_once_or_a_clear_error(outcome: Outcome, items: list[Any]) -> bool:
    """Completed with every item, in order; or ended by a StreamError after a prefix of them.

    Returns whether it completed.
    """
    if outcome.completed:
        assert outcome.items == items
        return True
    assert isinstance(outcome.error, rs.StreamError), outcome.error
    assert outcome.items == items[: len(outcome.items)]  # in order, none twice, none skipped
    return False


@pytest.mark.parametrize("how", ["failover", "kill"])
def test_a_master_fails_over_mid_stream(cluster: RedisClusterNodes, how: str) -> None:
    key = f"{{failover:{how}}}:answer"
    producer = cluster.client()
    subject: Subject[Any] = Subject()
    written = Outcome()
    subject.pipe(rs.to_redis_stream(producer, key, heartbeat=0.2)).subscribe(
        written.on_next, written.on_error, written.on_completed
    )
    followers = Followers(cluster, key, 3)
    half = len(ITEMS) // 2
    for item in ITEMS[:half]:
        subject.on_next(item)
        time.sleep(0.01)
    deadline = time.monotonic() + TIMEOUT
    while any(len(o.items) < half for o in followers.all) and time.monotonic() < deadline:
        time.sleep(0.01)
    killed = None
    if how == "failover":
        old, new = cluster.failover(key)
        assert cluster.master_of(key) == new != old
    else:
        killed = cluster.kill_master(key)
    for item in ITEMS[half:]:
        subject.on_next(item)
        time.sleep(0.01)
    subject.on_completed()
    assert written.ended.wait(3 * TIMEOUT)
    followers.wait()
    # A follower that joins after the failover reads the stream from the new master.
    reader = cluster.client()
    late = run(rs.from_redis_stream(reader, key, heartbeat_timeout=5))
    reader.close()
    outcomes = [*followers.all, late]
    if how == "failover":
        # Nothing is lost in a graceful failover: every item reaches everyone.
        assert written.completed, written.error
        for outcome in outcomes:
            assert every_item_once_or_a_clear_error(outcome, ITEMS), outcome.error
    else:
        # Writes the killed master had acknowledged but not yet passed to its replica
        # are lost: a follower that still needed them is told which (never silence).
        assert written.completed or isinstance(written.error, rs.StreamError)
        for outcome in outcomes:
            every_item_once_or_a_clear_error(outcome, ITEMS)
        assert killed is not None
        cluster.restart(killed)
    producer.close()


def test_the_example_runs_on_a_cluster(cluster: RedisClusterNodes) -> None:
    pytest.importorskip("fastapi", reason="the example needs fastapi: pip install -e '.[example]'")
    from examples.fastapi_chat.app import PREFIX
    from rxstream.testing import FakeLLMServer
    from tests.support.chat_app import ANSWER, EXPECTED, read, read_on_another_worker, start
    from tests.support.launch import launched

    url = f"redis://127.0.0.1:{cluster.ports[0]}/0"
    with (
        FakeLLMServer(ANSWER) as model,
        launched(redis_url=url, base_url=model.base_url, env={"CHAT_REDIS_CLUSTER": "1"}) as app,
    ):
        chat_id, _ = start(app)
        first = read(app, chat_id, stop_after=3)
        assert first is not None
        rest = read_on_another_worker(
            app, chat_id, first.worker, last_event_id=first.entries[-1].id
        )
        assert rest.complete
        assert [e.item for e in first.entries + rest.entries] == EXPECTED
    # The stream and its metadata are in the cluster, each in its own key.
    r = cluster.client()
    assert r.type(f"{PREFIX}{chat_id}") == b"stream"
    assert r.exists(f"{PREFIX}{chat_id}:meta") == 1
    r.close()

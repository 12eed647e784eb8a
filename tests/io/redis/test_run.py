"""A run stored in Redis and followed from it (rxstream's own format carries a run's items).

The run's items (written by hand in `tests/support/run_items.py`) go through `rs.to_redis_stream`:
a run waiting for approval is read back whole (its conversation and pending call included), a
follower that joins mid-step gets the rest, and `sse_response` resumes a page mid-step from its
`Last-Event-ID`.
"""

from __future__ import annotations

import time
from typing import Any

import httpx
import reactivex
from reactivex.scheduler import ThreadPoolScheduler
from reactivex.subject import Subject
from starlette.requests import Request
from starlette.responses import Response

import rxstream as rs
from rxstream.core.continuation import replay
from rxstream.serve import sse_response
from rxstream.testing.redis_server import RedisServer
from tests.support.codec_strategies import every_field
from tests.support.redis import TIMEOUT, Outcome, client, follow, produce
from tests.support.run_items import DELETE, FIRST, STEP_1
from tests.support.serve import app_of, items_of, serving

#: Where step 1 is cut: its first call begun, not yet whole.
MID_STEP = 2


def test_a_run_waiting_for_approval_is_read_back_whole(redis_server: RedisServer) -> None:
    r = client(redis_server)
    produce(r, "run:1", FIRST)
    back = follow(r, "run:1")
    assert back.completed
    assert back.items == FIRST
    assert [every_field(i) for i in back.items] == [every_field(i) for i in FIRST]
    end = back.items[-1]
    assert isinstance(end, rs.RunEnd)
    assert end.pending == (DELETE,)
    assert end.messages[0] == {"role": "user", "content": "Weather in Paris, and clear the cache?"}
    assert isinstance(end.messages[1], rs.Message)


def test_a_follower_joining_mid_step_gets_the_rest(redis_server: RedisServer) -> None:
    r = client(redis_server)
    subject: Subject[Any] = Subject()
    written = Outcome()
    subject.pipe(rs.to_redis_stream(r, "run:live")).subscribe(
        written.on_next, written.on_error, written.on_completed
    )
    for item in FIRST[: MID_STEP + 1]:
        subject.on_next(item)
    assert isinstance(FIRST[MID_STEP], rs.ToolCallDelta)
    assert FIRST[MID_STEP] in STEP_1
    # A page saw the run up to mid-step (ids included), then lost its connection.
    deadline = time.monotonic() + TIMEOUT
    seen: list[Any] = []
    while time.monotonic() < deadline:
        seen = [e for e in r.xrange("run:live") if e[1].get(b"kind") == b"item"]
        if len(seen) > MID_STEP:
            break
        time.sleep(0.002)
    last = seen[MID_STEP][0].decode()
    pool = ThreadPoolScheduler(1)
    joined = Outcome()
    rs.from_redis_stream(
        r, "run:live", after=last, heartbeat_timeout=TIMEOUT, scheduler=pool
    ).subscribe(joined.on_next, joined.on_error, joined.on_completed)
    for item in FIRST[MID_STEP + 1 :]:
        subject.on_next(item)
    subject.on_completed()
    assert joined.ended.wait(TIMEOUT)
    assert joined.completed
    assert joined.items == FIRST[MID_STEP + 1 :]
    pool.executor.shutdown(wait=True)


def test_sse_response_resumes_a_run_mid_step(redis_server: RedisServer) -> None:
    r = client(redis_server)
    produce(r, "run:2", FIRST)
    ids = [entry.id for entry in follow(r, "run:2", ids=True).items]

    def endpoint(request: Request) -> Response:
        return sse_response(
            lambda after: rs.from_redis_stream(r, "run:2", after=after, ids=True),
            dialect="rxstream",
            keepalive=None,
        )

    with serving(app_of(endpoint)) as url:
        whole = httpx.get(f"{url}/sse").content
        rest = httpx.get(f"{url}/sse", headers={"Last-Event-ID": ids[MID_STEP]}).content
    assert items_of(whole) == FIRST
    assert items_of(rest) == FIRST[MID_STEP + 1 :]


def _cite(url: str) -> rs.Citation:
    raw = {"type": "web_search_result_location", "url": url, "encrypted_index": "Eo1=="}
    return rs.Citation(raw["type"], url, start=9, end=20, raw=raw, whole_block=True)


def test_a_run_keeps_its_cited_text_blocks_through_redis(redis_server: RedisServer) -> None:
    # An Anthropic step whose text blocks came with citations: the run's items and its
    # conversation come back from Redis with each block's citations (the next turn needs them).
    cited = (_cite("https://a/1"), _cite("https://b/2"))
    deltas: list[rs.Delta] = [
        rs.TextDelta("It says: "),
        rs.TextBlockStart(),  # a block starts right after plain text (the decoder marks it)
        rs.TextDelta("sky is blue"),
        *cited,
        rs.TextDelta("."),
        rs.TextBlockStart(),
        rs.TextDelta(" Rain"),
        rs.EmptyCitations(21, 26),  # a block whose citations list came empty
        rs.TextDelta(" Also."),
        rs.TextBlockStart(),  # two plain blocks side by side
        rs.TextDelta(" Done."),
        rs.Finish("stop"),
    ]
    step = [
        rs.StepStart(1, "anthropic", "claude-sonnet-4-5"),
        *deltas,
        rs.StepEnd(1, "stop"),
    ]
    message = reactivex.from_iterable(deltas).pipe(rs.accumulate_message()).run()
    assert message.blocks[1] == rs.TextBlock("sky is blue", cited)
    assert message.blocks[2:] == (
        rs.TextBlock("."),
        rs.TextBlock(" Rain", ()),
        rs.TextBlock(" Also."),
        rs.TextBlock(" Done."),
    )
    items = [*step, rs.RunEnd(({"role": "user", "content": "Sky?"}, message), None, 1)]
    r = client(redis_server)
    produce(r, "run:cited", items)
    back = follow(r, "run:cited")
    assert back.completed
    assert [every_field(i) for i in back.items] == [every_field(i) for i in items]
    end = back.items[-1]
    assert isinstance(end, rs.RunEnd)
    assert end.messages[1].blocks == message.blocks
    assert [c.raw for c in end.messages[1].blocks[1].citations] == [c.raw for c in cited]
    assert [b.citations for b in end.messages[1].blocks] == [None, cited, None, (), None, None]
    # The run's Message sent again as deltas (replay): the same blocks.
    turn = end.messages[1]
    assert isinstance(turn, rs.Message)
    again = reactivex.from_iterable(replay(turn)).pipe(rs.accumulate_message()).run()
    assert again.blocks == message.blocks

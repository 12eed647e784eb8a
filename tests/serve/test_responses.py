"""`sse_response` served by uvicorn on 127.0.0.1, read by httpx: the whole path a browser sees.

Upstreams are real too: `FakeLLMServer` on another loopback port, read with `rs.from_request`
(async and sync clients), or rxstream sources over generators that count what they produced.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator, MutableMapping
from typing import Any

import httpx
import pytest
import reactivex
from reactivex import operators as ops
from reactivex.scheduler import ThreadPoolScheduler
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import Response

import rxstream as rs
from rxstream.core import wire as codec
from rxstream.core.dialects.sse_encoder import SSEEncoder
from rxstream.models import StreamEntry
from rxstream.serve import DEFAULT_HEADERS, SSEResponse, sse_response
from rxstream.testing.checks import minimal_body
from rxstream.testing.server import Fail, FakeLLMServer, Say, Scenario, Stall
from tests.support.serve import app_of, events_of, items_of, serving

PIECES = ("Hel", "lo", ", ", "world")
POOL = ThreadPoolScheduler(4)


def upstream(fake: FakeLLMServer, kind: str) -> tuple[rs.Observable[rs.Delta], Callable[[], Any]]:
    """A pipeline from_request -> sse_frames -> decode against `fake`; and its client's closer."""
    payload = minimal_body("openai-chat")
    if kind == "async":
        aclient = httpx.AsyncClient()
        source = rs.from_request(aclient, "POST", fake.url, json=payload)
        closer: Callable[[], Any] = aclient.aclose
    else:
        client = httpx.Client()
        source = rs.from_request(client, "POST", fake.url, json=payload, scheduler=POOL)
        closer = client.close
    return source.pipe(rs.sse_frames(), rs.decode("openai-chat")), closer


def wait_until(condition: Callable[[], bool], timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


# --------------------------------------------------------------------------- whole streams


@pytest.mark.parametrize("kind", ["async", "sync"])
def test_a_provider_stream_served_in_rxstream_format(kind: str) -> None:
    with FakeLLMServer(Scenario.text(*PIECES, delay=0.01)) as fake:

        def endpoint(request: Request) -> Response:
            source, closer = upstream(fake, kind)
            return sse_response(source, dialect="rxstream", background=BackgroundTask(closer))

        with serving(app_of(endpoint)) as url:
            response = httpx.get(f"{url}/sse")
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/event-stream; charset=utf-8"
    assert response.headers["cache-control"] == "no-cache"
    assert response.headers["x-accel-buffering"] == "no"
    assert "content-length" not in response.headers
    items = items_of(response.content)
    assert [d.text for d in items if isinstance(d, rs.TextDelta)] == list(PIECES)
    assert isinstance(items[-1], rs.Usage)
    frames = events_of(response.content)
    assert [f.id for f in frames] == [str(n) for n in range(1, len(frames) + 1)]
    assert frames[-1].event == "done"


@pytest.mark.parametrize("kind", ["async", "sync"])
def test_a_provider_stream_re_served_as_openai_chat(kind: str) -> None:
    with FakeLLMServer(Scenario.text(*PIECES)) as fake:

        def endpoint(request: Request) -> Response:
            source, closer = upstream(fake, kind)
            return sse_response(source, model="proxy", background=BackgroundTask(closer))

        with serving(app_of(endpoint)) as url:
            body = httpx.get(f"{url}/sse").content
    assert body.endswith(b"data: [DONE]\n\n")
    deltas: list[rs.Delta] = []
    reactivex.of(body).pipe(rs.lines(), rs.sse_frames(), rs.decode()).subscribe(deltas.append)
    assert "".join(d.text for d in deltas if isinstance(d, rs.TextDelta)) == "".join(PIECES)
    assert b'"model":"proxy"' in body


@pytest.mark.parametrize(
    ("format", "marker"),
    [
        # (id 1 is the response's id and model, a `metadata` event)
        ("rxstream", b'event: error\nid: 3\ndata: {"type":"error","error":"ProviderError"'),
        ("openai-chat", b'id: 3\ndata: {"error":{"message":"overloaded","type":"server_error"'),
        ("anthropic", b'event: error\nid: 5\ndata: {"type":"error","error":{"type":"server_error"'),
    ],
)
def test_an_error_mid_stream_is_the_formats_error_event_and_a_clean_end(
    format: str, marker: bytes
) -> None:
    scenario = Scenario(
        steps=(Say(rs.TextDelta("Hi")), Fail("overloaded", type="server_error", code=529))
    )
    with FakeLLMServer(scenario) as fake:

        def endpoint(request: Request) -> Response:
            source, closer = upstream(fake, "async")
            return sse_response(source, dialect=format, background=BackgroundTask(closer))

        with serving(app_of(endpoint)) as url, httpx.stream("GET", f"{url}/sse") as response:
            body = response.read()  # a cut response would raise here
    assert response.status_code == 200
    assert marker in body
    assert body.endswith(b"\n\n")
    if format == "rxstream":
        error = codec.decode(json.loads(events_of(body)[-1].data))
        assert isinstance(error, rs.ProviderError)
        assert (error.message, error.type, error.code) == ("overloaded", "server_error", 529)


def test_a_pipeline_mistake_sends_the_error_event_ends_the_body_and_is_raised(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def endpoint(request: Request) -> Response:
        return sse_response(reactivex.of(rs.TextDelta("Hi"), rs.ChatChunk({"choices": []})))

    with serving(app_of(endpoint)) as url, httpx.stream("GET", f"{url}/sse") as response:
        body = response.read()
    assert b"internal error in the stream (TypeError)" in body
    assert wait_until(lambda: "Exception in ASGI application" in caplog.text)


# --------------------------------------------------------------------------- disconnects


def leave_after_first_event(url: str) -> bytes:
    """Read until one whole event arrived, then leave (closing the connection)."""
    seen = b""
    with httpx.stream("GET", url) as response:
        for chunk in response.iter_raw():
            seen += chunk
            if b"\n\n" in seen:
                break
    return seen


@pytest.mark.parametrize("kind", ["async", "sync"])
def test_a_client_that_leaves_disposes_the_upstream(kind: str) -> None:
    # The provider stalls after its first piece: nothing is being written when the client
    # leaves, so only the disconnect watch can notice it.
    opening = Scenario.text("Hel", "lo").steps[:2]  # the role chunk and "Hel"
    closed = threading.Event()
    with FakeLLMServer(Scenario(steps=(*opening, Stall(20)))) as fake:

        def endpoint(request: Request) -> Response:
            source, closer = upstream(fake, kind)

            async def close() -> None:
                result = closer()
                if asyncio.iscoroutine(result):
                    await result
                closed.set()

            return sse_response(source, dialect="rxstream", background=BackgroundTask(close))

        with serving(app_of(endpoint)) as url:
            first = leave_after_first_event(f"{url}/sse")
            assert fake.wait_for_disconnect(timeout=10)
            assert closed.wait(10)
        assert fake.completed == 0
    # The first event is the response's id and model, before "Hel".
    assert first.startswith(b'event: metadata\nid: 1\ndata: {"type":"metadata","data":{"id"')


def test_a_stream_kept_for_resumption_runs_to_its_end_after_the_client_left() -> None:
    scenario = Scenario.text(*PIECES, delay=0.05)
    seen: list[rs.Delta] = []
    finished = threading.Event()
    with FakeLLMServer(scenario) as fake:

        def endpoint(request: Request) -> Response:
            source, closer = upstream(fake, "async")

            async def done() -> None:
                await closer()
                finished.set()

            # What a generation writing to Redis looks like from here: a side effect per item.
            return sse_response(
                source.pipe(ops.do_action(seen.append)),
                dialect="rxstream",
                keep_for_resume=True,
                background=BackgroundTask(done),
            )

        with serving(app_of(endpoint)) as url:
            leave_after_first_event(f"{url}/sse")
            assert finished.wait(10)
        assert (fake.disconnects, fake.completed) == (0, 1)
    assert [d.text for d in seen if isinstance(d, rs.TextDelta)] == list(PIECES)


def test_a_kept_stream_that_fails_after_the_client_left_still_ends() -> None:
    scenario = Scenario(
        steps=(Say(rs.TextDelta("Hi")), Fail("overloaded", type="server_error", delay=0.3))
    )
    finished = threading.Event()
    errors: list[Exception] = []
    with FakeLLMServer(scenario) as fake:

        def endpoint(request: Request) -> Response:
            source, closer = upstream(fake, "async")

            async def done() -> None:
                await closer()
                finished.set()

            return sse_response(
                source.pipe(ops.do_action(on_error=errors.append)),
                dialect="rxstream",
                keep_for_resume=True,
                background=BackgroundTask(done),
            )

        with serving(app_of(endpoint)) as url:
            leave_after_first_event(f"{url}/sse")
            assert finished.wait(10)
    assert [type(e) for e in errors] == [rs.ProviderError]


# --------------------------------------------------------------------------- backpressure

EVENT_TEXT = "x" * 2000
TOTAL = 1000  # 2 MB of events: far more than the buffers on the way hold (~150 kB)
SMALL_RCVBUF = [(socket.SOL_SOCKET, socket.SO_RCVBUF, 8192)]
SMALL_SNDBUF = 16384


class Counter:
    def __init__(self) -> None:
        self.produced = 0
        self.closed = threading.Event()

    def lines(self) -> Iterator[str]:
        try:
            for n in range(TOTAL):
                self.produced += 1
                yield f"{n} {EVENT_TEXT}"
        finally:
            self.closed.set()

    async def alines(self) -> AsyncIterator[str]:
        try:
            for n in range(TOTAL):
                self.produced += 1
                yield f"{n} {EVENT_TEXT}"
        finally:
            self.closed.set()


def settled(counter: Counter, timeout: float = 30.0) -> int:
    """Wait until the producer stops producing (unchanged for a while); its count."""
    deadline = time.monotonic() + timeout
    last, still = -1, 0
    while still < 10:
        assert time.monotonic() < deadline, f"the producer never stopped ({counter.produced})"
        time.sleep(0.1)
        still = still + 1 if counter.produced == last else 0
        last = counter.produced
    return last


@pytest.mark.parametrize("kind", ["async", "sync"])
def test_a_client_that_never_reads_holds_the_source_then_leaving_disposes_it(kind: str) -> None:
    counter = Counter()

    def endpoint(request: Request) -> Response:
        if kind == "async":
            source = rs.from_lines(counter.alines())
        else:
            source = rs.from_lines(counter.lines(), scheduler=POOL)
        return sse_response(source.pipe(ops.map(rs.TextDelta)), dialect="rxstream", maxsize=8)

    # Small socket buffers: the kernels take little of what is sent.
    with serving(app_of(endpoint), sndbuf=SMALL_SNDBUF) as url:
        with (
            httpx.Client(transport=httpx.HTTPTransport(socket_options=SMALL_RCVBUF)) as client,
            client.stream("GET", f"{url}/sse") as response,
        ):
            produced = settled(counter)
            # Held: what was made fits in the socket buffers, uvicorn's 64 KiB and 8 events.
            assert produced < TOTAL // 4
            # Nothing was lost meanwhile: the first events arrive whole and in order.
            seen = b""
            for chunk in response.iter_raw():
                seen += chunk
                if seen.count(b"event: text") > 100:
                    break
            texts = [item.text for item in items_of(seen[: seen.rindex(b"\n\n") + 2])]
            assert texts[:100] == [f"{n} {EVENT_TEXT}" for n in range(100)]
        # The client left (its read window full again): the source is disposed.
        assert counter.closed.wait(10)
    assert counter.produced < TOTAL


# --------------------------------------------------------------------------- resumption


ENTRIES = [StreamEntry(f"1700-{n}", rs.TextDelta(t)) for n, t in enumerate(PIECES)]


def resumable(after: str | None) -> rs.Observable[StreamEntry]:
    """A stand-in for rs.from_redis_stream(..., after=after, ids=True) over ENTRIES."""
    if after is None:
        return reactivex.from_iterable(ENTRIES)
    ids = [e.id for e in ENTRIES]
    if after not in ids:
        raise ValueError(f"malformed or unknown Last-Event-ID {after!r}")
    return reactivex.from_iterable(ENTRIES[ids.index(after) + 1 :])


def test_last_event_id_resumes_exactly_after_the_last_item_seen() -> None:
    def endpoint(request: Request) -> Response:
        return sse_response(resumable, dialect="rxstream")

    with serving(app_of(endpoint)) as url:
        whole = httpx.get(f"{url}/sse").content
        rest = httpx.get(f"{url}/sse", headers={"Last-Event-ID": "1700-1"}).content
        end = httpx.get(f"{url}/sse", headers={"Last-Event-ID": "1700-3"}).content
        bad = httpx.get(f"{url}/sse", headers={"Last-Event-ID": "nonsense"})
    assert items_of(whole) == [e.item for e in ENTRIES]
    assert [(f.event, f.id) for f in events_of(whole)][-1] == ("done", "1700-3")
    assert items_of(rest) == [e.item for e in ENTRIES[2:]]
    assert [f.id for f in events_of(rest)] == ["1700-2", "1700-3", "1700-3"]
    # Resumed after the end: only the end again, with the same id.
    assert [(f.event, f.id) for f in events_of(end)] == [("done", "1700-3")]
    assert bad.status_code == 400
    assert "malformed or unknown Last-Event-ID 'nonsense'" in bad.text


def test_last_event_id_given_serves_a_request_without_the_header() -> None:
    # A reloaded page opens a new EventSource, which sends no header: the handler passes
    # the id the page kept (here a query parameter); the header, when sent, is newer.
    def endpoint(request: Request) -> Response:
        return sse_response(resumable, dialect="rxstream", after=request.query_params.get("after"))

    with serving(app_of(endpoint)) as url:
        rest = httpx.get(f"{url}/sse", params={"after": "1700-1"}).content
        end = httpx.get(f"{url}/sse", params={"after": "1700-3"}).content
        header_wins = httpx.get(
            f"{url}/sse", params={"after": "1700-0"}, headers={"Last-Event-ID": "1700-2"}
        ).content
        bad = httpx.get(f"{url}/sse", params={"after": "nonsense"})
        broken = httpx.get(f"{url}/sse", params={"after": "1700-1\nid: 9"})
    assert items_of(rest) == [e.item for e in ENTRIES[2:]]
    assert [(f.event, f.id) for f in events_of(end)] == [("done", "1700-3")]
    assert items_of(header_wins) == [ENTRIES[3].item]
    assert bad.status_code == 400
    assert "malformed or unknown Last-Event-ID 'nonsense'" in bad.text
    assert broken.status_code == 400


def test_last_event_id_given_with_a_plain_observable_ids_its_closing_event() -> None:
    def endpoint(request: Request) -> Response:
        return sse_response(reactivex.empty(), dialect="rxstream", after="1700-3")

    with serving(app_of(endpoint)) as url:
        body = httpx.get(f"{url}/sse").content
    assert [(f.event, f.id) for f in events_of(body)] == [("done", "1700-3")]


def test_last_event_id_must_be_a_str() -> None:
    with pytest.raises(TypeError, match="after must be a str, got int"):
        sse_response(reactivex.empty(), after=3)  # type: ignore[arg-type]


def test_a_plain_observable_ignores_last_event_id() -> None:
    def endpoint(request: Request) -> Response:
        return sse_response(reactivex.from_iterable(ENTRIES), dialect="rxstream")

    with serving(app_of(endpoint)) as url:
        body = httpx.get(f"{url}/sse", headers={"Last-Event-ID": "1700-1"}).content
    assert items_of(body) == [e.item for e in ENTRIES]


# --------------------------------------------------------------------------- keep-alives


def test_keepalive_comments_while_the_source_is_silent() -> None:
    gate = threading.Event()

    async def slow() -> AsyncIterator[str]:
        yield "first"
        await asyncio.to_thread(gate.wait, 10)
        yield "second"

    def endpoint(request: Request) -> Response:
        source = rs.from_lines(slow()).pipe(ops.map(rs.TextDelta))
        return sse_response(source, dialect="rxstream", keepalive=0.02, retry=1000)

    seen = b""
    with serving(app_of(endpoint)) as url, httpx.stream("GET", f"{url}/sse") as response:
        for chunk in response.iter_raw():
            seen += chunk
            if seen.count(b": keep-alive\n\n") >= 2:
                gate.set()
            if b"event: done" in seen:
                break
    assert seen.startswith(b"event: text\nid: 1\nretry: 1000\n")
    assert [item.text for item in items_of(seen)] == ["first", "second"]


def test_no_keepalive_when_switched_off() -> None:
    def endpoint(request: Request) -> Response:
        return sse_response(reactivex.of(rs.TextDelta("a")), keepalive=None, dialect="rxstream")

    with serving(app_of(endpoint)) as url:
        body = httpx.get(f"{url}/sse").content
    assert b": keep-alive" not in body
    assert items_of(body) == [rs.TextDelta("a")]


# --------------------------------------------------------------------------- the response object


def test_headers_given_override_the_defaults_case_insensitively() -> None:
    response = SSEResponse(
        reactivex.empty(), headers={"cache-control": "no-store", "X-Trace": "1"}, status_code=201
    )
    assert response.headers["cache-control"] == "no-store"
    assert response.headers["x-trace"] == "1"
    assert response.headers["x-accel-buffering"] == DEFAULT_HEADERS["X-Accel-Buffering"]
    assert response.status_code == 201


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"dialect": "ollama"}, ValueError, "NDJSON lines, not server-sent events"),
        ({"dialect": "rxstream", "model": "m"}, ValueError, "no renderer options"),
        ({"maxsize": 0}, ValueError, "maxsize must be an int of at least 1"),
        ({"keepalive": -1}, ValueError, "keepalive must be a positive"),
    ],
)
def test_bad_arguments_fail_in_the_handler(
    kwargs: dict[str, Any], error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        sse_response(reactivex.empty(), **kwargs)


def test_a_source_that_is_not_observable() -> None:
    with pytest.raises(TypeError, match="source must be an Observable or a function"):
        sse_response([rs.TextDelta("a")])  # type: ignore[arg-type]


# ------------------------------------------------------------------- the source's task writes


def chat_of(client: httpx.AsyncClient, base_url: str) -> rs.Observable[rs.Delta]:
    return rs.chat(
        client, "openai-chat", model="m", messages=[{"role": "user", "content": "Hi"}],
        api_key="sk-unit-0123", base_url=base_url,
    )  # fmt: skip


def encoded(deltas: list[rs.Delta], dialect: str) -> bytes:
    """What `SSEEncoder(dialect)` writes for `deltas` and the end: the served body's events."""
    encoder = SSEEncoder(dialect)
    return b"".join([event for delta in deltas for event in encoder.feed(delta)] + encoder.close())


def test_a_chat_served_in_another_dialect_is_byte_for_byte_what_the_encoder_writes() -> None:
    # An async source on the server's loop writes each read's events itself (the
    # connection lends it its writer): what the client reads is unchanged.
    pieces = tuple(f" piece {n}" for n in range(30))
    with FakeLLMServer(Scenario.text(*pieces, delay=0.002)) as fake:
        base = f"http://127.0.0.1:{fake.port}/v1"

        async def deltas() -> list[rs.Delta]:
            async with httpx.AsyncClient() as client:
                got: list[rs.Delta] = await chat_of(client, base).pipe(ops.to_list())
                return got

        expected = encoded(asyncio.run(deltas()), "anthropic")
        client = httpx.AsyncClient()

        def endpoint(request: Request) -> Response:
            return sse_response(chat_of(client, base), dialect="anthropic")

        with serving(app_of(endpoint)) as url:
            bodies = [httpx.get(f"{url}/sse").content for _ in range(3)]
    frames = events_of(expected)
    texts = [json.loads(f.data)["delta"]["text"] for f in frames if "text_delta" in f.data]
    assert texts == list(pieces)
    assert bodies == [expected] * 3


class Reads(httpx.AsyncByteStream):
    """An upstream body of `blocks`, one read each, the loop let run between them."""

    def __init__(self, blocks: list[bytes]) -> None:
        self.blocks = blocks
        self.closed = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for block in self.blocks:
            await asyncio.sleep(0)
            yield block

    async def aclose(self) -> None:
        self.closed = True


def chunk_line(text: str) -> bytes:
    chunk = {"id": "c1", "model": "m", "choices": [{"index": 0, "delta": {"content": text}}]}
    return b"data: " + json.dumps(chunk).encode() + b"\n\n"


def test_each_read_is_written_in_one_send_by_the_sources_task() -> None:
    # Three reads of two chunks each, then the end: one body message per read, each
    # holding that read's events, written without the writer's task being woken.
    reads = [chunk_line(f"{n}a") + chunk_line(f"{n}b") for n in range(3)]
    finish = {"index": 0, "delta": {}, "finish_reason": "stop"}
    stop = {"id": "c1", "model": "m", "choices": [finish]}
    end = b"data: " + json.dumps(stop).encode() + b"\n\n"
    body = Reads([*reads, end + b"data: [DONE]\n\n"])

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=body)

    async def main() -> list[bytes]:
        client = httpx.AsyncClient(transport=httpx.MockTransport(answer))
        sent: list[bytes] = []
        never = asyncio.Event()
        writers.clear()

        async def receive() -> MutableMapping[str, Any]:
            await never.wait()
            return {"type": "http.disconnect"}

        async def send(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.body" and message["body"]:
                sent.append(message["body"])
                task = asyncio.current_task()
                writers.append(getattr(task.get_coro(), "__qualname__", "") if task else "")

        response = sse_response(chat_of(client, "http://up.test/v1"), dialect="anthropic")
        await response({"type": "http", "headers": []}, receive, send)
        await client.aclose()
        return sent

    writers: list[str] = []
    sent = asyncio.run(main())
    # Each read's events by the source's own task; the end (after it) by the writer's.
    assert writers == ["AsyncLoop.run"] * 3 + ["Connection.write"]
    texts = [[f.data.rsplit('"text":"', 1)[1][:2] for f in events_of(b) if '"text_delta"' in f.data]
             for b in sent]  # fmt: skip
    # The first read opens the message and its text block, before its two texts.
    assert texts[:3] == [["0a", "0b"], ["1a", "1b"], ["2a", "2b"]]
    assert [f.event for f in events_of(sent[0])][:3] == [
        "message_start", "content_block_start", "ping"
    ]  # fmt: skip
    assert events_of(sent[-1])[-1].event == "message_stop"
    assert body.closed


def test_a_client_that_leaves_while_events_flow_disposes_the_upstream() -> None:
    # The provider keeps sending: the writes happen in the source's own task, and the
    # client's leaving must still end it and close the provider connection.
    pieces = tuple(f" piece {n}" for n in range(400))
    with FakeLLMServer(Scenario.text(*pieces, delay=0.01)) as fake:
        client = httpx.AsyncClient()
        base = f"http://127.0.0.1:{fake.port}/v1"

        def endpoint(request: Request) -> Response:
            return sse_response(chat_of(client, base), dialect="anthropic")

        with serving(app_of(endpoint)) as url:
            seen = b""
            with httpx.stream("GET", f"{url}/sse") as response:
                for chunk in response.iter_raw():
                    seen += chunk
                    if seen.count(b"text_delta") >= 3:
                        break
            assert fake.wait_for_disconnect(timeout=10)
        assert fake.completed == 0
    assert seen.startswith(b"event: message_start\nid: 1\n")

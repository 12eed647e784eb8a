"""The AI SDK's own client reads every recording of tests/data rendered as `"ai-sdk"`.

One uvicorn server on 127.0.0.1 serves each recording's deltas (decoded in its
own dialect, its error included) through `sse_response(..., dialect="ai-sdk")`;
one Node process (`read_streams.mjs`, with the `ai` 6.x pinned in
package-lock.json, installed by `npm ci` once per session) reads each with
`DefaultChatTransport` and `readUIMessageStream`, as `useChat` does, and checks
every chunk against the package's `uiMessageChunkSchema`. The UI message it
ends with must hold what rxstream read: text, reasoning, tool calls with their
input, sources, the finish reason, usage, and the provider's error text.

The other way round, `backend_streams.mjs` runs the package's own
`streamText(...).toUIMessageStreamResponse()` over its mock model: the bodies
it writes must be those in `recorded/`, which the core tests decode.
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest
import reactivex
from reactivex import operators as ops

from rxstream.models import Finish, TextDelta
from tests.support.aisdk import FIXTURES, Expected, expected, reading

from ..support.node import run_node
from .conftest import HERE

pytest.importorskip(
    "starlette", reason="the client test serves with starlette: pip install -e '.[test]'"
)
pytest.importorskip(
    "uvicorn", reason="the client test serves with uvicorn: pip install -e '.[test]'"
)

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from rxstream.serve import sse_response
from tests.support.serve import serving

#: A stream that keeps the client waiting, so keep-alive comments reach it first.
SLOW = "(keep-alives)"


def _app(streams: dict[str, Any]) -> Starlette:
    names = list(streams)

    async def chat(request: Request) -> Response:
        name = names[int(request.path_params["n"])]
        if name == SLOW:
            late = reactivex.timer(0.4).pipe(
                ops.flat_map(lambda _: reactivex.of(TextDelta("late"), Finish("stop")))
            )
            return sse_response(late, dialect="ai-sdk", id="msg-slow", keepalive=0.05)
        deltas, error = streams[name]
        source = reactivex.from_iterable(deltas)
        if error is not None:
            source = reactivex.concat(source, reactivex.throw(error))
        return sse_response(source, dialect="ai-sdk", id=f"msg-{request.path_params['n']}")

    return Starlette(routes=[Route("/chat/{n:int}", chat, methods=["POST"])])


@pytest.fixture(scope="module")
def results(node: str) -> dict[str, Any]:
    """What the AI SDK client read of every recording (one server, one node process)."""
    streams: dict[str, Any] = {name: reading(name) for name in FIXTURES}
    streams[SLOW] = None
    with serving(_app(streams)) as base:
        cases = [{"name": name, "url": f"{base}/chat/{n}"} for n, name in enumerate(streams)]
        read: dict[str, Any] = run_node(node, HERE / "read_streams.mjs", cases)
    return read


def _parts(message: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [part for part in message["parts"] if part["type"] == kind]


def _tool_parts(message: dict[str, Any]) -> list[dict[str, Any]]:
    return [part for part in message["parts"] if part["type"].startswith("tool-")]


@pytest.mark.parametrize("name", FIXTURES)
def test_the_client_reads_every_fixture(results: dict[str, Any], name: str) -> None:
    got = results[name]
    assert "failure" not in got, got.get("failure")
    want: Expected = expected(*reading(name))
    # The wire: every chunk is of the package's schema, `start` first, the header, `[DONE]`.
    assert got["status"] == 200
    assert got["header"] == "v1"
    assert got["invalid"] == []
    assert got["chunks"][0]["type"] == "start"
    assert got["chunks"][0]["messageId"]
    assert got["done"] is True
    # The UI message: what rxstream read.
    message = got["message"]
    assert message["id"] == got["chunks"][0]["messageId"]
    assert "".join(p["text"] for p in _parts(message, "text")) == want.text
    assert "".join(p["text"] for p in _parts(message, "reasoning")) == want.reasoning
    client = [p for p in _tool_parts(message) if not p.get("providerExecuted")]
    # A call whose arguments are not JSON is an `output-error` part with the text as `rawInput`.
    calls = [(p["type"].removeprefix("tool-"), p.get("input", p.get("rawInput"))) for p in client]
    assert sorted(map(json.dumps, calls)) == sorted(map(json.dumps, want.calls))
    assert all(p["state"] in ("input-available", "output-error") for p in client)
    ids = {p["toolCallId"] for p in client}
    assert {i for i in want.ids if i is not None} <= ids
    server = [p for p in _tool_parts(message) if p.get("providerExecuted")]
    assert len(server) <= want.server_calls
    sources = _parts(message, "source-url") + _parts(message, "source-document")
    assert len(sources) == want.sources
    if want.error is not None:
        assert got["errors"] == [want.error]
        return
    assert got["errors"] == []
    assert got["finishReason"] == want.finish
    if want.usage is not None:
        usage = message["metadata"]["usage"]
        assert (usage["inputTokens"], usage["outputTokens"], usage["totalTokens"]) == (
            want.usage.prompt_tokens,
            want.usage.completion_tokens,
            want.usage.total_tokens,
        )


def test_keepalive_comments_do_not_break_the_client(results: dict[str, Any]) -> None:
    got = results[SLOW]
    assert "failure" not in got, got.get("failure")
    assert got["keepalives"] > 0
    assert got["invalid"] == []
    assert got["errors"] == []
    assert [p["text"] for p in _parts(got["message"], "text")] == ["late"]
    assert got["finishReason"] == "stop"


def test_the_recordings_are_what_the_pinned_backend_writes(node: str) -> None:
    """tests/aisdk_client/recorded/*.sse (the core tests' real-backend input) stay true."""
    done = subprocess.run(
        [node, str(HERE / "backend_streams.mjs")],
        cwd=HERE,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    written = json.loads(done.stdout)
    recorded = {path.stem: path.read_text() for path in (HERE / "recorded").glob("*.sse")}
    assert {name.replace("_", "-"): answer["body"] for name, answer in written.items()} == recorded
    for answer in written.values():
        assert answer["headers"]["x-vercel-ai-ui-message-stream"] == "v1"

"""The AI SDK's `useObject` reading reads `rs.object_text()` as rxstream reads the same answer.

A local HTTP server streams the text pieces of `rs.object_text()` (a `text/plain`
response, flushed piece by piece); one Node process (`read_object_text.mjs`, the pinned
`ai` 6.x) reads each body as `useObject` does: the text so far through the package's
own `parsePartialJson` after every piece, a new partial object whenever the value
changes. The client must never fail to parse, and must end with the object that
`rs.partial_object()` gives for the same deltas.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
import reactivex

import rxstream as rs
from rxstream.models import Delta

from ..support.node import run_node
from .conftest import HERE


def cut(text: str, size: int) -> list[Delta]:
    return [rs.TextDelta(text[i : i + size]) for i in range(0, len(text), size)]


OBJECT = {
    "title": 'Caf\u00e9 "Zur Post" \\ \U0001f600',
    "scores": [1, 22, 333, -4.5e-3, 0],
    "tags": [],
    "nested": {"ok": True, "none": None, "deep": [[1], {"x": "y"}]},
}
CASES: dict[str, list[Delta]] = {
    "one character at a time": cut(json.dumps(OBJECT), 1),
    "three at a time, unicode as is": cut(json.dumps(OBJECT, ensure_ascii=False), 3),
    "a tool call's arguments": [
        rs.ToolCallDelta(0, piece.text, id="c1", name="card")
        if isinstance(piece, rs.TextDelta)
        else piece
        for piece in cut(json.dumps(OBJECT), 7)
    ],
}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", 0)))
        deltas = CASES[self.path.strip("/").replace("-", " ")]
        self.send_response(200)
        self.send_header("content-type", "text/plain; charset=utf-8")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        for piece in rs.to_iterator(reactivex.from_iterable(deltas).pipe(rs.object_text())):
            data = piece.encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_use_object_reads_the_object_text_stream(node: str, server: str) -> None:
    cases = [{"name": name, "url": f"{server}/{name.replace(' ', '-')}"} for name in CASES]
    read: dict[str, Any] = run_node(node, HERE / "read_object_text.mjs", cases)
    for name, deltas in CASES.items():
        got = read[name]
        ours: list[Any] = []
        reactivex.from_iterable(deltas).pipe(rs.partial_object()).subscribe(ours.append)
        assert got["contentType"].startswith("text/plain"), name
        assert "failed-parse" not in got["states"], name
        assert got["final"] == ours[-1] == OBJECT, name
        # How many partials the client sees depends on how its reads group the pieces.
        assert got["partials"][-1] == OBJECT, name

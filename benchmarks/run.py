"""rxstream against its peers, side by side in one process, reported as ratios.

    python benchmarks/run.py            # full size; exits 1 when a target is missed
    python benchmarks/run.py --quick    # small streams, for CI: prints, never fails on ratios

Every contender parses the same bytes, cut into the same 4 KiB reads, and its
result is checked against the stream's truth on every run (a fast wrong answer
is an error, not a win). Times are CPU time (`time.process_time`), the median
of several runs, in µs per chunk, and a ratio is the median of the per-round
ratios against the floor (see `cpu_us_per_chunk`); only the parsing is timed, while turning each
contender's output into the comparable result happens outside the timing.
Peers that are not installed are skipped (`pip install -e ".[bench]"` brings
them).

The floor (1.0x) is the loop a careful user writes by hand, as fast as we
could make it: each 4 KiB read decoded to str once (incrementally, so a
character cut between reads survives), split into lines, `json.loads` on the
str payload of each `data:` line, content, reasoning and tool-call arguments
appended to lists and joined at the end. rxstream runs its pipeline in both
spellings, `lines -> sse_frames -> decode_chunks -> deltas -> accumulate_message`
and the same without `deltas`, on the standard library alone and with the
`fast` extra (msgspec) when it is installed.

Targets, each a ratio measured in the same run:

1. both spellings of rxstream's pipeline <= 1.5x the floor with the standard
   library alone, and <= 1.0x with the `fast` extra;
2. the openai SDK's stream state >= 30x rxstream's CPU per chunk (rxstream at
   its best available mode: fast when installed);
3. 1,000,000 chunks through split_by_delta_type peak under 10 MB (tracemalloc);
4. latency (nothing held back) is a test: tests/test_latency.py.
"""

from __future__ import annotations

import argparse
import codecs
import gc
import json
import platform
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# The rxstream of this checkout, whatever else is installed, and streams.py next to this file.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import reactivex
from streams import SCENARIOS, Stream

import rxstream as rs

try:  # where the JSON loaders live (and the `fast` extra's switch)
    import rxstream._fast as _chunks

    _FAST = "msgspec_loads"
except ImportError:  # an older rxstream: the dialects' shared module, or the chunk decoder
    try:
        import rxstream.core.dialects._shared as _chunks  # type: ignore[no-redef]
    except ImportError:
        import rxstream.core.chunks as _chunks  # type: ignore[no-redef]
    _FAST = "fast_loads" if hasattr(_chunks, "fast_loads") else "_fast_loads"

Result = dict[str, Any]


@dataclass(frozen=True)
class Contender:
    """A way of parsing: `run` is timed; `result` reads its output, untimed."""

    run: Callable[[Stream], Any]
    result: Callable[[Any], Result]


STDLIB = "rxstream (stdlib)"
FAST = "rxstream (fast: msgspec)"
STDLIB_SHORT = "rxstream, no deltas() (stdlib)"
FAST_SHORT = "rxstream, no deltas() (fast: msgspec)"
HAND = "hand loop, json.loads"
OPENAI = "openai SDK stream state"

#: Each rxstream contender, with the most it may cost against the floor.
TARGETS = {STDLIB: 1.5, STDLIB_SHORT: 1.5, FAST: 1.0, FAST_SHORT: 1.0}


def _result(
    content: str = "",
    reasoning: str = "",
    tool_calls: list[dict[str, str]] | None = None,
    usage: dict[str, int] | None = None,
) -> Result:
    return {
        "content": content,
        "reasoning": reasoning,
        "tool_calls": tool_calls or [],
        "usage": usage,
    }


def _from_dicts(chunks: list[dict[str, Any]]) -> Result:
    """What a list of decoded chunks means (computed outside the timing)."""
    content, reasoning, calls, usage = [], [], {}, None
    for chunk in chunks:
        if chunk.get("usage"):
            usage = chunk["usage"]
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            if delta.get("content"):
                content.append(delta["content"])
            if delta.get("reasoning_content"):
                reasoning.append(delta["reasoning_content"])
            for call in delta.get("tool_calls") or []:
                record = calls.setdefault(call["index"], {"id": "", "name": "", "arguments": ""})
                record["id"] = record["id"] or call.get("id") or ""
                record["name"] = record["name"] or call.get("function", {}).get("name") or ""
                record["arguments"] += call.get("function", {}).get("arguments") or ""
    return _result("".join(content), "".join(reasoning), [calls[i] for i in sorted(calls)], usage)


# -- contenders -------------------------------------------------------------------------------

Accumulated = tuple[str, str, dict[int, list[Any]], Any]


def hand_loop(loads: Callable[[str], Any]) -> Contender:
    """The floor: the fastest loop a careful user writes by hand (see the module docstring)."""

    def run(stream: Stream) -> Accumulated:
        decode = codecs.getincrementaldecoder("utf-8")().decode
        content: list[str] = []
        reasoning: list[str] = []
        calls: dict[int, list[Any]] = {}
        usage = None
        tail = ""
        done = False
        for piece in stream.pieces:
            lines = (tail + decode(piece)).split("\n")
            tail = lines.pop()  # the line the next read completes
            for line in lines:
                if line[:6] != "data: ":
                    continue
                data = line[6:]
                if data == "[DONE]":
                    done = True
                    break
                chunk = loads(data)
                if chunk.get("usage"):
                    usage = chunk["usage"]
                for choice in chunk["choices"]:
                    delta = choice["delta"]
                    text = delta.get("content")
                    if text:
                        content.append(text)
                    text = delta.get("reasoning_content")
                    if text:
                        reasoning.append(text)
                    tool_calls = delta.get("tool_calls")
                    if tool_calls:
                        for call in tool_calls:
                            function = call["function"]
                            record = calls.get(call["index"])
                            if record is None:
                                record = [call.get("id"), function.get("name"), []]
                                calls[call["index"]] = record
                            arguments = function.get("arguments")
                            if arguments:
                                record[2].append(arguments)
            if done:
                break
        for record in calls.values():
            record[2] = "".join(record[2])
        return "".join(content), "".join(reasoning), calls, usage

    return Contender(run, _from_hand_loop)


def _from_hand_loop(result: Accumulated) -> Result:
    content, reasoning, calls, usage = result
    return _result(
        content,
        reasoning,
        [
            {"id": calls[i][0] or "", "name": calls[i][1] or "", "arguments": calls[i][2]}
            for i in sorted(calls)
        ],
        usage,
    )


def httpx_sse_loop(stream: Stream) -> list[Any]:
    import httpx
    from httpx_sse import EventSource

    response = httpx.Response(
        200, headers={"content-type": "text/event-stream"}, content=iter(stream.pieces)
    )
    out = []
    for event in EventSource(response).iter_sse():
        if event.data == "[DONE]":
            break
        out.append(json.loads(event.data))
    return out


def openai_sdk(stream: Stream) -> Any:
    """The openai SDK's own machinery: its SSE decoder, chunk models and stream state."""
    from openai._models import construct_type
    from openai._streaming import SSEDecoder
    from openai.lib.streaming.chat import ChatCompletionStreamState
    from openai.types.chat import ChatCompletionChunk

    state = ChatCompletionStreamState()
    for sse in SSEDecoder().iter_bytes(iter(stream.pieces)):
        if sse.data.startswith("[DONE]"):
            break
        chunk = construct_type(type_=ChatCompletionChunk, value=json.loads(sse.data))
        for _ in state.handle_chunk(chunk):  # type: ignore[arg-type]
            pass
    return state


def _from_openai(state: Any) -> Result:
    message = state.current_completion_snapshot.choices[0].message
    snapshot = state.current_completion_snapshot
    calls = [
        {"id": c.id, "name": c.function.name, "arguments": c.function.arguments}
        for c in message.tool_calls or []
    ]
    reasoning = getattr(message, "reasoning_content", None) or ""
    usage = snapshot.usage.model_dump(exclude_none=True) if snapshot.usage else None
    if usage:
        usage = {k: usage[k] for k in ("prompt_tokens", "completion_tokens", "total_tokens")}
    return _result(message.content or "", reasoning, calls, usage)


def rxstream_pipeline(stream: Stream, *, with_deltas: bool = True) -> rs.Message:
    """bytes -> lines -> sse_frames -> decode_chunks [-> deltas] -> accumulate_message."""
    messages: list[rs.Message] = []
    errors: list[Exception] = []
    steps = [rs.lines(), rs.sse_frames(), rs.decode_chunks()]
    if with_deltas:
        steps.append(rs.deltas())
    reactivex.from_iterable(stream.pieces).pipe(*steps, rs.accumulate_message()).subscribe(
        messages.append, errors.append
    )
    if errors:
        raise errors[0]
    (message,) = messages
    return message


def rxstream_mode(fast: bool, *, with_deltas: bool = True) -> Callable[[Stream], rs.Message]:
    """The pipeline with the `fast` extra's decoder switched on or off."""
    fast_loads = getattr(_chunks, _FAST, None)

    def run(stream: Stream) -> rs.Message:
        if not hasattr(_chunks, _FAST):  # an older rxstream, without the switch
            return rxstream_pipeline(stream, with_deltas=with_deltas)
        saved = getattr(_chunks, _FAST)
        setattr(_chunks, _FAST, fast_loads if fast else None)  # read by each new decoder
        try:
            return rxstream_pipeline(stream, with_deltas=with_deltas)
        finally:
            setattr(_chunks, _FAST, saved)

    return run


def _from_message(message: rs.Message) -> Result:
    usage = message.usage
    return _result(
        message.content,
        message.reasoning,
        [
            {"id": c.id or "", "name": c.name or "", "arguments": c.arguments}
            for c in message.tool_calls
        ],
        None
        if usage is None
        else {
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
            "total_tokens": usage.total_tokens,
        },
    )


def contenders() -> dict[str, Contender]:
    found: dict[str, Contender] = {HAND: hand_loop(json.loads)}
    try:
        import orjson

        found["hand loop, orjson"] = hand_loop(orjson.loads)
    except ImportError:
        pass
    try:
        import msgspec

        found["hand loop, msgspec"] = hand_loop(msgspec.json.decode)
    except ImportError:
        pass
    try:
        import httpx_sse  # noqa: F401

        found["httpx-sse + json.loads"] = Contender(httpx_sse_loop, _from_dicts)
    except ImportError:
        pass
    found[STDLIB] = Contender(rxstream_mode(fast=False), _from_message)
    found[STDLIB_SHORT] = Contender(rxstream_mode(fast=False, with_deltas=False), _from_message)
    if getattr(_chunks, _FAST, None) is not None:
        found[FAST] = Contender(rxstream_mode(fast=True), _from_message)
        found[FAST_SHORT] = Contender(rxstream_mode(fast=True, with_deltas=False), _from_message)
    try:
        import openai  # noqa: F401

        found[OPENAI] = Contender(openai_sdk, _from_openai)
    except ImportError:
        pass
    return found


# -- measuring --------------------------------------------------------------------------------


def check(name: str, stream: Stream, result: Result) -> None:
    truth = _result(
        stream.content,
        stream.reasoning,
        stream.tool_calls,
        {k: stream.usage[k] for k in ("prompt_tokens", "completion_tokens", "total_tokens")}
        if stream.usage
        else None,
    )
    for key, expected in truth.items():
        if result[key] != expected:
            raise SystemExit(f"{name} got the {stream.name} stream's {key} wrong")


#: Peers whose runs take long; they get `repeats` rounds, the rest three times as many.
SLOW = {OPENAI, "httpx-sse + json.loads"}


def cpu_us_per_chunk(
    found: dict[str, Contender], stream: Stream, repeats: int
) -> tuple[dict[str, float], dict[str, float]]:
    """CPU µs per chunk of each contender (median), and its ratio to the floor.

    The contenders take turns, round after round, rather than one contender's
    repeats in a row, so a burst of load on a shared machine falls on every
    contender alike; and a ratio is the median, over the rounds, of the
    contender's time against the floor's time in the same round, which
    cancels slow drifts in load. The cheap contenders (the floor, rxstream,
    the hand loops) run three times as many rounds as the slow peers.
    """
    times: dict[str, list[float]] = {name: [] for name in found}
    for round_ in range(3 * repeats):
        for name, contender in found.items():
            if round_ >= repeats and name in SLOW:
                continue
            gc.collect()
            start = time.process_time()
            contender.run(stream)
            times[name].append(time.process_time() - start)
    floor = times[HAND]
    us = {name: statistics.median(t) / stream.chunks * 1e6 for name, t in times.items()}
    ratios = {
        name: statistics.median(a / b for a, b in zip(t, floor, strict=False))
        for name, t in times.items()
    }
    return us, ratios


def repeated_pieces(chunks: int, read_size: int = 4096) -> Iterator[bytes]:
    """A text stream of `chunks` chunks generated lazily (it is never all in memory)."""
    sample = SCENARIOS["text"](n=64, read_size=1 << 30)
    body = sample.pieces[0]
    events = body.split(b"\n\n")[1:-4]  # content chunks only
    buffer = b""
    for i in range(chunks):
        buffer += events[i % len(events)] + b"\n\n"
        if len(buffer) >= read_size:
            yield buffer[:read_size]
            buffer = buffer[read_size:]
    yield buffer + b"data: [DONE]\n\n"


def peak_memory_mb(chunks: int) -> float:
    """Peak traced memory above baseline for `chunks` chunks through split_by_delta_type."""
    seen = [0]

    def on_group(group: Any) -> None:
        # The text deltas (the stream's chunks); the id and model come as one Metadata.
        if group.key == rs.DeltaType.TEXT:
            group.subscribe(lambda _: seen.__setitem__(0, seen[0] + 1))

    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    reactivex.from_iterable(repeated_pieces(chunks)).pipe(
        rs.lines(), rs.sse_frames(), rs.decode_chunks(), rs.split_by_delta_type()
    ).subscribe(on_group)
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    if seen[0] != chunks:
        raise SystemExit(f"memory run saw {seen[0]} deltas, expected {chunks}")
    return peak / 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small streams; never fails")
    parser.add_argument("--repeats", type=int, default=None)
    args = parser.parse_args()
    scale = 10 if args.quick else 1
    repeats = args.repeats or (3 if args.quick else 5)
    streams = [
        SCENARIOS["text"](n=20_000 // scale),
        SCENARIOS["tools"](fragments=5_000 // scale),
        SCENARIOS["reasoning"](n=10_000 // scale),
    ]
    found = contenders()
    print(
        f"# rxstream benchmarks ({'quick' if args.quick else 'full'}) — "
        f"{platform.python_implementation()} {platform.python_version()}, "
        f"{platform.machine()}, {platform.system()}"
    )
    failures = []
    for stream in streams:
        print(
            f"\n## {stream.name}: {stream.chunks} chunks, {stream.size / 1e6:.1f} MB in "
            f"{len(stream.pieces)} reads"
        )
        print("| way of parsing | µs per chunk (median) | × hand-written loop |")
        print("|---|---:|---:|")
        for name, contender in found.items():
            check(name, stream, contender.result(contender.run(stream)))
        results, ratios = cpu_us_per_chunk(found, stream, repeats)
        for name, us in results.items():
            print(f"| {name} | {us:.2f} | {ratios[name]:.2f} |")
        print()
        targets = [(name, limit) for name, limit in TARGETS.items() if name in results]
        for name, limit in targets:
            ratio = ratios[name]
            verdict = "met" if ratio <= limit else "MISSED"
            print(f"- {name} / floor: {ratio:.2f}x (target <= {limit}x): {verdict}")
            if ratio > limit:
                failures.append(
                    f"{stream.name}: {name} is {ratio:.2f}x the floor (target {limit}x)"
                )
        if OPENAI in results:
            best = FAST if FAST in results else STDLIB
            for name in (STDLIB, FAST):
                if name not in results:
                    continue
                gain = results[OPENAI] / results[name]
                gated = name == best
                verdict = ("met" if gain >= 30 else "MISSED") if gated else "for information"
                print(f"- openai SDK / {name}: {gain:.1f}x (target >= 30x): {verdict}")
                if gated and gain < 30:
                    failures.append(
                        f"{stream.name}: {name} is only {gain:.1f}x less CPU than the openai SDK"
                    )
    chunks = 100_000 if args.quick else 1_000_000
    peak = peak_memory_mb(chunks)
    print(
        f"\npeak memory, {chunks} chunks through split_by_delta_type: {peak:.2f} MB "
        "(target < 10 MB)"
    )
    if peak >= 10:
        failures.append(f"memory: {peak:.1f} MB")
    for failure in failures:
        print(f"MISSED: {failure}")
    if failures and args.quick:
        # Ten times smaller streams weigh the fixed costs more: the targets are
        # defined (and enforced) on the full-size run.
        print("(quick run: ratios are indicative only; `python benchmarks/run.py` checks them)")
    return 0 if args.quick or not failures else 1


if __name__ == "__main__":
    raise SystemExit(main())

"""Every dialect: rs.decode(d) + accumulate_message against a hand loop and the providers' SDKs.

    python benchmarks/bench_dialects.py            # 20,000 events per dialect; exits 1 on a miss
    python benchmarks/bench_dialects.py --quick    # 2,000 events, for CI: prints, never fails
    python benchmarks/bench_dialects.py --setup    # many three-event streams: the cost per stream

Per dialect, one stream of 20,000 text events (plus the finish, usage and end
events the dialect sends), made by the core's renderer, cut into 4 KiB reads,
parsed side by side in one process, every result checked against the truth.
Each stream comes in two shapes (`--shape`, both by default): as the renderer
writes it ("rendered": every text event the same JSON but for its text), and
as the providers send it ("sent": with the fields real streams change on every
event: OpenAI's `obfuscation` padding on chat chunks and Responses deltas,
Gemini's `usageMetadata` with the counts so far on every chunk, Ollama's
`created_at` time, Bedrock's `p` padding; Anthropic and Cohere send their text
events alike but for the text, so their two shapes are the same bytes).
Times are CPU time: the contenders take turns, round after round; µs are the
medians, and a ratio is the median, over the rounds, of a contender's time
against the floor's time in the same round.

- the floor: the fastest honest loop a careful user writes for that format,
  one loop written out whole (no call per event): each read decoded to `str`
  once (incrementally, so a character split across reads survives), lines
  split with `str.split`, `json.loads` on the `str` payload of each `data: `
  line (NDJSON: each line; AWS event stream: the prelude unpacked with
  `struct`, both CRCs checked, the `:event-type` header read, `json.loads` on
  the payload decoded to `str`), text pieces appended to a list and joined
  once;
- rxstream on the standard library, and with the `fast` extra (msgspec):
  bytes -> `lines()` -> `sse_frames()` -> `decode(d)` -> `accumulate_message()`
  (NDJSON without `sse_frames`, Bedrock through `eventstream_frames()`), the
  dialect named, and left to `decode()` to detect ("auto"); and, for scale, the
  named pipeline with every fast path off (`rxstream.core.fast_paths(False)`);
- the provider's own SDK stream helper where it is installed (`anthropic`'s
  `messages.stream()`, the openai SDK's `responses.stream()`, `google-genai`'s
  `generate_content_stream`), fed the same bytes through a mock transport.

Targets (issue 22, replacing issue 11's): rxstream, the dialect named, <= 1.0x
the floor with the standard library and <= 0.7x with the `fast` extra (its
typed msgspec decoding), for every dialect; detected by `decode()`, still
issue 11's <= 1.5x with the standard library (and <= 1.0x with the `fast`
extra for "openai-chat"); the anthropic helper >= 7x and the openai Responses
helper >= 30x rxstream. The summary at the end says, per dialect, what an
event costs on each path.

`--setup` measures what a stream costs to set up instead, where many short
streams pay it: per dialect, a stream of three text events (and the finish,
usage and end events), CPU µs per stream (the pipeline built, subscribed and
run, as a user does per request) for the hand loop, rxstream with the `fast`
extra, on the standard library, and with every fast path off, the switch set
once around a batch of streams (see `SETUP_WAYS`). Target (issue 29): the fast
paths' stream costs no more than the plain one's (<= 1.0x), both ways.

Measured (issue 29: the hot reader reading a batch, the `Budget`'s wait), main
and this change alternately in one window, `--repeats 3`, CPython 3.11, on a
2-core machine shared with other work (load average 6 to 10 throughout, so
ratios move by up to 0.15 from run to run: ranges, x the hand loop). The whole
table one run each; anthropic, cohere and openai-responses three each:

| dialect, shape | stdlib, main | stdlib, this | `fast`, main | `fast`, this |
|---|---:|---:|---:|---:|
| openai-chat, rendered | 0.65 | 0.63 | 0.72 | 0.68 |
| openai-responses, rendered | 0.72-0.77 | 0.70-1.00 | 0.66-0.74 | 0.63-0.78 |
| anthropic, rendered | 0.77-0.81 | 0.75-0.82 | 0.60-0.75 | 0.67-0.75 |
| gemini, rendered | 0.72 | 0.61 | 0.73 | 0.58 |
| cohere, rendered | 0.72-0.80 | 0.73-0.76 | 0.63-0.74 | 0.62-0.67 |
| ollama, rendered | 0.65 | 0.64 | 0.48 | 0.59 |
| bedrock, rendered | 0.69 | 0.67 | 0.57 | 0.51 |
| openai-chat, sent | 0.58 | 0.65 | 0.64 | 0.72 |
| openai-responses, sent | 0.78-0.87 | 0.73-0.85 | 0.64-0.81 | 0.68-0.76 |
| gemini, sent | 0.72 | 0.65 | 0.73 | 0.60 |
| ollama, sent | 0.70 | 0.66 | 0.42 | 0.37 |
| bedrock, sent | 0.80 | 0.82 | 0.45 | 0.59 |

Timing that load cannot move: machine instructions per event (valgrind,
2,000-event streams, the whole pipeline), x the hand loop's, `fast`:
anthropic 0.77 -> 0.72 (18,443 -> 17,148), cohere 0.73 -> 0.70 (18,783 ->
17,836), openai-responses sent 0.72 -> 0.69 (22,351 -> 21,577); the decoder
alone about 700 instructions an event fewer (anthropic 9,289 -> 8,574), the
rest of the pipeline (lines, SSE frames, `accumulate_message`) unchanged.

Two runs from a fresh clone on an idle machine afterwards (`--repeats 3`, x the
hand loop, `fast`): every row at or under 0.7x but anthropic rendered (0.78x in
both: its hand loop is the cheapest, 3.4-3.7 us an event) and gemini sent in
one run (0.65x, then 0.73x); every row at or under 1.0x on the standard library
(the highest 0.84x, anthropic rendered).

After the SSE parser's bulk read of three-line events and Anthropic's msgspec
types without garbage-collector tracking (issue 29, fifth round), two runs on
an idle machine (`--repeats` default, x the hand loop, `fast` / stdlib):
anthropic rendered 0.64 / 0.74 and 0.62 / 0.72 (it was 0.78 with `fast`),
gemini sent 0.64 / 0.65 and 0.64 / 0.64; every row at or under 0.7x with
`fast` but openai-responses sent in one run (0.70x, flagged as a miss by a
hair; 0.67x in the other), every row under 1.0x on the standard library (the
highest 0.77x, openai-responses sent). `--setup`, three idle runs: fast /
plain 0.83-0.93, stdlib / plain 0.91-0.99 (gemini 0.96-0.97, ollama and
bedrock up to 0.98-0.99).

`--setup`, three rounds each, x the plain stream (every fast path off):

| dialect | fast / plain, main | fast / plain, this | stdlib / plain, main | stdlib / plain, this |
|---|---:|---:|---:|---:|
| openai-chat | 0.82-0.84 | 0.81-0.88 | 1.00-1.04 | 0.89-0.92 |
| openai-responses | 0.83-0.91 | 0.82-0.89 | 0.90-1.03 | 0.88-0.94 |
| anthropic | 0.70-0.88 | 0.81-0.91 | 0.81-0.98 | 0.82-0.91 |
| gemini | 0.96-1.04 | 0.79-0.92 | 1.03-1.11 | 0.90-1.04 |
| cohere | 0.82-1.03 | 0.81-0.97 | 0.93-1.06 | 0.93-1.02 |
| ollama | 0.90-0.98 | 0.91-0.92 | 1.05-1.13 | 0.91-0.99 |
| bedrock | 0.83-1.00 | 0.88-0.94 | 1.04-1.06 | 0.89-0.97 |
"""

from __future__ import annotations

import argparse
import codecs
import dataclasses
import gc
import importlib
import json
import platform
import statistics
import struct
import sys
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# The rxstream of this checkout, whatever else is installed.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import reactivex

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
from rxstream.core import dialects

#: The switch of every fast path (None: an rxstream from before it).
FAST_PATHS: Callable[[bool], bool] | None = getattr(
    importlib.import_module("rxstream.core"), "fast_paths", None
)

READ = 4096
WORDS = ("The", " quick", " brown", " fox", " jumps", " over", " the", " lazy", " dog", ".", "\n")


@dataclass(frozen=True)
class Stream:
    dialect: str
    pieces: list[bytes]
    events: int
    text: str
    usage: tuple[int, int]


@dataclass(frozen=True)
class Answer:
    """What every contender's output is reduced to (outside the timing)."""

    text: str
    prompt_tokens: int
    completion_tokens: int


def make_stream(dialect: str, n: int, shape: str = "rendered") -> Stream:
    renderer = dialects.renderer(dialect)
    pieces = [WORDS[i % len(WORDS)] for i in range(n)]
    deltas: list[rs.Delta] = [rs.TextDelta(p) for p in pieces]
    deltas += [rs.Finish("stop"), rs.Usage(12, n, 12 + n)]
    items: list[Any] = []
    for delta in deltas:
        items += renderer.feed(delta)
    items += renderer.close()
    if shape == "sent":
        items = [as_sent(dialect, item, i) for i, item in enumerate(items)]
    body = dialects.wire_bytes(renderer, items)
    return Stream(
        dialect,
        [body[i : i + READ] for i in range(0, len(body), READ)],
        n,
        "".join(pieces),
        (12, n),
    )


#: What providers pad events with (OpenAI's `obfuscation`, Bedrock's `p`): a prefix of this.
PADDING = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


def as_sent(dialect: str, item: Any, i: int) -> Any:
    """A rendered wire item with the fields the provider changes on every event (see the top)."""
    pad = PADDING[: 1 + i * 7 % len(PADDING)]
    if dialect == "openai-chat" and item.data.startswith("{"):
        return dataclasses.replace(item, data=f'{item.data[:-1]},"obfuscation":"{pad}"}}')
    if dialect == "openai-responses" and item.event == "response.output_text.delta":
        return dataclasses.replace(item, data=f'{item.data[:-1]},"obfuscation":"{pad}"}}')
    if dialect == "gemini" and '"usageMetadata"' not in item.data:
        counts = f'"usageMetadata": {{"promptTokenCount": 12,"candidatesTokenCount": {i},'
        counts += f'"totalTokenCount": {12 + i}}},"modelVersion"'
        return dataclasses.replace(item, data=item.data.replace('"modelVersion"', counts))
    if dialect == "ollama":
        return item.replace("00:00:00Z", f"00:00:{i % 60:02d}.{i * 7919 % 10**9:09d}Z")
    if dialect == "bedrock":
        padded = item.payload[:-1] + b',"p":"' + pad.encode() + b'"}'
        return dataclasses.replace(item, payload=padded)
    return item


# -- the floors -------------------------------------------------------------------------------
#
# One loop per format, written out whole as a user would (no call per event):
# the read decoded, the lines split, `json.loads` on each data line, the text
# gathered. Each is as fast as we could make it without cutting a corner.


def openai_chat_floor(stream: Stream) -> Answer:
    decode = codecs.getincrementaldecoder("utf-8")().decode
    loads = json.loads
    text: list[str] = []
    usage = (0, 0)
    rest = ""
    done = False
    for piece in stream.pieces:
        lines = (rest + decode(piece)).split("\n")
        rest = lines.pop()  # the line the next read completes
        for line in lines:
            if line[:6] != "data: ":
                continue
            data = line[6:]
            if data == "[DONE]":
                done = True
                break
            obj = loads(data)
            for choice in obj["choices"]:
                content = choice["delta"].get("content")
                if content:
                    text.append(content)
            counts = obj.get("usage")
            if counts:
                usage = (counts["prompt_tokens"], counts["completion_tokens"])
        if done:
            break
    return Answer("".join(text), *usage)


def openai_responses_floor(stream: Stream) -> Answer:
    decode = codecs.getincrementaldecoder("utf-8")().decode
    loads = json.loads
    text: list[str] = []
    usage = (0, 0)
    rest = ""
    for piece in stream.pieces:
        lines = (rest + decode(piece)).split("\n")
        rest = lines.pop()
        for line in lines:
            if line[:6] != "data: ":
                continue
            obj = loads(line[6:])
            kind = obj["type"]
            if kind == "response.output_text.delta":
                text.append(obj["delta"])
            elif kind == "response.completed":
                counts = obj["response"]["usage"]
                usage = (counts["input_tokens"], counts["output_tokens"])
    return Answer("".join(text), *usage)


def anthropic_floor(stream: Stream) -> Answer:
    decode = codecs.getincrementaldecoder("utf-8")().decode
    loads = json.loads
    text: list[str] = []
    usage = (0, 0)
    prompt = 0
    rest = ""
    for piece in stream.pieces:
        lines = (rest + decode(piece)).split("\n")
        rest = lines.pop()
        for line in lines:
            if line[:6] != "data: ":
                continue
            obj = loads(line[6:])
            kind = obj["type"]
            if kind == "content_block_delta":
                delta = obj["delta"]
                if delta["type"] == "text_delta":
                    text.append(delta["text"])
            elif kind == "message_start":
                prompt = obj["message"]["usage"].get("input_tokens", 0)
            elif kind == "message_delta":
                counts = obj["usage"]  # supersedes message_start's counts
                usage = (counts.get("input_tokens", prompt), counts["output_tokens"])
    return Answer("".join(text), *usage)


def gemini_floor(stream: Stream) -> Answer:
    decode = codecs.getincrementaldecoder("utf-8")().decode
    loads = json.loads
    text: list[str] = []
    usage = (0, 0)
    rest = ""
    for piece in stream.pieces:
        lines = (rest + decode(piece)).split("\n")  # CRLF: json.loads ignores the CR
        rest = lines.pop()
        for line in lines:
            if line[:6] != "data: ":
                continue
            obj = loads(line[6:])
            for candidate in obj.get("candidates", ()):
                for part in candidate.get("content", {}).get("parts", ()):
                    if "text" in part:
                        text.append(part["text"])
            counts = obj.get("usageMetadata")
            if counts:
                usage = (counts.get("promptTokenCount", 0), counts.get("candidatesTokenCount", 0))
    return Answer("".join(text), *usage)


def cohere_floor(stream: Stream) -> Answer:
    decode = codecs.getincrementaldecoder("utf-8")().decode
    loads = json.loads
    text: list[str] = []
    usage = (0, 0)
    rest = ""
    for piece in stream.pieces:
        lines = (rest + decode(piece)).split("\n")
        rest = lines.pop()
        for line in lines:
            if line[:6] != "data: ":
                continue
            obj = loads(line[6:])
            kind = obj["type"]
            if kind == "content-delta":
                text.append(obj["delta"]["message"]["content"]["text"])
            elif kind == "message-end":
                tokens = obj["delta"]["usage"]["tokens"]
                usage = (tokens["input_tokens"], tokens["output_tokens"])
    return Answer("".join(text), *usage)


def ollama_floor(stream: Stream) -> Answer:
    decode = codecs.getincrementaldecoder("utf-8")().decode
    loads = json.loads
    text: list[str] = []
    usage = (0, 0)
    rest = ""
    for piece in stream.pieces:
        lines = (rest + decode(piece)).split("\n")
        rest = lines.pop()
        for line in lines:
            if not line:
                continue
            obj = loads(line)
            content = obj["message"].get("content")
            if content:
                text.append(content)
            if obj.get("done"):
                usage = (obj["prompt_eval_count"], obj["eval_count"])
    return Answer("".join(text), *usage)


def bedrock_floor(stream: Stream) -> Answer:
    """The AWS event-stream framing by hand: prelude, CRCs, the `:event-type` header, JSON."""
    text: list[str] = []
    usage = (0, 0)
    buffer = b""
    crc32 = zlib.crc32
    unpack_from = struct.unpack_from
    loads = json.loads
    for piece in stream.pieces:
        buffer += piece
        start = 0
        size = len(buffer)
        while size - start >= 12:
            total, headers_length, prelude_crc = unpack_from(">III", buffer, start)
            end = start + total
            if size < end:
                break
            message = buffer[start:end]
            start = end
            prelude = crc32(message[:8])
            if prelude != prelude_crc:
                raise ValueError("bad prelude CRC")
            # The message CRC covers the prelude too: carried on from its CRC.
            if crc32(message[8:-4], prelude) != unpack_from(">I", message, total - 4)[0]:
                raise ValueError("bad message CRC")
            event = ""
            at, stop = 12, 12 + headers_length
            while at < stop:
                name_length = message[at]
                name = message[at + 1 : at + 1 + name_length]
                at += 1 + name_length
                if message[at] != 7:  # a string header; Bedrock sends no other kind
                    raise ValueError(f"header type {message[at]} in a Bedrock event")
                length = message[at + 1] << 8 | message[at + 2]
                if name == b":event-type":
                    event = message[at + 3 : at + 3 + length].decode()
                at += 3 + length
            payload = loads(message[stop:-4].decode())
            if event == "contentBlockDelta":
                chunk = payload["delta"].get("text")
                if chunk:
                    text.append(chunk)
            elif event == "metadata":
                usage = (payload["usage"]["inputTokens"], payload["usage"]["outputTokens"])
        buffer = buffer[start:]
    return Answer("".join(text), *usage)


FLOORS: dict[str, Callable[[Stream], Answer]] = {
    "openai-chat": openai_chat_floor,
    "openai-responses": openai_responses_floor,
    "anthropic": anthropic_floor,
    "gemini": gemini_floor,
    "cohere": cohere_floor,
    "ollama": ollama_floor,
    "bedrock": bedrock_floor,
}


# -- rxstream ---------------------------------------------------------------------------------


def rxstream_run(
    fast: bool, *, auto: bool = False, shortcuts: bool = True
) -> Callable[[Stream], Answer]:
    """The pipeline, the dialect named (or left to `decode()`), the `fast` extra on or off.

    `shortcuts=False`: with every fast path off (`rxstream.core.fast_paths(False)`).
    """
    fast_loads = getattr(_chunks, _FAST, None)

    def run(stream: Stream) -> Answer:
        if not shortcuts:
            previous = FAST_PATHS(False)
            try:
                return rxstream_run(fast, auto=auto)(stream)
            finally:
                FAST_PATHS(previous)
        decode = rs.decode() if auto else rs.decode(stream.dialect)
        if stream.dialect == "bedrock":
            wire: Any = reactivex.compose(rs.eventstream_frames(), decode)
        elif stream.dialect == "ollama":
            wire = reactivex.compose(rs.lines(), decode)
        else:
            wire = reactivex.compose(rs.lines(), rs.sse_frames(), decode)
        saved = getattr(_chunks, _FAST)
        setattr(_chunks, _FAST, fast_loads if fast else None)  # read by each new decoder
        out: list[rs.Message] = []
        errors: list[Exception] = []
        try:
            reactivex.from_iterable(stream.pieces).pipe(wire, rs.accumulate_message()).subscribe(
                out.append, errors.append
            )
        finally:
            setattr(_chunks, _FAST, saved)
        if errors:
            raise errors[0]
        [message] = out
        usage = message.usage or rs.Usage(0, 0, 0)
        return Answer(message.content, usage.prompt_tokens, usage.completion_tokens)

    return run


# -- the providers' SDKs ----------------------------------------------------------------------


def _mock_client(stream: Stream, content_type: str = "text/event-stream") -> Any:
    import httpx2

    body = b"".join(stream.pieces)

    def handler(request: Any) -> Any:
        return httpx2.Response(200, headers={"content-type": content_type}, content=body)

    return httpx2.Client(transport=httpx2.MockTransport(handler))


def anthropic_sdk(stream: Stream) -> Answer:
    import anthropic

    client = anthropic.Anthropic(api_key="test", http_client=_mock_client(stream), max_retries=0)
    with client.messages.stream(
        model="m", max_tokens=1024, messages=[{"role": "user", "content": "hi"}]
    ) as events:
        message = events.get_final_message()
    text = "".join(block.text for block in message.content if block.type == "text")
    return Answer(text, message.usage.input_tokens, message.usage.output_tokens)


def openai_responses_sdk(stream: Stream) -> Answer:
    import openai

    client = openai.OpenAI(
        api_key="test",
        base_url="http://127.0.0.1:9/v1",
        http_client=_mock_client(stream),
        max_retries=0,
    )
    with client.responses.stream(model="m", input="hi") as events:
        for _ in events:
            pass
        response = events.get_final_response()
    usage = response.usage
    assert usage is not None
    return Answer(response.output_text, usage.input_tokens, usage.output_tokens)


def gemini_sdk(stream: Stream) -> Answer:
    from google import genai
    from google.genai import types

    client = genai.Client(
        api_key="test", http_options=types.HttpOptions(httpx_client=_mock_client(stream))
    )
    text: list[str] = []
    usage = (0, 0)
    for chunk in client.models.generate_content_stream(model="m", contents="hi"):
        for candidate in chunk.candidates or ():
            for part in (candidate.content.parts if candidate.content else None) or ():
                if part.text:
                    text.append(part.text)
        if chunk.usage_metadata:
            meta = chunk.usage_metadata
            usage = (meta.prompt_token_count or 0, meta.candidates_token_count or 0)
    return Answer("".join(text), *usage)


SDKS: dict[str, tuple[str, str, Callable[[Stream], Answer], float | None]] = {
    # dialect: (label, module to import, runner, target ratio against rxstream)
    "anthropic": ("anthropic SDK messages.stream()", "anthropic", anthropic_sdk, 7.0),
    "openai-responses": ("openai SDK responses.stream()", "openai", openai_responses_sdk, 30.0),
    "gemini": ("google-genai generate_content_stream", "google.genai", gemini_sdk, None),
}


# -- measuring --------------------------------------------------------------------------------

FLOOR = "hand loop, json.loads"
STDLIB, FAST = "rxstream (stdlib)", "rxstream (fast: msgspec)"
AUTO_STDLIB, AUTO_FAST = "rxstream, decode() auto (stdlib)", "rxstream, decode() auto (fast)"
PLAIN = "rxstream, fast paths off"

#: The most each rxstream contender may cost against the floor, per dialect
#: (issue 22 for the dialect named; issue 11's for `decode()` detecting it).
TARGETS: dict[str, dict[str, float]] = {
    dialect: {STDLIB: 1.0, FAST: 0.7, AUTO_STDLIB: 1.5} for dialect in dialects.DIALECTS
}
TARGETS["openai-chat"].update({AUTO_FAST: 1.0})


def contenders(dialect: str, *, sdks: bool = True) -> dict[str, Callable[[Stream], Answer]]:
    found = {FLOOR: FLOORS[dialect], STDLIB: rxstream_run(fast=False)}
    has_fast = getattr(_chunks, _FAST, None) is not None
    if has_fast:
        found[FAST] = rxstream_run(fast=True)
    found[AUTO_STDLIB] = rxstream_run(fast=False, auto=True)
    if has_fast:
        found[AUTO_FAST] = rxstream_run(fast=True, auto=True)
    if FAST_PATHS is not None:
        found[PLAIN] = rxstream_run(fast=False, shortcuts=False)
    if sdks and dialect in SDKS:
        label, module, runner, _ = SDKS[dialect]
        try:
            __import__(module)
            __import__("httpx2")
        except ImportError:
            print(f"({label}: not installed, skipped; pip install -e '.[bench]')")
        else:
            found[label] = runner
    return found


#: The providers' SDKs take long: they get `repeats` rounds, the rest three times as many.
SLOW = {label for label, *_ in SDKS.values()}


def measure(
    found: dict[str, Callable[[Stream], Answer]],
    stream: Stream,
    repeats: int,
    base: str = FLOOR,
) -> tuple[dict[str, float], dict[str, float]]:
    """CPU µs per event of each contender (median), and its ratio to the floor (or `base`).

    The contenders take turns, round after round, so a burst of load on a
    shared machine falls on all of them alike; a ratio is the median, over
    the rounds, of the contender's time against the floor's time in the same
    round, which cancels slow drifts in load.
    """
    times: dict[str, list[float]] = {name: [] for name in found}
    for round_ in range(3 * repeats):
        for name, run in found.items():
            if round_ >= repeats and name in SLOW:
                continue
            gc.collect()
            start = time.process_time()
            run(stream)
            times[name].append(time.process_time() - start)
    floor = times[base]
    us = {name: statistics.median(t) / stream.events * 1e6 for name, t in times.items()}
    ratios = {
        name: statistics.median(a / b for a, b in zip(t, floor, strict=False))
        for name, t in times.items()
    }
    return us, ratios


# -- the cost of a stream (--setup) -----------------------------------------------------------

#: The ways `--setup` runs rxstream: (the fast paths on, with the `fast` extra's msgspec).
SETUP_WAYS: dict[str, tuple[bool, bool]] = {
    FAST: (True, True),
    STDLIB: (True, False),
    PLAIN: (False, False),
}
#: How many streams one timing runs (a stream takes a few hundred µs).
BATCH = 200
#: The ids the renderers write, which `setup_main` makes distinct per stream (as a
#: provider does: one id per response); Bedrock's and Ollama's events carry none.
IDS = (
    b"chatcmpl-rxstream",
    b"resp_test",
    b"msg_01rxstreamRenderedMessage",
    b"rxstream-gemini-0001",
    b"rxstream-cohere-0001",
)


def distinct(stream: Stream, k: int) -> Stream:
    """The stream with its ids made the `k`th response's (the same length: the same reads)."""
    body = b"".join(stream.pieces)
    for name in IDS:
        body = body.replace(name, name[:-6] + b"%06d" % k)
    pieces = [body[i : i + READ] for i in range(0, len(body), READ)]
    return dataclasses.replace(stream, pieces=pieces)


def batched(
    run: Callable[[Stream], Answer], way: tuple[bool, bool] | None, streams: list[Stream]
) -> Callable[[Stream], None]:
    """`run` over each stream of `streams`, the switch (`way`) set once around them all."""

    def runs(_: Stream) -> None:
        previous = FAST_PATHS(way[0]) if way is not None and FAST_PATHS is not None else None
        try:
            for stream in streams:
                run(stream)
        finally:
            if previous is not None and FAST_PATHS is not None:
                FAST_PATHS(previous)

    return runs


def setup_main(dialects_: list[str], repeats: int, quick: bool) -> int:
    """CPU µs per three-event stream, per dialect and way; 1 when a fast way costs more."""
    print("\n## The cost of a stream: three text events, µs of CPU per stream (median)")
    print(f"| dialect | hand loop | {FAST} | {STDLIB} | {PLAIN} | fast / plain | stdlib / plain |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    has_fast = getattr(_chunks, _FAST, None) is not None
    failures = []
    for dialect in dialects_:
        stream = make_stream(dialect, 3, "sent")
        truth = Answer(stream.text, *stream.usage)
        streams = [distinct(stream, k) for k in range(BATCH)]
        assert rxstream_run(fast=has_fast)(streams[-1]) == truth
        found: dict[str, Callable[[Stream], Any]] = {FLOOR: batched(FLOORS[dialect], None, streams)}
        for name, (on, typed) in SETUP_WAYS.items():
            if (typed and not has_fast) or (not on and FAST_PATHS is None):
                continue
            found[name] = batched(rxstream_run(fast=typed), (on, typed), streams)
        base = PLAIN if PLAIN in found else FLOOR
        us, against = measure(found, dataclasses.replace(stream, events=BATCH), repeats, base)
        row = [f"{us[name]:.1f}" if name in us else "-" for name in (FLOOR, *SETUP_WAYS)]
        ratios = [
            against[name] if name in us and base == PLAIN else None for name in (FAST, STDLIB)
        ]
        row += ["-" if r is None else f"{r:.2f}x" for r in ratios]
        print(f"| {dialect} | {' | '.join(row)} |")
        failures += [
            f"{dialect}: {name} costs {r:.2f}x the plain stream"
            for name, r in zip((FAST, STDLIB), ratios, strict=True)
            if r is not None and r > 1.0
        ]
    for failure in failures:
        print(f"MISSED: {failure}")
    return 0 if quick or not failures else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small streams; never fails")
    parser.add_argument(
        "--setup", action="store_true", help="the cost per stream of three-event streams"
    )
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--dialect", action="append", help="only these dialects")
    parser.add_argument(
        "--shape",
        choices=("rendered", "sent", "both"),
        default="both",
        help="the streams as the renderer writes them, as providers send them, or both",
    )
    args = parser.parse_args()
    n = 2_000 if args.quick else 20_000
    repeats = args.repeats or (3 if args.quick else 5)
    if args.setup:
        return setup_main(args.dialect or list(dialects.DIALECTS), repeats, args.quick)
    print(
        f"# rxstream dialect benchmarks ({'quick' if args.quick else 'full'}) — "
        f"{platform.python_implementation()} {platform.python_version()}, {platform.machine()}"
    )
    failures: list[str] = []
    summary: list[str] = []
    shapes = ("rendered", "sent") if args.shape == "both" else (args.shape,)
    runs = [(d, shape) for shape in shapes for d in args.dialect or dialects.DIALECTS]
    for dialect, shape in runs:
        if shape == "sent" and dialect in ("anthropic", "cohere"):
            continue  # the same bytes as rendered (see the top)
        stream = make_stream(dialect, n, shape)
        found = contenders(dialect, sdks=shape == "rendered")
        truth = Answer(stream.text, *stream.usage)
        for name, run in found.items():
            got = run(stream)
            if got != truth:
                print(f"{name} got the {dialect} stream wrong: {got!r:.200}", file=sys.stderr)
                return 2
        results, ratios = measure(found, stream, repeats)
        size = sum(map(len, stream.pieces))
        print(
            f"\n## {dialect}, {shape}: {n} text events, {size / 1e6:.1f} MB "
            f"in {len(stream.pieces)} reads"
        )
        print("| way of parsing | µs per event (median) | × hand loop |")
        print("|---|---:|---:|")
        for name, us in results.items():
            print(f"| {name} | {us:.2f} | {ratios[name]:.2f} |")
        print()
        paths = [f"{results[FLOOR]:.2f}"] + [
            f"{results[name]:.2f} ({ratios[name]:.2f}x)" if name in results else "-"
            for name in (STDLIB, FAST)
        ]
        summary.append(f"| {dialect}, {shape} | {' | '.join(paths)} |")
        for name, limit in TARGETS[dialect].items():
            if name not in ratios:
                continue
            ratio = ratios[name]
            verdict = "met" if ratio <= limit else "MISSED"
            print(f"- {name} / hand loop: {ratio:.2f}x (target <= {limit:g}x): {verdict}")
            if ratio > limit:
                failures.append(f"{dialect}, {shape}: {name} is {ratio:.2f}x the hand loop")
        if FAST in ratios and FAST not in TARGETS[dialect]:
            print(f"- {FAST} / hand loop: {ratios[FAST]:.2f}x")
        for auto, named in ((AUTO_STDLIB, STDLIB), (AUTO_FAST, FAST), (PLAIN, STDLIB)):
            if auto in ratios:
                print(f"- {auto} / {named}: {ratios[auto] / ratios[named]:.2f}x")
        if dialect in SDKS and SDKS[dialect][0] in results:
            label, _, _, target = SDKS[dialect]
            best = results.get(FAST, results[STDLIB])
            gain = results[label] / best
            gain_stdlib = results[label] / results[STDLIB]
            if target is None:
                print(f"- {label} / rxstream: {gain:.1f}x ({gain_stdlib:.1f}x stdlib)")
            else:
                verdict = "met" if gain >= target else "MISSED"
                print(
                    f"- {label} / rxstream: {gain:.1f}x ({gain_stdlib:.1f}x stdlib; "
                    f"target >= {target:g}x): {verdict}"
                )
                if gain < target:
                    failures.append(f"{dialect}: the SDK helper is only {gain:.1f}x rxstream")
    if summary:
        print("\n## What an event costs, per path (µs, median; × hand loop)")
        print("| dialect | hand loop | standard library | `fast` (typed msgspec) |")
        print("|---|---:|---:|---:|")
        for line in summary:
            print(line)
    for failure in failures:
        print(f"MISSED: {failure}")
    if failures and args.quick:
        print("(quick run: ratios are indicative only; the full run checks them)")
    return 0 if args.quick or not failures else 1


if __name__ == "__main__":
    raise SystemExit(main())

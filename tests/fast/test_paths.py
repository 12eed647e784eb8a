"""The shortcuts taken for speed give exactly what the plain paths give.

- `ChunkDecoder`'s two JSON paths (standard library; msgspec from the `fast`
  extra) agree on every text: same chunks, same errors, same messages.
- A chain of machine operators is fused into one subscription; it must emit
  what the same chain with the fusion broken (an identity `map` between every
  stage) emits, errors and `[DONE]` included, however the body is cut.
- `feed_all` (a batch of items in one call) equals `feed` item by item.
- `constructor(cls)` builds the very item `cls(...)` builds.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import reactivex
from hypothesis import given, settings
from hypothesis import strategies as st
from reactivex import GroupedObservable, Observable
from reactivex import operators as ops
from reactivex.testing import ReactiveTest, TestScheduler

import rxstream as rs
import rxstream._fast as fast_paths_module
import rxstream.core.dialects._shared as shared
from rxstream._fast import constructor
from rxstream.core import ChunkDecoder, dialects, pipeline
from rxstream.core.message import MessageAccumulator
from rxstream.core.pipeline import Handoff
from rxstream.core.sse import SSEParser
from rxstream.errors import StreamError
from rxstream.models import (
    ChatChunk,
    Finish,
    ReasoningDelta,
    SSEFrame,
    TextDelta,
    ToolCallDelta,
    Usage,
)
from rxstream.operators._chunk_input import chunks_or_deltas
from rxstream.testing.builders import text_chunk
from tests.support.fast import typed_decoding

DATA = Path(__file__).parent.parent / "data"
FIXTURES = sorted(DATA.glob("*/*.sse"))
FAST = fast_paths_module.msgspec_loads

needs_fast = pytest.mark.skipif(FAST is None, reason="the fast extra (msgspec) is not installed")


def outcome(data: str, fast: bool) -> tuple[str, Any]:
    """What a fresh decoder does with one frame of `data`: its chunks, or its error."""
    with typed_decoding(fast):
        decoder = ChunkDecoder()
    try:
        out = decoder.feed(SSEFrame(data))
    except StreamError as exc:
        return "error", (type(exc).__name__, str(exc))
    # repr tells -0.0 from 0.0 and keeps NaN comparable.
    return "ok", (repr([c.raw for c in out]), decoder.done)


# -- the two JSON paths -------------------------------------------------------------------

CASES = {
    "object": '{"choices": []}',
    "duplicate-keys": '{"a": 1, "a": 2}',
    "int-past-64-bits": '{"n": 123456789012345678901234567890}',
    "negative-int-past-64-bits": '{"n": -9223372036854775809}',
    "float-overflow": '{"x": 1e400}',
    "float-tiny": '{"x": 2.4703282292062328e-324}',
    "minus-zero": '{"x": -0.0, "y": -0}',
    "nan": '{"x": NaN}',
    "infinity": '{"x": -Infinity}',
    "escaped-lone-surrogate": '{"s": "\\ud800"}',
    "raw-lone-surrogate": '{"s": "\ud800"}',
    "surrogate-pair": '{"s": "\\ud83d\\ude42"}',
    "raw-control-character": '{"s": "a\x01b"}',
    "escaped-nul": '{"s": "\\u0000"}',
    "bom": '\ufeff{"a": 1}',
    "surrounding-blanks": ' \t{"a": 1}\r\n',
    "trailing-garbage": '{"a": 1} x',
    "two-objects": '{"a": 1}{"b": 2}',
    "trailing-comma": '{"a": [1,]}',
    "leading-zero": '{"a": 01}',
    "single-quotes": "{'a': 1}",
    "truncated": '{"a": "b',
    "array": "[1, 2]",
    "string": '"x"',
    "done": "[DONE]",
    "done-with-blanks": "  [DONE] ",
    "blank": "   ",
    "empty": "",
    "choices-not-a-list": '{"choices": {}}',
    "error-object": '{"error": {"message": "overloaded", "type": "server_error"}}',
}


@needs_fast
@pytest.mark.parametrize("data", CASES.values(), ids=CASES.keys())
def test_both_json_paths_agree(data: str) -> None:
    assert outcome(data, fast=True) == outcome(data, fast=False)


@needs_fast
@pytest.mark.parametrize("data", CASES.values(), ids=CASES.keys())
def test_the_standard_path_answers_as_json_loads(data: str) -> None:
    try:
        expected: Any = ("ok", repr(json.loads(data)))
    except ValueError as exc:
        expected = ("error", str(exc))
    try:
        got: Any = ("ok", repr(shared.stdlib_loads(data)))
    except ValueError as exc:
        got = ("error", str(exc))
    assert got == expected


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4)
    ),
    max_leaves=12,
)


@needs_fast
@settings(max_examples=200, deadline=None)
@given(value=st.dictionaries(st.text(max_size=5), JSON_VALUES, max_size=5), ascii=st.booleans())
def test_both_json_paths_agree_on_any_object(value: dict[str, Any], ascii: bool) -> None:
    data = json.dumps(value, ensure_ascii=ascii)
    assert outcome(data, fast=True) == outcome(data, fast=False)


@needs_fast
@settings(max_examples=200, deadline=None)
@given(data=st.text(alphabet='{}[]":,. \t\n-+0123456789eEtruefalsnNI\\u\x01\ud800a', max_size=30))
def test_both_json_paths_agree_on_any_text(data: str) -> None:
    assert outcome(data, fast=True) == outcome(data, fast=False)


def test_floats_round_trip_on_both_paths() -> None:
    # A spot check that the decoded numbers are the very same doubles.
    values = [0.1, 1 / 3, 5e-324, 1.7976931348623157e308, -2.5e-10]
    data = json.dumps({"x": values})
    for fast in (False, True) if FAST else (False,):
        kind, (raw, _) = outcome(data, fast)
        assert kind == "ok"
        assert raw == repr([{"x": values}])
    assert all(math.isfinite(v) for v in values)


# -- fused chains ---------------------------------------------------------------------------


def _unfused(*operators: Callable[[Observable[Any]], Observable[Any]]) -> list[Any]:
    """The operators with an identity `map` between each: no two of them can fuse."""
    out: list[Any] = []
    for operator in operators:
        out += [operator, ops.map(lambda x: x)]
    return out


@dataclass
class Seen:
    items: list[Any]
    end: tuple[str, str] | None = None


def observe(pieces: list[bytes], operators: list[Any]) -> Seen:
    seen = Seen([])

    def on_error(exc: Exception) -> None:
        seen.end = (type(exc).__name__, str(exc))

    def on_completed() -> None:
        seen.end = ("completed", "")

    reactivex.from_iterable(pieces).pipe(*operators).subscribe(
        seen.items.append, on_error, on_completed
    )
    return seen


def _groups() -> Callable[[Observable[Any]], Observable[Any]]:
    # split_by_delta_type, flattened back to (type, delta) pairs in arrival order.
    def pairs(group: GroupedObservable[Any, Any]) -> Observable[Any]:
        return group.pipe(ops.map(lambda d: (group.key, d)))

    return reactivex.compose(rs.split_by_delta_type(), ops.flat_map(pairs))


CHAINS: dict[str, Callable[[], list[Any]]] = {
    "lines": lambda: [rs.lines()],
    "frames": lambda: [rs.lines(), rs.sse_frames()],
    "chunks": lambda: [rs.lines(), rs.sse_frames(), rs.decode_chunks()],
    "deltas": lambda: [rs.lines(), rs.sse_frames(), rs.decode_chunks(), rs.deltas()],
    "messages": lambda: [
        rs.lines(),
        rs.sse_frames(),
        rs.decode_chunks(on_malformed="skip"),
        rs.deltas(),
        rs.accumulate_message(),
    ],
    "messages-from-chunks": lambda: [
        rs.lines(),
        rs.sse_frames(),
        rs.decode_chunks(),
        rs.accumulate_message(),
    ],
    "tools": lambda: [
        rs.lines(),
        rs.sse_frames(),
        rs.decode_chunks(),
        rs.deltas(),
        rs.accumulate_tool_calls(partial=True),
    ],
    "think-tags": lambda: [
        rs.lines(),
        rs.sse_frames(),
        rs.decode_chunks(),
        rs.deltas(),
        rs.think_tags(),
    ],
    "split": lambda: [rs.lines(), rs.sse_frames(), rs.decode_chunks(), _groups()],
}


def _same(pieces: list[bytes], chain: Callable[[], list[Any]]) -> Seen:
    fused = observe(pieces, chain())
    unfused = observe(pieces, _unfused(*chain()))
    assert fused == unfused
    assert fused.end is not None
    return fused


@pytest.mark.parametrize("chain", CHAINS.values(), ids=CHAINS.keys())
@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_fused_chains_emit_what_unfused_ones_emit(
    path: Path, chain: Callable[[], list[Any]]
) -> None:
    body = path.read_bytes()
    _same([body[i : i + 97] for i in range(0, len(body), 97)], chain)


def _event(data: str) -> bytes:
    return f"data: {data}\n\n".encode()


# Without the response's id and model, which would come first as a Metadata of their own.
TEXT = _event(json.dumps({k: v for k, v in text_chunk("Hi").items() if k not in ("id", "model")}))
STOP = _event(json.dumps({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}))
BODIES = {
    "done-then-garbage": TEXT + STOP + _event("[DONE]") + _event("{not json") + b"data: \xff",
    "malformed-mid-stream": TEXT + _event("{not json") + STOP,
    "truncated": TEXT,
    "provider-error": TEXT + b'event: error\ndata: {"message": "boom"}\n\n' + STOP,
    "line-too-long-after-done": TEXT + _event("[DONE]") + b"x" * 2_000_000,
    "line-too-long-before-done": TEXT + b"data: " + b"x" * 2_000_000 + b"\n\n",
    "no-done-all-finished": TEXT + STOP,
    "done-without-blank-line": TEXT + STOP + b"data: [DONE]",
    "comments-and-fields": b": ping\nid: 7\nretry: 10\n" + TEXT + b"event: other\n" + STOP,
    # The reasoning is read before the broken id: no delta of the chunk may get out.
    "wrong-type-mid-chunk": TEXT
    + _event(
        json.dumps({"choices": [{"delta": {"reasoning_content": "r", "tool_calls": [{"id": 7}]}}]})
    )
    + STOP,
    "nested-too-deep": TEXT + _event('{"choices": ' + "[" * 5000 + "]" * 5000 + "}") + STOP,
    "only-done": _event("[DONE]"),
    "nothing": b"",
    "usage-only": _event(json.dumps({"choices": [], "usage": {"prompt_tokens": 1}}))
    + _event("[DONE]"),
    "role-and-choice-without-deltas": _event(
        json.dumps({"choices": [{"index": 1, "delta": {"role": "tool", "content": "t"}}]})
    )
    + _event(json.dumps({"choices": [{"index": 2, "delta": {}, "finish_reason": "stop"}]}))
    + STOP.replace(b'"index": 0', b'"index": 1')
    + _event("[DONE]"),
    # The last event has no blank line: it comes out of the parser's close, and
    # what it carries must get through before the truncation error.
    "last-event-unterminated-then-truncated": TEXT + TEXT.rstrip(b"\n"),
    "last-event-unterminated-and-malformed": TEXT + b"data: {oops",
    "error-in-chunk-shape": TEXT + _event('{"type": "error", "message": "overloaded"}'),
}


@pytest.mark.parametrize("chain", CHAINS.values(), ids=CHAINS.keys())
@pytest.mark.parametrize("body", BODIES.values(), ids=BODIES.keys())
def test_fused_chains_end_as_unfused_ones_do(body: bytes, chain: Callable[[], list[Any]]) -> None:
    _same([body], chain)
    _same([body[i : i + 7] for i in range(0, len(body), 7)] if len(body) < 5000 else [body], chain)


@settings(max_examples=100, deadline=None)
@given(
    body=st.sampled_from(sorted(BODIES)).map(BODIES.get),
    cuts=st.lists(st.integers(min_value=1, max_value=400), max_size=12),
    chain=st.sampled_from(sorted(CHAINS)),
)
def test_fused_chains_agree_however_the_body_is_cut(
    body: bytes, cuts: list[int], chain: str
) -> None:
    pieces, rest = [], body
    for cut in cuts:
        pieces.append(rest[:cut])
        rest = rest[cut:]
    pieces.append(rest)
    _same([p for p in pieces if p], CHAINS[chain])


on_next = ReactiveTest.on_next
on_completed = ReactiveTest.on_completed
subscribe = ReactiveTest.subscribe


def test_the_chat_chain_is_read_in_one_pass() -> None:
    # The shortcuts are taken: the parser hands data to the decoder, which reads
    # each chunk once and feeds the accumulator itself.
    from rxstream.core import DeltaDecoder
    from rxstream.core._machine import Feeder
    from rxstream.core.lines import LineSplitter
    from rxstream.core.pipeline import Chained, fuse

    for middle in ([DeltaDecoder()], []):
        machines: list[Feeder[Any, Any]] = [
            LineSplitter(),
            SSEParser(),
            ChunkDecoder(),
            *middle,
            MessageAccumulator(),
        ]
        fused = fuse(list(machines))
        assert [type(m) for m in fused] == [LineSplitter, Chained]


def test_a_fused_chain_releases_the_source_at_done() -> None:
    scheduler = TestScheduler()
    source = scheduler.create_hot_observable(
        on_next(210, TEXT),
        on_next(220, _event("[DONE]")),
        on_next(230, TEXT),
        on_completed(300),
    )
    result = scheduler.start(
        lambda: source.pipe(rs.lines(), rs.sse_frames(), rs.decode_chunks(), rs.deltas())
    )
    assert result.messages == [on_next(210, TextDelta("Hi")), on_completed(220)]
    assert source.subscriptions == [subscribe(200, 220)]


def test_a_fused_chain_is_released_when_its_observer_disposes() -> None:
    scheduler = TestScheduler()
    source = scheduler.create_hot_observable(
        on_next(210, TEXT + TEXT), on_next(230, TEXT), on_completed(300)
    )
    result = scheduler.start(
        lambda: source.pipe(
            rs.lines(), rs.sse_frames(), rs.decode_chunks(), rs.deltas(), ops.take(1)
        )
    )
    assert result.messages == [on_next(210, TextDelta("Hi")), on_completed(210)]
    assert source.subscriptions == [subscribe(200, 210)]


def test_each_subscription_of_a_fused_chain_has_its_own_machines() -> None:
    chain = reactivex.from_iterable([TEXT, STOP]).pipe(
        rs.lines(), rs.sse_frames(), rs.decode_chunks(), rs.deltas(), rs.accumulate_message()
    )
    first: list[rs.Message] = []
    second: list[rs.Message] = []
    chain.subscribe(first.append)
    chain.subscribe(second.append)
    assert first == second
    assert [m.content for m in first] == ["Hi"]


def test_an_intermediate_fused_observable_still_works_alone() -> None:
    frames = reactivex.from_iterable([TEXT, STOP]).pipe(rs.lines(), rs.sse_frames())
    chunk_stream = frames.pipe(rs.decode_chunks())
    seen_frames: list[SSEFrame] = []
    seen_chunks: list[ChatChunk] = []
    frames.subscribe(seen_frames.append)
    chunk_stream.subscribe(seen_chunks.append)
    assert [f.data for f in seen_frames] == [TEXT[6:-2].decode(), STOP[6:-2].decode()]
    assert [c.raw for c in seen_chunks] == [json.loads(f.data) for f in seen_frames]


# -- fused dialect chains ---------------------------------------------------------------------

WIRE_FILES = sorted(p for p in DATA.glob("*/*") if p.suffix in (".sse", ".ndjson", ".eventstream"))


def _front(path: Path) -> list[Any]:
    if path.suffix == ".eventstream":
        return [rs.eventstream_frames()]
    if path.suffix == ".ndjson":
        return [rs.lines()]
    return [rs.lines(), rs.sse_frames()]


def _dialects_of(path: Path) -> list[str]:
    """The decode() spellings to try on a recording: every dialect of its wire kind, and auto."""
    kind = {".eventstream": "eventstream", ".ndjson": "ndjson"}.get(path.suffix, "sse")
    names = [d for d in dialects.DIALECTS if dialects.renderer(d).wire == kind]
    return [*names, "auto"]


def _chain(path: Path, name: str, *, skip: bool, message: bool) -> Callable[[], list[Any]]:
    def make() -> list[Any]:
        decode = rs.decode(name, on_malformed="skip") if skip else rs.decode(name)
        return [*_front(path), decode, *([rs.accumulate_message()] if message else [])]

    return make


def _decode_chains(path: Path) -> list[tuple[str, Callable[[], list[Any]]]]:
    chains: list[tuple[str, Callable[[], list[Any]]]] = []
    for name in _dialects_of(path):
        chains += [
            (name, _chain(path, name, skip=False, message=False)),
            (f"{name}+message", _chain(path, name, skip=False, message=True)),
            (f"{name}+skip+message", _chain(path, name, skip=True, message=True)),
        ]
    return chains


@pytest.mark.parametrize("path", WIRE_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_fused_decode_chains_emit_what_unfused_ones_emit(path: Path) -> None:
    # Every recording through every dialect's decoder of its wire kind (most of
    # them the wrong one, which must fail alike), whole and cut short.
    body = path.read_bytes()
    for _, chain in _decode_chains(path):
        for cut in (body, body[: len(body) // 2], body[: len(body) // 3] + body[len(body) // 2 :]):
            _same([cut[i : i + 97] for i in range(0, len(cut), 97)], chain)


def test_every_decoder_of_a_chat_stream_is_read_in_one_pass() -> None:
    # The parser hands the data of "message" frames to the decoders that read
    # nothing else of them; the openai-chat decoder reads each chunk once.
    from rxstream.core._machine import Feeder
    from rxstream.core.lines import LineSplitter
    from rxstream.core.pipeline import Chained, fuse

    for name in ("openai-chat", "gemini", "auto"):
        machines: list[Feeder[Any, Any]] = [
            LineSplitter(),
            SSEParser(),
            dialects.decoder(name),
            MessageAccumulator(),
        ]
        fused = fuse(machines)
        assert [type(m) for m in fused][:2] == [LineSplitter, Chained], name
    # Once fed, a decoder takes frames only: no shortcut is offered any more.
    decoder = dialects.decoder("gemini")
    decoder.feed(SSEFrame(""))
    assert pipeline.fuse_pair(SSEParser(), decoder) is None


def test_auto_hands_strings_on_as_frames_to_a_decoder_that_wants_frames() -> None:
    # Taken from a fused parser, a str is the data of a "message" frame: the
    # Anthropic decoder reads frames, so it gets frames.
    start = {"type": "content_block_start", "index": 0, "content_block": {"type": "text"}}
    delta = {
        "type": "content_block_delta",
        "index": 0,
        "delta": {"type": "text_delta", "text": "Hi"},
    }
    auto = dialects.AutoDecoder()
    assert auto._take(Handoff.STRINGS)
    out = auto.feed(
        SSEFrame('{"type": "message_start", "message": {"usage": {}}}', "message_start")
    )
    out += auto.feed(json.dumps(start))
    auto.feed_all([json.dumps(delta), json.dumps(delta)], out)
    assert auto.dialect == "anthropic"
    assert out == [TextDelta("Hi"), TextDelta("Hi")]


def test_auto_takes_strings_only_before_its_first_item() -> None:
    auto = dialects.AutoDecoder()
    auto.feed(SSEFrame(""))
    assert not auto._take(Handoff.STRINGS)
    with pytest.raises(TypeError, match=r"add rs\.sse_frames\(\)"):
        auto.feed("data: {}")


def test_auto_refuses_input_after_the_end_as_the_picked_decoder_does() -> None:
    auto = dialects.AutoDecoder()
    auto.feed(SSEFrame(json.dumps(text_chunk("Hi"))))
    auto.feed(SSEFrame("[DONE]"))
    assert auto.done
    with pytest.raises(RuntimeError, match=r"this OpenAIChatDecoder is done \(\[DONE\] arrived\)"):
        auto.feed(SSEFrame("[DONE]"))


# -- feed_all ---------------------------------------------------------------------------------

LINES = st.lists(
    st.sampled_from(
        [
            "",
            "data: a",
            "data:b",
            "data:  c",
            ": ping",
            "event: e",
            "id: 1",
            "retry: 5",
            "x",
            "\ufeffdata: bom",
        ]
    ),
    max_size=30,
)


@settings(max_examples=200, deadline=None)
@given(lines=LINES, cut=st.integers(min_value=0, max_value=30))
def test_sse_feed_all_is_feed_line_by_line(lines: list[str], cut: int) -> None:
    one, many = SSEParser(), SSEParser()
    expected = [frame for line in lines for frame in one.feed(line)] + one.close()
    got: list[SSEFrame] = []
    many.feed_all(lines[:cut], got)
    many.feed_all(lines[cut:], got)
    assert got + many.close() == expected


def test_sse_feed_all_refuses_input_after_close() -> None:
    parser = SSEParser()
    parser.close()
    with pytest.raises(RuntimeError, match="closed"):
        parser.feed_all(["data: x"], [])


DELTAS = st.lists(
    st.one_of(
        st.builds(TextDelta, st.sampled_from(["a", "b"]), st.integers(0, 2)),
        st.builds(ReasoningDelta, st.sampled_from(["r"]), st.integers(0, 2)),
        st.builds(
            ToolCallDelta,
            st.integers(0, 2),
            st.sampled_from(["{", "}", ""]),
            st.sampled_from([None, "c1", "c2"]),
            st.sampled_from([None, "f"]),
            st.integers(0, 2),
        ),
        st.builds(Finish, st.sampled_from(["stop", "tool_calls"]), st.integers(0, 2)),
        st.builds(Usage, st.integers(0, 9), st.integers(0, 9), st.integers(0, 18)),
        st.builds(
            ChatChunk,
            st.just({"choices": [{"index": 0, "delta": {"role": "tool", "content": "c"}}]}),
        ),
    ),
    max_size=25,
)


@settings(max_examples=200, deadline=None)
@given(items=DELTAS)
def test_message_feed_all_is_feed_item_by_item(items: list[Any]) -> None:
    # Chunks too: the machines `rs.accumulate_message()` runs (a delta decoder first).
    pair = chunks_or_deltas(MessageAccumulator, "rs.accumulate_message()", reads_chunks=True)
    one, many = pair(), pair()
    for item in items:
        assert one.feed(item) == []
    out: list[rs.Message] = []
    many.feed_all(items, out)
    assert out == []
    assert many.close() == one.close()


def test_message_feed_all_refuses_what_feed_refuses() -> None:
    accumulator = MessageAccumulator()
    with pytest.raises(TypeError, match=r"rs\.accumulate_message\(\) takes delta items"):
        accumulator.feed_all([TextDelta("a"), "nope"], [])  # type: ignore[list-item]
    with pytest.raises(RuntimeError, match="is failed; it takes no more input"):
        accumulator.feed_all([TextDelta("a")], [])


# -- constructor ------------------------------------------------------------------------------

BUILT: dict[str, tuple[type, tuple[Any, ...]]] = {
    "frame": (SSEFrame, ("d", "message", "7", 10)),
    "chunk": (ChatChunk, ({"choices": []},)),
    "text": (TextDelta, ("t", 1)),
    "tool-call": (ToolCallDelta, (0, "{}", "c1", "f", 2)),
}


@pytest.mark.parametrize(("cls", "args"), BUILT.values(), ids=BUILT.keys())
def test_constructor_builds_what_the_class_builds(cls: type, args: tuple[Any, ...]) -> None:
    build: Callable[..., Any] = constructor(cls)
    assert build is not cls
    item, expected = build(*args), cls(*args)
    assert type(item) is cls
    assert item == expected
    assert repr(item) == repr(expected)
    if cls is not ChatChunk:  # a dict field is unhashable either way
        assert hash(item) == hash(expected)
    # Frozen like any other: assigning a field, or a new attribute, fails the same way.
    for target in (item, expected):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(target, dataclasses.fields(cls)[0].name, None)
    assert _failure(lambda: setattr(item, "x", 1)) == _failure(lambda: setattr(expected, "x", 1))


def _failure(action: Callable[[], None]) -> str:
    try:
        action()
    except Exception as exc:
        return type(exc).__name__
    return "no error"


@dataclass(frozen=True)
class _NoSlots:
    a: int


@dataclass(slots=True)
class _NotFrozen:
    a: int


@dataclass(frozen=True, slots=True)
class _Checked:
    a: int

    def __post_init__(self) -> None:
        if self.a < 0:
            raise ValueError("negative")


class _Plain:
    pass


@pytest.mark.parametrize("cls", [_NoSlots, _NotFrozen, _Checked, _Plain], ids=lambda c: c.__name__)
def test_constructor_leaves_other_classes_alone(cls: type) -> None:
    assert constructor(cls) is cls

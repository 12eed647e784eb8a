"""What every core machine shares: the `Machine` protocol, one lifecycle, one way to refuse misuse.

- Every machine is a `Machine` (`feed`, `feed_all`, `close`, `done`).
- After `close()`, or after raising, `feed`, `feed_all` and `close` raise
  `RuntimeError("this <Class> is closed; it takes no more input")` (`failed`).
- An item of the wrong kind is a `TypeError` that names the operator the user
  wrote and the one probably missing in front of it; never an AttributeError
  from inside, never an internal class name.
- `Chained` (what `rxstream.core.pipeline.fuse` builds) gives what its two machines give in a row.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from rxstream.core._machine import Machine, MachineBase, Stage, wrong_input
from rxstream.core.dialects.openai_chat.chunks import ChunkDecoder
from rxstream.core.dialects.openai_chat.deltas import DeltaDecoder
from rxstream.core.lines import LineSplitter
from rxstream.core.message import MessageAccumulator
from rxstream.core.pipeline import Chained, fuse_pair
from rxstream.core.sse import SSEParser
from rxstream.core.think import ThinkTagSplitter
from rxstream.core.tokens import TokenCounter
from rxstream.core.tools import ToolCallAccumulator
from rxstream.errors import LineTooLongError, MalformedChunkError, TruncatedStreamError
from rxstream.models import ChatChunk, Finish, Message, SSEFrame, TextDelta, ToolCall
from rxstream.operators._chunk_input import chunks_or_deltas
from rxstream.testing.builders import text_chunk

FINISHED = ChatChunk({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
FINISHED_FRAME = SSEFrame('{"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}')

# (class, a good item, an item that makes it raise a StreamError or TypeError)
MACHINES: dict[str, tuple[Callable[[], Any], Any, Any]] = {
    "LineSplitter": (lambda: LineSplitter(line_limit=4), b"ab\n", b"abcdefgh\n"),
    "SSEParser": (SSEParser, "data: x", b"data: x"),
    "ChunkDecoder": (ChunkDecoder, FINISHED_FRAME, SSEFrame("{oops")),
    "DeltaDecoder": (DeltaDecoder, FINISHED, ChatChunk({"choices": 1})),
    "MessageAccumulator": (MessageAccumulator, TextDelta("a"), 42),
    "ThinkTagSplitter": (ThinkTagSplitter, TextDelta("a"), "x"),
}
NAMES = list(MACHINES)


@pytest.mark.parametrize("name", NAMES)
def test_every_machine_is_a_machine(name: str) -> None:
    factory, _, _ = MACHINES[name]
    machine = factory()
    assert isinstance(machine, Machine)
    assert isinstance(machine, MachineBase)
    assert machine.done is False


@pytest.mark.parametrize("name", NAMES)
def test_after_close_every_verb_is_refused(name: str) -> None:
    factory, good, _ = MACHINES[name]
    machine = factory()
    machine.feed(good)
    machine.close()
    refusal = re.escape(f"this {name} is closed; it takes no more input")
    with pytest.raises(RuntimeError, match=refusal):
        machine.feed(good)
    with pytest.raises(RuntimeError, match=refusal):
        machine.feed_all([good], [])
    with pytest.raises(RuntimeError, match=refusal):
        machine.close()


@pytest.mark.parametrize("name", NAMES)
def test_after_an_error_every_verb_is_refused(name: str) -> None:
    factory, good, bad = MACHINES[name]
    machine = factory()
    with pytest.raises((LineTooLongError, MalformedChunkError, TypeError)):
        machine.feed(bad)
    refusal = re.escape(f"this {name} is failed; it takes no more input")
    with pytest.raises(RuntimeError, match=refusal):
        machine.feed(good)
    with pytest.raises(RuntimeError, match=refusal):
        machine.feed_all([good], [])
    with pytest.raises(RuntimeError, match=refusal):
        machine.close()


@pytest.mark.parametrize("name", NAMES)
def test_feed_all_is_feed_one_by_one(name: str) -> None:
    factory, good, _ = MACHINES[name]
    one, many = factory(), factory()
    expected = one.feed(good) + one.feed(good) + one.close()
    out: list[Any] = []
    many.feed_all([good, good], out)
    assert out + many.close() == expected


def test_a_raising_close_fails_the_machine() -> None:
    decoder = ChunkDecoder()
    decoder.feed(SSEFrame(text_chunk_json("a")))
    with pytest.raises(TruncatedStreamError):
        decoder.close()
    with pytest.raises(RuntimeError, match="this ChunkDecoder is failed"):
        decoder.close()


def text_chunk_json(text: str) -> str:
    import json

    return json.dumps(text_chunk(text))


# -- misuse: the wrong kind of item -------------------------------------------------------


# (machine, item, what the message must say)
# The machines the operators over the delta machines run: a delta decoder first.
ACCUMULATE_MESSAGE = chunks_or_deltas(
    MessageAccumulator, "rs.accumulate_message()", reads_chunks=True
)
THINK_TAGS = chunks_or_deltas(ThinkTagSplitter, "rs.think_tags()")

MISUSE: list[tuple[str, Callable[[], Any], Any, str]] = [
    (
        "decode_chunks fed lines",
        ChunkDecoder,
        "data: {}",
        "rs.decode_chunks() takes SSEFrame items, got a str ('data: {}'): "
        "add rs.sse_frames() before it",
    ),
    (
        "decode_chunks fed bytes",
        ChunkDecoder,
        b"data: {}\n\n",
        "rs.decode_chunks() takes SSEFrame items, got a bytes",
    ),
    (
        "decode_chunks fed bytes: the hint",
        ChunkDecoder,
        b"data: {}\n\n",
        "add rs.lines() and rs.sse_frames() before it",
    ),
    (
        "decode_chunks fed chunks",
        ChunkDecoder,
        FINISHED,
        "got a ChatChunk",
    ),
    (
        "decode_chunks twice",
        ChunkDecoder,
        FINISHED,
        "which rs.decode_chunks() gives: is it in the pipe twice?",
    ),
    (
        "sse_frames fed bytes",
        SSEParser,
        b"data: {}",
        "rs.sse_frames() takes str lines, got a bytes (b'data: {}'): add rs.lines() before it",
    ),
    (
        "sse_frames fed frames",
        SSEParser,
        SSEFrame("x"),
        "which rs.sse_frames() gives: is it in the pipe twice?",
    ),
    ("lines fed numbers", LineSplitter, 7, "rs.lines() takes str or bytes chunks, got an int (7)"),
    (
        "lines fed frames",
        LineSplitter,
        SSEFrame("x"),
        "which rs.sse_frames() gives: rs.lines() belongs before rs.sse_frames()",
    ),
    (
        "accumulate_message fed frames",
        ACCUMULATE_MESSAGE,
        SSEFrame("{}"),
        "rs.accumulate_message() takes ChatChunk or delta items, got an SSEFrame "
        "(SSEFrame(data='{}', event='message', id=None, retry=None)): "
        "add rs.decode_chunks() before it",
    ),
    (
        "accumulate_message fed lines",
        ACCUMULATE_MESSAGE,
        "data: {}",
        "add rs.sse_frames() and rs.decode_chunks() before it",
    ),
    (
        "accumulate_message fed bytes",
        ACCUMULATE_MESSAGE,
        b"data: {}",
        "add rs.lines(), rs.sse_frames() and rs.decode_chunks() before it",
    ),
    (
        "accumulate_message fed its own output",
        ACCUMULATE_MESSAGE,
        Message(),
        "rs.accumulate_message() takes ChatChunk or delta items, got a Message",
    ),
    (
        "think_tags fed frames",
        THINK_TAGS,
        SSEFrame("{}"),
        "rs.think_tags() takes ChatChunk or delta items, got an SSEFrame",
    ),
    (
        "the message machine fed chunks",
        MessageAccumulator,
        FINISHED,
        "rs.accumulate_message() takes delta items, got a ChatChunk",
    ),
    (
        "the message machine fed chunks: the hint",
        MessageAccumulator,
        FINISHED,
        "add rs.deltas() before it",
    ),
    (
        "the message machine fed frames",
        MessageAccumulator,
        SSEFrame("{}"),
        "add rs.decode_chunks() and rs.deltas() before it",
    ),
    (
        "the think machine fed chunks",
        ThinkTagSplitter,
        FINISHED,
        "rs.think_tags() takes delta items, got a ChatChunk",
    ),
    (
        "the tool-call machine fed chunks",
        ToolCallAccumulator,
        FINISHED,
        "rs.accumulate_tool_calls() takes delta items, got a ChatChunk",
    ),
    (
        "the token machine fed chunks",
        lambda: TokenCounter(str.split),
        FINISHED,
        "rs.count_tokens() takes delta items, got a ChatChunk",
    ),
    (
        "deltas fed frames",
        DeltaDecoder,
        SSEFrame("{}"),
        "rs.deltas() takes ChatChunk or delta items, got an SSEFrame",
    ),
    (
        "deltas fed a dict",
        DeltaDecoder,
        {"choices": []},
        "wrap a decoded chunk as rs.ChatChunk(raw)",
    ),
    (
        "deltas fed tool calls",
        DeltaDecoder,
        ToolCall(0, "c", "f", "{}"),
        "rs.deltas() takes ChatChunk or delta items, got a ToolCall",
    ),
]


@pytest.mark.parametrize(
    ("factory", "item", "words"), [c[1:] for c in MISUSE], ids=[c[0] for c in MISUSE]
)
def test_misuse_names_the_operator_and_the_fix(
    factory: Callable[[], Any], item: Any, words: str
) -> None:
    one, many = factory(), factory()
    with pytest.raises(TypeError) as by_feed:
        one.feed(item)
    with pytest.raises(TypeError) as by_feed_all:
        many.feed_all([item], [])
    for info in (by_feed, by_feed_all):
        assert words in str(info.value)
        # Never the AttributeError of a machine reading a field the item lacks.
        context = info.value.__context__
        assert info.value.__suppress_context__ or not isinstance(context, AttributeError)


def test_a_later_line_of_another_type_is_named_too() -> None:
    parser = SSEParser()
    parser.feed("data: a")
    with pytest.raises(TypeError, match=r"rs\.sse_frames\(\) takes str lines, got a bytes"):
        parser.feed_all(["", b"data: b", b""], [])  # type: ignore[list-item]  # bytes, on purpose
    parser = SSEParser()
    with pytest.raises(TypeError, match=r"got a NoneType \(None\)"):
        # A falsy non-line is no blank line.
        parser.feed_all(["data: a", None], [])  # type: ignore[list-item]  # None, on purpose


def test_lines_refuses_a_mix_of_str_and_bytes() -> None:
    splitter = LineSplitter()
    splitter.feed("a\n")
    with pytest.raises(TypeError, match=r"rs\.lines\(\) takes the str chunks it began with"):
        splitter.feed(b"b\n")


def test_the_hint_is_bounded() -> None:
    error = wrong_input("x" * 10_000, "rs.decode_chunks()", Stage.FRAMES)
    assert len(str(error)) < 300


# -- Chained: two machines as one -------------------------------------------------------------


class _Doubler(MachineBase):
    """A machine that gives each item twice, and fails on "bad"; closing flushes "end"."""

    def feed(self, item: str) -> list[str]:
        out: list[str] = []
        self.feed_all([item], out)
        return out

    def feed_all(self, items: list[str], out: list[str]) -> None:
        if self._state != "open":
            self._refuse()
        for item in items:
            if item == "bad":
                self._state = "failed"
                raise ValueError("bad")
            out += [item, item]

    def close(self) -> list[str]:
        self._closing()
        return ["end"]


class _UntilStop(MachineBase):
    """A machine that passes items on until "stop", which makes it done."""

    def __init__(self) -> None:
        super().__init__()
        self._done = False

    @property
    def done(self) -> bool:
        return self._done

    def feed(self, item: str) -> list[str]:
        out: list[str] = []
        self.feed_all([item], out)
        return out

    def feed_all(self, items: list[str], out: list[str]) -> None:
        for item in items:
            if item == "stop":
                self._done = True
                return
            out.append(item.upper())

    def close(self) -> list[str]:
        self._closing()
        return ["closed"]


def test_chained_feeds_the_lower_machine_what_the_upper_one_gives() -> None:
    pair = Chained(_Doubler(), _UntilStop())
    out: list[str] = []
    pair.feed_all(["a", "b"], out)
    assert out == ["A", "A", "B", "B"]
    assert pair.close() == ["END", "closed"]


def test_chained_passes_on_what_came_before_an_error() -> None:
    pair = Chained(_Doubler(), _UntilStop())
    out: list[str] = []
    with pytest.raises(ValueError, match="bad"):
        pair.feed_all(["a", "bad"], out)
    assert out == ["A", "A"]


def test_chained_is_done_when_the_lower_machine_is() -> None:
    pair = Chained(_Doubler(), _UntilStop())
    out: list[str] = []
    pair.feed_all(["a", "stop", "b"], out)
    assert out == ["A", "A"]
    assert pair.done


def test_chained_closes_the_lower_machine_when_the_upper_one_is_done() -> None:
    pair = Chained(_UntilStop(), _Doubler())
    out: list[str] = []
    pair.feed_all(["a", "stop"], out)
    assert out == ["A", "A", "end"]
    assert pair.done
    assert pair.close() == []  # the lower one is closed already


def test_close_into_keeps_what_came_before_an_error() -> None:
    decoder = ChunkDecoder()
    parser = SSEParser()
    pair = fuse_pair(parser, decoder)
    assert isinstance(pair, Chained)
    pair.feed_all(["data: " + text_chunk_json("a")], [])
    out: list[Any] = []
    with pytest.raises(TruncatedStreamError):
        pair.close_into(out)  # the unterminated event is flushed, decoded, then found short
    assert [c.raw for c in out] == [text_chunk("a")]


# -- fuse: the shortcuts a chain takes --------------------------------------------------------


def test_fuse_only_before_any_input() -> None:
    decoder = ChunkDecoder()
    decoder.feed(FINISHED_FRAME)
    assert fuse_pair(decoder, DeltaDecoder()) is None
    fresh = ChunkDecoder()
    used = DeltaDecoder()
    used.feed(FINISHED)
    assert fuse_pair(fresh, used) is None
    assert fuse_pair(ChunkDecoder(), ThinkTagSplitter()) is None
    parser = SSEParser()
    parser.feed("data: x")
    assert fuse_pair(parser, ChunkDecoder()) is None


def test_a_fused_decoder_gives_the_deltas_the_two_give() -> None:
    frames = [
        SSEFrame('{"choices": [{"index": 0, "delta": {"role": "tool", "content": "a"}}]}'),
        FINISHED_FRAME,
        FINISHED_FRAME,
        SSEFrame("[DONE]"),
    ]
    decoder, deltas = ChunkDecoder(), DeltaDecoder()
    apart = [d for f in frames for c in decoder.feed(f) for d in deltas.feed(c)]
    fused = ChunkDecoder()
    assert fuse_pair(fused, DeltaDecoder()) is fused
    # `feed` is typed to give chunks; fused, the decoder gives the deltas.
    got: list[object] = [d for f in frames for d in fused.feed(f)]
    assert got == apart == [TextDelta("a"), Finish("stop")]


def test_a_fused_message_accumulator_keeps_roles_and_choices() -> None:
    frames = [
        SSEFrame('{"choices": [{"index": 1, "delta": {"role": "tool", "content": "a"}}]}'),
        SSEFrame('{"choices": [{"index": 2, "delta": {}}]}'),
        SSEFrame('{"choices": [{"index": 1, "delta": {}, "finish_reason": "stop"}]}'),
        SSEFrame("[DONE]"),
    ]
    # Apart: the chunks go through the machines `rs.accumulate_message()` runs.
    decoder, acc = (
        ChunkDecoder(),
        chunks_or_deltas(MessageAccumulator, "rs.accumulate_message()", reads_chunks=True)(),
    )
    for frame in frames:
        for chunk in decoder.feed(frame):
            acc.feed(chunk)
    apart = acc.close()
    # Fused with the accumulator itself, and with the operator's pair (delta decoder first).
    for below in (MessageAccumulator(), ACCUMULATE_MESSAGE()):
        pair = fuse_pair(ChunkDecoder(), below)
        assert pair is not None
        out: list[Message] = []
        pair.feed_all(frames, out)  # [DONE] closes the accumulator at once
        assert out == apart
        assert [(m.choice, m.role, m.content) for m in out] == [
            (1, "tool", "a"),
            (2, "assistant", ""),
        ]

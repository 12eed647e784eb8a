"""The `"anthropic"` dialect: Messages API SSE frames -> deltas, and deltas -> frames."""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import reactivex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rxstream as rs
from rxstream.core.dialects import AutoDecoder, decoder, detect, renderer
from rxstream.core.dialects.anthropic import (
    ERROR_TYPES,
    AnthropicDecoder,
    AnthropicRenderer,
    http_error,
)
from rxstream.core.lines import LineSplitter
from rxstream.core.message import MessageAccumulator
from rxstream.core.sse import SSEParser
from rxstream.errors import (
    EmptyStreamError,
    MalformedChunkError,
    ProviderError,
    StreamError,
    TruncatedStreamError,
)
from rxstream.models import (
    Citation,
    Delta,
    EmptyCitations,
    Finish,
    Message,
    MessageBlock,
    Metadata,
    ReasoningDelta,
    ReasoningState,
    ServerToolCall,
    ServerToolResult,
    SSEFrame,
    TextBlock,
    TextBlockStart,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    Usage,
)
from tests.support.chunking import chunkings
from tests.support.dialects import outcome, wire_bytes
from tests.support.fast import WAYS, learning_at_once, way
from tests.support.json_paths import json_path  # noqa: F401  (every test runs on both JSON paths)
from tests.support.recordings.anthropic import (
    RECORDINGS,
    TAX_ARGS,
)

DATA = Path(__file__).parents[3] / "data" / "anthropic"


# --------------------------------------------------------------------------- helpers


def E(kind: str, event: str | None = None, /, **fields: Any) -> SSEFrame:
    """An Anthropic event frame: `event: <kind>` and `{"type": kind, **fields}`."""
    return SSEFrame(json.dumps({"type": kind, **fields}), event or kind)


def start(index: int, **block: Any) -> SSEFrame:
    return E("content_block_start", index=index, content_block=block)


def delta(index: int, **fields: Any) -> SSEFrame:
    return E("content_block_delta", index=index, delta=fields)


def stop(index: int) -> SSEFrame:
    return E("content_block_stop", index=index)


def text(index: int, value: str) -> SSEFrame:
    return delta(index, type="text_delta", text=value)


MESSAGE_START = E(
    "message_start",
    message={
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-x",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 1},
    },
)
START_META = Metadata({"id": "msg_1", "model": "claude-x"})


def message_delta(reason: str | None = "end_turn", **usage: int) -> SSEFrame:
    return E(
        "message_delta",
        delta={"stop_reason": reason, "stop_sequence": None},
        usage=usage or {"output_tokens": 5},
    )


MESSAGE_STOP = E("message_stop")


def resumed_start(content: list[Any], reason: str | None = None) -> SSEFrame:
    """A message_start that carries blocks whole (and maybe its stop_reason already)."""
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-x",
        "content": content,
        "stop_reason": reason,
        "usage": {"input_tokens": 4, "output_tokens": 0},
    }
    return E("message_start", message=message)


PING = SSEFrame('{"type": "ping"}', "ping")


def feed(frames: list[SSEFrame], **options: Any) -> tuple[list[Delta], AnthropicDecoder]:
    dec = AnthropicDecoder(**options)
    out: list[Delta] = []
    for frame in frames:
        out += dec.feed(frame)
    return out, dec


def push(dec: AnthropicDecoder, frames: list[SSEFrame], out: list[Delta]) -> None:
    """Feed frames one at a time into `out` (what came before an error stays there)."""
    for frame in frames:
        out += dec.feed(frame)


def run_all(frames: list[SSEFrame]) -> list[Delta]:
    """Feed one at a time and all at once (`feed_all`, the operator's path); they must agree."""
    one, dec = feed(frames)
    if dec.done:
        one += dec.close()
    all_at_once: list[Delta] = []
    dec2 = AnthropicDecoder()
    dec2.feed_all(frames, all_at_once)
    if dec2.done:
        all_at_once += dec2.close()
    assert all_at_once == one
    return one


def message_of(pieces: list[bytes], dialect: str = "anthropic") -> Message:
    out, errors = outcome(pieces, dialect)
    if errors:
        raise errors[0]
    (message,) = out
    assert isinstance(message, Message)
    return message


def core_message(pieces: list[bytes]) -> Message:
    """The same pipeline as bare core machines (fast enough to try every split)."""
    lines, sse, dec, acc = LineSplitter(), SSEParser(), AnthropicDecoder(), MessageAccumulator()

    def frames(items: list[SSEFrame]) -> None:
        for frame in items:
            if not dec.done:
                for d in dec.feed(frame):
                    acc.feed(d)

    for piece in pieces:
        for line in lines.feed(piece):
            frames(sse.feed(line))
    for line in lines.close():
        frames(sse.feed(line))
    frames(sse.close())
    for d in dec.close():
        acc.feed(d)
    (message,) = acc.close()
    return message


def full(message: Message) -> tuple[Any, ...]:
    """Everything a message holds, the fields outside its equality included."""
    return (
        message,
        message.finish_raw,
        message.citations,
        tuple((c.start, c.end) for c in message.citations),
        message.server_tools,
        message.reasoning_state,
        message.metadata,
    )


# --------------------------------------------------------------------------- recordings


def test_every_recording_is_checked() -> None:
    assert sorted(p.name for p in DATA.glob("*.sse")) == sorted(RECORDINGS)


@pytest.mark.parametrize("dialect", ["anthropic", "auto"])
@pytest.mark.parametrize("name", sorted(RECORDINGS))
def test_recording_meaning(name: str, dialect: str) -> None:
    data = (DATA / name).read_bytes()
    RECORDINGS[name](message_of([data], dialect))
    # One byte at a time gives the same message, to the last field.
    assert full(message_of([data[i : i + 1] for i in range(len(data))], dialect)) == full(
        message_of([data], dialect)
    )


@pytest.mark.parametrize("name", sorted(n for n in RECORDINGS if (DATA / n).stat().st_size <= 2500))
def test_small_recordings_split_at_every_index(name: str) -> None:
    data = (DATA / name).read_bytes()
    expected = full(core_message([data]))
    RECORDINGS[name](expected[0])
    for how, pieces in chunkings(data):
        assert full(core_message(pieces)) == expected, how


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    name=st.sampled_from(sorted(RECORDINGS)),
    cuts=st.lists(st.integers(0, 90_000), max_size=12),
    dialect=st.sampled_from(["anthropic", "auto"]),
)
def test_recordings_under_any_chunking(name: str, cuts: list[int], dialect: str) -> None:
    data = (DATA / name).read_bytes()
    bounds = sorted({min(c, len(data)) for c in cuts} | {0, len(data)})
    RECORDINGS[name](message_of([data[a:b] for a, b in itertools.pairwise(bounds)], dialect))


def test_recording_deltas_in_wire_order() -> None:
    data = (DATA / "tool-use-input-json.sse").read_bytes()
    out: list[Any] = []
    reactivex.from_iterable([data]).pipe(
        rs.lines(), rs.sse_frames(), rs.decode("anthropic")
    ).subscribe(out.append)
    assert out == [
        Metadata({"id": "msg_019Q1hrJbZG26Fb9BQhrkHEr", "model": "claude-sonnet-4-20250514"}),
        TextDelta("I"),
        TextDelta("'ll check the current weather in Paris for you."),
        ToolCallDelta(0, "", "toolu_01NRLabsLyVHZPKxbKvkfSMn", "get_weather"),
        ToolCallDelta(0, '{"locati'),
        ToolCallDelta(0, 'on": "P'),
        ToolCallDelta(0, "ar"),
        ToolCallDelta(0, 'is"}'),
        Finish("tool_calls"),
        Usage(377, 65, 442, None, 0, cache_write_tokens=0),
    ]


@pytest.mark.parametrize("name", sorted(RECORDINGS))
def test_recording_cut_before_message_stop_is_truncated(name: str) -> None:
    data = (DATA / name).read_bytes()
    cut = data[: data.rindex(b"\n\n", 0, data.rindex(b"message_stop")) + 2]
    out, errors = outcome([cut], "anthropic")
    assert out == []
    assert len(errors) == 1
    assert type(errors[0]) is TruncatedStreamError, errors[0]
    assert "message_stop" in str(errors[0])


def test_truncated_inside_a_block_names_it() -> None:
    data = (DATA / "tool-use-input-json.sse").read_bytes()
    cut = data[: data.index(b'is\\"}"}}')]
    cut = cut[: cut.rindex(b"\n\n") + 2]
    _, errors = outcome([cut], "anthropic")
    assert type(errors[0]) is TruncatedStreamError
    assert "inside content block 1 (tool_use)" in str(errors[0])


def test_sdk_agrees_on_the_recordings_it_can_read() -> None:
    """The anthropic SDK's own accumulator gives the same text, thinking and tool input."""
    streaming = pytest.importorskip("anthropic.lib.streaming._messages")
    for name in sorted(RECORDINGS):
        data = (DATA / name).read_bytes()
        lines = [*LineSplitter().feed(data), ""]
        parser = SSEParser()
        parsed: list[SSEFrame] = []
        parser.feed_all(lines, parsed)
        parsed += parser.close()
        snapshot: Any = None
        bufs: dict[int, bytes] = {}
        for frame in parsed:
            event = json.loads(frame.data)
            if event["type"] == "ping":
                continue
            try:
                snapshot = streaming.accumulate_event(
                    event=event, current_snapshot=snapshot, json_bufs=bufs
                )
            except TypeError:  # an SDK without json_bufs
                snapshot = streaming.accumulate_event(event=event, current_snapshot=snapshot)
        ours = message_of([data])
        texts = "".join(b.text for b in snapshot.content if b.type == "text")
        thinking = "".join(b.thinking for b in snapshot.content if b.type == "thinking")
        assert (ours.content, ours.reasoning) == (texts, thinking), name
        assert ours.finish_raw == snapshot.stop_reason, name
        tools = [b for b in snapshot.content if b.type == "tool_use"]
        assert [(c.id, c.name) for c in ours.tool_calls] == [(b.id, b.name) for b in tools], name
        for call, block in zip(ours.tool_calls, tools, strict=True):
            if call.arguments != TAX_ARGS:  # the SDK keeps the cut input as a partial parse
                assert call.parse_arguments() == block.input, name


# --------------------------------------------------------------------------- decoder table

OK_CASES: list[tuple[str, list[SSEFrame], list[Delta]]] = [
    ("message_start gives the id and model", [MESSAGE_START], [START_META]),
    (
        "message_start extras kept, nulls and empty content left out",
        [
            E(
                "message_start",
                message={"id": "m", "model": "c", "container": {"id": "c1"}, "stop_details": None},
            )
        ],
        [Metadata({"id": "m", "model": "c", "container": {"id": "c1"}})],
    ),
    (
        "message_start carrying whole blocks and a stop_reason (a resumed turn)",
        [
            resumed_start(
                [
                    {"type": "text", "text": "On it."},
                    {"type": "tool_use", "id": "toolu_r", "name": "roll", "input": {"sides": 6}},
                ],
                "tool_use",
            ),
            MESSAGE_STOP,
        ],
        [
            START_META,
            TextDelta("On it."),
            ToolCallDelta(0, "", "toolu_r", "roll"),
            ToolCallDelta(0, '{"sides":6}'),
            Finish("tool_calls", raw="tool_use"),
            Usage(4, 0, 4, raw={"input_tokens": 4, "output_tokens": 0}),
        ],
    ),
    (
        "a compaction block is reasoning state to send back",
        [
            MESSAGE_START,
            start(0, type="compaction", content=None),
            delta(0, type="compaction_delta", content="Earlier: the user asked "),
            delta(0, type="compaction_delta", content="about tides."),
            stop(0),
        ],
        [
            START_META,
            ReasoningState(
                "compaction",
                "Earlier: the user asked about tides.",
                raw={"type": "compaction", "content": "Earlier: the user asked about tides."},
            ),
        ],
    ),
    (
        "a compaction block cut short gives nothing to send back",
        [
            MESSAGE_START,
            start(0, type="compaction", content=None),
            delta(0, type="compaction_delta", content="Earlier: the"),
            message_delta("max_tokens"),
            MESSAGE_STOP,
        ],
        [
            START_META,
            Finish("length", raw="max_tokens"),
            Usage(10, 5, 15, raw={"input_tokens": 10, "output_tokens": 5}),
        ],
    ),
    (
        "fields of a tool_use block beyond id, name and input are metadata",
        [
            MESSAGE_START,
            start(
                0,
                type="tool_use",
                id="toolu_c",
                name="roll",
                input={},
                caller={"type": "code_execution_20250825", "tool_id": "srvtoolu_1"},
            ),
            stop(0),
        ],
        [
            START_META,
            ToolCallDelta(0, "", "toolu_c", "roll"),
            Metadata(
                {
                    "tool_calls": [
                        {
                            "id": "toolu_c",
                            "caller": {"type": "code_execution_20250825", "tool_id": "srvtoolu_1"},
                        }
                    ]
                }
            ),
            ToolCallDelta(0, "{}"),  # no input_json_delta: the block's input
        ],
    ),
    (
        "blocks after message_start's content go on from there",
        [
            resumed_start([{"type": "tool_use", "id": "toolu_r", "name": "roll", "input": {}}]),
            start(1, type="tool_use", id="toolu_s", name="roll", input={}),
            delta(1, type="input_json_delta", partial_json='{"sides":4}'),
            stop(1),
            message_delta("tool_use"),
            MESSAGE_STOP,
        ],
        [
            START_META,
            ToolCallDelta(0, "", "toolu_r", "roll"),
            ToolCallDelta(0, "{}"),
            ToolCallDelta(1, "", "toolu_s", "roll"),
            ToolCallDelta(1, '{"sides":4}'),
            Finish("tool_calls", raw="tool_use"),
            Usage(4, 5, 9, raw={"input_tokens": 4, "output_tokens": 5}),
        ],
    ),
    (
        "message_delta's stop_reason wins over message_start's",
        [resumed_start([], "pause_turn"), message_delta("end_turn"), MESSAGE_STOP],
        [
            START_META,
            Finish("stop", raw="end_turn"),
            Usage(4, 5, 9, raw={"input_tokens": 4, "output_tokens": 5}),
        ],
    ),
    (
        "an unknown block in message_start's content is kept",
        [resumed_start([{"type": "shiny", "x": 1}])],
        [
            START_META,
            Metadata(
                {
                    "events": [
                        {
                            "type": "message_start",
                            "index": 0,
                            "content_block": {"type": "shiny", "x": 1},
                        }
                    ]
                }
            ),
        ],
    ),
    (
        "the same message_start twice: the second is ignored",
        [MESSAGE_START, MESSAGE_START, start(0, type="text", text="a"), stop(0)],
        [START_META, TextDelta("a")],
    ),
    (
        "fields on message_stop are kept (a relay's metrics)",
        [
            MESSAGE_START,
            start(0, type="text", text=""),
            text(0, "a"),
            stop(0),
            E("message_stop", **{"relay-metrics": {"latency": 7}}),
        ],
        [
            START_META,
            TextDelta("a"),
            Usage(10, 1, 11, raw={"input_tokens": 10, "output_tokens": 1}),
            Metadata({"relay-metrics": {"latency": 7}}),
        ],
    ),
    ("ping is dropped", [MESSAGE_START, PING], [START_META]),
    (
        "ping without its event line",
        [MESSAGE_START, SSEFrame('{"type":"ping"}')],
        [START_META],
    ),
    (
        "padded JSON",
        [
            MESSAGE_START,
            SSEFrame(
                '{"type":"content_block_start","index":0,"content_block":'
                '{"type":"text","text":""}        }'
            ),
            SSEFrame(
                '{"type":"content_block_delta","index":0,"delta":'
                '{"type":"text_delta","text":"Hi"}   }'
            ),
        ],
        [START_META, TextDelta("Hi")],
    ),
    (
        "text of several blocks, nothing added",
        [
            MESSAGE_START,
            start(0, type="text", text=""),
            text(0, "a"),
            stop(0),
            start(1, type="text", text=""),
            text(1, "b"),
            stop(1),
        ],
        [START_META, TextDelta("a"), TextBlockStart(), TextDelta("b")],
    ),
    (
        "a text block after a cited one, a tool call or an empty text block: apart already",
        [
            MESSAGE_START,
            start(0, type="text", text="", citations=[]),
            text(0, "a"),
            stop(0),
            start(1, type="text", text="b"),
            stop(1),
            start(2, type="tool_use", id="t", name="f", input={}),
            stop(2),
            start(3, type="text", text="c"),
            stop(3),
            start(4, type="text", text=""),
            stop(4),
            start(5, type="text", text="d"),
            stop(5),
        ],
        [
            START_META,
            TextDelta("a"),
            EmptyCitations(0, 1),
            TextDelta("b"),
            ToolCallDelta(0, "", "t", "f"),
            ToolCallDelta(0, "{}"),
            TextDelta("c"),
            TextBlockStart(),
            TextDelta("d"),
        ],
    ),
    (
        "text blocks a message_start carries whole stay apart too",
        [
            resumed_start([{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]),
            start(2, type="text", text=""),
            text(2, "c"),
            stop(2),
        ],
        [
            START_META,
            TextDelta("a"),
            TextBlockStart(),
            TextDelta("b"),
            TextBlockStart(),
            TextDelta("c"),
        ],
    ),
    (
        "text in a block's start",
        [MESSAGE_START, start(0, type="text", text="Hi"), stop(0)],
        [START_META, TextDelta("Hi")],
    ),
    (
        "empty text deltas give nothing",
        [MESSAGE_START, start(0, type="text", text=""), text(0, "")],
        [START_META],
    ),
    (
        "thinking and its signature",
        [
            MESSAGE_START,
            start(0, type="thinking", thinking="", signature=""),
            delta(0, type="thinking_delta", thinking="Hm"),
            delta(0, type="thinking_delta", thinking=", ok"),
            delta(0, type="signature_delta", signature="c2ln"),
            stop(0),
        ],
        [
            START_META,
            ReasoningDelta("Hm"),
            ReasoningDelta(", ok"),
            ReasoningState("thinking", "c2ln", "Hm, ok"),
        ],
    ),
    (
        "thinking cut before its signature leaves no state",
        [
            MESSAGE_START,
            start(0, type="thinking", thinking="", signature=""),
            delta(0, type="thinking_delta", thinking="Hm"),
            stop(0),
        ],
        [START_META, ReasoningDelta("Hm")],
    ),
    (
        "redacted thinking comes whole",
        [MESSAGE_START, start(0, type="redacted_thinking", data="ZW5j"), stop(0)],
        [START_META, ReasoningState("redacted_thinking", "ZW5j")],
    ),
    (
        "tool call: id, name, order of tool blocks as index, fragments verbatim",
        [
            MESSAGE_START,
            start(0, type="text", text=""),
            text(0, "x"),
            stop(0),
            start(1, type="tool_use", id="toolu_a", name="f", input={}),
            delta(1, type="input_json_delta", partial_json=""),
            delta(1, type="input_json_delta", partial_json='{"a": '),
            delta(1, type="input_json_delta", partial_json="1}"),
            stop(1),
            start(2, type="tool_use", id="toolu_b", name="g", input={}),
            delta(2, type="input_json_delta", partial_json="{}"),
            stop(2),
        ],
        [
            START_META,
            TextDelta("x"),
            ToolCallDelta(0, "", "toolu_a", "f"),
            ToolCallDelta(0, '{"a": '),
            ToolCallDelta(0, "1}"),
            ToolCallDelta(1, "", "toolu_b", "g"),
            ToolCallDelta(1, "{}"),
        ],
    ),
    (
        "tool call without arguments gets {}",
        [
            MESSAGE_START,
            start(0, type="tool_use", id="t", name="f", input={}),
            delta(0, type="input_json_delta", partial_json=""),
            stop(0),
        ],
        [START_META, ToolCallDelta(0, "", "t", "f"), ToolCallDelta(0, "{}")],
    ),
    (
        "tool call with its input in the start and no deltas",
        [MESSAGE_START, start(0, type="tool_use", id="t", name="f", input={"a": [1, 2]}), stop(0)],
        [START_META, ToolCallDelta(0, "", "t", "f"), ToolCallDelta(0, '{"a":[1,2]}')],
    ),
    (
        "tool call cut by max_tokens keeps its arguments as sent",
        [
            MESSAGE_START,
            start(0, type="tool_use", id="t", name="f", input={}),
            delta(0, type="input_json_delta", partial_json='{"a": "b'),
            message_delta("max_tokens"),
            MESSAGE_STOP,
        ],
        [
            START_META,
            ToolCallDelta(0, "", "t", "f"),
            ToolCallDelta(0, '{"a": "b'),
            Finish("length"),
            Usage(10, 5, 15),
        ],
    ),
    (
        "server tool call and its result",
        [
            MESSAGE_START,
            start(0, type="server_tool_use", id="srv_1", name="web_search", input={}),
            delta(0, type="input_json_delta", partial_json=""),
            delta(0, type="input_json_delta", partial_json='{"q'),
            delta(0, type="input_json_delta", partial_json='": "x"}'),
            stop(0),
            start(
                1,
                type="web_search_tool_result",
                tool_use_id="srv_1",
                content=[{"type": "web_search_result", "url": "u"}],
            ),
            stop(1),
        ],
        [
            START_META,
            ServerToolCall("srv_1", "web_search", {"q": "x"}),
            ServerToolResult(
                "srv_1", "web_search_tool_result", [{"type": "web_search_result", "url": "u"}]
            ),
        ],
    ),
    (
        "server tool input that is not JSON stays text",
        [
            MESSAGE_START,
            start(0, type="server_tool_use", id="s", name="code_execution", input={}),
            delta(0, type="input_json_delta", partial_json='{"code": "pri'),
            message_delta("max_tokens"),
            MESSAGE_STOP,
        ],
        [
            START_META,
            ServerToolCall("s", "code_execution", '{"code": "pri'),
            Finish("length"),
            Usage(10, 5, 15),
        ],
    ),
    (
        "server tool without deltas keeps its start input",
        [
            MESSAGE_START,
            start(0, type="server_tool_use", id="s", name="web_fetch", input={"url": "u"}),
            stop(0),
        ],
        [START_META, ServerToolCall("s", "web_fetch", {"url": "u"})],
    ),
    (
        "mcp tool use and result are provider-side",
        [
            MESSAGE_START,
            start(0, type="mcp_tool_use", id="m1", name="lookup", server_name="srv", input={}),
            delta(0, type="input_json_delta", partial_json='{"k":1}'),
            stop(0),
            start(
                1,
                type="mcp_tool_result",
                tool_use_id="m1",
                is_error=False,
                content=[{"type": "text", "text": "r"}],
            ),
            stop(1),
        ],
        [
            START_META,
            ServerToolCall("m1", "lookup", {"k": 1}),
            ServerToolResult("m1", "mcp_tool_result", [{"type": "text", "text": "r"}]),
        ],
    ),
    (
        "other tool results (code execution, error content)",
        [
            MESSAGE_START,
            start(
                0,
                type="code_execution_tool_result",
                tool_use_id="s",
                content={"type": "code_execution_result", "stdout": "4"},
            ),
            stop(0),
            start(
                1,
                type="web_search_tool_result",
                tool_use_id="s2",
                content={"type": "web_search_tool_result_error", "error_code": "unavailable"},
            ),
            stop(1),
        ],
        [
            START_META,
            ServerToolResult(
                "s", "code_execution_tool_result", {"type": "code_execution_result", "stdout": "4"}
            ),
            ServerToolResult(
                "s2",
                "web_search_tool_result",
                {"type": "web_search_tool_result_error", "error_code": "unavailable"},
            ),
        ],
    ),
    (
        "citations cover their text block, in the answer's characters",
        [
            MESSAGE_START,
            start(0, type="text", text=""),
            text(0, "Intro. "),
            stop(0),
            start(1, type="text", text="", citations=[]),
            delta(
                1,
                type="citations_delta",
                citation={
                    "type": "web_search_result_location",
                    "url": "https://a",
                    "title": "A",
                    "cited_text": "quote",
                    "encrypted_index": "x",
                },
            ),
            text(1, "Claim é."),
            stop(1),
        ],
        [
            START_META,
            TextDelta("Intro. "),
            TextBlockStart(),
            TextDelta("Claim é."),
            Citation("web_search_result_location", "https://a", "A", "quote", 7, 15),
        ],
    ),
    (
        "a citations list that stays empty: its block's span, none without the key or text",
        [
            MESSAGE_START,
            start(0, type="text", text=""),
            text(0, "Intro. "),
            stop(0),
            start(1, type="text", text="", citations=[]),
            text(1, "Claim é."),
            stop(1),
            start(2, type="text", text="", citations=[]),
            stop(2),
            start(3, type="text", text="!"),
            stop(3),
        ],
        [
            START_META,
            TextDelta("Intro. "),
            TextBlockStart(),
            TextDelta("Claim é."),
            EmptyCitations(7, 15),
            TextDelta("!"),
        ],
    ),
    (
        "document citations: title from document_title, search results from source",
        [
            MESSAGE_START,
            start(
                0,
                type="text",
                text="ab",
                citations=[
                    {
                        "type": "char_location",
                        "cited_text": "q",
                        "document_index": 0,
                        "document_title": "Doc",
                        "start_char_index": 3,
                        "end_char_index": 4,
                    }
                ],
            ),
            delta(
                0,
                type="citations_delta",
                citation={
                    "type": "search_result_location",
                    "source": "kb://1",
                    "title": "T",
                    "cited_text": "c",
                    "search_result_index": 0,
                    "start_block_index": 0,
                    "end_block_index": 0,
                },
            ),
            stop(0),
        ],
        [
            START_META,
            TextDelta("ab"),
            Citation("char_location", None, "Doc", "q", 0, 2),
            Citation("search_result_location", "kb://1", "T", "c", 0, 2),
        ],
    ),
    (
        "message_delta: metadata, finish, usage (start and delta merged)",
        [
            MESSAGE_START,
            start(0, type="text", text=""),
            text(0, "x"),
            stop(0),
            E(
                "message_delta",
                delta={"stop_reason": "stop_sequence", "stop_sequence": "END"},
                usage={
                    "output_tokens": 7,
                    "cache_read_input_tokens": 4,
                    "cache_creation_input_tokens": 2,
                },
            ),
            MESSAGE_STOP,
        ],
        [
            START_META,
            TextDelta("x"),
            Metadata({"stop_sequence": "END"}),
            Finish("stop"),
            Usage(16, 7, 23, None, 4, cache_write_tokens=2),
        ],
    ),
    (
        "usage: thinking tokens are reasoning tokens",
        [
            MESSAGE_START,
            E(
                "message_delta",
                delta={"stop_reason": "end_turn"},
                usage={"output_tokens": 9, "output_tokens_details": {"thinking_tokens": 6}},
            ),
        ],
        [START_META, Finish("stop"), Usage(10, 9, 19, 6, None)],
    ),
    (
        "message_stop without message_delta keeps the start usage",
        [MESSAGE_START, start(0, type="text", text=""), text(0, "x"), MESSAGE_STOP],
        [START_META, TextDelta("x"), Usage(10, 1, 11)],
    ),
    (
        "stop details and container are metadata",
        [
            MESSAGE_START,
            E(
                "message_delta",
                delta={
                    "stop_reason": "refusal",
                    "stop_sequence": None,
                    "stop_details": {"type": "refusal", "category": "cyber"},
                    "container": {"id": "c"},
                },
                usage={"output_tokens": 1},
            ),
        ],
        [
            START_META,
            Metadata(
                {"stop_details": {"type": "refusal", "category": "cyber"}, "container": {"id": "c"}}
            ),
            Finish("content_filter"),
            Usage(10, 1, 11),
        ],
    ),
    (
        "an unknown event type is kept",
        [MESSAGE_START, E("future_event", x=1)],
        [START_META, Metadata({"events": [{"type": "future_event", "x": 1}]})],
    ),
    (
        "an unknown block type is kept with its deltas; its stop gives nothing",
        [
            MESSAGE_START,
            start(0, type="future_block", content=None),
            delta(0, type="future_delta", content="sum"),
            stop(0),
        ],
        [
            START_META,
            Metadata(
                {
                    "events": [
                        {
                            "type": "content_block_start",
                            "index": 0,
                            "content_block": {"type": "future_block", "content": None},
                        }
                    ]
                }
            ),
            Metadata(
                {
                    "events": [
                        {
                            "type": "content_block_delta",
                            "index": 0,
                            "delta": {"type": "future_delta", "content": "sum"},
                        }
                    ]
                }
            ),
        ],
    ),
    (
        "an unknown delta type on a text block is kept",
        [MESSAGE_START, start(0, type="text", text=""), delta(0, type="shiny_delta", x=2)],
        [
            START_META,
            Metadata(
                {
                    "events": [
                        {
                            "type": "content_block_delta",
                            "index": 0,
                            "delta": {"type": "shiny_delta", "x": 2},
                        }
                    ]
                }
            ),
        ],
    ),
    (
        "the event line is not needed (data-only recordings)",
        [
            SSEFrame(
                '{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}'
            ),
            SSEFrame(
                '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a"}}'
            ),
            SSEFrame('{"type":"message_stop"}'),
        ],
        [TextDelta("a")],
    ),
]


@pytest.mark.parametrize(
    ("frames", "expected"), [c[1:] for c in OK_CASES], ids=[c[0] for c in OK_CASES]
)
def test_decoder(frames: list[SSEFrame], expected: list[Delta]) -> None:
    assert run_all(frames) == expected


FINISHES = [
    ("end_turn", "stop"),
    ("stop_sequence", "stop"),
    ("max_tokens", "length"),
    ("model_context_window_exceeded", "length"),
    ("tool_use", "tool_calls"),
    ("refusal", "content_filter"),
    ("pause_turn", "pause_turn"),
    ("compaction", "compaction"),
    ("some_new_reason", "some_new_reason"),
]


@pytest.mark.parametrize(("raw", "reason"), FINISHES, ids=[f[0] for f in FINISHES])
def test_finish_reasons(raw: str, reason: str) -> None:
    out = run_all([MESSAGE_START, message_delta(raw), MESSAGE_STOP])
    (finish,) = [d for d in out if isinstance(d, Finish)]
    assert (finish.reason, finish.raw) == (reason, raw)


def test_stop_reason_null_gives_no_finish() -> None:
    answer = [start(0, type="text", text=""), text(0, "a"), stop(0)]
    out = run_all([MESSAGE_START, *answer, message_delta(None), MESSAGE_STOP])
    assert not any(isinstance(d, Finish) for d in out)


def test_usage_fields_sent_later_win_and_nulls_do_not() -> None:
    start_usage = {
        "input_tokens": 2050,
        "cache_creation_input_tokens": 3,
        "cache_read_input_tokens": 5,
        "output_tokens": 1,
        "service_tier": "standard",
    }
    frames = [
        E("message_start", message={"id": "m", "model": "c", "usage": start_usage}),
        E(
            "message_delta",
            delta={"stop_reason": "end_turn"},
            usage={"input_tokens": 31772, "cache_read_input_tokens": None, "output_tokens": 644},
        ),
        MESSAGE_STOP,
    ]
    (got,) = [d for d in run_all(frames) if isinstance(d, Usage)]
    assert got == Usage(31772 + 3 + 5, 644, 31772 + 8 + 644, None, 5, cache_write_tokens=3)
    assert got.raw is not None
    assert got.raw["service_tier"] == "standard"


def test_done_at_message_stop_and_no_more_input() -> None:
    _, dec = feed([MESSAGE_START, start(0, type="text", text=""), text(0, "a"), MESSAGE_STOP])
    assert dec.done
    with pytest.raises(RuntimeError, match="done"):
        dec.feed(PING)
    assert dec.close() == []


# --------------------------------------------------------------------------- bad input

BAD: list[tuple[str, list[SSEFrame], str]] = [
    ("not JSON", [SSEFrame("{nope")], "invalid JSON"),
    ("[DONE] (openai-chat)", [SSEFrame("[DONE]")], "invalid JSON"),
    ("JSON array", [SSEFrame("[1]")], "not an object"),
    ("JSON string", [SSEFrame('"message_stop"')], "not an object"),
    ("openai-chat chunk", [SSEFrame('{"choices": [{"delta": {"content": "a"}}]}')], "openai-chat"),
    ("gemini chunk", [SSEFrame('{"candidates": [{"content": {"parts": []}}]}')], "gemini"),
    ("responses event", [E("response.created", response={})], "openai-responses"),
    ("cohere event", [E("message-start", id="x")], "cohere"),
    ("type is a number", [SSEFrame('{"type": 3}')], "type is a JSON number"),
    ("no message in message_start", [E("message_start")], "message is a JSON null"),
    ("message is a list", [E("message_start", message=[])], "message is a JSON array"),
    ("usage is a string", [E("message_start", message={"usage": "x"})], "message.usage is"),
    (
        "input_tokens is a string",
        [E("message_start", message={"usage": {"input_tokens": "3"}})],
        "message.usage.input_tokens is a JSON string, not an integer",
    ),
    ("index is a string", [MESSAGE_START, start("0", type="text", text="")], "index is"),  # type: ignore[arg-type]
    ("index missing", [MESSAGE_START, E("content_block_stop")], "index is a JSON null"),
    (
        "a message_start of another message while one is open",
        [MESSAGE_START, start(0, type="text", text=""), E("message_start", message={"id": "m2"})],
        "message_start for message 'm2' while message 'msg_1' is open",
    ),
    (
        "message_start content is an object",
        [E("message_start", message={"id": "m", "content": {}})],
        "message.content is",
    ),
    (
        "message_start content holds a string",
        [E("message_start", message={"id": "m", "content": ["x"]})],
        "message.content[0] is",
    ),
    (
        "message_start stop_reason is a number",
        [E("message_start", message={"id": "m", "stop_reason": 2})],
        "message.stop_reason",
    ),
    ("block missing", [MESSAGE_START, E("content_block_start", index=0)], "content_block is"),
    ("block without a type", [MESSAGE_START, start(0, text="")], "content_block.type"),
    ("text is a number", [MESSAGE_START, start(0, type="text", text=1)], "content_block.text"),
    (
        "tool id missing",
        [MESSAGE_START, start(0, type="tool_use", name="f", input={})],
        "content_block.id is a JSON null",
    ),
    (
        "tool input is a list",
        [MESSAGE_START, start(0, type="tool_use", id="t", name="f", input=[])],
        "content_block.input",
    ),
    (
        "redacted data missing",
        [MESSAGE_START, start(0, type="redacted_thinking")],
        "content_block.data",
    ),
    (
        "block started twice",
        [MESSAGE_START, start(0, type="text", text=""), start(0, type="text", text="")],
        "started twice",
    ),
    ("delta for a block never started", [MESSAGE_START, text(3, "a")], "not open"),
    (
        "delta after its block stopped",
        [MESSAGE_START, start(0, type="text", text=""), stop(0), text(0, "a")],
        "not open",
    ),
    ("stop for a block never started", [MESSAGE_START, stop(0)], "not open"),
    (
        "delta missing",
        [MESSAGE_START, start(0, type="text", text=""), E("content_block_delta", index=0)],
        "delta is a JSON null",
    ),
    (
        "delta type missing",
        [MESSAGE_START, start(0, type="text", text=""), delta(0, text="a")],
        "delta.type",
    ),
    (
        "text delta text is a number",
        [MESSAGE_START, start(0, type="text", text=""), delta(0, type="text_delta", text=5)],
        "delta.text is a JSON number",
    ),
    (
        "text delta text missing",
        [MESSAGE_START, start(0, type="text", text=""), delta(0, type="text_delta")],
        "delta.text is a JSON null",
    ),
    (
        "thinking delta on a text block",
        [
            MESSAGE_START,
            start(0, type="text", text=""),
            delta(0, type="thinking_delta", thinking="x"),
        ],
        "thinking_delta for content block 0, a text block",
    ),
    (
        "text delta on a tool block",
        [MESSAGE_START, start(0, type="tool_use", id="t", name="f"), text(0, "x")],
        "a tool_use block",
    ),
    (
        "json delta on a redacted block",
        [
            MESSAGE_START,
            start(0, type="redacted_thinking", data="d"),
            delta(0, type="input_json_delta", partial_json="{"),
        ],
        "redacted_thinking block",
    ),
    (
        "partial_json is a JSON null",
        [
            MESSAGE_START,
            start(0, type="tool_use", id="t", name="f"),
            delta(0, type="input_json_delta", partial_json=None),
        ],
        "delta.partial_json is a JSON null",
    ),
    (
        "citation is a string",
        [
            MESSAGE_START,
            start(0, type="text", text=""),
            delta(0, type="citations_delta", citation="x"),
        ],
        "delta.citation",
    ),
    (
        "citation url is a number",
        [
            MESSAGE_START,
            start(0, type="text", text=""),
            delta(0, type="citations_delta", citation={"type": "char_location", "url": 3}),
        ],
        "delta.citation.url",
    ),
    (
        "start citations not a list",
        [MESSAGE_START, start(0, type="text", text="", citations={})],
        "content_block.citations",
    ),
    (
        "stop_reason is a number",
        [MESSAGE_START, E("message_delta", delta={"stop_reason": 1})],
        "delta.stop_reason",
    ),
    (
        "output_tokens is a float",
        [MESSAGE_START, E("message_delta", delta={}, usage={"output_tokens": 1.5})],
        "usage.output_tokens",
    ),
]


@pytest.mark.parametrize(("frames", "reason"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_input_is_malformed(frames: list[SSEFrame], reason: str) -> None:
    dec = AnthropicDecoder()
    with pytest.raises(MalformedChunkError) as info:
        push(dec, frames, [])
    assert info.value.dialect == "anthropic"
    assert reason in str(info.value)
    assert "malformed anthropic data" in str(info.value)
    with pytest.raises(RuntimeError, match="failed"):
        dec.feed(PING)
    # The operator's path (feed_all) fails the same way.
    with pytest.raises(MalformedChunkError, match="malformed anthropic data"):
        AnthropicDecoder().feed_all(frames, [])


@pytest.mark.parametrize(("frames", "reason"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_input_is_skipped_on_request(frames: list[SSEFrame], reason: str) -> None:
    out, _ = feed([*frames, E("future_event")], on_malformed="skip")
    assert out[-1] == Metadata({"events": [{"type": "future_event"}]})


def test_skipped_frames_leave_no_trace() -> None:
    frames = [
        MESSAGE_START,
        start(0, type="tool_use", id="t", name="f", input=[]),
        start(0, type="text", text=""),
        text(0, "ok"),
        stop(0),
        message_delta(),
        MESSAGE_STOP,
    ]
    out, dec = feed(frames, on_malformed="skip")
    assert out == [START_META, TextDelta("ok"), Finish("stop"), Usage(10, 5, 15)]
    assert dec.done


def test_not_a_frame_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="SSEFrame"):
        AnthropicDecoder().feed('{"type": "message_stop"}')


OVERLOADED = {
    "type": "error",
    "error": {"details": None, "type": "overloaded_error", "message": "Overloaded"},
    "request_id": "req_011",
}


@pytest.mark.parametrize(
    "frame",
    [
        SSEFrame(json.dumps(OVERLOADED), "error"),
        SSEFrame(json.dumps(OVERLOADED)),  # without its event line
    ],
    ids=["event: error", "data only"],
)
def test_error_event_mid_stream_is_provider_error(frame: SSEFrame) -> None:
    frames = [MESSAGE_START, start(0, type="text", text=""), text(0, "Hel"), frame]
    dec = AnthropicDecoder(on_malformed="skip")  # provider errors are raised either way
    out: list[Delta] = []
    with pytest.raises(ProviderError) as info:
        push(dec, frames, out)
    assert out == [START_META, TextDelta("Hel")]
    err = info.value
    assert (err.type, err.message, err.code) == ("overloaded_error", "Overloaded", None)
    assert err.payload == OVERLOADED


def test_error_event_with_text_data() -> None:
    with pytest.raises(ProviderError, match="upstream died"):
        AnthropicDecoder().feed(SSEFrame("upstream died", "error"))


def test_error_in_the_pipeline_after_content() -> None:
    data = (DATA / "text-minimal-padded.sse").read_bytes()
    head = data[: data.index(b"event: content_block_stop")]
    body = head + b"event: error\ndata: " + json.dumps(OVERLOADED).encode() + b"\n\n"
    out, errors = outcome([body], "anthropic")
    assert out == []
    assert isinstance(errors[0], ProviderError)
    assert errors[0].type == "overloaded_error"


@pytest.mark.parametrize(
    ("frames", "error"),
    [
        ([], EmptyStreamError),
        ([PING, PING], EmptyStreamError),
        ([MESSAGE_START], TruncatedStreamError),
        ([MESSAGE_START, start(0, type="text", text=""), text(0, "a")], TruncatedStreamError),
        (
            [MESSAGE_START, start(0, type="text", text=""), stop(0), message_delta()],
            TruncatedStreamError,
        ),
    ],
    ids=["nothing", "pings only", "message_start only", "inside a block", "after message_delta"],
)
def test_end_before_message_stop(frames: list[SSEFrame], error: type[Exception]) -> None:
    _, dec = feed(frames)
    with pytest.raises(error) as info:
        dec.close()
    assert type(info.value) is error
    assert "message_stop" in str(info.value)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_random_bytes_give_only_stream_errors(data: bytes) -> None:
    _, errors = outcome([data], "anthropic")
    assert not errors or isinstance(errors[0], StreamError), errors


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.text(max_size=4),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=8,
)
_TYPES = [
    "message_start",
    "message_delta",
    "message_stop",
    "content_block_start",
    "content_block_delta",
    "content_block_stop",
    "ping",
    "error",
    "other",
]
_KEYS = [
    "index",
    "delta",
    "content_block",
    "message",
    "usage",
    "type",
    "text",
    "id",
    "name",
    "input",
    "partial_json",
    "thinking",
    "signature",
    "citation",
    "citations",
    "data",
    "stop_reason",
    "input_tokens",
    "output_tokens",
    "tool_use_id",
    "content",
]


@st.composite
def _fuzzy_event(draw: st.DrawFn) -> SSEFrame:
    def obj(depth: int) -> dict[str, Any]:
        keys = draw(st.lists(st.sampled_from(_KEYS), max_size=4))
        value: dict[str, Any] = {}
        for key in keys:
            if key == "type":
                value[key] = draw(
                    st.sampled_from(
                        [
                            "text",
                            "tool_use",
                            "thinking",
                            "text_delta",
                            "input_json_delta",
                            "server_tool_use",
                            "web_search_tool_result",
                            "x",
                        ]
                    )
                )
            elif key == "index":
                value[key] = draw(st.integers(0, 2) | _json)
            elif depth < 2 and draw(st.booleans()):
                value[key] = obj(depth + 1)
            else:
                value[key] = draw(_json)
        return value

    payload = {"type": draw(st.sampled_from(_TYPES)), **obj(0)}
    return SSEFrame(json.dumps(payload), draw(st.sampled_from(["message", "ping", "error"])))


@settings(max_examples=150, deadline=None)
@given(st.lists(_fuzzy_event(), max_size=8))
def test_random_events_give_only_stream_errors(frames: list[SSEFrame]) -> None:
    dec = AnthropicDecoder()
    try:
        for frame in frames:
            dec.feed(frame)
            if dec.done:
                break
        dec.close()
    except StreamError:
        pass


# --------------------------------------------------------------------------- detection


@pytest.mark.parametrize("name", sorted(RECORDINGS))
def test_detected_from_the_first_frame(name: str) -> None:
    lines = [*LineSplitter().feed((DATA / name).read_bytes()), ""]
    frames: list[SSEFrame] = []
    SSEParser().feed_all(lines, frames)
    assert detect(frames[0]) == "anthropic"
    auto = AutoDecoder()
    auto.feed(frames[0])
    assert auto.dialect == "anthropic"


def test_detect_error_first_frame() -> None:
    with pytest.raises(ProviderError) as info:
        detect(SSEFrame(json.dumps(OVERLOADED), "error"))
    assert info.value.type == "overloaded_error"
    with pytest.raises(ProviderError):
        detect(SSEFrame(json.dumps(OVERLOADED)))


def test_registry_names() -> None:
    assert isinstance(decoder("anthropic"), AnthropicDecoder)
    assert isinstance(renderer("anthropic"), AnthropicRenderer)
    assert AnthropicRenderer.wire == "sse"


# --------------------------------------------------------------------------- renderer


def render(deltas: list[Delta], **options: Any) -> list[SSEFrame]:
    r = AnthropicRenderer(**options)
    out: list[Any] = []
    for d in deltas:
        out += r.feed(d)
    return out + r.close()


def payloads(frames: list[SSEFrame]) -> list[dict[str, Any]]:
    for f in frames:
        assert f.event == json.loads(f.data)["type"]
    return [json.loads(f.data) for f in frames]


def test_render_a_complete_stream() -> None:
    frames = render(
        [
            TextDelta("Hi"),
            ToolCallDelta(0, "", "toolu_1", "f"),
            ToolCallDelta(0, '{"a":1}'),
            Finish("tool_calls"),
            Usage(12, 3, 15, None, 2),
        ],
        pings=False,
    )
    assert payloads(frames) == [
        {
            "type": "message_start",
            "message": {
                "id": "msg_01rxstreamRenderedMessage",
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-5",
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": 0, "output_tokens": 0},  # unknown yet: zeros
            },
        },
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}},
        {"type": "content_block_stop", "index": 0},
        {
            "type": "content_block_start",
            "index": 1,
            "content_block": {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}},
        },
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": ""},
        },
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": '{"a":1}'},
        },
        {"type": "content_block_stop", "index": 1},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use", "stop_sequence": None},
            "usage": {
                "input_tokens": 10,
                "cache_read_input_tokens": 2,
                "output_tokens": 3,
            },
        },
        {"type": "message_stop"},
    ]


def test_render_pings() -> None:
    events = [f.event for f in render([TextDelta("a")])]
    assert events[:3] == ["message_start", "content_block_start", "ping"]
    assert [f.data for f in render([TextDelta("a")]) if f.event == "ping"] == ['{"type": "ping"}']
    assert "ping" not in [f.event for f in render([TextDelta("a")], pings=False)]
    assert AnthropicRenderer().ping() == [SSEFrame('{"type": "ping"}', "ping")]


def test_render_nothing_is_still_a_complete_stream() -> None:
    assert [f.event for f in render([])] == ["message_start", "message_delta", "message_stop"]
    # ... which brings no answer (issue 18, item 7).
    with pytest.raises(EmptyStreamError, match="reached message_stop"):
        run_all(render([]))
    out = run_all(render([Finish("length")]))
    assert out[-1] == Usage(0, 0, 0)


@pytest.mark.parametrize(
    ("deltas", "usage"),
    [
        ([TextDelta("a")], Usage(0, 0, 0)),
        ([TextDelta("a"), Finish("stop"), Usage(12, 3, 15, None, 2)], Usage(12, 3, 15, None, 2)),
        ([Usage(7, 1, 8), TextDelta("a")], Usage(7, 1, 8)),
        ([ReasoningDelta("r"), Usage(9, 6, 15, 4)], Usage(9, 6, 15, 4)),
    ],
    ids=["unknown", "known-at-the-end", "known-at-the-start", "reasoning-tokens"],
)
def test_render_message_start_always_says_input_tokens(deltas: list[Delta], usage: Usage) -> None:
    # Strict readers (the AI SDK's anthropic provider) refuse a message_start without
    # a number in usage.input_tokens; the usage still reads back as it was rendered.
    frames = render(deltas)
    start = payloads(frames)[0]["message"]["usage"]
    assert type(start["input_tokens"]) is int
    assert type(start["output_tokens"]) is int
    used = [d for d in run_all(frames) if isinstance(d, Usage)]
    assert used == [usage]


def test_render_model_and_id_options_and_metadata() -> None:
    frames = render(
        [Metadata({"id": "msg_x", "model": "claude-y", "other": 1}), TextDelta("a")],
        model="m",
        id="i",
    )
    first = payloads(frames)[0]["message"]
    assert (first["id"], first["model"]) == ("msg_x", "claude-y")
    assert payloads(frames)[-2]["delta"]["other"] == 1
    first = payloads(render([TextDelta("a")], model="m", id="i"))[0]["message"]
    assert (first["id"], first["model"]) == ("i", "m")


def test_render_finish_words() -> None:
    def word(finish: Finish) -> str:
        (last,) = [p for p in payloads(render([finish])) if p["type"] == "message_delta"]
        return str(last["delta"]["stop_reason"])

    assert word(Finish("stop")) == "end_turn"
    assert word(Finish("stop", raw="stop_sequence")) == "stop_sequence"
    assert word(Finish("stop", raw="STOP")) == "end_turn"  # Gemini's word is not Anthropic's
    assert word(Finish("length")) == "max_tokens"
    assert word(Finish("length", raw="model_context_window_exceeded")) == (
        "model_context_window_exceeded"
    )
    assert word(Finish("tool_calls")) == "tool_use"
    assert word(Finish("content_filter")) == "refusal"
    assert word(Finish("pause_turn")) == "pause_turn"


def test_render_refuses_what_anthropic_cannot_carry() -> None:
    r = AnthropicRenderer()
    # A choice other than 0 is left out (Anthropic has one), the stream goes on.
    assert r.feed(TextDelta("a", choice=1)) == []
    r.feed(ToolCallDelta(0, "", "t0", "f"))
    r.feed(TextDelta("between"))  # closes the call's block: Anthropic cannot reopen one
    with pytest.raises(ValueError, match="no way to reopen a content block"):
        r.feed(ToolCallDelta(0, "{}"))


def test_render_interleaved_tool_calls_keeps_each_in_its_own_open_block() -> None:
    # Parallel calls whose fragments alternate (OpenAI-compatible servers send them so):
    # each fragment names its own block; every block closes before message_delta.
    deltas: list[Delta] = [
        ToolCallDelta(0, "", "t0", "f"),
        ToolCallDelta(1, "", "t1", "g"),
        ToolCallDelta(0, '{"a":'),
        ToolCallDelta(1, '{"b":'),
        ToolCallDelta(0, "1}"),
        ToolCallDelta(1, "2}"),
        Finish("tool_calls"),
    ]
    frames = render(deltas, pings=False)
    events = payloads(frames)
    deltas_at = [
        (e["index"], e["delta"]["partial_json"])
        for e in events
        if e["type"] == "content_block_delta"
    ]
    assert deltas_at == [(0, ""), (1, ""), (0, '{"a":'), (1, '{"b":'), (0, "1}"), (1, "2}")]
    stops = [e["index"] for e in events if e["type"] == "content_block_stop"]
    assert stops == [0, 1]
    assert events[-2]["type"] == "message_delta"
    decoded = AnthropicDecoder()
    out: list[Any] = []
    for frame in frames:
        out += decoded.feed(frame)
    out += decoded.close()
    accumulator = MessageAccumulator()
    for delta in out:
        accumulator.feed(delta)
    (message,) = accumulator.close()
    assert [(c.id, c.name, c.arguments) for c in message.tool_calls] == [
        ("t0", "f", '{"a":1}'),
        ("t1", "g", '{"b":2}'),
    ]
    assert message.finish_reason == "tool_calls"


def test_render_usage_cached_beyond_prompt_is_refused() -> None:
    r = AnthropicRenderer()
    with pytest.raises(ValueError, match="cached tokens"):
        r.feed(Usage(1, 1, 2, None, 5))
    assert [f.event for f in r.close()] == ["message_start", "message_delta", "message_stop"]


def test_render_tool_calls_without_index_or_id() -> None:
    frames = render(
        [
            ToolCallDelta(None, "", "a", "f"),
            ToolCallDelta(None, "{}"),
            ToolCallDelta(None, "", "b", "g"),
            ToolCallDelta(2, "", None, None),
        ]
    )
    out = run_all(frames)
    calls = [d for d in out if isinstance(d, ToolCallDelta) and d.id]
    assert [(c.index, c.id, c.name) for c in calls] == [
        (0, "a", "f"),
        (1, "b", "g"),
        (2, "toolu_02", ""),
    ]


def test_render_after_close_or_error() -> None:
    r = AnthropicRenderer()
    r.close()
    with pytest.raises(RuntimeError):
        r.feed(TextDelta("a"))
    with pytest.raises(RuntimeError):
        r.close()
    r = AnthropicRenderer()
    r.feed(TextDelta("a"))
    (frame,) = r.error(ProviderError("Overloaded", type="overloaded_error"))
    assert frame.event == "error"
    assert json.loads(frame.data) == {
        "type": "error",
        "error": {"type": "overloaded_error", "message": "Overloaded"},
    }
    with pytest.raises(RuntimeError):
        r.feed(TextDelta("b"))
    with pytest.raises(RuntimeError):
        r.error(ProviderError("x"))


def test_rendered_error_decodes_as_the_same_provider_error() -> None:
    r = AnthropicRenderer()
    frames = r.feed(TextDelta("a")) + r.error(ProviderError("Slow down", type="rate_limit_error"))
    out, errors = outcome([wire_bytes(frames)], "anthropic")
    assert out == []
    assert isinstance(errors[0], ProviderError)
    assert (errors[0].type, errors[0].message) == ("rate_limit_error", "Slow down")
    (frame,) = AnthropicRenderer().error(ProviderError("no type"))
    assert json.loads(frame.data)["error"]["type"] == "api_error"


HTTP = [(status, kind) for status, kind in ERROR_TYPES.items()] + [
    (409, "invalid_request_error"),
    (422, "invalid_request_error"),
    (502, "api_error"),
    (503, "api_error"),
]


@pytest.mark.parametrize(("status", "kind"), HTTP, ids=[str(h[0]) for h in HTTP])
def test_http_error(status: int, kind: str) -> None:
    content_type, body = http_error(status, "Nope")
    assert content_type == "application/json"
    assert json.loads(body) == {"type": "error", "error": {"type": kind, "message": "Nope"}}


def test_http_error_explicit_type_and_code() -> None:
    _, body = http_error(400, "bad", type="custom_error", code="x1")
    assert json.loads(body) == {
        "type": "error",
        "error": {"type": "custom_error", "message": "bad"},
    }
    from rxstream.core.provider_errors import provider_message

    assert provider_message(body) == "bad"


@pytest.mark.parametrize("name", sorted(RECORDINGS))
def test_recordings_render_back(name: str) -> None:
    """decode -> render -> decode keeps the message, its blocks and citation spans included.

    The text block just before a cited one (blocks 5 and 6 of the web search
    recording) stays apart: the `TextBlockStart` between them closes it.
    """
    data = (DATA / name).read_bytes()
    out: list[Any] = []
    reactivex.from_iterable([data]).pipe(
        rs.lines(), rs.sse_frames(), rs.decode("anthropic")
    ).subscribe(out.append)
    again = message_of([wire_bytes(render(out))])
    original = message_of([data])
    assert full(again) == full(original)
    assert again.blocks == original.blocks
    RECORDINGS[name](again)


# --------------------------------------------------------------------------- round trip


@dataclass
class Script:
    """A scripted answer and the message Anthropic can carry of it."""

    deltas: list[Delta] = field(default_factory=list)
    content: str = ""
    reasoning: str = ""
    run: str | None = None  # the kind of the content block the renderer has open
    run_start: int = 0
    thinking: str = ""
    tools: list[ToolCall] = field(default_factory=list)
    citations: list[Citation] = field(default_factory=list)
    server: list[Any] = field(default_factory=list)
    states: list[ReasoningState] = field(default_factory=list)


_words = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=1, max_size=6)
_ids = st.text("abcXYZ019_", min_size=1, max_size=8)
_values = st.recursive(
    st.none() | st.booleans() | st.integers(-99, 99) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)


def _split(draw: st.DrawFn, value: str) -> list[str]:
    cuts = sorted(set(draw(st.lists(st.integers(0, len(value)), max_size=4))) | {0, len(value)})
    return [value[a:b] for a, b in itertools.pairwise(cuts) if b > a]


@st.composite
def scripts(draw: st.DrawFn) -> tuple[Script, Message]:
    s = Script()
    meta: dict[str, Any] = {"id": "msg_01rxstreamRenderedMessage", "model": "claude-sonnet-4-5"}
    if draw(st.booleans()):
        given_meta = {"id": draw(_ids), "model": draw(_ids)}
        meta.update(given_meta)
        s.deltas.append(Metadata(given_meta))
    tool_count = 0
    for kind in draw(
        st.lists(
            st.sampled_from(
                [
                    "text",
                    "reasoning",
                    "signature",
                    "redacted",
                    "tool",
                    "server",
                    "result",
                    "cite",
                    "event",
                ]
            ),
            max_size=10,
        )
    ):
        if kind == "text":
            for piece in draw(st.lists(_words, min_size=1, max_size=3)):
                if s.run != "text":
                    s.run, s.run_start = "text", len(s.content)
                s.content += piece
                s.deltas.append(TextDelta(piece))
        elif kind == "reasoning":
            for piece in draw(st.lists(_words, min_size=1, max_size=3)):
                if s.run != "thinking":
                    s.run, s.thinking = "thinking", ""
                s.thinking += piece
                s.reasoning += piece
                s.deltas.append(ReasoningDelta(piece))
        elif kind == "signature":
            sig = draw(_ids)
            covered = s.thinking if s.run == "thinking" else ""
            s.deltas.append(ReasoningState("thinking", sig, covered))
            s.states.append(ReasoningState("thinking", sig, covered))
            s.run = None
        elif kind == "redacted":
            state = ReasoningState("redacted_thinking", draw(_ids))
            s.deltas.append(state)
            s.states.append(state)
            s.run = None
        elif kind == "tool":
            call_id, name = f"toolu_{tool_count}{draw(_ids)}", draw(_ids)
            args = json.dumps(draw(st.dictionaries(st.text(max_size=4), _values, max_size=3)))
            args = draw(st.sampled_from([args, ""]))
            s.deltas.append(ToolCallDelta(tool_count, "", call_id, name))
            s.deltas += [ToolCallDelta(tool_count, p) for p in _split(draw, args)]
            s.tools.append(ToolCall(tool_count, call_id, name, args or "{}"))
            tool_count += 1
            s.run = None
        elif kind == "server":
            call = ServerToolCall(
                f"srvtoolu_{draw(_ids)}",
                draw(st.sampled_from(["web_search", "code_execution"])),
                draw(st.dictionaries(st.text(max_size=4), _values, max_size=3)),
            )
            s.deltas.append(call)
            s.server.append(call)
            s.run = None
        elif kind == "result":
            result = ServerToolResult(
                f"srvtoolu_{draw(_ids)}",
                draw(st.sampled_from(["web_search_tool_result", "code_execution_tool_result"])),
                draw(_values),
            )
            s.deltas.append(result)
            s.server.append(result)
            s.run = None
        elif kind == "cite":
            if s.run not in ("text", "cited"):
                s.run_start = len(s.content)
            citation = Citation(
                draw(st.sampled_from(["web_search_result_location", "char_location"])),
                url=draw(st.none() | _ids),
                title=draw(st.none() | _words),
                text=draw(st.none() | _words),
            )
            s.deltas.append(citation)
            s.citations.append(
                Citation(
                    citation.kind,
                    citation.url,
                    citation.title,
                    citation.text,
                    s.run_start,
                    len(s.content),
                )
            )
            s.run = "cited"
        elif kind == "event":
            event = {"type": f"future_{draw(_ids)}", "value": draw(_values)}
            s.deltas.append(Metadata({"events": [event]}))
            meta.setdefault("events", []).append(event)
    if draw(st.booleans()):
        meta["stop_sequence"] = draw(_words)
        s.deltas.append(Metadata({"stop_sequence": meta["stop_sequence"]}))
    finish: Finish | None = None
    if draw(st.booleans()):
        reason, raw = draw(
            st.sampled_from(
                [
                    ("stop", None),
                    ("stop", "end_turn"),
                    ("stop", "stop_sequence"),
                    ("length", None),
                    ("length", "model_context_window_exceeded"),
                    ("tool_calls", None),
                    ("content_filter", None),
                    ("pause_turn", None),
                ]
            )
        )
        finish = Finish(reason, raw=raw)
        s.deltas.append(finish)
    used = Usage(0, 0, 0)
    if draw(st.booleans()):
        prompt, completion = draw(st.integers(0, 10**6)), draw(st.integers(0, 10**6))
        cached = draw(st.none() | st.integers(0, prompt))
        used = Usage(
            prompt, completion, prompt + completion, draw(st.none() | st.integers(0, 99)), cached
        )
        s.deltas.append(used)
    expected = Message(
        content=s.content,
        reasoning=s.reasoning,
        tool_calls=tuple(s.tools),
        finish_reason=None if finish is None else finish.reason,
        usage=used,
        finish_raw=None
        if finish is None
        else (
            finish.raw
            or {
                "stop": "end_turn",
                "length": "max_tokens",
                "tool_calls": "tool_use",
                "content_filter": "refusal",
            }.get(finish.reason, finish.reason)
        ),
        citations=tuple(s.citations),
        server_tools=tuple(s.server),
        reasoning_state=tuple(s.states),
        metadata=meta,
    )
    return s, expected


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    script=scripts(),
    cuts=st.lists(st.integers(0, 5000), max_size=6),
    pings=st.booleans(),
    dialect=st.sampled_from(["anthropic", "auto"]),
)
def test_round_trip(
    script: tuple[Script, Message], cuts: list[int], pings: bool, dialect: str
) -> None:
    s, expected = script
    data = wire_bytes(render(s.deltas, pings=pings))
    bounds = sorted({min(c, len(data)) for c in cuts} | {0, len(data)})
    pieces = [data[a:b] for a, b in itertools.pairwise(bounds)]
    if all(isinstance(d, Usage | Metadata) for d in s.deltas):
        with pytest.raises(EmptyStreamError):  # a script of no answer (issue 18, item 7)
            message_of(pieces, dialect)
        return
    got = message_of(pieces, dialect)
    assert full(got) == full(expected)


def test_render_cache_writes_and_reads_decode_to_the_same_usage() -> None:
    given = Usage(30, 4, 34, None, 5, cache_write_tokens=20)
    frames = render([TextDelta("Hi"), Finish("stop"), given], pings=False)
    (delta,) = [p for p in payloads(frames) if p["type"] == "message_delta"]
    assert delta["usage"] == {
        "input_tokens": 5,
        "cache_creation_input_tokens": 20,
        "cache_read_input_tokens": 5,
        "output_tokens": 4,
    }
    assert [d for d in run_all(frames) if isinstance(d, Usage)] == [given]


def test_render_usage_cache_writes_beyond_prompt_are_refused() -> None:
    with pytest.raises(ValueError, match="3 cache-write tokens out of 4 prompt tokens"):
        AnthropicRenderer().feed(Usage(4, 1, 5, None, 2, cache_write_tokens=3))


def test_a_compaction_block_keeps_its_encrypted_content_through_render_and_decode() -> None:
    # The API streams a compaction block opened with null content and encrypted_content,
    # then one compaction_delta with the summary and its opaque `encrypted_content`, which
    # goes back with the block (the anthropic SDK's compaction fixture has this shape).
    summary = "Earlier: the user asked about tides."
    block = {"type": "compaction", "content": summary, "encrypted_content": "EncCmp=="}
    frames = [
        MESSAGE_START,
        start(0, type="compaction", content=None, encrypted_content=None),
        delta(0, type="compaction_delta", content=summary, encrypted_content="EncCmp=="),
        stop(0),
        MESSAGE_STOP,
    ]
    (state,) = [d for d in run_all(frames) if isinstance(d, ReasoningState)]
    assert (state.kind, state.data, state.raw) == ("compaction", summary, block)
    rendered = payloads(render([state], pings=False))
    assert rendered[1:4] == [
        {"type": "content_block_start", "index": 0, "content_block": {
            "type": "compaction", "content": None, "encrypted_content": None}},
        {"type": "content_block_delta", "index": 0, "delta": {
            "type": "compaction_delta", "content": summary, "encrypted_content": "EncCmp=="}},
        {"type": "content_block_stop", "index": 0},
    ]  # fmt: skip
    (again,) = [d for d in run_all(render([state])) if isinstance(d, ReasoningState)]
    assert again.raw == block


def test_the_renderer_closes_a_block_at_empty_citations_and_it_reads_back_as_text() -> None:
    # The block's start went out before its EmptyCitations came: without `citations`, so
    # the text reads back plain, a block of its own (a TextBlockStart before the next).
    renderer = AnthropicRenderer(pings=False)
    frames: list[Any] = []
    for d in (TextDelta("a"), EmptyCitations(0, 1), TextDelta("b"), Finish("stop")):
        frames += renderer.feed(d)
    frames += renderer.close()
    starts = [
        json.loads(f.data)["content_block"] for f in frames if f.event == "content_block_start"
    ]
    assert starts == [{"type": "text", "text": ""}, {"type": "text", "text": ""}]
    decoder = AnthropicDecoder()
    back = [d for f in frames for d in decoder.feed(f)] + decoder.close()
    assert [d for d in back if isinstance(d, TextDelta | EmptyCitations | TextBlockStart)] == [
        TextDelta("a"),
        TextBlockStart(),
        TextDelta("b"),
    ]


# --------------------------------------------------------------------------- adjacent text blocks

# A block of a stream: ("text" | "listed" (`"citations": []`) | "tool", its text pieces).
_Spec = tuple[str, list[str]]

_PIECES = st.lists(
    st.text(st.characters(exclude_categories=["Cs"]), min_size=1, max_size=4),
    min_size=1,
    max_size=3,
)
_SPECS = st.lists(
    st.tuples(st.sampled_from(["text", "listed"]), _PIECES)
    | st.tuples(st.just("tool"), st.just([])),
    min_size=1,
    max_size=6,
)


def _block_stream(specs: list[_Spec]) -> tuple[list[SSEFrame], tuple[MessageBlock, ...]]:
    """The frames of a stream of these blocks, and the blocks of its anthropic SDK final message.

    The SDK keeps each content block as it came: two text blocks side by side
    stay two, a `"citations": []` one keeps its empty list.
    """
    frames: list[SSEFrame] = [MESSAGE_START]
    blocks: list[MessageBlock] = []
    calls = 0
    for index, (kind, pieces) in enumerate(specs):
        if kind == "tool":
            frames += [start(index, type="tool_use", id=f"toolu_{index}", name="f", input={})]
            blocks.append(ToolCall(calls, f"toolu_{index}", "f", "{}"))
            calls += 1
        else:
            listed: dict[str, Any] = {"citations": []} if kind == "listed" else {}
            frames += [start(index, type="text", text="", **listed)]
            frames += [text(index, piece) for piece in pieces]
            blocks.append(TextBlock("".join(pieces), () if listed else None))
        frames.append(stop(index))
    return [*frames, message_delta(), MESSAGE_STOP], tuple(blocks)


def _sdk_content(frames: list[SSEFrame]) -> list[Any]:
    """The content of the anthropic SDK's final message for these frames (its own accumulator)."""
    streaming = pytest.importorskip("anthropic.lib.streaming._messages")
    snapshot: Any = None
    for frame in frames:
        event = json.loads(frame.data)
        if event["type"] != "ping":
            snapshot = streaming.accumulate_event(
                event=event, current_snapshot=snapshot, json_bufs={}
            )
    return [b.model_dump(exclude_none=True) for b in snapshot.content]


def test_the_sdk_keeps_adjacent_text_blocks_apart() -> None:
    # What the cases below expect, asked of the SDK itself.
    frames, _ = _block_stream([("text", ["a", "b"]), ("text", ["c"]), ("listed", ["d"])])
    assert _sdk_content(frames) == [
        {"type": "text", "text": "ab"},
        {"type": "text", "text": "c"},
        {"type": "text", "text": "d", "citations": []},
    ]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    specs=_SPECS,
    cuts=st.lists(st.integers(0, 2_000), max_size=8),
    how=st.sampled_from(sorted(WAYS)),
)
def test_adjacent_text_blocks_stay_apart_under_any_chunking(
    specs: list[_Spec], cuts: list[int], how: str
) -> None:
    frames, blocks = _block_stream(specs)
    data = wire_bytes(frames)
    bounds = sorted({min(c, len(data)) for c in cuts} | {0, len(data)})
    with way(how), learning_at_once():  # the text template learnt at once, where it is on
        message = message_of([data[a:b] for a, b in itertools.pairwise(bounds)])
    assert message.blocks == blocks
    assert message.content == "".join(b.text for b in blocks if isinstance(b, TextBlock))


def test_adjacent_text_blocks_go_through_render_and_the_sdk_reads_them_back_apart() -> None:
    frames, blocks = _block_stream(
        [("text", ["Hello", ". "]), ("text", ["World."]), ("tool", []), ("text", ["x"])]
    )
    deltas = run_all(frames)
    again = render(deltas, pings=False)
    assert _sdk_content(again)[:2] == [
        {"type": "text", "text": "Hello. "},
        {"type": "text", "text": "World."},
    ]
    assert message_of([wire_bytes(again)]).blocks == blocks


def test_text_before_a_cited_block_is_closed_where_that_block_starts() -> None:
    # The decoder marks where the cited block starts, so the renderer ends the text
    # before it there: the SDK reads the citation on the cited text alone.
    cite = {"type": "web_search_result_location", "url": "https://a", "title": "A",
            "cited_text": "q", "encrypted_index": "x"}  # fmt: skip
    frames = [
        MESSAGE_START,
        start(0, type="text", text=""),
        text(0, "Intro. "),
        stop(0),
        start(1, type="text", text="", citations=[]),
        delta(1, type="citations_delta", citation=cite),
        text(1, "Claim."),
        stop(1),
        message_delta(),
        MESSAGE_STOP,
    ]
    again = render(run_all(frames), pings=False)
    assert _sdk_content(again) == [
        {"type": "text", "text": "Intro. "},
        {"type": "text", "text": "Claim.", "citations": [cite]},
    ]
    assert message_of([wire_bytes(again)]).blocks == message_of([wire_bytes(frames)]).blocks


def test_a_compaction_that_failed_keeps_its_content_null_through_render_and_decode() -> None:
    # No summary came (the SDK's types: null content is a failed compaction, which the API
    # takes back as a no-op and refuses as ""): `raw` keeps `content` null.
    frames = [
        MESSAGE_START,
        start(0, type="compaction", content=None, encrypted_content=None),
        delta(0, type="compaction_delta", content=None, encrypted_content="EncCmp=="),
        stop(0),
        MESSAGE_STOP,
    ]
    block = {"type": "compaction", "content": None, "encrypted_content": "EncCmp=="}
    (state,) = [d for d in run_all(frames) if isinstance(d, ReasoningState)]
    assert (state.kind, state.data, state.raw) == ("compaction", "", block)
    rendered = payloads(render([state], pings=False))
    assert rendered[2]["delta"] == {
        "type": "compaction_delta",
        "content": None,
        "encrypted_content": "EncCmp==",
    }
    (again,) = [d for d in run_all(render([state])) if isinstance(d, ReasoningState)]
    assert again.raw == block

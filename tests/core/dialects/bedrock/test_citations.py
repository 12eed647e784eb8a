"""Bedrock's citations: a cited text block keeps its span, whatever the chunking and the
fast paths, and goes back as `citationsContent` (another dialect's citations do not)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reactivex import operators as ops

import rxstream as rs
from rxstream.core.dialects.bedrock.request import render_request
from rxstream.core.eventstream import encode_message
from rxstream.core.wire.decoding import decode as wire_decode
from rxstream.core.wire.encoding import item_data
from rxstream.models import (
    Citation,
    Finish,
    Message,
    ReasoningDelta,
    TextBlock,
    TextBlockStart,
    TextDelta,
    ToolCallDelta,
)
from rxstream.testing import FakeLLMServer, Scenario
from rxstream.testing._scenario import RecordedRequest
from tests.support.bedrock_events import MESSAGE_START, delta, message_stop, stop
from tests.support.dialects import deltas_runner
from tests.support.fast import WAYS, way

deltas_of = deltas_runner("bedrock", wire="eventstream")

WEB = {"title": "P", "location": {"web": {"url": "https://x.test/p"}}}
DOC = {
    "title": "report",
    "sourceContent": [{"text": "grew 12%"}],
    "location": {"documentChar": {"documentIndex": 0, "start": 4, "end": 12}},
}


def texts(index: int, *pieces: str) -> list[Any]:
    return [delta(index, {"text": p}) for p in pieces]


def cited(raw: dict[str, Any], start: int | None = None, end: int | None = None) -> Citation:
    kind = next(iter(raw["location"]))
    url = raw["location"].get("web", {}).get("url")
    text = "".join(s["text"] for s in raw.get("sourceContent", ())) or None
    return Citation(kind, url, raw.get("title"), text, start, end, raw=raw)


CASES = {
    "text-then-citations": (
        [
            *texts(0, "Sales ", "grew ", "12%."),
            delta(0, {"citation": DOC}),
            delta(0, {"citation": WEB}),
            stop(0),
        ],
        [
            TextDelta("Sales "),
            TextDelta("grew "),
            TextDelta("12%."),
            cited(DOC, 0, 15),
            cited(WEB, 0, 15),
        ],
    ),
    "citation-between-text-deltas": (
        [*texts(0, "ab", "cd"), delta(0, {"citation": DOC}), *texts(0, "ef"), stop(0)],
        [TextDelta("ab"), TextDelta("cd"), TextDelta("ef"), cited(DOC, 0, 6)],
    ),
    "two-blocks-one-cited": (
        [
            *texts(0, "plain ", "text. "),
            stop(0),
            *texts(1, "cited", "!"),
            delta(1, {"citation": WEB}),
            stop(1),
        ],
        [
            TextDelta("plain "),
            TextDelta("text. "),
            TextBlockStart(),  # the cited block starts apart from the plain one
            TextDelta("cited"),
            TextDelta("!"),
            cited(WEB, 12, 18),
        ],
    ),
    # Text content blocks side by side (no contentBlockStart for text): each starts apart.
    "plain-blocks-side-by-side": (
        [*texts(0, "a", "b"), stop(0), *texts(1, "c"), stop(1), *texts(2, "d", "e"), stop(2)],
        [
            TextDelta("a"),
            TextDelta("b"),
            TextBlockStart(),
            TextDelta("c"),
            TextBlockStart(),
            TextDelta("d"),
            TextDelta("e"),
        ],
    ),
    # Reasoning between two text blocks, or an empty text block: apart already.
    "reasoning-between-text-blocks": (
        [
            *texts(0, "a"),
            stop(0),
            delta(1, {"reasoningContent": {"text": "r"}}),
            stop(1),
            *texts(2, "b"),
            stop(2),
            stop(3),
            *texts(4, "c"),
            stop(4),
        ],
        [
            TextDelta("a"),
            ReasoningDelta("r"),
            TextDelta("b"),
            TextBlockStart(),
            TextDelta("c"),
        ],
    ),
    "a-citation-in-a-block-with-no-text": (
        [*texts(0, "x", "y"), stop(0), delta(1, {"citation": WEB}), stop(1)],
        [TextDelta("x"), TextDelta("y"), cited(WEB)],
    ),
}


def wire(items: list[Any]) -> bytes:
    stream = [MESSAGE_START, *items, message_stop()]
    return b"".join(encode_message(m.headers, m.payload) for m in stream)


@pytest.mark.parametrize("name", list(WAYS))
@pytest.mark.parametrize("case", list(CASES))
def test_a_cited_block_keeps_its_span(case: str, name: str) -> None:
    items, expected = CASES[case]
    data = wire(items)
    want = [*expected, Finish("stop", raw="end_turn")]
    for pieces in ([data], [data[i : i + 1] for i in range(len(data))]):
        with way(name):
            got = deltas_of(pieces)
        assert got == want
        assert [c.whole_block for c in got if type(c) is Citation] == [
            c.start is not None for c in want if type(c) is Citation
        ]


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(list(CASES)), st.sampled_from(list(WAYS)), st.data())
def test_any_chunking(case: str, name: str, data: st.DataObject) -> None:
    items, expected = CASES[case]
    raw = wire(items)
    cuts = sorted(data.draw(st.sets(st.integers(0, len(raw)), max_size=12)))
    pieces = [raw[a:b] for a, b in zip([0, *cuts], [*cuts, len(raw)], strict=True)]
    with way(name):
        got = deltas_of(pieces)
    assert got == [*expected, Finish("stop", raw="end_turn")]


def assistant_content(turn: Message) -> Any:
    body = render_request("m", [{"role": "user", "content": "q"}, turn]).body
    return body["messages"][1]["content"]


def test_a_bedrock_cited_block_goes_back_as_citations_content() -> None:
    citations = (cited(DOC, 0, 4), cited(WEB, 0, 4))
    turn = Message(content="ab. c", blocks=(TextBlock("ab. ", citations), TextBlock("c")))
    assert assistant_content(turn) == [
        {"citationsContent": {"content": [{"text": "ab. "}], "citations": [DOC, WEB]}},
        {"text": "c"},
    ]


@pytest.mark.parametrize(
    "citation",
    [
        Citation("char_location", raw={"type": "char_location", "cited_text": "x"}),
        Citation("url_citation", "https://a", raw={"type": "url_citation", "url": "https://a"}),
        Citation("grounding", start=0, end=1),
        Citation("web", raw={"title": "no location"}),
    ],
    ids=["anthropic", "openai", "no-raw", "not-a-bedrock-location"],
)
def test_other_dialects_citations_are_not_sent(citation: Citation) -> None:
    turn = Message(content="cited", blocks=(TextBlock("cited", (citation,)),))
    assert assistant_content(turn) == [{"text": "cited"}]


def test_the_message_has_the_cited_block() -> None:
    from rxstream.core.message import MessageAccumulator

    items = CASES["two-blocks-one-cited"][0]
    accumulator = MessageAccumulator()
    for item in deltas_of([wire(items)]):
        accumulator.feed(item)
    (message,) = accumulator.close()
    assert message.blocks == (TextBlock("plain text. "), TextBlock("cited!", (cited(WEB, 12, 18),)))
    assert json.dumps(assistant_content(message)).count("citationsContent") == 1


def test_rxstream_format_keeps_a_cited_block() -> None:
    items = CASES["text-then-citations"][0]
    deltas = deltas_of([wire(items)])
    again = [wire_decode(json.loads(item_data(d))) for d in deltas]
    assert again == deltas
    assert [c.whole_block for c in again if type(c) is Citation] == [True, True]
    assert [c.raw for c in again if type(c) is Citation] == [DOC, WEB]


def test_a_run_sends_the_cited_block_back() -> None:
    """Step 1 cites the document and calls a tool; step 2's request holds the cited block."""

    def steps(request: RecordedRequest) -> Scenario:
        if len(request.json["messages"]) == 1:
            return Scenario.answer(
                TextDelta("Sales grew 12%."),
                Citation(
                    "documentChar", None, "report", "grew 12%", 0, 15, raw=DOC, whole_block=True
                ),
                ToolCallDelta(0, '{"year": 2025}', id="tooluse_1", name="plan"),
                Finish("tool_calls"),
            )
        return Scenario.answer(TextDelta("Planned."), Finish("stop"))

    def plan(year: int) -> str:
        """Plan the next year."""
        return f"plan for {year + 1}"

    with FakeLLMServer(steps) as server, httpx.Client() as client:
        root = f"http://127.0.0.1:{server.port}"
        run = rs.run(
            client,
            "bedrock",
            model="m",
            messages=[{"role": "user", "content": "How did sales go? Plan next year."}],
            tools=[plan],
            base_url=root,
            api_key="k",
        )
        end = run.pipe(ops.to_list()).run()[-1]
        sent = [r.json for r in server.requests]
    assert len(sent) == 2
    turn = sent[1]["messages"][1]
    assert turn == {
        "role": "assistant",
        "content": [
            {"citationsContent": {"content": [{"text": "Sales grew 12%."}], "citations": [DOC]}},
            {"toolUse": {"toolUseId": "tooluse_1", "name": "plan", "input": {"year": 2025}}},
        ],
    }
    assert end.messages[-1].content == "Planned."


def test_text_blocks_side_by_side_go_back_as_boto3_users_send_them() -> None:
    # A boto3 user builds the turn's content from `converse_stream` by contentBlockIndex:
    # one `{"text": ...}` per text content block.
    from rxstream.core.message import MessageAccumulator

    accumulator = MessageAccumulator()
    for item in deltas_of([wire(CASES["plain-blocks-side-by-side"][0])]):
        accumulator.feed(item)
    (message,) = accumulator.close()
    assert message.content == "abcde"
    assert message.blocks == (TextBlock("ab"), TextBlock("c"), TextBlock("de"))
    assert assistant_content(message) == [{"text": "ab"}, {"text": "c"}, {"text": "de"}]


@pytest.mark.parametrize("case", ["two-blocks-one-cited", "plain-blocks-side-by-side"])
def test_rendered_blocks_decode_back_apart(case: str) -> None:
    # The renderer closes the open text block at a TextBlockStart: text before a cited
    # block keeps out of it, so the citation's span reads back the same.
    from rxstream.core.dialects.bedrock import BedrockRenderer

    deltas = deltas_of([wire(CASES[case][0])])
    r = BedrockRenderer()
    messages = [m for d in deltas for m in r.feed(d)] + r.close()
    data = b"".join(encode_message(m.headers, m.payload) for m in messages)
    assert deltas_of([data]) == deltas

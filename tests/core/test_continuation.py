"""Continuation: the partial made safe, the request of each dialect, the overlap trimmers."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import rxstream as rs
from rxstream.core import ContinuationTrimmer, MessageAccumulator, OverlapTrimmer
from rxstream.core.continuation import (
    CONTINUE_INSTRUCTION,
    continuation_messages,
    replay,
    trim_partial,
)
from rxstream.models import (
    Citation,
    Delta,
    EmptyCitations,
    Finish,
    Message,
    ReasoningBlock,
    ReasoningDelta,
    ReasoningState,
    Reset,
    ServerToolCall,
    ServerToolResult,
    TextBlock,
    TextBlockStart,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    Usage,
)
from tests.support.chunking import chunkings

SIGNED = ReasoningState("thinking", data="sig==", text="Let me think.")
DONE_CALL = ToolCall(0, "call_a", "weather", '{"city":"Paris"}')
CUT_CALL = ToolCall(1, "call_b", "weather", '{"city":"Ro')
PARTIAL = Message(
    content="It is ",
    reasoning="Let me think.",
    tool_calls=(DONE_CALL, CUT_CALL),
    finish_reason="cancelled",
    reasoning_state=(SIGNED,),
    blocks=(ReasoningBlock("Let me think.", SIGNED), TextBlock("It is "), DONE_CALL, CUT_CALL),
)


def _closed(items: list[Delta]) -> Message:
    acc = MessageAccumulator()
    for item in items:
        acc.feed(item)
    [message] = acc.close()
    return message


# ------------------------------------------------------------------ trim_partial


@pytest.mark.parametrize(
    ("call", "kept"),
    [
        pytest.param(ToolCall(0, "a", "f", '{"q": 1}'), True, id="whole"),
        pytest.param(ToolCall(0, "a", "f", "{}"), True, id="empty-object"),
        pytest.param(ToolCall(0, "a", "f", '{"q": '), False, id="cut-in-arguments"),
        pytest.param(ToolCall(0, "a", "f", ""), False, id="cut-before-arguments"),
        pytest.param(ToolCall(0, "a", "f", "[1]"), False, id="not-an-object"),
        pytest.param(ToolCall(0, "a", "f", "{}", complete=False), False, id="marked-incomplete"),
    ],
)
def test_trim_partial_keeps_only_finished_calls(call: ToolCall, kept: bool) -> None:
    trimmed = trim_partial(Message(content="x", tool_calls=(call,), blocks=(call,)))
    assert trimmed.tool_calls == ((call,) if kept else ())
    assert trimmed.blocks == ((call,) if kept else ())
    assert trimmed.content == "x"


def test_trim_partial_same_dialect_keeps_signed_reasoning() -> None:
    trimmed = trim_partial(PARTIAL, source="anthropic", target="anthropic")
    assert trimmed.reasoning_state == (SIGNED,)
    assert trimmed.blocks == (
        ReasoningBlock("Let me think.", SIGNED),
        TextBlock("It is "),
        DONE_CALL,
    )
    assert trimmed.tool_calls == (DONE_CALL,)
    assert trimmed.finish_reason is None
    assert trimmed.finish_raw is None


def test_trim_partial_another_dialect_drops_the_signatures_keeps_the_text() -> None:
    standalone = ReasoningState("thought_signature", data="x")
    partial = Message(reasoning_state=(standalone,), blocks=(standalone, TextBlock("a")))
    trimmed = trim_partial(PARTIAL, source="anthropic", target="openai-chat")
    assert trimmed.reasoning_state == ()
    assert trimmed.reasoning == "Let me think."
    assert trimmed.blocks[0] == ReasoningBlock("Let me think.")
    assert trim_partial(partial, source="gemini", target="bedrock").blocks == (TextBlock("a"),)


def test_trim_partial_drops_a_server_call_without_its_result() -> None:
    call = ServerToolCall("s1", "web_search")
    answered = ServerToolCall("s0", "web_search")
    result = ServerToolResult("s0", "web_search", [])
    partial = Message(
        server_tools=(answered, result, call), blocks=(answered, result, TextBlock("a"), call)
    )
    trimmed = trim_partial(partial)
    assert trimmed.server_tools == (answered, result)
    assert trimmed.blocks == (answered, result, TextBlock("a"))


# ------------------------------------------------------------------ the request

USER = [{"role": "user", "content": "Weather?"}]
TEXT_ONLY = Message(content="It is sunny ")


def body_of(dialect: str, messages: list[Any]) -> Any:
    request = rs.request(
        dialect, model="m", messages=messages, api_key="k", base_url="http://127.0.0.1:9"
    )
    return json.loads(request.content)


@pytest.mark.parametrize(
    ("dialect", "partial", "expected"),
    [
        pytest.param(
            "anthropic",
            TEXT_ONLY,
            [
                {"role": "user", "content": "Weather?"},
                {"role": "assistant", "content": [{"type": "text", "text": "It is sunny"}]},
            ],
            id="anthropic-prefill-without-trailing-space",
        ),
        pytest.param(
            "ollama",
            TEXT_ONLY,
            [
                {"role": "user", "content": "Weather?"},
                {"role": "assistant", "content": "It is sunny "},
            ],
            id="ollama-prefill",
        ),
        pytest.param(
            "openai-chat",
            TEXT_ONLY,
            [
                {"role": "user", "content": "Weather?"},
                {"role": "assistant", "content": "It is sunny "},
                {"role": "user", "content": CONTINUE_INSTRUCTION},
            ],
            id="openai-chat-instruction",
        ),
        pytest.param(
            "cohere",
            TEXT_ONLY,
            [
                {"role": "user", "content": "Weather?"},
                {"role": "assistant", "content": "It is sunny "},
                {"role": "user", "content": CONTINUE_INSTRUCTION},
            ],
            id="cohere-instruction",
        ),
        pytest.param(
            "gemini",
            TEXT_ONLY,
            [
                {"role": "user", "parts": [{"text": "Weather?"}]},
                {"role": "model", "parts": [{"text": "It is sunny "}]},
                {"role": "user", "parts": [{"text": CONTINUE_INSTRUCTION}]},
            ],
            id="gemini-instruction",
        ),
        pytest.param(
            "bedrock",
            TEXT_ONLY,
            [
                {"role": "user", "content": [{"text": "Weather?"}]},
                {"role": "assistant", "content": [{"text": "It is sunny "}]},
                {"role": "user", "content": [{"text": CONTINUE_INSTRUCTION}]},
            ],
            id="bedrock-instruction",
        ),
    ],
)
def test_continuation_request_body(dialect: str, partial: Message, expected: list[Any]) -> None:
    body = body_of(dialect, continuation_messages(dialect, USER, partial))
    assert body.get("messages", body.get("contents")) == expected


def test_responses_request_body() -> None:
    body = body_of("openai-responses", continuation_messages("openai-responses", USER, TEXT_ONLY))
    assert body["input"][1:] == [
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "It is sunny "}],
        },
        {"role": "user", "content": CONTINUE_INSTRUCTION},
    ]


def test_anthropic_with_signed_reasoning_and_calls_asks_by_instruction() -> None:
    body = body_of("anthropic", continuation_messages("anthropic", USER, PARTIAL))
    assistant, user = body["messages"][1:]
    assert assistant["content"] == [
        {"type": "thinking", "thinking": "Let me think.", "signature": "sig=="},
        {"type": "text", "text": "It is "},
    ]
    assert user["role"] == "user"
    # The finished call is named in the instruction, never sent without its result.
    assert 'weather({"city":"Paris"})' in user["content"]
    assert "Ro" not in user["content"]  # the cut call is gone


def test_another_dialect_gets_no_foreign_signature() -> None:
    messages = continuation_messages("bedrock", USER, PARTIAL, source="anthropic")
    body = body_of("bedrock", messages)
    assert "sig==" not in json.dumps(body)
    assert body["messages"][1]["content"] == [{"text": "It is "}]


@pytest.mark.parametrize(
    ("dialect", "partial"),
    [
        pytest.param(dialect, partial, id=f"{dialect}-{name}")
        for dialect in ("anthropic", "openai-chat", "ollama")
        for name, partial in (
            ("empty", Message()),
            ("only-a-cut-call", Message(tool_calls=(CUT_CALL,), blocks=(CUT_CALL,))),
        )
    ]
    + [
        pytest.param(d, Message(content="  "), id=f"{d}-whitespace-in-a-prefill")
        for d in ("anthropic", "ollama")
    ],
)
def test_nothing_to_send_back_asks_again(dialect: str, partial: Message) -> None:
    assert continuation_messages(dialect, USER, partial) == USER


# ------------------------------------------------------------------ replay


def test_replay_of_server_tools_and_standalone_state() -> None:
    call, result = ServerToolCall("s0", "web_search"), ServerToolResult("s0", "web_search", [])
    state = ReasoningState("redacted_thinking", data="x")
    message = Message(
        content="a",
        server_tools=(call, result),
        reasoning_state=(state,),
        blocks=(state, call, result, TextBlock("a")),
    )
    assert replay(message) == [state, call, result, TextDelta("a")]
    assert _closed(replay(message)) == message
    # A hand-built message goes as `rs.request` sends one: reasoning, its state, text, calls.
    built = Message(content="a", reasoning="r", reasoning_state=(state,), tool_calls=(DONE_CALL,))
    assert replay(built)[:3] == [ReasoningDelta("r"), state, TextDelta("a")]


def test_replay_rebuilds_the_message() -> None:
    partial = trim_partial(PARTIAL)
    assert _closed(replay(partial)) == partial
    with_end = Message(content="a", refusal="no", finish_reason="stop", usage=Usage(1, 2, 3))
    assert _closed(replay(with_end)) == with_end
    with_metadata = Message(content="a", metadata={"id": "msg_1"})
    assert _closed(replay(with_metadata)).metadata == {"id": "msg_1"}


def test_replay_keeps_the_text_blocks_that_came_with_a_citations_list() -> None:
    # Anthropic: "So " (no list), "sky" (cited), " and " (no list), "rain" (an empty list),
    # and a citation no block carries.
    cited = Citation("char_location", start=3, end=6, whole_block=True)
    loose = Citation("url_citation", "https://x")
    deltas: list[Delta] = [
        TextDelta("So "),
        TextBlockStart(),  # as the decoder marks a block that starts after plain text
        TextDelta("sky"),
        cited,
        TextDelta(" and "),
        TextBlockStart(),
        TextDelta("rain"),
        EmptyCitations(11, 15),
        loose,
        Finish("stop"),
    ]
    message = _closed(deltas)
    assert [b.citations for b in message.blocks] == [None, (cited,), None, ()]
    assert replay(message) == deltas
    assert _closed(replay(message)) == message


def test_replay_keeps_adjacent_text_blocks_apart() -> None:
    # Two Anthropic text blocks side by side, then a call, then text again.
    call = ToolCall(0, "toolu_1", "f", "{}")
    message = Message(
        content="Hello. World.!",
        tool_calls=(call,),
        finish_reason="tool_calls",
        blocks=(TextBlock("Hello. "), TextBlock("World."), call, TextBlock("!")),
    )
    deltas = replay(message)
    assert deltas == [
        TextDelta("Hello. "),
        TextBlockStart(),
        TextDelta("World."),
        ToolCallDelta(0, "{}", "toolu_1", "f"),
        TextDelta("!"),
        Finish("tool_calls"),
    ]
    assert _closed(deltas).blocks == message.blocks


# ------------------------------------------------------------------ the overlap


def brute_overlap(partial: str, new: str, window: int) -> int:
    """The longest suffix of the partial's last `window` characters that `new` starts with."""
    tail = partial[-window:]
    return max((n for n in range(1, len(tail) + 1) if new.startswith(tail[-n:])), default=0)


def trimmed(partial: str, pieces: list[str], **options: Any) -> str:
    trimmer = OverlapTrimmer(partial, **options)
    out: list[str] = []
    for piece in pieces:
        out += trimmer.feed(piece)
    return "".join(out + trimmer.close())


@pytest.mark.parametrize(
    ("partial", "new", "expected"),
    [
        pytest.param("The cat sat on", " sat on the mat.", " the mat.", id="repeats-a-tail"),
        pytest.param("The cat sat", "The cat sat on the mat.", " on the mat.", id="starts-over"),
        pytest.param("The cat", " sat.", " sat.", id="goes-on"),
        pytest.param("", "Hello", "Hello", id="no-partial"),
        pytest.param("abc", "", "", id="nothing-new"),
        pytest.param("aaaa", "aaaab", "b", id="longest-of-many"),
        pytest.param("Hello wor", "wor", "", id="new-text-all-repeat"),
        pytest.param("xyz", "xy", "xy", id="ends-undecided-no-repeat"),
        pytest.param("ab\n", "\nc", "c", id="a-newline-repeat"),
    ],
)
def test_overlap_every_split(partial: str, new: str, expected: str) -> None:
    for name, pieces in chunkings(new):
        assert trimmed(partial, pieces) == expected, name


def test_overlap_window_and_minimum() -> None:
    assert trimmed("0123456789", ["0123456789!"], window=5) == "0123456789!"
    assert trimmed("0123456789", ["56789!"], window=5) == "!"
    assert trimmed("ab.", [".c"], min_overlap=2) == ".c"
    assert trimmed("ab.", ["b.c"], min_overlap=2) == "c"


def test_overlap_holds_back_at_most_the_window() -> None:
    trimmer = OverlapTrimmer("ab" * 50, window=10)
    assert trimmer.feed("ab" * 4) == []  # may still be a repeat of the whole window
    assert not trimmer.decided
    assert trimmer.holding
    assert trimmer.feed("ab") == []  # a whole repeat of the window: decided, left out
    assert trimmer.decided
    assert trimmer.overlap == 10
    assert trimmer.feed("x") == ["x"]


def test_overlap_refusals() -> None:
    with pytest.raises(ValueError, match="window"):
        OverlapTrimmer("a", window=0)
    with pytest.raises(TypeError, match="partial must be a str"):
        OverlapTrimmer(b"a")  # type: ignore[arg-type]
    trimmer = OverlapTrimmer("a")
    with pytest.raises(TypeError, match="str pieces"):
        trimmer.feed(1)  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match="failed"):
        trimmer.feed("a")
    done = OverlapTrimmer("a")
    done.close()
    with pytest.raises(RuntimeError, match="closed"):
        done.feed("a")


texts = st.text(alphabet="ab \n", max_size=40)


@given(
    partial=texts,
    new=texts,
    cuts=st.lists(st.integers(0, 40), max_size=6),
    window=st.integers(1, 50),
)
def test_property_any_chunking_gives_the_longest_overlap_left_out(
    partial: str, new: str, cuts: list[int], window: int
) -> None:
    bounds = sorted({min(c, len(new)) for c in cuts})
    pieces = [new[i:j] for i, j in zip([0, *bounds], [*bounds, len(new)], strict=True)]
    expected = new[brute_overlap(partial, new, window) :]
    assert trimmed(partial, pieces, window=window) == expected


@given(
    answer=st.text(alphabet="ab \n", min_size=1, max_size=60),
    data=st.data(),
)
def test_property_partial_plus_output_is_the_whole_answer(answer: str, data: st.DataObject) -> None:
    # The first attempt showed answer[:cut]; the second repeats any suffix of it, then goes on.
    cut = data.draw(st.integers(0, len(answer)))
    repeat = data.draw(st.integers(0, cut))
    rest = "c" + answer[cut:]  # its first character is in no partial: no longer repeat fits
    partial, new = answer[:cut], answer[cut - repeat : cut] + rest
    assume(brute_overlap(partial, new, 2048) == repeat)
    pieces = data.draw(st.lists(st.integers(0, len(new)), max_size=5))
    bounds = sorted(set(pieces))
    chunks = [new[i:j] for i, j in zip([0, *bounds], [*bounds, len(new)], strict=True)]
    assert partial + trimmed(partial, chunks) == partial + rest


# ------------------------------------------------------------------ the delta stream


def run(trimmer: ContinuationTrimmer, items: list[Delta]) -> list[Delta]:
    out: list[Delta] = []
    for item in items:
        out += trimmer.feed(item)
    return out + trimmer.close()


def test_continuation_trimmer_text_and_reasoning() -> None:
    partial = Message(content="Hello wor", reasoning="Think")
    items: list[Delta] = [
        ReasoningDelta("Think"),
        ReasoningDelta("ing"),
        TextDelta("wor"),
        TextDelta("ld"),
        Finish("stop"),
    ]
    out = run(ContinuationTrimmer(partial), items)
    assert out == [ReasoningDelta("ing"), TextDelta("ld"), Finish("stop")]


def test_continuation_trimmer_releases_held_text_before_another_delta() -> None:
    out = run(ContinuationTrimmer(Message(content="abc")), [TextDelta("ab"), Finish("stop")])
    assert out == [TextDelta("ab"), Finish("stop")]


def test_continuation_trimmer_metadata_first_keeps_the_overlap_open() -> None:
    items: list[Delta] = [rs.Metadata({"id": "x"}), TextDelta("bc"), TextDelta("d")]
    out = run(ContinuationTrimmer(Message(content="abc")), items)
    assert out == [rs.Metadata({"id": "x"}), TextDelta("d")]


def test_continuation_trimmer_numbers_calls_after_the_partials() -> None:
    partial = Message(content="a", tool_calls=(DONE_CALL,))
    out = run(ContinuationTrimmer(partial), [ToolCallDelta(0, "{}", id="c", name="g")])
    assert out == [ToolCallDelta(1, "{}", id="c", name="g")]
    assert _closed(replay(partial) + out).tool_calls == (
        DONE_CALL,
        ToolCall(1, "c", "g", "{}"),
    )


def test_continuation_trimmer_after_a_cut_call_resets_and_replays() -> None:
    trimmer = ContinuationTrimmer(PARTIAL, attempt=3, reason="cut")
    out = run(trimmer, [TextDelta("It is sunny."), Finish("stop")])
    assert out[0] == Reset(3, "cut")
    shown = replay(PARTIAL)  # what the consumer saw before the cut, and then this
    message = _closed(shown + out)
    assert message.content == "It is sunny."
    assert message.tool_calls == (DONE_CALL,)
    assert message.reasoning == "Let me think."


def test_continuation_trimmer_other_choices_pass() -> None:
    out = run(ContinuationTrimmer(Message(content="ab")), [TextDelta("ab", choice=1)])
    assert out == [TextDelta("ab", choice=1)]


def test_continuation_trimmer_refusals() -> None:
    with pytest.raises(TypeError, match=r"rs\.Message"):
        ContinuationTrimmer("text")  # type: ignore[arg-type]
    trimmer = ContinuationTrimmer(Message())
    with pytest.raises(TypeError, match=r"rs\.continue_from\(\)"):
        trimmer.feed("line")  # type: ignore[arg-type]
    with pytest.raises(RuntimeError):
        trimmer.close()
    done = ContinuationTrimmer(Message())
    assert done.close() == []
    with pytest.raises(RuntimeError, match="closed"):
        done.feed(TextDelta("a"))


CALLS: list[Delta] = [
    ToolCallDelta(0, '{"city":', id="call_a", name="weather"),
    ToolCallDelta(1, '{"tz":', id="call_b", name="time"),
    ToolCallDelta(0, ' "Paris"}'),
    ToolCallDelta(1, ' "UTC"}'),
    Finish("tool_calls"),
]


def _pieces(text: str, bounds: list[int]) -> list[str]:
    cuts = sorted({min(b, len(text)) for b in bounds})
    return [text[i:j] for i, j in zip([0, *cuts], [*cuts, len(text)], strict=True)]


@given(answer=st.text(alphabet="ab \n", min_size=1, max_size=40), data=st.data())
def test_property_the_consumer_gets_the_scripted_answer_once(
    answer: str, data: st.DataObject
) -> None:
    # The scripted answer: text, then two parallel tool calls. The first attempt is cut
    # in the text; the second repeats any suffix of what was shown, then the rest.
    whole = "c" + answer  # the rest of the text starts with a character never shown
    cut = data.draw(st.integers(0, len(whole) - 1))
    shown_text, rest = whole[:cut], whole[cut:]
    repeat = data.draw(st.integers(0, cut))
    assume(brute_overlap(shown_text, shown_text[cut - repeat :] + rest, 2048) == repeat)
    shown: list[Delta] = [
        TextDelta(p) for p in _pieces(shown_text, data.draw(st.lists(st.integers(0, 40))))
    ]
    new_text = shown_text[cut - repeat :] + rest
    again: list[Delta] = [
        TextDelta(p) for p in _pieces(new_text, data.draw(st.lists(st.integers(0, 40))))
    ]
    trimmer = ContinuationTrimmer(_closed([*shown, Finish("cancelled")]))
    out = run(trimmer, [*again, *CALLS])
    scripted = _closed([TextDelta(whole), *CALLS])
    assert _closed([*shown, *out]) == scripted

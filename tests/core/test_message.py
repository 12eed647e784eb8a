"""MessageAccumulator: one final Message per choice."""

from __future__ import annotations

from typing import Any

import pytest

from rxstream.core.message import MessageAccumulator
from rxstream.models import (
    ChatChunk,
    Citation,
    EmptyCitations,
    Finish,
    Message,
    Metadata,
    ReasoningBlock,
    ReasoningDelta,
    ReasoningState,
    RefusalDelta,
    TextBlock,
    TextBlockStart,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    Usage,
)
from rxstream.operators._chunk_input import chunks_or_deltas


def run(items: list[Any]) -> list[Message]:
    # Chunks too: the machines `rs.accumulate_message()` runs (a delta decoder first).
    acc = chunks_or_deltas(MessageAccumulator, "rs.accumulate_message()", reads_chunks=True)()
    for item in items:
        assert acc.feed(item) == []
    return acc.close()


def ch(delta: Any, finish: str | None = None, index: int = 0, **extra: Any) -> ChatChunk:
    return ChatChunk(
        {"choices": [{"index": index, "delta": delta, "finish_reason": finish}], **extra}
    )


U1, U2 = Usage(1, 2, 3), Usage(1, 5, 6, reasoning_tokens=2)

CASES: list[tuple[str, list[Any], list[Message]]] = [
    ("nothing", [], []),
    (
        "text, reasoning, refusal joined",
        [
            ReasoningDelta("a"),
            ReasoningDelta("b"),
            TextDelta("c"),
            TextDelta("d"),
            RefusalDelta("e"),
            Finish("stop"),
        ],
        [Message(reasoning="ab", content="cd", refusal="e", finish_reason="stop")],
    ),
    (
        "tool calls in index order, finish reason tool_calls",
        [ToolCallDelta(1, "{}", "b", "g"), ToolCallDelta(0, "{}", "a", "f"), Finish("tool_calls")],
        [
            Message(
                tool_calls=(ToolCall(0, "a", "f", "{}"), ToolCall(1, "b", "g", "{}")),
                finish_reason="tool_calls",
            )
        ],
    ),
    (
        "tool calls of an unfinished choice still come",
        [ToolCallDelta(0, "{", "a", "f"), ToolCallDelta(0, "}")],
        [Message(tool_calls=(ToolCall(0, "a", "f", "{}"),))],
    ),
    (
        "stop after tool calls: the last reason wins, calls kept",
        [ToolCallDelta(0, "{}", "a", "f"), Finish("tool_calls"), Finish("stop")],
        [Message(tool_calls=(ToolCall(0, "a", "f", "{}"),), finish_reason="stop")],
    ),
    (
        "the last usage is shared by every choice",
        [TextDelta("x"), TextDelta("y", choice=1), U1, U2],
        [Message(content="x", usage=U2), Message(choice=1, content="y", usage=U2)],
    ),
    ("usage alone makes no choice", [U1], []),
    (
        "n>1 interleaved chunks stay apart, in choice order",
        [
            ch({"role": "assistant", "content": ""}, index=2),
            ch({"role": "assistant", "content": ""}, index=0),
            ch({"content": "c"}, index=2),
            ch({"content": "a"}, index=0),
            ch({}, "stop", index=2),
            ch({}, "length", index=0),
        ],
        [
            Message(content="a", finish_reason="length"),
            Message(choice=2, content="c", finish_reason="stop"),
        ],
    ),
    (
        "role from the chunk; role null later ignored (mistral)",
        [ch({"role": "tool", "content": "a"}), ch({"role": None, "content": "b"})],
        [Message(role="tool", content="ab")],
    ),
    (
        "role repeated on every chunk (openrouter)",
        [
            ch({"role": "assistant", "content": "a"}),
            ch({"role": "assistant", "content": "b"}, "stop"),
        ],
        [Message(content="ab", finish_reason="stop")],
    ),
    (
        "a choice named only by an empty delta exists",
        [ch({"role": "assistant"})],
        [Message()],
    ),
    (
        "azure empty first chunk makes no choice",
        [ChatChunk({"choices": [], "prompt_filter_results": []}), ch({"content": "Hi"}, "stop")],
        [Message(content="Hi", finish_reason="stop")],
    ),
    (
        "usage on the finish chunk",
        [
            ch(
                {"content": "Hi"},
                "stop",
                usage={"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3},
            )
        ],
        [Message(content="Hi", finish_reason="stop", usage=U1)],
    ),
]


@pytest.mark.parametrize(("items", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_accumulate(items: list[Any], expected: list[Message]) -> None:
    assert run(items) == expected


def test_metadata_lists_extend_and_the_deltas_keep_theirs() -> None:
    # Logprobs come one entry a chunk: the message gathers them, in order, in a list of its
    # own (extended in place, not copied whole per delta), and every delta keeps its list.
    deltas = [Metadata({"logprobs": [k], "seed": k}) for k in range(4)]
    for _again in range(2):  # the same deltas fed twice give the same message
        accumulator = MessageAccumulator()
        for delta in [*deltas, Metadata({"logprobs": "none"}), Metadata({"logprobs": [9]})]:
            accumulator.feed(delta)
        [message] = accumulator.close()
        assert message.metadata == {"logprobs": [9], "seed": 3}
        accumulator = MessageAccumulator()
        for delta in deltas:
            accumulator.feed(delta)
        [message] = accumulator.close()
        assert message.metadata == {"logprobs": [0, 1, 2, 3], "seed": 3}
    assert [delta.data["logprobs"] for delta in deltas] == [[0], [1], [2], [3]]


def test_chunks_and_deltas_mix() -> None:
    assert run([ch({"role": "assistant", "content": "a"}), TextDelta("b"), Finish("stop")]) == [
        Message(content="ab", finish_reason="stop")
    ]


def test_refuses_after_close_and_bad_items() -> None:
    acc = MessageAccumulator()
    acc.close()
    with pytest.raises(RuntimeError, match="this MessageAccumulator is closed"):
        acc.feed(TextDelta("a"))
    with pytest.raises(RuntimeError, match="is closed"):
        acc.close()
    acc = MessageAccumulator()
    with pytest.raises(TypeError, match=r"rs\.accumulate_message\(\) takes delta items"):
        acc.feed(42)  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match="this MessageAccumulator is failed"):
        acc.close()
    acc = MessageAccumulator()
    with pytest.raises(TypeError, match=r"got a ChatChunk .*: add rs\.deltas\(\) before it"):
        acc.feed(ch({"content": "a"}))  # type: ignore[arg-type]
    pair = chunks_or_deltas(MessageAccumulator, "rs.accumulate_message()", reads_chunks=True)()
    with pytest.raises(TypeError, match=r"rs\.accumulate_message\(\) takes ChatChunk or delta"):
        pair.feed(42)


def _blocks(deltas: list[Any]) -> list[Any]:
    accumulator = MessageAccumulator()
    for delta in deltas:
        accumulator.feed(delta)
    (message,) = accumulator.close()
    return list(message.blocks)


SIGNED = ReasoningState("thinking", data="sig-1", text="think one")
CITE_A = Citation("web_search_result_location", "https://a", start=3, end=14, whole_block=True)
CITE_B = Citation("web_search_result_location", "https://b", start=3, end=14, whole_block=True)
CITE_C = Citation("char_location", text="Grass", start=16, end=21, whole_block=True)
CITE_WHOLE = Citation("char_location", start=0, end=11, whole_block=True)
SIGNED_2 = ReasoningState("thinking", data="sig-2", text="then")


@pytest.mark.parametrize(
    ("deltas", "blocks"),
    [
        pytest.param(
            [TextDelta("He"), TextDelta("llo")],
            [TextBlock("Hello")],
            id="one-text-run",
        ),
        pytest.param(
            [ReasoningDelta("think "), ReasoningDelta("one"), SIGNED, TextDelta("Hi")],
            [ReasoningBlock("think one", SIGNED), TextBlock("Hi")],
            id="signed-reasoning-then-text",
        ),
        pytest.param(
            [
                ReasoningDelta("think one"),
                SIGNED,
                ToolCallDelta(0, '{"a":1}', "c0", "f"),
                ReasoningDelta("then"),
                SIGNED_2,
                TextDelta("done"),
                Finish("stop"),
            ],
            [
                ReasoningBlock("think one", SIGNED),
                ToolCall(0, "c0", "f", '{"a":1}'),
                ReasoningBlock("then", SIGNED_2),
                TextBlock("done"),
            ],
            id="interleaved-thinking-and-a-call",
        ),
        pytest.param(
            # A Responses reasoning item is done after the text that followed its summary:
            # the state closes the earlier run, and the text goes on in its own run.
            [
                ReasoningDelta("sum"),
                TextDelta("A"),
                ReasoningState("reasoning_item", id="rs_1"),
                TextDelta("B"),
            ],
            [ReasoningBlock("sum", ReasoningState("reasoning_item", id="rs_1")), TextBlock("AB")],
            id="a-late-state-closes-the-earlier-run",
        ),
        pytest.param(
            [TextDelta("a"), ReasoningDelta("r"), TextDelta("b"), ReasoningDelta("s")],
            [TextBlock("a"), ReasoningBlock("r"), TextBlock("b"), ReasoningBlock("s")],
            id="alternating-runs",
        ),
        pytest.param(
            # Anthropic: "So " (no citations), "sky is blue" (two), ". " (none), "Grass" (one).
            [
                TextDelta("So "),
                TextDelta("sky "),
                TextDelta("is blue"),
                CITE_A,
                CITE_B,
                TextDelta(". "),
                TextDelta("Grass"),
                CITE_C,
                Finish("stop"),
            ],
            [
                TextBlock("So "),
                TextBlock("sky is blue", (CITE_A, CITE_B)),
                TextBlock(". "),
                TextBlock("Grass", (CITE_C,)),
            ],
            id="whole-block-citations-split-the-text",
        ),
        pytest.param(
            # Text merged by `rs.coalesce`: the cited span starts inside a piece.
            [TextDelta("So sky "), TextDelta("is blue"), CITE_A, TextDelta(".")],
            [TextBlock("So "), TextBlock("sky is blue", (CITE_A,)), TextBlock(".")],
            id="a-span-inside-a-piece",
        ),
        pytest.param(
            [TextDelta("sky is blue"), CITE_WHOLE],
            [TextBlock("sky is blue", (CITE_WHOLE,))],
            id="a-span-over-the-whole-run",
        ),
        pytest.param(
            # Anthropic: a block that came with `"citations": []` and got none stays apart,
            # its citations `()`; the text around it has None.
            [
                TextDelta("So "),
                TextDelta("rain is wet"),
                EmptyCitations(3, 14),
                TextDelta("!"),
                TextDelta(" Sky"),
                EmptyCitations(15, 19),
                Finish("stop"),
            ],
            [
                TextBlock("So "),
                TextBlock("rain is wet", ()),
                TextBlock("!"),
                TextBlock(" Sky", ()),
            ],
            id="an-empty-citations-list-keeps-its-block-apart",
        ),
        pytest.param(
            # Two text blocks side by side (Anthropic, Bedrock, Responses items): apart,
            # the text unchanged; a start where no text is open changes nothing.
            [
                TextBlockStart(),
                TextDelta("Hel"),
                TextDelta("lo. "),
                TextBlockStart(),
                TextDelta("World."),
                TextBlockStart(),
                TextBlockStart(),
                TextDelta("!"),
                ReasoningDelta("r"),
                TextBlockStart(),
                TextDelta("?"),
                Finish("stop"),
            ],
            [
                TextBlock("Hello. "),
                TextBlock("World."),
                TextBlock("!"),
                ReasoningBlock("r"),
                TextBlock("?"),
            ],
            id="a-text-block-start-keeps-adjacent-text-blocks-apart",
        ),
        pytest.param(
            # No text open, or not the tail: nothing splits.
            [ReasoningDelta("r"), EmptyCitations(0, 1), TextDelta("ab"), EmptyCitations(0, 1)],
            [ReasoningBlock("r"), TextBlock("ab")],
            id="an-empty-list-off-the-tail-leaves-the-text-whole",
        ),
        pytest.param(
            # Not the tail of the text (other dialects' spans, a span out of range), or no
            # text open: the text stays whole; they are on `Message.citations` only.
            [
                TextDelta("So sky is blue"),
                Citation("grounding", start=3, end=14),
                Citation("x", start=0, end=5, whole_block=True),
                Citation("x", start=0, end=99, whole_block=True),
                Citation("x", whole_block=True),
                ReasoningDelta("r"),
                Citation("x", start=14, end=14, whole_block=True),
            ],
            [TextBlock("So sky is blue"), ReasoningBlock("r")],
            id="other-citations-leave-the-text-whole",
        ),
    ],
)
def test_blocks_keep_the_order_they_came_in(deltas: list[Any], blocks: list[Any]) -> None:
    assert _blocks(deltas) == blocks

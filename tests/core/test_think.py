"""ThinkTagSplitter: <think>...</think> text moves from TextDelta to ReasoningDelta."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rxstream.core.think import ThinkTagSplitter
from rxstream.models import ChatChunk, Delta, Finish, ReasoningDelta, TextDelta, Usage
from rxstream.operators._chunk_input import chunks_or_deltas
from tests.support.chunking import outputs_for_all_chunkings


def run(items: list[Any]) -> list[Delta]:
    # Chunks too: the machines `rs.think_tags()` runs (a delta decoder first).
    splitter = chunks_or_deltas(ThinkTagSplitter, "rs.think_tags()")()
    out: list[Delta] = []
    for item in items:
        out.extend(splitter.feed(item))
    return out + splitter.close()


T, R = TextDelta, ReasoningDelta

CASES: list[tuple[str, list[Any], list[Delta]]] = [
    ("plain text untouched", [T("hello"), T(" world")], [T("hello"), T(" world")]),
    ("whole block in one piece", [T("<think>hm</think>Hi")], [R("hm"), T("Hi")]),
    (
        "deepseek-r1 shape, whitespace kept",
        [T("<think>\nhm\n</think>\n\nHi")],
        [R("\nhm\n"), T("\n\nHi")],
    ),
    ("open tag split", [T("<th"), T("ink>hm"), T("</think>ok")], [R("hm"), T("ok")]),
    ("close tag split", [T("<think>a</"), T("thi"), T("nk>b")], [R("a"), T("b")]),
    ("tag split one char at a time", [T(c) for c in "<think>x</think>y"], [R("x"), T("y")]),
    ("text before the block", [T("pre<think>r</think>post")], [T("pre"), R("r"), T("post")]),
    ("a false start is released", [T("a <th"), T("e end")], [T("a "), T("<the end")]),
    (
        "a lone < is released at once when it cannot be a tag",
        [T("1 <"), T(" 2")],
        [T("1 "), T("< 2")],
    ),
    ("held prefix flushed at close", [T("end <thi")], [T("end "), T("<thi")]),
    ("unclosed block stays reasoning", [T("<think>still thinking")], [R("still thinking")]),
    (
        "held piece released before the next non-text delta",
        [T("x <thi"), Finish("stop")],
        [T("x "), T("<thi"), Finish("stop")],
    ),
    ("two blocks", [T("<think>a</think>b<think>c</think>d")], [R("a"), T("b"), R("c"), T("d")]),
    (
        "choices apart",
        [
            T("<think>a", choice=0),
            T("<think>b</th", choice=1),
            T("</think>c"),
            T("ink>d", choice=1),
        ],
        [R("a"), R("b", 1), T("c"), T("d", 1)],
    ),
    (
        "other deltas pass through",
        [R("native"), Usage(1, 2, 3), Finish("stop")],
        [R("native"), Usage(1, 2, 3), Finish("stop")],
    ),
    (
        "chunks are decoded first",
        [
            ChatChunk(
                {
                    "choices": [
                        {
                            "index": 0,
                            "delta": {"content": "<think>a</think>b"},
                            "finish_reason": "stop",
                        }
                    ]
                }
            )
        ],
        [R("a"), T("b"), Finish("stop")],
    ),
]


@pytest.mark.parametrize(("items", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_split(items: list[Any], expected: list[Delta]) -> None:
    assert run(items) == expected


def merged(deltas: list[Delta]) -> list[tuple[str, str]]:
    """Adjacent pieces of one kind joined: what a chunking cannot change."""
    out: list[tuple[str, str]] = []
    for d in deltas:
        assert isinstance(d, TextDelta | ReasoningDelta)
        kind = d.type.value
        if out and out[-1][0] == kind:
            out[-1] = (kind, out[-1][1] + d.text)
        else:
            out.append((kind, d.text))
    return out


class _TextMachine:
    """Adapter for `outputs_for_all_chunkings`: each str piece is one TextDelta."""

    def __init__(self) -> None:
        self.splitter = ThinkTagSplitter()
        self.out: list[Delta] = []

    def feed(self, piece: str) -> list[Any]:
        self.out.extend(self.splitter.feed(TextDelta(piece)))
        return []

    def close(self) -> list[Any]:
        return merged(self.out + self.splitter.close())


def test_every_split_gives_the_same_text_and_reasoning() -> None:
    got = outputs_for_all_chunkings(_TextMachine, "a<think>b <t </thin c</think>d<")
    assert got == [("text", "a"), ("reasoning", "b <t </thin c"), ("text", "d<")]


pieces = st.lists(
    st.sampled_from(["<think>", "</think>", "<", "th", "ink>", "/", "a", " ", "<th", "\n"]),
    max_size=12,
)


@settings(max_examples=200, deadline=None)
@given(pieces, st.data())
def test_random_chunking_same_result_and_nothing_lost(
    parts: list[str], data: st.DataObject
) -> None:
    text = "".join(parts)
    cuts = sorted(data.draw(st.sets(st.integers(0, len(text)), max_size=8)))
    fragments = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    whole = merged(run([TextDelta(text)]))
    assert merged(run([TextDelta(f) for f in fragments])) == whole
    # Nothing but the tags is lost: the reference is a plain scan of the whole text.
    expected: list[tuple[str, str]] = []
    inside, rest = False, text
    while rest:
        tag = "</think>" if inside else "<think>"
        at = rest.find(tag)
        piece, rest = (rest, "") if at < 0 else (rest[:at], rest[at + len(tag) :])
        if piece:
            expected.append(("reasoning" if inside else "text", piece))
        if at >= 0:
            inside = not inside
    assert whole == merged(
        [TextDelta(t) if k == "text" else ReasoningDelta(t) for k, t in expected]
    )


def test_refuses_after_close() -> None:
    splitter = ThinkTagSplitter()
    splitter.close()
    with pytest.raises(RuntimeError, match="this ThinkTagSplitter is closed"):
        splitter.feed(TextDelta("a"))

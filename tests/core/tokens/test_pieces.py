"""The piece boundaries the token counter settles large fragments at, and what they save.

Under the published patterns (r50k, cl100k, o200k) a piece never spans certain
places between two ASCII characters (`tokens._BOUNDARIES`): the counter
settles the text before the last such place in one encode and splits only the
few characters after it. Each rule is checked here against the `regex` module's
split, exhaustively on short texts and on every pair of ASCII characters.
"""

from __future__ import annotations

import itertools
import random
import string
from collections.abc import Callable
from typing import Any

import pytest
import regex
import tiktoken
from hypothesis import given, settings
from hypothesis import strategies as st

from rxstream import _encodings as encodings_module
from rxstream.core import tokens as tokens_module
from rxstream.core.tokens import TAIL_LIMIT, TokenCounter
from rxstream.models import ReasoningDelta, TextDelta, ToolCallDelta
from tests.support.token_encodings import (
    CL100K,
    NEW_CHAR,
    O200K,
    O200K_TINY,
    R50K_PAT,
    R50K_TINY,
    no_surrogates,
    split_at,
)

PATTERNS = [
    pytest.param(R50K_PAT, id="r50k"),
    pytest.param(CL100K._pat_str, id="cl100k"),
    pytest.param(O200K._pat_str, id="o200k"),
]


def cut_at(cuts: Any, text: str, i: int) -> bool:
    """Whether the counter may settle `text[:i]` alone (a boundary between `i - 1` and `i`)."""
    return tokens_module._last_boundary(text[: i + 1], i, cuts) == i


SPACE_ONLY = tokens_module._SPACES


def cuts_of(pattern: str) -> Any:
    cuts = tokens_module._boundaries(pattern)
    assert cuts is not SPACE_ONLY  # the pattern's own rules are in use
    return cuts


def test_the_patterns_with_rules_are_tiktokens() -> None:
    # The rules hold for these patterns exactly as tiktoken spells them (r50k's is also p50k's).
    openai_public = pytest.importorskip("tiktoken_ext.openai_public")
    assert encodings_module.R50K_PAT == openai_public.r50k_pat_str == R50K_PAT
    assert set(tokens_module._BOUNDARIES) == {
        openai_public.r50k_pat_str,
        CL100K._pat_str,
        O200K._pat_str,
    }


@pytest.mark.parametrize(
    ("text", "r50k", "cl100k", "o200k"),
    [
        # a space after a non-space, as before
        pytest.param("ab cd", [2], [2], [2], id="space"),
        pytest.param("a  b", [1], [1], [1], id="space-run"),
        # between letters, digits and punctuation
        pytest.param("ab12", [2], [2], [2], id="letter-digit"),
        pytest.param("12ab", [2], [2], [2], id="digit-letter"),
        pytest.param("12+/", [2], [2], [2], id="digit-punct"),
        pytest.param("+/12", [2], [2], [2], id="punct-digit"),
        pytest.param("ab+/", [2], [2], [2], id="letter-punct"),
        pytest.param("x9k+Z/0", [1, 2, 3, 5, 6], [1, 2, 3, 5, 6], [1, 2, 3, 5, 6], id="base64"),
        # not: punctuation then a letter ("+ab" is one piece), a letter then "'"
        # ("it's" is one o200k piece), within a class, or next to whitespace
        pytest.param("+ab", [], [], [], id="punct-letter"),
        pytest.param("it's", [], [], [], id="quote"),
        pytest.param("1'5", [1, 2], [1, 2], [1, 2], id="digit-quote-digit"),
        pytest.param("1234", [], [], [], id="digits"),
        pytest.param("+/=", [], [], [], id="punctuation"),
        pytest.param("a\n1\t2\x1c3", [], [], [], id="whitespace"),
        pytest.param("5 ", [1], [1], [1], id="space-at-the-end"),
        # o200k alone: a small letter, then a capital
        pytest.param("camelCaseX", [], [], [5, 9], id="camel-case"),
        pytest.param("HTTPServer", [], [], [], id="capitals"),
        # never outside ASCII
        pytest.param("中1é2٣", [], [], [], id="non-ascii"),
    ],
)
def test_where_the_counter_may_cut(
    text: str, r50k: list[int], cl100k: list[int], o200k: list[int]
) -> None:
    for pattern, expected in zip(
        (R50K_PAT, CL100K._pat_str, O200K._pat_str), (r50k, cl100k, o200k), strict=True
    ):
        cuts = cuts_of(pattern)
        assert [i for i in range(1, len(text)) if cut_at(cuts, text, i)] == expected, pattern


def test_other_patterns_cut_only_at_a_space_after_a_non_space() -> None:
    assert tokens_module._boundaries(r"\S+|\s+") is SPACE_ONLY
    assert [i for i in range(1, 6) if cut_at(SPACE_ONLY, "ab1 +x", i)] == [3]


@pytest.mark.parametrize("pattern", PATTERNS)
def test_each_cut_splits_the_text_into_two_that_split_alone(pattern: str) -> None:
    # Every short text over one character of each class the patterns (and the
    # rules) tell apart: at each place the rules allow, the text's pieces are the
    # pieces of the text before it, then those of the text after it.
    findall = regex.compile(pattern).findall
    cuts = cuts_of(pattern)
    alphabet = [
        "a", "s", "A", "T", "1", " ", "\t", "\n", "\r", "'", "!", "/", "+", "\x1c", "中",
        "\u0301", "٣",
    ]  # fmt: skip
    checked = 0
    for length in range(2, 5):
        for chars in itertools.product(alphabet, repeat=length):
            text = "".join(chars)
            for i in range(1, length):
                if cut_at(cuts, text, i):
                    assert findall(text) == findall(text[:i]) + findall(text[i:]), (text, i)
                    checked += 1
    assert checked > 10_000


@pytest.mark.parametrize("pattern", PATTERNS)
def test_each_cut_holds_for_every_pair_of_ascii_characters(pattern: str) -> None:
    # The rules name ranges of ASCII characters: every pair they allow, in
    # contexts of each class on either side.
    findall = regex.compile(pattern).findall
    cuts = cuts_of(pattern)
    context = ["", "a", "s", "Q", "7", "123", " ", "'", "'s", "+", "/", "\n", "\r\n", "  "]
    pairs = 0
    for a, b in itertools.product(map(chr, range(128)), repeat=2):
        if not cut_at(cuts, a + b, 1):
            continue
        pairs += 1
        for left, right in itertools.product(context, repeat=2):
            text = left + a + b + right
            i = len(left) + 1
            assert findall(text) == findall(text[:i]) + findall(text[i:]), (text, i)
    assert pairs > 3_000


@pytest.mark.parametrize("pattern", PATTERNS)
@settings(max_examples=300, deadline=None)
@given(text=st.text(st.sampled_from(string.printable + "中é٣\u0301ǅ"), max_size=30))
def test_each_cut_holds_in_any_text(pattern: str, text: str) -> None:
    findall = regex.compile(pattern).findall
    cuts = cuts_of(pattern)
    pieces = findall(text)
    for i in range(1, len(text)):
        if cut_at(cuts, text, i):
            assert pieces == findall(text[:i]) + findall(text[i:]), (text, i)


# -- counting with the cuts -------------------------------------------------------------

ENCODINGS = [
    pytest.param(O200K, id="o200k"),
    pytest.param(CL100K, id="cl100k"),
    pytest.param(R50K_TINY, id="r50k-pattern"),
    pytest.param(O200K_TINY, id="o200k-pattern"),
]

BASE64 = string.ascii_letters + string.digits + "+/"


def run_of(alphabet: str, size: int, rng: random.Random) -> str:
    return "".join(rng.choice(alphabet) for _ in range(size))


# Long runs the cuts apply to (base64, identifiers, numbers, camelCase, a letter run
# with a digit at the end) and the ones they leave alone, among ordinary text.
runs = st.builds(
    run_of,
    st.sampled_from([BASE64, "ab1", "aB", "xyz", "Xz+", "9", "+/=", "中文1"]),
    st.integers(1, 400),
    st.randoms(use_true_random=False),
)
atoms = st.sampled_from(
    ["it's", " ", "\n", "  ", "'s", "'", "é", "12", "中", "\t", "\r\n", "x ", "\u200d", NEW_CHAR]
)
long_texts = st.lists(runs | atoms | st.text(max_size=3), max_size=8).map("".join)


@pytest.mark.parametrize("encoding", ENCODINGS)
@settings(max_examples=80, deadline=None)
@given(text=long_texts.filter(no_surrogates), cuts=st.lists(st.integers(0, 10_000), max_size=6))
def test_any_chunking_of_long_runs_counts_exactly(
    encoding: tiktoken.Encoding, text: str, cuts: list[int]
) -> None:
    # Large fragments go through the cuts; every running count not flagged as an
    # estimate is exact, and so is every final count.
    counter = TokenCounter(encoding)
    encode = encoding.encode_ordinary
    so_far = ""
    for fragment in split_at(text, cuts):
        so_far += fragment
        for count in counter.feed(TextDelta(fragment)) + counter.feed(ReasoningDelta(fragment)):
            assert count.estimated or count.text == len(encode(so_far)), repr(so_far)
        counter.feed(ToolCallDelta(0, fragment))
    [final] = counter.close()
    whole = len(encode(text))
    assert (final.text, final.reasoning, final.tool_arguments, final.estimated) == (
        whole,
        whole,
        whole,
        False,
    )


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_base64_in_large_fragments_is_exact_at_every_fragment(encoding: tiktoken.Encoding) -> None:
    rng = random.Random(3)
    text = run_of(BASE64, 20_000, rng)
    counter = TokenCounter(encoding)
    so_far = ""
    for fragment in split_at(text, [rng.randrange(20_000) for _ in range(30)]):
        so_far += fragment
        for count in counter.feed(TextDelta(fragment)):
            assert (count.text, count.estimated) == (len(encoding.encode_ordinary(so_far)), False)
    assert counter.close()[0].text == len(encoding.encode_ordinary(text))


def test_a_pattern_without_rules_keeps_a_letter_digit_change_in_one_piece() -> None:
    # Under a pattern where "ab12" is one piece (one token here), cutting between
    # letters and digits would count wrong: such a pattern cuts only at spaces after
    # non-spaces.
    ranks = {bytes([i]): i for i in range(256)}
    ranks.update({m: 256 + i for i, m in enumerate([b"b1", b"ab1", b"ab12", b"c9"])})
    encoding = tiktoken.Encoding(
        "glued",
        pat_str=r"""[a-z]+[0-9]*|[0-9]+| ?[^\sa-z0-9]+|\s+""",
        mergeable_ranks=ranks,
        special_tokens={},
    )
    text = "ab12" * 1_000 + " c9 ab12"
    counter = TokenCounter(encoding)
    for fragment in split_at(text, range(0, len(text), 700)):  # each ends in "ab12"
        counter.feed(TextDelta(fragment))
    assert counter.close()[0].text == len(encoding.encode_ordinary(text)) == 1_004


@pytest.mark.parametrize(
    ("fragment", "nothing"),
    [
        pytest.param("a b\n", True, id="ascii"),
        pytest.param("東京 café 😀", True, id="printable"),
        pytest.param("東京\n\tcafé\r\n😀", True, id="printable-and-line-breaks"),
        pytest.param("東京\n\ud83d", False, id="a-surrogate-half"),
        pytest.param(f"東京\n{NEW_CHAR}", False, id="a-character-too-new"),
        pytest.param("東京\x0b", False, id="another-control"),
        pytest.param("👨\u200d👩", False, id="a-format-character"),
    ],
)
def test_what_needs_no_repair_skips_the_check_of_each_character(
    fragment: str, nothing: bool
) -> None:
    # Large fragments with nothing to repair skip `_clean`; the rest (rarer) go through it.
    assert tokens_module._nothing_to_repair(fragment) is nothing


# -- what the cuts save ----------------------------------------------------------------


class SplitCounting:
    """Counts the characters the counter's regular expression splits (not tiktoken's own)."""

    def __init__(self, pattern: str) -> None:
        splitters = tokens_module._splitters(pattern)
        assert splitters is not None
        self.split = 0
        self.splitters = tuple(map(self.counting, splitters))

    def counting(self, split: Callable[[str], list[str]]) -> Callable[[str], list[str]]:
        def run(text: str) -> list[str]:
            self.split += len(text)
            return split(text)

        return run


@pytest.mark.parametrize(
    ("alphabet", "encoding"),
    [
        pytest.param(BASE64, CL100K, id="base64-cl100k"),
        pytest.param(BASE64, O200K, id="base64-o200k"),
        pytest.param(string.ascii_letters, O200K, id="mixed-case-letters-o200k"),
        pytest.param("abcdef0123456789", CL100K, id="hex-cl100k"),
    ],
)
def test_large_fragments_are_split_by_the_regex_only_at_their_ends(
    monkeypatch: pytest.MonkeyPatch, alphabet: str, encoding: tiktoken.Encoding
) -> None:
    # One encode settles a large fragment up to its last cut; the regular
    # expression reads only what follows it (a few characters, re-read with the
    # next fragment), not the whole fragment a second time.
    size = 50_000
    rng = random.Random(11)
    text = run_of(alphabet, size, rng)
    fragments = split_at(text, [rng.randrange(size) for _ in range(size // 1_000)])
    counting = SplitCounting(encoding._pat_str)
    monkeypatch.setattr(tokens_module, "_splitters", lambda pattern: counting.splitters)
    monkeypatch.setattr(tokens_module, "_shared", type(tokens_module._shared)())
    monkeypatch.setattr(tokens_module, "_shared_splits", type(tokens_module._shared_splits)())
    counter = TokenCounter(encoding)
    for fragment in fragments:
        counter.feed(ToolCallDelta(0, fragment))
    assert counter.close()[0].tool_arguments == len(encoding.encode_ordinary(text))
    assert counting.split <= len(fragments) * 3 * TAIL_LIMIT
    assert counting.split < size // 5


@settings(max_examples=300, deadline=None)
@given(
    text=st.text(st.sampled_from("中a1B +'\n"), max_size=200),
    start=st.integers(0, 210),
    o200k=st.booleans(),
)
def test_the_search_near_the_end_first_finds_the_last_boundary(
    text: str, start: int, o200k: bool
) -> None:
    # `_last_boundary` reverses only the end of a long text first, and runs one
    # search per kind of place: the answer is still the last boundary at or after
    # `start`, as checking each place finds it. (`_has_boundary`, all kinds in one
    # search on short texts: whether there is any.)
    for cuts in (SPACE_ONLY, cuts_of(O200K._pat_str if o200k else R50K_PAT)):
        every = [i for i in range(1, len(text)) if cut_at(cuts, text, i)]
        after_start = [i for i in every if i >= start]
        last = after_start[-1] if after_start else -1
        assert tokens_module._last_boundary(text, start, cuts) == last
        assert tokens_module._has_boundary(text, cuts) is bool(every)

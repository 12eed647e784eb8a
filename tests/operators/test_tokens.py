"""count_tokens: running counts in virtual time, disposal, errors, independent subscriptions.

TestScheduler: subscribed at 200, disposed at 1000.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import pytest
import reactivex
import tiktoken
import tiktoken.load
from hypothesis import given, settings
from hypothesis import strategies as st
from reactivex.notification import OnNext
from reactivex.testing import ReactiveTest, TestScheduler
from reactivex.testing.hotobservable import HotObservable
from reactivex.testing.subscription import Subscription

import rxstream as rs
from rxstream.core import Chained, DeltaDecoder, TokenCounter, pipeline
from rxstream.core.tokens import TAIL_LIMIT, resolve_encoding
from rxstream.models import Delta, ReasoningDelta, TextDelta, TokenCount, ToolCallDelta, Usage
from tests.support.fast import (
    fast_paths_as,
    fast_switch,  # noqa: F401  (the `fast` fixture: on, then off)
)

# The data the `tokens` extra installs: no network.
CL100K: tiktoken.Encoding = resolve_encoding("cl100k_base")  # type: ignore[assignment]
on_next, on_completed, on_error = (
    ReactiveTest.on_next,
    ReactiveTest.on_completed,
    ReactiveTest.on_error,
)


def n(text: str) -> int:
    return len(CL100K.encode_ordinary(text))


USAGE = Usage(prompt_tokens=12, completion_tokens=3, total_tokens=15)


def test_running_counts_then_one_final_count() -> None:
    # -a---b---r---u---|      a="Hello", b=" internationa", r=reasoning "hmm", u=usage
    # -1---2---3-------(F|)
    scheduler = TestScheduler()
    source = scheduler.create_cold_observable(
        on_next(10, TextDelta("Hello")),
        on_next(20, TextDelta(" internationa")),
        on_next(30, TextDelta("l")),
        on_next(40, ReasoningDelta("hmm")),
        on_next(50, USAGE),
        on_completed(60),
    )
    result = scheduler.start(lambda: source.pipe(rs.count_tokens(encoding=CL100K)))
    text = n("Hello international")
    assert result.messages == [
        on_next(210, TokenCount(1, 0, 0, 0)),
        on_next(220, TokenCount(n("Hello internationa"), 0, 0, 0)),
        on_next(230, TokenCount(text, 0, 0, 0)),  # the last fragment merged: the count shrank
        on_next(240, TokenCount(text, n("hmm"), 0, 0)),
        on_next(260, TokenCount(text, n("hmm"), 0, 0, usage=USAGE, final=True)),
        on_completed(260),
    ]
    assert n("Hello internationa") > text
    assert source.subscriptions == [Subscription(200, 260)]


def test_an_upstream_error_passes_through_without_a_final_count() -> None:
    scheduler = TestScheduler()
    boom = rs.TransportError("connection reset")
    source = scheduler.create_hot_observable(
        on_next(150, TextDelta("early")),  # before subscription: never seen
        on_next(210, TextDelta("Hi")),
        on_error(220, boom),
    )
    result = scheduler.start(lambda: source.pipe(rs.count_tokens(encoding=CL100K)))
    assert result.messages[0] == on_next(210, TokenCount(1, 0, 0, 0))
    [(time, notification)] = [(m.time, m.value) for m in result.messages[1:]]
    assert time == 220
    assert notification.kind == "E"
    assert isinstance(notification.exception, rs.TransportError)
    assert source.subscriptions == [Subscription(200, 220)]


def test_a_wrong_item_errors_and_disposes_the_upstream() -> None:
    scheduler = TestScheduler()
    source: HotObservable[Any] = scheduler.create_hot_observable(
        on_next(210, TextDelta("a")), on_next(220, "not a delta"), on_next(230, TextDelta("b"))
    )
    result = scheduler.start(lambda: source.pipe(rs.count_tokens(encoding=CL100K)))
    assert [m.time for m in result.messages] == [210, 220]
    error = result.messages[1].value
    assert error.kind == "E"
    assert isinstance(error.exception, TypeError)
    assert source.subscriptions == [Subscription(200, 220)]


def test_disposing_the_subscriber_disposes_the_upstream() -> None:
    scheduler = TestScheduler()
    source = scheduler.create_hot_observable(
        on_next(210, TextDelta("a")), on_next(1100, TextDelta("late")), on_completed(1200)
    )
    result = scheduler.start(lambda: source.pipe(rs.count_tokens(encoding=CL100K)), disposed=1000)
    assert result.messages == [on_next(210, TokenCount(1, 0, 0, 0))]
    assert source.subscriptions == [Subscription(200, 1000)]


def test_two_subscriptions_count_independently() -> None:
    counted = reactivex.of(TextDelta("one"), TextDelta(" two")).pipe(
        rs.count_tokens(encoding=CL100K)
    )
    first: list[TokenCount] = []
    second: list[TokenCount] = []
    counted.subscribe(first.append)
    counted.subscribe(second.append)
    assert (
        first
        == second
        == [
            TokenCount(1, 0, 0, 0),
            TokenCount(2, 0, 0, 0),
            TokenCount(2, 0, 0, 0, final=True),
        ]
    )


def test_chunks_straight_from_decode_chunks_are_counted() -> None:
    chunks = [
        rs.ChatChunk({"choices": [{"index": 1, "delta": {"content": "Bonjour"}}]}),
        rs.ChatChunk({"choices": [{"index": 0, "delta": {"content": "Hello"}}]}),
    ]
    out: list[TokenCount] = []
    reactivex.from_iterable(chunks).pipe(rs.count_tokens(encoding=CL100K)).subscribe(out.append)
    assert [(c.choice, c.text, c.final) for c in out] == [
        (1, n("Bonjour"), False),
        (0, n("Hello"), False),
        (0, n("Hello"), True),
        (1, n("Bonjour"), True),
    ]


@pytest.mark.parametrize(
    ("encoding", "error"),
    [
        pytest.param("no-such-encoding", ValueError, id="unknown name"),
        pytest.param(3.5, TypeError, id="wrong type"),
    ],
)
def test_a_bad_encoding_fails_when_the_operator_is_made(encoding: Any, error: type) -> None:
    with pytest.raises(error):
        rs.count_tokens(encoding=encoding)


def test_a_long_run_is_flagged_estimated_and_the_final_count_is_exact() -> None:
    # -a-b-c-d-|     a = 100 letters, b = 100 more (the run outgrows TAIL_LIMIT),
    # -1-2-3-4-(F|)  c = " and", d = " more"; 2 is an estimate, the rest exact
    run = "abcdefghijklmnopqrstuvwxy" * 8
    scheduler = TestScheduler()
    source = scheduler.create_cold_observable(
        on_next(10, ToolCallDelta(0, run[:100], id="c", name="f")),
        on_next(20, ToolCallDelta(0, run[100:])),
        on_next(30, ToolCallDelta(0, " and")),
        on_next(40, ToolCallDelta(0, " more")),
        on_completed(50),
    )
    result = scheduler.start(lambda: source.pipe(rs.count_tokens(encoding=CL100K)))
    counts = [m.value.value for m in result.messages if isinstance(m.value, OnNext)]
    assert len(run) > TAIL_LIMIT > 100
    assert [c.estimated for c in counts] == [False, True, False, False, False]
    assert [c.tool_arguments for i, c in enumerate(counts) if i != 1] == [
        n(run[:100]),
        n(run + " and"),
        n(run + " and more"),
        n(run + " and more"),
    ]
    assert counts[-1].final


def test_a_name_counts_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_network(blobpath: str) -> bytes:
        raise AssertionError(f"tried to read {blobpath}")

    monkeypatch.setattr(tiktoken.load, "read_file", no_network)
    out: list[TokenCount] = []
    reactivex.of(TextDelta("Hello world")).pipe(rs.count_tokens(encoding="o200k_base")).subscribe(
        out.append
    )
    assert [c.text for c in out] == [2, 2]


# -- any fragmentation, with and without the fast paths --------------------------------


def test_the_delta_decoder_in_front_is_fused_into_the_counter_only_with_the_fast_paths(
    fast: bool,
) -> None:
    run = pipeline.chain([DeltaDecoder(operator="rs.count_tokens()"), TokenCounter(CL100K)])
    assert type(run) is (TokenCounter if fast else Chained)


# Pieces of every kind tiktoken's patterns tell apart, glued at random: words that repeat
# (so the counter meets texts it has split before), spaces, line breaks, digits,
# contractions, punctuation, other scripts and emoji.
ATOMS = [
    "the", " the", " cat", " sat", "Hello", " world", "HTML", "don", "'t", "'s", "'ll", " ",
    "  ", "\t", "\n", "\n\n", "\r\n", " \n ", "1", "12", "1234", "!", "?!", "...", " (", ")",
    '{"a": ', "/", "é", "e\u0301", "中文", " 東京", "😀", "\u00a0", "<|endoftext|>",
]  # fmt: skip
fragment_texts = st.lists(st.sampled_from(ATOMS) | st.text(max_size=3), max_size=30).map("".join)


def cut_at(text: str, cuts: Sequence[int]) -> list[str]:
    """`text` cut at the given positions (duplicates give empty fragments)."""
    points = sorted(c % (len(text) + 1) for c in cuts)
    return [text[a:b] for a, b in itertools.pairwise([0, *points, len(text)])]


def counted(deltas: Sequence[Delta]) -> list[TokenCount]:
    out: list[TokenCount] = []
    reactivex.from_iterable(deltas).pipe(rs.count_tokens(encoding=CL100K)).subscribe(out.append)
    return out


@pytest.mark.parametrize("fast", [True, False], ids=["fast", "plain"])
@settings(max_examples=150, deadline=None)
@given(
    text=fragment_texts.filter(lambda t: not any("\ud800" <= c <= "\udfff" for c in t)),
    cuts=st.lists(st.integers(0, 10_000), max_size=20),
)
def test_any_fragmentation_counts_as_one_encode_of_the_whole_text(
    fast: bool, text: str, cuts: list[int]
) -> None:
    with fast_paths_as(fast):
        check_fragmentation(text, cut_at(text, cuts))


def check_fragmentation(text: str, fragments: list[str]) -> None:
    whole = n(text)
    # Answer text: every running count is exact for the text so far (none of these
    # texts runs on long enough to be estimated), the final one for the whole text.
    counts = counted([TextDelta(f) for f in fragments])
    so_far = itertools.accumulate(f for f in fragments if f)
    assert [c.text for c in counts[:-1]] == [n(t) for t in so_far]
    assert (counts[-1].text, counts[-1].final, counts[-1].estimated) == (whole, True, False)
    # Tool-call arguments: the same, for one call, and summed over two calls.
    first, *rest = fragments
    call = [ToolCallDelta(0, first, id="c1", name="f"), *(ToolCallDelta(0, f) for f in rest)]
    assert counted(call)[-1].tool_arguments == whole
    other = [ToolCallDelta(1, f.upper(), id="c2" if i == 0 else None) for i, f in enumerate(rest)]
    both = counted([d for pair in itertools.zip_longest(call, other) for d in pair if d])
    assert both[-1].tool_arguments == whole + n("".join(rest).upper())


def test_chunks_fed_straight_in_are_decoded_as_without_the_fast_paths(fast: bool) -> None:
    chunks: list[Any] = [
        rs.ChatChunk({"choices": [{"index": 0, "delta": {"content": "Hello"}}]}),
        TextDelta(" there"),
        rs.ChatChunk({"choices": [{"index": 0, "delta": {"content": " world"}}]}),
        rs.ChatChunk({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
    ]
    out: list[TokenCount] = []
    reactivex.from_iterable(chunks).pipe(rs.count_tokens(encoding=CL100K)).subscribe(out.append)
    assert [(c.text, c.final) for c in out] == [
        (1, False),
        (2, False),
        (3, False),
        (3, True),
    ]


@pytest.mark.parametrize(
    ("item", "says"),
    [
        pytest.param("data: {}", "add rs.sse_frames() and rs.decode_chunks() before it", id="line"),
        pytest.param(
            rs.ChatChunk({"choices": [{"index": "zero", "delta": {}}]}), "index", id="bad-chunk"
        ),
    ],
)
def test_a_wrong_item_is_reported_alike_with_and_without_the_fast_paths(
    fast: bool, item: Any, says: str
) -> None:
    errors: list[Exception] = []
    out: list[TokenCount] = []
    reactivex.of(TextDelta("a"), item, TextDelta("b")).pipe(
        rs.count_tokens(encoding=CL100K)
    ).subscribe(out.append, errors.append)
    assert out == [TokenCount(1, 0, 0, 0)]
    [error] = errors
    assert says in str(error)
    assert isinstance(error, TypeError if isinstance(item, str) else rs.MalformedChunkError)


def test_a_text_block_start_adds_nothing_to_the_count() -> None:
    plain: list[Delta] = [TextDelta("Hello. "), TextDelta("World.")]
    marked: list[Delta] = [TextDelta("Hello. "), rs.TextBlockStart(), TextDelta("World.")]
    counts = [
        reactivex.from_iterable(deltas).pipe(rs.count_tokens()).run() for deltas in (plain, marked)
    ]
    assert counts[0] == counts[1]
    assert counts[1].final

"""`rxstream.core.pipeline`: fusion read from what the machines declare, never from a table.

A pair of machines fuses by what each one declares (`hands` / `takes`,
`gives_deltas_only` / `_passes_deltas`, `_fuse_below` / `_fuse_above`), so a
new pair of machines, defined here and nowhere else, fuses without an edit of
the module; the modes of `Handoff` each hand one documented item type.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar

import pytest

from rxstream.core import DeltaDecoder, EventStreamParser, MessageAccumulator, SSEParser, dialects
from rxstream.core.lines import Unterminated
from rxstream.core.pipeline import Chained, Handoff, behind_deltas, chain, fuse, fuse_pair, takes
from rxstream.models import Delta, SSEFrame, TextDelta
from tests.support.fast import way


class Words:
    """A toy parser: a line's words, handed on as a list or (fused) as one `str`."""

    hands: ClassVar[tuple[Handoff, ...]] = (Handoff.FRAMES, Handoff.STRINGS)

    def __init__(self, *, fed: bool = False) -> None:
        self.fed = fed
        self.mode = Handoff.FRAMES

    def feed(self, line: str) -> list[Any]:
        self.fed = True
        return [line] if self.mode is Handoff.STRINGS else [line.split()]

    def close(self) -> list[Any]:
        return []

    def _can_hand(self, mode: Handoff) -> bool:
        return mode in self.hands and not self.fed

    def _hand(self, mode: Handoff) -> None:
        self.mode = mode


class Texts:
    """A toy decoder: each item as a text delta; it takes bare strings when fused."""

    takes: ClassVar[Handoff] = Handoff.STRINGS
    gives_deltas_only: ClassVar[bool] = True

    def __init__(self) -> None:
        self.strings = False

    def feed(self, item: Any) -> list[Delta]:
        return [TextDelta(item if self.strings else " ".join(item))]

    def close(self) -> list[Delta]:
        return []

    def _take(self, mode: Handoff) -> bool:
        self.strings = mode is Handoff.STRINGS
        return self.strings


def run(whole: Any, items: Iterable[Any]) -> list[Any]:
    out: list[Any] = []
    whole.feed_all(items, out)
    whole.close_into(out) if type(whole) is Chained else out.extend(whole.close())
    return out


def test_a_pair_declared_on_the_machines_alone_fuses() -> None:
    with way("stdlib"):
        words, texts = Words(), Texts()
        whole = chain([words, texts])
    assert type(whole) is Chained
    assert (words.mode, texts.strings) == (Handoff.STRINGS, True)
    assert run(whole, ["a b", "c"]) == [TextDelta("a b"), TextDelta("c")]


def test_the_pair_gives_what_it_gives_unfused() -> None:
    with way("plain"):
        words, texts = Words(), Texts()
        whole = chain([words, texts])
    assert (words.mode, texts.strings) == (Handoff.FRAMES, False)
    assert run(whole, ["a b", "c"]) == [TextDelta("a b"), TextDelta("c")]


def test_a_parser_that_was_fed_hands_nothing_over_and_the_decoder_is_not_switched() -> None:
    with way("stdlib"):
        texts = Texts()
        assert fuse_pair(Words(fed=True), texts) is None
    assert not texts.strings


@pytest.mark.parametrize(
    ("upper", "lower"),
    [
        (SSEParser, "bedrock"),  # Bedrock takes (headers, payload): no SSE parser hands those
        (EventStreamParser, "anthropic"),  # and the event-stream parser hands nothing else
        (EventStreamParser, "gemini"),
        (SSEParser, "ollama"),  # NDJSON: frames only
    ],
)
def test_modes_that_do_not_meet_do_not_fuse(upper: type, lower: str) -> None:
    with way("stdlib"):
        assert fuse_pair(upper(), dialects.decoder(lower)) is None


@pytest.mark.parametrize(
    ("dialect", "mode"),
    [
        ("openai-chat", Handoff.STRINGS),
        ("gemini", Handoff.STRINGS),
        ("auto", Handoff.STRINGS),
        ("anthropic", Handoff.PAIRS),
        ("openai-responses", Handoff.PAIRS),
        ("cohere", Handoff.PAIRS),
        ("bedrock", Handoff.MESSAGE_PAIRS),
        ("ollama", Handoff.FRAMES),
        ("ai-sdk", Handoff.FRAMES),
        ("rxstream", Handoff.FRAMES),
    ],
)
def test_each_decoder_declares_the_one_mode_it_takes(dialect: str, mode: Handoff) -> None:
    decoder = dialects.decoder(dialect)
    assert getattr(type(decoder), "takes", Handoff.FRAMES) is mode
    # It switches to that mode only, and only before any input.
    others = [other for other in Handoff if other is not mode]
    assert not any(takes(dialects.decoder(dialect), other) for other in others)
    assert takes(decoder, mode) is (mode is not Handoff.FRAMES)


LINES = ["event: a", "data: 1", "", "data: 2", "data: 3", "", "event: b", "data: last"]


@pytest.mark.parametrize(
    ("mode", "handed"),
    [
        (Handoff.FRAMES, [SSEFrame("1", "a"), SSEFrame("2\n3")]),
        (Handoff.STRINGS, [SSEFrame("1", "a"), "2\n3"]),
        (Handoff.PAIRS, [("a", "1"), ("message", "2\n3")]),
    ],
)
def test_the_sse_parser_hands_one_documented_type_per_mode(
    mode: Handoff, handed: list[Any]
) -> None:
    parser = SSEParser()
    assert parser._can_hand(mode)
    parser._hand(mode)
    out: list[Any] = []
    parser.feed_all(LINES, out)
    assert out == handed
    assert [type(item) for item in out] == [type(item) for item in handed]
    # The last frame, which no blank line ended, goes whole in every mode.
    [last] = parser.close()
    assert last == SSEFrame("last", "b")
    assert type(last.data) is Unterminated


def test_the_sse_parser_hands_no_mode_of_another_parser_nor_after_input() -> None:
    parser = SSEParser()
    assert not parser._can_hand(Handoff.MESSAGE_PAIRS)
    parser.feed("data: 1")
    assert not parser._can_hand(Handoff.STRINGS)
    assert not EventStreamParser()._can_hand(Handoff.PAIRS)


class Above:
    """A toy machine with a shortcut of its own below it, which declines."""

    def __init__(self) -> None:
        self.asked: list[object] = []

    def feed(self, item: Any) -> list[Any]:
        return [item]

    def close(self) -> list[Any]:
        return []

    def _fuse_below(self, lower: object) -> Any:
        self.asked.append(lower)
        return None


class Below(Above):
    """A toy machine that takes the machine above it in (`_fuse_above`)."""

    def _fuse_above(self, upper: object) -> Any:
        self.asked.append(upper)
        return self


def test_the_upper_machine_is_asked_first_then_the_lower_one() -> None:
    upper, lower = Above(), Below()
    with way("stdlib"):
        assert fuse([upper, lower]) == [lower]
    assert (upper.asked, lower.asked) == ([lower], [upper])


def test_a_decoder_that_gives_deltas_only_leaves_the_delta_decoder_behind_it_out() -> None:
    with way("stdlib"):
        texts, deltas = Texts(), DeltaDecoder()
        assert fuse([texts, deltas]) == [texts]
        accumulator = MessageAccumulator()
        [fused] = fuse([Texts(), Chained(DeltaDecoder(), accumulator)])
        assert type(fused) is Chained
        assert fused.parts[1] is accumulator
        # A delta decoder that was used (closed, here) is no longer left out.
        used = DeltaDecoder()
        used.close()
        assert fuse_pair(Texts(), used) is None
    with way("plain"):
        assert fuse([texts, deltas]) == [texts, deltas]


def test_behind_a_source_of_deltas_the_delta_decoder_in_front_is_left_out() -> None:
    accumulator = MessageAccumulator()
    with way("stdlib"):
        assert behind_deltas([DeltaDecoder(), accumulator]) == [accumulator]
        assert behind_deltas([Chained(DeltaDecoder(), accumulator)]) == [accumulator]
        assert behind_deltas([accumulator]) == [accumulator]
    with way("plain"):
        machines: list[Any] = [DeltaDecoder(), accumulator]
        assert behind_deltas(machines) == machines

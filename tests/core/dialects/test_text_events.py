"""Every renderer's one-event shortcut for a text delta (`text_event`) writes what `feed` writes.

A renderer that writes one event per text delta answers `text_event(delta)`
with that event, as (name, data), when it changes nothing else (a block or
part of text already open), and None where `feed` must run (the first delta
of a block, a choice change, a reset, ...). An encoder asks it first, and
`feed` is not called for the delta it answers. So a stream rendered with the
shortcut must give the same bytes as one rendered by `feed` alone, with the
fast paths off (no template anywhere), on any delta sequence: the property
below draws them, text of any characters (quotes, line separators, lone
surrogates), across choices, blocks, tool calls, resets and finishes.

The same holds for the SSE encoder (every dialect it writes, and rxstream's
own format, whose text event `rxstream.core.wire.text_event` writes) and for
the test kit's player, which writes the NDJSON and event-stream dialects too.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rxstream.core.dialects import DIALECTS, renderer, wire_bytes
from rxstream.core.dialects.bedrock import event_message
from rxstream.core.dialects.sse_encoder import SSEEncoder
from rxstream.core.wire import item_event, text_event
from rxstream.models import (
    Citation,
    Delta,
    EmptyCitations,
    Finish,
    Metadata,
    ReasoningDelta,
    ReasoningState,
    RefusalDelta,
    Reset,
    SSEFrame,
    TextBlockStart,
    TextDelta,
    ToolCallDelta,
    Usage,
)
from rxstream.testing._player import Player
from rxstream.testing._scenario import Say
from tests.support.fast import fast_paths_as

#: Every renderer that writes one event per text delta.
SHORTCUT_DIALECTS = [*DIALECTS, "ai-sdk"]
SSE_DIALECTS = [d for d in SHORTCUT_DIALECTS if d not in ("ollama", "bedrock")]

# Text of every kind a JSON string writer must get right: quotes, backslashes,
# control characters, line and paragraph separators, non-ASCII, a lone surrogate.
_TEXTS = st.one_of(
    st.sampled_from(["", "Hi", " there", '"q"', "a\\b", "\n", "\u2028", "é", "\ud83d", "\x00"]),
    st.text(max_size=12),
)
_CHOICES = st.sampled_from([0, 0, 0, 1])
_OTHERS: st.SearchStrategy[Delta] = st.one_of(
    st.builds(ReasoningDelta, _TEXTS, choice=_CHOICES),
    st.builds(RefusalDelta, st.sampled_from(["no", ""])),
    st.builds(
        ToolCallDelta,
        st.sampled_from([0, 1, None]),
        arguments=st.sampled_from(["", '{"a":', "1}", "{}"]),
        id=st.sampled_from([None, "call_1"]),
        name=st.sampled_from([None, "f"]),
        choice=_CHOICES,
    ),
    st.builds(Finish, st.sampled_from(["stop", "length", "tool_calls"]), choice=_CHOICES),
    st.builds(Usage, st.just(3), st.just(4), st.just(7)),
    st.builds(
        Metadata,
        st.sampled_from(
            [
                {"id": "msg_1", "model": "m"},
                {"logprobs": [{"token": "a", "logprob": -0.1}]},
                {"note": 1},
            ]
        ),
        choice=_CHOICES,
    ),
    st.builds(
        Citation, st.just("url_citation"), url=st.just("https://example.com"), title=st.just("t")
    ),
    st.builds(EmptyCitations, st.just(0), st.just(2)),
    st.builds(TextBlockStart, choice=_CHOICES),
    st.builds(
        ReasoningState, st.sampled_from(["thinking", "thought_signature"]), data=st.just("s")
    ),
    st.builds(Reset, st.just(2), st.just("cut")),
)
#: A run of text deltas (where the shortcut answers after the first), or another delta.
_STEPS = st.one_of(
    st.lists(st.builds(TextDelta, _TEXTS, choice=_CHOICES), min_size=1, max_size=5),
    st.lists(_OTHERS, min_size=1, max_size=1),
)
_DELTAS = st.lists(_STEPS, max_size=10).map(lambda steps: [d for step in steps for d in step])

#: A script that walks each shortcut's edges: the first delta of a block, an empty
#: text, another choice, a block change, a reset, a finish, text after the finish.
SCRIPT: list[Delta] = [
    Metadata({"id": "msg_1", "model": "m"}),
    TextDelta("Hel"),
    TextDelta(""),
    TextDelta('lo \u2028 "q" \n'),
    TextDelta("other choice", choice=1),
    TextDelta(" more of it", choice=1),
    ReasoningDelta("hmm"),
    TextDelta("after thinking"),
    TextDelta(" more"),
    ToolCallDelta(0, '{"a":', id="call_1", name="f"),
    TextDelta("after a call"),
    TextDelta(" and on"),
    Reset(2, "cut"),
    TextDelta("again"),
    TextDelta(" and again"),
    Finish("stop"),
    Usage(3, 4, 7),
]


def _pair(item: object) -> tuple[str, str]:
    """A wire item as (name, data), the shape `text_event` answers in."""
    if isinstance(item, SSEFrame):
        return item.event, item.data
    if isinstance(item, str):
        return "", item
    return str(item.headers[":event-type"]), item.payload.decode(errors="surrogatepass")  # type: ignore[attr-defined]


def _item(kind: str, event: tuple[str, str]) -> object:
    """The wire item of `text_event`'s answer, in the renderer's wire kind."""
    name, data = event
    if kind == "sse":
        return SSEFrame(data, event=name)
    if kind == "ndjson":
        return data
    return event_message(name, data)


def _render(dialect: str, deltas: list[Delta], *, shortcut: bool) -> tuple[list[Any], int]:
    """Each delta's wire items, then the end's, as (name, data) pairs and as bytes (the error,
    its type and message, where rendering refused a delta); and how often the shortcut answered."""
    r = renderer(dialect)
    out: list[Any] = []
    answered = 0
    for delta in deltas:
        try:
            event = None
            if shortcut and type(delta) is TextDelta:
                event = r.text_event(delta)  # type: ignore[attr-defined]
            if event is not None:
                answered += 1
                items: list[Any] = [_item(r.wire, event)]
            else:
                items = r.feed(delta)
            out.append(([_pair(i) for i in items], _bytes(r, items)))
        except ValueError as exc:
            out.append((type(exc).__name__, str(exc)))
            return out, answered
    items = r.close()
    out.append(([_pair(i) for i in items], _bytes(r, items)))
    return out, answered


def _bytes(r: Any, items: list[Any]) -> bytes:
    try:
        return wire_bytes(r, items)
    except UnicodeEncodeError as exc:  # a lone surrogate: no UTF-8 form, in either way alike
        return repr(exc).encode()


def _same_either_way(dialect: str, deltas: list[Delta]) -> int:
    """Assert the shortcut renders what `feed` does with no fast path; return how often it
    answered."""
    with fast_paths_as(False):
        expected, _ = _render(dialect, deltas, shortcut=False)
    with fast_paths_as(True):
        got, answered = _render(dialect, deltas, shortcut=True)
    assert got == expected
    return answered


@pytest.mark.parametrize("dialect", SHORTCUT_DIALECTS)
def test_every_text_renderer_has_the_shortcut(dialect: str) -> None:
    assert callable(getattr(renderer(dialect), "text_event", None))


@pytest.mark.parametrize("dialect", SHORTCUT_DIALECTS)
def test_the_script_renders_the_same_with_the_shortcut(dialect: str) -> None:
    answered = _same_either_way(dialect, SCRIPT)
    # It answers within a block of text (the script has such deltas in every dialect).
    assert answered >= 3


@pytest.mark.parametrize("dialect", SHORTCUT_DIALECTS)
def test_the_shortcut_leaves_the_first_delta_of_a_block_to_feed(dialect: str) -> None:
    with fast_paths_as(True):
        r = renderer(dialect)
        first = r.text_event(TextDelta("Hi"))  # type: ignore[attr-defined]
        # Ollama's lines open nothing: its first text line is one line like the others.
        assert (first is None) == (dialect != "ollama")
        r.feed(TextDelta("Hi"))
        assert r.text_event(TextDelta(" there")) is not None  # type: ignore[attr-defined]
    with fast_paths_as(False):
        r = renderer(dialect)
        r.feed(TextDelta("Hi"))
        assert r.text_event(TextDelta(" there")) is None  # type: ignore[attr-defined]


@settings(max_examples=300)
@given(dialect=st.sampled_from(SHORTCUT_DIALECTS), deltas=_DELTAS)
def test_any_delta_sequence_renders_the_same_with_the_shortcut(
    dialect: str, deltas: list[Delta]
) -> None:
    _same_either_way(dialect, deltas)


# --------------------------------------------------------------------------- the writers


def _encoded(dialect: str, deltas: list[Delta], fast: bool) -> list[Any]:
    with fast_paths_as(fast):
        # A retry rides on the first event (none in Gemini's, whose client reads no field).
        encoder = SSEEncoder(dialect, retry=None if dialect == "gemini" else 1000)
        out: list[Any] = []
        for delta in deltas:
            try:
                out.append(encoder.feed(delta))
            except ValueError as exc:
                out.append((type(exc).__name__, str(exc)))
                return out
        return [*out, encoder.close()]


@settings(max_examples=200)
@given(
    dialect=st.sampled_from([*SSE_DIALECTS, "rxstream"]),
    deltas=_DELTAS,
)
def test_an_encoder_writes_the_same_bytes_with_or_without_the_shortcut(
    dialect: str, deltas: list[Delta]
) -> None:
    assert _encoded(dialect, deltas, fast=True) == _encoded(dialect, deltas, fast=False)


@pytest.mark.parametrize("dialect", [*SSE_DIALECTS, "rxstream"])
def test_an_encoder_writes_the_script_the_same_with_or_without_the_shortcut(dialect: str) -> None:
    assert _encoded(dialect, SCRIPT, fast=True) == _encoded(dialect, SCRIPT, fast=False)


@settings(max_examples=100)
@given(text=_TEXTS, choice=st.integers(0, 3))
def test_the_wire_text_event_is_the_item_event(text: str, choice: int) -> None:
    assert text_event(TextDelta(text, choice=choice)) == item_event(TextDelta(text, choice=choice))


def _played(dialect: str, deltas: list[Delta], fast: bool) -> list[bytes | tuple[str, str]]:
    with fast_paths_as(fast):
        player = Player(dialect)
        out: list[bytes | tuple[str, str]] = []
        for delta in deltas:
            try:
                out.append(player.play(Say(delta)))
            except (ValueError, UnicodeEncodeError) as exc:
                out.append((type(exc).__name__, str(exc)))
                return out
        return out


@settings(max_examples=100)
@given(dialect=st.sampled_from(SHORTCUT_DIALECTS), deltas=_DELTAS)
def test_the_fake_server_plays_the_same_bytes_with_or_without_the_shortcut(
    dialect: str, deltas: list[Delta]
) -> None:
    assert _played(dialect, deltas, fast=True) == _played(dialect, deltas, fast=False)

"""`DialectDecoder`'s one loop: every dialect decoder's `feed_all`, the same lifecycle as `feed`.

Each dialect gives only its hot reader (`_reader`) and `_decode`; the loop
(state checks, counting, the answer check, failures, the stop once done) is
the base's. The table below runs one stream per dialect through `feed` one
item at a time and through `feed_all` (with the items as they come, and as
the parser fused in front hands them over), on every fast-path way, and
checks the two agree: the deltas, the error, and what the decoder refuses
after its end, after `close()`, after a failure; and `on_malformed="skip"`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from rxstream.core import dialects
from rxstream.core.dialects import DialectDecoder
from rxstream.core.dialects._base import Reader
from rxstream.core.pipeline import Handoff
from rxstream.models import EventStreamMessage, Finish, SSEFrame, TextDelta, Usage
from tests.support.fast import WAYS, way

#: The dialects whose decoders have a hot reader.
LOOPED = ("openai-responses", "anthropic", "gemini", "cohere", "ollama", "bedrock")

#: Everything `dialects.decoder` builds that is a `DialectDecoder`.
DECODERS = [
    name
    for name in (*dialects.FORMATS, dialects.AI_SDK)
    if isinstance(dialects.decoder(name), DialectDecoder)
]


def test_every_dialect_decoder_is_a_dialect_decoder() -> None:
    assert set(LOOPED) <= set(DECODERS)
    assert dialects.RXSTREAM in DECODERS


@pytest.mark.parametrize("name", DECODERS)
def test_the_base_loop_is_the_only_feed_all(name: str) -> None:
    decoder: Any = dialects.decoder(name)
    assert type(decoder).feed_all is DialectDecoder.feed_all
    assert type(decoder).feed is DialectDecoder.feed
    assert type(decoder)._one is DialectDecoder._one


def _stream(name: str) -> tuple[list[Any], list[Any]]:
    """A rendered stream of `name`: the items up to its end, and those after it.

    Its items from the second text event on are read after the first answer.
    """
    renderer = dialects.renderer(name)
    items: list[Any] = []
    for word in ("Hel", "lo", ", ", "wor", "ld"):
        items += renderer.feed(TextDelta(word))
    items += renderer.feed(Finish("stop"))
    items += renderer.feed(Usage(3, 5, 8))
    items += renderer.close()
    decoder = dialects.decoder(name)
    for n, item in enumerate(items):
        decoder.feed(item)
        if decoder.done:
            return items[: n + 1], items[n + 1 :]
    raise AssertionError(f"the rendered {name} stream did not end")  # pragma: no cover


def _second_text(name: str, items: list[Any]) -> int:
    """The index of the second item of `items` that gives a text delta."""
    decoder = dialects.decoder(name)
    texts = [n for n, item in enumerate(items) if TextDelta in map(type, decoder.feed(item))]
    return texts[1]


def _bad(item: Any) -> Any:
    """An item of `item`'s kind whose data is not JSON."""
    if type(item) is SSEFrame:
        return SSEFrame("{not json", item.event)
    if type(item) is EventStreamMessage:
        return EventStreamMessage(item.headers, b"{not json")
    assert type(item) is str
    return "{not json"


def _fused(decoder: Any, items: list[Any]) -> list[Any]:
    """The items as the parser fused in front hands them over (what it takes)."""
    mode = decoder.takes
    if not decoder._take(mode):  # pragma: no cover - every looped dialect fuses one way
        return items
    if mode is Handoff.STRINGS:
        return [item.data for item in items]
    if mode in (Handoff.PAIRS, Handoff.MESSAGE_PAIRS):
        if type(items[0]) is EventStreamMessage:
            return [(item.headers, item.payload) for item in items]
        return [(item.event, item.data) for item in items]
    return items  # pragma: no cover - every looped dialect fuses one way


#: What a run saw: its deltas' reprs, the error's type and message, then the
#: type of what the decoder raised when given one more item (None: nothing).
Seen = tuple[list[str], tuple[str, str] | None, str | None]


def _run(name: str, case: str, *, many: bool, fused: bool) -> Seen:
    """One case of the table (see `CASES`): through `feed` (`many=False`) or `feed_all`."""
    items, after = _stream(name)
    more = after or items[-1:]
    skip = case == "skip"
    cut = _second_text(name, items)
    if case in ("failure", "skip"):
        items = [*items[:cut], _bad(items[cut]), *items[cut:]]
    elif case == "close":
        items = items[: cut + 1]
    decoder = dialects.decoder(name, on_malformed="skip" if skip else "raise")
    if fused:
        items = _fused(decoder, items)
        more = _fused_more(decoder, more)
    out: list[Any] = []
    error: tuple[str, str] | None = None
    try:
        if many:
            decoder.feed_all(items, out)
        else:
            for item in items:
                out += decoder.feed(item)
        if case == "close":
            decoder.close()
    except Exception as exc:
        error = (type(exc).__name__, str(exc))
    refused: str | None = None
    try:
        if many:
            decoder.feed_all(more, [])
        else:
            decoder.feed(more[0])
    except Exception as exc:
        refused = type(exc).__name__
    return [repr(delta) for delta in out], error, refused


def _fused_more(decoder: Any, more: list[Any]) -> list[Any]:
    """`more` as the fused parser hands it over, where `decoder` takes that."""
    if getattr(decoder, "_strings", False):
        return [item.data for item in more]
    if decoder._pairs:
        if type(more[0]) is EventStreamMessage:
            return [(item.headers, item.payload) for item in more]
        return [(item.event, item.data) for item in more]
    return more


#: The cases, and what each must give (on top of `feed` and `feed_all` agreeing):
#: (an error's type or None, what one more item raises).
CASES: dict[str, tuple[str | None, str]] = {
    "done": (None, "RuntimeError"),  # the whole stream, then one more item
    "close": ("TruncatedStreamError", "RuntimeError"),  # closed before its end
    "failure": ("MalformedChunkError", "RuntimeError"),  # a bad item after the first answer
    "skip": (None, "RuntimeError"),  # the bad item dropped: the whole stream
}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("fused", [False, True], ids=["items", "fused"])
@pytest.mark.parametrize("how", list(WAYS))
@pytest.mark.parametrize("name", LOOPED)
def test_feed_all_keeps_feeds_lifecycle(name: str, how: str, fused: bool, case: str) -> None:
    with way(how):
        one_by_one = _run(name, case, many=False, fused=False)
        all_at_once = _run(name, case, many=True, fused=fused)
    assert all_at_once == one_by_one
    deltas, error, refused = one_by_one
    assert (None if error is None else error[0], refused) == CASES[case]
    assert deltas  # the text before the bad item (or the end) came out
    if case == "skip":
        assert deltas == _run(name, "done", many=False, fused=False)[0]


@pytest.mark.parametrize("name", LOOPED)
def test_feed_all_stops_at_the_end_and_refuses_what_follows(name: str) -> None:
    items, after = _stream(name)
    extra = after or items[-1:]
    decoder = dialects.decoder(name)
    out: list[Any] = []
    decoder.feed_all([*items, *extra], out)  # stops at the end: the rest is not read
    assert decoder.done
    reference = dialects.decoder(name)
    assert out == [delta for item in items for delta in reference.feed(item)]
    with pytest.raises(RuntimeError, match="takes no more input"):
        decoder.feed_all(extra, [])
    assert decoder.close() == []


def _hot_reads(name: str, how: str) -> tuple[int, int]:
    """How many items of a stream (fused) its hot reader read, and how many there were."""
    items, _ = _stream(name)
    with way(how):
        decoder: Any = dialects.decoder(name)
        read = 0
        reader: Callable[[list[Any]], Reader | None] = decoder._reader

        def counting(out: list[Any]) -> Reader | None:
            hot = reader(out)
            assert hot is not None

            def counted(batch: list[Any], at: int) -> int:
                nonlocal read
                stop = hot(batch, at)
                read += stop - at
                return stop

            return counted

        decoder._reader = counting
        decoder.feed_all(_fused(decoder, items), [])
    return read, len(items)


@pytest.mark.parametrize("how", ["stdlib", "typed"])
@pytest.mark.parametrize("name", LOOPED)
def test_the_hot_reader_reads_the_usual_events(name: str, how: str) -> None:
    read, total = _hot_reads(name, how)
    # The text events after the first answer (four of the five) at least, never the end.
    assert 4 <= read < total


# -- the loop around a hot reader that stops in the middle of a batch ---------------------------


class _Scripted(DialectDecoder):
    """A decoder of words: the hot reader reads `t:...` (text), `_decode` reads the rest.

    `o:...` is other text (`_decode` alone reads it), `bad` is malformed, `end`
    the end marker; what `_decode` saw is kept in `decoded`, in order.
    """

    dialect = "scripted"
    end_marker = "end"

    def __init__(self, *, on_malformed: Any = "raise") -> None:
        super().__init__(on_malformed=on_malformed)
        self.decoded: list[str] = []

    def _reader(self, out: list[Any]) -> Reader | None:
        def words(items: list[Any], start: int) -> int:
            for at in range(start, len(items)):
                if not items[at].startswith("t:"):
                    return at
                out.append(TextDelta(items[at][2:]))
            return len(items)

        return words

    def _decode(self, item: Any) -> list[Any]:
        self.decoded.append(item)
        if item == "bad":
            return self._malformed("not a word", item)
        if item == "end":
            self._done = True
            return [Finish("stop")]
        self._answered = True
        return [TextDelta(item[2:])]


#: (items, on_malformed) -> (the texts given, what `_decode` read, the items counted, the error).
BATCHES: dict[str, tuple[list[str], str, tuple[str, list[str], int, str | None]]] = {
    # The first answer comes through `_decode`; then the reader reads until it cannot.
    "reads-on": (["o:a", "t:b", "t:c"], "raise", ("abc", ["o:a"], 3, None)),
    # The item it stops at goes to `_decode`, in order, and the reader goes on after it.
    "stops-mid-batch": (
        ["o:a", "t:b", "o:c", "t:d", "o:e", "t:f"],
        "raise",
        ("abcdef", ["o:a", "o:c", "o:e"], 6, None),
    ),
    # Until the first answer (an empty text is none) the reader is not asked.
    "before-an-answer": (["o:", "t:a", "t:b"], "raise", ("ab", ["o:", "t:a"], 3, None)),
    # A failure in the middle: what came before it is out, nothing after it is read.
    "failure": (
        ["o:a", "t:b", "bad", "t:c"],
        "raise",
        ("ab", ["o:a", "bad"], 3, "MalformedChunkError"),
    ),
    # Skipped: the bad item is dropped, the reader reads on after it.
    "skip": (["o:a", "t:b", "bad", "t:c"], "skip", ("abc", ["o:a", "bad"], 4, None)),
    # The end marker inside a batch stops it there: the items after it are not read.
    "end-inside": (["o:a", "t:b", "end", "t:c", "o:d"], "raise", ("ab", ["o:a", "end"], 3, None)),
}


@pytest.mark.parametrize("kind", [list, tuple, iter])
@pytest.mark.parametrize("case", list(BATCHES))
def test_the_loop_holds_when_the_reader_stops_mid_batch(case: str, kind: Any) -> None:
    items, on_malformed, (texts, decoded, counted, error) = BATCHES[case]
    decoder = _Scripted(on_malformed=on_malformed)
    out: list[Any] = []
    failed: str | None = None
    pulled: list[str] = []

    def pulling() -> Any:
        for item in items:
            pulled.append(item)
            yield item

    try:
        decoder.feed_all(kind(pulling()), out)
    except Exception as exc:
        failed = type(exc).__name__
    if kind is iter:  # an iterator is read one item at a time: not past the end, nor a failure
        assert pulled == items[:counted]
    assert "".join(d.text for d in out if type(d) is TextDelta) == texts
    assert decoder.decoded == decoded
    assert decoder._items == counted
    assert failed == error
    # One item at a time through `feed` gives the same.
    one = _Scripted(on_malformed=on_malformed)
    fed: list[Any] = []
    try:
        for item in items[:counted]:
            fed += one.feed(item)
    except Exception:
        pass
    assert fed == out

"""`ElementSplitter` holding the text inside an element: what reading each piece gives.

Inside a skimmed element, text that cannot close it (fewer closing characters than
the element has open levels, or none of its own kind) is held by the splitter and
read with the piece that can. The reference is the splitter that never holds (its
reader's `holds()` made to say None): the reader is then fed every piece, and holds
such text itself. For any document and chunking, each piece gives the same elements,
and the same error (type, message, path) at the same piece.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pydantic
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from rxstream import JSONStreamError, OutputValidationError
from rxstream.core.json_stream import JSONStreamParser
from rxstream.core.objects import ElementSplitter
from rxstream.models import Finish, TextDelta
from tests.support.json_documents import items


class Item(pydantic.BaseModel):
    id: int
    name: str
    score: float = 0.0
    tags: list[str] = []
    note: str | None = None


class ItemStruct(msgspec.Struct):
    id: int
    name: str
    score: float = 0.0
    tags: list[str] = []
    note: str | None = None


def outcome(item: Any, pieces: list[str], *, holding: bool) -> list[Any]:
    """What each piece gives (elements, or the error as type, message, path), then the end."""
    splitter = ElementSplitter("/items", item=item)
    got: list[Any] = []
    with pytest.MonkeyPatch.context() as patch:
        if not holding:
            patch.setattr(JSONStreamParser, "holds", lambda self: None)
        try:
            for piece in pieces:
                got.append(splitter.feed(TextDelta(piece)))
                if not holding:
                    assert not splitter._held
            got.append(splitter.feed(Finish("stop")))
        except Exception as exc:
            got.append((type(exc).__name__, str(exc), getattr(exc, "path", None)))
    return got


def cut(text: str, cuts: list[int]) -> list[str]:
    cuts = sorted({c for c in cuts if 0 < c < len(text)})
    return [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]


@pytest.mark.parametrize("item", [Item, ItemStruct, None])
@pytest.mark.parametrize(
    "element",
    [
        pytest.param('{"id": 1, "name": "a", "tags": ["x", "y"]}', id="a list inside"),
        pytest.param('{"id": 1, "name": "}]\\"}', id="closers in a string"),
        pytest.param('{"id": 1, "name": "a", "x": {"y": [[{}]]}}', id="deeper"),
        pytest.param('{"id": 1, "name": "a"]', id="closed by the wrong kind"),
        pytest.param('{"id": 1, "name": "a", "score": NaN}', id="NaN"),
        pytest.param('{"id": "x", "name": "a"}', id="does not validate"),
        pytest.param('"a string"', id="a string element"),
        pytest.param("[1, [2, 3]]", id="an array element"),
    ],
)
def test_held_text_gives_what_reading_each_piece_gives(item: Any, element: str) -> None:
    text = '{"items": [{"id": 0, "name": "first"}, ' + element + ', {"id": 9, "name": "z"}]}'
    for pieces in ([text], cut(text, list(range(0, len(text), 7))), list(text)):
        assert outcome(item, pieces, holding=True) == outcome(item, pieces, holding=False)


@settings(max_examples=300, deadline=None)
@given(st.lists(items(), max_size=4), st.data(), st.sampled_from([Item, ItemStruct, None]))
@example(['{"id": 1, "name": "a", "tags": ["]"]}'], None, Item)
def test_any_document_and_chunking_gives_the_same_elements_and_errors(
    elements: list[str], data: Any, item: Any
) -> None:
    text = '{"items": [' + ", ".join(elements) + '], "after": [1]}'
    if data is None:
        cuts: list[int] = list(range(1, len(text)))
    else:
        cuts = data.draw(st.lists(st.integers(1, max(1, len(text) - 1)), max_size=10))
    pieces = cut(text, cuts)
    assert outcome(item, pieces, holding=True) == outcome(item, pieces, holding=False)
    if isinstance(outcome(item, [text], holding=True)[-1], list) and item is Item:
        got = [e for piece in outcome(item, pieces, holding=True) for e in piece]
        assert got == [Item.model_validate(e) for e in json.loads(text)["items"]]


@settings(max_examples=200, deadline=None)
@given(st.lists(items(), min_size=1, max_size=3), st.data())
def test_a_damaged_document_is_refused_as_reading_each_piece_refuses_it(
    elements: list[str], data: st.DataObject
) -> None:
    text = '{"items": [' + ", ".join(elements) + "]}"
    where = data.draw(st.integers(0, len(text) - 1))
    char = data.draw(st.sampled_from(list(',:[]{}"\\-0123456789.eE+ tfnaNIu')))
    text = text[:where] + char + text[where + 1 :]
    step = data.draw(st.integers(1, 17))
    pieces = [text[i : i + step] for i in range(0, len(text), step)]
    assert outcome(Item, pieces, holding=True) == outcome(Item, pieces, holding=False)


def test_held_text_is_read_with_the_piece_that_can_close_the_element() -> None:
    """Inside an element, pieces that cannot close it are held by the splitter itself."""
    splitter = ElementSplitter("/items", item=Item)
    assert splitter.feed(TextDelta('{"items": [{"id": 1, "na')) == []
    assert splitter._need == 1
    assert splitter._own == "}"
    for piece in ('me": "a", "tags": ["x', '", "y"]', ', "note": null'):  # no `}` yet
        assert splitter.feed(TextDelta(piece)) == []
        assert splitter._held  # held here, not read
    assert splitter.feed(TextDelta("}, {")) == [Item(id=1, name="a", tags=["x", "y"])]
    assert not splitter._held
    assert splitter.feed(TextDelta('"id": 2, "name": "b"}]}')) == [Item(id=2, name="b")]
    assert splitter.close() == []
    assert splitter._text() == (  # the answer's text, in order, held pieces too
        '{"items": [{"id": 1, "name": "a", "tags": ["x", "y"], "note": null}, '
        '{"id": 2, "name": "b"}]}'
    )


def test_text_held_at_the_end_is_read_before_the_error_that_it_is_unfinished() -> None:
    for holding in (True, False):
        got = outcome(Item, ['{"items": [{"id": 1, "na', 'me": "a"'], holding=holding)
        assert got[-1][0] == "JSONStreamError"
        assert "at offset 32" in got[-1][1]
        assert "the text ended" in got[-1][1]


def test_a_failed_splitter_refuses_more_text_even_inside_an_element() -> None:
    splitter = ElementSplitter("/items", item=Item)
    with pytest.raises(OutputValidationError):
        splitter.feed(TextDelta('{"items": [{"id": "x", "name": "a"}, {"id": 1, "na'))
    with pytest.raises(RuntimeError):
        splitter.feed(TextDelta("me"))
    splitter = ElementSplitter("/items", item=Item)
    splitter.feed(TextDelta('{"items": [{"id": 1, "na'))
    with pytest.raises(JSONStreamError, match="the text ended"):
        splitter.close()
    with pytest.raises(RuntimeError):
        splitter.feed(TextDelta("me"))


def test_text_after_the_finish_is_not_read_even_inside_an_element() -> None:
    splitter = ElementSplitter("/items", item=Item)
    assert splitter.feed(TextDelta('{"items": [{"id": 1, "na')) == []
    with pytest.raises(JSONStreamError, match="the text ended"):
        splitter.feed(Finish("stop"))  # the answer ended inside an element
    splitter = ElementSplitter("/items")
    assert splitter.feed(TextDelta('{"items": [{"id": 1}], "x": {"y": 1, "z": [')) == [{"id": 1}]
    with pytest.raises(JSONStreamError, match="the text ended"):
        splitter.feed(Finish("stop"))
    splitter = ElementSplitter("/items")
    splitter.feed(TextDelta('{"items": [{"id": 1}, {"id": 2'))
    assert splitter._need == 1
    assert splitter.feed(TextDelta("}]}")) == [{"id": 2}]
    assert splitter.feed(Finish("stop")) == []
    assert splitter._need == 0
    assert splitter.feed(TextDelta('{"items": [{"id": 3}]}')) == []  # after the end: not read
    assert splitter.close() == []


@settings(max_examples=100, deadline=None)
@given(st.lists(items(), max_size=4), st.data())
def test_feed_all_gives_what_feeding_each_gives(elements: list[str], data: st.DataObject) -> None:
    """The chain's way in (`feed_all`, holding in its loop) against `feed` per delta."""
    text = '{"items": [' + ", ".join(elements) + "]}"
    cuts = data.draw(st.lists(st.integers(1, max(1, len(text) - 1)), max_size=12))
    deltas: list[Any] = [TextDelta(p) for p in cut(text, cuts)] + [Finish("stop")]
    split = data.draw(st.integers(0, len(deltas)))
    each: list[Any] = []
    one = ElementSplitter("/items", item=Item)
    try:
        for delta in deltas:
            each += one.feed(delta)
        each += one.close()
    except Exception as exc:
        each.append((type(exc).__name__, str(exc)))
    batched: list[Any] = []
    other = ElementSplitter("/items", item=Item)
    try:
        other.feed_all(deltas[:split], batched)
        other.feed_all(deltas[split:], batched)
        batched += other.close()
    except Exception as exc:
        batched.append((type(exc).__name__, str(exc)))
    assert batched == each

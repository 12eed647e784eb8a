"""`ElementSplitter` validating each element from its text: the exact way's elements and errors.

The exact way is the one without a text validator (`objects.text_validator` made to
give None): each element decoded by the standard library's scanner, then validated.
With one, an element's text goes to pydantic's `validate_json` (or msgspec's typed
decoder) first, and whatever that refuses takes the exact way; so for any document and
any chunking the elements, the error (its type, message and path) and where it comes
are the same.
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
from rxstream.core import objects
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


def outcome(item: Any, pieces: list[str], *, by_text: bool) -> list[Any]:
    """What each piece gives (elements, or the error as type, message, path), then the end."""
    with pytest.MonkeyPatch.context() as patch:
        if not by_text:
            patch.setattr(objects, "text_validator", lambda output: None)
        splitter = ElementSplitter("/items", item=item)
    assert (splitter._validate_text is not None) == by_text
    got: list[Any] = []
    try:
        for piece in pieces:
            got.append(splitter.feed(TextDelta(piece)))
        got.append(splitter.feed(Finish("stop")))
    except Exception as exc:
        got.append((type(exc).__name__, str(exc), getattr(exc, "path", None)))
    return got


def cut(text: str, cuts: list[int]) -> list[str]:
    cuts = sorted({c for c in cuts if 0 < c < len(text)})
    return [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]


@pytest.mark.parametrize("item", [Item, ItemStruct])
@pytest.mark.parametrize(
    "element",
    [
        pytest.param('{"id": 1, "name": "\\ud800"}', id="a lone surrogate: json.loads' string"),
        pytest.param('{"id": 1, "name": "a\\udc00", "note": "\\ud83d\\ude00"}', id="surrogates"),
        pytest.param('{"id": 1, "name": "a", "id": 2}', id="duplicate keys: the last wins"),
        pytest.param('{"id": 123456789012345678901234567890, "name": "a"}', id="a big int"),
        pytest.param('{"id": ' + "9" * 5000 + ', "name": "a"}', id="past the digit limit"),
        pytest.param('{"id": 1, "name": "a", "score": 1e400}', id="a float past the range"),
        pytest.param('{"id": 1, "name": "a", "score": 0.10000000000000000555}', id="long float"),
        pytest.param('{"id": 1, "name": "a", "score": NaN}', id="NaN: refused as not JSON"),
        pytest.param('{"id": 1, "name": "a", "score": -Infinity}', id="-Infinity: refused"),
        pytest.param('{"id": 1, "name": "NaN"}', id="NaN in a string"),
        pytest.param('{"id": "x", "name": "a"}', id="does not validate"),
    ],
)
def test_each_difference_of_the_json_readers_gives_the_exact_result(
    item: Any, element: str
) -> None:
    text = '{"items": [{"id": 0, "name": "first"}, ' + element + ', {"id": 9, "name": "z"}]}'
    for pieces in ([text], cut(text, list(range(0, len(text), 7))), list(text)):
        exact = outcome(item, pieces, by_text=False)
        assert outcome(item, pieces, by_text=True) == exact
    if isinstance(exact[-1], list):  # no error: json.loads' reading of each, validated
        got = [e for piece in exact for e in piece]
        assert got == [
            msgspec.convert(e, item) if item is ItemStruct else Item.model_validate(e)
            for e in json.loads(text)["items"]
        ]


@settings(max_examples=300, deadline=None)
@given(st.lists(items(), max_size=4), st.data(), st.sampled_from([Item, ItemStruct]))
@example(['{"id": 1, "name": "\\ud800"}'], None, Item)
def test_any_document_and_chunking_gives_the_exact_elements_and_errors(
    elements: list[str], data: Any, item: Any
) -> None:
    text = '{"items": [' + ", ".join(elements) + '], "after": [1]}'
    if data is None:
        cuts: list[int] = []
    else:
        cuts = data.draw(st.lists(st.integers(1, max(1, len(text) - 1)), max_size=10))
    pieces = cut(text, cuts)
    assert outcome(item, pieces, by_text=True) == outcome(item, pieces, by_text=False)


@settings(max_examples=200, deadline=None)
@given(st.lists(items(), min_size=1, max_size=3), st.data())
def test_a_damaged_document_is_refused_as_the_exact_way_refuses_it(
    elements: list[str], data: st.DataObject
) -> None:
    text = '{"items": [' + ", ".join(elements) + "]}"
    where = data.draw(st.integers(0, len(text) - 1))
    char = data.draw(st.sampled_from(list(',:[]{}"\\-0123456789.eE+ tfnaNIu')))
    text = text[:where] + char + text[where + 1 :]
    step = data.draw(st.integers(1, 17))
    pieces = [text[i : i + step] for i in range(0, len(text), step)]
    assert outcome(Item, pieces, by_text=True) == outcome(Item, pieces, by_text=False)


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
    for by_text in (True, False):
        got = outcome(Item, ['{"items": [{"id": 1, "na', 'me": "a"'], by_text=by_text)
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

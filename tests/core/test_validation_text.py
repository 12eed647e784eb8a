"""`text_validator`: a value's JSON text validated in one pass, only where that is exact.

Exact means: what `validator(output)` gives for `json.loads(text)`, for every
text the text validator takes; what it does not take (it raises `ValueError`)
is read the exact way by its caller. Each way pydantic's and msgspec's JSON
readers differ from `json.loads` has a case here.
"""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import json
from typing import Any

import msgspec
import pydantic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typing_extensions import TypedDict

from rxstream.core.validation import Invalid, text_validator, validator
from tests.support.json_documents import items


class Item(pydantic.BaseModel):
    id: int
    name: str
    score: float
    tags: list[str] = []
    note: str | None = None


class Node(pydantic.BaseModel):
    name: str
    children: list[Node] = []


class ItemStruct(msgspec.Struct):
    id: int
    name: str
    score: float
    tags: list[str] = []
    note: str | None = None


class NodeStruct(msgspec.Struct):
    name: str
    children: list[NodeStruct] = []


class ItemDict(TypedDict):
    id: int
    name: str


@dataclasses.dataclass
class ItemData:
    id: int
    name: str


class Positive(pydantic.BaseModel):
    n: int

    @pydantic.field_validator("n")
    @classmethod
    def positive(cls, n: int) -> int:
        if n <= 0:
            raise ValueError("not positive")
        return n


class Strict(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(strict=True)
    n: int


class Extra(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="allow")
    n: int = 0


class Before(pydantic.BaseModel):
    n: int

    @pydantic.field_validator("n", mode="before")
    @classmethod
    def raw(cls, n: Any) -> Any:
        return n


class Tagged(msgspec.Struct, tag=True):
    n: int


def model(**fields: Any) -> type[pydantic.BaseModel]:
    made: type[pydantic.BaseModel] = pydantic.create_model("M", **fields)
    return made


EXACT = [Item, Node, ItemStruct, NodeStruct, ItemDict, ItemData, Positive, list[int]]
NOT_EXACT = [
    pytest.param(None, id="no type"),
    pytest.param({"type": "object"}, id="a JSON Schema"),
    pytest.param(Strict, id="strict mode (JSON mode takes more)"),
    pytest.param(Extra, id="extra fields kept (a duplicate key's place differs)"),
    pytest.param(Before, id="a before-validator"),
    pytest.param(model(n=(Any, ...)), id="Any"),
    pytest.param(model(n=(dict[str, int], ...)), id="a dict"),
    pytest.param(model(n=(int | str, ...)), id="a union"),
    pytest.param(model(n=(datetime.datetime, ...)), id="a datetime"),
    pytest.param(model(n=(decimal.Decimal, ...)), id="a Decimal (JSON mode keeps the digits)"),
    pytest.param(model(n=(str, pydantic.Field(coerce_numbers_to_str=True))), id="numbers as text"),
    pytest.param(Tagged, id="a tagged Struct"),
]


@pytest.mark.parametrize("output", EXACT, ids=lambda t: getattr(t, "__name__", repr(t)))
def test_a_text_validator_for_the_types_where_it_is_exact(output: Any) -> None:
    assert text_validator(output) is not None


@pytest.mark.parametrize("output", NOT_EXACT)
def test_no_text_validator_where_json_mode_may_read_otherwise(output: Any) -> None:
    assert text_validator(output) is None


def exact(output: Any, text: str) -> Any:
    """What the exact way gives: the value `json.loads` reads, validated."""
    try:
        return validator(output)(json.loads(text))
    except Invalid:
        return Invalid


def by_text(output: Any, text: str) -> Any:
    check = text_validator(output)
    assert check is not None
    try:
        return check(text)
    except ValueError:
        return ValueError


ITEM = '{"id": 1, "name": "a", "score": 2.5, %s}'


@pytest.mark.parametrize("output", [Item, ItemStruct])
@pytest.mark.parametrize(
    ("text", "refused"),
    [
        # json.loads reads a lone surrogate into the string; both JSON readers refuse it.
        pytest.param(ITEM % '"note": "\\ud800"', True, id="a lone high surrogate"),
        pytest.param(ITEM % '"note": "x\\udc00"', True, id="a lone low surrogate"),
        pytest.param(ITEM % '"note": "\\ud83d\\ude00"', False, id="a surrogate pair"),
        # NaN and Infinity: json.loads and pydantic take them, strict JSON does not.
        pytest.param('{"id": 1, "name": "a", "score": NaN}', True, id="NaN"),
        pytest.param('{"id": 1, "name": "a", "score": Infinity}', True, id="Infinity"),
        pytest.param('{"id": 1, "name": "a", "score": -Infinity}', True, id="-Infinity"),
        # The last of duplicate keys wins, as in json.loads.
        pytest.param('{"id": 1, "name": "a", "score": 1, "id": 2}', False, id="duplicate keys"),
        # Numbers: big integers, past Python's digit limit, floats as float() reads them.
        pytest.param(ITEM % '"tags": [], "id": 123456789012345678901', False, id="a big int"),
        pytest.param('{"id": 1, "name": "a", "score": 1e400}', None, id="a float past the range"),
        pytest.param(
            '{"id": 1, "name": "a", "score": 0.1000000000000000055511151231257827}',
            False,
            id="more digits than a float holds",
        ),
        pytest.param(
            '{"id": 1, "name": "a", "score": 123456789012345678901234567890}',
            None,
            id="a big int as a float",
        ),
        pytest.param('{"id": ' + "9" * 5000 + ', "name": "a", "score": 1}', True, id="5000 digits"),
        pytest.param(
            '{"id": 1, "name": "a", "score": 1.0, "x": ' + "[" * 300 + "]" * 300 + "}",
            None,
            id="deep",
        ),
        pytest.param('{"id": 1.0, "name": "a", "score": 1}', None, id="an int written as a float"),
        pytest.param('{"id": "1", "name": "a", "score": 1}', None, id="an int as text"),
    ],
)
def test_each_difference_of_the_json_readers(output: Any, text: str, refused: bool | None) -> None:
    """The text validator gives json.loads' reading, validated, or refuses (`refused`)."""
    got = by_text(output, text)
    if refused or (refused is None and got is ValueError):
        assert got is ValueError
    else:
        assert got == exact(output, text)
    if "NaN" not in text and "Infinity" not in text and "9999" not in text:
        json.loads(text)  # the case is JSON json.loads reads


def test_a_value_that_does_not_validate_is_refused_for_the_exact_way() -> None:
    assert by_text(Positive, '{"n": -1}') is ValueError
    assert by_text(Positive, '{"n": 3}') == Positive(n=3)


@settings(max_examples=400, deadline=None)
@given(items(), st.sampled_from([Item, ItemStruct]))
def test_what_the_text_validator_takes_is_json_loads_reading_validated(
    text: str, output: Any
) -> None:
    got = by_text(output, text)
    if got is not ValueError:
        assert got == exact(output, text)
    elif "NaN" not in text and "Infinity" not in text:
        # Refused: the exact way reads it (the caller's fallback), whatever it gives.
        exact(output, text)

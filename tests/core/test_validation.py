"""A JSON Schema dict as `output=`: jsonschema's validation, and rxstream's own checks without it.

The same tables run twice: with jsonschema (the `schema` extra) and with its
import refused (`sys.modules["jsonschema"] = None`, what the guard in
`rxstream.core.validation` sees when it is not installed).
"""

from __future__ import annotations

import sys
from typing import Any

import jsonschema  # type: ignore[import-untyped,unused-ignore]
import pytest

import rxstream as rs
from rxstream.core.objects import ElementSplitter, PartialObjectAccumulator
from rxstream.core.validation import UNCHECKED, Invalid, validator
from rxstream.models import Finish, TextDelta

PERSON: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "age": {"type": "integer"},
        "tags": {"type": "array", "items": {"$ref": "#/$defs/tag"}, "maxItems": 2},
    },
    "required": ["name"],
    "additionalProperties": False,
    "$defs": {"tag": {"enum": ["a", "b"]}},
}

#: (value, the locations of its errors by jsonschema, by rxstream's own checks); None: valid.
#: jsonschema puts a missing or extra field's error on the object; the own checks on the field.
Locs = set[tuple[Any, ...]] | None
CASES: list[tuple[Any, Locs, Locs]] = [
    ({"name": "Ann"}, None, None),
    ({"name": "Ann", "age": 3, "tags": ["a", "b"]}, None, None),
    ({"age": 3}, {()}, {("name",)}),
    ({"name": 1}, {("name",)}, {("name",)}),
    ({"name": "Ann", "age": True}, {("age",)}, {("age",)}),
    ({"name": "Ann", "age": 1.5}, {("age",)}, {("age",)}),
    ({"name": "Ann", "tags": ["c"]}, {("tags", 0)}, {("tags", 0)}),
    ({"name": "Ann", "tags": ["a", "a", "a"]}, {("tags",)}, {("tags",)}),
    ({"name": "Ann", "extra": 1}, {()}, {("extra",)}),
    ([], {()}, {()}),
]


@pytest.fixture(params=["jsonschema", "own checks"])
def library(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "own checks":
        monkeypatch.setitem(sys.modules, "jsonschema", None)
    return str(request.param)


@pytest.mark.parametrize(
    ("value", "by_jsonschema", "by_own"), CASES, ids=[repr(c[0]) for c in CASES]
)
def test_a_schema_validates(library: str, value: Any, by_jsonschema: Locs, by_own: Locs) -> None:
    validate = validator(PERSON)
    locs = by_jsonschema if library == "jsonschema" else by_own
    if locs is None:
        assert validate(value) is value
        return
    with pytest.raises(Invalid) as info:
        validate(value)
    errors = info.value.errors
    assert all(isinstance(e["msg"], str) and e["msg"] for e in errors)
    assert {e["loc"] for e in errors} == locs


def test_jsonschema_checks_what_our_checks_cannot() -> None:
    schema = {
        "type": "object",
        "properties": {"n": {"type": "integer", "minimum": 1}, "s": {"pattern": "^x"}},
    }
    with pytest.raises(Invalid) as info:
        validator(schema)({"n": 0, "s": "y"})
    assert {(e["loc"], e["type"]) for e in info.value.errors} == {
        (("n",), "minimum"),
        (("s",), "pattern"),
    }


def test_jsonschema_follows_the_schemas_draft() -> None:
    # Draft 4's exclusiveMaximum is a flag beside maximum; 2020-12's is a number.
    draft4 = {
        "$schema": "http://json-schema.org/draft-04/schema#",
        "type": "object",
        "properties": {"n": {"maximum": 3, "exclusiveMaximum": True}},
    }
    with pytest.raises(Invalid):
        validator(draft4)({"n": 3})
    assert validator(draft4)({"n": 2}) == {"n": 2}


def test_a_schema_that_is_not_one_is_refused_at_once() -> None:
    with pytest.raises(ValueError, match=r"not a valid JSON Schema \(at 'properties/n/type'\)"):
        validator({"type": "object", "properties": {"n": {"type": "integr"}}})


@pytest.mark.parametrize(
    ("schema", "named"),
    [
        ({"type": "object", "properties": {"n": {"minimum": 1}}}, "'minimum'"),
        (
            {"type": "array", "items": {"anyOf": [{"pattern": "x"}, {"not": {"type": "null"}}]}},
            "'not', 'pattern'",
        ),
        ({"$defs": {"d": {"maxLength": 2}}, "$ref": "#/$defs/d"}, "'maxLength'"),
        ({"properties": {"a": {"$ref": "other.json#/a"}}}, "'other.json#/a'"),
    ],
    ids=["minimum", "nested not and pattern", "in $defs", "a $ref out of the schema"],
)
def test_without_jsonschema_a_schema_it_would_check_in_part_is_refused(
    monkeypatch: pytest.MonkeyPatch, schema: dict[str, Any], named: str
) -> None:
    monkeypatch.setitem(sys.modules, "jsonschema", None)
    with pytest.raises(TypeError, match="jsonschema is not installed") as info:
        validator(schema)
    assert named in str(info.value)
    assert "pip install 'rxstream[schema]'" in str(info.value)
    # The operators ask for the validator when they are made, not at the first value.
    with pytest.raises(TypeError, match="jsonschema is not installed"):
        rs.partial_object(schema)
    with pytest.raises(TypeError, match="jsonschema is not installed"):
        rs.elements("", item=schema)


def test_without_jsonschema_names_and_annotations_are_not_assertions(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "jsonschema", None)
    schema = {
        "title": "T",
        "description": "what it is",
        "type": "object",
        # A property named like an assertion, an annotation, an enum holding a schema's shape.
        "properties": {
            "pattern": {"type": "string", "format": "email", "default": "x"},
            "k": {"enum": [{"minimum": 1}]},
        },
        "allOf": [{"required": ["pattern"]}],
    }
    validate = validator(schema)
    assert validate({"pattern": "a@b", "k": {"minimum": 1}}) == {
        "pattern": "a@b",
        "k": {"minimum": 1},
    }
    with pytest.raises(Invalid) as info:
        validate({"k": {"minimum": 1}})  # allOf's required
    assert [e["loc"] for e in info.value.errors] == [("pattern",)]
    tree = {"type": "object", "properties": {"child": {"$ref": "#"}}}
    assert validator(tree)({"child": {"child": {}}}) == {"child": {"child": {}}}
    with pytest.raises(Invalid):
        validator(tree)({"child": {"child": 1}})


OWN: list[Any] = [
    ({"const": 1}, 1, 2),
    ({"anyOf": [{"type": "string"}, {"type": "null"}]}, None, 1),
    ({"oneOf": [{"type": "integer"}, {"enum": ["x"]}]}, "x", "y"),
    ({"type": "object", "properties": {"a": False}}, {}, {"a": 1}),
    ({"type": "object", "properties": {"a": True}}, {"a": [1]}, []),
    ({"type": "object", "additionalProperties": {"type": "integer"}}, {"z": 1}, {"z": "1"}),
    ({"type": "array", "items": {"type": ["string", "null"]}, "minItems": 2}, ["a", None], ["a"]),
]


@pytest.mark.parametrize(("schema", "good", "bad"), OWN, ids=[repr(c[0])[:40] for c in OWN])
def test_the_own_checks_agree_with_jsonschema(
    monkeypatch: pytest.MonkeyPatch, schema: dict[str, Any], good: Any, bad: Any
) -> None:
    with_jsonschema = validator(schema)
    monkeypatch.setitem(sys.modules, "jsonschema", None)
    own = validator(schema)
    for validate in (with_jsonschema, own):
        assert validate(good) == good
        with pytest.raises(Invalid):
            validate(bad)


@pytest.mark.parametrize(
    ("schema", "words"),
    [({"$ref": "#", "type": "object"}, "leads back to itself"), ({"$ref": 1}, "only local")],
)
def test_the_own_checks_refuse_a_ref_they_cannot_follow(
    monkeypatch: pytest.MonkeyPatch, schema: dict[str, Any], words: str
) -> None:
    monkeypatch.setitem(sys.modules, "jsonschema", None)
    with pytest.raises(ValueError, match=words):
        validator(schema)({})


def test_every_unchecked_keyword_is_one_jsonschema_knows() -> None:
    drafts = (jsonschema.Draft202012Validator, jsonschema.Draft201909Validator)
    known = {name for draft in drafts for name in draft.VALIDATORS}
    known |= set(jsonschema.Draft7Validator.VALIDATORS)
    # Read by the keyword beside them ("if", "contains"), not validators of their own.
    known |= {"then", "else", "minContains", "maxContains"}
    assert known >= UNCHECKED


# -- through the machines -----------------------------------------------------------------


def test_the_final_object_is_validated_by_the_schema(library: str) -> None:
    acc = PartialObjectAccumulator(PERSON)
    out = acc.feed(TextDelta('{"name": "Ann", "tags": ["a"')) + acc.feed(TextDelta("]}"))
    assert out[-1] == rs.Partial({"name": "Ann", "tags": ["a"]})
    assert acc.feed(Finish("stop")) == [{"name": "Ann", "tags": ["a"]}]

    acc = PartialObjectAccumulator(PERSON)
    acc.feed(TextDelta('{"name": "Ann", "tags": '))
    acc.feed(TextDelta('["c"]}'))
    with pytest.raises(rs.OutputValidationError) as info:
        acc.feed(Finish("stop"))
    assert info.value.text == '{"name": "Ann", "tags": ["c"]}'
    assert [e["loc"] for e in info.value.errors] == [("tags", 0)]


def test_each_element_is_validated_by_the_schema(library: str) -> None:
    item = PERSON
    splitter = ElementSplitter("/people", item=item)
    got = splitter.feed(TextDelta('{"people": [{"name": "Ann"}, {"name": "Bo", "ag'))
    assert got == [{"name": "Ann"}]
    assert splitter.feed(TextDelta('e": 4}, ')) == [{"name": "Bo", "age": 4}]
    with pytest.raises(rs.OutputValidationError) as info:
        splitter.feed(TextDelta('{"age": "old"}]}'))
    error = info.value
    assert error.path == "/people/2"
    assert error.text == '{"age": "old"}'
    locs = {e["loc"] for e in error.errors}
    assert ("age",) in locs
    assert locs - {("age",)} == ({()} if library == "jsonschema" else {("name",)})

"""`rxstream.core.schema`: the schema of `output=`, OpenAI's strict rewrite, Anthropic's subset."""

from __future__ import annotations

import copy
import dataclasses
import enum
import importlib
import re
import sys
from typing import Any, Literal

import msgspec
import pydantic
import pytest
from hypothesis import given
from hypothesis import strategies as st
from typing_extensions import TypedDict

import rxstream as rs
from rxstream.core import schema as schema_module
from rxstream.core.schema import (
    OutputSpec,
    json_schema_of,
    openapi_schema,
    output_spec,
    strict_schema,
    subset_schema,
)
from rxstream.testing._schema_values import schema_value
from tests.support.schema_check import problems


class Point(pydantic.BaseModel):
    x: int
    y: int = 0


class PointStruct(msgspec.Struct):
    x: int
    y: int = 0


@dataclasses.dataclass
class PointClass:
    x: int
    y: int = 0


class PointDict(TypedDict):
    x: int
    y: int


POINT_DICT = {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}


@pytest.mark.parametrize(
    ("target", "name", "required"),
    [
        pytest.param(Point, "Point", ["x"], id="pydantic"),
        pytest.param(PointStruct, "PointStruct", ["x"], id="msgspec"),
        pytest.param(PointClass, "PointClass", ["x"], id="dataclass"),
        pytest.param(PointDict, "PointDict", ["x", "y"], id="typeddict"),
        pytest.param(POINT_DICT, "output", ["x"], id="schema"),
        pytest.param({**POINT_DICT, "title": "Pt 1"}, "Pt_1", ["x"], id="schema-title"),
    ],
)
def test_every_kind_of_target_gives_an_object_schema(
    target: Any, name: str, required: list[str]
) -> None:
    spec = output_spec(target)
    assert spec.schema["type"] == "object"
    assert "$ref" not in spec.schema  # msgspec's root `$ref` is inlined
    assert sorted(spec.schema["required"]) == required
    assert spec.schema["properties"]["x"]["type"] == "integer"
    assert (spec.name, spec.strict, spec.via) == (name, True, "native")


def test_a_schema_dict_is_copied_never_changed() -> None:
    given = {"type": "object", "properties": {"a": {"type": "string"}}}
    spec = output_spec(given)
    strict_schema(spec.schema)
    subset_schema(spec.schema)
    assert given == {"type": "object", "properties": {"a": {"type": "string"}}}
    assert spec.schema is not given


def test_output_options_and_a_resolved_spec() -> None:
    spec = output_spec(rs.Output(Point, name="pt", strict=False, via="tool"))
    assert (spec.name, spec.strict, spec.via, spec.target) == ("pt", False, "tool", Point)
    assert output_spec(spec) is spec
    assert output_spec(rs.Output(Point)).name == "Point"


@pytest.mark.parametrize(
    ("output", "error", "words"),
    [
        pytest.param(int, TypeError, "got 'int'", id="plain-type"),
        pytest.param("Point", TypeError, "got 'str'", id="string"),
        pytest.param({"type": "array"}, ValueError, "type 'array'", id="array-root"),
        pytest.param(
            pydantic.RootModel[list[int]],
            ValueError,
            "must describe a JSON object",
            id="root-model",
        ),
        pytest.param(rs.Output(Point, name="a b"), ValueError, "Output.name", id="bad-name"),
        pytest.param(rs.Output(Point, via="prompt"), ValueError, "Output.via", id="bad-via"),  # type: ignore[arg-type]
        pytest.param(rs.Output(Point, strict=1), TypeError, "Output.strict", id="bad-strict"),  # type: ignore[arg-type]
    ],
)
def test_what_cannot_be_an_output_says_why(output: Any, error: type[Exception], words: str) -> None:
    with pytest.raises(error, match=words):
        output_spec(output)


def test_a_dataclass_without_pydantic_uses_msgspec_and_without_both_says_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = importlib.import_module

    def without(*names: str) -> Any:
        def imported(name: str, package: str | None = None) -> Any:
            if name.split(".")[0] in names:
                raise ImportError(name)
            return real(name, package)

        return imported

    monkeypatch.setattr(schema_module, "import_module", without("pydantic"))
    assert json_schema_of(PointClass)["required"] == ["x"]
    monkeypatch.setattr(schema_module, "import_module", without("pydantic", "msgspec"))
    with pytest.raises(TypeError, match=r"PointClass needs pydantic or msgspec"):
        json_schema_of(PointClass)

    @dataclasses.dataclass
    class Odd:
        lock: Any = dataclasses.field(default_factory=object)
        where: complex = 0j

    monkeypatch.setattr(schema_module, "import_module", without("pydantic"))
    with pytest.raises(TypeError, match=r"Odd needs pydantic or msgspec .*msgspec: "):
        json_schema_of(Odd)


def test_a_typing_typeddict_works_on_every_python() -> None:
    # pydantic refuses typing.TypedDict before Python 3.12: msgspec makes its schema then.
    import typing

    class Old(typing.TypedDict):
        x: int

    assert json_schema_of(Old)["properties"] == {"x": {"type": "integer"}}


def test_a_type_is_not_taken_for_a_model_when_pydantic_is_not_loaded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delitem(sys.modules, "pydantic")
    monkeypatch.delitem(sys.modules, "msgspec")
    with pytest.raises(TypeError, match="got 'int'"):
        json_schema_of(int)


# -- strict mode --------------------------------------------------------------------------

STRICT_CASES = [
    pytest.param(
        {"type": "object", "properties": {"a": {"type": "string"}}},
        {
            "type": "object",
            "properties": {"a": {"type": "string"}},
            "required": ["a"],
            "additionalProperties": False,
        },
        id="every-property-required-and-closed",
    ),
    pytest.param(
        {"type": "object", "properties": {}, "additionalProperties": True},
        {"type": "object", "properties": {}, "required": [], "additionalProperties": True},
        id="explicit-additional-properties-kept",
    ),
    pytest.param(
        {
            "type": "object",
            "properties": {
                "n": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None}
            },
        },
        {
            "type": "object",
            "properties": {"n": {"anyOf": [{"type": "integer"}, {"type": "null"}]}},
            "required": ["n"],
            "additionalProperties": False,
        },
        id="nullable-stays-nullable-none-default-dropped",
    ),
    pytest.param(
        {
            "type": "object",
            "properties": {"p": {"$ref": "#/$defs/P", "description": "the p"}},
            "$defs": {"P": {"type": "object", "properties": {"q": {"type": "boolean"}}}},
        },
        {
            "type": "object",
            "properties": {
                "p": {
                    "type": "object",
                    "properties": {"q": {"type": "boolean"}},
                    "required": ["q"],
                    "additionalProperties": False,
                    "description": "the p",
                }
            },
            "required": ["p"],
            "additionalProperties": False,
            "$defs": {
                "P": {
                    "type": "object",
                    "properties": {"q": {"type": "boolean"}},
                    "required": ["q"],
                    "additionalProperties": False,
                }
            },
        },
        id="ref-with-siblings-inlined",
    ),
    pytest.param(
        {
            "type": "object",
            "properties": {
                "l": {"type": "array", "items": {"allOf": [{"type": "object", "properties": {}}]}}
            },
        },
        {
            "type": "object",
            "properties": {
                "l": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {},
                        "required": [],
                        "additionalProperties": False,
                    },
                }
            },
            "required": ["l"],
            "additionalProperties": False,
        },
        id="single-allof-merged-in-items",
    ),
    pytest.param(
        {"allOf": [{"type": "object", "properties": {}}, {"minProperties": 0}]},
        {
            "allOf": [
                {"type": "object", "properties": {}, "required": [], "additionalProperties": False},
                {"minProperties": 0},
            ]
        },
        id="allof-of-several-walked",
    ),
]


@pytest.mark.parametrize(("given", "expected"), STRICT_CASES)
def test_strict_schema(given: dict[str, Any], expected: dict[str, Any]) -> None:
    assert strict_schema(given) == expected


@pytest.mark.parametrize(
    ("ref", "words"), [("http://x/s.json", "point inside"), ("#/$defs/None", "points to nothing")]
)
def test_strict_schema_refuses_a_ref_it_cannot_inline(ref: str, words: str) -> None:
    given = {"type": "object", "properties": {"a": {"$ref": ref, "description": "d"}}}
    with pytest.raises(ValueError, match=words):
        strict_schema(given)


# -- Anthropic's subset -------------------------------------------------------------------

SUBSET_CASES = [
    pytest.param(
        {"type": "object", "properties": {"s": {"type": "string", "maxLength": 3}}},
        {
            "type": "object",
            "properties": {"s": {"type": "string", "description": "{maxLength: 3}"}},
            "additionalProperties": False,
        },
        id="unsupported-keyword-into-description",
    ),
    pytest.param(
        {"type": "string", "format": "email", "description": "d"},
        {"type": "string", "format": "email", "description": "d"},
        id="known-format-kept",
    ),
    pytest.param(
        {"type": "string", "format": "phone"},
        {"type": "string", "description": "{format: phone}"},
        id="unknown-format-described",
    ),
    pytest.param(
        {"oneOf": [{"type": "integer"}, {"const": "x", "type": "string"}]},
        {"anyOf": [{"type": "integer"}, {"const": "x"}]},
        id="oneof-is-anyof-literals-drop-type",
    ),
    pytest.param(
        {"type": "array", "items": {"enum": ["a", 1, None]}, "minItems": 1, "maxItems": 4},
        {
            "type": "array",
            "items": {"enum": ["a", 1, None]},
            "minItems": 1,
            "description": "{maxItems: 4}",
        },
        id="array-min-items-kept-max-described",
    ),
    pytest.param(
        {"$ref": "#/$defs/A", "description": "d", "title": "dropped"},
        {"$ref": "#/$defs/A", "description": "d"},
        id="ref-keeps-description-only",
    ),
    pytest.param(
        {"allOf": [{"type": "null"}], "minItems": 3},
        {"allOf": [{"type": "null"}], "description": "{minItems: 3}"},
        id="allof",
    ),
]


@pytest.mark.parametrize(("given", "expected"), SUBSET_CASES)
def test_subset_schema(given: dict[str, Any], expected: dict[str, Any]) -> None:
    assert subset_schema(given) == expected


@pytest.mark.parametrize(
    "given",
    [{"description": "no type"}, {"type": "tuple"}, {"enum": [[1]]}],
    ids=["no-type", "unknown-type", "enum-of-lists"],
)
def test_subset_schema_refuses_what_it_cannot_say(given: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="at #/properties/v needs a 'type'"):
        subset_schema({"type": "object", "properties": {"v": given}})


# -- the SDKs' rules, for many models ------------------------------------------------------


class Tier(enum.Enum):
    FREE = "free"
    PAID = "paid"


class Item(pydantic.BaseModel):
    sku: str = pydantic.Field(pattern=r"^[A-Z]{3}$")
    price: float = pydantic.Field(gt=0)


class Order(pydantic.BaseModel):
    """An order."""

    items: list[Item] = pydantic.Field(min_length=1)
    note: str | None = None
    tier: Tier = Tier.FREE
    status: Literal["new", "paid"] = "new"
    gift: Item | None = pydantic.Field(default=None, description="A gift")
    tags: dict[str, int] = pydantic.Field(default_factory=dict)


class Tree(pydantic.BaseModel):
    label: str
    children: list[Tree] = []


@pytest.mark.parametrize("model", [Point, Item, Order, Tree], ids=lambda m: m.__name__)
def test_the_rewrites_follow_the_sdks_rules(model: type[pydantic.BaseModel]) -> None:
    openai_pydantic = pytest.importorskip("openai.lib._pydantic")
    transform = pytest.importorskip("anthropic.lib._parse._transform")
    schema = output_spec(model).schema
    assert strict_schema(schema) == openai_pydantic.to_strict_json_schema(model)
    theirs = pydantic.TypeAdapter(model).json_schema()
    if "$ref" in theirs:
        # A deliberate difference: a recursive model's schema is a root `$ref`, which rxstream
        # inlines (every provider wants an object at the root); the SDK sends it as it is.
        assert schema == {**theirs["$defs"]["Tree"], "$defs": theirs["$defs"]}
        theirs = schema
    assert subset_schema(schema) == transform.transform_schema(theirs)


def test_output_spec_is_a_frozen_record() -> None:
    spec = OutputSpec(None, "n", {"type": "object"})
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.name = "m"  # type: ignore[misc]


# -- a property: what strict mode lets through, the original schema takes --------------------

_LEAVES = st.sampled_from(
    [
        {"type": "string"},
        {"type": "integer", "minimum": 0},
        {"type": "number"},
        {"type": "boolean"},
        {"enum": ["a", "b"]},
        {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None},
        {"$ref": "#/$defs/Leaf"},
        {"$ref": "#/$defs/Leaf", "description": "a leaf"},
    ]
)


def _objects(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    names = st.lists(st.sampled_from(["a", "b", "c", "d"]), unique=True, max_size=4)
    return names.flatmap(
        lambda keys: st.tuples(
            st.fixed_dictionaries(dict.fromkeys(keys, children)),
            st.lists(st.sampled_from(keys), unique=True) if keys else st.just([]),
        ).map(lambda pair: {"type": "object", "properties": pair[0], "required": pair[1]})
    )


_NODES = st.recursive(
    _LEAVES,
    lambda children: st.one_of(
        _objects(children),
        children.map(lambda item: {"type": "array", "items": item}),
        children.map(lambda part: {"allOf": [part]}),
    ),
    max_leaves=12,
)
SCHEMAS = _objects(_NODES).map(
    lambda root: {
        **root,
        "$defs": {"Leaf": {"type": "object", "properties": {"x": {"type": "string"}}}},
    }
)


@given(SCHEMAS)
def test_the_fake_answer_to_a_strict_schema_fits_the_original(schema: dict[str, Any]) -> None:
    strict = strict_schema(schema)
    value = schema_value(strict, "answer")
    assert problems(value, strict) == []
    assert problems(value, schema) == []  # strict mode never asks for what the type refuses
    assert subset_schema(schema)["additionalProperties"] is False


# -- Gemini's older responseSchema --------------------------------------------------------

OPENAPI: list[Any] = [
    pytest.param(
        {"type": ["string", "null"]}, {"type": "STRING", "nullable": True}, id="type list"
    ),
    pytest.param(
        {"type": ["string", "integer"]},
        {"anyOf": [{"type": "STRING"}, {"type": "INTEGER"}]},
        id="two types",
    ),
    pytest.param({"type": "null"}, {"nullable": True}, id="null alone"),
    pytest.param(
        {"oneOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]},
        {"nullable": True, "anyOf": [{"type": "STRING"}, {"type": "INTEGER"}]},
        id="oneOf with null",
    ),
    pytest.param(
        {
            "allOf": [{"$ref": "#/$defs/a"}],
            "description": "mine",
            "$defs": {"a": {"type": "string", "description": "its"}},
        },
        {"type": "STRING", "description": "mine"},
        id="one allOf, its $ref, the node's own keywords first",
    ),
    pytest.param({"const": "x"}, {"enum": ["x"], "type": "STRING"}, id="const"),
    pytest.param(
        {"type": "array", "items": {"type": "integer", "exclusiveMinimum": 0}, "examples": [[1]]},
        {
            "type": "ARRAY",
            "items": {"type": "INTEGER", "description": "{exclusiveMinimum: 0}"},
            "example": [1],
        },
        id="what the subset lacks, in words; examples",
    ),
    pytest.param(
        {
            "type": "object",
            "properties": {"a": {"type": "boolean", "default": None}},
            "additionalProperties": False,
            "$schema": "x",
        },
        {
            "type": "OBJECT",
            "properties": {"a": {"type": "BOOLEAN"}},
            "description": "{additionalProperties: False}",
        },
        id="one property: no ordering; None default and $schema dropped",
    ),
]


@pytest.mark.parametrize(("schema", "expected"), OPENAPI)
def test_openapi_schema(schema: Any, expected: Any) -> None:
    before = copy.deepcopy(schema)
    assert openapi_schema(schema) == expected
    assert schema == before  # what it is given is never changed


@pytest.mark.parametrize(
    ("schema", "words"),
    [
        (
            {
                "type": "object",
                "properties": {"kid": {"$ref": "#/$defs/n"}},
                "$defs": {"n": {"type": "object", "properties": {"kid": {"$ref": "#/$defs/n"}}}},
            },
            "at #/properties/kid/properties/kid refers to itself",
        ),
        ({"allOf": [{"type": "string"}, {"minLength": 1}]}, "at # has an allOf of 2 schemas"),
        ({"enum": [1, 2]}, "takes strings only"),
        ({"const": None}, "takes strings only"),
        ({"$ref": "#/$defs/nothing"}, "points to nothing"),
    ],
)
def test_what_the_openapi_subset_cannot_say_is_refused(schema: Any, words: str) -> None:
    with pytest.raises(ValueError, match=re.escape(words)):
        openapi_schema(schema)


def test_output_openapi_is_a_bool() -> None:
    assert output_spec(rs.Output({"type": "object"}, openapi=True)).openapi is True
    with pytest.raises(TypeError, match=r"Output\.openapi must be a bool"):
        output_spec(rs.Output({"type": "object"}, openapi="yes"))  # type: ignore[arg-type]

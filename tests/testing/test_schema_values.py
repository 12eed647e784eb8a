"""`schema_value`: a deterministic value valid for a tool's JSON schema."""

from __future__ import annotations

from typing import Any

import pytest

from rxstream.testing._schema_values import schema_value
from tests.support.schema_check import problems

WEATHER = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "description": "the city"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
    },
    "required": ["city"],
    "additionalProperties": False,
}

SCHEMAS: dict[str, Any] = {
    "weather": WEATHER,
    "empty-object": {"type": "object"},
    "no-schema": {},
    "nested": {
        "type": "object",
        "required": ["where", "tags"],
        "properties": {
            "where": {
                "type": "object",
                "required": ["lat", "lon"],
                "properties": {
                    "lat": {"type": "number", "minimum": -90, "maximum": 90},
                    "lon": {"type": "number", "exclusiveMinimum": -180, "exclusiveMaximum": 180},
                },
            },
            "tags": {
                "type": "array",
                "items": {"type": "string"},
                "minItems": 3,
                "uniqueItems": True,
            },
        },
    },
    "bounds": {
        "type": "object",
        "required": ["days", "ratio", "step", "short", "long"],
        "properties": {
            "days": {"type": "integer", "minimum": 3, "maximum": 7},
            "ratio": {"type": "number", "maximum": 0.25},
            "step": {"type": "integer", "minimum": 7, "multipleOf": 5},
            "short": {"type": "string", "maxLength": 3},
            "long": {"type": "string", "minLength": 40},
        },
    },
    "draft4-exclusive": {"type": "integer", "minimum": 0, "exclusiveMinimum": True},
    "nullable-list-type": {"type": ["null", "integer"], "minimum": 2},
    "refs": {
        "type": "object",
        "required": ["item"],
        "properties": {"item": {"$ref": "#/$defs/Item"}},
        "$defs": {
            "Item": {
                "type": "object",
                "required": ["sku", "count"],
                "properties": {"sku": {"type": "string"}, "count": {"type": "integer"}},
            }
        },
    },
    "recursive": {
        "type": "object",
        "required": ["name"],
        "properties": {"child": {"$ref": "#"}, "name": {"type": "string"}},
    },
    "any-of": {"anyOf": [{"type": "null"}, {"type": "string", "format": "date"}]},
    "all-of": {
        "allOf": [
            {"type": "object", "required": ["a"], "properties": {"a": {"type": "boolean"}}},
            {"required": ["b"], "properties": {"b": {"const": 3}}},
        ]
    },
    "tuple": {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}]},
    "max-items-zero": {"type": "array", "items": {"type": "string"}, "maxItems": 0},
    "max-properties": {
        "type": "object",
        "maxProperties": 1,
        "properties": {"x": {"type": "string"}, "y": {"type": "string"}},
    },
    "gemini-openapi": {
        "type": "OBJECT",
        "required": ["query", "limit"],
        "properties": {"query": {"type": "STRING"}, "limit": {"type": "INTEGER", "maximum": 0}},
    },
}


@pytest.mark.parametrize("schema", list(SCHEMAS.values()), ids=list(SCHEMAS))
def test_the_value_is_valid_for_the_schema(schema: Any) -> None:
    value = schema_value(schema)
    assert problems(value, schema) == []
    assert schema_value(schema) == value  # deterministic


EXACT: dict[str, tuple[Any, Any]] = {
    "required-first-then-optional": (
        WEATHER,
        {"city": "example city", "unit": "celsius"},
    ),
    "default": ({"type": "integer", "default": 42}, 42),
    "examples": ({"type": "string", "examples": ["Paris", "Tokyo"]}, "Paris"),
    "openapi-example": ({"type": "STRING", "example": "Lyon"}, "Lyon"),
    "enum": ({"enum": ["b", "a"]}, "b"),
    "const": ({"const": {"k": 1}}, {"k": 1}),
    "format": ({"type": "string", "format": "email"}, "user@example.com"),
    "boolean": ({"type": "boolean"}, True),
    "named-string": (
        {"type": "object", "properties": {"q": {"type": "string"}}},
        {"q": "example q"},
    ),
}


@pytest.mark.parametrize(("schema", "expected"), list(EXACT.values()), ids=list(EXACT))
def test_what_the_schema_says_is_taken_first(schema: Any, expected: Any) -> None:
    assert schema_value(schema) == expected


def test_the_checker_itself_finds_problems() -> None:
    """The tests' checker is not a yes-man: it refuses what breaks the schema."""
    assert problems({}, WEATHER) == ["$: 'city' is missing"]
    assert problems({"city": "x", "unit": "kelvin"}, WEATHER)
    assert problems({"city": "x", "extra": 1}, WEATHER)
    assert problems(["a", "a", "a"], SCHEMAS["nested"]["properties"]["tags"])
    assert problems({"days": 9}, {"properties": {"days": {"maximum": 7}}})

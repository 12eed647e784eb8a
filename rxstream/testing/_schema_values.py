"""A value that a tool's JSON schema accepts, for the fake server's tool calls.

Input: a JSON schema (the `parameters` / `input_schema` / `inputSchema.json` of a
tool, as any provider takes it: JSON Schema, or Gemini's OpenAPI subset with
upper-case types). Output: one JSON value valid for it, always the same one.

What is followed: `const`, `default`, `examples` / `example`, `enum` (each taken
as given, first one first), `type` (one or a list; `null` last), `properties`
(the required first, then the others down to a depth of 4, at most
`maxProperties`), nested objects and
arrays (`items`, `prefixItems`, `minItems` / `maxItems`, distinct items for
`uniqueItems`), `minLength` / `maxLength`, numeric bounds (inclusive and
exclusive, `multipleOf`), the common string `format`s, `$ref` to `#/$defs/...`
or `#/definitions/...`, and `anyOf` / `oneOf` (the first choice that is not
`null`) / `allOf` (merged). Not followed: `pattern`, `not`, `if`/`then`, and
`dependentRequired` (no general generator exists for them; a schema that needs
them gets a value of the right type). Recursion through `$ref` stops at a depth
of 8 with the smallest value of the type (`{}` for an object: a schema whose
required properties recurse has no finite value at all).
"""

from __future__ import annotations

import math
from typing import Any, TypeAlias

__all__ = ["schema_value"]

JSON: TypeAlias = Any

_MAX_DEPTH = 8
_OPTIONAL_DEPTH = 4
_FORMATS = {
    "date-time": "2025-01-01T12:00:00Z",
    "date": "2025-01-01",
    "time": "12:00:00Z",
    "email": "user@example.com",
    "uri": "https://example.com/",
    "url": "https://example.com/",
    "uuid": "00000000-0000-4000-8000-000000000000",
    "ipv4": "192.0.2.1",
    "hostname": "example.com",
}


def schema_value(schema: JSON, name: str = "value") -> JSON:
    """A value valid for `schema` (deterministic), named after `name` where a string is made up.

    Example:
        >>> schema_value({"type": "object", "required": ["city"], "properties": {
        ...     "city": {"type": "string"}, "unit": {"enum": ["celsius", "fahrenheit"]}}})
        {'city': 'example city', 'unit': 'celsius'}
        >>> schema_value({"type": "ARRAY", "items": {"type": "INTEGER", "minimum": 3}})
        [3]
    """
    return _Generator(schema).value(schema, name, 0)


class _Generator:
    """Walks one schema; `root` is where `$ref`s are looked up."""

    def __init__(self, root: JSON) -> None:
        self.root = root

    def value(self, schema: JSON, name: str, depth: int) -> JSON:
        if not isinstance(schema, dict):
            return f"example {name}" if schema is not False else None
        schema = self._resolved(schema)
        for key in ("const", "default"):
            if key in schema:
                return schema[key]
        for key in ("examples", "enum"):
            given = schema.get(key)
            if isinstance(given, list) and given:
                return given[0]
        if "example" in schema:  # OpenAPI's (Gemini's schemas) single example
            return schema["example"]
        kind = _kind(schema)
        if depth >= _MAX_DEPTH:
            return _SMALLEST.get(kind, "")
        if kind == "object":
            return self._object(schema, depth)
        if kind == "array":
            return self._array(schema, name, depth)
        if kind in ("integer", "number"):
            return _number(schema, kind == "integer")
        if kind == "boolean":
            return True
        if kind == "null":
            return None
        return _string(schema, name)

    def _resolved(self, schema: dict[str, Any]) -> dict[str, Any]:
        """`schema` with its `$ref`, `allOf` and first non-null `anyOf`/`oneOf` folded in."""
        for _ in range(_MAX_DEPTH):
            ref = schema.get("$ref")
            if isinstance(ref, str):
                target = self._lookup(ref)
                rest = {k: v for k, v in schema.items() if k != "$ref"}
                schema = {**target, **rest} if isinstance(target, dict) else rest
                continue
            parts = schema.get("allOf")
            if isinstance(parts, list) and parts:
                schema = _merged([{k: v for k, v in schema.items() if k != "allOf"}, *parts])
                continue
            for key in ("anyOf", "oneOf"):
                choices = schema.get(key)
                if isinstance(choices, list) and choices:
                    chosen = next((c for c in choices if _kind(c) != "null"), choices[0])
                    rest = {k: v for k, v in schema.items() if k != key}
                    schema = {**rest, **chosen} if isinstance(chosen, dict) else rest
                    break
            else:
                return schema
        return schema

    def _lookup(self, ref: str) -> JSON:
        node = self.root
        if not ref.startswith("#"):
            return {}
        for part in ref.lstrip("#").strip("/").split("/"):
            if not part:
                continue
            part = part.replace("~1", "/").replace("~0", "~")
            node = node.get(part) if isinstance(node, dict) else None
        return node if isinstance(node, dict) else {}

    def _object(self, schema: dict[str, Any], depth: int) -> dict[str, JSON]:
        properties = schema.get("properties")
        properties = properties if isinstance(properties, dict) else {}
        required = [r for r in schema.get("required") or () if isinstance(r, str)]
        names = list(required)
        if depth < _OPTIONAL_DEPTH:  # deeper, only what is required (a recursive schema ends)
            names += [n for n in properties if n not in required]
        limit = schema.get("maxProperties")
        if isinstance(limit, int) and not isinstance(limit, bool):
            names = names[: max(limit, len(required))]
        extra = schema.get("additionalProperties")
        return {
            name: self.value(
                properties.get(name, extra if extra is not None else {}), name, depth + 1
            )
            for name in names
        }

    def _array(self, schema: dict[str, Any], name: str, depth: int) -> list[JSON]:
        prefix = schema.get("prefixItems")
        if isinstance(prefix, list):
            return [self.value(item, name, depth + 1) for item in prefix]
        items = schema.get("items", {})
        if isinstance(items, list):  # draft 4's tuple form
            return [self.value(item, name, depth + 1) for item in items]
        low, high = _bound(schema, "minItems", 0), _bound(schema, "maxItems", None)
        count = max(low, 1) if high is None else min(max(low, 1), high)
        first = self.value(items, name, depth + 1)
        if count > 1 and schema.get("uniqueItems") is True:
            return [_variant(first, i) for i in range(count)]
        return [first] * count


_SMALLEST: dict[str, JSON] = {
    "object": {},
    "array": [],
    "integer": 0,
    "number": 0,
    "boolean": False,
    "null": None,
}


def _kind(schema: JSON) -> str:
    """The schema's type in lower case (the first of a list that is not null), or a guess."""
    if not isinstance(schema, dict):
        return "string"
    kind = schema.get("type")
    if isinstance(kind, list):
        named = [k for k in kind if isinstance(k, str)]
        kind = next((k for k in named if k.lower() != "null"), named[0] if named else None)
    if isinstance(kind, str):
        return kind.lower()
    if "properties" in schema or "required" in schema:
        return "object"
    if "items" in schema or "prefixItems" in schema:
        return "array"
    if any(key in schema for key in ("minimum", "maximum", "multipleOf")):
        return "number"
    return "string"


def _merged(parts: list[JSON]) -> dict[str, Any]:
    """`allOf`'s schemas as one: properties and required lists joined, the rest laid over."""
    out: dict[str, Any] = {}
    for part in parts:
        if not isinstance(part, dict):
            continue
        properties = {**out.get("properties", {}), **(part.get("properties") or {})}
        required = [*out.get("required", []), *(part.get("required") or [])]
        out.update(part)
        if properties:
            out["properties"] = properties
        if required:
            out["required"] = list(dict.fromkeys(required))
    return out


def _bound(schema: dict[str, Any], key: str, default: int | None) -> Any:
    value = schema.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _number(schema: dict[str, Any], integer: bool) -> int | float:
    """The smallest value at or above the lower bound (1 without one) that fits the rest."""

    def given(key: str) -> float | None:
        value = schema.get(key)
        if isinstance(value, bool) or not isinstance(value, int | float):
            return None
        return float(value)

    step = 1.0 if integer else 0.5
    low, high = given("minimum"), given("maximum")
    exclusive_low, exclusive_high = given("exclusiveMinimum"), given("exclusiveMaximum")
    if schema.get("exclusiveMinimum") is True and low is not None:  # draft 4's flag
        exclusive_low, low = low, None
    if schema.get("exclusiveMaximum") is True and high is not None:
        exclusive_high, high = high, None
    if exclusive_low is not None:
        low = max(low if low is not None else -math.inf, exclusive_low + step)
    if exclusive_high is not None:
        high = min(high if high is not None else math.inf, exclusive_high - step)
    value = low if low is not None else (min(1.0, high) if high is not None else 1.0)
    multiple = given("multipleOf")
    if multiple:
        value = math.ceil(value / multiple) * multiple
    if integer:
        return math.ceil(value)
    return value


def _string(schema: dict[str, Any], name: str) -> str:
    text = _FORMATS.get(str(schema.get("format", "")).lower(), f"example {name}")
    low, high = _bound(schema, "minLength", 0), _bound(schema, "maxLength", None)
    if len(text) < low:
        text += "x" * (low - len(text))
    if high is not None and len(text) > high:
        text = text[:high]
    return text


def _variant(value: JSON, i: int) -> JSON:
    """The `i`-th of distinct values like `value` (for `uniqueItems`)."""
    if i == 0:
        return value
    if isinstance(value, bool):
        return value if i == 0 else not value
    if isinstance(value, int | float):
        return value + i
    if isinstance(value, str):
        return f"{value} {i + 1}"
    if isinstance(value, dict):
        return {**value, "_item": i}
    return [value, i]

"""A tiny JSON Schema checker for the tests (jsonschema is not a dependency).

It checks what the fake server's generated arguments must satisfy: `type`
(one or a list, any case), `const`, `enum`, `required`, `properties`,
`additionalProperties: false`, `maxProperties`, `items` / `prefixItems`,
`minItems` / `maxItems`, `uniqueItems`, `minLength` / `maxLength`, numeric
bounds and `multipleOf`, `$ref` to `#/$defs` / `#/definitions`, `anyOf` /
`oneOf` (at least one) and `allOf`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

_TYPES: dict[str, Any] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


def problems(value: Any, schema: Any, root: Any = None, at: str = "$") -> list[str]:
    """Where `value` breaks `schema` (empty: it is valid)."""
    root = schema if root is None else root
    if schema is True or schema == {}:
        return []
    if schema is False:
        return [f"{at}: no value is allowed"]
    if "$ref" in schema:
        target: Any = root
        for part in filter(None, schema["$ref"].lstrip("#").split("/")):
            target = target[part]
        rest = {k: v for k, v in schema.items() if k != "$ref"}
        return problems(value, target, root, at) + problems(value, rest, root, at)
    found: list[str] = []
    kind = schema.get("type")
    kinds = [k.lower() for k in (kind if isinstance(kind, list) else [kind] if kind else [])]
    if kinds and not any(_TYPES[k](value) for k in kinds):
        return [f"{at}: {value!r} is not of type {kind}"]
    if "const" in schema and value != schema["const"]:
        found.append(f"{at}: {value!r} is not {schema['const']!r}")
    if "enum" in schema and value not in schema["enum"]:
        found.append(f"{at}: {value!r} is not one of {schema['enum']!r}")
    for part in schema.get("allOf", ()):
        found += problems(value, part, root, at)
    for key in ("anyOf", "oneOf"):
        if key in schema and all(problems(value, part, root, at) for part in schema[key]):
            found.append(f"{at}: {value!r} matches none of {key}")
    if isinstance(value, dict):
        found += _object(value, schema, root, at)
    elif isinstance(value, list):
        found += _array(value, schema, root, at)
    elif isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            found.append(f"{at}: {value!r} is shorter than {schema['minLength']}")
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            found.append(f"{at}: {value!r} is longer than {schema['maxLength']}")
    elif _TYPES["number"](value):
        found += _number(value, schema, at)
    return found


def _object(value: dict[str, Any], schema: Any, root: Any, at: str) -> list[str]:
    found = [
        f"{at}: {name!r} is missing" for name in schema.get("required", ()) if name not in value
    ]
    properties = schema.get("properties", {})
    for name, item in value.items():
        if name in properties:
            found += problems(item, properties[name], root, f"{at}.{name}")
        elif schema.get("additionalProperties") is False:
            found.append(f"{at}: {name!r} is not allowed")
    if "maxProperties" in schema and len(value) > schema["maxProperties"]:
        found.append(f"{at}: more than {schema['maxProperties']} properties")
    return found


def _array(value: list[Any], schema: Any, root: Any, at: str) -> list[str]:
    found: list[str] = []
    prefix = schema.get("prefixItems", [])
    for i, item in enumerate(value):
        part = prefix[i] if i < len(prefix) else schema.get("items", {})
        found += problems(item, part, root, f"{at}[{i}]")
    if len(value) < schema.get("minItems", 0):
        found.append(f"{at}: fewer than {schema['minItems']} items")
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        found.append(f"{at}: more than {schema['maxItems']} items")
    if schema.get("uniqueItems"):
        texts = [json.dumps(item, sort_keys=True) for item in value]
        if len(set(texts)) != len(texts):
            found.append(f"{at}: items are not unique")
    return found


def _number(value: float, schema: Any, at: str) -> list[str]:
    checks: list[tuple[str, Callable[[float], bool]]] = [
        ("minimum", lambda b: value >= b),
        ("maximum", lambda b: value <= b),
        ("exclusiveMinimum", lambda b: value > b),
        ("exclusiveMaximum", lambda b: value < b),
        ("multipleOf", lambda b: (value / b) == int(value / b)),
    ]
    return [
        f"{at}: {value!r} breaks {key}={schema[key]!r}"
        for key, holds in checks
        if isinstance(schema.get(key), int | float)
        and not isinstance(schema.get(key), bool)
        and not holds(schema[key])
    ]

"""A type or schema -> a validator of closed JSON values.

Input: what `output=` (or `item=`) names: a pydantic model, a msgspec `Struct`,
a dataclass or `TypedDict` (or any type pydantic's `TypeAdapter` takes), or a
JSON Schema `dict`. Output: `validator(output)`, a function from a decoded JSON
value to the validated object, raising `Invalid` with the validator's errors.

Which library validates (each imported on first use, behind a guard: the core
needs none of them):

- a msgspec `Struct`: `msgspec.convert`;
- any other type: pydantic's `TypeAdapter` when pydantic is installed, else
  `msgspec.convert` (dataclasses and `TypedDict`s), else a `TypeError` that
  names both;
- a JSON Schema: `jsonschema` when it is installed (the `schema` extra:
  `pip install 'rxstream[schema]'`), the schema's own draft (`$schema`, else
  2020-12), the schema checked first; else rxstream's own checks of the
  keywords structured output uses: `type` (a name or a list; `integer` is not
  `boolean`), `enum`, `const`, `properties`, `required`,
  `additionalProperties` (`false` or a schema), `items`, `anyOf`/`oneOf`
  (one branch must pass), `allOf`, `minItems`/`maxItems`, and local `$ref`s
  into `$defs`/`definitions`. A schema that asserts more (`minimum`,
  `pattern`, `maxLength`, `not`, ... : `UNCHECKED`) is refused without
  jsonschema, with a `TypeError` that says how to get it, rather than
  validated in part. Annotations (`title`, `description`, `format`,
  `default`, ...) assert nothing, as in jsonschema.

Errors are dicts in pydantic's shape: `loc` (a tuple path) and `msg`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..models import JSON

__all__ = ["UNCHECKED", "Invalid", "Validator", "validator"]

Validator = Callable[[JSON], Any]

#: The assertions jsonschema checks and rxstream's own checks do not.
UNCHECKED = frozenset(
    {
        "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
        "minLength", "maxLength", "pattern", "uniqueItems", "prefixItems",
        "additionalItems", "contains", "minContains", "maxContains", "unevaluatedItems",
        "minProperties", "maxProperties", "patternProperties", "propertyNames",
        "dependentRequired", "dependentSchemas", "dependencies", "unevaluatedProperties",
        "not", "if", "then", "else", "$dynamicRef", "$recursiveRef",
    }
)  # fmt: skip


class Invalid(Exception):
    """A value did not validate; `errors` says where and why (pydantic's shape)."""

    def __init__(self, errors: tuple[dict[str, Any], ...]) -> None:
        self.errors = errors
        super().__init__(errors)


def validator(output: object) -> Validator:
    """The validator for `output` (None: every value passes as it is).

    Raises:
        TypeError: `output` is a type and neither pydantic nor msgspec is installed.

    >>> validator({"type": "object", "required": ["a"]})({"a": 1})
    {'a': 1}
    """
    if output is None:
        return _same
    if isinstance(output, dict):
        return _schema_validator(output)
    if _is_struct(output):
        return _msgspec_validator(output)
    try:
        from pydantic import TypeAdapter, ValidationError
    except ImportError:
        try:
            return _msgspec_validator(output)
        except ImportError:
            raise TypeError(
                f"validating {output!r} needs pydantic or msgspec; install one, "
                "or pass a JSON Schema dict"
            ) from None
    adapter: Any = TypeAdapter(output)  # type: ignore[call-overload,arg-type,unused-ignore]

    def validate(value: JSON) -> Any:
        try:
            return adapter.validate_python(value)
        except ValidationError as exc:
            raise Invalid(
                tuple(
                    {"loc": tuple(e["loc"]), "msg": e["msg"], "type": e["type"]}
                    for e in exc.errors(include_url=False)
                )
            ) from None

    return validate


def _same(value: JSON) -> JSON:
    return value


def _is_struct(output: object) -> bool:
    try:
        import msgspec
    except ImportError:
        return False
    return isinstance(output, type) and issubclass(output, msgspec.Struct)


def _msgspec_validator(output: Any) -> Validator:
    import msgspec

    def validate(value: JSON) -> Any:
        try:
            return msgspec.convert(value, type=output)
        except msgspec.ValidationError as exc:
            raise Invalid(({"loc": (), "msg": str(exc), "type": "msgspec"},)) from None

    return validate


def _schema_validator(schema: dict[str, Any]) -> Validator:
    try:
        import jsonschema  # type: ignore[import-untyped,unused-ignore]
    except ImportError:
        return _checked_without_jsonschema(schema)
    cls = jsonschema.validators.validator_for(schema)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError as exc:
        at = "/".join(map(str, exc.path))
        raise ValueError(f"not a valid JSON Schema (at {at!r}): {exc.message}") from None
    checked = cls(schema)

    def validate_with_jsonschema(value: JSON) -> Any:
        errors = [
            {"loc": tuple(e.absolute_path), "msg": e.message, "type": e.validator}
            for e in checked.iter_errors(value)
        ]
        if errors:
            raise Invalid(tuple(errors))
        return value

    return validate_with_jsonschema


def _checked_without_jsonschema(schema: dict[str, Any]) -> Validator:
    keywords, refs = _keywords(schema)
    asserted = sorted(keywords & UNCHECKED)
    remote = sorted(ref for ref in refs if ref != "#" and not ref.startswith("#/"))
    if remote:
        raise TypeError(
            f"the output schema has $refs out of itself ({', '.join(map(repr, remote))}), "
            "which only jsonschema follows, and jsonschema is not installed: "
            "pip install 'rxstream[schema]' (or pip install jsonschema)"
        )
    if asserted:
        raise TypeError(
            f"the output schema asserts {', '.join(map(repr, asserted))}, which only jsonschema "
            "checks, and jsonschema is not installed: pip install 'rxstream[schema]' "
            "(or pip install jsonschema)"
        )
    checker = _SchemaChecker(schema)

    def validate(value: JSON) -> Any:
        errors = checker.errors(value)
        if errors:
            raise Invalid(tuple(errors))
        return value

    return validate


_VALUED = ("properties", "$defs", "definitions", "dependentSchemas", "patternProperties")


def _keywords(schema: Any) -> tuple[set[str], set[str]]:
    """The keywords used in `schema` and its subschemas (not the names under `properties`),
    and its `$ref`s."""
    found: set[str] = set()
    refs: set[str] = set()
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, dict):
            found.update(node)
            if isinstance(node.get("$ref"), str):
                refs.add(node["$ref"])
            for key, value in node.items():
                if key in _VALUED and isinstance(value, dict):
                    stack.extend(value.values())
                elif key not in ("enum", "const", "default", "examples") and isinstance(
                    value, dict | list
                ):
                    stack.append(value)
    return found, refs


_TYPES: dict[str, Callable[[object], bool]] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: type(v) is int or (type(v) is float and v.is_integer()),
    "number": lambda v: type(v) in (int, float),
    "boolean": lambda v: type(v) is bool,
    "null": lambda v: v is None,
}


class _SchemaChecker:
    """The structural checks named in the module docstring, without jsonschema."""

    def __init__(self, root: dict[str, Any]) -> None:
        self.root = root

    def errors(self, value: JSON) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        self._check(self.root, value, (), out)
        return out

    def _resolve(self, schema: dict[str, Any]) -> dict[str, Any]:
        seen: set[str] = set()
        while "$ref" in schema:
            ref = schema["$ref"]
            if ref in seen:
                raise ValueError(f"the $ref {ref!r} leads back to itself")
            seen.add(ref)
            if ref == "#":
                schema = self.root
                continue
            if not isinstance(ref, str) or not ref.startswith("#/"):
                raise ValueError(f"only local $refs are checked without jsonschema, got {ref!r}")
            target: Any = self.root
            for step in ref[2:].split("/"):
                target = target[step.replace("~1", "/").replace("~0", "~")]
            schema = target
        return schema

    def _check(self, schema: Any, value: JSON, loc: tuple[Any, ...], out: list[Any]) -> None:
        if schema is True or schema == {}:
            return
        if schema is False:
            out.append({"loc": loc, "msg": "no value is allowed here", "type": "false_schema"})
            return
        schema = self._resolve(schema)
        self._check_type(schema, value, loc, out)
        if "enum" in schema and value not in schema["enum"]:
            out.append({"loc": loc, "msg": f"not one of {schema['enum']!r}", "type": "enum"})
        if "const" in schema and value != schema["const"]:
            out.append({"loc": loc, "msg": f"not {schema['const']!r}", "type": "const"})
        for branch in schema.get("allOf", ()):
            self._check(branch, value, loc, out)
        for key in ("anyOf", "oneOf"):
            if key in schema and not any(
                not self._branch(branch, value, loc) for branch in schema[key]
            ):
                out.append({"loc": loc, "msg": f"no branch of {key} fits", "type": key})
        if isinstance(value, dict):
            self._check_object(schema, value, loc, out)
        elif isinstance(value, list):
            self._check_array(schema, value, loc, out)

    def _branch(self, schema: Any, value: JSON, loc: tuple[Any, ...]) -> list[Any]:
        errors: list[Any] = []
        self._check(schema, value, loc, errors)
        return errors

    def _check_type(self, schema: dict[str, Any], value: JSON, loc: Any, out: list[Any]) -> None:
        kinds = schema.get("type")
        if kinds is None:
            return
        names = [kinds] if isinstance(kinds, str) else list(kinds)
        if not any(_TYPES[name](value) for name in names if name in _TYPES):
            got = "null" if value is None else type(value).__name__
            out.append(
                {"loc": loc, "msg": f"expected {' or '.join(names)}, got {got}", "type": "type"}
            )

    def _check_object(
        self, schema: dict[str, Any], value: dict[str, Any], loc: Any, out: Any
    ) -> None:
        properties = schema.get("properties", {})
        for name in schema.get("required", ()):
            if name not in value:
                out.append({"loc": (*loc, name), "msg": "field required", "type": "missing"})
        extra = schema.get("additionalProperties", True)
        for name, item in value.items():
            if name in properties:
                self._check(properties[name], item, (*loc, name), out)
            elif extra is False:
                out.append({"loc": (*loc, name), "msg": "extra field not allowed", "type": "extra"})
            elif isinstance(extra, dict):
                self._check(extra, item, (*loc, name), out)

    def _check_array(self, schema: dict[str, Any], value: list[Any], loc: Any, out: Any) -> None:
        items = schema.get("items")
        if isinstance(items, dict | bool):
            for i, item in enumerate(value):
                self._check(items, item, (*loc, i), out)
        if len(value) < schema.get("minItems", 0):
            out.append(
                {"loc": loc, "msg": f"fewer than {schema['minItems']} items", "type": "minItems"}
            )
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            out.append(
                {"loc": loc, "msg": f"more than {schema['maxItems']} items", "type": "maxItems"}
            )

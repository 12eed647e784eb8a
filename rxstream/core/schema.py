"""The JSON Schema of `output=`, and the rewrites providers' structured outputs need.

Input: what `output=` was given: an `rs.Output`, or alone a pydantic model, a
msgspec `Struct`, a dataclass, a `TypedDict`, or a JSON Schema dict. Output:
an `OutputSpec` (the plain JSON Schema of an object, its name, strict or not,
native or a forced tool) and, per provider, the schema as its strict mode
takes it.

Where each schema comes from: a pydantic model's `model_json_schema()`; a
msgspec `Struct`'s `msgspec.json.schema`; a dataclass or `TypedDict` through
pydantic's `TypeAdapter` when pydantic is installed, else msgspec; a dict as
it is (copied). A root `$ref` (what msgspec makes) is inlined, as the root of
every provider's structured output must be an object.

The rewrites (each returns a new schema; what it is given is never changed):

- `strict_schema`: OpenAI's strict mode (chat `response_format`, Responses
  `text.format`). Every object gets `additionalProperties: false` unless it
  says otherwise, and lists all its properties in `required`: a field that
  may be absent must now be present, and one typed `X | None` (nullable
  already, as pydantic and msgspec write it) keeps its `null`, so an optional
  field is sent as `null`; a `None` default is dropped; a single `allOf` is
  merged into its parent; a `$ref` with sibling keywords is inlined (strict
  mode takes a `$ref` only alone); `$defs`, `properties`, `items`, `anyOf`
  and `allOf` are walked. The openai SDK's rules for `response_format=Model`.
  A field with a default other than None becomes required *without* a
  `null`: every answer strict mode allows is then one the original schema
  (and the type) accepts.
- `subset_schema`: the JSON Schema subset Anthropic's structured outputs (and
  Bedrock's, which follow the same subset) take. Kept: `type`, `$ref` (with
  its description), `$defs`, `anyOf` (`oneOf` becomes `anyOf`), `allOf`,
  `enum` and `const` of plain values, `description`, `title`, `properties`
  and `required` (as given), `items`, the string `format`s it knows,
  `minItems` of 0 or 1; every object is closed (`additionalProperties:
  false`). Any other keyword (`minimum`, `pattern`, `maxLength`, ...) is
  moved into the description as text (`{minimum: 1, maximum: 10}`), so the
  model still reads it. The anthropic SDK's rules for `output_format=Model`.

Invariants: pure, no I/O; pydantic and msgspec are imported only when a type
needs them. A target rxstream cannot make a schema of is a `TypeError`
naming it; a schema that is not an object's is a `ValueError`.
"""

from __future__ import annotations

import copy
import dataclasses
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import import_module
from typing import Any, Literal, cast

from ..models import JSON, JSONObject, Output

__all__ = [
    "OutputSpec",
    "json_schema_of",
    "openapi_schema",
    "output_spec",
    "strict_schema",
    "subset_schema",
]

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")

#: The string formats Anthropic's structured outputs take (others go into the description).
_FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6", "uuid"}
)
_SUBSET_TYPES = frozenset({"object", "array", "string", "integer", "number", "boolean", "null"})


@dataclass(frozen=True, slots=True)
class OutputSpec:
    """What `output=` asks for, resolved: the request renderers' input.

    Attributes:
        target: what was given (the type, or the schema dict).
        name: the schema's (or the forced tool's) name, `[A-Za-z0-9_-]{1,64}`.
        schema: the plain JSON Schema of the answer, an object's (no provider
            rewrite applied).
        strict: ask for the provider's strict mode where it has one.
        via: `"native"` or `"tool"` (the answer comes as the arguments of a
            call of the tool named `name`).
        openapi: send Gemini's `responseSchema` (`openapi_schema`) instead
            of `responseJsonSchema` (and a forced tool's `parameters`).
    """

    target: object
    name: str
    schema: JSONObject
    strict: bool = True
    via: Literal["native", "tool"] = "native"
    openapi: bool = False


def output_spec(output: object) -> OutputSpec:
    """`output=` resolved: an `rs.Output`, a type or a schema dict (an `OutputSpec` as it is).

    Raises:
        TypeError: a target rxstream makes no JSON Schema of (the message names it).
        ValueError: a schema that is not an object's; a name providers refuse;
            a `via` other than `"native"` or `"tool"`.

    >>> spec = output_spec({"title": "City", "type": "object",
    ...                     "properties": {"name": {"type": "string"}}})
    >>> spec.name, spec.via, spec.strict
    ('City', 'native', True)
    """
    if isinstance(output, OutputSpec):
        return output
    if not isinstance(output, Output):
        output = Output(output)
    if output.via not in ("native", "tool"):
        raise ValueError(f"Output.via must be 'native' or 'tool', got {output.via!r}")
    for flag in ("strict", "openapi"):
        if not isinstance(getattr(output, flag), bool):
            raise TypeError(f"Output.{flag} must be a bool, got {getattr(output, flag)!r}")
    schema = json_schema_of(output.target)
    name = _name(output.target, output.name, schema)
    return OutputSpec(output.target, name, schema, output.strict, output.via, output.openapi)


def _described(target: object) -> str:
    return getattr(target, "__qualname__", None) or type(target).__name__


def _name(target: object, given: str | None, schema: JSONObject) -> str:
    if given is not None:
        if not isinstance(given, str) or not _NAME.match(given):
            raise ValueError(
                f"Output.name must be 1 to 64 letters, digits, '_' or '-', got {given!r}"
            )
        return given
    found = getattr(target, "__name__", None) if isinstance(target, type) else schema.get("title")
    if not isinstance(found, str):
        return "output"
    # Generic names (`Page[Item]`) hold characters the providers refuse.
    return re.sub(r"[^A-Za-z0-9_-]", "_", found)[:64] or "output"


def json_schema_of(target: object) -> JSONObject:
    """The JSON Schema of an object type, or a schema dict checked (and copied).

    Raises:
        TypeError: a target that is none of a pydantic model, a msgspec
            `Struct`, a dataclass, a `TypedDict`, a schema dict; a dataclass
            or `TypedDict` with neither pydantic nor msgspec installed.
        ValueError: a schema that is not an object's.

    >>> from dataclasses import dataclass
    >>> @dataclass
    ... class City:
    ...     name: str
    >>> json_schema_of(City)["required"]
    ['name']
    """
    if isinstance(target, Mapping):
        schema: JSONObject = copy.deepcopy(dict(target))
    elif _is_pydantic_model(target):
        schema = cast(Any, target).model_json_schema()
    elif _is_msgspec_struct(target):
        schema = import_module("msgspec.json").schema(target)
    elif isinstance(target, type) and (dataclasses.is_dataclass(target) or _is_typeddict(target)):
        schema = _adapted(target)
    else:
        raise TypeError(
            f"output= takes a pydantic model, a msgspec Struct, a dataclass, a TypedDict or "
            f"a JSON Schema dict, got {_described(target)!r}"
        )
    return _object_root(schema, target)


def _is_pydantic_model(target: object) -> bool:
    pydantic = sys.modules.get("pydantic")  # a model exists only once pydantic is loaded
    return (
        pydantic is not None and isinstance(target, type) and issubclass(target, pydantic.BaseModel)
    )


def _is_typeddict(target: type) -> bool:
    # typing's and typing_extensions' TypedDicts alike (`typing.is_typeddict` knows only its own).
    return issubclass(target, dict) and hasattr(target, "__required_keys__")


def _is_msgspec_struct(target: object) -> bool:
    msgspec = sys.modules.get("msgspec")
    return msgspec is not None and isinstance(target, type) and issubclass(target, msgspec.Struct)


def _adapted(target: type) -> JSONObject:
    """A dataclass's or `TypedDict`'s schema: pydantic's `TypeAdapter`, else msgspec's."""
    problems: list[str] = []
    try:
        pydantic = import_module("pydantic")
    except ImportError:
        problems.append("pydantic is not installed")
    else:
        try:
            schema: JSONObject = pydantic.TypeAdapter(target).json_schema()
            return schema
        except pydantic.PydanticUserError as exc:  # e.g. typing.TypedDict on Python < 3.12
            problems.append(f"pydantic: {str(exc).splitlines()[0]}")
    try:
        schema = import_module("msgspec.json").schema(target)
        return schema
    except ImportError:
        problems.append("msgspec is not installed")
    except (TypeError, ValueError) as exc:
        problems.append(f"msgspec: {exc}")
    raise TypeError(
        f"output={_described(target)} needs pydantic or msgspec to make its JSON Schema "
        f"({'; '.join(problems)}): pip install pydantic"
    )


def _object_root(schema: JSONObject, target: object) -> JSONObject:
    ref = schema.get("$ref")
    defs = schema.get("$defs")
    if isinstance(ref, str) and ref.startswith("#/$defs/") and isinstance(defs, dict):
        inlined = defs.get(ref.removeprefix("#/$defs/"))
        if isinstance(inlined, dict):
            rest = {k: v for k, v in schema.items() if k != "$ref"}
            schema = {**copy.deepcopy(inlined), **rest}
    if schema.get("type") != "object":
        described = "the schema" if isinstance(target, Mapping) else _described(target)
        raise ValueError(
            f"output= must describe a JSON object (every provider's structured output and "
            f"a tool's arguments are one); {described} has type {schema.get('type')!r}: "
            "wrap it in an object with one property"
        )
    return schema


# -- OpenAI strict mode ----------------------------------------------------------------


def strict_schema(schema: JSONObject) -> JSONObject:
    """`schema` as OpenAI's strict mode takes it (the rules in the module's docstring).

    Raises:
        ValueError: a `$ref` that does not resolve inside the schema.

    >>> strict_schema({"type": "object", "properties": {
    ...     "a": {"type": "integer"}, "b": {"anyOf": [{"type": "string"}, {"type": "null"}],
    ...     "default": None}}, "required": ["a"]})
    {'type': 'object', 'properties': {'a': {'type': 'integer'}, \
'b': {'anyOf': [{'type': 'string'}, {'type': 'null'}]}}, 'required': ['a', 'b'], \
'additionalProperties': False}
    """
    root = copy.deepcopy(schema)
    return _strict(root, root)


def _strict(node: JSONObject, root: JSONObject) -> JSONObject:
    for key in ("$defs", "definitions"):
        defs = node.get(key)
        if isinstance(defs, dict):
            for name, sub in defs.items():
                if isinstance(sub, dict):
                    defs[name] = _strict(sub, root)
    if node.get("type") == "object" and "additionalProperties" not in node:
        node["additionalProperties"] = False
    properties = node.get("properties")
    if isinstance(properties, dict):
        node["required"] = list(properties)
        node["properties"] = {
            k: _strict(v, root) if isinstance(v, dict) else v for k, v in properties.items()
        }
    items = node.get("items")
    if isinstance(items, dict):
        node["items"] = _strict(items, root)
    any_of = node.get("anyOf")
    if isinstance(any_of, list):
        node["anyOf"] = [_strict(v, root) if isinstance(v, dict) else v for v in any_of]
    all_of = node.get("allOf")
    if isinstance(all_of, list):
        if len(all_of) == 1 and isinstance(all_of[0], dict):
            del node["allOf"]
            node.update(_strict(all_of[0], root))
        else:
            node["allOf"] = [_strict(v, root) if isinstance(v, dict) else v for v in all_of]
    if "default" in node and node["default"] is None:
        del node["default"]
    ref = node.get("$ref")
    if isinstance(ref, str) and len(node) > 1:
        # Strict mode takes a `$ref` only alone: inline it, the node's own keywords first.
        target = _resolve(root, ref)
        merged = {**copy.deepcopy(target), **{k: v for k, v in node.items() if k != "$ref"}}
        node.clear()
        node.update(merged)
        return _strict(node, root)
    return node


def _resolve(root: JSONObject, ref: str) -> JSONObject:
    if not ref.startswith("#/"):
        raise ValueError(f"a $ref must point inside the schema ('#/...'), got {ref!r}")
    node: JSON = root
    for part in ref[2:].split("/"):
        node = (
            node.get(part.replace("~1", "/").replace("~0", "~")) if isinstance(node, dict) else None
        )
    if not isinstance(node, dict):
        raise ValueError(f"the $ref {ref!r} points to nothing in the schema")
    return node


# -- Anthropic's (and Bedrock's) subset ---------------------------------------------------


def subset_schema(schema: JSONObject) -> JSONObject:
    """`schema` in the subset Anthropic's structured outputs take (see the module's docstring).

    Raises:
        ValueError: a (sub)schema with neither `type`, `anyOf`, `oneOf`,
            `allOf`, `const`, a plain `enum` nor a `$ref`, or of a type the
            subset has not (the message gives its path).

    >>> subset_schema({"type": "object", "properties": {"n": {"type": "integer",
    ...     "minimum": 1, "description": "How many"}}, "required": ["n"]})
    {'type': 'object', 'properties': {'n': {'type': 'integer', \
'description': 'How many\\n\\n{minimum: 1}'}}, 'additionalProperties': False, 'required': ['n']}
    """
    return _subset(schema, "#")


def _plain(value: JSON) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def _subset(schema: JSONObject, path: str) -> JSONObject:
    rest = dict(schema)
    out: JSONObject = {}
    defs = rest.pop("$defs", None)
    if isinstance(defs, dict):
        out["$defs"] = {k: _subset(v, f"{path}/$defs/{k}") for k, v in defs.items()}
    ref = rest.pop("$ref", None)
    if ref is not None:
        out["$ref"] = ref
        if "description" in rest:
            out["description"] = rest["description"]
        return out
    kind = rest.pop("type", None)
    literal = _literals(rest, out)
    if literal:
        kind = None
    choices = rest.pop("anyOf", None)
    one_of = rest.pop("oneOf", None)
    all_of = rest.pop("allOf", None)
    if isinstance(choices, list) or isinstance(one_of, list):
        chosen = choices if isinstance(choices, list) else one_of
        out["anyOf"] = [_subset(v, f"{path}/anyOf/{i}") for i, v in enumerate(chosen)]
    elif isinstance(all_of, list):
        out["allOf"] = [_subset(v, f"{path}/allOf/{i}") for i, v in enumerate(all_of)]
    elif not literal:
        if kind not in _SUBSET_TYPES:
            raise ValueError(
                f"the output schema at {path} needs a 'type' (one of "
                f"{', '.join(sorted(_SUBSET_TYPES))}), 'anyOf', 'oneOf', 'allOf', 'const' or an "
                f"'enum' of plain values, got {schema!r:.200}"
            )
        out["type"] = kind
    for key in ("description", "title"):
        if key in rest:
            out[key] = rest.pop(key)
    if kind == "object":
        properties = rest.pop("properties", {})
        out["properties"] = {k: _subset(v, f"{path}/properties/{k}") for k, v in properties.items()}
        rest.pop("additionalProperties", None)
        out["additionalProperties"] = False
        if "required" in rest:
            out["required"] = list(rest.pop("required"))
    elif kind == "string" and rest.get("format") in _FORMATS:
        out["format"] = rest.pop("format")
    elif kind == "array":
        if "items" in rest:
            out["items"] = _subset(rest.pop("items"), f"{path}/items")
        if rest.get("minItems") in (0, 1):
            out["minItems"] = rest.pop("minItems")
    _in_words(rest, out)
    return out


def _in_words(rest: JSONObject, out: JSONObject) -> None:
    """What the subset cannot say (`rest`), said in words after `out`'s description."""
    if rest:
        said = "{" + ", ".join(f"{k}: {v}" for k, v in rest.items()) + "}"
        described = out.get("description")
        out["description"] = f"{described}\n\n{said}" if described is not None else said


def _literals(rest: JSONObject, out: JSONObject) -> bool:
    """Move a plain `enum` and `const` from `rest` to `out`; True when either moved."""
    enum = rest.get("enum")
    if isinstance(enum, list) and enum and all(_plain(v) for v in enum):
        out["enum"] = list(rest.pop("enum"))
    if "const" in rest and _plain(rest["const"]):
        out["const"] = rest.pop("const")
    return "enum" in out or "const" in out


# -- Gemini's older responseSchema (an OpenAPI 3.0 subset) ---------------------------------

#: The keywords of Gemini's `Schema` object, as they are named in JSON Schema.
_OPENAPI_KEPT = frozenset(
    {
        "format", "title", "description", "minItems", "maxItems", "minProperties",
        "maxProperties", "minLength", "maxLength", "pattern", "minimum", "maximum", "default",
        "example", "propertyOrdering", "required",
    }
)  # fmt: skip
#: Meta keywords that say nothing about the answer.
_OPENAPI_DROPPED = frozenset({"$schema", "$id", "$comment", "$defs", "definitions"})


def openapi_schema(schema: JSONObject) -> JSONObject:
    """`schema` as Gemini's older `responseSchema` takes it (an OpenAPI 3.0 subset).

    For models before Gemini 2.5 and Vertex endpoints that lack
    `responseJsonSchema`. The rules (google-genai's for `response_schema=Model`):
    `$ref`s are inlined (the node's own keywords beside a `$ref` kept over the
    target's); `null` becomes `nullable: true` (`{"type": "null"}` in an
    `anyOf`, or in a list of types), and an `anyOf` left with one branch is
    that branch; `oneOf` becomes `anyOf`, a single `allOf` is merged; types
    are upper-case (`OBJECT`, `STRING`, ...); a string `const` is an `enum`
    of one; an object with more than one property gets `propertyOrdering`
    (the properties' order, which Gemini otherwise does not keep);
    `examples` gives its first as `example`; a `None` default is dropped.
    Any other keyword (`exclusiveMinimum`, `additionalProperties`,
    `uniqueItems`, ...) is moved into the description as text, as
    `subset_schema` does.

    Raises:
        ValueError: a recursive `$ref` (the subset has no references: send
            `responseJsonSchema`), a `$ref` that resolves to nothing, an
            `enum` or `const` that is not all strings, an `allOf` of more
            than one schema (the message gives the path).

    >>> openapi_schema({"type": "object", "properties": {
    ...     "n": {"anyOf": [{"type": "integer"}, {"type": "null"}], "exclusiveMinimum": 0}}})
    {'type': 'OBJECT', 'properties': {'n': {'type': 'INTEGER', 'nullable': True, \
'description': '{exclusiveMinimum: 0}'}}}
    """
    return _openapi(schema, schema, "#", ())


def _openapi(node: JSONObject, root: JSONObject, path: str, refs: tuple[str, ...]) -> JSONObject:
    rest = dict(node)
    _openapi_union(rest, path)
    ref = rest.pop("$ref", None)
    if isinstance(ref, str):
        if ref in refs:
            raise ValueError(
                f"the output schema at {path} refers to itself ({ref!r}); Gemini's responseSchema "
                "has no references: send responseJsonSchema (Output(openapi=False))"
            )
        rest = {**copy.deepcopy(_resolve(root, ref)), **rest}
        return _openapi(rest, root, path, (*refs, ref))
    if "default" in rest and rest["default"] is None:
        del rest["default"]  # as google-genai: a None default is no default
    out: JSONObject = {}
    kind = rest.pop("type", None)
    if isinstance(kind, str):
        out["type"] = kind.upper()
    if rest.pop("nullable", False) is True:
        out["nullable"] = True
    _openapi_literals(rest, out, path)
    if isinstance(rest.get("anyOf"), list):
        out["anyOf"] = [
            _openapi(v, root, f"{path}/anyOf/{i}", refs) for i, v in enumerate(rest.pop("anyOf"))
        ]
    properties = rest.pop("properties", None)
    if isinstance(properties, dict):
        out["properties"] = {
            k: _openapi(v, root, f"{path}/properties/{k}", refs) for k, v in properties.items()
        }
        if len(properties) > 1 and "propertyOrdering" not in rest:
            out["propertyOrdering"] = list(properties)
    if isinstance(rest.get("items"), dict):
        out["items"] = _openapi(rest.pop("items"), root, f"{path}/items", refs)
    examples = rest.pop("examples", None)
    if isinstance(examples, list) and examples and "example" not in rest:
        out["example"] = examples[0]
    out.update({k: rest.pop(k) for k in list(rest) if k in _OPENAPI_KEPT})
    for key in _OPENAPI_DROPPED:
        rest.pop(key, None)
    _in_words(rest, out)
    return out


def _openapi_union(rest: JSONObject, path: str) -> None:
    """`null`, `oneOf`, `allOf` and a list of types in `rest` put as the subset says them."""
    if "oneOf" in rest and "anyOf" not in rest:
        rest["anyOf"] = rest.pop("oneOf")
    all_of = rest.get("allOf")
    if isinstance(all_of, list):
        if len(all_of) != 1 or not isinstance(all_of[0], dict):
            raise ValueError(
                f"the output schema at {path} has an allOf of {len(all_of)} schemas, which "
                "Gemini's responseSchema cannot say: merge them, or send responseJsonSchema"
            )
        del rest["allOf"]
        rest.update({**all_of[0], **rest})
    kind = rest.get("type")
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"]
        if len(kinds) < len(kind):
            rest["nullable"] = True
        if len(kinds) == 1:
            rest["type"] = kinds[0]
        else:
            del rest["type"]
            rest["anyOf"] = [{"type": k} for k in kinds]
    elif kind == "null":
        rest["nullable"] = True
        del rest["type"]
    choices = rest.get("anyOf")
    if isinstance(choices, list) and {"type": "null"} in choices:
        rest["nullable"] = True
        choices = [c for c in choices if c != {"type": "null"}]
        if len(choices) == 1 and isinstance(choices[0], dict):
            del rest["anyOf"]
            rest.update({**choices[0], **{k: v for k, v in rest.items() if k != "anyOf"}})
        else:
            rest["anyOf"] = choices


def _openapi_literals(rest: JSONObject, out: JSONObject, path: str) -> None:
    if "const" in rest:
        rest["enum"] = [rest.pop("const")]
    enum = rest.pop("enum", None)
    if enum is None:
        return
    if not isinstance(enum, list) or not all(isinstance(v, str) for v in enum):
        raise ValueError(
            f"the output schema at {path} has an enum (or const) of {enum!r:.100}: Gemini's "
            "responseSchema takes strings only; send responseJsonSchema"
        )
    out["enum"] = enum
    out.setdefault("type", "STRING")

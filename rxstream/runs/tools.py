"""Functions the model may call in a run (`rs.run`): `rs.tool` and what it derives.

`rs.tool(fn)` pairs a plain function (sync or async) with its `rs.Tool`
description, derived from the signature and docstring where not given: the
summary (the docstring's first paragraph) is the description; the parameters'
type hints become a JSON schema, through pydantic's `create_model` when pydantic
is installed (any type it knows: models, dataclasses, enums, constrained types),
else through a small mapping of builtins (`str`, `int`, `float`, `bool`,
`list[X]`, `tuple[X, ...]`, `dict[str, X]`, `X | None`, `Literal[...]`); a
Google-style `Args:` section describes each parameter.

The run checks each call's arguments before the function sees them (pydantic's
validation when the schema came from it, else `schema_problem`, a small JSON
Schema check of types, required and unknown properties and enums), and a call
that fails goes back to the model as an error result. A parameter annotated
`rs.CancelToken` is left out of the schema: the run passes the token, set when
the run no longer wants the result (disposed, or the tool's time ran out).
"""

from __future__ import annotations

import inspect
import re
import threading
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from ..models import JSON, JSONObject, Tool

__all__ = ["DEFAULT_TIMEOUT", "CancelToken", "FunctionTool", "ToolLike", "schema_problem", "tool"]

#: Seconds a tool call may run unless its `rs.tool(timeout=)` says otherwise.
DEFAULT_TIMEOUT = 60.0


class CancelToken:
    """Told when a run no longer wants a tool call's result.

    A tool that runs on a thread cannot be stopped from outside; one that
    declares a parameter annotated `rs.CancelToken` gets the token and may
    stop early when it is set (the run was disposed, or the call's timeout
    passed). The run does not wait for the thread either way.

    >>> token = CancelToken()
    >>> token.cancelled, token.wait(0)
    (False, False)
    >>> token.cancel(); token.cancelled
    True
    """

    __slots__ = ("_event",)

    def __init__(self) -> None:
        self._event = threading.Event()

    @property
    def cancelled(self) -> bool:
        """True once the run no longer wants the result."""
        return self._event.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Block up to `timeout` seconds for a cancellation; True if it came."""
        return self._event.wait(timeout)

    def cancel(self) -> None:
        """Set the token (the run does this; idempotent)."""
        self._event.set()


@dataclass(frozen=True, slots=True)
class FunctionTool:
    """A function with its description, as `rs.run` runs it (made by `rs.tool`).

    Attributes:
        spec: the `rs.Tool` the model sees (name, description, JSON schema).
        fn: the function, called with the call's arguments as keywords.
        needs_approval: True (or a predicate on the decoded arguments) when a
            call must wait for a decision (`rs.ApprovalResponse`) before it runs.
        timeout: seconds a call may run (None: no limit); then it goes back to
            the model as an error.
        blocking: True runs a sync function on the run's thread pool; False
            calls it on the run's own thread (for instant functions, and ones
            that return an Observable: its last item is the output).
    """

    spec: Tool
    fn: Callable[..., Any]
    needs_approval: bool | Callable[[JSONObject], bool] = False
    timeout: float | None = DEFAULT_TIMEOUT
    blocking: bool = True
    token_parameter: str | None = field(default=None, repr=False)
    validate: Callable[[JSONObject], JSONObject] | None = field(default=None, repr=False)

    @property
    def name(self) -> str:
        """The tool's name, as the model calls it."""
        return self.spec.name

    @property
    def is_async(self) -> bool:
        """True for a coroutine function (run on the event loop)."""
        return inspect.iscoroutinefunction(self.fn)

    def waits(self, arguments: JSONObject) -> bool:
        """Whether a call with these arguments waits for approval."""
        if callable(self.needs_approval):
            return bool(self.needs_approval(arguments))
        return self.needs_approval

    def keywords(self, arguments: JSONObject) -> JSONObject:
        """The call's keyword arguments, checked; raises `ValueError` saying what is wrong."""
        if self.validate is not None:
            return self.validate(arguments)
        problem = schema_problem(self.spec.parameters, arguments)
        if problem is not None:
            raise ValueError(problem)
        return arguments


#: What `rs.run(tools=...)` takes: an `rs.tool(...)`, or a plain function (`rs.tool(fn)`).
ToolLike: TypeAlias = FunctionTool | Callable[..., Any]


@typing.overload
def tool(
    fn: Callable[..., Any],
    spec: Tool | None = None,
    *,
    needs_approval: bool | Callable[[JSONObject], bool] = False,
    timeout: float | None = DEFAULT_TIMEOUT,
    blocking: bool = True,
) -> FunctionTool: ...


@typing.overload
def tool(
    fn: None = None,
    spec: Tool | None = None,
    *,
    needs_approval: bool | Callable[[JSONObject], bool] = False,
    timeout: float | None = DEFAULT_TIMEOUT,
    blocking: bool = True,
) -> Callable[[Callable[..., Any]], FunctionTool]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    spec: Tool | None = None,
    *,
    needs_approval: bool | Callable[[JSONObject], bool] = False,
    timeout: float | None = DEFAULT_TIMEOUT,
    blocking: bool = True,
) -> FunctionTool | Callable[[Callable[..., Any]], FunctionTool]:
    """Make a function a tool of `rs.run`; also a decorator (`@rs.tool`, `@rs.tool(timeout=5)`).

    Args:
        fn: the function (sync or async), called with the call's arguments as keywords.
        spec: its `rs.Tool` description; by default derived from `fn` (its
            name, its docstring's summary, its parameters' type hints).
        needs_approval: True, or a predicate on the decoded arguments: such a
            call ends the step with an `rs.ApprovalRequest` and runs only once
            approved (see `rs.run`).
        timeout: seconds a call may run (None: no limit).
        blocking: False calls a sync function on the run's own thread
            instead of a worker thread (see `FunctionTool`).

    Returns:
        A `FunctionTool` (with `fn=None`: a decorator that makes one).

    Raises:
        TypeError: `fn` is not callable; without `spec=`, a parameter is
            `*args` / `**kwargs`, or has a type hint that has no JSON schema.

    >>> def get_weather(city: str, unit: Literal["c", "f"] = "c") -> str:
    ...     '''The weather in a city.'''
    ...     return "sunny"
    >>> weather = tool(get_weather)
    >>> weather.spec.description, weather.spec.parameters["required"]
    ('The weather in a city.', ['city'])
    """
    if timeout is not None and (isinstance(timeout, bool) or not timeout > 0):
        raise ValueError(f"timeout must be a positive number of seconds or None, got {timeout!r}")

    def make(function: Callable[..., Any]) -> FunctionTool:
        if not callable(function):
            raise TypeError(f"a tool is a function, got {function!r}")
        if spec is not None:
            token, validate, described = _token_parameter(function), None, spec
        else:
            token, validate, described = _derive(function)
        return FunctionTool(
            spec=described,
            fn=function,
            needs_approval=needs_approval,
            timeout=timeout,
            blocking=blocking,
            token_parameter=token,
            validate=validate,
        )

    return make if fn is None else make(fn)


def as_tool(value: object) -> FunctionTool:
    """A run's tool from what `tools=` holds (a `FunctionTool` or a plain function)."""
    if isinstance(value, FunctionTool):
        return value
    if isinstance(value, Tool):
        raise TypeError(
            f"rs.run runs its tools: {value.name!r} is a description without a function "
            "(give rs.tool(fn, spec) instead)"
        )
    if callable(value):
        return tool(value)
    raise TypeError(f"a tool is a function or rs.tool(...), got {value!r}")


# --------------------------------------------------------------------------- derivation


def _derive(
    fn: Callable[..., Any],
) -> tuple[str | None, Callable[[JSONObject], JSONObject] | None, Tool]:
    """(the token parameter, the arguments' validator if pydantic made one, the description)."""
    signature = inspect.signature(fn)
    hints = _hints(fn)
    summary, described = _docstring(inspect.getdoc(fn) or "")
    token: str | None = None
    fields: dict[str, tuple[Any, Any]] = {}
    for name, parameter in signature.parameters.items():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            raise TypeError(f"tool {fn.__name__!r}: *args and **kwargs have no schema ({name!r})")
        hint = hints.get(name, Any)
        if hint is CancelToken:
            token = name
            continue
        fields[name] = (hint, parameter.default)
    name = getattr(fn, "__name__", type(fn).__name__)
    validate, schema = _pydantic_schema(name, fields) or (None, _builtin_schema(name, fields))
    for key, text in described.items():
        if key in schema.get("properties", {}):
            schema["properties"][key].setdefault("description", text)
    return token, validate, Tool(name, summary, schema)


def _token_parameter(fn: Callable[..., Any]) -> str | None:
    """The parameter annotated `CancelToken`, if any."""
    hints = _hints(fn)
    return next((name for name, hint in hints.items() if hint is CancelToken), None)


def _hints(fn: Callable[..., Any]) -> dict[str, Any]:
    try:
        return typing.get_type_hints(fn)
    except Exception as exc:  # an unresolvable string annotation
        raise TypeError(f"tool {fn!r}: cannot read its type hints ({exc})") from None


def _docstring(doc: str) -> tuple[str, dict[str, str]]:
    """The summary (first paragraph, one line) and the `Args:` section's descriptions."""
    summary = " ".join(doc.split("\n\n", 1)[0].split())
    section = re.search(r"^Args:\n((?:[ \t]+.*\n?)+)", doc, re.MULTILINE)
    described: dict[str, str] = {}
    if section is not None:
        for match in re.finditer(r"^\s+(\w+)(?:\s*\([^)]*\))?:\s*(.+)$", section.group(1), re.M):
            described[match.group(1)] = match.group(2).strip()
    return summary, described


def _pydantic_schema(
    name: str, fields: Mapping[str, tuple[Any, Any]]
) -> tuple[Callable[[JSONObject], JSONObject], JSONObject] | None:
    """The validator and schema pydantic derives, or None without pydantic."""
    try:
        import pydantic
    except ImportError:
        return None
    definitions = {
        key: (hint, ... if default is inspect.Parameter.empty else default)
        for key, (hint, default) in fields.items()
    }
    try:
        model = pydantic.create_model(  # type: ignore[call-overload]
            f"{name}_arguments",
            __config__=pydantic.ConfigDict(extra="forbid", arbitrary_types_allowed=False),
            **definitions,
        )
        schema: JSONObject = model.model_json_schema()
    except (pydantic.PydanticUserError, pydantic.PydanticSchemaGenerationError, NameError) as exc:
        raise TypeError(f"tool {name!r}: its parameters have no JSON schema ({exc})") from None
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)

    def validate(arguments: JSONObject) -> JSONObject:
        try:
            checked = model.model_validate(arguments)
        except pydantic.ValidationError as exc:
            raise ValueError(_pydantic_words(exc)) from None
        return {key: getattr(checked, key) for key in fields}

    return validate, schema


def _pydantic_words(error: Any) -> str:
    parts = [
        f"{'.'.join(str(p) for p in item['loc']) or 'arguments'}: {item['msg']}"
        for item in error.errors()[:5]
    ]
    return "; ".join(parts)


_SIMPLE: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}


def _builtin_schema(name: str, fields: Mapping[str, tuple[Any, Any]]) -> JSONObject:
    properties = {key: _hint_schema(name, key, hint) for key, (hint, _) in fields.items()}
    required = [key for key, (_, default) in fields.items() if default is inspect.Parameter.empty]
    schema: JSONObject = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    schema["additionalProperties"] = False
    return schema


def _hint_schema(tool_name: str, key: str, hint: Any) -> JSONObject:
    """A JSON schema of a builtin type hint; TypeError for one without."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any or hint is object:
        return {}
    if hint in _SIMPLE:
        return {"type": _SIMPLE[hint]}
    if hint is type(None):
        return {"type": "null"}
    if origin is Literal:
        return {"enum": list(args)}
    if origin in (typing.Union, types.UnionType):
        choices = [_hint_schema(tool_name, key, arg) for arg in args]
        return {"anyOf": choices}
    if hint in (list, tuple) or origin in (list, tuple):
        items = [a for a in args if a is not Ellipsis]
        whole = {"type": "array"}
        return {**whole, "items": _hint_schema(tool_name, key, items[0])} if items else whole
    if hint is dict or origin is dict:
        whole = {"type": "object"}
        if len(args) == 2:
            return {**whole, "additionalProperties": _hint_schema(tool_name, key, args[1])}
        return whole
    raise TypeError(
        f"tool {tool_name!r}: parameter {key!r} has type {hint!r}, which has no JSON schema "
        "without pydantic (install pydantic, or give rs.tool(fn, spec=rs.Tool(...)))"
    )


# --------------------------------------------------------------------------- checking

_JSON_TYPES: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
    "null": lambda v: v is None,
}


def schema_problem(schema: JSON, value: JSON, path: str = "arguments") -> str | None:
    """What is wrong with `value` for `schema`, in words, or None when it fits.

    A small check, not a validator: `type` (one or a list, Gemini's upper-case
    names too), `enum`, `const`, `required`, `properties`, `additionalProperties:
    false`, `items` and `anyOf` / `oneOf`; the rest of JSON Schema is accepted as is.

    >>> schema_problem({"type": "object", "required": ["city"]}, {})
    "arguments: 'city' is required"
    """
    if not isinstance(schema, dict):
        return None
    for check in (_type_problem, _enum_problem, _choice_problem, _object_problem, _array_problem):
        problem = check(schema, value, path)
        if problem is not None:
            return problem
    return None


def _type_problem(schema: JSONObject, value: JSON, path: str) -> str | None:
    wanted = schema.get("type")
    names = [wanted] if isinstance(wanted, str) else wanted if isinstance(wanted, list) else []
    checks = [_JSON_TYPES.get(str(n).lower()) for n in names]
    if not checks or any(c is None or c(value) for c in checks):
        return None
    return f"{path}: expected {' or '.join(str(n).lower() for n in names)}, got {value!r:.60}"


def _enum_problem(schema: JSONObject, value: JSON, path: str) -> str | None:
    if "const" in schema and value != schema["const"]:
        return f"{path}: expected {schema['const']!r}, got {value!r:.60}"
    enum = schema.get("enum")
    if isinstance(enum, list) and value not in enum:
        return f"{path}: expected one of {enum!r:.80}, got {value!r:.60}"
    return None


def _choice_problem(schema: JSONObject, value: JSON, path: str) -> str | None:
    choices = schema.get("anyOf") or schema.get("oneOf")
    if not isinstance(choices, list) or not choices:
        return None
    problems = [schema_problem(choice, value, path) for choice in choices]
    return None if any(p is None for p in problems) else problems[0]


def _object_problem(schema: JSONObject, value: JSON, path: str) -> str | None:
    if not isinstance(value, dict):
        return None
    properties = schema.get("properties")
    properties = properties if isinstance(properties, dict) else {}
    for key in schema.get("required") or ():
        if key not in value:
            return f"{path}: {key!r} is required"
    if schema.get("additionalProperties") is False:
        unknown = sorted(set(value) - set(properties))
        if unknown:
            return f"{path}: unknown propert{'ies' if len(unknown) > 1 else 'y'} {unknown!r}"
    for key, item in value.items():
        problem = schema_problem(properties.get(key), item, f"{path}.{key}")
        if problem is not None:
            return problem
    return None


def _array_problem(schema: JSONObject, value: JSON, path: str) -> str | None:
    if not isinstance(value, list):
        return None
    for index, item in enumerate(value):
        problem = schema_problem(schema.get("items"), item, f"{path}[{index}]")
        if problem is not None:
            return problem
    return None

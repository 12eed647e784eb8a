"""`rs.tool`: the description derived from a function (with pydantic and without), the
arguments' check, the cancellation token; `tool_message`."""

from __future__ import annotations

import builtins
import dataclasses
import enum
import sys
from typing import Any, Literal

import pytest

import rxstream as rs
from rxstream.runs.run import tool_message
from rxstream.runs.tools import schema_problem


def forecast(
    city: str, days: int = 3, unit: Literal["c", "f"] = "c", hourly: bool | None = None
) -> str:
    """The forecast for a city.

    More words that are not the summary.

    Args:
        city: the city's name.
        days (int): how many days ahead.
    """
    return f"{city} {days} {unit} {hourly}"


@pytest.fixture(params=["pydantic", "builtins"])
def schema_source(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each test runs with pydantic, and as if it were not installed."""
    if request.param == "builtins":
        real = builtins.__import__

        def no_pydantic(name: str, *args: Any, **kwargs: Any) -> Any:
            if name == "pydantic" or name.startswith("pydantic."):
                raise ImportError("no pydantic here")
            return real(name, *args, **kwargs)

        monkeypatch.setattr(builtins, "__import__", no_pydantic)
        monkeypatch.delitem(sys.modules, "pydantic", raising=False)
    return str(request.param)


def test_a_tool_is_derived_from_the_signature_and_docstring(schema_source: str) -> None:
    made = rs.tool(forecast)
    assert made.name == "forecast"
    assert made.spec.description == "The forecast for a city."
    schema = made.spec.parameters
    assert schema["type"] == "object"
    assert schema["required"] == ["city"]
    assert schema["additionalProperties"] is False
    properties = schema["properties"]
    assert properties["city"]["type"] == "string"
    assert properties["city"]["description"] == "the city's name."
    assert properties["days"]["type"] == "integer"
    assert properties["days"]["description"] == "how many days ahead."
    assert properties["unit"]["enum"] == ["c", "f"]
    assert {"type": "null"} in properties["hourly"]["anyOf"]
    assert made.keywords({"city": "Oslo", "unit": "f"})["unit"] == "f"


@pytest.mark.parametrize(
    ("arguments", "words"),
    [
        ({}, "city"),
        ({"city": "Oslo", "town": "x"}, "town"),
        ({"city": "Oslo", "unit": "k"}, "unit"),
        ({"city": 3}, "city"),
    ],
    ids=["missing", "unknown", "not-in-enum", "wrong-type"],
)
def test_arguments_that_do_not_fit_say_what_is_wrong(
    schema_source: str, arguments: dict[str, Any], words: str
) -> None:
    with pytest.raises(ValueError, match=words):
        rs.tool(forecast).keywords(arguments)


@dataclasses.dataclass
class Point:
    x: int
    y: int


class Color(enum.Enum):
    RED = "red"


def test_pydantic_derives_and_builds_rich_types() -> None:
    def plot(at: Point, color: Color) -> str:
        """Plot a point."""
        return f"{at} {color}"

    made = rs.tool(plot)
    assert "$defs" in made.spec.parameters
    keywords = made.keywords({"at": {"x": 1, "y": "2"}, "color": "red"})
    assert keywords == {"at": Point(1, 2), "color": Color.RED}


def test_without_pydantic_a_rich_type_asks_for_a_spec(schema_source: str) -> None:
    def plot(at: Point) -> str:
        return str(at)

    if schema_source == "pydantic":
        assert rs.tool(plot).spec.parameters["required"] == ["at"]
        return
    with pytest.raises(
        TypeError, match=r"parameter 'at' has type .*Point.* no JSON schema without pydantic"
    ):
        rs.tool(plot)
    given = rs.Tool("plot", "Plot a point.", {"type": "object", "required": ["at"]})
    assert rs.tool(plot, given).spec is given


def test_builtin_containers_have_schemas(schema_source: str) -> None:
    def f(
        names: list[str],
        pairs: dict[str, int],
        rows: tuple[float, ...],
        anything: Any,
        bare: list,  # type: ignore[type-arg]
    ) -> None:
        """F."""

    properties = rs.tool(f).spec.parameters["properties"]
    assert properties["names"]["items"] == {"type": "string"}
    assert properties["pairs"]["additionalProperties"] == {"type": "integer"}
    assert properties["rows"]["type"] == "array"
    assert properties["bare"]["type"] == "array"
    assert not {"type"} & set(properties["anything"])


def test_the_cancel_token_is_passed_and_left_out_of_the_schema(schema_source: str) -> None:
    def wait(seconds: float, cancel: rs.CancelToken) -> bool:
        """Wait."""
        return cancel.wait(seconds)

    made = rs.tool(wait)
    assert made.token_parameter == "cancel"
    assert list(made.spec.parameters["properties"]) == ["seconds"]
    assert rs.tool(wait, rs.Tool("wait")).token_parameter == "cancel"


def test_the_decorator_forms() -> None:
    @rs.tool
    def first(a: int) -> int:
        """First."""
        return a

    @rs.tool(needs_approval=True, timeout=5)
    def second(a: int) -> int:
        """Second."""
        return a

    assert isinstance(first, rs.FunctionTool)
    assert second.timeout == 5
    assert second.waits({"a": 1})
    assert not first.waits({"a": 1})
    assert rs.tool(len, rs.Tool("n"), needs_approval=lambda args: args.get("big", False)).waits(
        {"big": True}
    )


@pytest.mark.parametrize(
    ("call", "error", "words"),
    [
        (lambda: rs.tool(lambda *args: None), TypeError, r"\*args and \*\*kwargs have no schema"),
        (lambda: rs.tool(3), TypeError, "a tool is a function, got 3"),  # type: ignore[call-overload]
        (lambda: rs.tool(forecast, timeout=0), ValueError, "timeout must be a positive number"),
        (lambda: rs.tool(forecast, timeout=True), ValueError, "timeout must be a positive number"),
    ],
    ids=["varargs", "not-callable", "zero-timeout", "bool-timeout"],
)
def test_bad_tools_are_refused(call: Any, error: type[Exception], words: str) -> None:
    with pytest.raises(error, match=words):
        call()


def test_an_unreadable_hint_is_a_type_error() -> None:
    def f(a: Missing) -> None:  # type: ignore[name-defined]  # noqa: F821
        """F."""

    with pytest.raises(TypeError, match="cannot read its type hints"):
        rs.tool(f)


def test_the_cancel_token() -> None:
    token = rs.CancelToken()
    assert not token.cancelled
    assert not token.wait(0)
    token.cancel()
    token.cancel()
    assert token.cancelled
    assert token.wait(None)


SCHEMA = {
    "type": "object",
    "required": ["name"],
    "additionalProperties": False,
    "properties": {
        "name": {"type": "STRING"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "size": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
        "kind": {"const": "box"},
        "unit": {"enum": ["cm", "in"]},
        "ratio": {"type": ["number", "null"]},
    },
}


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ({"name": "a"}, None),
        ({"name": "a", "tags": ["x"], "size": None, "kind": "box", "unit": "cm", "ratio": 1}, None),
        ({"name": "a", "size": 2, "ratio": None}, None),
        ([], "arguments: expected object, got []"),
        ({}, "arguments: 'name' is required"),
        ({"name": "a", "x": 1, "y": 2}, "arguments: unknown properties ['x', 'y']"),
        ({"name": "a", "z": 1}, "arguments: unknown property ['z']"),
        ({"name": 1}, "arguments.name: expected string, got 1"),
        ({"name": "a", "tags": ["x", 2]}, "arguments.tags[1]: expected string, got 2"),
        ({"name": "a", "size": 1.5}, "arguments.size: expected integer, got 1.5"),
        ({"name": "a", "kind": "bag"}, "arguments.kind: expected 'box', got 'bag'"),
        ({"name": "a", "unit": "m"}, "arguments.unit: expected one of ['cm', 'in'], got 'm'"),
        ({"name": "a", "ratio": True}, "arguments.ratio: expected number or null, got True"),
    ],
)
def test_schema_problem(value: Any, problem: str | None) -> None:
    assert schema_problem(SCHEMA, value) == problem


def test_a_spec_given_by_hand_is_checked_with_schema_problem() -> None:
    made = rs.tool(lambda **kw: kw, rs.Tool("t", "", SCHEMA))
    assert made.keywords({"name": "a"}) == {"name": "a"}
    with pytest.raises(ValueError, match="'name' is required"):
        made.keywords({})
    assert schema_problem(None, 1) is None


class Model:
    def model_dump(self, mode: str) -> dict[str, str]:
        return {"mode": mode}


@pytest.mark.parametrize(
    ("result", "content"),
    [
        (rs.ToolResult("c", "t", "plain"), "plain"),
        (rs.ToolResult("c", "t", {"a": [1, "é"]}), '{"a": [1, "é"]}'),
        (rs.ToolResult("c", "t", Point(1, 2)), '{"x": 1, "y": 2}'),
        (rs.ToolResult("c", "t", Model()), '{"mode": "json"}'),
        (rs.ToolResult("c", "t", {1j}), '"{1j}"'),  # no JSON: its text stands in
        (rs.ToolResult("c", "t", error="boom"), "Error: boom"),
        (rs.ToolResult("c", "t", error="no", denied=True), "Denied: no"),
        (rs.ToolResult("c", "t", denied=True), "Denied: the call was not approved"),
    ],
)
def test_tool_message(result: rs.ToolResult, content: str) -> None:
    assert tool_message(result) == {
        "role": "tool",
        "tool_call_id": "c",
        "name": "t",
        "content": content,
    }

"""`output=` in every dialect's request body: the native field, the forced tool, the errors."""

from __future__ import annotations

import json
from importlib import import_module
from typing import Any

import pytest

import rxstream as rs
from rxstream.core.dialects.chat_input import OUTPUT_TOOL_DESCRIPTION
from rxstream.core.schema import output_spec, strict_schema, subset_schema
from rxstream.models import JSONObject

CITY: JSONObject = {
    "title": "City",
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 40},
        "mayor": {"anyOf": [{"type": "string"}, {"type": "null"}]},
    },
    "required": ["name"],
}
MESSAGES = [{"role": "user", "content": "A city?"}]
MODULES = {
    "openai-chat": "openai_chat",
    "openai-responses": "openai_responses",
    "anthropic": "anthropic",
    "gemini": "gemini",
    "cohere": "cohere",
    "ollama": "ollama",
    "bedrock": "bedrock",
}


def body(dialect: str, **options: Any) -> JSONObject:
    renderer = import_module(f"rxstream.core.dialects.{MODULES[dialect]}.request")
    spec = renderer.render_request("m", MESSAGES, options.pop("tools", None), **options)
    result: JSONObject = spec.body
    return result


NATIVE: list[Any] = [
    pytest.param(
        "openai-chat",
        lambda b: b["response_format"],
        {
            "type": "json_schema",
            "json_schema": {"name": "City", "schema": strict_schema(CITY), "strict": True},
        },
        id="openai-chat",
    ),
    pytest.param(
        "openai-responses",
        lambda b: b["text"],
        {
            "format": {
                "type": "json_schema",
                "name": "City",
                "schema": strict_schema(CITY),
                "strict": True,
            }
        },
        id="openai-responses",
    ),
    pytest.param(
        "anthropic",
        lambda b: b["output_config"],
        {"format": {"type": "json_schema", "schema": subset_schema(CITY)}},
        id="anthropic",
    ),
    pytest.param(
        "gemini",
        lambda b: b["generationConfig"],
        {"responseMimeType": "application/json", "responseJsonSchema": CITY},
        id="gemini",
    ),
    pytest.param(
        "cohere",
        lambda b: b["response_format"],
        {"type": "json_object", "json_schema": CITY},
        id="cohere",
    ),
    pytest.param("ollama", lambda b: b["format"], CITY, id="ollama"),
    pytest.param(
        "bedrock",
        lambda b: (
            b["outputConfig"]["textFormat"]["structure"]["jsonSchema"]
            | {
                "schema": json.loads(
                    b["outputConfig"]["textFormat"]["structure"]["jsonSchema"]["schema"]
                )
            }
        ),
        {"schema": subset_schema(CITY), "name": "City"},
        id="bedrock",
    ),
]


@pytest.mark.parametrize(("dialect", "field", "expected"), NATIVE)
def test_native_structured_output(dialect: str, field: Any, expected: JSONObject) -> None:
    assert field(body(dialect, output=CITY)) == expected
    assert "tools" not in body(dialect, output=CITY)


def test_strict_false_sends_the_schema_as_written() -> None:
    sent = body("openai-chat", output=rs.Output(CITY, strict=False))["response_format"]
    assert sent["json_schema"] == {"name": "City", "schema": CITY, "strict": False}
    sent = body("openai-responses", output=rs.Output(CITY, strict=False))["text"]["format"]
    assert (sent["schema"], sent["strict"]) == (CITY, False)


@pytest.mark.parametrize(
    ("dialect", "key", "own", "inside"),
    [
        ("openai-responses", "text", {"verbosity": "low"}, "format"),
        ("anthropic", "output_config", {"effort": "high"}, "format"),
        ("bedrock", "outputConfig", {"effort": "high"}, "textFormat"),
        ("gemini", "generationConfig", {"candidateCount": 1}, "responseJsonSchema"),
    ],
)
def test_the_callers_own_settings_stay_beside_the_format(
    dialect: str, key: str, own: JSONObject, inside: str
) -> None:
    sent = body(dialect, output=CITY, **{key: own})[key]
    assert set(sent) - {"responseMimeType"} == {*own, inside}
    assert {k: sent[k] for k in own} == own


FORCED: list[Any] = [
    pytest.param(
        "openai-chat",
        lambda b: (b["tools"][-1]["function"]["name"], b["tool_choice"]),
        ("City", {"type": "function", "function": {"name": "City"}}),
        id="openai-chat",
    ),
    pytest.param(
        "openai-responses",
        lambda b: (b["tools"][-1]["name"], b["tool_choice"]),
        ("City", {"type": "function", "name": "City"}),
        id="openai-responses",
    ),
    pytest.param(
        "anthropic",
        lambda b: (b["tools"][-1]["name"], b["tool_choice"]),
        ("City", {"type": "tool", "name": "City"}),
        id="anthropic",
    ),
    pytest.param(
        "gemini",
        lambda b: (
            b["tools"][0]["functionDeclarations"][-1]["name"],
            b["toolConfig"]["functionCallingConfig"],
        ),
        ("City", {"mode": "ANY", "allowedFunctionNames": ["City"]}),
        id="gemini",
    ),
    pytest.param(
        "cohere",
        lambda b: (b["tools"][-1]["function"]["name"], b["tool_choice"]),
        ("City", "REQUIRED"),
        id="cohere",
    ),
    pytest.param(
        "bedrock",
        lambda b: (b["toolConfig"]["tools"][-1]["toolSpec"]["name"], b["toolConfig"]["toolChoice"]),
        ("City", {"tool": {"name": "City"}}),
        id="bedrock",
    ),
]


@pytest.mark.parametrize(("dialect", "field", "expected"), FORCED)
def test_via_tool_forces_a_tool_whose_arguments_are_the_answer(
    dialect: str, field: Any, expected: Any
) -> None:
    sent = body(dialect, output=rs.Output(CITY, via="tool"))
    assert field(sent) == expected
    for native in ("response_format", "text", "output_config", "outputConfig", "format"):
        assert native not in sent
    assert "responseJsonSchema" not in sent.get("generationConfig", {})
    assert OUTPUT_TOOL_DESCRIPTION in json.dumps(sent)


def test_the_forced_tool_goes_after_the_callers_tools() -> None:
    weather = rs.Tool("get_weather", "The weather", {"type": "object", "properties": {}})
    sent = body("anthropic", output=rs.Output(CITY, via="tool"), tools=[weather])
    assert [t["name"] for t in sent["tools"]] == ["get_weather", "City"]
    assert sent["tools"][1]["input_schema"] == CITY


@pytest.mark.parametrize(
    ("dialect", "key"),
    [("openai-chat", "response_format"), ("cohere", "response_format"), ("ollama", "format")],
)
def test_the_format_field_given_twice_is_refused(dialect: str, key: str) -> None:
    with pytest.raises(ValueError, match=f"output= fills {key}; pass one or the other"):
        body(dialect, output=CITY, **{key: {"type": "json_object"}})


@pytest.mark.parametrize(
    ("dialect", "options", "words"),
    [
        ("ollama", {}, "Ollama cannot force a tool"),
        ("openai-chat", {"tool_choice": "auto"}, "cannot go with tool_choice='auto'"),
        ("openai-chat", {"tools": [rs.Tool("City")]}, "has one already"),
        ("cohere", {"tools": [rs.Tool("other")]}, "only as the one tool"),
    ],
)
def test_a_forced_tool_that_cannot_be_forced_says_why(
    dialect: str, options: dict[str, Any], words: str
) -> None:
    with pytest.raises(ValueError, match=words):
        body(dialect, output=rs.Output(CITY, via="tool"), **options)


def test_rs_request_keeps_the_resolved_output_on_the_request() -> None:
    request = rs.request(
        "ollama", model="m", messages=MESSAGES, output=rs.Output(CITY, name="town")
    )
    spec = request.extensions["rxstream.output"]
    assert spec == output_spec(rs.Output(CITY, name="town"))
    assert (spec.name, spec.via, spec.schema) == ("town", "native", CITY)
    plain = rs.request("ollama", model="m", messages=MESSAGES)
    assert "rxstream.output" not in plain.extensions


OPENAPI_CITY: JSONObject = {
    "title": "City",
    "type": "OBJECT",
    "properties": {
        "name": {"type": "STRING", "maxLength": 40},
        "mayor": {"type": "STRING", "nullable": True},
    },
    "propertyOrdering": ["name", "mayor"],
    "required": ["name"],
}


def test_gemini_with_openapi_sends_the_older_response_schema() -> None:
    sent = body("gemini", output=rs.Output(CITY, openapi=True))["generationConfig"]
    assert sent == {"responseMimeType": "application/json", "responseSchema": OPENAPI_CITY}


def test_gemini_with_openapi_declares_the_forced_tool_in_the_subset() -> None:
    weather = rs.Tool("get_weather", "The weather", {"type": "object", "properties": {}})
    sent = body("gemini", output=rs.Output(CITY, via="tool", openapi=True), tools=[weather])
    (mine, forced) = sent["tools"][0]["functionDeclarations"]
    assert mine == {
        "name": "get_weather",
        "description": "The weather",
        "parametersJsonSchema": weather.parameters,  # the caller's own tool, as written
    }
    assert forced["name"] == "City"
    assert forced["parameters"] == OPENAPI_CITY
    assert "parametersJsonSchema" not in forced


@pytest.mark.parametrize("dialect", [d for d in MODULES if d != "gemini"])
def test_openapi_changes_nothing_where_json_schema_is_the_only_form(dialect: str) -> None:
    assert body(dialect, output=rs.Output(CITY, openapi=True)) == body(dialect, output=CITY)

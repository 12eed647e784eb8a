"""The fake server answers `output=` requests with JSON that fits the schema, in every dialect.

The same request (a pydantic model, a msgspec Struct, a dataclass) goes through
`rs.chat` to `FakeLLMServer.echoing()` on 127.0.0.1 in each of the seven
provider dialects, natively and through a forced tool; the final text (or the
forced call's arguments) parsed with the type gives the same object
everywhere. The model has no defaults: the strict rewrites drop or move a
default (`strict_schema`, `subset_schema`), so for fields with one each
provider's fake answer fits what that provider was sent, which may differ.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import httpx
import msgspec
import pydantic
import pytest
import reactivex
import reactivex.operators as ops

import rxstream as rs
from rxstream.core.schema import OutputSpec
from rxstream.io.requests import send_request
from rxstream.testing import FakeLLMServer
from rxstream.testing._asked import read_asked
from tests.support.json_patch import apply

PROVIDERS = (
    "openai-chat",
    "openai-responses",
    "anthropic",
    "gemini",
    "cohere",
    "ollama",
    "bedrock",
)


class Address(pydantic.BaseModel):
    street: str
    zip: str


class City(pydantic.BaseModel):
    name: str
    population: int | None
    tags: list[str]
    addresses: list[Address]


class CityStruct(msgspec.Struct):
    name: str
    population: int | None
    tags: list[str]


@dataclasses.dataclass
class CityClass:
    name: str
    population: int | None
    tags: list[str]


@pytest.fixture(scope="module")
def server() -> Any:
    with FakeLLMServer.echoing() as running:
        yield running


def answer(server: FakeLLMServer, dialect: str, output: Any) -> tuple[str, OutputSpec]:
    """The JSON text answering `output=` in `dialect` (the text, or the forced call's arguments)."""
    root = f"http://127.0.0.1:{server.port}"
    base = f"{root}/v1" if dialect.startswith("openai") else root
    request = rs.request(
        dialect,
        model="fake-model",
        messages=[{"role": "user", "content": "A city, please."}],
        output=output,
        api_key="sk-fake",
        base_url=base,
    )
    spec: OutputSpec = request.extensions["rxstream.output"]
    with httpx.Client() as client:
        (message,) = (
            send_request(client, request).pipe(rs.accumulate_message(), ops.to_list()).run()
        )
    if spec.via == "tool":
        (call,) = [c for c in message.tool_calls if c.name == spec.name]
        assert message.finish_reason == "tool_calls"
        return call.arguments, spec
    assert message.finish_reason == "stop"
    return message.content, spec


CASES = [(d, "native") for d in PROVIDERS] + [(d, "tool") for d in PROVIDERS if d != "ollama"]


@pytest.mark.parametrize(("dialect", "via"), CASES, ids=[f"{d}-{v}" for d, v in CASES])
def test_every_provider_gives_the_same_typed_object(
    server: FakeLLMServer, dialect: str, via: Any
) -> None:
    text, spec = answer(server, dialect, rs.Output(City, via=via))
    assert spec.via == via
    expected = City(
        name="example name",
        population=1,
        tags=["example tags"],
        addresses=[Address(street="example street", zip="example zip")],
    )
    assert City.model_validate_json(text) == expected


@pytest.mark.parametrize(("dialect", "via"), CASES, ids=[f"{d}-{v}" for d, v in CASES])
def test_one_typed_pipeline_whichever_way_the_request_went(
    server: FakeLLMServer, dialect: str, via: Any
) -> None:
    """`rs.partial_object(output)`, `rs.elements`, `rs.json_patches`, `rs.object_text` with
    `output=` read the text or the forced call."""
    root = f"http://127.0.0.1:{server.port}"
    request = rs.request(
        dialect,
        model="fake-model",
        messages=[{"role": "user", "content": "A city, please."}],
        output=rs.Output(City, via=via),
        api_key="sk-fake",
        base_url=f"{root}/v1" if dialect.startswith("openai") else root,
    )
    spec: OutputSpec = request.extensions["rxstream.output"]
    with httpx.Client() as client:
        deltas = send_request(client, request).pipe(ops.to_list()).run()
    expected = City(
        name="example name",
        population=1,
        tags=["example tags"],
        addresses=[Address(street="example street", zip="example zip")],
    )
    for output in (rs.Output(City, via=via), spec):
        *snapshots, city = (
            reactivex.from_iterable(deltas).pipe(rs.partial_object(output), ops.to_list()).run()
        )
        assert city == expected
        assert all(isinstance(s, rs.Partial) for s in snapshots)  # none when it came whole
        addresses = (
            reactivex.from_iterable(deltas)
            .pipe(rs.elements("/addresses", item=Address, output=output), ops.to_list())
            .run()
        )
        assert addresses == expected.addresses
        # The JSON Patches and useObject's text come from the same answer, either way.
        source = reactivex.from_iterable(deltas)
        patches = source.pipe(rs.json_patches(output=output), ops.to_list()).run()
        rebuilt = None
        for patch in patches:
            rebuilt = apply(rebuilt, patch.ops)
        assert City.model_validate(rebuilt) == expected
        pieces = source.pipe(rs.object_text(output=output), ops.to_list()).run()
        assert City.model_validate_json("".join(pieces)) == expected


@pytest.mark.parametrize(
    ("target", "parse"),
    [
        (CityStruct, lambda text: msgspec.json.decode(text, type=CityStruct)),
        (CityClass, lambda text: pydantic.TypeAdapter(CityClass).validate_json(text)),
    ],
    ids=["msgspec", "dataclass"],
)
def test_other_types_too(server: FakeLLMServer, target: Any, parse: Any) -> None:
    parsed = [parse(answer(server, dialect, target)[0]) for dialect in ("openai-chat", "bedrock")]
    assert (
        parsed[0] == parsed[1] == target(name="example name", population=1, tags=["example tags"])
    )


SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
READ: list[Any] = [
    (
        "openai-chat",
        {"response_format": {"type": "json_schema", "json_schema": {"schema": SCHEMA}}},
        SCHEMA,
    ),
    ("openai-chat", {"response_format": {"type": "json_object"}}, {"type": "object"}),
    ("openai-chat", {"response_format": {"type": "text"}}, None),
    ("openai-responses", {"text": {"format": {"type": "json_schema", "schema": SCHEMA}}}, SCHEMA),
    ("openai-responses", {"text": {"format": {"type": "text"}}}, None),
    ("anthropic", {"output_config": {"format": {"type": "json_schema", "schema": SCHEMA}}}, SCHEMA),
    ("anthropic", {"output_format": {"type": "json_schema", "schema": SCHEMA}}, SCHEMA),
    ("anthropic", {"output_config": {"effort": "low"}}, None),
    ("gemini", {"generationConfig": {"responseJsonSchema": SCHEMA}}, SCHEMA),
    ("gemini", {"generationConfig": {"responseSchema": {"type": "OBJECT"}}}, {"type": "OBJECT"}),
    ("gemini", {"generationConfig": {"responseMimeType": "application/json"}}, {"type": "object"}),
    ("gemini", {"generationConfig": {"temperature": 1}}, None),
    ("cohere", {"response_format": {"type": "json_object", "json_schema": SCHEMA}}, SCHEMA),
    ("cohere", {"response_format": {"type": "json_object"}}, {"type": "object"}),
    ("cohere", {"response_format": {"type": "text"}}, None),
    ("ollama", {"format": SCHEMA}, SCHEMA),
    ("ollama", {"format": "json"}, {"type": "object"}),
    ("ollama", {}, None),
    (
        "bedrock",
        {
            "outputConfig": {
                "textFormat": {"structure": {"jsonSchema": {"schema": json.dumps(SCHEMA)}}}
            }
        },
        SCHEMA,
    ),
    (
        "bedrock",
        {"outputConfig": {"textFormat": {"structure": {"jsonSchema": {"schema": "{not json"}}}}},
        {"type": "object"},
    ),
    ("bedrock", {"outputConfig": {"effort": "low"}}, None),
    ("ai-sdk", {"format": SCHEMA}, None),
]


@pytest.mark.parametrize(("dialect", "body", "expected"), READ)
def test_the_schema_is_read_from_each_dialects_own_field(
    dialect: str, body: dict[str, Any], expected: Any
) -> None:
    assert read_asked(dialect, "/", {"model": "m", **body}).output == expected


def test_a_conversation_ending_in_tool_results_still_answers_in_json(server: FakeLLMServer) -> None:
    root = f"http://127.0.0.1:{server.port}"
    messages: list[Any] = [
        {"role": "user", "content": "A city?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "look", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "Paris"},
    ]
    with httpx.Client() as client:
        (message,) = (
            rs.chat(
                client,
                "openai-chat",
                model="fake-model",
                messages=messages,
                output=SCHEMA,
                api_key="sk-fake",
                base_url=f"{root}/v1",
            )
            .pipe(rs.accumulate_message(), ops.to_list())
            .run()
        )
    assert json.loads(message.content) == {"n": 1}


@pytest.mark.parametrize("via", ["native", "tool"])
def test_gemini_answers_the_older_response_schema_too(server: FakeLLMServer, via: Any) -> None:
    output = rs.Output(City, via=via, openapi=True)
    with httpx.Client() as client:
        city: Any = (
            rs.chat(
                client,
                "gemini",
                model="fake-model",
                messages=[{"role": "user", "content": "A city, please."}],
                output=output,
                api_key="sk-fake",
                base_url=f"http://127.0.0.1:{server.port}",
            )
            .pipe(rs.partial_object(output))
            .pipe(ops.last())
            .run()
        )
    assert city.name == "example name"
    assert city.addresses == [Address(street="example street", zip="example zip")]

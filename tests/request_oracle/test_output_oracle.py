"""The official SDKs' structured-output helpers as oracle for `rs.request(..., output=Model)`.

Where an SDK has its own helper (openai's `response_format=Model` and
`text_format=Model`, anthropic's `output_format=Model`, google-genai's
`response_json_schema`, ollama's `format=Model.model_json_schema()`), the same
pydantic model goes once through the SDK, pointed at a loopback
`FakeLLMServer` that records what arrives, and once through `rs.request`; the
bodies must be equal field for field (key order aside). Cohere and Bedrock
have no helper that takes a type: their SDKs send the dict rxstream makes, which
checks the field names and shapes (botocore validates against its service
model). Every deliberate difference is said where it is made.
"""

from __future__ import annotations

import enum
import inspect
import json
from typing import Any, Literal

import pydantic
import pytest

import rxstream as rs
from tests.support.sdk_oracle import KEY, sdk_request


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Address(pydantic.BaseModel):
    street: str
    zip: str = pydantic.Field(pattern=r"^\d{5}$", description="Five digits")


class Person(pydantic.BaseModel):
    """Someone the answer is about."""

    name: str = pydantic.Field(min_length=1)
    age: int = pydantic.Field(ge=0, le=150)
    email: str | None = None
    tags: list[str] = pydantic.Field(default_factory=list, max_length=5)
    home: Address
    work: Address | None = pydantic.Field(default=None, description="Where they work")
    color: Color = Color.RED
    kind: Literal["a", "b"] = "a"


MESSAGES: list[Any] = [{"role": "user", "content": "Who is Ada?"}]


def ours(dialect: str, **options: Any) -> Any:
    request = rs.request(
        dialect,
        model="m-1",
        messages=MESSAGES,
        output=Person,
        api_key=KEY,
        base_url="http://127.0.0.1",
        **options,
    )
    return json.loads(request.content)


def test_openai_chat_response_format() -> None:
    openai = pytest.importorskip("openai")

    def send(root: str) -> Any:
        client = openai.OpenAI(api_key=KEY, base_url=root, max_retries=0)
        with client.chat.completions.stream(
            model="m-1", messages=MESSAGES, response_format=Person
        ) as stream:
            return list(stream)

    theirs = sdk_request(send).json
    # The SDK's stream helper asks for no usage; rxstream always does (its usage contract).
    assert ours("openai-chat", stream_options=None) == theirs


def test_openai_responses_text_format() -> None:
    openai = pytest.importorskip("openai")

    def send(root: str) -> Any:
        client = openai.OpenAI(api_key=KEY, base_url=root, max_retries=0)
        with client.responses.stream(model="m-1", input=MESSAGES, text_format=Person) as stream:
            return list(stream)

    assert ours("openai-responses") == sdk_request(send).json


def test_anthropic_output_format() -> None:
    anthropic = pytest.importorskip("anthropic")

    client = anthropic.Anthropic(api_key=KEY, max_retries=0)
    if "output_format" not in inspect.signature(client.messages.stream).parameters:
        pytest.skip("this anthropic SDK has no output_format= (structured outputs)")

    def send(root: str) -> Any:
        client = anthropic.Anthropic(api_key=KEY, base_url=root, max_retries=0)
        with client.messages.stream(
            model="m-1", max_tokens=4096, messages=MESSAGES, output_format=Person
        ) as stream:
            return list(stream)

    theirs = sdk_request(send)
    assert ours("anthropic") == theirs.json
    # Structured outputs are no beta: the SDK sends no `anthropic-beta` header for them, nor
    # does rxstream (whose `anthropic-version` stays its default, see test_oracle.py).
    assert "anthropic-beta" not in theirs.headers
    request = rs.request("anthropic", model="m-1", messages=MESSAGES, output=Person, api_key=KEY)
    assert "anthropic-beta" not in request.headers


def test_gemini_response_json_schema(monkeypatch: pytest.MonkeyPatch) -> None:
    genai = pytest.importorskip("google.genai")
    from google.genai import types

    for name in ("GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GEMINI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)

    def send(root: str) -> Any:
        client = genai.Client(api_key=KEY, http_options=types.HttpOptions(base_url=root))
        config = types.GenerateContentConfig(
            response_mime_type="application/json",
            response_json_schema=Person.model_json_schema(),
        )
        return list(
            client.models.generate_content_stream(
                model="m-1", contents="Who is Ada?", config=config
            )
        )

    assert ours("gemini") == sdk_request(send).json


def test_ollama_format() -> None:
    ollama = pytest.importorskip("ollama")

    def send(root: str) -> Any:
        client = ollama.Client(host=root)
        return client.chat(
            model="m-1", messages=MESSAGES, stream=True, format=Person.model_json_schema()
        )

    theirs = sdk_request(send).json
    if theirs.get("tools") == []:
        del theirs["tools"]  # the SDK sends an empty `tools`; rxstream only the fields asked for
    assert ours("ollama") == theirs


def test_cohere_response_format() -> None:
    cohere = pytest.importorskip("cohere")
    sent = ours("cohere")

    def send(root: str) -> Any:
        client = cohere.ClientV2(api_key=KEY, base_url=root)
        return client.chat_stream(
            model="m-1", messages=MESSAGES, response_format=sent["response_format"]
        )

    assert sent["response_format"] == {
        "type": "json_object",
        "json_schema": Person.model_json_schema(),
    }
    assert sent == sdk_request(send).json


@pytest.mark.usefixtures("aws_env")
def test_bedrock_output_config() -> None:
    boto3 = pytest.importorskip("boto3")
    from botocore.config import Config  # type: ignore[import-untyped]

    sent = ours("bedrock")

    def send(root: str) -> Any:
        client = boto3.client(
            "bedrock-runtime",
            region_name="us-west-2",
            endpoint_url=root,
            config=Config(retries={"total_max_attempts": 1}),
        )
        return client.converse_stream(
            modelId="m-1",
            messages=[{"role": "user", "content": [{"text": "Who is Ada?"}]}],
            outputConfig=sent["outputConfig"],
        )

    text_format = sent["outputConfig"]["textFormat"]
    schema = json.loads(text_format["structure"]["jsonSchema"]["schema"])
    # The subset Anthropic's structured outputs take (Bedrock's follow it): every object closed.
    assert schema["additionalProperties"] is False
    assert schema["$defs"]["Address"]["additionalProperties"] is False
    assert sent == sdk_request(send).json


def camel(value: Any, *, names: bool = False) -> Any:
    """`value` with google-genai's snake_case schema keywords in the API's camelCase.

    The keys of a `properties` object (`names`) are the model's field names, kept.
    """
    if isinstance(value, list):
        return [camel(v) for v in value]
    if not isinstance(value, dict):
        return value
    out = {}
    for key, item in value.items():
        head, *rest = key.split("_")
        name = key if names else head + "".join(part.title() for part in rest)
        out[name] = camel(item, names=name == "properties" and not names)
    return out


def test_gemini_response_schema_with_openapi(monkeypatch: pytest.MonkeyPatch) -> None:
    """`Output(openapi=True)` sends google-genai's `response_schema=Model` body, field for field.

    Deliberate differences, undone before comparing:
    - google-genai writes some keywords in snake_case (`min_length`, `max_items`,
      `property_ordering`); rxstream writes the API reference's camelCase (`minLength`, ...).
      Gemini's JSON reader takes both spellings.
    - google-genai drops the keywords beside a property's lone `$ref` (`color`'s
      `default: "red"`) and keeps them beside a `$ref` reached through `anyOf` (`work`'s
      description); rxstream keeps them in both places.
    """
    genai = pytest.importorskip("google.genai")
    from google.genai import types

    for name in ("GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GEMINI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)

    def send(root: str) -> Any:
        client = genai.Client(api_key=KEY, http_options=types.HttpOptions(base_url=root))
        config = types.GenerateContentConfig(
            response_mime_type="application/json", response_schema=Person
        )
        return list(
            client.models.generate_content_stream(
                model="m-1", contents="Who is Ada?", config=config
            )
        )

    theirs = camel(sdk_request(send).json)
    request = rs.request(
        "gemini",
        model="m-1",
        messages=MESSAGES,
        output=rs.Output(Person, openapi=True),
        api_key=KEY,
        base_url="http://127.0.0.1",
    )
    sent = json.loads(request.content)
    assert "responseJsonSchema" not in sent["generationConfig"]
    assert sent["generationConfig"]["responseSchema"]["properties"]["color"].pop("default") == "red"
    assert sent == theirs

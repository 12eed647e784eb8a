"""`rxstream chat --dialect NAME`: each provider's request (path, auth header, key variable, body),
built without a network, then sent to a FakeLLMServer that answers at that API's real path."""

from __future__ import annotations

import re
from typing import Any

import pytest

from rxstream.cli._apis import APIS, Ask, build, join_url, ollama_host
from rxstream.cli._app import EXIT_ERROR
from rxstream.testing.server import FakeLLMServer, Scenario

from .conftest import Run

KEY = "sk-test-0123456789abcdef-secret"
OTHER = "sk-other-9876543210fedcba-secret"

# ----------------------------------------------------------------------------- requests


CASES: list[tuple[str, dict[str, str], str, dict[str, str], dict[str, Any]]] = [
    (
        "openai-chat",
        {"OPENAI_API_KEY": KEY},
        "https://api.openai.com/v1/chat/completions",
        {"Authorization": f"Bearer {KEY}"},
        {
            "model": "gpt-4o-mini",
            "messages": [{"role": "user", "content": "Hi"}],
            "stream": True,
            "stream_options": {"include_usage": True},
        },
    ),
    (
        "openai-responses",
        {"OPENAI_API_KEY": KEY},
        "https://api.openai.com/v1/responses",
        {"Authorization": f"Bearer {KEY}"},
        {"model": "gpt-4o-mini", "input": [{"role": "user", "content": "Hi"}], "stream": True},
    ),
    (
        "anthropic",
        {"ANTHROPIC_API_KEY": KEY},
        "https://api.anthropic.com/v1/messages",
        {"x-api-key": KEY, "anthropic-version": "2023-06-01"},
        {
            "model": "claude-haiku-4-5",
            "max_tokens": 4096,
            "messages": [{"role": "user", "content": "Hi"}],
            "stream": True,
        },
    ),
    (
        "gemini",
        {"GEMINI_API_KEY": KEY},
        # v1, as the google-genai SDK sends by default.
        "https://generativelanguage.googleapis.com/v1/models/gemini-2.5-flash"
        ":streamGenerateContent?alt=sse",
        {"x-goog-api-key": KEY},
        {"contents": [{"role": "user", "parts": [{"text": "Hi"}]}]},
    ),
    (
        "cohere",
        {"CO_API_KEY": KEY},
        "https://api.cohere.com/v2/chat",
        {"Authorization": f"Bearer {KEY}"},
        {
            "model": "command-a-03-2025",
            "messages": [{"role": "user", "content": "Hi"}],
            "stream": True,
        },
    ),
    (
        "ollama",
        {},
        # The ollama SDK's default host.
        "http://127.0.0.1:11434/api/chat",
        {},
        {
            "model": "llama3.2",
            "messages": [{"role": "user", "content": "Hi"}],
            "stream": True,
        },
    ),
    (
        "bedrock",
        {"AWS_BEARER_TOKEN_BEDROCK": KEY, "AWS_REGION": "eu-west-3"},
        "https://bedrock-runtime.eu-west-3.amazonaws.com/model/amazon.nova-lite-v1%3A0"
        "/converse-stream",
        {"Authorization": f"Bearer {KEY}"},
        {
            "messages": [{"role": "user", "content": [{"text": "Hi"}]}],
            "inferenceConfig": {"maxTokens": 4096},
        },
    ),
]


@pytest.mark.parametrize(
    ("api", "env", "url", "headers", "body"), CASES, ids=[case[0] for case in CASES]
)
def test_the_default_request_of_each_api(
    api: str, env: dict[str, str], url: str, headers: dict[str, str], body: dict[str, Any]
) -> None:
    request = build(api, Ask("Hi"), base_url=None, env=env)
    assert (request.url, request.headers, request.body) == (url, headers, body)
    assert request.api == api
    assert request.key == (next(iter(env)) if api != "ollama" else None)
    assert request.wire == {"ollama": "ndjson", "bedrock": "eventstream"}.get(api, "sse")


def test_every_api_is_in_the_table() -> None:
    assert sorted(APIS) == sorted(case[0] for case in CASES)


EVERYTHING = Ask("Hi", model="m/x:1", system="Be brief.", thinking=True, max_tokens=2000)

# What the system message, --thinking and --max-tokens add to each body.
OPTIONS: dict[str, dict[str, Any]] = {
    "openai-chat": {
        "model": "m/x:1",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Hi"},
        ],
        "stream": True,
        "stream_options": {"include_usage": True},
        "max_tokens": 2000,
        "reasoning_effort": "medium",
    },
    "openai-responses": {
        "model": "m/x:1",
        "input": [{"role": "user", "content": "Hi"}],
        "stream": True,
        "instructions": "Be brief.",
        "max_output_tokens": 2000,
        "reasoning": {"effort": "medium", "summary": "auto"},
    },
    "anthropic": {
        "model": "m/x:1",
        "max_tokens": 2000,
        "messages": [{"role": "user", "content": "Hi"}],
        "stream": True,
        "system": "Be brief.",
        "thinking": {"type": "enabled", "budget_tokens": 1024},
    },
    "gemini": {
        "contents": [{"role": "user", "parts": [{"text": "Hi"}]}],
        "systemInstruction": {"parts": [{"text": "Be brief."}]},
        "generationConfig": {"maxOutputTokens": 2000, "thinkingConfig": {"includeThoughts": True}},
    },
    "cohere": {
        "model": "m/x:1",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Hi"},
        ],
        "stream": True,
        "max_tokens": 2000,
        "thinking": {"type": "enabled"},
    },
    "ollama": {
        "model": "m/x:1",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Hi"},
        ],
        "stream": True,
        "think": True,
        "options": {"num_predict": 2000},
    },
    "bedrock": {
        "messages": [{"role": "user", "content": [{"text": "Hi"}]}],
        "inferenceConfig": {"maxTokens": 2000},
        "system": [{"text": "Be brief."}],
        "additionalModelRequestFields": {"thinking": {"type": "enabled", "budget_tokens": 1024}},
    },
}


@pytest.mark.parametrize("api", sorted(OPTIONS))
def test_system_thinking_and_max_tokens_per_api(api: str) -> None:
    request = build(api, EVERYTHING, base_url="http://127.0.0.1:1/r", env={})
    assert request.body == OPTIONS[api]
    assert request.model == "m/x:1"
    # The model is one path segment where it is in the path.
    if api == "gemini":
        assert (
            request.url == "http://127.0.0.1:1/r/v1/models/m%2Fx%3A1:streamGenerateContent?alt=sse"
        )
    if api == "bedrock":
        assert request.url == "http://127.0.0.1:1/r/model/m%2Fx%3A1/converse-stream"


@pytest.mark.parametrize(
    ("api", "env", "header", "value", "key"),
    [
        # The google-genai SDK: GOOGLE_API_KEY wins when both are set.
        (
            "gemini",
            {"GEMINI_API_KEY": OTHER, "GOOGLE_API_KEY": KEY},
            "x-goog-api-key",
            KEY,
            "GOOGLE_API_KEY",
        ),
        # The cohere SDK: CO_API_KEY first, COHERE_API_KEY accepted.
        ("cohere", {"COHERE_API_KEY": KEY}, "Authorization", f"Bearer {KEY}", "COHERE_API_KEY"),
        (
            "cohere",
            {"COHERE_API_KEY": OTHER, "CO_API_KEY": KEY},
            "Authorization",
            f"Bearer {KEY}",
            "CO_API_KEY",
        ),
        # The anthropic SDK: ANTHROPIC_AUTH_TOKEN as a bearer token when there is no key.
        (
            "anthropic",
            {"ANTHROPIC_AUTH_TOKEN": KEY},
            "Authorization",
            f"Bearer {KEY}",
            "ANTHROPIC_AUTH_TOKEN",
        ),
        (
            "anthropic",
            {"ANTHROPIC_AUTH_TOKEN": OTHER, "ANTHROPIC_API_KEY": KEY},
            "x-api-key",
            KEY,
            "ANTHROPIC_API_KEY",
        ),
        # The ollama SDK sends OLLAMA_API_KEY (ollama.com) when it is set.
        ("ollama", {"OLLAMA_API_KEY": KEY}, "Authorization", f"Bearer {KEY}", "OLLAMA_API_KEY"),
    ],
    ids=[
        "gemini-google-first",
        "cohere-alt",
        "cohere-co-first",
        "anthropic-token",
        "anthropic-key-first",
        "ollama-cloud",
    ],
)
def test_which_key_is_sent(
    api: str, env: dict[str, str], header: str, value: str, key: str
) -> None:
    request = build(api, Ask("Hi"), base_url=None, env=env)
    assert request.headers[header] == value
    assert request.key == key
    assert OTHER not in str(request.headers)


@pytest.mark.parametrize(
    ("api", "env", "base", "url"),
    [
        (
            "openai-chat",
            {"OPENAI_BASE_URL": "http://127.0.0.1:1/v1"},
            None,
            "http://127.0.0.1:1/v1/chat/completions",
        ),
        (
            "openai-responses",
            {"OPENAI_BASE_URL": "http://e.test/v1"},
            "http://127.0.0.1:2/v1/",
            "http://127.0.0.1:2/v1/responses",
        ),
        (
            "anthropic",
            {"ANTHROPIC_BASE_URL": "http://e.test/proxy/"},
            None,
            "http://e.test/proxy/v1/messages",
        ),
        (
            "gemini",
            {"GOOGLE_GEMINI_BASE_URL": "http://e.test"},
            None,
            "http://e.test/v1/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
        ),
        ("cohere", {"CO_API_URL": "http://e.test"}, None, "http://e.test/v2/chat"),
        ("ollama", {"OLLAMA_HOST": "0.0.0.0"}, None, "http://0.0.0.0:11434/api/chat"),
        ("ollama", {"OLLAMA_HOST": "gpu.lan:8080"}, None, "http://gpu.lan:8080/api/chat"),
        (
            "bedrock",
            {
                "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": "http://signer.lan",
                "AWS_ENDPOINT_URL": "http://x",
            },
            None,
            "http://signer.lan/model/amazon.nova-lite-v1%3A0/converse-stream",
        ),
        (
            "bedrock",
            {"AWS_ENDPOINT_URL": "http://signer.lan"},
            None,
            "http://signer.lan/model/amazon.nova-lite-v1%3A0/converse-stream",
        ),
        (
            "bedrock",
            {"AWS_DEFAULT_REGION": "ap-south-1", "AWS_BEARER_TOKEN_BEDROCK": KEY},
            None,
            "https://bedrock-runtime.ap-south-1.amazonaws.com/model/amazon.nova-lite-v1%3A0/converse-stream",
        ),
        (
            "bedrock",
            {"AWS_BEARER_TOKEN_BEDROCK": KEY},
            None,
            "https://bedrock-runtime.us-east-1.amazonaws.com/model/amazon.nova-lite-v1%3A0/converse-stream",
        ),
    ],
)
def test_base_urls_from_the_option_the_environment_or_the_default(
    api: str, env: dict[str, str], base: str | None, url: str
) -> None:
    assert build(api, Ask("Hi"), base_url=base, env=env).url == url


def test_openai_model_variable_and_gemini_model_prefix() -> None:
    env = {"OPENAI_MODEL": "gpt-x"}
    assert build("openai-responses", Ask("Hi"), base_url=None, env=env).body["model"] == "gpt-x"
    assert build("openai-chat", Ask("Hi", model="y"), base_url=None, env=env).body["model"] == "y"
    gemini = build("gemini", Ask("Hi", model="models/gemini-2.5-pro"), base_url=None, env={})
    assert "/models/gemini-2.5-pro:streamGenerateContent" in gemini.url


def test_no_usage_is_for_openai_chat() -> None:
    body = build("openai-chat", Ask("Hi", usage=False), base_url=None, env={}).body
    assert "stream_options" not in body


def test_bedrock_endpoint_without_a_key_sends_no_authorization() -> None:
    request = build("bedrock", Ask("Hi"), base_url="http://127.0.0.1:1", env={})
    assert request.headers == {}
    assert request.key is None


@pytest.mark.parametrize(
    ("api", "ask", "base", "env", "says"),
    [
        ("bedrock", Ask("Hi"), None, {}, "SigV4"),
        ("bedrock", Ask("Hi"), None, {"AWS_ACCESS_KEY_ID": "AKIA0000"}, "AWS_BEARER_TOKEN_BEDROCK"),
        ("anthropic", Ask("Hi", thinking=True, max_tokens=1024), None, {}, "below --max-tokens"),
        ("bedrock", Ask("Hi", thinking=True, max_tokens=500), "http://h", {}, "below --max-tokens"),
        ("cohere", Ask("Hi"), "ftp://user:pw@host/x?key=1", {}, "got 'ftp://host/x'"),
        ("nope", Ask("Hi"), None, {}, "unknown API 'nope'"),
    ],
    ids=[
        "bedrock-unsigned",
        "bedrock-access-keys",
        "anthropic-budget",
        "bedrock-budget",
        "scheme",
        "unknown",
    ],
)
def test_requests_that_cannot_be_built(
    api: str, ask: Ask, base: str | None, env: dict[str, str], says: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(says)) as info:
        build(api, ask, base_url=base, env=env)
    assert "pw" not in str(info.value)


@pytest.mark.parametrize(
    ("host", "url"),
    [
        ("localhost", "http://localhost:11434"),
        ("127.0.0.1:9", "http://127.0.0.1:9"),
        ("http://h", "http://h:80"),
        ("https://h:8443/", "https://h:8443"),
        ("h/prefix/", "http://h:11434/prefix"),
        ("[::1]", "http://[::1]:11434"),
        ("[::1]:7", "http://[::1]:7"),
        (":7", "http://localhost:7"),
    ],
)
def test_ollama_host_is_read_as_the_sdk_reads_it(host: str, url: str) -> None:
    assert ollama_host(host) == url


def test_join_url_merges_the_queries() -> None:
    assert join_url("http://h/p?a=1", "/x?alt=sse") == "http://h/p/x?a=1&alt=sse"


# ----------------------------------------------------------------------------- against a server


def base_for(server: FakeLLMServer, api: str) -> str:
    root = f"http://127.0.0.1:{server.port}"
    return f"{root}/v1" if api.startswith("openai") else root


PATHS = {
    "openai-chat": "/v1/chat/completions",
    "openai-responses": "/v1/responses",
    "anthropic": "/v1/messages",
    "gemini": "/v1/models/m1:streamGenerateContent?alt=sse",
    "cohere": "/v2/chat",
    "ollama": "/api/chat",
    "bedrock": "/model/m1/converse-stream",
}
KEY_VARIABLE = {
    "openai-chat": "OPENAI_API_KEY",
    "openai-responses": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "gemini": "GEMINI_API_KEY",
    "cohere": "CO_API_KEY",
    "ollama": "OLLAMA_API_KEY",
    "bedrock": "AWS_BEARER_TOKEN_BEDROCK",
}
AUTH = {
    "anthropic": ("x-api-key", KEY),
    "gemini": ("x-goog-api-key", KEY),
}


@pytest.mark.parametrize("api", sorted(PATHS))
def test_chat_streams_from_each_api_and_never_prints_the_key(rxstream: Run, api: str) -> None:
    with FakeLLMServer(Scenario.text("Hel", "lo, you")) as server:
        done = rxstream(
            "chat",
            "hi there",
            "--dialect",
            api,
            "--model",
            "m1",
            "--base-url",
            base_for(server, api),
            **{KEY_VARIABLE[api]: KEY},
        )
        [request] = server.requests
        title = f"rxstream chat: m1 via {base_for(server, api)} ({api})\n"
    assert done.code == 0, done.err
    assert done.out.startswith(title)
    assert "answer: Hello, you" in done.out
    assert "finish: stop" in done.footer
    assert KEY not in done.out + done.err
    assert request.path == PATHS[api]
    header, value = AUTH.get(api, ("authorization", f"Bearer {KEY}"))
    assert request.headers[header] == value
    assert request.json == build(api, Ask("hi there", model="m1"), base_url="http://h", env={}).body


@pytest.mark.parametrize("api", sorted(PATHS))
def test_a_key_echoed_back_is_redacted_in_every_api(rxstream: Run, api: str) -> None:
    # In an HTTP error in the provider's shape, and inside the streamed text.
    scenarios = (
        Scenario.error(401, f"Incorrect API key provided: {KEY}."),
        Scenario.text(f"key {KEY}!"),
    )
    with FakeLLMServer(*scenarios) as server:
        args = ("chat", "x", "--dialect", api, "--model", "m1", "--base-url", base_for(server, api))
        failed = rxstream(*args, **{KEY_VARIABLE[api]: KEY})
        echoed = rxstream(*args, "--debug", **{KEY_VARIABLE[api]: KEY})
    assert failed.code == EXIT_ERROR
    assert "HTTP 401" in failed.err
    assert "Incorrect API key provided: [redacted]" in failed.err
    assert echoed.code == 0, echoed.err
    assert "answer: key [redacted]!" in echoed.out
    for done in (failed, echoed):
        assert KEY not in done.out + done.err


def test_bedrock_without_a_key_or_an_endpoint_says_why(rxstream: Run) -> None:
    done = rxstream("chat", "x", "--dialect", "bedrock", AWS_ACCESS_KEY_ID="AKIA0123456789")
    assert done.code == EXIT_ERROR
    assert done.err.startswith("rxstream: error: AWS Bedrock signs requests with SigV4")
    assert done.err.count("\n") == 1


def test_chat_thinking_and_max_tokens_reach_the_server(rxstream: Run) -> None:
    with FakeLLMServer(Scenario.text("ok")) as server:
        done = rxstream(
            "chat",
            "x",
            "--dialect",
            "anthropic",
            "--thinking",
            "--max-tokens",
            "3000",
            "--system",
            "s",
            "--base-url",
            base_for(server, "anthropic"),
        )
        [request] = server.requests
    assert done.code == 0, done.err
    assert request.json is not None
    assert request.json["thinking"] == {"type": "enabled", "budget_tokens": 1024}
    assert (request.json["max_tokens"], request.json["system"]) == (3000, "s")
    assert "x-api-key" not in request.headers  # no key in the environment, none sent


@pytest.mark.parametrize("model", ["", "  "], ids=["empty", "blank"])
def test_an_empty_model_is_refused_not_replaced_by_the_default(rxstream: Run, model: str) -> None:
    with FakeLLMServer(Scenario.text("ok")) as server:
        done = rxstream("chat", "Hi", "-m", model, "--base-url", server.base_url)
        assert server.requests == []  # refused before anything is sent
    assert done.code == EXIT_ERROR
    assert done.err == f"rxstream: error: --model must be a non-empty model name, got {model!r}\n"


def test_max_tokens_must_be_positive(rxstream: Run) -> None:
    with pytest.raises(SystemExit) as exit_:
        rxstream("chat", "x", "--max-tokens", "0")
    assert exit_.value.code == 2


def test_chat_help_lists_every_api(rxstream: Run, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        rxstream("chat", "--help")
    assert exit_.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    for api in APIS.values():
        assert f"{api.name}: POST {{base}}{api.path} key: " in text
        for name in (*api.key_variables, *api.base_variables, *api.model_variables):
            assert f"${name}" in text
        assert api.default_model in text
        assert f"--thinking: {api.thinking}" in text
    for needle in (
        "SigV4",
        "AWS_BEARER_TOKEN_BEDROCK",
        "--thinking",
        "rxstream[bedrock]",
        "--max-tokens N",
        "x-goog-api-key",
    ):
        assert needle in text


def test_chat_without_a_key_warns_and_sends_none(rxstream: Run) -> None:
    with FakeLLMServer(Scenario.text("Hello")) as server:
        done = rxstream("chat", "hi", "--plain", OPENAI_BASE_URL=server.base_url)
        (request,) = server.requests
    assert done.code == 0
    assert done.err.startswith("rxstream: warning: no API key for openai-chat: set OPENAI_API_KEY")
    assert "authorization" not in request.headers
    assert "Hello" in done.out


def test_chat_with_a_key_does_not_warn(rxstream: Run) -> None:
    with FakeLLMServer(Scenario.text("Hello")) as server:
        done = rxstream(
            "chat", "hi", "--plain", OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=KEY
        )
    assert done.code == 0
    assert "warning" not in done.err


def test_chat_reads_the_prompt_from_stdin(rxstream: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO("a question\nover two lines\n"))
    with FakeLLMServer(Scenario.text("Hello")) as server:
        done = rxstream("chat", "-", "--plain", OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=KEY)
        (request,) = server.requests
    assert done.code == 0
    assert request.json["messages"] == [{"role": "user", "content": "a question\nover two lines\n"}]


def test_bedrock_with_aws_credentials_is_signed(rxstream: Run) -> None:
    pytest.importorskip("botocore")
    with FakeLLMServer() as server:
        done = rxstream(
            "chat",
            "hi",
            "--plain",
            "--dialect",
            "bedrock",
            "--base-url",
            f"http://127.0.0.1:{server.port}",
            AWS_ACCESS_KEY_ID="AKIDEXAMPLE0000",
            AWS_SECRET_ACCESS_KEY="secret-example-0000",
            AWS_REGION="eu-west-1",
        )
        (request,) = server.requests
    assert done.code == 0, done.err
    assert request.headers["authorization"].startswith(
        "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE0000/"
    )
    assert "/eu-west-1/bedrock/aws4_request" in request.headers["authorization"]
    assert "secret-example-0000" not in done.out + done.err

"""The request `rxstream chat --dialect NAME` sends: each provider's path, auth header, key, body.

Pure: `build(api, ask, base_url=..., env=...)` reads nothing but its
arguments, so every API's request is checked without a network. What each
API gets (the "Minimal request" of each wire format):

- `openai-chat`: `{base}/chat/completions`; `Authorization: Bearer
  $OPENAI_API_KEY`; base `$OPENAI_BASE_URL`, else `https://api.openai.com/v1`.
- `openai-responses`: `{base}/responses`; the same key and base.
- `anthropic`: `{base}/v1/messages`; `x-api-key: $ANTHROPIC_API_KEY` (or
  `Authorization: Bearer $ANTHROPIC_AUTH_TOKEN`) and `anthropic-version`;
  base `$ANTHROPIC_BASE_URL`, else `https://api.anthropic.com`.
- `gemini`: `{base}/v1beta/models/{model}:streamGenerateContent?alt=sse`;
  `x-goog-api-key: $GOOGLE_API_KEY`, else `$GEMINI_API_KEY` (the google-genai
  SDK's order); base `$GOOGLE_GEMINI_BASE_URL`, else
  `https://generativelanguage.googleapis.com`.
- `cohere`: `{base}/v2/chat`; `Authorization: Bearer $CO_API_KEY`, else
  `$COHERE_API_KEY` (the cohere SDK's order); base `$CO_API_URL`, else
  `https://api.cohere.com`.
- `ollama`: `{base}/api/chat`; no key (`Authorization: Bearer $OLLAMA_API_KEY`
  when set, for ollama.com, as the ollama SDK does); base `$OLLAMA_HOST`
  (read as the SDK reads it), else `http://localhost:11434`.
- `bedrock`: `{base}/model/{model id, URL-encoded}/converse-stream`;
  `Authorization: Bearer $AWS_BEARER_TOKEN_BEDROCK`; base
  `$AWS_ENDPOINT_URL_BEDROCK_RUNTIME` or `$AWS_ENDPOINT_URL`, else
  `https://bedrock-runtime.{$AWS_REGION or $AWS_DEFAULT_REGION or us-east-1}.amazonaws.com`.

The body always asks for a stream (Gemini through `?alt=sse`, Bedrock by its
path) and for usage where the API sends none unasked (only OpenAI chat
completions: `stream_options.include_usage`). Thinking is off unless
`--thinking`: nothing that turns it on is sent, and Ollama, whose thinking
models think unless told otherwise, gets `"think": false`.

AWS Bedrock signs requests with SigV4 (access keys), which rxstream does not
do: `--dialect bedrock` works with a Bedrock API key (`AWS_BEARER_TOKEN_BEDROCK`,
sent as a bearer token) or through an endpoint that signs for you (a proxy or
gateway given with `--base-url` or `AWS_ENDPOINT_URL_BEDROCK_RUNTIME`, to
which no key is sent); without either it is refused with that explanation.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

from ..core.dialects import WireKind
from ..io.credentials import shown_url

__all__ = [
    "API",
    "APIS",
    "KEY_VARIABLES",
    "THINKING_BUDGET",
    "Ask",
    "Request",
    "build",
    "join_url",
    "ollama_host",
]

#: The thinking budget `--thinking` asks for where the API wants one (Anthropic's minimum).
THINKING_BUDGET = 1024


@dataclass(frozen=True, slots=True)
class Ask:
    """What the user asks, whatever the API.

    Attributes:
        prompt: the user message.
        model: the model (None: the API's default).
        system: a system message, if any.
        usage: ask for usage where the API needs asking (OpenAI chat completions).
        thinking: turn reasoning on.
        max_tokens: the output limit (None: the API's default; Anthropic and
            Bedrock get `DEFAULT_MAX_TOKENS`).
    """

    prompt: str
    model: str | None = None
    system: str | None = None
    usage: bool = True
    thinking: bool = False
    max_tokens: int | None = None


@dataclass(frozen=True, slots=True)
class Request:
    """One streaming request, ready to send.

    Attributes:
        api: the `--dialect` name (also the dialect of the answer).
        url: where to POST.
        headers: the headers, credentials included (never print them).
        body: the JSON body.
        model: the model asked.
        base_url: the API root the URL was built on.
        wire: how the answer arrives: `"sse"`, `"ndjson"` or `"eventstream"`.
        key: the environment variable the key came from (None: no key sent).
    """

    api: str
    url: str
    headers: dict[str, str]
    body: dict[str, Any]
    model: str
    base_url: str
    wire: WireKind
    key: str | None


#: Output limit for the APIs that need one (Anthropic requires it; Bedrock's
#: defaults vary by model). Above `THINKING_BUDGET`, as thinking requires.
DEFAULT_MAX_TOKENS = 4096


Builder = Callable[[Ask, str, str, str | None], tuple[str, dict[str, str], dict[str, Any]]]


@dataclass(frozen=True, slots=True)
class API:
    """How to reach one provider's streaming chat endpoint.

    Attributes:
        name: the `--dialect` name (a dialect name).
        path: the path under the base URL, in words (for the help).
        auth: how the key is sent, in words (for the help).
        wire: how its answer arrives.
        base_variables: environment variables for the base URL, first set wins.
        default_base: the base URL when none is set.
        key_variables: environment variables for the key, first set wins.
        default_model: the model when none is given.
        model_variables: environment variables for the model, first set wins.
        thinking: what `--thinking` sends, in words (for the help).
        build: (ask, base URL, model, key) -> (URL, headers, body).
    """

    name: str
    path: str
    auth: str
    wire: WireKind
    base_variables: tuple[str, ...]
    default_base: str
    key_variables: tuple[str, ...]
    default_model: str
    model_variables: tuple[str, ...]
    thinking: str
    build: Builder


def join_url(base_url: str, path: str) -> str:
    """`path` (which may carry a query) appended to `base_url`'s path, before its query.

    >>> join_url("https://example.test/openai/deployments/d1?api-version=2024-10-21",
    ...          "/chat/completions")
    'https://example.test/openai/deployments/d1/chat/completions?api-version=2024-10-21'
    >>> join_url("http://h:1/", "/m:streamGenerateContent?alt=sse")
    'http://h:1/m:streamGenerateContent?alt=sse'
    """
    parts = urlsplit(base_url)
    path, _, query = path.partition("?")
    joined = "&".join(q for q in (parts.query, query) if q)
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + path, query=joined))


def ollama_host(host: str) -> str:
    """An `OLLAMA_HOST` value as a base URL, read as the ollama SDK reads it.

    A missing scheme is http, a missing port 11434 (80 / 443 with a scheme).

    >>> ollama_host("0.0.0.0"), ollama_host("https://ollama.example"), ollama_host(":8080")
    ('http://0.0.0.0:11434', 'https://ollama.example:443', 'http://localhost:8080')
    """
    scheme, sep, rest = host.partition("://")
    if not sep:
        scheme, rest = "http", host
        default_port = 11434
    else:
        default_port = 443 if scheme == "https" else 80
    netloc, slash, path = rest.partition("/")
    host_part, port = netloc, ""
    if netloc.startswith("["):  # an IPv6 address
        end = netloc.find("]")
        host_part, port = netloc[: end + 1], netloc[end + 1 :].removeprefix(":")
    elif ":" in netloc:
        host_part, port = netloc.rsplit(":", 1)
    host_part = host_part or "localhost"
    return f"{scheme}://{host_part}:{port or default_port}" + (
        f"/{path.rstrip('/')}" if slash and path.strip("/") else ""
    )


def _messages(ask: Ask) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    if ask.system:
        messages.append({"role": "system", "content": ask.system})
    messages.append({"role": "user", "content": ask.prompt})
    return messages


def _bearer(key: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"} if key else {}


def _openai_chat(
    ask: Ask, base: str, model: str, key: str | None
) -> tuple[str, dict[str, str], dict[str, Any]]:
    body: dict[str, Any] = {"model": model, "messages": _messages(ask), "stream": True}
    if ask.usage:
        body["stream_options"] = {"include_usage": True}
    if ask.max_tokens is not None:
        # `max_tokens`, which every OpenAI-compatible server reads (OpenAI's
        # newer `max_completion_tokens` is not known to all of them).
        body["max_tokens"] = ask.max_tokens
    if ask.thinking:
        body["reasoning_effort"] = "medium"
    return join_url(base, "/chat/completions"), _bearer(key), body


def _openai_responses(
    ask: Ask, base: str, model: str, key: str | None
) -> tuple[str, dict[str, str], dict[str, Any]]:
    body: dict[str, Any] = {
        "model": model,
        "input": [{"role": "user", "content": ask.prompt}],
        "stream": True,
    }
    if ask.system:
        body["instructions"] = ask.system
    if ask.max_tokens is not None:
        body["max_output_tokens"] = ask.max_tokens
    if ask.thinking:
        # A summary is what the Responses API streams of the reasoning.
        body["reasoning"] = {"effort": "medium", "summary": "auto"}
    return join_url(base, "/responses"), _bearer(key), body


def _anthropic(
    ask: Ask, base: str, model: str, key: str | None
) -> tuple[str, dict[str, str], dict[str, Any]]:
    body: dict[str, Any] = {
        "model": model,
        "max_tokens": ask.max_tokens if ask.max_tokens is not None else DEFAULT_MAX_TOKENS,
        "messages": [{"role": "user", "content": ask.prompt}],
        "stream": True,
    }
    if ask.system:
        body["system"] = ask.system
    if ask.thinking:
        body["thinking"] = {"type": "enabled", "budget_tokens": THINKING_BUDGET}
    headers = {"anthropic-version": "2023-06-01"}
    if key:
        headers["x-api-key"] = key
    return join_url(base, "/v1/messages"), headers, body


def _anthropic_headers(env: Mapping[str, str]) -> tuple[str | None, dict[str, str]]:
    """Anthropic's SDK sends `ANTHROPIC_AUTH_TOKEN` as a bearer token when there is no key."""
    token = env.get("ANTHROPIC_AUTH_TOKEN")
    if not env.get("ANTHROPIC_API_KEY") and token:
        return "ANTHROPIC_AUTH_TOKEN", _bearer(token)
    return None, {}


def _gemini(
    ask: Ask, base: str, model: str, key: str | None
) -> tuple[str, dict[str, str], dict[str, Any]]:
    body: dict[str, Any] = {"contents": [{"role": "user", "parts": [{"text": ask.prompt}]}]}
    if ask.system:
        body["systemInstruction"] = {"parts": [{"text": ask.system}]}
    config: dict[str, Any] = {}
    if ask.max_tokens is not None:
        config["maxOutputTokens"] = ask.max_tokens
    if ask.thinking:
        config["thinkingConfig"] = {"includeThoughts": True}
    if config:
        body["generationConfig"] = config
    name = quote(model.removeprefix("models/"), safe="")
    url = join_url(base, f"/v1beta/models/{name}:streamGenerateContent?alt=sse")
    return url, ({"x-goog-api-key": key} if key else {}), body


def _cohere(
    ask: Ask, base: str, model: str, key: str | None
) -> tuple[str, dict[str, str], dict[str, Any]]:
    body: dict[str, Any] = {"model": model, "messages": _messages(ask), "stream": True}
    if ask.max_tokens is not None:
        body["max_tokens"] = ask.max_tokens
    if ask.thinking:
        body["thinking"] = {"type": "enabled"}
    return join_url(base, "/v2/chat"), _bearer(key), body


def _ollama(
    ask: Ask, base: str, model: str, key: str | None
) -> tuple[str, dict[str, str], dict[str, Any]]:
    body: dict[str, Any] = {
        "model": model,
        "messages": _messages(ask),
        "stream": True,
        # Ollama's thinking models think unless told not to; other models accept false.
        "think": ask.thinking,
    }
    if ask.max_tokens is not None:
        body["options"] = {"num_predict": ask.max_tokens}
    return join_url(base, "/api/chat"), _bearer(key), body


def _bedrock(
    ask: Ask, base: str, model: str, key: str | None
) -> tuple[str, dict[str, str], dict[str, Any]]:
    body: dict[str, Any] = {
        "messages": [{"role": "user", "content": [{"text": ask.prompt}]}],
        "inferenceConfig": {
            "maxTokens": ask.max_tokens if ask.max_tokens is not None else DEFAULT_MAX_TOKENS
        },
    }
    if ask.system:
        body["system"] = [{"text": ask.system}]
    if ask.thinking:
        # Claude's extended thinking, the field Bedrock passes through to the model.
        body["additionalModelRequestFields"] = {
            "thinking": {"type": "enabled", "budget_tokens": THINKING_BUDGET}
        }
    # Model ids and ARNs hold ':' and '/': the id is one path segment.
    url = join_url(base, f"/model/{quote(model, safe='')}/converse-stream")
    return url, _bearer(key), body


_OPENAI_BASE = ("OPENAI_BASE_URL",)

#: Every API `chat` knows, by `--dialect` name.
APIS: dict[str, API] = {
    api.name: api
    for api in (
        API(
            "openai-chat",
            "/chat/completions",
            "Authorization: Bearer",
            "sse",
            _OPENAI_BASE,
            "https://api.openai.com/v1",
            ("OPENAI_API_KEY",),
            "gpt-4o-mini",
            ("OPENAI_MODEL",),
            '"reasoning_effort": "medium"',
            _openai_chat,
        ),
        API(
            "openai-responses",
            "/responses",
            "Authorization: Bearer",
            "sse",
            _OPENAI_BASE,
            "https://api.openai.com/v1",
            ("OPENAI_API_KEY",),
            "gpt-4o-mini",
            ("OPENAI_MODEL",),
            '"reasoning": {"effort": "medium", "summary": "auto"}',
            _openai_responses,
        ),
        API(
            "anthropic",
            "/v1/messages",
            "x-api-key and anthropic-version; $ANTHROPIC_AUTH_TOKEN as Authorization: Bearer",
            "sse",
            ("ANTHROPIC_BASE_URL",),
            "https://api.anthropic.com",
            ("ANTHROPIC_API_KEY",),
            "claude-haiku-4-5",
            (),
            f'"thinking": {{"type": "enabled", "budget_tokens": {THINKING_BUDGET}}}',
            _anthropic,
        ),
        API(
            "gemini",
            "/v1beta/models/{model}:streamGenerateContent?alt=sse",
            "x-goog-api-key",
            "sse",
            ("GOOGLE_GEMINI_BASE_URL",),
            "https://generativelanguage.googleapis.com",
            # The google-genai SDK's order: GOOGLE_API_KEY wins over GEMINI_API_KEY.
            ("GOOGLE_API_KEY", "GEMINI_API_KEY"),
            "gemini-2.5-flash",
            (),
            '"generationConfig": {"thinkingConfig": {"includeThoughts": true}}',
            _gemini,
        ),
        API(
            "cohere",
            "/v2/chat",
            "Authorization: Bearer",
            "sse",
            ("CO_API_URL",),
            "https://api.cohere.com",
            # The cohere SDK prefers CO_API_KEY and accepts COHERE_API_KEY.
            ("CO_API_KEY", "COHERE_API_KEY"),
            "command-a-03-2025",
            (),
            '"thinking": {"type": "enabled"}',
            _cohere,
        ),
        API(
            "ollama",
            "/api/chat",
            "Authorization: Bearer, for ollama.com; none sent when unset",
            "ndjson",
            ("OLLAMA_HOST",),
            "http://localhost:11434",
            ("OLLAMA_API_KEY",),
            "llama3.2",
            (),
            '"think": true (else "think": false)',
            _ollama,
        ),
        API(
            "bedrock",
            "/model/{model}/converse-stream",
            "Authorization: Bearer, a Bedrock API key; see below",
            "eventstream",
            ("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", "AWS_ENDPOINT_URL"),
            "https://bedrock-runtime.{region}.amazonaws.com",
            ("AWS_BEARER_TOKEN_BEDROCK",),
            "amazon.nova-lite-v1:0",
            (),
            f'Claude\'s "thinking" ({THINKING_BUDGET} tokens) in additionalModelRequestFields',
            _bedrock,
        ),
    )
}

#: Every environment variable a key may come from (all are redacted from the output).
KEY_VARIABLES = tuple(
    dict.fromkeys(
        [name for api in APIS.values() for name in api.key_variables] + ["ANTHROPIC_AUTH_TOKEN"]
    )
)


def _first(env: Mapping[str, str], names: tuple[str, ...]) -> tuple[str | None, str | None]:
    for name in names:
        value = env.get(name)
        if value:
            return name, value
    return None, None


def build(name: str, ask: Ask, *, base_url: str | None, env: Mapping[str, str]) -> Request:
    """The request for API `name`.

    Args:
        name: a `--dialect` name (a key of `APIS`).
        ask: the prompt and options.
        base_url: the API root from `--base-url` (None: the API's environment
            variable, else its default).
        env: the environment to read keys, base URLs and models from.

    Returns:
        The request, credentials in its headers.

    Raises:
        ValueError: an unknown API; a base URL that is not http(s); Bedrock
            without a key or an endpoint of its own; `--thinking` with an
            output limit at or below the thinking budget.

    >>> r = build("anthropic", Ask("Hi"), base_url=None, env={"ANTHROPIC_API_KEY": "sk-1"})
    >>> r.url, r.headers["x-api-key"], r.body["max_tokens"], r.key
    ('https://api.anthropic.com/v1/messages', 'sk-1', 4096, 'ANTHROPIC_API_KEY')
    """
    api = APIS.get(name)
    if api is None:
        raise ValueError(f"unknown API {name!r}; one of {', '.join(APIS)}")
    _, from_env = _first(env, api.base_variables)
    base = base_url or from_env
    if name == "ollama" and base:
        base = ollama_host(base)
    key_name, key = _first(env, api.key_variables)
    if base is None:
        if name == "bedrock" and key is None:
            raise ValueError(
                "AWS Bedrock signs requests with SigV4 (AWS access keys), which rxstream chat "
                "does not do: set AWS_BEARER_TOKEN_BEDROCK to a Bedrock API key, or give "
                "--base-url (or AWS_ENDPOINT_URL_BEDROCK_RUNTIME) an endpoint that signs for you"
            )
        region = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or "us-east-1"
        base = api.default_base.format(region=region)
    if not base.startswith(("http://", "https://")):
        raise ValueError(
            f"the base URL must start with http:// or https://, got {shown_url(base)!r}"
        )
    _, model_from_env = _first(env, api.model_variables)
    model = ask.model or model_from_env or api.default_model
    budgeted = name in ("anthropic", "bedrock") and ask.thinking
    if budgeted and ask.max_tokens is not None and ask.max_tokens <= THINKING_BUDGET:
        raise ValueError(
            f"--thinking asks for a {THINKING_BUDGET}-token thinking budget, which must be "
            f"below --max-tokens (got {ask.max_tokens})"
        )
    url, headers, body = api.build(ask, base, model, key)
    if name == "anthropic" and key is None:
        key_name, bearer = _anthropic_headers(env)
        headers.update(bearer)
    return Request(name, url, headers, body, model, base, api.wire, key_name)

"""What `rxstream chat --dialect NAME` sends: the public request builders, with the CLI's defaults.

`build(api, ask, base_url=..., env=...)` turns the CLI's options (`Ask`) into
`rxstream.io.requests.build_request`'s arguments (the same builders as
`rs.request`; see there for each provider's path, auth header, key and base
URL variables) and reads nothing but its arguments, so every API's request is
checked without a network. What the CLI adds:

- the model: `--model`, else (OpenAI's APIs) `$OPENAI_MODEL`, else the API's
  default model (`APIS`);
- the output limit: `--max-tokens`; Anthropic (which requires one) and
  Bedrock get `DEFAULT_MAX_TOKENS` without it;
- `--thinking`: reasoning on (`reasoning=True`; Anthropic and Bedrock a
  `THINKING_BUDGET`-token budget); off, nothing about it is sent (Ollama gets
  no `think` field: only what is asked for);
- `--no-usage`: OpenAI chat completions without `stream_options`;
- no key: the request goes without credentials (to a local server, say), and
  `missing_key` says what to set, for the CLI's warning.

AWS Bedrock is signed with SigV4 when AWS credentials are set (the
`bedrock` extra's botocore), or sent with `$AWS_BEARER_TOKEN_BEDROCK` (a
Bedrock API key) as a bearer token.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..core.dialects import WireKind
from ..io.requests import ENDPOINTS, base_url_for, build_request, join_url, missing_key, ollama_host

__all__ = [
    "API",
    "APIS",
    "KEY_VARIABLES",
    "THINKING_BUDGET",
    "Ask",
    "Request",
    "build",
    "build_ui_chat",
    "join_url",
    "missing_key",
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
        key: the environment variable the key came from (None: no key sent;
            `"SigV4"`: signed with AWS credentials).
        http: the request itself (an `httpx.Request`), to send as it is
            (a SigV4 signature covers its exact bytes).
    """

    api: str
    url: str
    headers: dict[str, str]
    body: dict[str, Any]
    model: str
    base_url: str
    wire: WireKind
    key: str | None
    http: Any = field(default=None, compare=False, repr=False)


#: Output limit for the APIs that need one (Anthropic requires it; Bedrock's
#: defaults vary by model). Above `THINKING_BUDGET`, as thinking requires.
DEFAULT_MAX_TOKENS = 4096


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
        ),
        API(
            "gemini",
            "/v1/models/{model}:streamGenerateContent?alt=sse",
            "x-goog-api-key",
            "sse",
            ("GOOGLE_GEMINI_BASE_URL",),
            "https://generativelanguage.googleapis.com",
            # The google-genai SDK's order: GOOGLE_API_KEY wins over GEMINI_API_KEY.
            ("GOOGLE_API_KEY", "GEMINI_API_KEY"),
            "gemini-2.5-flash",
            (),
            '"generationConfig": {"thinkingConfig": {"includeThoughts": true}}',
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
        ),
        API(
            "ollama",
            "/api/chat",
            "Authorization: Bearer, for ollama.com; none sent when unset",
            "ndjson",
            ("OLLAMA_HOST",),
            "http://127.0.0.1:11434",
            ("OLLAMA_API_KEY",),
            "llama3.2",
            (),
            '"think": true',
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


def _messages(ask: Ask) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    if ask.system:
        messages.append({"role": "system", "content": ask.system})
    messages.append({"role": "user", "content": ask.prompt})
    return messages


def build(name: str, ask: Ask, *, base_url: str | None, env: Mapping[str, str]) -> Request:
    """The request for API `name`, built by `rxstream.io.requests.build_request`.

    Args:
        name: a `--dialect` name (a key of `APIS`).
        ask: the prompt and options.
        base_url: the API root from `--base-url` (None: the API's environment
            variable, else its default).
        env: the environment to read keys, base URLs and models from.

    Returns:
        The request, credentials in its headers (none when no key is set:
        `missing_key` says what is missing).

    Raises:
        ValueError: an unknown API; an empty model (`--model ""`: the library
            refuses one too); a base URL that is not http(s); `--thinking` with
            an output limit at or below the thinking budget.

    >>> r = build("anthropic", Ask("Hi"), base_url=None, env={"ANTHROPIC_API_KEY": "sk-1"})
    >>> r.url, r.headers["x-api-key"], r.body["max_tokens"], r.key
    ('https://api.anthropic.com/v1/messages', 'sk-1', 4096, 'ANTHROPIC_API_KEY')
    """
    api = APIS.get(name)
    if api is None:
        raise ValueError(f"unknown API {name!r}; one of {', '.join(APIS)}")
    if ask.model is not None and not ask.model.strip():
        # Given but empty is a mistake, not "use the default" (rs.request refuses it too).
        raise ValueError(f"--model must be a non-empty model name, got {ask.model!r}")
    base = base_url_for(name, base_url, env)
    _, model_from_env = _first(env, api.model_variables)
    model = ask.model or model_from_env or api.default_model
    budgeted = name in ("anthropic", "bedrock")
    if (
        budgeted
        and ask.thinking
        and ask.max_tokens is not None
        and ask.max_tokens <= THINKING_BUDGET
    ):
        raise ValueError(
            f"--thinking asks for a {THINKING_BUDGET}-token thinking budget, which must be "
            f"below --max-tokens (got {ask.max_tokens})"
        )
    if name == "bedrock" and base_url is None and not _first(env, api.base_variables)[0]:
        lacking = missing_key(name, env)
        if lacking is not None:
            # Unsigned, AWS itself would only refuse it: say why now.
            raise ValueError(
                "AWS Bedrock signs requests with SigV4 (AWS access keys): "
                + lacking.removeprefix("no AWS credentials for bedrock: ").replace(
                    ", or pass api_key=", ""
                )
                + "; or give --base-url (or AWS_ENDPOINT_URL_BEDROCK_RUNTIME) an endpoint "
                "that signs for you"
            )
    options: dict[str, Any] = {}
    max_tokens = ask.max_tokens
    if max_tokens is None and budgeted:
        max_tokens = DEFAULT_MAX_TOKENS
    if max_tokens is not None:
        options["max_tokens"] = max_tokens
    if ask.thinking:
        options["reasoning"] = THINKING_BUDGET if budgeted else True
    if name == "openai-chat" and not ask.usage:
        options["stream_options"] = None
    http = build_request(
        name,
        model=model,
        messages=_messages(ask),
        base_url=base,
        env=env,
        require_key=False,
        **options,
    )
    key_name, _ = _first(env, ENDPOINTS[name].key_variables)
    if key_name is None and name == "anthropic" and env.get("ANTHROPIC_AUTH_TOKEN"):
        key_name = "ANTHROPIC_AUTH_TOKEN"
    if key_name is None and name == "bedrock" and "x-amz-date" in http.headers:
        key_name = "SigV4"
    # As set (httpx's own Host and Content-Length, and the JSON content type, aside).
    headers = {
        k.decode(): v.decode()
        for k, v in http.headers.raw
        if k.lower() not in (b"host", b"content-length", b"content-type")
    }
    return Request(
        name,
        str(http.url),
        headers,
        json.loads(http.content),
        model,
        base,
        api.wire,
        key_name,
        http,
    )


def build_ui_chat(ask: Ask, *, base_url: str) -> Request:
    """The request `useChat` (the AI SDK's `DefaultChatTransport`) sends for `ask`'s prompt.

    `POST {base_url}/api/chat` with the transport's body: the chat `id`, the
    conversation as UI messages (`{"id", "role", "parts"}`; a system message
    first when `ask` has one), and `"trigger": "submit-message"`. No key: an
    AI SDK backend is the application's own server. For `rxstream demo
    --dialect ai-sdk`, whose fake server answers it in the UI message stream.

    >>> r = build_ui_chat(Ask("Hi"), base_url="http://127.0.0.1:8080")
    >>> r.url, r.body["trigger"], r.body["messages"][0]["parts"]
    ('http://127.0.0.1:8080/api/chat', 'submit-message', [{'type': 'text', 'text': 'Hi'}])
    """
    import httpx

    turns = [("system", ask.system)] if ask.system else []
    turns.append(("user", ask.prompt))
    messages = [
        {"id": f"{role}-1", "role": role, "parts": [{"type": "text", "text": text}]}
        for role, text in turns
    ]
    body = {"id": "rxstream-chat", "messages": messages, "trigger": "submit-message"}
    url = join_url(base_url, "/api/chat")
    http = httpx.Request("POST", url, json=body)
    return Request("ai-sdk", url, {}, body, ask.model or "", base_url, "sse", None, http)

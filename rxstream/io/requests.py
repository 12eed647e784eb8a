"""The request side: `rs.request` builds a provider's streaming request; `rs.chat` sends it.

The body comes from the dialect's sans-I/O renderer
(`rxstream.core.dialects.<name>.request`); this module adds what needs the
world: the key and the base URL from the environment variables each official
SDK reads, the auth header, Bedrock's SigV4 signature, and the `httpx.Request`.

Keys (first set wins), base URLs (first set wins, else the default) and auth:

- `openai-chat`, `openai-responses`: `OPENAI_API_KEY`; `OPENAI_BASE_URL`,
  `https://api.openai.com/v1`; `Authorization: Bearer`.
- `anthropic`: `ANTHROPIC_API_KEY` as `x-api-key` (else `ANTHROPIC_AUTH_TOKEN`
  as `Authorization: Bearer`); `ANTHROPIC_BASE_URL`, `https://api.anthropic.com`.
- `gemini`: `GOOGLE_API_KEY`, `GEMINI_API_KEY` (google-genai's order) as
  `x-goog-api-key`; `GOOGLE_GEMINI_BASE_URL`,
  `https://generativelanguage.googleapis.com`; the API version `v1` (as
  google-genai), or `GOOGLE_GENAI_API_VERSION` (`beta`: `v1beta`).
- `cohere`: `CO_API_KEY`, `COHERE_API_KEY`; `CO_API_URL`, `https://api.cohere.com`;
  `Authorization: Bearer`.
- `ollama`: `OLLAMA_API_KEY`, optional (for ollama.com), as `Authorization:
  Bearer`; `OLLAMA_HOST` (read as the ollama SDK reads it),
  `http://127.0.0.1:11434`.
- `bedrock`: `AWS_BEARER_TOKEN_BEDROCK` (a Bedrock API key) as `Authorization:
  Bearer`, else SigV4 with the AWS credential chain and region;
  `AWS_ENDPOINT_URL_BEDROCK_RUNTIME`, `AWS_ENDPOINT_URL`,
  `https://bedrock-runtime.{region}.amazonaws.com`.

Bedrock's SigV4 signing and its credential chain (environment, shared
config and credentials files, SSO, instance roles) come from botocore, behind
the `bedrock` extra (`pip install 'rxstream[bedrock]'`), imported only when a
Bedrock request is signed.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import partial
from importlib import import_module
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode, urlsplit, urlunsplit

from reactivex import Observable, abc

from ..core.dialects.chat_input import RequestSpec
from ..core.lines import DEFAULT_LIMIT
from ..core.schema import OutputSpec, output_spec
from ..models import Delta, JSONObject, Message, Output, Tool
from ..operators.wire import SourceWire
from .credentials import describe, shown_url
from .limits import Admission
from .sources import DIALECT_EXTENSION, AsyncClient, SyncClient, from_request, limited_request

if TYPE_CHECKING:
    import httpx

__all__ = [
    "ENDPOINTS",
    "OUTPUT_EXTENSION",
    "Endpoint",
    "base_url_for",
    "build_request",
    "chat",
    "join_url",
    "missing_key",
    "ollama_host",
    "prepare_chat",
    "prepare_request",
    "request",
    "send_request",
]


@dataclass(frozen=True, slots=True)
class Endpoint:
    """How to reach one dialect's provider.

    Attributes:
        dialect: the dialect name.
        key_variables: where the key is read, first set wins.
        base_variables: where the base URL is read, first set wins.
        default_base: the base URL when none is set (`{region}`: Bedrock's).
        auth: the header the key goes in (`"bearer"`: `Authorization: Bearer`).
        wire: how the answer arrives: `"sse"`, `"ndjson"` or `"eventstream"`.
        key_required: False where a request may go without a key (Ollama;
            Bedrock, which signs with the AWS credential chain instead).
    """

    dialect: str
    key_variables: tuple[str, ...]
    base_variables: tuple[str, ...]
    default_base: str
    auth: str
    wire: SourceWire
    key_required: bool = True


_OPENAI: tuple[tuple[str, ...], tuple[str, ...], str, str, SourceWire] = (
    ("OPENAI_API_KEY",),
    ("OPENAI_BASE_URL",),
    "https://api.openai.com/v1",
    "bearer",
    "sse",
)

#: Every dialect `rs.request` builds for, by name.
ENDPOINTS: dict[str, Endpoint] = {
    e.dialect: e
    for e in (
        Endpoint("openai-chat", *_OPENAI),
        Endpoint("openai-responses", *_OPENAI),
        Endpoint(
            "anthropic",
            ("ANTHROPIC_API_KEY",),
            ("ANTHROPIC_BASE_URL",),
            "https://api.anthropic.com",
            "x-api-key",
            "sse",
        ),
        Endpoint(
            "gemini",
            ("GOOGLE_API_KEY", "GEMINI_API_KEY"),
            ("GOOGLE_GEMINI_BASE_URL",),
            "https://generativelanguage.googleapis.com",
            "x-goog-api-key",
            "sse",
        ),
        Endpoint(
            "cohere",
            # The cohere SDK reads CO_API_KEY; COHERE_API_KEY is accepted too.
            ("CO_API_KEY", "COHERE_API_KEY"),
            ("CO_API_URL",),
            "https://api.cohere.com",
            "bearer",
            "sse",
        ),
        Endpoint(
            "ollama",
            ("OLLAMA_API_KEY",),
            ("OLLAMA_HOST",),
            "http://127.0.0.1:11434",
            "bearer",
            "ndjson",
            key_required=False,
        ),
        Endpoint(
            "bedrock",
            ("AWS_BEARER_TOKEN_BEDROCK",),
            ("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", "AWS_ENDPOINT_URL"),
            "https://bedrock-runtime.{region}.amazonaws.com",
            "bearer",
            "eventstream",
            key_required=False,
        ),
    )
}

OUTPUT_EXTENSION = "rxstream.output"
"""The key of `httpx.Request.extensions` where `rs.request` keeps what `output=` asked for.

The value is resolved (`rxstream.core.schema.OutputSpec`: its `schema`, `name`, `strict`
and `via`); with `via == "tool"` the answer arrives as the arguments of the call named
`name`, else as the text.
"""

_RENDERERS = {
    "openai-chat": "openai_chat",
    "openai-responses": "openai_responses",
    "anthropic": "anthropic",
    "gemini": "gemini",
    "cohere": "cohere",
    "ollama": "ollama",
    "bedrock": "bedrock",
}


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


def _first(env: Mapping[str, str], names: Iterable[str]) -> str | None:
    return next((env[n] for n in names if env.get(n)), None)


def missing_key(dialect: str, env: Mapping[str, str] | None = None) -> str | None:
    """What is missing for `dialect`'s credentials, in words (None: nothing).

    For a caller that would rather warn than fail (the CLI): `rs.request`
    raises a `ValueError` with the same words.
    """
    endpoint = _endpoint(dialect)
    env = os.environ if env is None else env
    if _first(env, endpoint.key_variables):
        return None
    if dialect == "anthropic" and env.get("ANTHROPIC_AUTH_TOKEN"):
        return None
    if dialect == "bedrock":
        if _aws_credentials_present(env):
            return None
        return (
            "no AWS credentials for bedrock: set AWS_BEARER_TOKEN_BEDROCK to a Bedrock API "
            "key, or AWS credentials (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or "
            "AWS_PROFILE), or pass api_key="
        )
    if not endpoint.key_required:
        return None
    names = " or ".join(endpoint.key_variables)
    return f"no API key for {dialect}: set {names}, or pass api_key="


def _aws_credentials_present(env: Mapping[str, str]) -> bool:
    if env.get("AWS_ACCESS_KEY_ID") and env.get("AWS_SECRET_ACCESS_KEY"):
        return True
    try:
        return _aws_session(env)[0] is not None
    except (ImportError, ValueError):  # no botocore; credentials it cannot read
        return False


def _endpoint(dialect: str) -> Endpoint:
    endpoint = ENDPOINTS.get(dialect)
    if endpoint is None:
        raise ValueError(f"unknown dialect {dialect!r}; one of {', '.join(ENDPOINTS)}")
    return endpoint


def _botocore() -> Any:
    try:
        return import_module("botocore.session"), import_module("botocore.auth")
    except ImportError as exc:
        raise ImportError(
            "signing a Bedrock request needs botocore: pip install 'rxstream[bedrock]' "
            "(or set AWS_BEARER_TOKEN_BEDROCK to a Bedrock API key)"
        ) from exc


def _aws_session(env: Mapping[str, str]) -> tuple[Any, str | None]:
    """The AWS credentials and region: botocore's standard chain for the process
    environment, only the `AWS_*` variables of an environment given explicitly."""
    session_module, _ = _botocore()
    if env is not os.environ:
        key, secret = env.get("AWS_ACCESS_KEY_ID"), env.get("AWS_SECRET_ACCESS_KEY")
        if not (key and secret):
            return None, env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION")
        credentials = import_module("botocore.credentials").Credentials(
            key, secret, env.get("AWS_SESSION_TOKEN")
        )
        return credentials, env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION")
    session = session_module.get_session()
    try:
        credentials = session.get_credentials()
    except Exception as exc:  # botocore's own errors: partial or unreadable credentials
        raise ValueError(f"the AWS credentials cannot be read: {exc}") from None
    return credentials, session.get_config_variable("region")


def _region(env: Mapping[str, str]) -> str:
    region = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION")
    if region:
        return region
    try:
        found = _aws_session(env)[1]
    except (ImportError, ValueError):
        found = None
    return found or "us-east-1"


def _sign_sigv4(
    url: str, body: bytes, headers: dict[str, str], env: Mapping[str, str]
) -> dict[str, str]:
    """The headers SigV4 adds (`X-Amz-Date`, `Authorization`, a session token)."""
    credentials, _ = _aws_session(env)
    if credentials is None:
        raise ValueError(missing_key("bedrock", {}))
    _, auth = _botocore()
    awsrequest = import_module("botocore.awsrequest")
    aws = awsrequest.AWSRequest(method="POST", url=url, data=body, headers=dict(headers))
    auth.SigV4Auth(credentials.get_frozen_credentials(), "bedrock", _region(env)).add_auth(aws)
    return {
        k: str(v) for k, v in aws.headers.items() if k.lower() not in {h.lower() for h in headers}
    }


def base_url_for(dialect: str, base_url: str | None, env: Mapping[str, str]) -> str:
    """The API root for `dialect`: `base_url`, else its environment variable, else the default.

    Raises:
        ValueError: an unknown dialect; a base URL that is not http(s).
    """
    endpoint = _endpoint(dialect)
    base = base_url or _first(env, endpoint.base_variables)
    if dialect == "ollama" and base:
        base = ollama_host(base)
    if base is None:
        base = endpoint.default_base
        if "{region}" in base:
            base = base.format(region=_region(env))
    if not base.startswith(("http://", "https://")):
        raise ValueError(
            f"the base URL must start with http:// or https://, got {shown_url(base)!r}"
        )
    return base


def build_request(dialect: str, **arguments: Any) -> httpx.Request:
    """`rs.request`, with the environment given and the key optional (for the CLI).

    The arguments are `prepare_request`'s: `rs.request`'s, and `env` (the
    environment to read; default `os.environ`) and `require_key` (False sends
    the request without credentials when none are set, instead of raising;
    the caller warns).
    """
    return prepare_request(dialect, **arguments)()


def prepare_request(
    dialect: str,
    *,
    model: str,
    messages: Iterable[Mapping[str, Any] | Message],
    tools: Iterable[Tool | Mapping[str, Any]] | None = None,
    output: Output | type | JSONObject | OutputSpec | None = None,
    api_key: str | None = None,
    base_url: str | None = None,
    headers: Mapping[str, str] | None = None,
    env: Mapping[str, str] | None = None,
    require_key: bool = True,
    **options: Any,
) -> Callable[[], httpx.Request]:
    """`build_request`'s checks and rendering now (what raises, raises here), and a
    function that makes the `httpx.Request` when called (its URL already parsed).

    For a request that may never be sent (a fallback route): all that can
    fail is done at once, the rest only when it is needed.
    """
    import httpx

    endpoint = _endpoint(dialect)
    env = os.environ if env is None else env
    renderer = import_module(f"rxstream.core.dialects.{_RENDERERS[dialect]}.request")
    if dialect == "gemini" and "api_version" not in options and env.get("GOOGLE_GENAI_API_VERSION"):
        # As google-genai reads it: "beta" is v1beta, anything else the version itself.
        version = env["GOOGLE_GENAI_API_VERSION"]
        options["api_version"] = "v1beta" if version == "beta" else version
    resolved = None if output is None else output_spec(output)
    if resolved is not None:
        options["output"] = resolved
    spec: RequestSpec = renderer.render_request(model, messages, tools, **options)
    base = base_url_for(dialect, base_url, env)
    url = join_url(base, spec.path + (f"?{urlencode(spec.query)}" if spec.query else ""))
    body = json.dumps(spec.body, ensure_ascii=False, separators=(",", ":")).encode()
    sent = {"Content-Type": "application/json", **spec.headers, **(headers or {})}
    key = api_key or _first(env, endpoint.key_variables)
    if key:
        if endpoint.auth == "bearer":
            sent["Authorization"] = f"Bearer {key}"
        else:
            sent[endpoint.auth] = key
    elif dialect == "anthropic" and env.get("ANTHROPIC_AUTH_TOKEN"):
        sent["Authorization"] = f"Bearer {env['ANTHROPIC_AUTH_TOKEN']}"
    elif dialect == "bedrock" and (require_key or _aws_credentials_present(env)):
        sent.update(_sign_sigv4(url, body, sent, env))
    elif require_key and endpoint.key_required:
        raise ValueError(missing_key(dialect, env))
    # The dialect rides along (never sent), so `from_request` knows how its answer arrives;
    # so does the output asked for, for whoever reads the answer as a typed object.
    extensions: dict[str, Any] = {DIALECT_EXTENSION: dialect}
    if resolved is not None:
        extensions[OUTPUT_EXTENSION] = resolved
    parsed = httpx.URL(url)  # (a malformed base URL raises here)
    return partial(
        httpx.Request, spec.method, parsed, headers=sent, content=body, extensions=extensions
    )


def request(
    dialect: str,
    *,
    model: str,
    messages: Iterable[Mapping[str, Any] | Message],
    tools: Iterable[Tool | Mapping[str, Any]] | None = None,
    output: Output | type | JSONObject | None = None,
    api_key: str | None = None,
    base_url: str | None = None,
    **options: Any,
) -> httpx.Request:
    """A provider's streaming chat request, ready to send (`rs.from_request(client, req)`).

    Args:
        dialect: `"openai-chat"`, `"openai-responses"`, `"anthropic"`,
            `"gemini"`, `"cohere"`, `"ollama"` or `"bedrock"`.
        model: the model.
        messages: OpenAI chat-style dicts (`{"role": "system" | "user" |
            "assistant" | "tool", "content": str | parts}`; a tool result as
            `{"role": "tool", "tool_call_id", "content"}`) and/or `rs.Message`s
            as `accumulate_message()` gave them: an assistant turn goes back
            losslessly in its own dialect (reasoning state, signatures, tool
            calls, in their order) and as faithfully as the target allows in
            another (each dialect's rules: `rxstream.core.dialects.<name>.request`).
        tools: OpenAI-style function tools or `rs.Tool`s; a provider's own
            tool dict (web search, ...) goes as it is.
        output: the typed answer to ask for: a pydantic model, a msgspec
            `Struct`, a dataclass, a `TypedDict` or a JSON Schema dict of an
            object, or an `rs.Output` (its name, strict or not, native or a
            forced tool). Mapped to the provider's own structured output
            (strict where it has a strict mode); the request keeps it,
            resolved, in `request.extensions["rxstream.output"]`.
        api_key: the key (default: the provider's environment variable).
        base_url: the API root (default: the provider's environment variable,
            else its public endpoint).
        **options: `max_tokens`, `temperature`, `reasoning` (an effort or a
            token budget), `tool_choice` (`"auto"`, `"none"`, `"required"` or
            a function name) and `stop`, mapped per provider; `headers=` adds
            headers; `anthropic_version=` picks Anthropic's API version and
            `betas=` its beta features (the `anthropic-beta` header);
            anything else goes into the JSON body unchanged.

    Returns:
        An `httpx.Request` (the body JSON-encoded; Bedrock's signed).

    Raises:
        ValueError: an unknown dialect; no key (the message names the
            environment variable); an option the provider (or the chosen
            Anthropic version) does not take; a malformed message; an
            `output` schema that is not an object's.
        TypeError: a message, tool or option of the wrong type; an `output`
            rxstream makes no JSON Schema of.
        ImportError: a Bedrock request to sign without botocore (the
            `bedrock` extra).

    Example:
        >>> req = rs.request("anthropic", model="claude-haiku-4-5", api_key="sk-ant-x",
        ...                  messages=[{"role": "user", "content": "Hi"}])  # doctest: +SKIP
        >>> req.url, req.headers["anthropic-version"]  # doctest: +SKIP
        (URL('https://api.anthropic.com/v1/messages'), '2023-06-01')
    """
    return build_request(
        dialect,
        model=model,
        messages=messages,
        tools=tools,
        output=output,
        api_key=api_key,
        base_url=base_url,
        **options,
    )


def chat(
    client: SyncClient | AsyncClient,
    dialect: str,
    *,
    model: str,
    messages: Iterable[Mapping[str, Any] | Message],
    tools: Iterable[Tool | Mapping[str, Any]] | None = None,
    output: Output | type | JSONObject | None = None,
    api_key: str | None = None,
    base_url: str | None = None,
    scheduler: abc.SchedulerBase | None = None,
    line_limit: int = DEFAULT_LIMIT,
    limiter: Admission | None = None,
    **options: Any,
) -> Observable[Delta]:
    """Send `rs.request(dialect, ...)` with `client` and decode the answer into deltas.

    The request is built at once (a missing key raises here, before anything
    is sent); each subscription sends it. SSE dialects are read with
    `lines()`, `sse_frames()`, `decode(dialect)`; Ollama's lines with
    `decode("ollama")`; Bedrock's binary event stream as bytes with
    `eventstream_frames()`, `decode("bedrock")`. As after `rs.decode`, a
    `StreamError` that ends the stream (an HTTP status, a cut, a malformed
    event) carries the `Message` of what arrived before it as `error.partial`.

    Args:
        client: an `httpx.Client` or `httpx.AsyncClient` (as `rs.from_request`).
        dialect: the wire format, as `rs.request`.
        model: as `rs.request`.
        messages: as `rs.request`.
        tools: as `rs.request`.
        output: as `rs.request`.
        api_key: as `rs.request`.
        base_url: as `rs.request`.
        scheduler: as `rs.from_request`.
        line_limit: as `rs.from_request`.
        limiter: a rate limiter shared with other requests (`rs.Limiter`,
            `rs.RedisLimiter`): each subscription waits for its admission,
            reports the answer's status and rate-limit headers, and gives its
            slot back at the end, with the answer's `Usage` correcting the
            token estimate (as `rs.from_request(..., limiter=)`).
        **options: as `rs.request`.

    Returns:
        A cold observable of the deltas.

    Example:
        >>> with httpx.Client() as client:  # doctest: +SKIP
        ...     rs.chat(client, "gemini", model="gemini-2.5-flash",
        ...             messages=[{"role": "user", "content": "Hi"}]).pipe(
        ...         rs.accumulate_message()).subscribe(print)
    """
    built = request(
        dialect,
        model=model,
        messages=messages,
        tools=tools,
        output=output,
        api_key=api_key,
        base_url=base_url,
        **options,
    )
    return send_request(client, built, scheduler=scheduler, line_limit=line_limit, limiter=limiter)


def prepare_chat(
    client: SyncClient | AsyncClient,
    dialect: str,
    *,
    scheduler: abc.SchedulerBase | None = None,
    line_limit: int = DEFAULT_LIMIT,
    limiter: Admission | None = None,
    **arguments: Any,
) -> Callable[[], Observable[Delta]]:
    """`chat`'s checks now (what raises, raises here), and a function that gives its
    observable when called (made on the first call, the same one after).

    For a route that may never be asked (a fallback): its request costs only its
    checks and rendering until it is used. `arguments` are the request's, as
    `chat` (and `prepare_request`) take them.
    """
    make = prepare_request(dialect, **arguments)
    made: list[Observable[Delta]] = []

    def source() -> Observable[Delta]:
        if not made:
            made.append(
                send_request(
                    client, make(), scheduler=scheduler, line_limit=line_limit, limiter=limiter
                )
            )
        return made[0]

    return source


def send_request(
    client: SyncClient | AsyncClient,
    built: httpx.Request,
    *,
    scheduler: abc.SchedulerBase | None = None,
    line_limit: int = DEFAULT_LIMIT,
    limiter: Admission | None = None,
) -> Observable[Delta]:
    """A request `rs.request` built, sent with `client` and decoded into its dialect's deltas.

    What `rs.chat` does once it has built its request (the arguments are its own).

    Raises:
        ValueError: `built` was not built by `rs.request` (its dialect is unknown).
    """
    extensions = getattr(built, "extensions", None)
    dialect = extensions.get(DIALECT_EXTENSION) if isinstance(extensions, dict) else None
    if not isinstance(dialect, str) or dialect not in ENDPOINTS:
        raise ValueError(
            f"send_request takes a request built by rs.request (it names its dialect), "
            f"got one for {describe(built)!r} with no dialect"
        )
    wire = ENDPOINTS[dialect].wire
    if limiter is not None:
        return limited_request(
            client,
            built,
            limiter,
            _decoding(dialect, wire),
            scheduler=scheduler,
            line_limit=line_limit,
            body="bytes" if wire == "eventstream" else "lines",
        )
    if wire == "eventstream":
        raw = from_request(client, built, scheduler=scheduler, line_limit=line_limit, body="bytes")
        return raw.pipe(_decoding(dialect, wire))
    text = from_request(client, built, scheduler=scheduler, line_limit=line_limit)
    return text.pipe(_decoding(dialect, wire))


def _decoding(dialect: str, wire: SourceWire) -> Callable[[Observable[Any]], Observable[Delta]]:
    """The operators that turn what a source of `wire` hands out into `dialect`'s deltas."""
    from reactivex import compose

    from ..operators import decode, eventstream_frames, sse_frames

    if wire == "eventstream":
        return compose(eventstream_frames(), decode(dialect))
    if wire == "ndjson":
        return decode(dialect)
    return compose(sse_frames(), decode(dialect))

"""The HTTP boundary: what a source may accept from a response, and every error it maps.

Everything that turns an HTTP answer or an httpx failure into an rxstream
error happens here, once, for the sync and the async paths alike:

- the client and response protocols the sources are typed against (httpx and
  the httpx2 fork both fit; neither is imported here);
- which answers are a stream (`accepted`): a 2xx status with an event-stream,
  NDJSON or (for raw bytes) AWS event-stream content type; anything else is
  read to a bounded excerpt and becomes `HTTPStatusError` or
  `UnexpectedContentTypeError` (`Exchange.refusal`);
- transport failures (`Exchange.failure`): what httpx reported, in the
  message, whether the client had been closed, and nothing else: the httpx
  exception (which keeps the request and its headers) is neither chained nor
  left as context;
- credentials (`Credentials`): the values of the request's credential headers
  (HTTP Basic decoded too) and URL keys, redacted from every error message,
  excerpt and body line a server echoes them in, also JSON- or URL-escaped,
  and also where an excerpt cut one in two.

The read loops (`_loops`) and the public entry points (`sources`) sit above.
"""

from __future__ import annotations

import base64
import contextlib
import email.utils
import json
import re
import sys
import time
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping
from typing import Any, Literal, Protocol, TypeAlias
from urllib.parse import parse_qsl, quote, quote_plus, unquote, urlsplit, urlunsplit

from ..core.provider_errors import provider_message
from ..errors import (
    EXCERPT_LIMIT,
    HTTPStatusError,
    StreamError,
    TransportError,
    UnexpectedContentTypeError,
    excerpt,
)

__all__ = [
    "ERROR_BODY_LIMIT",
    "AsyncClient",
    "AsyncResponse",
    "BodyKind",
    "Credentials",
    "Exchange",
    "SyncClient",
    "SyncResponse",
    "accepted",
    "describe",
    "header",
    "request_of",
    "retry_after",
    "shown_url",
    "transport_types",
]

#: How much of a non-2xx (or otherwise unexpected) body is read to quote it in the error.
ERROR_BODY_LIMIT = 65_536

#: What a 2xx body holds, by its content type: lines of an event stream or of
#: NDJSON, or binary AWS event-stream messages. None: no content type at all.
BodyKind: TypeAlias = Literal["sse", "ndjson", "eventstream"]


class SyncResponse(Protocol):
    """What a source needs of an opened, streaming sync response (`httpx.Response`)."""

    @property
    def status_code(self) -> int: ...  # pragma: no cover

    @property
    def headers(self) -> Mapping[str, str]: ...  # pragma: no cover

    def iter_bytes(self) -> Iterator[bytes]: ...  # pragma: no cover

    def close(self) -> None: ...  # pragma: no cover


class AsyncResponse(Protocol):
    """What a source needs of an opened, streaming async response."""

    @property
    def status_code(self) -> int: ...  # pragma: no cover

    @property
    def headers(self) -> Mapping[str, str]: ...  # pragma: no cover

    def aiter_bytes(self) -> AsyncIterator[bytes]: ...  # pragma: no cover

    async def aclose(self) -> None: ...  # pragma: no cover


class SyncClient(Protocol):
    """What `from_request` needs of a sync client (`httpx.Client`, `httpx2.Client`)."""

    def build_request(
        self, method: str, url: Any, *args: Any, **kwargs: Any
    ) -> Any: ...  # pragma: no cover

    def send(self, request: Any, *args: Any, **kwargs: Any) -> SyncResponse: ...  # pragma: no cover


class AsyncClient(Protocol):
    """What `from_request` needs of an async client (`httpx.AsyncClient`, `httpx2.AsyncClient`)."""

    def build_request(
        self, method: str, url: Any, *args: Any, **kwargs: Any
    ) -> Any: ...  # pragma: no cover

    async def send(
        self, request: Any, *args: Any, **kwargs: Any
    ) -> AsyncResponse: ...  # pragma: no cover


# --------------------------------------------------------------------------- credentials

# Header and query-parameter names whose values are credentials: the usual ones
# by name, and any name that says what it holds.
_CREDENTIAL_HEADERS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "api-key",
        "x-api-key",
        "x-goog-api-key",
        "cookie",
        "ocp-apim-subscription-key",
    }
)
_CREDENTIAL_WORDS = re.compile(r"key|token|secret|auth|passw|signature|credential|session|^sig$")

#: What a redacted credential reads as.
REDACTED = "[redacted]"

# Shorter values are not worth hiding and would deface ordinary text.
_MIN_SECRET = 4


class Credentials:
    """The credential values of a request, to be redacted wherever a server echoes them.

    Collected from the headers (`Authorization`, `api-key`, `x-api-key`,
    `x-goog-api-key`, cookies and any header whose name says key, token,
    secret, auth, ...), from the URL's userinfo and query string (`?key=...`);
    for `Authorization: Bearer X`, both the whole value and `X`; for HTTP
    Basic also the decoded `user:password` and the password. Each value is
    redacted as sent and as a server may quote it back: JSON-escaped (also
    with `/` as backslash-slash), percent-encoded and form-encoded.

    >>> creds = Credentials()
    >>> creds.add_headers({"Authorization": "Bearer sk-123456"})
    >>> creds.redact("your key sk-123456 is invalid")
    'your key [redacted] is invalid'
    """

    __slots__ = ("_bytes", "_pattern", "_secrets")

    def __init__(self) -> None:
        self._secrets: set[str] = set()
        self._pattern: re.Pattern[str] | None = None
        self._bytes: tuple[bytes, ...] = ()

    def __bool__(self) -> bool:
        return bool(self._secrets)

    def add_request(self, request: Any) -> None:
        """Collect the credentials of an httpx request (its headers and its URL)."""
        if request is None:
            return
        headers = getattr(request, "headers", None)
        if headers is not None:
            self.add_headers(headers)
        url = getattr(request, "url", None)
        if url is not None:
            self.add_url(str(url))

    def add_headers(self, headers: Any) -> None:
        """Collect the values of credential headers (a mapping or httpx `Headers`)."""
        items: Iterable[tuple[Any, Any]]
        multi = getattr(headers, "multi_items", None)
        items = multi() if callable(multi) else headers.items()
        for name, value in items:
            name = _text(name).lower()
            if name in _CREDENTIAL_HEADERS or _CREDENTIAL_WORDS.search(name):
                value = _text(value)
                self._add(value)
                scheme, _, token = value.partition(" ")
                token = token.strip()
                if token and scheme.isalpha():
                    self._add(token)
                    if scheme.lower() == "basic":
                        self._add_basic(token)

    def _add_basic(self, token: str) -> None:
        # HTTP Basic: a server may quote the decoded `user:password`, or the password.
        try:
            pair = base64.b64decode(token, validate=True).decode("utf-8")
        except ValueError:
            return
        self._add(pair)
        self._add(pair.partition(":")[2])

    def add_url(self, url: str) -> None:
        """Collect the values of credential query parameters and of the URL's userinfo."""
        try:
            parts = urlsplit(url)
        except ValueError:
            return
        if parts.password:
            self._add(parts.password)
            self._add(unquote(parts.password))
        for name, value in parse_qsl(parts.query, keep_blank_values=False):
            if _CREDENTIAL_WORDS.search(name.lower()):
                self._add(value)
        for piece in parts.query.split("&"):
            name, _, value = piece.partition("=")
            if _CREDENTIAL_WORDS.search(unquote(name).lower()):
                self._add(value)

    def _add(self, value: str) -> None:
        if len(value) < _MIN_SECRET or value in self._secrets:
            return
        # As sent, and as a server may quote it back: JSON-escaped (also with
        # `\/`), percent-encoded, form-encoded.
        escaped = json.dumps(value)[1:-1]
        forms = {value, escaped, escaped.replace("/", "\\/"), quote(value, safe="")}
        forms.add(quote_plus(value))
        self._secrets.update(forms)
        # Longest first, so "Bearer X" goes whole before X alone.
        ordered = sorted(self._secrets, key=len, reverse=True)
        self._pattern = re.compile("|".join(map(re.escape, ordered)))
        self._bytes = tuple(s.encode("utf-8", "replace") for s in ordered)

    def redact(self, text: str, *, cut: bool = False) -> str:
        """`text` with every credential replaced by `[redacted]`.

        Args:
            text: what a server sent (or an error message made of it).
            cut: `text` is the head of something longer: a credential cut in
                two at its end is redacted too.
        """
        pattern = self._pattern
        if pattern is None or not text:
            return text
        text = pattern.sub(REDACTED, text)
        return self._redact_tail(text) if cut else text

    def _redact_tail(self, text: str) -> str:
        for secret in self._secrets:
            for size in range(min(len(secret), len(text) + 1) - 1, _MIN_SECRET - 1, -1):
                if text.endswith(secret[:size]):
                    return text[:-size] + REDACTED
        return text

    def quote(self, data: bytes | str, *, complete: bool = True) -> str:
        """A bounded, redacted excerpt of a body (or its head) for an error.

        Redacted before it is cut, so a credential is never half shown.

        Args:
            data: the body, or its first bytes.
            complete: False when `data` is only the head of the body; the
                excerpt then says so instead of giving the head's length.
        """
        text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
        text = self.redact(text, cut=not complete)
        if complete:
            return excerpt(text)
        return f"{text[:EXCERPT_LIMIT]}… (at least {len(data)} bytes)"

    def scrub(self, error: BaseException) -> BaseException:
        """`error` with credentials redacted from its message, also where an excerpt cut one.

        For errors raised below this layer from text a server sent (a line's
        head in `LineTooLongError`), whose message was cut before it could be
        redacted.
        """
        if self._pattern is None or not error.args or not isinstance(error.args[0], str):
            return error
        message = self._pattern.sub(REDACTED, error.args[0])
        for secret in self._secrets:
            for size in range(len(secret) - 1, _MIN_SECRET - 1, -1):
                message = message.replace(secret[:size] + "…", REDACTED + "…")
        error.args = (message, *error.args[1:])
        return error

    def found_in(self, data: bytes) -> bool:
        """Whether any credential occurs in `data` (a cheap test per read)."""
        return any(secret in data for secret in self._bytes)

    @property
    def longest(self) -> int:
        """The length in bytes of the longest credential (0 without any)."""
        return max(map(len, self._bytes), default=0)

    @property
    def forms(self) -> tuple[bytes, ...]:
        """Every credential in every form a server may echo it, as UTF-8 bytes, longest first."""
        return self._bytes


def _text(value: Any) -> str:
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("latin-1")
    return str(value)


# --------------------------------------------------------------------------- answers


def header(headers: Mapping[str, str], name: str) -> str | None:
    """The value of header `name` (lower case), whatever the mapping's case rules."""
    value = headers.get(name)
    if value is None:
        for key, item in headers.items():
            if key.lower() == name:
                return item
    return value


def _mime(content_type: str | None) -> str:
    return (content_type or "").split(";", 1)[0].strip().lower()


_KINDS: dict[str, BodyKind] = {
    "text/event-stream": "sse",
    "application/x-ndjson": "ndjson",
    "application/ndjson": "ndjson",
    "application/jsonl": "ndjson",
    "application/x-jsonlines": "ndjson",
    "application/jsonlines": "ndjson",
    "application/vnd.amazon.eventstream": "eventstream",
}


def body_kind(content_type: str | None) -> BodyKind | None:
    """What a body of this content type holds, or None when it is not a stream."""
    return _KINDS.get(_mime(content_type))


def accepted(response: Any, *, raw: bool) -> bool:
    """Whether `response` is a stream a source reads (else `answer_error` explains why).

    A 2xx status with an event-stream or NDJSON content type, or an AWS event
    stream when the source hands out raw bytes. A response with no content
    type at all is read too: what its body holds is judged as it arrives.
    """
    status: int = response.status_code
    if not 200 <= status < 300:
        return False
    content_type = header(response.headers, "content-type")
    if not content_type or not _mime(content_type):
        return True
    kind = body_kind(content_type)
    return kind is not None and (raw or kind != "eventstream")


def retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds to wait from `retry-after-ms` or `Retry-After` (seconds or an HTTP date)."""
    millis = header(headers, "retry-after-ms")
    if millis is not None:
        with contextlib.suppress(ValueError):
            value = float(millis)
            if value >= 0 and value == value and value != float("inf"):
                return value / 1000
    text = header(headers, "retry-after")
    if text is None:
        return None
    text = text.strip()
    if re.fullmatch(r"\d+(\.\d+)?", text):
        return float(text)
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, when.timestamp() - time.time())


def request_of(response: object) -> Any:
    """The request a response answers, or None (httpx raises when it has none)."""
    try:
        return getattr(response, "request", None)
    except RuntimeError:  # httpx: "The request instance has not been set on this response."
        return None


def shown_url(url: str) -> str:
    """`url` as it may be shown: no userinfo, query string or fragment.

    >>> shown_url("https://user:pw@host:8443/v1/chat?key=secret#x")
    'https://host:8443/v1/chat'
    """
    try:
        parts = urlsplit(url)
        netloc = parts.hostname or ""
        if ":" in netloc:
            netloc = f"[{netloc}]"
        if parts.port is not None:
            netloc += f":{parts.port}"
        return urlunsplit((parts.scheme, netloc, parts.path, "", ""))
    except ValueError:
        return url.split("?", 1)[0].split("#", 1)[0].rpartition("@")[2]


def describe(request: Any) -> str:
    """`"POST http://host:port/path"`: no query string, no credentials, never a header."""
    if request is None:
        return ""
    method = getattr(request, "method", "")
    if isinstance(method, bytes):
        method = method.decode("ascii", "replace")
    return f"{method} {shown_url(str(getattr(request, 'url', '')))}".strip()


# --------------------------------------------------------------------------- one exchange


class Exchange:
    """One request and its answer, as its errors see them.

    Holds what a message may call the request (`where`: the method and the URL
    without query string or userinfo, never a header), the credentials to
    redact, and the client, to tell a closed client from a failed connection.
    Every error a source raises for an HTTP answer or an httpx failure is made
    here, for the sync and the async paths alike.

    Args:
        request: the request (httpx or alike), or None when it is unknown.
        client: the client that sends it (None for `from_response`).
    """

    __slots__ = ("_client", "credentials", "where")

    def __init__(self, request: Any = None, *, client: Any = None) -> None:
        self._client = client
        self.credentials = Credentials()
        self.where = ""
        self.learn(request)

    def learn(self, request: Any) -> None:
        """Take in `request`: its description and its credentials (also those `auth=` added)."""
        if request is None:
            return
        self.credentials.add_request(request)
        if not self.where:
            self.where = describe(request)

    def refusal(self, response: Any, body: bytes, *, complete: bool) -> StreamError:
        """The error for a response `accepted` refused, quoting `body` (bounded, redacted).

        Args:
            response: the refused response (status, reason, headers).
            body: its body, or the head of it.
            complete: whether `body` is the whole body.
        """
        redact = self.credentials.redact
        status: int = response.status_code
        headers: Mapping[str, str] = response.headers
        text = redact(body.decode("utf-8", "replace"), cut=not complete)
        shown = self.credentials.quote(body, complete=complete)
        if 200 <= status < 300:
            content_type = redact(header(headers, "content-type") or "")
            return UnexpectedContentTypeError(content_type, status_code=status, body=shown)
        reason = getattr(response, "reason_phrase", "")
        message = provider_message(text) if complete else None
        return HTTPStatusError(
            status,
            reason=redact(reason) if isinstance(reason, str) else "",
            body=shown,
            provider_message=message,
            retry_after=retry_after(headers),
            request=self.where,
        )

    def failure(self, exc: BaseException) -> StreamError | None:
        """The `TransportError` that stands for `exc`; None when `exc` is no transport failure.

        The message says what failed and what httpx reported (redacted), and
        whether the client had been closed; the `__cause__` is a bare exception
        of the same type with that message. The caller raises it outside its
        `except` block, so that the httpx exception, which keeps the request
        and its headers, is not reachable as `__context__` either.
        """
        if isinstance(exc, StreamError):
            return None
        if isinstance(exc, RuntimeError) and "client has been closed" in str(exc):
            return TransportError(f"{self._head(_CLOSED_BEFORE)}. {_KEEP_OPEN}")
        if not isinstance(exc, transport_types()):
            return None
        what = next(
            (_WHAT[cls.__name__] for cls in type(exc).__mro__ if cls.__name__ in _WHAT),
            "the connection failed",
        )
        if getattr(self._client, "is_closed", False) is True:
            what = _CLOSED_DURING
        detail = excerpt(self.credentials.redact(str(exc))) or "(no detail)"
        text = f"{self._head(what)}: {type(exc).__name__}: {detail}"
        error = TransportError(f"{text}. {_KEEP_OPEN}" if what == _CLOSED_DURING else text)
        error.__cause__ = _bare_copy(exc, detail)
        return error

    def cancelled(self) -> StreamError:
        """The error for an async stream whose task someone other than its observer cancelled."""
        closed = getattr(self._client, "is_closed", False) is True
        head = self._head(_CANCELLED) + (", and its client was closed" if closed else "")
        return TransportError(f"{head}: {_LOOP_STOPPED} {_KEEP_OPEN}")

    def _head(self, what: str) -> str:
        return f"{what} ({self.where})" if self.where else what


# --------------------------------------------------------------------------- transport errors

_WHAT = {
    "ConnectTimeout": "timed out connecting to the server",
    "ConnectError": "could not connect to the server",
    "ConnectionRefusedError": "could not connect to the server (connection refused)",
    "ReadTimeout": "timed out waiting for the server to send more of the response",
    "WriteTimeout": "timed out sending the request",
    "PoolTimeout": "timed out waiting for a free connection in the client's pool",
    "RemoteProtocolError": "the server closed the connection or broke HTTP mid-response",
    "LocalProtocolError": "the request could not be sent as HTTP (an invalid header value?)",
    "UnsupportedProtocol": "the URL's scheme is not one the client speaks",
    "ConnectionResetError": "the connection was reset",
    "ReadError": "reading the response failed",
    "WriteError": "sending the request failed",
    "DecodingError": "could not decode the response body (content encoding)",
    "TooManyRedirects": "too many redirects",
    "ProxyError": "the proxy failed",
    "TimeoutException": "the request timed out",
}

_CLOSED_BEFORE = "the client was closed before the request was sent"
_CLOSED_DURING = "the client was closed while the request or the response was under way"
_CANCELLED = "the stream's task was cancelled before the response ended"
_LOOP_STOPPED = "did the event loop stop (asyncio.run() return) while the stream still ran?"
_KEEP_OPEN = (
    "An async stream (or one on a scheduler) runs after subscribe() returns: keep the "
    "client open and the loop running until it ends, e.g. inside the `async with` block "
    "`await source.pipe(...)` or `async for item in rs.to_async_iterator(source.pipe(...))`"
)


def transport_types() -> tuple[type[Exception], ...]:
    """The exception types a transport failure arrives as (httpx's, httpx2's, OSError)."""
    types: list[type[Exception]] = [OSError]
    for name in ("httpx", "httpx2"):
        module = sys.modules.get(name)
        # RequestError: TransportError (timeouts, network, protocol), DecodingError,
        # TooManyRedirects; StreamError: a response closed under the reader.
        for attr in ("RequestError", "StreamError"):
            cls = getattr(module, attr, None)
            if isinstance(cls, type) and issubclass(cls, Exception):
                types.append(cls)
    return tuple(types)


def _bare_copy(exc: BaseException, detail: str) -> BaseException | None:
    """An exception of `exc`'s type with its (redacted) message and nothing else.

    So `isinstance(error.__cause__, httpx.ReadTimeout)` still tells what
    failed, while the original, which keeps the request and its headers (and
    a traceback full of locals), stays out of reach.
    """
    try:
        copy = type(exc)(detail)
    except Exception:
        return None
    return copy if type(copy) is type(exc) else None

"""The HTTP boundary: what a source may accept from a response, and every error it maps.

Everything that turns an HTTP answer or an httpx failure into an rxstream
error happens here, once, for the sync and the async paths alike:

- the client and response protocols the sources are typed against (httpx and
  the httpx2 fork both fit; neither is imported here);
- which answers are a stream (`accepted`): a 2xx status with an event-stream,
  NDJSON or (for bytes) AWS event-stream content type; anything else is
  refused (`Exchange.refuse`): read to a bounded excerpt, it becomes
  `HTTPStatusError` or `UnexpectedContentTypeError`;
- the one exception boundary (`Exchange.mapped`, a context manager around
  the whole exchange, from building the request to the body's last byte):
  a transport failure becomes `TransportError` saying what httpx reported
  and whether the client had been closed, a failure while a refused body is
  read is still the refusal, and nothing else: the httpx exception (which
  keeps the request and its headers) is neither chained nor left as context;
- credentials (`credentials.Credentials`): redacted from every error
  message, excerpt and body line a server echoes them in.

The read loops (`_loops`) and the public entry points (`sources`) sit above.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping
from typing import Any, Literal, Protocol, TypeAlias

from ..core.provider_errors import provider_message, retry_delay
from ..core.rate_limits import retry_after_seconds
from ..errors import (
    HTTPStatusError,
    StreamError,
    TransportError,
    UnexpectedContentTypeError,
    excerpt,
)
from .credentials import Credentials, describe

__all__ = [
    "ERROR_BODY_LIMIT",
    "AsyncClient",
    "AsyncResponse",
    "BodyKind",
    "Exchange",
    "Refusal",
    "SyncClient",
    "SyncResponse",
    "accepted",
    "check_header_values",
    "header",
    "request_of",
    "retry_after",
    "should_retry",
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


def accepted(response: Any, *, binary: bool) -> bool:
    """Whether `response` is a stream a source reads (else `Exchange.refuse` says why).

    A 2xx status with an event-stream or NDJSON content type, or an AWS event
    stream when the source hands out bytes. A response with no content
    type at all is read too: what its body holds is judged as it arrives.
    """
    status: int = response.status_code
    if not 200 <= status < 300:
        return False
    content_type = header(response.headers, "content-type")
    if not content_type or not _mime(content_type):
        return True
    kind = body_kind(content_type)
    return kind is not None and (binary or kind != "eventstream")


def retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds to wait from `retry-after-ms` or `Retry-After` (seconds or an HTTP date)."""
    return retry_after_seconds(headers, time.time())


def should_retry(headers: Mapping[str, str]) -> bool | None:
    """What `x-should-retry` says (`true` / `false`, as the OpenAI and Anthropic APIs send it)."""
    value = header(headers, "x-should-retry")
    text = value.strip().lower() if value is not None else ""
    return True if text == "true" else False if text == "false" else None


def request_of(response: object) -> Any:
    """The request a response answers, or None (httpx raises when it has none)."""
    try:
        return getattr(response, "request", None)
    except RuntimeError:  # httpx: "The request instance has not been set on this response."
        return None


# --------------------------------------------------------------------------- one exchange


class Exchange:
    """One request and its answer, as its errors see them: the one exception boundary.

    Holds what a message may call the request (`where`: the method and the URL
    without query string or userinfo, never a header), the credentials to
    redact, the client (to tell a closed client from a failed connection) and,
    once an answer was refused, the `Refusal` reading its body. Every error a
    source raises for an HTTP answer or an httpx failure is made here, for
    the sync and the async paths alike; `mapped()` is where they are raised.

    Args:
        request: the request (httpx or alike), or None when it is unknown.
        client: the client that sends it (None for `from_response`).
    """

    __slots__ = ("_client", "_refusal", "credentials", "where")

    def __init__(self, request: Any = None, *, client: Any = None) -> None:
        self._client = client
        self._refusal: Refusal | None = None
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

    @contextlib.contextmanager
    def mapped(self) -> Iterator[None]:
        """Map what goes wrong inside the block to rxstream's errors (httpcore's `map_exceptions`).

        A `StreamError` passes as it is; a transport failure (or a closed
        client, or a header the client could not encode) becomes the
        `TransportError` of `failure`; while a refused answer's body is read,
        any failure is the refusal itself (what arrived is quoted all the
        same). Anything else passes unchanged. The mapped error is raised
        `from` its bare cause (or None): its context, the httpx exception,
        which keeps the request and its headers, is hidden, and the read loops
        drop a hidden context altogether.
        """
        try:
            yield
        except StreamError:
            raise
        except Exception as exc:
            error = self.failure(exc)
            if error is None:
                raise
            raise error from error.__cause__

    def refuse(self, response: Any) -> Refusal:
        """The reader of an answer that is not a stream (see `accepted`): it raises its error."""
        self._refusal = Refusal(response, self)
        return self._refusal

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
        # Redacted again once decoded: what is shown is the provider's message.
        message = provider_message(text) if complete else None
        wait = retry_after(headers)
        if wait is None and complete:
            wait = retry_delay(text)
        return HTTPStatusError(
            status,
            reason=redact(reason) if isinstance(reason, str) else "",
            body=shown,
            provider_message=redact(message) if message else message,
            retry_after=wait,
            request=self.where,
            should_retry=should_retry(headers),
        )

    def failure(self, exc: BaseException) -> StreamError | None:
        """The error that stands for `exc`; None when `exc` is no failure of the exchange.

        While a refused body is read: the refusal. Else a `TransportError`
        whose message says what failed and what httpx reported (redacted),
        and whether the client had been closed; its `__cause__` is a bare
        exception of the same type with that message, so the httpx exception,
        which keeps the request and its headers, is not reachable.
        """
        if isinstance(exc, StreamError):
            return None
        if self._refusal is not None:
            return self._refusal.error(complete=False)
        if isinstance(exc, RuntimeError) and "client has been closed" in str(exc):
            return TransportError(f"{self._head(_CLOSED_BEFORE)}. {_KEEP_OPEN}", retryable=False)
        if isinstance(exc, UnicodeEncodeError):
            # Its `object` and `args` hold the whole header value: a key, often.
            return TransportError(
                f"{self._head(_NOT_ASCII)} (at position {exc.start}). {_ASCII}", retryable=False
            )
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
        closed = what == _CLOSED_DURING
        error = TransportError(f"{text}. {_KEEP_OPEN}" if closed else text, retryable=not closed)
        error.__cause__ = _bare_copy(exc, detail)
        return error

    def cancelled(self) -> StreamError:
        """The error for an async stream whose task someone other than its observer cancelled."""
        closed = getattr(self._client, "is_closed", False) is True
        head = self._head(_CANCELLED) + (", and its client was closed" if closed else "")
        return TransportError(f"{head}: {_LOOP_STOPPED} {_KEEP_OPEN}", retryable=False)

    def _head(self, what: str) -> str:
        return f"{what} ({self.where})" if self.where else what


class Refusal:
    """Read the head of a body that is not a stream, then raise the error that quotes it.

    `feed` collects up to `ERROR_BODY_LIMIT` bytes and raises once it has
    them; `close` (the whole body is in) raises too, and so does a failure
    while reading (`Exchange.mapped`), quoting what arrived.
    """

    __slots__ = ("_body", "_exchange", "_response")

    def __init__(self, response: Any, exchange: Exchange) -> None:
        self._response = response
        self._exchange = exchange
        self._body = bytearray()

    def feed(self, block: bytes) -> list[Any]:
        """Collect `block`; raise the refusal once the head is full."""
        self._body += block
        if len(self._body) >= ERROR_BODY_LIMIT:
            raise self.error(complete=False)
        return []

    def close(self) -> list[Any]:
        """The whole body is in: raise the refusal quoting it."""
        raise self.error(complete=True)

    def error(self, *, complete: bool) -> StreamError:
        """The refusal, quoting the body that arrived (all of it if `complete`)."""
        body = bytes(self._body[:ERROR_BODY_LIMIT])
        return self._exchange.refusal(self._response, body, complete=complete)


def check_header_values(headers: object) -> None:
    """Raise `ValueError` if a `str` header value holds a character that is not ASCII.

    HTTP header values are ASCII; httpx raises a bare `UnicodeEncodeError`
    whose `args` hold the whole value, an API key most often (a typographic
    quote or a non-breaking space pasted with it). The message names the
    header and the position, never the value.

    Args:
        headers: what was passed as `headers=` (a mapping or pairs), or None.

    >>> try:
    ...     check_header_values({"Authorization": "Bearer sk-\u00e91234"})
    ... except ValueError as error:
    ...     print(str(error)[:75])
    the value of header 'Authorization' holds a character that is not ASCII (at
    """
    if headers is None or isinstance(headers, str | bytes) or hasattr(headers, "multi_items"):
        return  # nothing, or httpx `Headers`, whose values are encoded already
    items: Iterable[Any]
    if isinstance(headers, Mapping):
        items = headers.items()
    elif isinstance(headers, Iterable):
        items = headers
    else:
        return
    for item in items:
        if not isinstance(item, tuple) or len(item) != 2:
            return  # not pairs: httpx says what is wrong with them
        name, value = item
        if not isinstance(value, str) or value.isascii():
            continue
        position = next(i for i, char in enumerate(value) if not char.isascii())
        raise ValueError(
            f"the value of header {str(name)!r} holds a character that is not ASCII (at "
            f"position {position}); {_ASCII}"
        )


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

_NOT_ASCII = "the request could not be encoded: a header value holds a character that is not ASCII"
_ASCII = (
    "HTTP header values must be ASCII: check the key or token for a stray character "
    "(its value is not shown)"
)
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

"""The exception tree: every way a stream can go wrong is a `StreamError`.

Each error says what was expected and what arrived, quoting a bounded excerpt
of the offending line or body. None of them ever carries a request header, so
an API key cannot leak through an error message or a log of one.

Caller mistakes (bad arguments, feeding a machine after `close()`) are plain
`ValueError` / `TypeError` / `RuntimeError`, not `StreamError`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # models import this module; the annotation alone needs theirs
    from .models import Message

__all__ = [
    "EXCERPT_LIMIT",
    "BufferOverflowError",
    "EmptyStreamError",
    "HTTPStatusError",
    "JSONStreamError",
    "LimiterError",
    "LineTooLongError",
    "MalformedChunkError",
    "OutputValidationError",
    "ProviderError",
    "RetryError",
    "StoredStreamError",
    "StreamError",
    "StreamTimeoutError",
    "ToolArgumentsError",
    "ToolError",
    "TransportError",
    "TruncatedStreamError",
    "UnexpectedContentTypeError",
    "excerpt",
]

#: How many characters of an offending line or body an error message quotes.
EXCERPT_LIMIT = 200


def excerpt(text: str | bytes, limit: int = EXCERPT_LIMIT) -> str:
    """Return `text` cut to at most `limit` characters, marking the cut.

    Bytes are decoded as UTF-8 with replacement first, so any body can be quoted.

    >>> excerpt("x" * 300, limit=10)
    'xxxxxxxxxx… (300 chars)'
    """
    total, unit = len(text), "chars"
    if isinstance(text, bytes | bytearray):
        # Decode only what can be shown: 4 bytes per character at the most.
        text, unit = bytes(text[: limit * 4]).decode("utf-8", "replace"), "bytes"
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({total} {unit})"


# Control bytes a text body holds; any other (NUL, ...) makes it binary.
_TEXT_CONTROLS = frozenset(b"\t\n\r\f")


def escaped(data: bytes | bytearray, limit: int = EXCERPT_LIMIT) -> str | None:
    """A printable excerpt of a binary body (None for text): non-printables escaped, bounded.

    A body with a control byte that no text holds (a NUL, ...) in what is
    shown is binary (an AWS event stream's framing); it is quoted as a bytes
    literal's inside, `\\x00`-escaped, at most `limit` characters.

    >>> escaped(b"\\x00\\x00\\x00\\xa5:event-type"), escaped(b"plain text")
    ('\\\\x00\\\\x00\\\\x00\\\\xa5:event-type', None)
    """
    head = bytes(data[: limit * 4])
    if not any((byte < 0x20 and byte not in _TEXT_CONTROLS) or byte == 0x7F for byte in head):
        return None
    shown = repr(head)[2:-1]
    if len(shown) <= limit and len(head) == len(data):
        return shown
    return f"{shown[:limit]}… ({len(data)} bytes)"


class StreamError(Exception):
    """Base class of everything that can go wrong with a stream.

    Attributes:
        partial: what arrived before the error, as one `Message` (the first
            choice's: what `rs.accumulate_message()` would have given, a tool
            call cut in its arguments kept with `complete=False`, and
            `finish_reason` None for a choice that never finished), or None
            when no delta arrived. Filled by the pipeline the error passes
            through (`rs.decode`, `rs.chat`, `rs.timeouts`, `rs.stop_on`,
            `rs.multicast`, `rs.from_redis_stream`); a stage never replaces
            a partial an earlier one gave. Every error pickles and copies with
            its attributes, `partial` included.
    """

    partial: Message | None = None

    def __reduce__(self) -> tuple[Any, ...]:
        # Rebuilt as it was (its `args`, so its str and repr, and its
        # attributes, `partial` too) without calling `__init__`, whose
        # arguments differ from class to class: every error pickles and copies.
        return (_rebuild, (type(self), self.args, self.__dict__))


def _rebuild(cls: type[StreamError], args: tuple[Any, ...], state: dict[str, Any]) -> StreamError:
    """A `StreamError` of class `cls` with these `args` and attributes (see `__reduce__`)."""
    error = cls.__new__(cls, *args)
    error.args = args
    error.__dict__.update(state)
    return error


class HTTPStatusError(StreamError):
    """The server answered with a non-2xx status.

    Attributes:
        status_code: the HTTP status.
        retry_after: seconds to wait before retrying, from `retry-after-ms` or
            `Retry-After` (seconds or an HTTP date), else from Gemini's
            `RetryInfo.retryDelay` in the error body, or None.
        provider_message: the provider's own error message when the body was
            JSON in the usual `{"error": {"message": ...}}` shape.
        body: a bounded excerpt of the response body.
        should_retry: what the server's `x-should-retry` header said (`true`
            or `false`), or None when it sent none.
    """

    def __init__(
        self,
        status_code: int,
        *,
        reason: str = "",
        body: str = "",
        provider_message: str | None = None,
        retry_after: float | None = None,
        request: str = "",
        should_retry: bool | None = None,
    ) -> None:
        self.status_code = status_code
        self.should_retry = should_retry
        self.reason = reason
        self.body = body
        self.provider_message = provider_message
        self.retry_after = retry_after
        self.request = request
        head = f"HTTP {status_code}{' ' + reason if reason else ''}"
        if request:
            head += f" from {request}"
        detail = provider_message if provider_message else (body or "(empty body)")
        text = f"{head}: {detail}"
        if retry_after is not None:
            text += f" (retry after {retry_after:g} s)"
        super().__init__(text)


class UnexpectedContentTypeError(StreamError):
    """A 2xx answer whose content type is not a stream: not an event stream, not
    NDJSON (nor, for raw bytes, an AWS event stream). Raised before any parsing.

    Attributes:
        content_type: the content type that arrived.
        status_code: the HTTP status.
        body: a bounded excerpt of the body.
        hint: what such an answer usually means (e.g. a JSON answer: the request
            did not ask for a stream), or "".
    """

    def __init__(
        self, content_type: str, *, status_code: int, body: str = "", hint: str | None = None
    ) -> None:
        self.content_type = content_type
        self.status_code = status_code
        self.body = body
        self.hint = _content_type_hint(content_type) if hint is None else hint
        hint = self.hint
        why = f" ({hint})" if hint else ""
        super().__init__(
            f"expected a stream (text/event-stream or NDJSON), got HTTP {status_code} with "
            f"content type {content_type!r}{why}: {body or '(empty body)'}"
        )


def _content_type_hint(content_type: str) -> str:
    mime = content_type.split(";", 1)[0].strip().lower()
    if mime == "application/vnd.amazon.eventstream":
        return "a binary AWS event stream: read it with body='bytes' and rs.eventstream_frames()"
    if mime == "application/json" or (mime.startswith("application/") and mime.endswith("+json")):
        return "a whole JSON answer: did the request ask for a stream (stream: true, alt=sse)?"
    if mime in ("text/html", "application/xhtml+xml"):
        return "an HTML page: a wrong URL, a proxy or a login page?"
    return ""


class TransportError(StreamError):
    """The connection failed (refused, reset, read timeout, incomplete body, too many
    redirects), the client was closed, or an async stream's event loop stopped under it.

    The message says what happened and what httpx reported. The `__cause__` is
    a bare exception of the httpx (or OS) exception's type with that message,
    so `isinstance(error.__cause__, httpx.ReadTimeout)` works, but it holds no
    request: the original, which keeps the request's headers, is not kept.

    Attributes:
        retryable: False when sending the request again cannot help: the client
            was closed, a header value cannot be encoded, the event loop
            stopped under the stream (`rs.chat(..., retry=...)` does not retry
            those); True otherwise.
    """

    def __init__(self, *args: object, retryable: bool = True) -> None:
        self.retryable = retryable
        super().__init__(*args)


class StreamTimeoutError(StreamError):
    """A stream exceeded one of its time limits (`first`, `idle` or `total`)."""

    def __init__(self, limit: str, seconds: float, message: str | None = None) -> None:
        self.limit = limit
        self.seconds = seconds
        super().__init__(message or f"stream exceeded its {limit!r} time limit of {seconds:g} s")


class ProviderError(StreamError):
    """The provider reported an error inside an HTTP 200 stream.

    Attributes:
        message: the provider's message.
        type: the provider's error type, if any.
        code: the provider's error code (string or number), if any.
        payload: the decoded JSON the error arrived in (or None).
        event: the SSE event name the error arrived with.
    """

    def __init__(
        self,
        message: str,
        *,
        type: str | None = None,
        code: str | int | None = None,
        payload: Any = None,
        event: str = "message",
    ) -> None:
        self.message = message
        self.type = type
        self.code = code
        self.payload = payload
        self.event = event
        parts = [p for p in (type, None if code is None else f"code {code!r}") if p]
        head = f"provider error ({', '.join(parts)})" if parts else "provider error"
        super().__init__(f"{head}: {message}")


class MalformedChunkError(StreamError):
    """A frame's data is not what its dialect sends: invalid JSON, not an object, a
    field of the wrong type, an event of another dialect, a broken binary frame.

    Attributes:
        reason: what is wrong, naming the JSON path where it applies.
        data: the offending data (its excerpt is in the message).
        dialect: the dialect that was decoding (`"anthropic"`, ...), or None.
    """

    def __init__(self, reason: str, data: str | bytes, *, dialect: str | None = None) -> None:
        self.reason = reason
        self.data = data
        self.dialect = dialect
        what = f"malformed {dialect} data" if dialect else "malformed chunk"
        super().__init__(f"{what} ({reason}): {excerpt(data)!r}")


class JSONStreamError(MalformedChunkError):
    """Streamed JSON that is not JSON: what the incremental reader refused, and where.

    Raised by `rxstream.core.json_stream.JSONStreamParser` (and so by
    `rs.partial_object`, `rs.elements`, `rs.json_patches`) as soon as the
    text cannot be the prefix of a JSON document: a trailing comma, a leading
    zero, a control character or a bad escape in a string (at the escape,
    not at the closing quote), a lone `-`, `NaN`/`Infinity` (strict JSON),
    text after the top value, nesting past the reader's limit; and at the end
    of the input when the document is unfinished (or absent). `rs.partial_object`
    reads text no snapshot is due for with the next piece, and `rs.elements` an
    element's text once it can have closed: there it comes later, with the
    same offset, path and reason.

    Attributes:
        reason: what was expected and what arrived.
        data: the text around the offending place (its excerpt is in the message).
        offset: the character offset in the whole streamed text.
        path: where in the document, as a JSON Pointer (`""` for the top value).
    """

    def __init__(self, reason: str, data: str, *, offset: int, path: str) -> None:
        self.reason = reason
        self.data = data
        self.dialect = None
        self.offset = offset
        self.path = path
        where = f"at offset {offset}, path {path!r}"
        StreamError.__init__(self, f"invalid JSON {where} ({reason}): {excerpt(data)!r}")


class OutputValidationError(StreamError):
    """The final JSON value of a typed stream does not fit the type or schema asked for.

    Raised by `rs.partial_object(output=...)` and `rs.elements(..., item=...)`
    once the value (or the element) has closed: incomplete values are never
    validated.

    Attributes:
        text: the raw JSON text of the value that failed.
        errors: the validator's errors, each a dict with at least `loc` (a
            tuple path) and `msg` (pydantic's shape, which the other
            validators are mapped to).
        path: where the value sits in the document, as a JSON Pointer.
    """

    def __init__(self, *, text: str, errors: tuple[dict[str, Any], ...], path: str = "") -> None:
        self.text = text
        self.errors = errors
        self.path = path
        first = "; ".join(
            f"{'/'.join(map(str, e.get('loc', ()))) or '(top)'}: {e.get('msg')}" for e in errors[:3]
        )
        more = f" (and {len(errors) - 3} more)" if len(errors) > 3 else ""
        where = f" at {path!r}" if path else ""
        super().__init__(
            f"the JSON value{where} does not validate: {first}{more}; it was {excerpt(text)!r}"
        )


class TruncatedStreamError(StreamError):
    """The input ended before the dialect's end marker, while an answer was unfinished.

    Also a stream cut in the middle of a line or of an event (the last line
    without its line end, or the last event without its blank line, that does
    not decode): the message says "ended in the middle of a line" (or "of an
    event") and quotes the end of what arrived; `__cause__` is the
    `MalformedChunkError` the cut text would be. (A last line or event that
    merely lacks its terminator and decodes is no error: real servers end so.)

    Attributes:
        unfinished: the choices left unfinished, where the dialect tells (OpenAI chat).
    """

    def __init__(self, message: str, *, unfinished: tuple[int, ...] = ()) -> None:
        self.unfinished = unfinished
        super().__init__(message)


class EmptyStreamError(TruncatedStreamError):
    """A successful answer that brought no chat data at all.

    An empty body, a body of keep-alive comments only, a stream whose only
    chunk is usage, or `[DONE]` with nothing before it: the request did not
    fail in HTTP terms, but no answer arrived, and that must not pass for an
    empty success. A `TruncatedStreamError`, so code that already catches
    short streams catches this one too.

    What an answer is, in every dialect: at least one delta the model
    produced (a non-empty `TextDelta`, `ReasoningDelta` or `RefusalDelta`, a
    `ToolCallDelta`, a `Citation`, a `ServerToolCall` or `ServerToolResult`,
    `ReasoningState`) or a `Finish` (whatever its reason: the provider says
    why the answer ended, even an empty one). A message start or role, pings
    and keep-alives, `Usage` and `Metadata` are not. A stream whose end
    marker arrives (`[DONE]`, `message_stop`, `message-end`, ...), or that
    ends complete, without an answer before it raises this error, so a
    stream that completes normally always gave `accumulate_message()` a
    message.

    Attributes:
        reason: what arrived instead of an answer, in words.
        status_code: the HTTP status, when the error was raised where it is known.
        content_type: the response's content type, likewise.
        body: a bounded excerpt of what arrived (may be empty).
    """

    def __init__(
        self,
        reason: str,
        *,
        status_code: int | None = None,
        content_type: str | None = None,
        body: str = "",
    ) -> None:
        self.reason = reason
        self.status_code = status_code
        self.content_type = content_type
        self.body = body
        text = f"the stream brought no answer: {reason}"
        if status_code is not None:
            text += f" (HTTP {status_code}, content type {content_type or '(none)'!r})"
        if body:
            text += f": {body!r}"
        super().__init__(text)


class LineTooLongError(StreamError):
    """A line grew past the splitter's limit without a line terminator."""

    def __init__(self, limit: int, head: str | bytes) -> None:
        self.limit = limit
        super().__init__(
            f"line longer than the limit of {limit} without a line break; it starts with "
            f"{excerpt(head)!r}"
        )


class ToolArgumentsError(StreamError):
    """A tool call's accumulated arguments are not valid JSON (or not an object)."""

    def __init__(self, *, name: str | None, id: str | None, arguments: str, reason: str) -> None:
        self.name = name
        self.id = id
        self.arguments = arguments
        self.reason = reason
        super().__init__(
            f"arguments of tool call {name!r} (id {id!r}) are not a JSON object ({reason}): "
            f"{excerpt(arguments)!r}"
        )


class ToolError(StreamError):
    """A tool of a run (`rs.run(..., tool_errors="raise")`) raised or ran out of time.

    `__cause__` is the tool's own exception (`TimeoutError` for a timeout).

    Attributes:
        name: the tool's name.
        call_id: the id of the call.
        reason: what went wrong, in words.
    """

    def __init__(self, *, name: str, call_id: str, reason: str) -> None:
        self.name = name
        self.call_id = call_id
        self.reason = reason
        super().__init__(f"tool {name!r} (call {call_id!r}) failed: {reason}")


class BufferOverflowError(StreamError):
    """An observer of `rs.multicast` fell behind with `overflow="error"`: its buffer was full.

    Attributes:
        maxsize: the observer's buffer size.
        observer: the name given to the observer (or None).
        item: a bounded `repr` excerpt of the item that did not fit.
    """

    def __init__(self, maxsize: int, *, observer: str | None = None, item: object = None) -> None:
        self.maxsize = maxsize
        self.observer = observer
        self.item = excerpt(repr(item))
        who = f"observer {observer!r}" if observer else "an observer"
        super().__init__(
            f"{who} fell behind: its buffer of {maxsize} item(s) (overflow='error') was full "
            f"when {self.item} arrived"
        )


class StoredStreamError(StreamError):
    """A stream kept in a store (a Redis Stream) cannot be written or read as asked.

    Raised by `rs.to_redis_stream` and `rs.from_redis_stream` when what the
    store holds does not fit: the key holds another type of value (or already
    holds a stream, for a producer), an entry was not written by rxstream or
    is in a newer format, a resume id (an SSE `Last-Event-ID`) is malformed
    or names no entry of the stream, or entries a reader still needed are
    gone (trimmed by `maxlen`, or lost when the store restarted without them).
    The message says which, naming the key, the ids and the entry numbers.

    Attributes:
        key: the store's key.
        reason: what is wrong, in words.
        after: the resume id the reader was given or had reached, or None.
        missing: the numbers of the entries that are gone (first, last), or None.
    """

    def __init__(
        self,
        key: str,
        reason: str,
        *,
        after: str | None = None,
        missing: tuple[int, int] | None = None,
    ) -> None:
        self.key = key
        self.reason = reason
        self.after = after
        self.missing = missing
        super().__init__(f"stream {key!r}: {reason}")


class LimiterError(StreamError):
    """A rate limiter (`rs.Limiter`, `rs.RedisLimiter`) cannot admit a request.

    Raised (via `on_error`) when a request asks more tokens than the whole
    budget of a minute (it could never be admitted), or when the store a
    shared limiter keeps its budget in (Redis) failed: the message names the
    limiter, the store and what failed.

    Attributes:
        limiter: the limiter's name (`"Limiter"`, or the Redis key prefix).
        reason: what failed, in words.
    """

    def __init__(self, limiter: str, reason: str) -> None:
        self.limiter = limiter
        self.reason = reason
        super().__init__(f"{limiter}: {reason}")


class RetryError(StreamError):
    """`rs.chat(..., retry=...)` gave up before any output: the attempts or the deadline ran out.

    The message names every attempt (its route, its error, the wait before
    it); `__cause__` is the last attempt's error.

    Attributes:
        reason: why it gave up, in words.
        attempts: one record per attempt, as in `Message.metadata["attempts"]`:
            `{"route": {"dialect", "model"} | None, "error": str | None,
            "error_type": str | None, "wait": seconds, "usage": dict | None}`.
        last: the last attempt's error.
    """

    def __init__(self, reason: str, *, attempts: tuple[dict[str, Any], ...], last: StreamError):
        self.reason = reason
        self.attempts = attempts
        self.last = last
        listed = "; ".join(
            f"{n}. {_route_words(a.get('route'))}: {a.get('error') or 'no error'}"
            + (f" (after a wait of {a['wait']:.3g} s)" if a.get("wait") else "")
            for n, a in enumerate(attempts, 1)
        )
        count = len(attempts)
        super().__init__(
            f"gave up after {count} attempt{'s' if count != 1 else ''} ({reason}): {listed}"
        )


def _route_words(route: object) -> str:
    if isinstance(route, dict):
        return f"{route.get('dialect')} {route.get('model')}"
    return "the source"

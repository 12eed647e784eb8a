"""Items back into server-sent events: the bytes a server sends to a browser or an SDK.

Input: pipeline items (deltas, `SSEFrame`s, and for the `"rxstream"` format
any item `rxstream.core.wire` encodes), each optionally wrapped in a `StreamEntry` that
gives its id in a durable log; then the end of the stream or its error.
Output: the bytes of SSE events, one `bytes` object per event.

Formats:

- a dialect that streams SSE (`"openai-chat"`, `"openai-responses"`,
  `"anthropic"`, `"gemini"`, `"cohere"`, and `"ai-sdk"`, the AI SDK's UI
  message stream): deltas are rendered by that
  dialect's renderer (`core.dialects.renderer`), the end is the dialect's
  end marker (`renderer.close()`: `[DONE]`, `message_stop`, ...), an error
  the dialect's error event (`renderer.error()`). `SSEFrame`s are written
  as they are (a proxy passing a provider's own events on): once a frame
  was written, the stream's end is the frames' own business and `close()`
  adds nothing. `"ollama"` (NDJSON lines) and `"bedrock"` (AWS
  event-stream messages) are not event streams: asking for them is a
  `ValueError`.
- `"rxstream"`: rxstream's own event format for browsers, below.

This module renders (a dialect's renderer, or `rxstream.core.wire` for the
`"rxstream"` format) and numbers the events; the SSE text itself is written by
the one writer, `rxstream.core.sse.event_text`, which refuses a field it
cannot write (an `SSEFrame` event name, an id, holding a line break or NUL)
with a `ValueError` naming the field. The encoder then takes only `error()`.

The `"rxstream"` format (version 1, `rxstream.core.wire.FORMAT_VERSION`; see
docs/concepts/wire-format.md). One item is one event; its name is the item's
type and its data the item's JSON (`rxstream.core.wire.encode`), compact, on
one line::

    event: text
    id: 1
    data: {"type":"text","text":"Hel","choice":0}

The item types are those of `rxstream.core.wire`: `text`, `reasoning`, `refusal`,
`tool_call`, `finish`, `usage`, `citation`, `empty_citations`, `text_block_start`,
`server_tool_call`, `server_tool_result`, `reasoning_state`, `metadata`, `reset` (deltas), `frame`,
`chunk`, `eventstream_message`, `call` (a complete `ToolCall`), `message`,
`token_count`. A stream ends with exactly one of two events::

    event: done
    id: 3
    data: {"type":"done","version":1}

    event: error
    id: 3
    data: {"type":"error","error":"ProviderError","message":"...","attributes":{...}}

The error object is `wire.encode_error`'s (so `wire.decode` gives the
`StreamError` back, same class and attributes). An exception that is not a
`StreamError` (a bug on the server's side) is reported as a plain
`StreamError` naming only its class: its message may hold anything.
In a browser::

    const source = new EventSource("/chat/42");
    source.addEventListener("text", (e) => show(JSON.parse(e.data).text));
    source.addEventListener("done", () => source.close());
    source.addEventListener("error", (e) => {      // the stream's error event has data,
      if (e.data) { fail(JSON.parse(e.data).message); source.close(); }  // a lost connection none
    });

(A `Message` item is the event `message`, SSE's default type, so it goes
without an `event:` line and `onmessage` receives it.)

Ids (every event has one, except in the one case named last, and in the
`"gemini"` dialect, whose events carry none: see keep-alives below):

- an event from a plain item gets the next number of a counter (`1`, `2`,
  ...); the closing and error events too;
- an event from a `StreamEntry` gets the entry's id, on the last event the
  entry renders to; events before it in the same group (a dialect may give
  several events for one delta) get the id of the position before the entry.
  So a browser that loses the connection in the middle of a group resumes
  (`Last-Event-ID`) before the whole item, never after half of it; in the
  `"rxstream"` format an entry is always exactly one event;
- the closing and error events of a stream that carried entries, or that
  resumed after `after`, repeat the last position (a reconnect after
  the end resumes after everything and gets only the end again);
- the events of a stream's first entry group, before any position is known,
  carry no id.

A resumed stream is a new rendering of the rest: in a dialect format it opens
the dialect's message again (`message_start`, a role chunk); only the
`"rxstream"` format resumes item for item.

Keep-alives and ids, per dialect: what the real server sends and what the
format's official client reads (the conformance tests in `tests/conformance`
read every rendering with that client):

- `"openai-chat"`, `"openai-responses"`: the keep-alive is the comment line
  alone (`: keep-alive` and its LF, no blank line after it). The openai SDK's
  decoder never resets its last event id, so once events carry `id:` a blank
  line with nothing before it dispatches an empty event, which the SDK then
  fails to parse as JSON. A lone comment line dispatches nothing in any
  client (the next event's blank line ends the event that follows it).
- `"anthropic"`, `"cohere"`, `"rxstream"`: a comment and its blank line
  (`: keep-alive`); the anthropic and cohere SDKs skip an event without data.
- `"gemini"`: no ids, no `retry`, no comments: google-genai strips `data: `
  and parses every other non-blank line as JSON. The keep-alive is a blank
  line (CRLF), which google-genai, browsers and httpx-sse all pass over; a
  Gemini stream cannot be resumed by `Last-Event-ID` (google-genai never
  resumes), and `retry` is a `ValueError`.

A `retry` given is written once, on the first event. Gemini's events end
their lines with CRLF as Gemini does, every other format with LF.

Encoded once per item: in the `"rxstream"` format an item's event is a pure
function of the item (and of the entry id, or the event's number), so the
bytes are kept, per item object, in a small process-wide cache (the last
1536 to 2048 items, events up to 16 KiB) that every encoder shares: a
server that fans one stream out to many connections (`rs.multicast`, then
`sse_response` per client) encodes each item's JSON once, not once per
client. Items are frozen, and the cache holds the item itself, so an
object's identity cannot be reused while its bytes are kept. A dialect's
renderer has state of its own (a message opened, a block begun) and renders
for each encoder.

Invariants: `feed` returns a list of `bytes` (possibly empty); after `close()`
or `error()` the machine takes no more input; a failed `feed` leaves only
`error()` callable, so the stream can still end with its error event.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from itertools import islice
from typing import TYPE_CHECKING, Any

from ..._deprecate import deprecated_arguments, moved_names, warn_deprecated
from ..._fast import enabled
from ...errors import HTTPStatusError, ProviderError, StreamError
from ...models import DELTA_CLASSES, RUN_ITEM_CLASSES, Delta, SSEFrame, StreamEntry, TextDelta
from .. import wire
from ..sse import check_field, check_retry, comment_text, event_text
from ..wire import RXSTREAM
from . import Renderer, renderer

__all__ = ["KEEPALIVE", "RXSTREAM", "SSE_DIALECTS", "SSEEncoder"]

#: The dialects `SSEEncoder` (and `rs.to_sse`) writes: those that stream SSE, and rxstream's.
SSE_DIALECTS = (
    "openai-chat",
    "openai-responses",
    "anthropic",
    "gemini",
    "cohere",
    "ai-sdk",
    RXSTREAM,
)

if TYPE_CHECKING:
    #: The former name of `SSE_DIALECTS` (deprecated: reading it warns).
    SSE_FORMATS = SSE_DIALECTS
else:
    __getattr__ = moved_names(__name__, {"SSE_FORMATS": f"{__name__}:SSE_DIALECTS"})

#: A keep-alive comment (LF-terminated).
KEEPALIVE = comment_text("keep-alive").encode()

#: Dialects whose events carry no `id:` (and no `retry:`): their client reads no other field.
_NO_IDS = frozenset({"gemini"})

_NOT_SSE = {"ollama": "NDJSON lines", "bedrock": "AWS event-stream messages"}
_SURROGATE = re.compile("[\ud800-\udfff]")

# The "rxstream" events of the last items encoded, shared by every encoder
# (see the module docstring), keyed by the item object's id and holding the
# item: (entry, its whole event, b"") for an entry; (item, its `event:` line,
# its data lines) for a plain item, whose `id:`, a number, is each encoder's own.
# Bounded: at most the last `_CACHE_ITEMS` items (the oldest quarter dropped at
# once when full), none whose event is over `_CACHE_EVENT_BYTES` (so at most 32 MiB,
# and far less for deltas). No lock (the
# core loads no threading): each dict operation is atomic, and a race between
# threads can only evict one item more or less, or encode one twice.
_CACHE_ITEMS = 2048
_CACHE_EVENT_BYTES = 16 << 10
_EVENTS: dict[int, tuple[object, bytes, bytes]] = {}


def _remember(item: object, first: bytes, second: bytes = b"") -> None:
    if len(first) + len(second) > _CACHE_EVENT_BYTES:
        return
    _EVENTS[id(item)] = (item, first, second)
    if len(_EVENTS) > _CACHE_ITEMS:
        _evict()


def _evict() -> None:
    """Drop the oldest quarter of the shared events at once.

    One by one, every eviction would walk from the dict's start over the slots
    the evictions before it emptied (a dict keeps them until it resizes), which
    cost a server writing one event per token about a µs an event.
    """
    try:
        oldest = list(islice(_EVENTS, len(_EVENTS) - _CACHE_ITEMS * 3 // 4))
    except RuntimeError:  # another thread changed it meanwhile: it evicts, or the next one does
        return
    for key in oldest:
        _EVENTS.pop(key, None)


class SSEEncoder:
    """Turn items into the bytes of SSE events, in a dialect or in rxstream's own format.

    See the module docstring for the formats and the id rules.

    Args:
        dialect: `"openai-chat"` (the default), `"openai-responses"`,
            `"anthropic"`, `"gemini"`, `"cohere"`, `"ai-sdk"` or `"rxstream"`
            (`format=`, its former name, still works with a `DeprecationWarning`).
        retry: a reconnection delay in milliseconds, written on the first event.
        after: the `Last-Event-ID` this stream resumes after (its
            closing event repeats it when no entry came after it).
        options: passed to the dialect's renderer (`model`, `id`, ...).

    Raises:
        ValueError: an unknown dialect, one that does not stream SSE,
            options for the `"rxstream"` format, a negative `retry`, a
            `after` with a line break (`last_event_id=`, its former name,
            still works with a `DeprecationWarning`).

    >>> from rxstream.models import TextDelta
    >>> encoder = SSEEncoder("rxstream")
    >>> encoder.feed(TextDelta("Hi"))
    [b'event: text\\nid: 1\\ndata: {"type":"text","text":"Hi","choice":0}\\n\\n']
    >>> encoder.close()
    [b'event: done\\nid: 2\\ndata: {"type":"done","version":1}\\n\\n']
    >>> encoder = SSEEncoder("openai-chat")
    >>> encoder.feed(StreamEntry("5-0", TextDelta("Hi")))[-1][:12]
    b'id: 5-0\\ndata'
    >>> encoder.close()
    [b'id: 5-0\\ndata: [DONE]\\n\\n']
    """

    __slots__ = (
        "_count",
        "_dialect",
        "_fast_text",
        "_frames",
        "_newline",
        "_position",
        "_renderer",
        "_retry",
        "_state",
        "_text_event",
    )

    @deprecated_arguments(renamed={"format": "dialect", "last_event_id": "after"})
    def __init__(
        self,
        dialect: str = "openai-chat",
        *,
        retry: int | None = None,
        after: str | None = None,
        **options: Any,
    ) -> None:
        self._dialect = _check_dialect(dialect)
        self._renderer: Renderer | None = None
        if dialect == RXSTREAM:
            if options:
                raise ValueError(
                    f"the 'rxstream' format takes no renderer options, got {sorted(options)!r}"
                )
            self._newline = "\n"
        else:
            self._renderer = renderer(dialect, **options)
            self._newline = getattr(self._renderer, "newline", "\n")
        if retry is not None:
            check_retry(retry)
            if dialect in _NO_IDS:
                raise ValueError(
                    f"the {dialect!r} dialect writes data lines only (its client parses "
                    "every other line as JSON), so it cannot carry retry"
                )
        self._retry = retry
        # A renderer's one event for a text delta, asked first (see `feed`), if it has it.
        self._text_event: Callable[[TextDelta], tuple[str, str] | None] | None = getattr(
            self._renderer, "text_event", None
        )
        # The "rxstream" format's text event through its template (`wire.text_event`).
        self._fast_text = enabled()
        if after is not None:
            after = _check_id(after, "after")
        self._position = after
        self._count = 0
        self._frames = False  # an SSEFrame was written as it is
        self._state = "open"

    @property
    def dialect(self) -> str:
        """The dialect (wire format) this encoder writes."""
        return self._dialect

    @property
    def format(self) -> str:
        """The former name of `dialect` (deprecated)."""
        warn_deprecated("SSEEncoder.format", "SSEEncoder.dialect")
        return self._dialect

    @property
    def position(self) -> str | None:
        """The id a client that saw everything so far resumes after (None: no entry yet)."""
        return self._position

    def feed(self, item: object) -> list[bytes]:
        """The events that send one item (a `StreamEntry` gives them its id).

        Returns:
            One `bytes` per event (none for a delta the dialect cannot express).

        Raises:
            TypeError: an item the dialect cannot send (a provider's dialect
                takes deltas and `SSEFrame`s; `"rxstream"` any item
                `rxstream.core.wire` encodes).
            ValueError: a field that cannot be written: a `StreamEntry` id,
                or an `SSEFrame`'s event name, holding a line break or NUL
                (the message names the field and shows an excerpt).
            RuntimeError: the encoder was closed, ended by an error, or failed.
        """
        if self._state != "open":
            raise RuntimeError(f"this SSEEncoder is {self._state}; it takes no more input")
        if type(item) is TextDelta and self._text_event is not None:
            # A server writes one per token: the renderer's event for it, when it
            # can tell it (the open text block's), without the layers below.
            event = self._text_event(item)
            if event is not None:
                return [self._event(event[1], event[0], self._next())]
        if self._renderer is None and self._retry is None:
            return self._feed_rxstream(item)
        try:
            entry: str | None = None
            if isinstance(item, StreamEntry):
                entry = _check_id(item.id, "a StreamEntry id")
                item = item.item
            events = self._render(item)
            if entry is None:
                return [self._event(data, name, self._next()) for name, data in events]
            last = len(events) - 1
            out = [
                self._event(data, name, entry if i == last else self._position)
                for i, (name, data) in enumerate(events)
            ]
        except Exception:
            self._state = "failed"
            raise
        self._position = entry
        return out

    def skipped(self, count: int) -> list[bytes]:
        """The comment that tells a client `count` items were skipped here (none in Gemini's).

        Written by a server before the events that follow a gap (a client too
        slow for a live stream, `overflow="latest"`): `: skipped 3 items;
        resume after 1700-5`, where the id is the last one written before the
        gap (the `Last-Event-ID` to resume from through a durable log), or
        `: skipped 3 items` before any id. The dialect's comment rules hold
        (the comment line alone in the OpenAI dialects; Gemini's client reads
        no comment at all, so there it is nothing). The state does not change.

        Raises:
            RuntimeError: the stream has ended.
        """
        if self._state not in ("open", "failed"):
            raise RuntimeError(f"this SSEEncoder is {self._state}; it sends nothing more")
        if self._dialect in _NO_IDS:
            return []
        text = f"skipped {count} item{'s' if count != 1 else ''}"
        if self._position is not None:
            text += f"; resume after {self._position}"
        return [_comment(self._dialect, text, self._newline)]

    def close(self) -> list[bytes]:
        """The events that end a complete stream (the format's end marker).

        Raises:
            RuntimeError: already closed or ended, or a `feed` failed (call `error`).
        """
        if self._state != "open":
            raise RuntimeError(f"this SSEEncoder is {self._state}; it cannot be closed")
        self._state = "closed"
        if self._renderer is None:
            events = [wire.done_event()]
        elif self._frames:
            events = []
        else:
            events = _pairs(self._renderer.close())
        return self._ending(events)

    def error(self, error: BaseException) -> list[bytes]:
        """The events that end the stream with `error` (the format's error event).

        A `StreamError` is reported as it is (a `ProviderError` with the
        provider's type and code; any other under the name of its class, an
        `HTTPStatusError` with its status as the code); any other exception
        as a plain `StreamError` naming only its class.

        Raises:
            RuntimeError: the stream was already closed or ended.
        """
        if self._state not in ("open", "failed"):
            raise RuntimeError(f"this SSEEncoder is {self._state}; it cannot end again")
        self._state = "ended"
        reported = wire.reported(error)
        if self._renderer is None:
            events = [wire.error_event(reported)]
        else:
            events = _pairs(self._renderer.error(_as_provider_error(reported)))
        return self._ending(events)

    def keepalive(self) -> bytes:
        """The dialect's keep-alive (it changes nothing in the stream's state).

        A comment and its blank line; the comment line alone in the OpenAI
        dialects; a blank line in Gemini's (see the module docstring).

        Raises:
            RuntimeError: the stream has ended.
        """
        if self._state not in ("open", "failed"):
            raise RuntimeError(f"this SSEEncoder is {self._state}; it sends nothing more")
        return _keepalive(self._dialect, self._newline)

    # ----------------------------------------------------------------- internals

    def _feed_rxstream(self, item: object) -> list[bytes]:
        # The "rxstream" format without a pending retry: the shared cache's events.
        hit = _EVENTS.get(id(item))
        if hit is not None and hit[0] is item:
            if isinstance(item, StreamEntry):
                self._position = item.id
                return [hit[1]]
            self._count += 1
            return [b"%sid: %d\n%s" % (hit[1], self._count, hit[2])]
        try:
            if isinstance(item, StreamEntry):
                entry = _check_id(item.id, "a StreamEntry id")
                name, data = wire.item_event(item.item)
                event = self._event(data, name, entry)
                _remember(item, event)
                self._position = entry
                return [event]
            if type(item) is TextDelta and self._fast_text:
                name, data = wire.text_event(item)
            else:
                name, data = wire.item_event(item)
            head = b"" if name == "message" else f"event: {check_field('event', name)}\n".encode()
            tail = _encode(event_text(data, newline=self._newline))
            _remember(item, head, tail)
        except Exception:
            self._state = "failed"
            raise
        self._count += 1
        return [b"%sid: %d\n%s" % (head, self._count, tail)]

    def _render(self, item: object) -> list[tuple[str, str]]:
        if self._renderer is None:
            return [wire.item_event(item)]
        if isinstance(item, SSEFrame):
            self._frames = True
            return [(item.event, item.data)]
        if isinstance(item, DELTA_CLASSES):
            delta: Delta = item
            return _pairs(self._renderer.feed(delta))
        if isinstance(item, RUN_ITEM_CLASSES) and getattr(self._renderer, "runs", False):
            # A renderer that writes a whole run (the AI SDK's) takes its items too.
            return _pairs(self._renderer.feed(item))  # type: ignore[arg-type]
        if isinstance(item, RUN_ITEM_CLASSES):
            raise TypeError(
                f"the {self._dialect!r} format sends one answer, not a run's "
                f"{type(item).__name__}: use dialect='ai-sdk' (one UI message of steps) "
                "or 'rxstream' (every item) for a run"
            )
        raise TypeError(
            f"the {self._dialect!r} format sends deltas (and passes SSEFrames on), "
            f"not a {type(item).__name__}: add rs.decode() or rs.deltas() before it, "
            "or use dialect='rxstream', which sends any item"
        )

    def _next(self) -> str:
        self._count += 1
        return str(self._count)

    def _ending(self, events: list[tuple[str, str]]) -> list[bytes]:
        return [
            self._event(data, name, self._position if self._position is not None else self._next())
            for name, data in events
        ]

    def _event(self, data: str, event: str, id: str | None) -> bytes:
        if self._dialect in _NO_IDS:
            id = None
        text = event_text(data, event=event, id=id, retry=self._retry, newline=self._newline)
        self._retry = None
        return _encode(text)


def _encode(text: str) -> bytes:
    try:
        return text.encode()
    except UnicodeEncodeError:
        # A lone surrogate (a provider that split an emoji's escape pair
        # across chunks) has no UTF-8 form. In the JSON it came from it
        # can only be inside a string, where its escape means the same.
        return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text).encode()


def _keepalive(dialect: str, newline: str) -> bytes:
    """The keep-alive each dialect's official client passes over (see the module docstring)."""
    if dialect in _NO_IDS:
        return newline.encode()
    return _comment(dialect, "keep-alive", newline)


def _comment(dialect: str, text: str, newline: str) -> bytes:
    """A comment as the dialect's clients take it: its line alone in the OpenAI dialects."""
    if dialect in ("openai-chat", "openai-responses"):
        return comment_text(text, newline=newline).encode()[: -len(newline)]
    return comment_text(text, newline=newline).encode()


def _check_dialect(dialect: str) -> str:
    if dialect in SSE_DIALECTS:
        return dialect
    if dialect in _NOT_SSE:
        raise ValueError(
            f"the {dialect!r} dialect streams {_NOT_SSE[dialect]}, not server-sent events; "
            f"to_sse writes {', '.join(map(repr, SSE_DIALECTS))}"
        )
    known = ", ".join(map(repr, SSE_DIALECTS))
    raise ValueError(f"unknown SSE format {dialect!r}; the dialects are {known}")


def _check_id(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str, got {type(value).__name__}")
    try:
        return check_field("id", value)
    except ValueError:
        raise ValueError(f"{what} cannot hold a line break or NUL, got {value[:80]!r}") from None


def _pairs(items: list[Any]) -> list[tuple[str, str]]:
    return [(item.event, item.data) for item in items if isinstance(item, SSEFrame)]


def _as_provider_error(error: StreamError) -> ProviderError:
    if isinstance(error, ProviderError):
        return error
    code = error.status_code if isinstance(error, HTTPStatusError) else None
    return ProviderError(str(error), type=type(error).__name__, code=code)

"""The fake LLM server's scenario language: what it answers, step by step.

A `Scenario` is a status, headers and a tuple of steps (`Chunk`, `Raw`,
`Comment`, `Done`, `Stall`, `Disconnect`, `Say`, `Keepalive`, `Fail`, `End`),
or an `HTTPError`; a `Reply` makes one from the `RecordedRequest` it answers;
a `WireAnswer` says byte for byte what a `FakeLLMServer.scripted` server
writes. These are plain values: nothing here touches a socket (the handler,
`rxstream.testing._handler`, plays them; `rxstream.testing.server` re-exports
every public name).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal, TypeAlias
from urllib.parse import parse_qsl, urlsplit

from ..core import DeltaDecoder
from ..core.sse import comment_lines, event_lines, event_text
from ..errors import ProviderError
from ..models import ChatChunk, Delta, TextDelta
from . import builders

__all__ = [
    "FAKE_CREATED",
    "FAKE_ID",
    "JSON",
    "MAX_WAIT",
    "Chunk",
    "Comment",
    "Disconnect",
    "Done",
    "End",
    "Fail",
    "HTTPError",
    "Keepalive",
    "Raw",
    "RecordedRequest",
    "Reply",
    "Say",
    "Scenario",
    "Stall",
    "Step",
    "WireAnswer",
]

JSON: TypeAlias = Any

#: The id and creation time of the chunks `Scenario.text` sends.
FAKE_ID = "chatcmpl-fake"
FAKE_CREATED = 1_700_000_000

#: The longest any single step may wait (a guard against a test hanging forever).
MAX_WAIT = 30.0

# --------------------------------------------------------------------------- steps


@dataclass(frozen=True, slots=True)
class Chunk:
    """Send one event, `data: <payload as JSON>` and a blank line (optionally `event:`)."""

    payload: JSON
    delay: float = 0.0
    event: str | None = None

    def encode(self) -> bytes:
        data = json.dumps(self.payload, separators=(",", ":"), ensure_ascii=False)
        return event_text(data, event=self.event).encode()


@dataclass(frozen=True, slots=True)
class Raw:
    """Send `data` exactly as given, in one write (str is UTF-8 encoded)."""

    data: str | bytes
    delay: float = 0.0

    def encode(self) -> bytes:
        return self.data.encode() if isinstance(self.data, str) else self.data


@dataclass(frozen=True, slots=True)
class Comment:
    """Send an SSE comment line (`: text`) and a blank line, as keep-alives do."""

    text: str = "keep-alive"
    delay: float = 0.0

    def encode(self) -> bytes:
        return ("\n".join(comment_lines(self.text)) + "\n").encode()


@dataclass(frozen=True, slots=True)
class Done:
    """Send `data: [DONE]` and a blank line."""

    delay: float = 0.0

    def encode(self) -> bytes:
        return event_text(builders.done()).encode()


@dataclass(frozen=True, slots=True)
class Stall:
    """Send nothing for `seconds` (a client that leaves meanwhile is noticed).

    At most `MAX_WAIT` seconds, except `math.inf`: until the client leaves or
    the server stops.
    """

    seconds: float
    delay: float = 0.0


@dataclass(frozen=True, slots=True)
class Disconnect:
    """Drop the connection here, without finishing the body.

    `reset=True` sends a TCP RST (the client sees "connection reset") instead of
    a plain close (the client sees an incomplete body).
    """

    reset: bool = False
    delay: float = 0.0


@dataclass(frozen=True, slots=True, init=False)
class Say:
    """Send deltas, rendered in the dialect of the request (one write for all of them).

    Example:
        >>> from rxstream.models import Finish, TextDelta
        >>> Say(TextDelta("Hi"), Finish("stop"), delay=0.01).deltas
        (TextDelta(text='Hi', choice=0), Finish(reason='stop', choice=0, raw=None))
    """

    deltas: tuple[Delta, ...]
    delay: float

    def __init__(self, *deltas: Delta, delay: float = 0.0) -> None:
        object.__setattr__(self, "deltas", deltas)
        object.__setattr__(self, "delay", delay)


@dataclass(frozen=True, slots=True)
class Keepalive:
    """Send the dialect's keep-alive: an SSE comment, Anthropic's `ping` event, a
    blank line for Gemini (google-genai parses any other line as JSON; nothing in
    NDJSON and AWS event streams, which have none: only the wait)."""

    delay: float = 0.0


@dataclass(frozen=True, slots=True)
class Fail:
    """Send the dialect's error event mid-stream (then the scenario goes on, if it has more)."""

    message: str = "fake error"
    type: str | None = None
    code: str | int | None = None
    delay: float = 0.0


@dataclass(frozen=True, slots=True)
class End:
    """Send the dialect's end marker (`[DONE]`, `message_stop`, `response.completed`, ...)."""

    delay: float = 0.0


@dataclass(frozen=True, slots=True)
class HTTPError:
    """An HTTP error answer, with a body in the shape of the asked provider."""

    message: str = "fake error"
    type: str | None = None
    code: str | int | None = None


Step: TypeAlias = Chunk | Raw | Comment | Done | Stall | Disconnect | Say | Keepalive | Fail | End


@dataclass(frozen=True)
class Scenario:
    """What the server answers to one request.

    Attributes:
        steps: what the body is made of, in order (for a 2xx event stream).
        status: the HTTP status.
        headers: extra response headers (e.g. `{"Retry-After": "2"}`).
        content_type: the response's content type.
        body: for a non-streaming answer (an error, or a JSON 200): the whole
            body; a dict or list is sent as JSON. When set, `steps` is ignored.
        framing: `"chunked"` (HTTP/1.1 chunked transfer encoding, the default)
            or `"close"` (no framing: the body ends when the server closes the
            connection, so each `Raw` reaches the socket byte for byte).
        model: the model name the answer reports where its dialect's stream
            names one (`Say`, `Fail` and `End` steps, and `Chunk`s outside
            OpenAI chat; None: the dialect renderer's default).

    Example:
        >>> slow = Scenario.text("Hel", "lo", delay=0.05)
        >>> cut = Scenario.text("Hel", "lo").disconnect_after(2)
        >>> pinged = Scenario(steps=(Comment(), Chunk(builders.text_chunk("Hi")), Done()))
        >>> isinstance(cut.steps[-1], Disconnect)
        True
    """

    steps: tuple[Step, ...] = ()
    status: int = 200
    headers: Mapping[str, str] = field(default_factory=dict)
    content_type: str | None = None
    body: JSON = None
    framing: Literal["chunked", "close"] = "chunked"
    http_error: HTTPError | None = None
    model: str | None = None

    @classmethod
    def answer(
        cls, *items: Delta | ProviderError, delay: float = 0.0, end: bool = True
    ) -> Scenario:
        """A streamed answer in any dialect: one `Say` per delta (a `ProviderError` is a
        `Fail`), then the dialect's end marker (unless `end=False`: a cut stream).

        Example:
            >>> from rxstream.models import Finish, TextDelta, Usage
            >>> s = Scenario.answer(TextDelta("Hi"), Finish("stop"), Usage(3, 1, 4))
            >>> [type(step).__name__ for step in s.steps]
            ['Say', 'Say', 'Say', 'End']
        """
        steps: list[Step] = []
        for item in items:
            if isinstance(item, ProviderError):
                steps.append(Fail(item.message, item.type, item.code, delay))
            else:
                steps.append(Say(item, delay=delay))
        if end:
            steps.append(End(delay))
        return cls(steps=tuple(steps))

    @classmethod
    def text(
        cls,
        *pieces: str,
        delay: float = 0.0,
        finish_reason: str = "stop",
        usage: bool = True,
        model: str = "fake-model",
    ) -> Scenario:
        """A streamed text answer: role, one chunk per piece, finish, usage, `[DONE]`.

        Args:
            pieces: the text pieces (default `"Hello", ", world!"`).
            delay: seconds to wait before each step.
            finish_reason: the final chunk's finish reason.
            usage: whether a usage-only chunk precedes `[DONE]`.
            model: the model name in each chunk.
        """
        pieces = pieces or ("Hello", ", world!")
        ids: dict[str, Any] = {"id": FAKE_ID, "model": model, "created": FAKE_CREATED}
        opening = builders.chunk({"role": "assistant", "content": ""}, **ids)
        steps: list[Step] = [Chunk(opening, delay)]
        steps += [Chunk(builders.text_chunk(piece, **ids), delay) for piece in pieces]
        steps.append(Chunk(builders.finish_chunk(finish_reason, **ids), delay))
        if usage:
            counts = builders.usage_chunk(5, len(pieces), **ids)
            steps.append(Chunk(counts, delay))
        steps.append(Done(delay))
        return cls(steps=tuple(steps))

    @classmethod
    def error(
        cls,
        status: int,
        message: str = "fake error",
        *,
        type: str | None = None,
        code: str | int | None = None,
        headers: Mapping[str, str] | None = None,
        body: JSON = None,
    ) -> Scenario:
        """An HTTP error answer in the asked provider's shape (or with `body` as given).

        Example:
            >>> Scenario.error(429, "slow down", headers={"Retry-After": "2"}).status
            429
        """
        if body is None:
            return cls(
                status=status,
                headers=dict(headers or {}),
                http_error=HTTPError(message, type, code),
            )
        return cls(
            status=status,
            headers=dict(headers or {}),
            content_type="application/json" if not isinstance(body, str) else "text/plain",
            body=body,
        )

    def then(self, *steps: Step) -> Scenario:
        """This scenario with `steps` appended."""
        return replace(self, steps=(*self.steps, *steps))

    def disconnect_after(self, n: int, *, reset: bool = False) -> Scenario:
        """Only the first `n` steps, then the connection drops (no `[DONE]`)."""
        return replace(self, steps=(*self.steps[:n], Disconnect(reset=reset)))

    @classmethod
    def from_stream(
        cls, stream: Any, *, delay: float | None = None, speed: float = 1.0
    ) -> Scenario:
        """A streamed answer from a `ChatStream` builder (or any SSE text), one step per event.

        A `ChatStream`'s chunks, comments and `[DONE]` become `Chunk`,
        `Comment` and `Done` steps, which play in every dialect; its raw and
        malformed events, and SSE text, are sent as they are (`Raw`).

        A recording made by `rxstream chat --log FILE` (or `demo --log`) has a
        `: t=SECONDS` comment before each event: when it arrived, counted from
        the request. Such text plays at the recorded pace: each event waits as
        long after the one before as it did when recorded (the first, as long
        after the request), divided by `speed`; an event without a stamp goes
        out with the one before. The stamps themselves are not sent, so the
        client gets the provider's bytes at the provider's timing.

        Args:
            stream: a `rxstream.testing.builders.ChatStream`, or event-stream
                text (`str`) whose events are separated by blank lines.
            delay: seconds to wait before each event, the same for all; given,
                it replaces the recorded timing too (default: the stamps' timing,
                or no wait without stamps). `paced` sets the waits afterwards.
            speed: how much faster than recorded the stamps play (2.0: twice as
                fast, 0.5: half as fast).

        Raises:
            ValueError: `speed` is not a positive number.

        Example:
            >>> from rxstream.testing.builders import ChatStream
            >>> s = Scenario.from_stream(ChatStream().text("Hi").finish().done(), delay=0.01)
            >>> len(s.steps), s.steps[0].delay
            (3, 0.01)
            >>> log = ': t=0.250\\ndata: {"a":1}\\n\\n: t=0.400\\ndata: [DONE]\\n\\n'
            >>> [round(step.delay, 3) for step in Scenario.from_stream(log).steps]
            [0.25, 0.15]
            >>> [round(step.delay, 3) for step in Scenario.from_stream(log, speed=5).steps]
            [0.05, 0.03]
        """
        if not speed > 0:  # also refuses NaN
            raise ValueError(f"speed must be a positive number, got {speed!r}")
        if isinstance(stream, builders.ChatStream):
            return cls(steps=tuple(_steps_of(stream, delay or 0.0)))
        if not isinstance(stream, str):
            raise TypeError(
                f"from_stream takes a ChatStream or event-stream text (str), "
                f"got {type(stream).__name__}"
            )
        steps: list[Step] = []
        recorded = 0.0  # the latest stamp so far
        for lines, stamp in _recorded_events(stream):
            if stamp is None:
                wait = 0.0  # arrived with the event before
            else:
                wait = max(stamp - recorded, 0.0) / speed
                recorded = max(recorded, stamp)
            steps.append(Raw("\n".join(lines) + "\n", wait if delay is None else delay))
        return cls(steps=tuple(steps))

    def paced(self, delay: float, *, first: float | None = None) -> Scenario:
        """This scenario with every step waiting `delay` seconds first (`first` for step one).

        `Stall` and `Disconnect` steps keep their own timing.

        Example:
            >>> Scenario.text("a", "b").paced(0.02, first=0.3).steps[0].delay
            0.3
        """
        steps: list[Step] = []
        for i, step in enumerate(self.steps):
            wait = first if i == 0 and first is not None else delay
            if isinstance(step, Stall | Disconnect):
                steps.append(step)
            elif isinstance(step, Say):
                steps.append(Say(*step.deltas, delay=wait))
            else:
                steps.append(replace(step, delay=wait))
        return replace(self, steps=tuple(steps))

    def answer_text(self) -> str:
        """The text the steps stream in choice 0 (for the non-streaming answer)."""
        return "".join(
            delta.text
            for delta in self.deltas()
            if isinstance(delta, TextDelta) and delta.choice == 0
        )

    def deltas(self) -> list[Delta]:
        """The deltas the `Chunk` and `Say` steps carry, in order."""
        decoder = DeltaDecoder()
        out: list[Delta] = []
        for step in self.steps:
            if isinstance(step, Say):
                out += step.deltas
            elif (
                isinstance(step, Chunk)
                and isinstance(step.payload, dict)
                and step.event != "error"
                and step.payload.get("error") is None
            ):
                out += decoder.feed(ChatChunk(step.payload))
        return out


@dataclass(frozen=True)
class WireAnswer:
    """An answer written exactly as given, for `FakeLLMServer.scripted` (a misbehaving server).

    Attributes:
        status, reason: the status line (the reason phrase as given, even one
            that quotes the request's credentials back).
        headers: response headers, in order (`Content-Type` among them, or
            not); `Content-Length`, `Transfer-Encoding` and `Connection` are
            added by `framing` and `keep_alive`.
        body: the body's pieces, each written (and flushed) on its own.
        framing: `"length"` (Content-Length), `"chunked"`, or `"close"` (no
            framing: the body ends when the connection closes).
        then: after the body: `"end"` (finish properly), `"stall"` (send
            nothing more until the client leaves, bounded by `MAX_WAIT`),
            `"cut"` (close without ending a chunked body), `"reset"` (a TCP RST).
        pause: seconds to wait before each piece.
        hold: send nothing at all, not even the status line, until the client
            leaves (bounded by `MAX_WAIT`).
        keep_alive: keep the connection open for the next request (needs
            `"length"` or `"chunked"` framing and `then="end"`).

    A client that leaves a stalling or holding answer is counted in
    `FakeLLMServer.disconnects`.

    Example:
        >>> WireAnswer.stream('data: {"a":1}\\n\\n', then="cut").body
        (b'data: {"a":1}\\n\\n',)
        >>> WireAnswer(403, "Forbidden: key sk-123", framing="length").status
        403
    """

    status: int = 200
    reason: str = "OK"
    headers: tuple[tuple[str, str], ...] = (("Content-Type", "text/event-stream"),)
    body: tuple[bytes, ...] = ()
    framing: Literal["length", "chunked", "close"] = "chunked"
    then: Literal["end", "stall", "cut", "reset"] = "end"
    pause: float = 0.0
    hold: bool = False
    keep_alive: bool = False

    @classmethod
    def stream(
        cls,
        *pieces: bytes | str,
        content_type: str = "text/event-stream",
        framing: Literal["length", "chunked", "close"] = "chunked",
        then: Literal["end", "stall", "cut", "reset"] = "end",
        keep_alive: bool = False,
    ) -> WireAnswer:
        """A 200 answer of `pieces` (str is UTF-8 encoded) with one content type."""
        body = tuple(p.encode() if isinstance(p, str) else p for p in pieces)
        return cls(
            headers=(("Content-Type", content_type),),
            body=body,
            framing=framing,
            then=then,
            keep_alive=keep_alive,
        )


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """One request the server received.

    Attributes:
        method, path: as sent (the path with its query string).
        headers: the request headers, names lower-cased.
        body: the raw body.
        json: the body decoded as JSON, or None.
        connection: which connection it came on (numbered from 1 in the
            order they were opened; 0 when not known).
    """

    method: str
    path: str
    headers: Mapping[str, str]
    body: bytes
    json: JSON
    connection: int = 0

    @property
    def query(self) -> dict[str, str]:
        """The query string's parameters (the last value of each name).

        >>> RecordedRequest("POST", "/v1/x?case=a&n=1", {}, b"", None).query
        {'case': 'a', 'n': '1'}
        """
        return dict(parse_qsl(urlsplit(self.path).query))

    @property
    def stream(self) -> bool:
        """Whether the request asked for a stream (`"stream": true`)."""
        return isinstance(self.json, dict) and self.json.get("stream") is True


#: An answer made from the request it answers (e.g. `rxstream.testing.echo_answer`):
#: a `FakeLLMServer` takes one wherever it takes a `Scenario`.
Reply: TypeAlias = Callable[[RecordedRequest], Scenario]


#: A `--log` recording's stamp: `: t=SECONDS`, the time its event arrived after the request.
_STAMP = re.compile(r": t=(\d+(?:\.\d*)?)")


def _recorded_events(text: str) -> list[tuple[list[str], float | None]]:
    """SSE text cut into events (their lines, the blank line that ends them included),
    each with its `: t=` stamp (None: no stamp), the stamp lines taken out.

    An unended last event gets its blank line; without any stamp in `text`, even
    a lone blank line is an event of its own (sent as it is).
    """
    events: list[tuple[list[str], float | None]] = []
    stamped = False
    event: list[str] = []
    stamp: float | None = None
    for line in [*text.splitlines(), None]:
        if line is not None:
            found = _STAMP.fullmatch(line)
            if found is not None:
                stamp, stamped = float(found.group(1)), True
                continue
            event.append(line)
        if line == "" or (line is None and event):
            if line is None:
                event.append("")
            # An event that was only a stamp has nothing to send.
            if any(event) or not stamped:
                events.append((event, stamp))
            event, stamp = [], None
    return events


def _steps_of(stream: builders.ChatStream, delay: float) -> list[Step]:
    steps: list[Step] = []
    for event in stream.events():
        if event.comment is not None:
            steps.append(Comment(event.comment, delay))
        elif event.payload is not None:
            steps.append(Chunk(event.payload, delay, event.event))
        elif event.data == builders.done() and event.event is None:
            steps.append(Done(delay))
        else:
            text = "\n".join(event_lines(event.data, event=event.event)) + "\n"
            steps.append(Raw(text, delay))
    return steps

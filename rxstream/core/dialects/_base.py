"""What every dialect decoder shares: one lifecycle, one way to fail, the JSON helpers.

A dialect decoder takes its wire items (`SSEFrame`s, NDJSON lines, or AWS
event-stream messages) and returns deltas. `DialectDecoder` gives each the
same lifecycle and the same honest end:

- `feed(item)` returns the deltas the item carries; after the dialect's end
  marker `done` turns True and more input is refused; after `close()` or
  after raising, every call raises `RuntimeError`;
- the end marker raises `EmptyStreamError` when no delta before it (or in
  it) was an answer (`_shared.gives_answer`: anything but usage and metadata;
  a finish is one);
- `close()` raises `EmptyStreamError` when the stream brought nothing of an
  answer, and `TruncatedStreamError` when it stopped before its end marker;
- an item the stream cut short (the unterminated last line, or the event no
  blank line closed: `lines.Unterminated`) that does not decode is
  `TruncatedStreamError`, chained to the `MalformedChunkError` it would be;
- inside a decoder, a field of the wrong type raises `ShapeError(path,
  expected, value)`; `feed` turns it into `MalformedChunkError` naming the
  dialect, the JSON path and the data (or drops the item with
  `on_malformed="skip"`).

The JSON decode is `_shared`'s, the same for every dialect and the chat chunk
decoder (msgspec with the `fast` extra, the standard library otherwise, with
identical results), and never lets a `RecursionError` out. `ShapeError` and
`json_kind` live in `_shared` too and are re-exported here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, ClassVar, Literal, Protocol, TypeAlias

from ..._fast import loaders
from ...errors import (
    EmptyStreamError,
    MalformedChunkError,
    ProviderError,
    StreamError,
    TruncatedStreamError,
    excerpt,
)
from ...models import (
    JSON,
    Delta,
    EventStreamMessage,
    Finish,
    JSONObject,
    Reset,
    SSEFrame,
    ToolCallDelta,
    Usage,
)
from ..pipeline import Handoff
from . import _shared
from ._shared import ShapeError, json_kind, load_json, truncation

__all__ = [
    "DialectDecoder",
    "OnMalformed",
    "Reader",
    "Renderer",
    "ResetRule",
    "ShapeError",
    "Wire",
    "WireKind",
    "data_of",
    "foreign",
    "json_kind",
    "kind_of",
    "load_json",
    "looks_like",
    "opt_int",
    "opt_list",
    "opt_object",
    "opt_str",
    "pair_type",
    "usage",
]

#: What a decoder does with an item that is not valid for its dialect (`"raise"` or `"skip"`).
OnMalformed = Literal["raise", "skip"]

#: The modes whose items are tuples, which `DialectDecoder._take` takes
#: (a decoder that takes `STRINGS` has its own `_take`).
_TUPLES = (Handoff.PAIRS, Handoff.MESSAGE_PAIRS)

#: A dialect's hot reader (`DialectDecoder._reader`): `read(items, start)` reads
#: items from `start` on while each is the usual event; returns where it stopped.
Reader: TypeAlias = Callable[[list[Any], int], int]


class _NoPair:
    """A type no item is: what `pair_type` gives a decoder that takes no tuples."""


def pair_type(pairs: bool) -> type[Any]:
    """The type of the tuples a hot reader takes as `(event, data)` pairs: `tuple` when fused.

    A reader compares each item's type with it once (`type(item) is pair`):
    a decoder not fused behind the parser (`_take`) takes no tuples, and
    leaves one it is fed to `_decode`, which refuses it.
    """
    return tuple if pairs else _NoPair


#: How a dialect's wire items become bytes: SSE events, NDJSON lines, AWS event-stream messages.
WireKind = Literal["sse", "ndjson", "eventstream"]

#: One wire item: an `SSEFrame`, an NDJSON line (`str`, no terminator) or an `EventStreamMessage`.
Wire: TypeAlias = SSEFrame | str | EventStreamMessage


class Renderer(Protocol):
    """Deltas back into a dialect's wire items (the inverse of its decoder).

    A renderer is a sans-I/O machine like the decoders: `feed(delta)` returns
    the wire items that delta becomes (opening and closing the dialect's
    blocks, items and messages around it as needed), `close()` the items that
    end a complete stream (the end marker, usage where the dialect puts it
    last), and `error(exc)` the items of an error event in the dialect's own
    shape, which end the stream instead. Decoding what a renderer gives yields
    the same `Message` as far as the dialect can express it; what it cannot
    express is left out (each renderer's docstring says what).

    Constructed with keyword options; every renderer takes `model` (the model
    name written into the stream) and `id` (the response id, a fixed default
    so renders are reproducible).

    A renderer that writes one event per text delta also has `text_event(delta)
    -> tuple[str, str] | None`: that event as (name, data), exactly what `feed`
    would write for it (and the state `feed` would keep), when the delta
    changes nothing else (a block of text already open), else None, and then
    `feed` must take the delta. A writer asks it first for every `TextDelta`
    (`SSEEncoder`, the test kit's fake server): a server writes one per token.
    Each is a template learnt from `feed`'s own writing, on with the fast paths.

    Attributes:
        wire: how its wire items become bytes (`wire_bytes`).
        newline: the line end `wire_bytes` writes after each line of text
            (SSE lines, NDJSON lines): `"\\n"` except where the real API
            writes another (Gemini: `"\\r\\n"`). Event-stream messages are
            binary frames and use none.
    """

    wire: ClassVar[WireKind]
    newline: ClassVar[str]

    def feed(self, delta: Delta, /) -> list[Wire]: ...  # pragma: no cover

    def close(self) -> list[Wire]: ...  # pragma: no cover

    def error(self, error: ProviderError, /) -> list[Wire]: ...  # pragma: no cover


class ResetRule:
    """How the renderer of a format with no reset takes a `Reset` (every provider's dialect).

    A provider's stream has no way to take back what it sent, and its readers
    end a choice at its finish. So the renderer keeps what it wrote and goes
    on with the new answer in the same stream, which stays one valid stream of
    its dialect:

    - the new answer's tool calls are numbered after every call its choice
      had begun, so no fragment of the new answer lands in a call of the
      dropped one (arguments are never spliced);
    - a choice that had finished before the reset keeps what it sent (its
      readers have ended it): the new answer's deltas of that choice are left
      out; a `Usage` still passes;
    - the rest goes on as it comes.

    A reader of the rendered stream so sees the dropped partial answer, then
    the new one. Where one continuous answer matters in a provider's dialect,
    a retry continues rather than restarts (`after_output="continue"`);
    rxstream's own format and the AI SDK's stream carry the reset itself.

    `see(delta)` gives the delta to render (its index moved after a reset),
    or None for a delta to leave out (the `Reset` itself included). A
    `TextDelta` needs no look while `ended` is False (no choice finished
    before a reset): a renderer's hot path skips the call then.

    >>> rule = ResetRule()
    >>> rule.see(ToolCallDelta(0, "{", id="a")) is not None, rule.see(Reset(2))
    (True, None)
    >>> rule.see(ToolCallDelta(0, "{}", id="b")).index
    1
    """

    __slots__ = ("_ended", "_finished", "_next", "_shift", "ended")

    def __init__(self) -> None:
        self._next: dict[int, int] = {}  # per choice: the first call index no call took
        self._shift: dict[int, int] = {}  # per choice: added to the new answer's indexes
        self._finished: set[int] = set()  # choices whose Finish was rendered
        self._ended: set[int] = set()  # choices that finished before a reset
        #: Whether a choice finished before a reset (only then is a text delta left out).
        self.ended = False

    def see(self, delta: Delta) -> Delta | None:
        """The delta to render in place of `delta`, or None to leave it out."""
        kind = type(delta)
        if kind is ToolCallDelta:
            assert isinstance(delta, ToolCallDelta)
            choice = delta.choice
            if choice in self._ended:
                return None
            index = delta.index
            if index is None:
                return delta  # found by its id, or goes on with the latest call
            shift = self._shift.get(choice, 0)
            if shift:
                index += shift
                delta = ToolCallDelta(index, delta.arguments, delta.id, delta.name, choice)
            if index >= self._next.get(choice, 0):
                self._next[choice] = index + 1
            return delta
        if kind is Reset:
            self._shift = dict(self._next)
            self._ended |= self._finished
            self.ended = bool(self._ended)
            return None
        if kind is Usage or delta.choice not in self._ended:
            if kind is Finish:
                self._finished.add(delta.choice)
            return delta
        return None


#: The normalised finish reasons (a provider's own word is kept when none fits).
STOP, LENGTH, TOOL_CALLS, CONTENT_FILTER = "stop", "length", "tool_calls", "content_filter"


def opt_str(obj: JSONObject, key: str, path: str) -> str | None:
    """`obj[key]` when it is a string, None when missing or null; else `ShapeError`."""
    value = obj.get(key)
    if value is None or type(value) is str:
        return value
    raise ShapeError(f"{path}.{key}" if path else key, "a string", value)


def opt_int(obj: JSONObject, key: str, path: str) -> int | None:
    """`obj[key]` when it is an integer (not a boolean), None when missing or null."""
    value = obj.get(key)
    if value is None or type(value) is int:
        return value
    raise ShapeError(f"{path}.{key}" if path else key, "an integer", value)


def opt_object(obj: JSONObject, key: str, path: str) -> JSONObject | None:
    """`obj[key]` when it is an object, None when missing or null."""
    value = obj.get(key)
    if value is None or type(value) is dict:
        return value
    raise ShapeError(f"{path}.{key}" if path else key, "an object", value)


def opt_list(obj: JSONObject, key: str, path: str) -> list[Any] | None:
    """`obj[key]` when it is an array, None when missing or null."""
    value = obj.get(key)
    if value is None or type(value) is list:
        return value
    raise ShapeError(f"{path}.{key}" if path else key, "an array", value)


def usage(
    prompt: int | None,
    completion: int | None,
    *,
    total: int | None = None,
    reasoning: int | None = None,
    cached: int | None = None,
    cache_write: int | None = None,
    raw: JSONObject | None = None,
) -> Usage:
    """A `Usage` with the total computed when the provider gives none."""
    prompt, completion = prompt or 0, completion or 0
    return Usage(
        prompt,
        completion,
        prompt + completion if total is None else total,
        reasoning,
        cached,
        0,
        raw,
        cache_write,
    )


class DialectDecoder:
    """The shared lifecycle of the dialect decoders (see the module docstring).

    A subclass sets `dialect` and `end_marker` (for messages) and implements
    `_decode(item)`; it sets `self._done = True` at its end marker and
    `self._answered = True` once anything of an answer arrived, and may
    override `_end()` for what `close()` checks. `feed` and `feed_all` are
    the base's alone: a dialect speeds up its usual event with a hot reader
    (`_reader`, which reads a batch on from an item while `_ready()`), and
    says what a fused pair stands for (`_unpair`) when it takes pairs.

    Args:
        on_malformed: `"raise"` (the default) or `"skip"` items that are not
            valid for the dialect. Provider errors are raised either way.

    Raises:
        ValueError: `on_malformed` is neither `"raise"` nor `"skip"`.
    """

    dialect: ClassVar[str] = ""
    end_marker: ClassVar[str] = ""
    #: Whether a complete stream must hold an answer (False for rxstream's own
    #: format, which carries whatever a pipeline held, possibly nothing).
    answer_required: ClassVar[bool] = True
    #: The items it would rather take from a parser fused in front (`_take`):
    #: whole frames (`Handoff.FRAMES`, the default), a `"message"` frame's data
    #: as a `str` (`STRINGS`), `(event, data)` tuples (`PAIRS`), or Bedrock's
    #: `(headers, payload)` tuples (`MESSAGE_PAIRS`). Whole frames it always takes.
    takes: ClassVar[Handoff] = Handoff.FRAMES
    #: Whether it gives deltas only: a machine behind it that passes deltas on
    #: as they are (the delta operators' `DeltaDecoder`) is then left out.
    gives_deltas_only: ClassVar[bool] = False

    def __init__(self, *, on_malformed: OnMalformed = "raise") -> None:
        if on_malformed not in ("raise", "skip"):
            raise ValueError(f"on_malformed must be 'raise' or 'skip', not {on_malformed!r}")
        self._skip = on_malformed == "skip"
        self._state = "open"
        self._done = False
        self._answered = False
        # Whether a delta that is an answer came out (see `_shared.gives_answer`):
        # the end marker without one is `EmptyStreamError` (where one is required).
        self._gave_answer = not self.answer_required
        self._items = 0
        # Take the items of `takes` (set by `_take`): for PAIRS and MESSAGE_PAIRS.
        self._pairs = False
        # The JSON loaders of the fast paths, read when the decoder is built.
        first, standard = loaders()
        self._fast: Callable[[str], JSON] | None = first
        # The first try at a str's JSON on the hot paths: whatever it refuses
        # (or decodes to something other than an object) goes through
        # `_object` or `load_json`, which have the last word and the message.
        self._loads: Callable[[str], JSON] = first or standard

    @property
    def done(self) -> bool:
        """True once the dialect's end marker arrived: the stream is complete."""
        return self._done

    def feed(self, item: Any) -> list[Delta]:
        """Take one wire item; return the deltas it carries.

        Raises:
            ProviderError: the item reports a provider error.
            MalformedChunkError: the item is not valid for the dialect (unless skipped).
            TruncatedStreamError: the item is the stream's last line or event,
                cut short, and does not decode.
            EmptyStreamError: the item is the end marker, and no answer came.
            TypeError: the item is not of the kind the dialect reads.
            RuntimeError: the decoder is done, closed, or failed before.
        """
        if self._state != "open":
            raise RuntimeError(
                f"this {type(self).__name__} is {self._state}; it takes no more input"
            )
        if self._done:
            raise RuntimeError(
                f"this {type(self).__name__} is done ({self.end_marker} arrived); "
                "it takes no more input"
            )
        self._items += 1
        return self._one(item)

    def feed_all(self, items: Iterable[Any], out: list[Delta]) -> None:
        """`out += feed(item)` for each item in turn, stopping once done: every dialect's one loop.

        After the first answer (`_ready`), the dialect's hot reader (`_reader`)
        reads the items on, for as long as each is the event a stream is
        nearly all made of, and says where it stopped; the item it stopped at
        takes `_one`, as `feed` would, and the reader goes on after it. Only
        `_one` changes the lifecycle (it raises when the decoder fails, or
        ends the stream), so it is checked once here and again after each
        `_one`; the items the reader read are counted in one addition.
        """
        if self._state != "open" or self._done:
            for item in items:
                out += self.feed(item)  # which refuses it, as the lifecycle says
            return
        if type(items) is not list:
            if type(items) is not tuple:
                for item in items:  # one at a time: an iterator is not read past the end
                    self.feed_all([item], out)
                    if self._done:
                        return
                return
            items = list(items)
        read = self._reader(out)
        one = self._one
        unpair = self._unpair if self._pairs else None
        at, end = 0, len(items)
        while at < end:
            if read is not None and self._ready():
                stop = read(items, at)
                self._items += stop - at
                if stop == end:
                    return
                at = stop
            item = items[at]
            at += 1
            self._items += 1
            if unpair is not None and type(item) is tuple:
                item = unpair(item)  # a frame from the parser fused in front, built only here
            out += one(item)
            if self._done:
                return

    def close(self) -> list[Delta]:
        """End the input: check that the stream brought an answer and its end marker.

        Raises:
            EmptyStreamError: nothing of an answer arrived (also when the
                stream is complete).
            TruncatedStreamError: the input ended before the end marker.
            RuntimeError: already closed, or failed before.
        """
        if self._state != "open":
            raise RuntimeError(
                f"this {type(self).__name__} is {self._state}; it cannot be closed again"
            )
        self._state = "closed"
        try:
            out = self._end()
            # The stream is complete (else `_end` raised): it must have brought an answer.
            if not self._gave_answer:
                self._check_answer(out, at_end=True)
            return out
        except Exception:
            self._state = "failed"
            raise

    def _take(self, mode: Handoff) -> bool:
        """Fusion hook (`rxstream.core.pipeline`): take the items of `mode` from now on.

        For a parser fused in front, which then hands each frame over as
        `mode` says, without building the frame, to a decoder that reads
        nothing of a frame but what that mode gives (`takes`): an
        `SSEParser`'s `(event, data)` tuples, an `EventStreamParser`'s
        `(headers, payload)` ones in front of the Bedrock decoder. Only
        while nothing was fed; returns whether the decoder takes them from
        now on.
        """
        if mode is not self.takes or mode not in _TUPLES:
            return False
        if self._items or self._state != "open" or self._done:
            return False
        self._pairs = True
        return True

    # -- for subclasses ------------------------------------------------------------

    def _one(self, item: Any) -> list[Delta]:
        """The deltas of one item counted in `_items` (`feed` less its state checks).

        `_decode`'s, the answer noted (`_check_answer`); what it raises goes
        through `_failure` (which may skip the item: no deltas).
        """
        try:
            got = self._decode(item)
            if not self._gave_answer:
                self._check_answer(got)
        except Exception as exc:
            error = self._failure(exc, item)
            if error is None:
                return []
            if error is exc:
                raise
            raise error from error.__cause__
        return got

    def _reader(self, out: list[Delta]) -> Reader | None:
        """The dialect's hot reader for one `feed_all` call, appending to `out`; None: it has none.

        Asked once per call; called while `_ready()`: `reader(items, start)`
        reads `items[start]`, `items[start + 1]`, ... for as long as each is the
        event a stream is nearly all made of (the item as it comes: a frame,
        a line, a message, or a tuple from the parser fused in front, see
        `_take`), appending their deltas to `out`, and returns the index of
        the first item it does not read (`len(items)` when it read them all),
        having changed nothing for that one: `_decode` reads it (anything
        else, and anything unusual about the usual event). It never ends the
        stream, fails or raises: those are `_decode`'s. The loop stays in the
        reader, so what it keeps per item stays in its locals.
        """
        return None

    def _ready(self) -> bool:
        """Whether the hot reader (`_reader`) reads on from the next item: after the first answer.

        Asked again after each item `_decode` read; a dialect may wait longer.
        """
        return self._gave_answer

    @staticmethod
    def _unpair(pair: tuple[Any, Any]) -> Any:
        """The item an `(event, data)` tuple from the fused parser stands for (`_take`)."""
        event, data = pair
        return SSEFrame(data, event)

    def _decode(self, item: Any) -> list[Delta]:  # pragma: no cover - abstract
        raise NotImplementedError

    def _end(self) -> list[Delta]:
        if self._done:
            return []
        if not self._answered:
            raise EmptyStreamError(
                f"the {self.dialect} stream ended after {self._items} item(s) without "
                f"any content or {self.end_marker}"
            )
        raise TruncatedStreamError(
            f"the {self.dialect} stream ended before {self.end_marker}, after {self._items} item(s)"
        )

    def _failure(self, exc: Exception, item: Any) -> Exception | None:
        """What `feed` raises after decoding `item` raised `exc` (None: skip the item).

        A `ShapeError` becomes `MalformedChunkError` (or the item is skipped,
        with `on_malformed="skip"`); a `MalformedChunkError` for an item the
        stream cut short (see `_shared.truncation`) becomes `TruncatedStreamError`,
        its `__cause__` the malformed one. The decoder has failed, unless skipping.
        """
        if type(exc) is TypeError:
            # An item of another wire (NDJSON lines, event-stream messages, SSE
            # frames): another known dialect's is malformed, naming that dialect.
            other = foreign(item, self.dialect)
            if other is not None:
                exc = MalformedChunkError(
                    looks_like(f"{kind_of(item)}, not what {self.dialect} sends", other),
                    data_of(item),
                    dialect=self.dialect,
                )
                if self._skip:
                    return None
        cut = None
        if isinstance(exc, MalformedChunkError | ShapeError):
            cut = truncation(item, self.dialect)
        if isinstance(exc, ShapeError):
            if self._skip and cut is None:
                return None
            exc = MalformedChunkError(str(exc), data_of(item), dialect=self.dialect)
        self._state = "failed"
        if cut is not None:
            cut.__cause__ = exc
            return cut
        return exc

    def _check_answer(self, deltas: list[Delta], *, at_end: bool = False) -> None:
        """Note whether `deltas` hold an answer; raise `EmptyStreamError` at an end without one.

        `deltas` came from one item, or from `close()` (`at_end`): the
        stream is complete then, as it is once `done`.
        """
        if deltas:
            self._gave_answer = _shared.gives_answer(deltas)
        if (at_end or self._done) and not self._gave_answer:
            raise self._empty_at_end()

    def _empty_at_end(self) -> EmptyStreamError:
        """The error of a complete stream that brought no answer (see `EmptyStreamError`)."""
        return EmptyStreamError(
            f"the {self.dialect} stream reached {self.end_marker} after {self._items} item(s) "
            f"with {_shared.NO_ANSWER}"
        )

    def _malformed(self, reason: str, item: Any) -> list[Delta]:
        """Drop `item` (with `on_malformed="skip"`) or raise `MalformedChunkError`.

        An item the stream cut short is never dropped: `feed` reports it as a
        truncated stream.
        """
        if self._skip and truncation(item, None) is None:
            return []
        raise MalformedChunkError(reason, data_of(item), dialect=self.dialect)

    def _foreign(self, what: str, item: Any) -> list[Delta]:
        """`_malformed` for an item the dialect does not know, naming the dialect it looks like.

        For the decoders' slow paths only (an event they do not understand):
        which dialect it is, is `detect`'s reading (see `foreign`).
        """
        other = foreign(item, self.dialect)
        return self._malformed(what if other is None else looks_like(what, other), item)

    def _object(self, data: str | bytes, item: Any) -> JSONObject | None:
        """`data` decoded as a JSON object; None when it was skipped as malformed."""
        if not isinstance(data, str):
            data = bytes(data).decode("utf-8", "replace")  # as `load_json` reads bytes
        try:
            value = self._loads(data)
        except (ValueError, TypeError, RecursionError):
            value = None  # not JSON, or refused by the fast decoder: `load_json` decides
        if type(value) is dict:
            return value
        try:
            value = _shared.load_with(data, self._fast)
        except ValueError as exc:
            self._malformed(f"invalid JSON: {exc}", item)
            return None
        if type(value) is not dict:
            self._malformed(f"a JSON {json_kind(value)}, not an object", item)
            return None
        return value


def foreign(item: object, dialect: str | None) -> str | None:
    """The known dialect other than `dialect` that `item` belongs to; None when none tells.

    The decoders ask on their slow path, when an item is not theirs: the
    answer is the auto-detection's (`detect`), so one reading tells both
    which dialect a stream is and which one a wrong decoder was handed. An
    item `detect` finds in no dialect (or an error payload, which the decoder
    reports itself) names none.
    """
    name = _detected(item)
    if name is not None and isinstance(item, str) and _detected(SSEFrame(item)) == dialect:
        return None  # the dialect's own event data, handed over without its frame
    return None if name == dialect else name


def _detected(item: object) -> str | None:
    """`detect(item)`, None where it raises."""
    from . import detect  # the package imports the decoders: no cycle at import time

    try:
        return detect(item)
    except (StreamError, TypeError, ValueError):
        return None


def looks_like(what: str, other: str) -> str:
    """The reason of a `MalformedChunkError` for an item of dialect `other`."""
    return f"{what}; this looks like the {other} dialect (read it with rs.decode({other!r}))"


def kind_of(item: object) -> str:
    """What a wire item is, in words (for the messages about another wire's items)."""
    if isinstance(item, SSEFrame):
        return "an SSE event"
    if isinstance(item, EventStreamMessage):
        return "an AWS event-stream message"
    if isinstance(item, str):
        return "an NDJSON line"
    return f"a {type(item).__name__}"


def data_of(item: Any) -> str | bytes:
    """What an error about a wire item quotes: its data (an event's name too), a payload."""
    if isinstance(item, SSEFrame):
        return item.data if item.event == "message" else f"event: {item.event}\n{item.data}"
    if isinstance(item, EventStreamMessage):
        return item.payload
    if isinstance(item, str | bytes):
        return item
    return excerpt(repr(item))

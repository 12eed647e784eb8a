"""Decode the frames of an OpenAI-compatible chat-completion stream into chunks.

Input: `SSEFrame`s (what `SSEParser` gives) of a `/v1/chat/completions`
stream with `stream: true`.
Output: `ChatChunk(raw)`, one per frame that carries a chunk, with the whole
decoded JSON kept (provider extras are never lost).

Invariants:

- `data: [DONE]` ends the stream: `done` turns True and no more input is taken.
- A provider error inside the HTTP 200 stream (an `event: error` frame, or a
  payload in one of the error shapes of `provider_errors`) raises
  `ProviderError`.
- Data that is not a JSON object, or a chat chunk with a field of the wrong
  JSON type (every field `reader.ChunkReader` reads is checked, and the
  message names its path), raises `MalformedChunkError`, or is dropped with
  `on_malformed="skip"`. So does JSON nested deeper than the decoder can
  follow. Missing fields, `null` ones and fields nobody reads are fine.
- A stream that brought no answer raises `EmptyStreamError` (a
  `TruncatedStreamError`): at `[DONE]`, or at `close()`, when no chunk gave
  a delta that is an answer (`_shared.gives_answer`: no frame at all, only
  `[DONE]`, only a usage chunk or Azure's prompt-filter chunk, a role and
  nothing else). A choice that finished without content is an answer: its
  finish says why it is empty.
- The input ending before `[DONE]` while a choice that was seen never got a
  `finish_reason` raises `TruncatedStreamError` from `close()`; a stream whose
  every choice finished (TGI sends no `[DONE]`) completes normally.
- The last event, when no blank line ended it, may be cut short (its data
  is a `lines.Unterminated`): if its data does not decode, the stream is
  `TruncatedStreamError` ("ended in the middle of an event"), chained to the
  `MalformedChunkError` it would be, never skipped.
- One JSON decode per frame and one pass over the decoded chunk. With the
  `fast` extra installed (msgspec) that decode is msgspec's; whatever msgspec
  refuses is decoded again by the standard library, which gives the answer (or
  the error message), so the results are the same either way. Giving deltas,
  the decoder reads the usual chunks with msgspec types instead
  (`rxstream._typed.openai_chat`); a chunk they do not describe takes the
  path above.

Spec: the OpenAI Chat Completions streaming format (`chat.completion.chunk`),
as its compatible providers actually send it (the recordings in tests/data:
errors inside a 200 stream from Groq, OpenRouter; no `[DONE]` from TGI).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, ClassVar, NoReturn

from ...._fast import constructor, enabled, loaders
from ...._typed import typed
from ....errors import (
    EmptyStreamError,
    MalformedChunkError,
    ProviderError,
    TruncatedStreamError,
    excerpt,
)
from ....models import (
    JSON,
    ChatChunk,
    Delta,
    JSONObject,
    ReasoningDelta,
    RefusalDelta,
    SSEFrame,
    TextDelta,
    ToolCallDelta,
)
from ..._machine import FAILED, OPEN, MachineBase, Stage, wrong_input
from ...message import MessageAccumulator
from ...pipeline import Chained, Handoff, fuse_pair
from ...provider_errors import event_error, provider_error, reported_error
from .. import _shared
from .._base import OnMalformed, data_of, foreign, kind_of, looks_like
from .._shared import Budget, ShapeError, Template, json_kind, truncation
from .deltas import DeltaDecoder
from .reader import TOO_DEEP, ChunkReader

__all__ = ["ChatFrameDecoder", "ChunkDecoder", "OnMalformed"]

_DONE = "[DONE]"

_chunk: Callable[[JSONObject], ChatChunk] = constructor(ChatChunk)

#: The fields of a chunk that may change from one to the next without the
#: reader noticing (it reads neither), and their kinds: the holes of a learnt
#: chunk's `Template`, beside its text.
_FREE = {"created": int, "obfuscation": str}

#: The deltas whose coming leaves the reader's state as it was (a finish, a
#: usage or a source changes what a later chunk gives: the last ones seen).
_PLAIN = frozenset({TextDelta, ReasoningDelta, RefusalDelta, ToolCallDelta})

# The field of a tool-call delta's arguments: read from the only `"arguments"`
# key a template allows, it can be nowhere else (a string equal to them elsewhere
# would be under another key).
_ARGUMENTS = ("arguments",)

_text: Callable[[str, int], Delta] = constructor(TextDelta)
_reasoning: Callable[[str, int], Delta] = constructor(ReasoningDelta)
_tool_call: Callable[[int | None, str, str | None, str | None, int], Delta] = constructor(
    ToolCallDelta
)

# What `_not_json` returns for data that carries no chunk ([DONE], blanks, a skipped frame).
_HANDLED: JSON = object()


class ChatFrameDecoder(MachineBase):
    """What `ChunkDecoder` and the `"openai-chat"` dialect decoder share: the frames, read.

    Each frame's JSON is decoded once and read once by a `ChunkReader`
    (which checks every field it reads); what comes out is the chunk
    (`ChunkDecoder`) or its deltas (`OpenAIChatDecoder`, or a chunk decoder
    fused with the delta decoder below it by `rxstream._fast`). The subclasses give `feed`,
    `feed_all` and `close` their item types and their documentation.

    Args:
        on_malformed: `"raise"` (the default) raises `MalformedChunkError` for
            a frame that is not a valid chat chunk; `"skip"` drops it.

    Raises:
        ValueError: `on_malformed` is neither `"raise"` nor `"skip"`.
    """

    __slots__ = (
        "_answered",
        "_around",
        "_blank",
        "_budget",
        "_count",
        "_deltas",
        "_done",
        "_first",
        "_loads",
        "_reader",
        "_scratch",
        "_skip",
        "_skipped",
        "_strings",
        "_typed",
    )
    operator = "rs.decode_chunks()"
    #: The dialect `MalformedChunkError` names (None: a plain "malformed chunk").
    dialect: ClassVar[str | None] = None
    #: Whether the decoder gives the chunks' deltas rather than the chunks,
    #: from the start (`OpenAIChatDecoder`: `decode_chunks()` and `deltas()` in one).
    gives_deltas: ClassVar[bool] = False
    #: What it takes, fused (`Handoff`): a `"message"` frame's data as a bare `str`
    #: from an `SSEParser` in front; any other frame whole.
    takes = Handoff.STRINGS

    def __init__(self, *, on_malformed: OnMalformed = "raise") -> None:
        if on_malformed not in ("raise", "skip"):
            raise ValueError(f"on_malformed must be 'raise' or 'skip', not {on_malformed!r}")
        super().__init__()
        self._skip = on_malformed == "skip"
        # Reads (and so checks) every chunk, and keeps the choices seen and
        # finished, by which close() tells a truncated stream from one that
        # merely omits [DONE], and an empty one from an answer.
        self._reader = ChunkReader()
        self._scratch: list[Any] = []  # a chunk's deltas, when chunks are given (not deltas)
        # Give the deltas instead of the chunks (also set by `_give_deltas`, never after a feed).
        self._deltas = self.gives_deltas
        # Take the data of a frame as a plain str (set by `_take`).
        self._strings = False
        self._count = 0  # chunks given
        self._skipped = 0  # malformed frames dropped (on_malformed="skip")
        self._blank = 0  # frames of blank data
        self._first: str | None = None  # the first data that was not blank, for messages
        self._done = False
        # Whether a delta that is an answer came out (`_shared.gives_answer`):
        # [DONE] (or a complete end) without one is `EmptyStreamError`.
        self._answered = False
        first, standard = loaders()
        self._loads = first or standard
        # The typed decoding of the usual chunks (the `fast` extra), or None.
        self._typed = typed("openai_chat")
        # The last chunk that gave one text, reasoning or tool-call delta, as a
        # `Template`, with how to build that delta and its choice: a later chunk made
        # of the same JSON but for that text (and the free fields) gives the same
        # delta with its text.
        self._around: tuple[Template, Callable[[str, int], Delta], int] | None = None
        # How often templates are learnt; None: never (the fast paths were off at the start).
        self._budget = Budget() if enabled() else None

    @property
    def done(self) -> bool:
        """True once `[DONE]` arrived: the stream is complete."""
        return self._done

    def feed(self, frame: SSEFrame) -> list[Any]:
        """Take one frame; return the chunk (or the deltas) it carries."""
        out: list[Any] = []
        self._decode((frame,), out)
        return out

    def feed_all(self, frames: Iterable[SSEFrame], out: list[Any]) -> None:
        """`out += feed(frame)` for each frame in turn, stopping at `[DONE]`."""
        self._decode(frames, out)

    def close(self) -> list[Any]:
        """End the input, checking that the stream did not stop half-way."""
        self._check_end()
        return []

    def _decode(self, frames: Iterable[SSEFrame | str], out: list[Any]) -> None:
        # The hot path of the pipeline, one loop: a frame costs one JSON decode
        # and one `ChunkReader.read`, or less on a shortcut (a learnt template,
        # the typed reading), read inline; nothing else takes a call unless the
        # frame is unusual.
        if self._state is not OPEN or self._done:
            self._refuse_feed()
        loads = self._loads
        read = self._reader.read
        deltas = self._deltas
        strings = self._strings
        count = self._count
        answered = self._answered
        gives_answer = _shared.gives_answer
        feed_typed, around, learn = self._shortcuts()
        scratch = self._scratch
        mark = len(out)
        data = ""
        frame: object = None
        try:
            for frame in frames:
                if strings and type(frame) is str:
                    # The data of a "message" frame, from the parser fused
                    # with this decoder (which keeps other frames whole).
                    data = frame
                    event = "message"
                else:
                    data = frame.data  # type: ignore[union-attr]
                    event = frame.event  # type: ignore[union-attr]
                    if event == "error":
                        _raise_event(frame, data, event, self.dialect)
                if around is not None:
                    text = around[0].read(data)
                    if text:
                        # The learnt chunk but for its text: the reader would give the
                        # same delta with this text (and no other, as it did before).
                        out.append(around[1](text, around[2]))
                        count += 1
                        continue
                mark = len(out)
                if feed_typed is None or not feed_typed(data, out):
                    # The general path: the chunk decoded whole, and read.
                    try:
                        value = loads(data)
                    except (ValueError, TypeError, RecursionError) as exc:
                        # (msgspec refuses str subclasses: the `Unterminated` data of a last event.)
                        value = self._not_json(data, exc)
                    if type(value) is not dict or self._skip or value.get("error") is not None:
                        value = self._unusual(value, data, event)
                        if value is _HANDLED:
                            if self._done:
                                break
                            continue
                    # A chunk that fails half-way must leave none of its deltas.
                    mark = len(out)
                    if not deltas:
                        if not self._read_chunk(value, data, event, out, scratch):
                            continue
                    elif not read(value, out) and not self._no_choices(
                        value, data, event, out, mark
                    ):
                        continue
                    elif learn:
                        around = self._relearn(data, value, out, mark, around)
                if not answered:
                    answered = gives_answer(out[mark:] if deltas else scratch)
                if not count:
                    self._first = data
                count += 1
            self._check_answered(answered, count)
        except BaseException as exc:
            failure = self._failure(exc, frame, data, strings, out, mark)
            if failure is None:
                raise
            error, cause = failure
            raise error from cause
        finally:
            self._count = count
            self._answered = answered
            self._around = around  # (None unless templates are learnt)

    def _shortcuts(
        self,
    ) -> tuple[
        Callable[[str, list[Any]], bool] | None,
        tuple[Template, Callable[[str, int], Delta], int] | None,
        bool,
    ]:
        """The shortcuts `_decode` may take: the typed reading, the template, learning one.

        The typed reading (msgspec Structs) reads the chunks it describes when
        deltas are given; otherwise the standard library's shortcut (msgspec
        reads a whole chunk faster): the template of the last chunk that gave
        one text or reasoning delta, learnt while the budget allows.
        """
        if not self._deltas:
            return None, None, False
        if self._typed is not None:
            return self._typed.ChunkFeeder(self._reader).feed, None, False
        return None, self._around, self._budget is not None

    def _unusual(self, value: JSON, data: str, event: str) -> JSON:
        """The chunk to read of an unusual value, or `_HANDLED` when there is none.

        A value that is no object, a chunk that is an error report (raised as
        `ProviderError`), a chunk `on_malformed="skip"` finds malformed.
        """
        if value is _HANDLED:
            return value
        if type(value) is not dict:
            self._not_object(value, data)
            return _HANDLED
        if value.get("error") is not None:
            raise _error(value, data, event)
        if self._skip and not self._valid(value, data):
            return _HANDLED
        return value

    def _check_answered(self, answered: bool, count: int) -> None:
        """At `[DONE]`: a stream whose chunks held no answer is `EmptyStreamError`."""
        if self._done and not answered:
            raise self._empty(done=True, count=count)

    def _read_chunk(
        self, value: JSONObject, data: str, event: str, out: list[Any], scratch: list[Any]
    ) -> bool:
        """Read a chunk given as a chunk (not as deltas), its deltas into `scratch`.

        False when the chunk is dropped (`_no_choices`); else the chunk is in `out`.
        """
        scratch.clear()
        if not self._reader.read(value, scratch) and not self._no_choices(
            value, data, event, scratch, 0
        ):
            return False
        out.append(_chunk(value))
        return True

    def _relearn(
        self,
        data: str,
        value: JSONObject,
        out: list[Any],
        mark: int,
        around: tuple[Template, Callable[[str, int], Delta], int] | None,
    ) -> tuple[Template, Callable[[str, int], Delta], int] | None:
        """The template after a chunk read whole that gave `out[mark:]`."""
        if len(out) == mark:
            return around
        if len(out) == mark + 1 and type(out[mark]) in _PLAIN:
            return self._learn(data, value, out[mark]) or around
        if around is not None and not all(type(delta) in _PLAIN for delta in out[mark:]):
            # A finish, a usage, a source: the reader's state changed,
            # and the learnt chunk might now read otherwise.
            return None
        return around

    def _failure(
        self, exc: BaseException, frame: object, data: str, strings: bool, out: list[Any], mark: int
    ) -> tuple[BaseException, BaseException | None] | None:
        """What a failed `_decode` raises instead of `exc`, and from what; None: `exc` itself.

        A wrong field is `MalformedChunkError`; data the stream cut short (the
        last event, without its blank line) is a truncated stream, not a
        malformed one; JSON nested too deep is malformed; an item that is no
        SSE frame says what it is (another dialect's, or the wrong stage's).
        The decoder fails; a chunk that failed half-way leaves none of its deltas in `out`.
        """
        self._state = FAILED
        if self._deltas and isinstance(exc, ShapeError | RecursionError):
            del out[mark:]
        if isinstance(exc, ShapeError):
            error = MalformedChunkError(exc.reason, data, dialect=self.dialect)
            cut = truncation(frame, self.dialect)
            return (error, None) if cut is None else (cut, error)
        if isinstance(exc, MalformedChunkError):
            cut = truncation(frame, self.dialect)
            return None if cut is None else (cut, exc)
        if isinstance(exc, RecursionError):
            return MalformedChunkError(TOO_DEEP, data, dialect=self.dialect), None
        if not isinstance(exc, AttributeError | TypeError) or isinstance(
            frame, SSEFrame | str if strings else SSEFrame
        ):
            return None
        other = foreign(frame, "openai-chat")
        if other is None:
            return wrong_input(frame, self.operator, Stage.FRAMES), None
        what = f"{kind_of(frame)}, not a chat chunk's SSE event"
        error = MalformedChunkError(looks_like(what, other), data_of(frame), dialect=self.dialect)
        return error, None

    def _learn(
        self, data: str, value: JSONObject, delta: Delta
    ) -> tuple[Template, Callable[[str, int], Delta], int] | None:
        """The template of a chunk just read whole that gave one `delta`, or None.

        Only for a text, reasoning or tool-call delta, and as often as the
        `Budget` allows.
        """
        # The fields the delta's text may come from (a reasoning delta's from
        # `reasoning_content`, or else from `reasoning`), and how to build another.
        keys: tuple[str, ...]
        make: Callable[[str, int], Delta]
        if type(delta) is TextDelta:
            keys, make, text = ("content",), _text, delta.text
        elif type(delta) is ReasoningDelta:
            keys, make, text = ("reasoning_content", "reasoning"), _reasoning, delta.text
        elif type(delta) is ToolCallDelta:
            keys, make, text = _ARGUMENTS, _fragment(delta), delta.arguments
        else:
            return None
        if self._budget is None or not self._budget.take():
            return None
        for key in keys:
            if keys is not _ARGUMENTS and not _read_from(value, key, text):
                # The same string elsewhere (a legacy `text` with a `content` beside
                # it, a duplicate key json drops): the hole is not what the reader read.
                continue
            template = Template.learn(data, key, text, _FREE)
            if template is not None:
                return template, make, delta.choice
        return None

    def _no_choices(
        self, value: JSONObject, data: str, event: str, out: list[Any], mark: int
    ) -> bool:
        """Whether a chunk without `choices` is kept (its items in `out` from `mark` on).

        The slow path of a chunk that is no chat chunk: an error report in
        disguise raises `ProviderError`; another known dialect's event is
        `MalformedChunkError` naming that dialect (or is skipped); anything
        else is kept as before (a chunk may omit `choices`). What the chunk
        gave is taken back from `out` unless it is kept.
        """
        other = None
        if value.get("type") != "error":
            other = foreign(SSEFrame(data, event), "openai-chat")
            if other is None:
                return True
        del out[mark:]
        if other is None:
            raise _error(value, data, event)
        self._malformed(looks_like("a chunk without choices, not a chat chunk", other), data)
        return False

    def _check_end(self) -> None:
        """`close()`'s work: end the input, checking that the stream did not stop half-way."""
        self._closing()
        if not self._done:
            if not self._reader.seen:
                self._state = FAILED
                raise self._empty(done=False, count=self._count)
            unfinished = tuple(sorted(self._reader.seen - self._reader.finished.keys()))
            if unfinished:
                self._state = FAILED
                which = ", ".join(map(str, unfinished))
                plural = "s" if len(unfinished) > 1 else ""
                chunks = "chunk" if self._count == 1 else "chunks"
                raise TruncatedStreamError(
                    f"the stream ended before [DONE] with choice{plural} {which} unfinished,"
                    f" after {self._count} {chunks}",
                    unfinished=unfinished,
                )
            if not self._answered:
                self._state = FAILED
                raise self._empty(done=False, count=self._count)

    @property
    def pristine(self) -> bool:
        """True while nothing has been fed (nor the decoder closed)."""
        return (
            self._state is OPEN
            and not (self._count or self._blank or self._skipped or self._done)
            and self._first is None
        )

    def _take(self, mode: Handoff) -> bool:
        """Fusion hook (`rxstream.core.pipeline`): also take a `"message"` frame's data as a `str`.

        For an `SSEParser` fused in front (`mode` is `STRINGS`), which then
        hands over the data of such frames without building an `SSEFrame` for
        each. Only while nothing was fed; returns whether the decoder takes
        them from now on.
        """
        if mode is not Handoff.STRINGS or not self.pristine:
            return False
        self._strings = True
        return True

    def _give_deltas(self, reader: ChunkReader | None) -> bool:
        """Fast-path hook (`rxstream._fast`): give each chunk's deltas instead of the chunk.

        For a `DeltaDecoder` fused below, whose `reader` (None: this decoder's
        own) then reads the chunks, once, here. Only while nothing was fed;
        returns whether the decoder gives deltas from now on.
        """
        if not self.pristine:
            return False
        if not self._deltas:
            if reader is not None:
                # Whoever shares that reader (a message accumulator after the
                # delta decoder) sees the chunks through this decoder's reading.
                self._reader = reader
            self._deltas = True
        return True

    def _fuse_below(self, lower: Any) -> Any:
        """Fusion hook (`rxstream.core.pipeline`): this decoder standing for itself and `lower`.

        - a `DeltaDecoder`: this decoder gives the deltas itself, reading
          each chunk with the delta decoder's reader (which a message
          accumulator may share);
        - a `MessageAccumulator`: this decoder gives it the deltas, and the
          accumulator reads roles and choices through this decoder's reader;
        - a pair that begins with a `DeltaDecoder` (what the operators over
          the accumulators build for chunk input): the delta decoder as
          above, then fused with the pair's other machine where that fuses.

        None when no shortcut applies (or either was fed).
        """
        kind = type(lower)
        if kind is DeltaDecoder:
            if not lower.pristine:
                return None
            return self if self._give_deltas(lower.reader) else None
        if kind is MessageAccumulator:
            return self._accumulate(lower)
        if kind is Chained:
            upper, rest = lower.parts
            if type(upper) is not DeltaDecoder or self._fuse_below(upper) is None:
                return None
            return fuse_pair(self, rest) or Chained(self, rest)
        return None

    def _accumulate(self, below: MessageAccumulator) -> Chained | None:
        # Chunks into the accumulator: this decoder gives their deltas, and the
        # accumulator reads roles and choices through this decoder's reader.
        if not below.pristine:
            return None
        gave_deltas = self._deltas
        if not self._give_deltas(None):
            return None
        if not gave_deltas:
            below._read_chunks_with(self._reader)
        return Chained(self, below)

    def _refuse_feed(self) -> None:
        if self._state is OPEN:
            raise RuntimeError(
                f"this {type(self).__name__} is done ([DONE] arrived); it takes no more input"
            )
        self._refuse()

    def _valid(self, value: JSONObject, data: str) -> bool:
        """Whether a chunk reads without error; a chunk that does not is skipped."""
        try:
            ChunkReader().read(value, [])
        except (ShapeError, RecursionError):
            self._malformed("", data)
            return False
        return True

    def _not_json(self, data: str, refused: Exception) -> JSON:
        """The value of data the first decode refused, or `_HANDLED` when it is no chunk."""
        if isinstance(refused, RecursionError):
            self._malformed(TOO_DEEP, data)
            return _HANDLED
        try:
            # The fast decoder refuses a few texts json accepts: json decides.
            return _shared.stdlib_loads(data)
        except ValueError as exc:
            # [DONE] and keep-alive blanks are not JSON; testing them only
            # here keeps the common frame at a single decode.
            stripped = data.strip()
            if stripped == _DONE:
                self._done = True
                return _HANDLED
            if not stripped:
                self._blank += 1
                return _HANDLED
            self._malformed(f"invalid JSON: {exc}", data)
            return _HANDLED

    def _not_object(self, value: JSON, data: str) -> None:
        # Google sends its error object wrapped in a list.
        error = reported_error(value, data=data) if type(value) is list else None
        if error is not None:
            raise error
        self._malformed(f"a JSON {json_kind(value)}, not an object", data)

    def _malformed(self, reason: str, data: str) -> None:
        # Data the stream cut short is never skipped: `_decode` reports it as truncated.
        if not self._skip or truncation(data, None) is not None:
            raise MalformedChunkError(reason, data, dialect=self.dialect)
        self._skipped += 1
        if self._first is None:
            self._first = data

    def _empty(self, *, done: bool, count: int) -> EmptyStreamError:
        parts = []
        if count:
            lacking = f"with {_shared.NO_ANSWER}" if self._reader.seen else "with no choice"
            parts.append(f"{count} chunk{'s' if count > 1 else ''} {lacking}")
        if self._skipped:
            parts.append(f"{self._skipped} malformed frame{'s' if self._skipped > 1 else ''}")
        if self._blank:
            parts.append(f"{self._blank} frame{'s' if self._blank > 1 else ''} of blank data")
        if done:
            parts.append("then [DONE]" if parts else "only [DONE]")
        reason = ", ".join(parts) if parts else "no event arrived"
        return EmptyStreamError(reason, body=excerpt(self._first) if self._first else "")


class ChunkDecoder(ChatFrameDecoder):
    """Turn `SSEFrame`s into `ChatChunk`s, ending at `[DONE]`.

    Args:
        on_malformed: `"raise"` (the default) raises `MalformedChunkError` for
            a frame that is not a valid chat chunk; `"skip"` drops it.

    Raises:
        ValueError: `on_malformed` is neither `"raise"` nor `"skip"`.

    >>> decoder = ChunkDecoder()
    >>> decoder.feed(SSEFrame('{"choices": [{"index": 0, "delta": {"content": "Hi"}}]}'))
    [ChatChunk(raw={'choices': [{'index': 0, 'delta': {'content': 'Hi'}}]})]
    >>> decoder.feed(SSEFrame("[DONE]")), decoder.done
    ([], True)
    >>> decoder.close()
    []
    """

    __slots__ = ()

    def feed(self, frame: SSEFrame) -> list[ChatChunk]:
        """Take one frame and return the chunk it carries.

        Args:
            frame: the next frame of the stream.

        Returns:
            `[chunk]`, or `[]` for `[DONE]`, empty data and skipped frames.

        Raises:
            ProviderError: the frame reports a provider error.
            MalformedChunkError: the frame is not a valid chat chunk (unless
                `on_malformed="skip"`).
            EmptyStreamError: `[DONE]` arrived and no chunk named a choice.
            TypeError: the item is not an `SSEFrame` (the message names the
                operator missing in front of `rs.decode_chunks()`).
            RuntimeError: the decoder is done, closed, or failed before.
        """
        out: list[ChatChunk] = []
        self._decode((frame,), out)
        return out

    def feed_all(self, frames: Iterable[SSEFrame], out: list[ChatChunk]) -> None:
        """Feed many frames at once: `out += feed(frame)` for each in turn, stopping at `[DONE]`.

        >>> decoder, out, DONE = ChunkDecoder(), [], SSEFrame("[DONE]")
        >>> decoder.feed_all([SSEFrame('{"choices": [{"finish_reason": "stop"}]}'), DONE], out)
        >>> out, decoder.done
        ([ChatChunk(raw={'choices': [{'finish_reason': 'stop'}]})], True)
        """
        self._decode(frames, out)

    def close(self) -> list[ChatChunk]:
        """End the input, checking that the stream did not stop half-way.

        Returns:
            `[]` (a decoder buffers nothing).

        Raises:
            EmptyStreamError: no chunk named a choice (and `[DONE]` did not
                already say so).
            TruncatedStreamError: `[DONE]` never arrived and some choice that
                was seen never got a `finish_reason`.
            RuntimeError: the decoder was already closed, or failed before.
        """
        self._check_end()
        return []


def _error(value: JSONObject, data: str, event: str) -> ProviderError:
    # The caller saw an error shape.
    return provider_error(value, data=data, event=event)


def _read_from(value: JSONObject, key: str, text: str) -> bool:
    """Whether the reader read `text` from a choice's `delta.<key>` in `value` (a chunk read whole).

    A template's hole must be the string the reader read: a string equal to
    it at another place (a key json drops for a duplicate, a legacy `text`
    with a `content` beside it, a top-level `reasoning`) would read otherwise.
    A `reasoning` field is read only when `reasoning_content` is empty.
    """
    for choice in value.get("choices") or ():
        delta = choice.get("delta") if type(choice) is dict else None
        if (
            type(delta) is dict
            and delta.get(key) == text
            and (key != "reasoning" or not delta.get("reasoning_content"))
        ):
            return True
    return False


def _fragment(delta: ToolCallDelta) -> Callable[[str, int], Delta]:
    """How to build a tool-call delta like `delta` but for its arguments (and its choice)."""
    index, id, name = delta.index, delta.id, delta.name

    def fragment(arguments: str, choice: int) -> Delta:
        return _tool_call(index, arguments, id, name, choice)

    return fragment


def _raise_event(frame: object, data: str, event: str, dialect: str | None) -> NoReturn:
    """An `error` event: the provider's error, or a cut stream when the cut broke its data."""
    cut = truncation(frame, dialect)
    if cut is not None:
        raise cut from event_error(data, event)
    raise event_error(data, event)

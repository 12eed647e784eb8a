"""Decode the frames of an OpenAI-compatible chat-completion stream into chunks.

Input: `SSEFrame`s (what `SSEParser` gives) of a `/v1/chat/completions`
stream with `stream: true`.
Output: `ChatChunk(raw)`, one per frame that carries a chunk, with the whole
decoded JSON kept (provider extras are never lost).

Invariants:

- `data: [DONE]` ends the stream: `done` turns True and no more input is taken.
- A provider error inside the HTTP 200 stream (an `event: error` frame, or a
  chunk with a non-null `"error"` key) raises `ProviderError`.
- Data that is not a JSON object, or a chat chunk that is structurally broken
  (`choices` not a list, a choice not an object, a `delta` or `index` of the
  wrong type) raises `MalformedChunkError`, or is dropped with
  `on_malformed="skip"`. Missing fields are fine.
- The input ending before `[DONE]` while a choice that was seen never got a
  `finish_reason` raises `TruncatedStreamError` from `close()`; a stream whose
  every choice finished (TGI sends no `[DONE]`) completes normally.
- One JSON decode per frame and no other pass over the data. With the `fast`
  extra installed (msgspec) that decode is msgspec's; whatever msgspec refuses
  is decoded again by the standard library, which gives the answer (or the
  error message), so the results are the same either way.

Spec: the OpenAI Chat Completions streaming format (`chat.completion.chunk`),
as its compatible providers actually send it (see QUIRKS.md, section 6).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from json.scanner import make_scanner
from typing import Literal

from ..errors import MalformedChunkError, ProviderError, TruncatedStreamError, excerpt
from ..models import JSON, ChatChunk, JSONObject, SSEFrame
from ._build import constructor

__all__ = ["ChunkDecoder", "OnMalformed"]

#: What `ChunkDecoder` does with a frame that is not a valid chat chunk.
OnMalformed = Literal["raise", "skip"]

_DONE = "[DONE]"

_chunk: Callable[[JSONObject], ChatChunk] = constructor(ChatChunk)

# The C scanner behind json.loads, called directly: for the usual frame (one
# JSON object, no surrounding blanks) it gives what json.loads gives, without
# json.loads's Python-level checks and two regex passes. Anything else goes
# through json.loads itself, which then owns the result and the message.
# (typeshed types make_scanner's argument wrongly; a JSONDecoder is what it takes.)
_scan_once = make_scanner(json.JSONDecoder())  # type: ignore[arg-type]


def _stdlib_loads(data: str) -> JSON:
    if type(data) is str:
        try:
            value, end = _scan_once(data, 0)
        except (ValueError, StopIteration):
            pass
        else:
            if end == len(data):
                return value
    return json.loads(data)


def _load_fast_decoder() -> Callable[[str], JSON] | None:
    try:  # msgspec is the optional `fast` extra.
        import msgspec
    except ImportError:  # pragma: no cover - depends on the environment
        return None
    # Its DecodeError is a ValueError, and whatever it refuses (NaN, 1e400,
    # lone surrogates, ...) is decoded again by `_stdlib_loads`, which has the
    # last word: the results and the messages are those of the standard library.
    decode: Callable[[str], JSON] = msgspec.json.Decoder().decode
    return decode


# Set to None (as the tests do) to run the standard-library path only; each
# decoder reads it when it is built. msgspec was picked over orjson by
# measurement, and because orjson turns integers past 64 bits into floats.
_fast_loads: Callable[[str], JSON] | None = _load_fast_decoder()

# What `_not_json` returns for data that carries no chunk ([DONE], blanks, a skipped frame).
_HANDLED: JSON = object()


class ChunkDecoder:
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

    __slots__ = ("_count", "_done", "_finished", "_loads", "_seen", "_skip", "_state")

    def __init__(self, *, on_malformed: OnMalformed = "raise") -> None:
        if on_malformed not in ("raise", "skip"):
            raise ValueError(f"on_malformed must be 'raise' or 'skip', not {on_malformed!r}")
        self._skip = on_malformed == "skip"
        # Choice indexes seen, and those that got a finish_reason: close()
        # tells a truncated stream from one that merely omits [DONE].
        self._seen: set[int] = set()
        self._finished: set[int] = set()
        self._count = 0
        self._done = False
        self._state = "open"
        self._loads = _fast_loads or _stdlib_loads

    @property
    def done(self) -> bool:
        """True once `[DONE]` arrived: the stream is complete."""
        return self._done

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
            RuntimeError: the decoder is done, closed, or failed before.
        """
        if self._state != "open":
            raise RuntimeError(f"this ChunkDecoder is {self._state}; it takes no more input")
        if self._done:
            raise RuntimeError("this ChunkDecoder is done ([DONE] arrived); it takes no more input")
        # The hot path is inlined here: no helper call for the usual frame.
        try:
            data = frame.data
            if frame.event == "error":
                raise _event_error(data, frame.event)
            try:
                value = self._loads(data)
            except ValueError:
                value = self._not_json(data)
                if value is _HANDLED:
                    return []
            if type(value) is not dict:
                return self._malformed(f"a JSON {_kind(value)}, not an object", data)
            error = value.get("error")
            if error is not None:
                raise _chunk_error(error, value, data, frame.event)
            choices = value.get("choices")
            if choices is not None:
                if type(choices) is not list:
                    return self._malformed(
                        f"'choices' is a JSON {_kind(choices)}, not an array", data
                    )
                if not self._track_one(choices):
                    reason = self._track(choices)
                    if reason:
                        return self._malformed(reason, data)
            self._count += 1
            return [_chunk(value)]
        except Exception:
            self._state = "failed"
            raise

    def close(self) -> list[ChatChunk]:
        """End the input, checking that the stream did not stop half-way.

        Returns:
            `[]` (a decoder buffers nothing).

        Raises:
            TruncatedStreamError: `[DONE]` never arrived and some choice that
                was seen never got a `finish_reason`.
            RuntimeError: the decoder was already closed, or failed before.
        """
        if self._state != "open":
            raise RuntimeError(f"this ChunkDecoder is {self._state}; it cannot be closed again")
        self._state = "closed"
        if not self._done:
            unfinished = tuple(sorted(self._seen - self._finished))
            if unfinished:
                self._state = "failed"
                which = ", ".join(map(str, unfinished))
                plural = "s" if len(unfinished) > 1 else ""
                chunks = "chunk" if self._count == 1 else "chunks"
                raise TruncatedStreamError(
                    f"the stream ended before [DONE] with choice{plural} {which} unfinished,"
                    f" after {self._count} {chunks}",
                    unfinished=unfinished,
                )
        return []

    def _track_one(self, choices: list[JSON]) -> bool:
        """Record a well-formed lone choice (the usual chunk); False leaves it to `_track`."""
        if len(choices) != 1:
            return False
        choice = choices[0]
        if type(choice) is not dict:
            return False
        index = choice.get("index")
        if index is None:
            index = 0
        elif type(index) is not int:
            return False
        delta = choice.get("delta")
        if delta is not None and type(delta) is not dict:
            return False
        self._seen.add(index)
        if choice.get("finish_reason") is not None:
            self._finished.add(index)
        return True

    def _track(self, choices: list[JSON]) -> str | None:
        """Record the choices' indexes and finishes; return why they are broken, if they are."""
        # Validate every choice before recording any, so a skipped chunk
        # leaves no trace in the truncation bookkeeping.
        for position, choice in enumerate(choices):
            if type(choice) is not dict:
                return f"choice {position} is a JSON {_kind(choice)}, not an object"
            index = choice.get("index")
            if index is not None and type(index) is not int:
                kind = _kind(index)
                return f"choice {position} has an 'index' that is a JSON {kind}, not an integer"
            delta = choice.get("delta")
            if delta is not None and type(delta) is not dict:
                return (
                    f"choice {position} has a 'delta' that is a JSON {_kind(delta)}, not an object"
                )
        seen = self._seen
        for choice in choices:
            index = choice.get("index")
            if index is None:
                index = 0
            seen.add(index)
            if choice.get("finish_reason") is not None:
                self._finished.add(index)
        return None

    def _not_json(self, data: str) -> JSON:
        """The value of data the first decode refused, or `_HANDLED` when it is no chunk."""
        try:
            # The fast decoder refuses a few texts json accepts: json decides.
            return _stdlib_loads(data)
        except ValueError as exc:
            # [DONE] and keep-alive blanks are not JSON; testing them only
            # here keeps the common frame at a single decode.
            stripped = data.strip()
            if stripped == _DONE:
                self._done = True
                return _HANDLED
            if not stripped:
                return _HANDLED
            self._malformed(f"invalid JSON: {exc}", data)
            return _HANDLED

    def _malformed(self, reason: str, data: str) -> list[ChatChunk]:
        if self._skip:
            return []
        raise MalformedChunkError(reason, data)


def _kind(value: JSON) -> str:
    """The JSON name of a decoded value's type, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__  # pragma: no cover - json.loads makes no other types


def _event_error(data: str, event: str) -> ProviderError:
    """The `ProviderError` of an `event: error` frame, whatever its data holds."""
    try:
        payload: JSON = json.loads(data)
    except ValueError:
        payload = None
    if isinstance(payload, dict):
        error = payload.get("error")
        if error is not None:
            return _chunk_error(error, payload, data, event)
        message = payload.get("message")
        if isinstance(message, str) and message:
            kind = payload.get("type")
            # {"type": "error", ...} is an envelope tag (OpenAI Responses), not an error type.
            return ProviderError(
                message,
                type=kind if isinstance(kind, str) and kind != "error" else None,
                code=_code(payload.get("code")),
                payload=payload,
                event=event,
            )
    return ProviderError(
        excerpt(data) if data.strip() else "(no data)", payload=payload, event=event
    )


def _chunk_error(error: JSON, payload: JSONObject, data: str, event: str) -> ProviderError:
    """The `ProviderError` of a payload whose `"error"` is not null."""
    if isinstance(error, dict):
        message = error.get("message")
        kind = error.get("type")
        return ProviderError(
            message if isinstance(message, str) and message else excerpt(data),
            type=kind if isinstance(kind, str) else None,
            code=_code(error.get("code")),
            payload=payload,
            event=event,
        )
    if isinstance(error, str) and error:
        return ProviderError(error, payload=payload, event=event)
    return ProviderError(excerpt(data), payload=payload, event=event)


def _code(value: JSON) -> str | int | None:
    """A provider error code, if it is one (a string or an integer)."""
    if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    return None

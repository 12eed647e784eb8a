"""Dialects: every provider's wire format decoded into the same deltas (and rendered back).

- `"openai-chat"`: `/v1/chat/completions` SSE frames, ends at `[DONE]`;
- `"openai-responses"`: Responses API SSE frames (`response.*`), ends at
  `response.completed` / `response.incomplete`;
- `"anthropic"`: Messages API SSE frames, ends at `message_stop`;
- `"gemini"`: `streamGenerateContent?alt=sse` frames, ends at the chunk with
  a `finishReason` (then end of input);
- `"cohere"`: v2 chat SSE frames, ends at `message-end`;
- `"ollama"`: `/api/chat` NDJSON lines (`str`), ends at `"done": true`;
- `"bedrock"`: ConverseStream `EventStreamMessage`s, ends at `messageStop`
  (usage may follow in `metadata`);
- `"ai-sdk"`: the AI SDK's UI message stream (what `useChat` reads), SSE
  frames of `{"type": ...}` chunks, ends at `finish`, then `[DONE]`; not a
  provider's, so not in `DIALECTS`;
- `"rxstream"`: rxstream's own SSE event format (what
  `rs.to_sse(dialect="rxstream")` writes; the format is `core.wire`), ends at
  its `done` event. It is no
  provider's dialect and is not in `DIALECTS`: it carries any item a
  pipeline holds (messages, tool calls, chunks, ...), not only deltas, and
  has no renderer (`core.dialects.sse_encoder.SSEEncoder` writes it). `FORMATS` lists
  it with the dialects: every name `decoder` takes.

`decoder(name)` builds a dialect's decoder (one package per wire format, each
a sans-I/O machine: `feed(item) -> deltas`, `close()`); `"auto"` builds an
`AutoDecoder`, which picks the dialect from the first item that tells
(`detect`). `renderer(name)` builds the machine that turns deltas back into
that dialect's wire items (`wire_bytes` makes the bytes a server sends).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from functools import cache
from typing import Any, Protocol

from ...errors import EmptyStreamError, MalformedChunkError, excerpt
from ...models import Delta, EventStreamMessage, SSEFrame
from ..eventstream import encode_message
from ..pipeline import Handoff, takes
from ..provider_errors import provider_error
from ..sse import event_text
from ..wire import RXSTREAM
from ..wire import TYPES as _CODEC_TYPES
from ._base import (
    DialectDecoder,
    OnMalformed,
    Renderer,
    ResetRule,
    ShapeError,
    Wire,
    WireKind,
    load_json,
)
from ._shared import json_kind, truncation

__all__ = [
    "AI_SDK",
    "DIALECTS",
    "FORMATS",
    "RXSTREAM",
    "AutoDecoder",
    "Decoder",
    "DialectDecoder",
    "OnMalformed",
    "Renderer",
    "ResetRule",
    "ShapeError",
    "Wire",
    "WireKind",
    "decoder",
    "detect",
    "http_error",
    "json_kind",
    "renderer",
    "wire_bytes",
]

#: The dialect names, in the order the docs list them (docs/concepts/architecture.md).
DIALECTS = (
    "openai-chat",
    "openai-responses",
    "anthropic",
    "gemini",
    "cohere",
    "ollama",
    "bedrock",
)

#: Every name `decoder` takes besides `"auto"`: the provider dialects, then rxstream's format.
FORMATS = (*DIALECTS, RXSTREAM)

#: The AI SDK's UI message stream (what `useChat` reads): a dialect rxstream writes
#: and reads, with a renderer and a decoder like the providers' (`decoder`,
#: `renderer`, `detect`), but no provider's, so it is not in `DIALECTS` (which
#: lists the formats the fake server and the provider matrices cover).
AI_SDK = "ai-sdk"

# name -> (module, decoder class, renderer class or None); imported on first use.
_MODULES = {
    "openai-chat": ("openai_chat", "OpenAIChatDecoder", "OpenAIChatRenderer"),
    "openai-responses": ("openai_responses", "ResponsesDecoder", "ResponsesRenderer"),
    "anthropic": ("anthropic", "AnthropicDecoder", "AnthropicRenderer"),
    "gemini": ("gemini", "GeminiDecoder", "GeminiRenderer"),
    "cohere": ("cohere", "CohereDecoder", "CohereRenderer"),
    "ollama": ("ollama", "OllamaDecoder", "OllamaRenderer"),
    "bedrock": ("bedrock", "BedrockDecoder", "BedrockRenderer"),
    AI_SDK: ("ai_sdk", "AISDKDecoder", "AISDKRenderer"),
    RXSTREAM: ("rxstream_json", "RxstreamDecoder", None),
}


class Decoder(Protocol):
    """What every dialect decoder is (a core machine with `done`)."""

    @property
    def done(self) -> bool: ...  # pragma: no cover

    def feed(self, item: Any, /) -> list[Delta]: ...  # pragma: no cover

    def feed_all(self, items: Iterable[Any], out: list[Delta], /) -> None: ...  # pragma: no cover

    def close(self) -> list[Delta]: ...  # pragma: no cover


def _check_name(name: str) -> str:
    if name not in _MODULES:
        raise ValueError(
            f"unknown dialect {name!r}; the dialects are {', '.join(map(repr, DIALECTS))} "
            f"and {AI_SDK!r} (or 'auto', or {RXSTREAM!r} for rxstream's own event format)"
        )
    return name


def _check_provider(name: str) -> str:
    if _check_name(name) == RXSTREAM:
        raise ValueError(
            f"{RXSTREAM!r} is rxstream's own event format, not a provider's dialect: "
            "SSEEncoder('rxstream') (rs.to_sse(dialect='rxstream')) writes it"
        )
    return name


def _attr(name: str, which: int) -> Any:
    module, *classes = _MODULES[_check_name(name)]
    attribute = classes[which]
    assert attribute is not None  # the names without a renderer are refused before
    return _imported(module, attribute)


@cache
def _imported(module: str, attribute: str) -> Any:
    """A dialect module's class, imported on first use (then kept: a decoder a stream)."""
    return getattr(importlib.import_module(f".{module}", __name__), attribute)


def decoder(
    name: str = "auto",
    *,
    on_malformed: OnMalformed = "raise",
    ids: bool = False,
    runs: bool = False,
) -> Decoder:
    """A new decoder for dialect `name` (or `"auto"`).

    Args:
        name: a dialect of `DIALECTS`, `"rxstream"` or `"auto"`.
        on_malformed: `"raise"` or `"skip"` items that are not of the dialect.
        ids: `"rxstream"` only: emit `StreamEntry(event id, item)`.
        runs: `"ai-sdk"` only: give a run's items too (`AISDKDecoder(runs=True)`).

    Raises:
        ValueError: an unknown dialect name, a bad `on_malformed`, `ids` for
            another format than `"rxstream"`, `runs` for another than `"ai-sdk"`.

    >>> decoder("openai-chat").feed(SSEFrame('{"choices": [{"delta": {"content": "a"}}]}'))
    [TextDelta(text='a', choice=0)]
    """
    if on_malformed not in ("raise", "skip"):
        raise ValueError(f"on_malformed must be 'raise' or 'skip', not {on_malformed!r}")
    if ids and name != RXSTREAM:
        raise ValueError(
            f"ids=True is for the {RXSTREAM!r} format (one event id per item), not {name!r}"
        )
    if runs and name != AI_SDK:
        raise ValueError(
            f"runs=True is for the {AI_SDK!r} dialect (a run's UI message stream), not {name!r}"
        )
    if name == "auto":
        return AutoDecoder(on_malformed=on_malformed)
    cls = _attr(name, 0)
    if runs:
        return cls(on_malformed=on_malformed, runs=True)  # type: ignore[no-any-return]
    made: Decoder = (
        cls(on_malformed=on_malformed, ids=ids) if ids else cls(on_malformed=on_malformed)
    )
    return made


def renderer(name: str, **options: Any) -> Renderer:
    """A new renderer for dialect `name`: deltas in, that dialect's wire items out.

    Raises:
        ValueError: an unknown dialect name, or `"rxstream"` (written by
            `SSEEncoder`, not by a renderer).

    >>> wire_bytes(r := renderer("openai-chat"), r.close())
    b'data: [DONE]\\n\\n'
    """
    made: Renderer = _attr(_check_provider(name), 1)(**options)
    return made


def http_error(
    name: str, status: int, message: str, *, type: str | None = None, code: str | int | None = None
) -> tuple[str, bytes]:
    """(content type, body) of an HTTP error answer in dialect `name`'s provider shape."""
    module = importlib.import_module(f".{_MODULES[_check_provider(name)][0]}", __name__)
    result: tuple[str, bytes] = module.http_error(status, message, type=type, code=code)
    return result


def wire_bytes(renderer: Renderer, items: Iterable[Wire]) -> bytes:
    """The bytes that send `items` in `renderer`'s wire kind.

    SSE frames become events and NDJSON lines get their line end (each line
    ended by the renderer's `newline`: LF, but CRLF for Gemini), AWS
    event-stream messages are framed with their checksums.
    """
    kind, newline = renderer.wire, renderer.newline
    if kind == "sse":
        text = "".join(
            event_text(item.data, event=item.event, id=item.id, retry=item.retry, newline=newline)
            for item in items
            if isinstance(item, SSEFrame)
        )
        return text.encode()
    if kind == "ndjson":
        return "".join(f"{item}{newline}" for item in items if isinstance(item, str)).encode()
    return b"".join(
        encode_message(item.headers, item.payload)
        for item in items
        if isinstance(item, EventStreamMessage)
    )


# --------------------------------------------------------------------------- detection

_ANTHROPIC = frozenset(
    {
        "message_start",
        "message_delta",
        "message_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "ping",
    }
)
_COHERE = frozenset(
    {
        "message-start",
        "message-end",
        "content-start",
        "content-delta",
        "content-end",
        "tool-plan-delta",
        "tool-call-start",
        "tool-call-delta",
        "tool-call-end",
        "citation-start",
        "citation-end",
        "debug",
    }
)
# The AI SDK's UI message stream chunk types (its `uiMessageChunkSchema`), and `data-*`.
_AI_SDK = frozenset(
    {
        "start",
        "start-step",
        "text-start",
        "text-delta",
        "text-end",
        "reasoning-start",
        "reasoning-delta",
        "reasoning-end",
        "tool-input-start",
        "tool-input-delta",
        "tool-input-available",
        "tool-input-error",
        "tool-approval-request",
        "tool-output-available",
        "tool-output-error",
        "tool-output-denied",
        "source-url",
        "source-document",
        "file",
        "finish-step",
        "finish",
        "abort",
        "message-metadata",
    }
)
_SSE_LINE = ("data:", "event:", "id:", "retry:", ":")
# rxstream's own events: named after their data's "type" (an item's codec type or "done").
_RXSTREAM = _CODEC_TYPES | {"done"}


def detect(item: object) -> str | None:
    """The dialect an item belongs to; None when it does not tell (a blank line, empty data).

    rxstream's own events (`"rxstream"`) tell by their name, which is their
    data's `"type"` (`event: text` with `{"type":"text",...}`; its error event
    holds the error's class name as a string, where Anthropic's holds an object).

    Raises:
        ProviderError: the item is an error payload (whatever the dialect).
        MalformedChunkError: the item belongs to no dialect rxstream knows.
        TypeError: the item is of no kind a dialect reads, with a hint at the
            operator that is probably missing.

    >>> detect(SSEFrame("{}", event="message_start")), detect(SSEFrame("[DONE]"))
    ('anthropic', 'openai-chat')
    """
    if isinstance(item, EventStreamMessage):
        return "bedrock"
    if isinstance(item, SSEFrame):
        return _detect_frame(item)
    if isinstance(item, str):
        text = item.strip()
        if not text:
            return None
        if text.startswith("{"):
            return "ollama"
        if text.startswith(_SSE_LINE):
            raise TypeError(
                "decode() got event-stream lines (str): add rs.sse_frames() before rs.decode() "
                f"(got {excerpt(item)!r})"
            )
        raise MalformedChunkError(
            "auto: a line that is neither NDJSON nor an event-stream field", item
        )
    if isinstance(item, bytes | bytearray):
        raise TypeError(
            "decode() got raw bytes: add rs.lines(), rs.sse_frames() (event streams), "
            "rs.lines() (NDJSON) or rs.eventstream_frames() (AWS Bedrock) before rs.decode()"
        )
    raise TypeError(
        f"decode() takes SSEFrame, str (NDJSON line) or EventStreamMessage items, "
        f"got {type(item).__name__}"
    )


def _detect_frame(frame: SSEFrame) -> str | None:
    event = frame.event
    if event in _ANTHROPIC:
        return "anthropic"
    if event.startswith("response."):
        return "openai-responses"
    if event in _COHERE:
        return "cohere"
    data = frame.data.strip()
    if not data:
        return None
    if data == "[DONE]":
        return "openai-chat"
    try:
        payload = load_json(data)
    except ValueError:
        payload = None
    if isinstance(payload, dict):
        kind = payload.get("type")
        if isinstance(kind, str):
            if kind == event and (
                kind in _RXSTREAM or (kind == "error" and isinstance(payload.get("error"), str))
            ):
                return RXSTREAM
            # "keepalive": OpenAI's undocumented keep-alive on long Responses streams.
            if kind.startswith("response.") or kind == "keepalive":
                return "openai-responses"
            if kind in _ANTHROPIC:
                return "anthropic"
            if kind in _COHERE:
                return "cohere"
            if (
                event == "message" and "choices" not in payload and "candidates" not in payload
            ) and (
                kind in _AI_SDK
                or kind.startswith("data-")
                or (kind == "error" and isinstance(payload.get("errorText"), str))
            ):
                return AI_SDK
        if "choices" in payload or str(payload.get("object", "")).startswith("chat.completion"):
            return "openai-chat"
        if "candidates" in payload or "usageMetadata" in payload or "promptFeedback" in payload:
            return "gemini"
        if "error" in payload or event == "error" or kind == "error":
            raise provider_error(payload, data=frame.data, event=event)
    elif (
        isinstance(payload, list)
        and payload
        and isinstance(payload[0], dict)
        and ("error" in payload[0])
    ):
        raise provider_error(payload, data=frame.data, event=event)
    if event == "error":
        raise provider_error(payload, data=frame.data, event=event)
    raise MalformedChunkError(
        "auto: the first event belongs to no known dialect "
        f"(event {event!r}); pass the dialect by name, one of {', '.join(DIALECTS)}",
        frame.data,
    )


class AutoDecoder:
    """A decoder that picks its dialect from the first item that tells (see `detect`).

    Items that tell nothing (blank lines, frames with empty data) before the
    first one that does are dropped; from then on every item goes to that
    dialect's decoder, including its end and its errors.

    >>> auto = AutoDecoder()
    >>> auto.feed(SSEFrame('{"type": "ping"}', event="ping")), auto.dialect
    ([], 'anthropic')
    """

    __slots__ = ("_inner", "_items", "_on_malformed", "_state", "_strings", "dialect")
    #: What it takes, fused (`Handoff`): a `"message"` frame's data as a bare `str`
    #: from an `SSEParser` in front (detection reads nothing else of one).
    takes = Handoff.STRINGS

    def __init__(self, *, on_malformed: OnMalformed = "raise") -> None:
        self._on_malformed: OnMalformed = on_malformed
        self._inner: Decoder | None = None
        self._state = "open"
        self._items = 0
        # Take a str as the data of a "message" frame (see _take): True
        # until the picked decoder is known, then whether it takes them too
        # (if not, each such str is made an SSEFrame again on its way there).
        self._strings: bool | None = None
        #: The dialect picked, once an item told it (None before).
        self.dialect: str | None = None

    @property
    def done(self) -> bool:
        """True once the picked dialect's end marker arrived."""
        return self._inner is not None and self._inner.done

    def _take(self, mode: Handoff) -> bool:
        """Fusion hook (`rxstream.core.pipeline`): also take a `"message"` frame's data as a `str`.

        For an `SSEParser` fused in front (`mode` is `STRINGS`), which then
        hands over the data of such frames without building an `SSEFrame` for
        each; the picked decoder gets them the same way when it takes them
        (`"openai-chat"`, `"gemini"`), as frames otherwise. Only while nothing
        was fed; returns whether the decoder takes them from now on.
        """
        if mode is not Handoff.STRINGS or self._items or self._state != "open":
            return False
        self._strings = True
        return True

    def feed(self, item: object) -> list[Delta]:
        """Take one item; pick the dialect if it tells, and decode it."""
        inner = self._inner
        if inner is None:
            return self._first(item)
        if self._strings is False and type(item) is str:
            item = SSEFrame(item)
        return inner.feed(item)

    def feed_all(self, items: Iterable[object], out: list[Delta]) -> None:
        """`out += feed(item)` for each item, stopping once done."""
        rest: Iterable[object] = iter(items)
        if self._inner is None:
            for item in rest:
                out += self._first(item)
                if self._inner is not None:
                    break
        inner = self._inner
        if inner is not None and not inner.done:
            if self._strings is False:
                # Taken from the parser for a decoder that wants frames.
                rest = [SSEFrame(item) if type(item) is str else item for item in rest]
            inner.feed_all(rest, out)

    def _first(self, item: object) -> list[Delta]:
        """Take an item before the dialect is known: pick it if the item tells, and decode it."""
        if self._state != "open":
            raise RuntimeError(f"this AutoDecoder is {self._state}; it takes no more input")
        self._items += 1
        if self._strings and type(item) is str:
            item = SSEFrame(item)  # the data of a "message" frame, from the fused parser
        try:
            name = detect(item)
        except MalformedChunkError as exc:
            self._state = "failed"
            # The first event, cut short by the end of input, tells no dialect:
            # the stream was cut, not malformed.
            cut = truncation(item, None)
            if cut is None:
                raise
            raise cut from exc
        except Exception:
            self._state = "failed"
            raise
        if name is None:
            return []
        self.dialect = name
        inner = self._inner = decoder(name, on_malformed=self._on_malformed)
        if self._strings:
            self._strings = takes(inner, Handoff.STRINGS)
        return inner.feed(item)

    def close(self) -> list[Delta]:
        """End the input: the picked decoder's `close()`.

        Raises:
            EmptyStreamError: no item told the dialect (nothing arrived).
        """
        if self._inner is not None:
            return self._inner.close()
        if self._state != "open":
            raise RuntimeError(f"this AutoDecoder is {self._state}; it cannot be closed again")
        self._state = "closed"
        raise EmptyStreamError(
            f"no event arrived that tells the dialect ({self._items} empty item(s))"
        )

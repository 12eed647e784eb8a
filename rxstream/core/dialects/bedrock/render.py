"""The `"bedrock"` dialect: the renderer (deltas -> wire events).

See the package docstring for the wire format and the rules.
"""

from __future__ import annotations

import json
from json.encoder import encode_basestring
from typing import ClassVar

from ...._fast import enabled
from ....errors import ProviderError
from ....models import (
    Citation,
    Delta,
    EventStreamMessage,
    Finish,
    JSONObject,
    Metadata,
    ReasoningDelta,
    ReasoningState,
    RefusalDelta,
    ServerToolCall,
    ServerToolResult,
    TextBlockStart,
    TextDelta,
    ToolCallDelta,
    Usage,
)
from .._base import (
    CONTENT_FILTER,
    LENGTH,
    STOP,
    TOOL_CALLS,
    ResetRule,
    Wire,
    WireKind,
)
from .._shared import TEXT_MARK, dumps, text_halves
from .decode import _LOCATIONS, FINISH_REASONS
from .errors import stream_exception

__all__ = ["BedrockRenderer", "event_message"]

# --------------------------------------------------------------------------- rendering

# The normalised reasons back into stopReason words (any other word goes as it is).
_REASONS_BACK = {
    STOP: "end_turn",
    LENGTH: "max_tokens",
    TOOL_CALLS: "tool_use",
    CONTENT_FILTER: "content_filtered",
}


def event_message(name: str, data: str) -> EventStreamMessage:
    """The event-stream message of the ConverseStream event `name` whose JSON payload is `data`.

    What `BedrockRenderer.feed` gives for each event, and what a writer makes of
    the `(name, data)` of `BedrockRenderer.text_event`.

    >>> event_message("messageStop", '{"stopReason":"end_turn"}').headers[":event-type"]
    'messageStop'
    """
    headers: dict[str, str | bytes | int | bool] = {
        ":event-type": name,
        ":content-type": "application/json",
        ":message-type": "event",
    }
    return EventStreamMessage(headers, data.encode())


def _event(name: str, payload: JSONObject) -> EventStreamMessage:
    return event_message(name, dumps(payload))


class BedrockRenderer:
    """Render deltas as a Bedrock ConverseStream: `EventStreamMessage`s (`encode_message`
    makes the bytes).

    `messageStart` comes before the first event; text and reasoning open a
    block of their own (text without `contentBlockStart`, as Bedrock sends
    it); a whole-block `Citation` (`Citation.whole_block`) goes in the open
    text block and closes it to more text, so it decodes with that block's
    span, and any other citation in a block of its own without text (text
    before the span in the same open block goes with it, unless a
    `TextBlockStart` marked where the cited block began: this format
    separates blocks only by their index); a `TextBlockStart` closes the
    open text block, so the text after it has an index of its own; each client tool call is a
    `toolUse` block, kept open until the finish so fragments of several
    calls may interleave; `Finish` is
    `messageStop`; the `Usage` (and `Metadata` such as `metrics`) goes into
    the `metadata` event at `close()`.

    The usage is sent with `inputTokens` = `prompt_tokens - cached_tokens -
    cache_write_tokens`, `cacheReadInputTokens` = `cached_tokens` and
    `cacheWriteInputTokens` = `cache_write_tokens`, so it decodes to the same
    `Usage`. What ConverseStream cannot express is left out: refusals,
    choices other than 0, `reasoning_tokens`, reasoning state of other
    dialects (thought signatures, reasoning items), `Metadata` other than
    `metrics`, `trace`, `performanceConfig`, `serviceTier` and
    `additionalModelResponseFields`. A client tool call without arguments
    comes back as `"{}"`, one without an id with `""`; a `thinking` state
    that does not follow reasoning text comes back with its signature only.
    Bedrock's stream names neither the model nor a response id, so `model`
    and `id` are accepted and unused.

    A `Reset` (a new answer replaces the one so far), which this format
    cannot carry, follows `ResetRule`: the new answer goes on in the same
    stream, its tool calls numbered after the dropped answer's.

    Args:
        model: the model name (unused: the stream does not carry it).
        id: the response id (unused likewise).

    >>> renderer = BedrockRenderer()
    >>> [m.headers[":event-type"] for m in renderer.feed(TextDelta("Hi"))]
    ['messageStart', 'contentBlockDelta']
    >>> [m.headers[":event-type"] for m in renderer.feed(Finish("stop")) + renderer.close()]
    ['contentBlockStop', 'messageStop']
    """

    wire: ClassVar[WireKind] = "eventstream"
    #: Unused: event-stream messages are length-prefixed binary frames.
    newline: ClassVar[str] = "\n"

    def __init__(self, *, model: str = "rxstream-fake", id: str = "bedrock-fake") -> None:
        self._resets = ResetRule()  # what a Reset does here (ResetRule)
        self.model = model
        self.id = id
        self._started = False
        self._open: tuple[str, int] | None = None  # the text or reasoning block open
        self._calls: dict[int, int] = {}  # client tool call index -> its open block
        self._last_call: int | None = None
        self._any_call = False
        self._next = 0  # the next contentBlockIndex
        self._finished = False
        self._closed = False
        self._usage: Usage | None = None
        self._extra: JSONObject = {}
        # The open text block's `contentBlockDelta` as a template (a fast path,
        # `text_event`): its block index, and the JSON before and after the text.
        self._templates = enabled()
        self._text_template: tuple[int, str, str] | None = None

    def feed(self, delta: Delta) -> list[Wire]:
        """Take one delta; return the event-stream messages it becomes.

        Raises:
            ValueError: content after the `Finish` (ConverseStream ends its
                content at `messageStop`).
            RuntimeError: after `close()` or `error()`.
        """
        if self._closed:
            raise RuntimeError("this BedrockRenderer is closed; it takes no more deltas")
        if type(delta) is not TextDelta or self._resets.ended:
            seen = self._resets.see(delta)
            if seen is None:
                return []
            delta = seen
        if delta.choice != 0:
            return []
        if isinstance(delta, Usage):
            self._usage = delta
            return []
        if isinstance(delta, Metadata):
            self._extra.update(delta.data)
            return []
        if isinstance(delta, RefusalDelta):
            return []
        if self._finished:
            raise ValueError(
                f"a {type(delta).__name__} after the Finish: ConverseStream ends the content "
                "at messageStop"
            )
        out = self._begin()
        if isinstance(delta, TextDelta):
            index = self._block(out, "text")
            out.append(_event(_BLOCK_DELTA, _at(index, {"text": delta.text})))
        elif isinstance(delta, ReasoningDelta):
            index = self._block(out, "reasoning")
            out.append(
                _event("contentBlockDelta", _at(index, {"reasoningContent": {"text": delta.text}}))
            )
        elif isinstance(delta, ReasoningState):
            self._state(out, delta)
        elif isinstance(delta, ToolCallDelta):
            self._tool_call(out, delta)
        elif isinstance(delta, Citation):
            self._citation(out, delta)
        elif isinstance(delta, TextBlockStart):
            if self._open is not None and self._open[0] in ("text", "cited"):
                self._close_open(out)  # the text after it goes in a block of its own
        elif isinstance(delta, ServerToolCall):
            self._whole_block(
                out,
                {
                    "toolUse": {
                        "toolUseId": delta.id or "",
                        "name": delta.name,
                        "type": "server_tool_use",
                    }
                },
                [] if delta.input is None else [{"toolUse": {"input": json.dumps(delta.input)}}],
            )
        elif isinstance(delta, ServerToolResult):
            start: JSONObject = {"toolUseId": delta.call_id or ""}
            if delta.name and delta.name != "toolResult":
                start["type"] = delta.name
            self._whole_block(
                out, {"toolResult": start}, [{"toolResult": _result_back(delta.content)}]
            )
        elif isinstance(delta, Finish):
            self._end_blocks(out)
            raw = delta.raw if FINISH_REASONS.get(delta.raw or "") == delta.reason else None
            stop: JSONObject = {"stopReason": raw or _REASONS_BACK.get(delta.reason, delta.reason)}
            self._stop_extras(stop)
            out.append(_event("messageStop", stop))
            self._finished = True
        return out

    def text_event(self, delta: TextDelta) -> tuple[str, str] | None:
        """The one event `feed(delta)` gives for a text delta, as (name, data), when it
        changes nothing else (the open text block's `contentBlockDelta`); else None:
        `feed` it. The name is the `:event-type`, the data the JSON payload
        (`event_message` makes the message).

        What `feed` writes, without its layers (a server writes one per token).
        Only where `feed` would only give that event: the renderer open, the
        first choice's text, a text block open, no finish yet, no reset ending
        the choice, the fast paths on.
        """
        opened = self._open
        if (
            opened is None
            or opened[0] != "text"
            or delta.choice != 0
            or self._finished
            or self._closed
            or self._resets.ended
            or not self._templates
        ):
            return None
        index = opened[1]
        template = self._text_template
        if template is None or template[0] != index:
            written = dumps(_at(index, {"text": TEXT_MARK}))
            template = self._text_template = (index, *text_halves(written))
        return _BLOCK_DELTA, f"{template[1]}{encode_basestring(delta.text)}{template[2]}"

    def close(self) -> list[Wire]:
        """End the stream: `messageStop` if no `Finish` came, then `metadata` with the usage.

        Raises:
            RuntimeError: already closed.
        """
        if self._closed:
            raise RuntimeError("this BedrockRenderer is closed already")
        out = self._begin()
        if not self._finished:
            self._end_blocks(out)
            stop: JSONObject = {"stopReason": "tool_use" if self._any_call else "end_turn"}
            self._stop_extras(stop)
            out.append(_event("messageStop", stop))
        self._closed = True
        metadata: JSONObject = {}
        if self._usage is not None:
            metadata["usage"] = _usage_back(self._usage)
        for key in ("metrics", "trace", "performanceConfig", "serviceTier"):
            if key in self._extra:
                metadata[key] = self._extra[key]
        if metadata:
            # The service model requires `metrics.latencyMs` in every metadata event.
            metrics = metadata.get("metrics")
            if not isinstance(metrics, dict) or "latencyMs" not in metrics:
                extra = metrics if isinstance(metrics, dict) else {}
                metadata["metrics"] = {**extra, "latencyMs": 0}
            out.append(_event("metadata", metadata))
        return out

    def error(self, error: ProviderError) -> list[Wire]:
        """End the stream with an exception message (`:message-type: exception`).

        The `:exception-type` is one of the exception events ConverseStream's
        service model names (`bedrock.errors.stream_exception`: the error's
        `type` when it is one, another dialect's type mapped by its meaning,
        else `internalServerException`), since botocore reports any other
        with an empty code and message. The payload is `{"message": ...}`.
        """
        if self._closed:
            raise RuntimeError("this BedrockRenderer is closed already")
        self._closed = True
        out = self._begin()
        payload: JSONObject = {"message": error.message}
        if isinstance(error.code, int):
            payload["originalStatusCode"] = error.code
        headers: dict[str, str | bytes | int | bool] = {
            ":exception-type": stream_exception(error.type, error.code),
            ":content-type": "application/json",
            ":message-type": "exception",
        }
        out.append(EventStreamMessage(headers, dumps(payload).encode()))
        return out

    # -- blocks ------------------------------------------------------------------

    def _begin(self) -> list[Wire]:
        if self._started:
            return []
        self._started = True
        return [_event("messageStart", {"role": "assistant"})]

    def _block(self, out: list[Wire], kind: str) -> int:
        """The index of the open block of `kind`, opening one (and closing another) if needed."""
        if self._open is not None:
            if self._open[0] == kind:
                return self._open[1]
            out.append(_event("contentBlockStop", {"contentBlockIndex": self._open[1]}))
        index = self._next
        self._next += 1
        self._open = (kind, index)
        return index

    def _close_open(self, out: list[Wire]) -> None:
        if self._open is not None:
            out.append(_event("contentBlockStop", {"contentBlockIndex": self._open[1]}))
            self._open = None

    def _end_blocks(self, out: list[Wire]) -> None:
        self._close_open(out)
        for index in sorted(self._calls.values()):
            out.append(_event("contentBlockStop", {"contentBlockIndex": index}))
        self._calls.clear()

    def _whole_block(self, out: list[Wire], start: JSONObject, deltas: list[JSONObject]) -> None:
        self._close_open(out)
        index = self._next
        self._next += 1
        out.append(_event("contentBlockStart", {"contentBlockIndex": index, "start": start}))
        out.extend(_event("contentBlockDelta", _at(index, delta)) for delta in deltas)
        out.append(_event("contentBlockStop", {"contentBlockIndex": index}))

    def _citation(self, out: list[Wire], citation: Citation) -> None:
        """A whole-block citation cites the open text block (and closes it to more text);
        another goes in a block of its own, without text, so it reads back without a span."""
        if citation.whole_block and self._open is not None and self._open[0] in ("text", "cited"):
            index = self._open[1]
        else:
            self._close_open(out)
            index = self._next
            self._next += 1
        self._open = ("cited", index)  # the next text opens a block of its own
        out.append(_event("contentBlockDelta", _at(index, {"citation": _citation_back(citation)})))

    def _state(self, out: list[Wire], state: ReasoningState) -> None:
        if state.kind == "thinking":
            index = self._block(out, "reasoning")
            signature = {"reasoningContent": {"signature": state.data}}
            out.append(_event("contentBlockDelta", _at(index, signature)))
            self._close_open(out)
        elif state.kind == "redacted_thinking":
            self._close_open(out)
            index = self._block(out, "reasoning")
            redacted = {"reasoningContent": {"redactedContent": state.data}}
            out.append(_event("contentBlockDelta", _at(index, redacted)))
            self._close_open(out)

    def _tool_call(self, out: list[Wire], delta: ToolCallDelta) -> None:
        key = delta.index
        if key is None:
            # No index (Mistral sends whole calls): a fragment with an id or a
            # name begins a call, any other goes on with the last one.
            begins = delta.id is not None or delta.name is not None
            index = None if begins else self._last_call
        else:
            index = self._calls.get(key)
        if index is None:
            self._close_open(out)
            index = self._next
            self._next += 1
            self._calls[-index - 1 if key is None else key] = index
            start = {"toolUse": {"toolUseId": delta.id or "", "name": delta.name or ""}}
            out.append(_event("contentBlockStart", {"contentBlockIndex": index, "start": start}))
            self._any_call = True
        self._last_call = index
        if delta.arguments:
            fragment = {"toolUse": {"input": delta.arguments}}
            out.append(_event("contentBlockDelta", _at(index, fragment)))

    def _stop_extras(self, stop: JSONObject) -> None:
        extra = self._extra.get("additionalModelResponseFields")
        if extra is not None:
            stop["additionalModelResponseFields"] = extra


_BLOCK_DELTA = "contentBlockDelta"


def _at(index: int, delta: JSONObject) -> JSONObject:
    return {"contentBlockIndex": index, "delta": delta}


def _citation_back(citation: Citation) -> JSONObject:
    if citation.raw is not None and citation.kind in (*_LOCATIONS, "citation"):
        return citation.raw  # a Bedrock citation: sent back as it came
    out: JSONObject = {}
    if citation.title is not None:
        out["title"] = citation.title
    if citation.text is not None:
        out["sourceContent"] = [{"text": citation.text}]
    if citation.url is not None:
        out["location"] = {"web": {"url": citation.url}}
    return out


def _result_back(content: object) -> list[JSONObject]:
    """A server tool's result as `ToolResultBlockDelta`s (each `{"text": str}` or `{"json": doc}`).

    A Bedrock result comes back as it came; any other content (another
    dialect's list of result blocks, an object, a string) is one `json`
    document, which botocore takes and which decodes back to that content.
    """
    if isinstance(content, list) and all(_result_item(item) for item in content):
        return content
    return [{"json": content}]


def _result_item(item: object) -> bool:
    if not isinstance(item, dict) or len(item) != 1:
        return False
    if "text" in item:
        return isinstance(item["text"], str)
    return "json" in item


def _usage_back(counts: Usage) -> JSONObject:
    cached, written = counts.cached_tokens, counts.cache_write_tokens
    out: JSONObject = {
        "inputTokens": counts.prompt_tokens - (cached or 0) - (written or 0),
        "outputTokens": counts.completion_tokens,
        "totalTokens": counts.total_tokens,
    }
    if cached is not None:
        out["cacheReadInputTokens"] = cached
    if written is not None:
        out["cacheWriteInputTokens"] = written
    return out

"""The `"cohere"` dialect: the renderer (deltas -> wire events).

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
    Finish,
    JSONObject,
    ReasoningDelta,
    SSEFrame,
    TextDelta,
    ToolCallDelta,
    Usage,
)
from ...tools import ToolCallMatcher
from .._base import (
    LENGTH,
    STOP,
    TOOL_CALLS,
    ResetRule,
    Wire,
    WireKind,
)
from .._shared import TEXT_MARK, text_halves
from .decode import _FINISH, _WORD

__all__ = ["CohereRenderer"]

# --------------------------------------------------------------------------- renderer

_WORDS = {STOP: "COMPLETE", LENGTH: "MAX_TOKENS", TOOL_CALLS: "TOOL_CALL"}

#: The most argument text held for calls streamed side by side, by default: 16 Mi characters.
DEFAULT_HELD_LIMIT = 16_777_216


def _frame(kind: str, body: JSONObject) -> SSEFrame:
    data = {"type": kind, **body}
    return SSEFrame(json.dumps(data, separators=(",", ":"), ensure_ascii=False), kind)


_CONTENT_DELTA = "content-delta"


def _text_delta(index: int, text: str) -> SSEFrame:
    """Text block `index`'s `content-delta` (what `text_event` writes through a template)."""
    return _frame(
        _CONTENT_DELTA, {"index": index, "delta": {"message": {"content": {"text": text}}}}
    )


class CohereRenderer:
    """Deltas back into a Cohere v2 chat stream (`SSEFrame`s with `event:` names).

    `message-start` opens the stream; text and reasoning go in `text` and
    `thinking` content blocks (`content-start` / `-delta` / `-end`, a new
    block each time the kind changes); a tool call is `tool-call-start` (id,
    name, first fragment) then a `tool-call-delta` per fragment and
    `tool-call-end` when the next block begins; a citation is
    `citation-start` + `citation-end` with one source (a call without an id
    gets `call_<n>`, n its order among the calls: the Cohere SDK drops a call
    without one); `close()` sends
    `message-end` with the finish reason and usage, `error()` a
    `message-end` with `finish_reason: "ERROR"`, the message and usage.

    Each call's events are contiguous, as Cohere sends them (readers such as
    the AI SDK's cohere provider keep one pending call and give a
    `tool-call-delta` to the latest `tool-call-start`): the first call of a
    run streams as it comes; a call that starts while it is open (calls
    streamed side by side) is held, with its fragments, and written whole
    after the open call's `tool-call-end`, when the run of calls ends. A
    fragment of a call whose events were already written (text came
    between) is a `ValueError`: Cohere has no way to go back to a call.

    `message-end` always carries `usage`, as Cohere sends it (the AI SDK's
    cohere provider refuses one without): zeros when no `Usage` came, and
    those zeros are what the decoder reads back.

    Not expressible, so left out: choices other than 0 (Cohere has one),
    refusals, reasoning state, server-side tools, `Metadata`, reasoning
    tokens, a total other than prompt + completion. Billed units are
    written equal to the token counts (rxstream does not know the billed
    split). Reasoning comes back as reasoning, but as thinking rather than a
    tool plan; citation kinds other than `"document"`/`"tool"` come back as
    `"document"`; a finish of `"content_filter"` (Cohere has no such reason)
    comes back as the same word; a stream that never finished ends with
    `COMPLETE` (`TOOL_CALL` if it asked for tool calls).

    A `Reset` (a new answer replaces the one so far), which this format
    cannot carry, follows `ResetRule`: the new answer goes on in the same
    stream, its tool calls numbered after the dropped answer's.

    Args:
        model: accepted for the common renderer options (Cohere's stream
            does not name the model).
        id: the message id in `message-start`.
        held_limit: the most argument text (characters) held for calls that
            stream side by side before they can be written.

    Raises:
        ValueError: from `feed`, a fragment of a call whose events were written,
            or held calls whose arguments outgrow `held_limit`; from the
            constructor, a `held_limit` that is not positive.
        RuntimeError: `feed`, `close` or `error` after `close()` or `error()`.

    >>> r = CohereRenderer()
    >>> [f.event for f in r.feed(TextDelta("Hi")) + r.close()]
    ['message-start', 'content-start', 'content-delta', 'content-end', 'message-end']
    """

    wire: ClassVar[WireKind] = "sse"
    newline: ClassVar[str] = "\n"

    def __init__(
        self,
        *,
        model: str = "command-a-03-2025",
        id: str = "rxstream-cohere-0001",
        held_limit: int = DEFAULT_HELD_LIMIT,
    ) -> None:
        self._resets = ResetRule()  # what a Reset does here (ResetRule)
        if type(held_limit) is not int or held_limit <= 0:
            raise ValueError(f"held_limit must be a positive int, got {held_limit!r}")
        self._model = model
        self._id = id
        self._started = False
        self._closed = False
        self._block: str | None = None  # "text", "thinking" or "tool" while one is open
        self._content_index = -1
        self._matcher = ToolCallMatcher()  # which call a fragment belongs to
        self._calls: dict[int, int] = {}  # the call's index -> Cohere's index
        self._call = -1  # the open call's Cohere index
        # Calls that started while another was open: Cohere's index -> their events so
        # far, written after the open call ends (each call's events stay together).
        self._held: dict[int, list[Wire]] = {}
        self._held_size = 0  # the argument text held, against `held_limit`
        self._held_limit = held_limit
        self._citations = 0
        self._finish: Finish | None = None
        self._usage: Usage | None = None
        # The open text block's `content-delta` as a template (a fast path, `text_event`):
        # its content index, and the JSON before and after the text.
        self._templates = enabled()
        self._text_template: tuple[int, str, str] | None = None

    def feed(self, delta: Delta) -> list[Wire]:
        """The events `delta` becomes."""
        if self._closed:
            raise RuntimeError("this CohereRenderer is closed; it renders no more")
        if type(delta) is not TextDelta or self._resets.ended:
            seen = self._resets.see(delta)
            if seen is None:
                return []
            delta = seen
        if delta.choice != 0:
            return []
        match delta:
            case TextDelta(text=text) if text:
                return self._content("text", text)
            case ReasoningDelta(text=text) if text:
                return self._content("thinking", text)
            case ToolCallDelta():
                return self._tool(delta)
            case Citation():
                return self._citation(delta)
            case Finish():
                self._finish = delta
            case Usage():
                self._usage = delta
        return []

    def text_event(self, delta: TextDelta) -> tuple[str, str] | None:
        """The one event `feed(delta)` gives for a text delta, as (name, data), when it
        changes nothing else (the open text block's `content-delta`); else None: `feed` it.

        What `feed` writes, without its layers: an encoder asks this first (a
        server writes one per token). Only where `feed` would only append that
        event: the renderer open, the first choice's text, not empty, a text
        block open, no reset ending the choice, the fast paths on.
        """
        if (
            self._block != "text"
            or not delta.text
            or delta.choice != 0
            or self._closed
            or self._resets.ended
            or not self._templates
        ):
            return None
        index = self._content_index
        template = self._text_template
        if template is None or template[0] != index:
            template = self._text_template = (
                index,
                *text_halves(_text_delta(index, TEXT_MARK).data),
            )
        return _CONTENT_DELTA, f"{template[1]}{encode_basestring(delta.text)}{template[2]}"

    def close(self) -> list[Wire]:
        """The events that end the stream: the open block's end and `message-end`."""
        if self._closed:
            raise RuntimeError("this CohereRenderer is closed; it renders no more")
        self._closed = True
        out = self._start() + self._end_block()
        finish = self._finish
        if finish is None:
            word = "TOOL_CALL" if self._calls else "COMPLETE"
        elif (
            finish.raw is not None
            and _WORD.fullmatch(finish.raw)
            and _FINISH.get(finish.raw, finish.raw) == finish.reason
        ):
            word = finish.raw  # Cohere's own word, or one that reads the same
        else:
            word = _WORDS.get(finish.reason, finish.reason)
        body: JSONObject = {"finish_reason": word, "usage": self._usage_out()}
        out.append(_frame("message-end", {"delta": body}))
        return out

    def error(self, error: ProviderError) -> list[Wire]:
        """`message-end` with `finish_reason: "ERROR"`, the error's message and the usage."""
        if self._closed:
            raise RuntimeError("this CohereRenderer is closed; it renders no more")
        self._closed = True
        out = self._start() + self._end_block()
        body = {"finish_reason": "ERROR", "error": error.message, "usage": self._usage_out()}
        out.append(_frame("message-end", {"delta": body}))
        return out

    def _usage_out(self) -> JSONObject:
        """`message-end`'s usage: the `Usage` given, or zeros (Cohere always sends one)."""
        u = self._usage
        prompt, completion = (0, 0) if u is None else (u.prompt_tokens, u.completion_tokens)
        tokens = {"input_tokens": prompt, "output_tokens": completion}
        counts: JSONObject = {"billed_units": dict(tokens), "tokens": tokens}
        if u is not None and u.cached_tokens is not None:
            counts["cached_tokens"] = u.cached_tokens
        return counts

    def _start(self) -> list[Wire]:
        if self._started:
            return []
        self._started = True
        message = {
            "role": "assistant",
            "content": [],
            "tool_plan": "",
            "tool_calls": [],
            "citations": [],
        }
        return [_frame("message-start", {"id": self._id, "delta": {"message": message}})]

    def _end_block(self) -> list[Wire]:
        block, self._block = self._block, None
        if block is None:
            return []
        if block == "tool":
            out: list[Wire] = [_frame("tool-call-end", {"index": self._call})]
            for wire, held in self._held.items():
                out += held
                out.append(_frame("tool-call-end", {"index": wire}))
            self._held.clear()
            self._held_size = 0
            return out
        return [_frame("content-end", {"index": self._content_index})]

    def _content(self, kind: str, text: str) -> list[Wire]:
        out = self._start()
        if self._block != kind:
            out += self._end_block()
            self._content_index += 1
            self._block = kind
            start = {"type": kind, kind: ""}
            out.append(
                _frame(
                    "content-start",
                    {"index": self._content_index, "delta": {"message": {"content": start}}},
                )
            )
        if kind == "text":
            out.append(_text_delta(self._content_index, text))
        else:
            piece = {"message": {"content": {kind: text}}}
            out.append(_frame(_CONTENT_DELTA, {"index": self._content_index, "delta": piece}))
        return out

    def _tool(self, delta: ToolCallDelta) -> list[Wire]:
        out = self._start()
        key = self._matcher.match(delta)[0].index
        wire = self._calls.get(key)
        if wire is None:
            wire = self._calls[key] = len(self._calls)
            # The Cohere SDK drops a call without an id: invent a stable one,
            # as the Anthropic and Responses renderers do.
            call: JSONObject = {"id": delta.id or f"call_{wire}"}
            call["type"] = "function"
            call["function"] = {"name": delta.name or "", "arguments": delta.arguments}
            body = {"index": wire, "delta": {"message": {"tool_calls": call}}}
            start = _frame("tool-call-start", body)
            if self._block == "tool":  # another call is open: hold this one (see the class)
                self._hold(len(delta.arguments))
                self._held[wire] = [start]
                return out
            out += self._end_block()
            self._call = wire
            self._block = "tool"
            out.append(start)
            return out
        if not delta.arguments:
            return out
        piece = {"message": {"tool_calls": {"function": {"arguments": delta.arguments}}}}
        fragment = _frame("tool-call-delta", {"index": wire, "delta": piece})
        if self._block == "tool" and wire == self._call:
            out.append(fragment)
        elif wire in self._held:
            self._hold(len(delta.arguments))
            self._held[wire].append(fragment)
        else:
            raise ValueError(
                f"a fragment of tool call {key} after its tool-call-end (text or a citation "
                "came between): Cohere has no way to go back to a call"
            )
        return out

    def _hold(self, size: int) -> None:
        self._held_size += size
        if self._held_size > self._held_limit:
            raise ValueError(
                f"tool calls streamed side by side hold {self._held_size} characters of "
                f"arguments, over held_limit={self._held_limit}: Cohere writes each call "
                "whole, so they wait for the open call to end"
            )

    def _citation(self, citation: Citation) -> list[Wire]:
        out = self._start()
        cited: JSONObject = {}
        for key, value in (
            ("start", citation.start),
            ("end", citation.end),
            ("text", citation.text),
        ):
            if value is not None:
                cited[key] = value
        if citation.kind != "citation" or citation.url is not None or citation.title is not None:
            kind = citation.kind if citation.kind in ("document", "tool") else "document"
            pairs = (("url", citation.url), ("title", citation.title))
            inner = {k: v for k, v in pairs if v is not None}
            field = "tool_output" if kind == "tool" else "document"
            cited["sources"] = [{"type": kind, field: inner}]
        index = self._citations
        self._citations += 1
        out.append(
            _frame("citation-start", {"index": index, "delta": {"message": {"citations": cited}}})
        )
        out.append(_frame("citation-end", {"index": index}))
        return out

"""The `"bedrock"` dialect: the decoder (wire events -> deltas).

See the package docstring for the wire format and the rules.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ...._fast import constructor, enabled
from ...._typed import typed
from ....errors import ProviderError, excerpt
from ....models import (
    JSON,
    Citation,
    Delta,
    EventStreamMessage,
    Finish,
    JSONObject,
    Metadata,
    ReasoningDelta,
    ReasoningState,
    ServerToolCall,
    ServerToolResult,
    TextBlockStart,
    TextDelta,
    ToolCallDelta,
)
from ...pipeline import Handoff
from .._base import (
    CONTENT_FILTER,
    LENGTH,
    STOP,
    TOOL_CALLS,
    DialectDecoder,
    OnMalformed,
    Reader,
    ShapeError,
    load_json,
    opt_int,
    opt_list,
    opt_object,
    opt_str,
    pair_type,
    usage,
)
from .._shared import Budget, Template

__all__ = ["FINISH_REASONS", "BedrockDecoder"]

#: `stopReason` -> the normalised finish reason (any other word is kept as it is).
FINISH_REASONS = {
    "end_turn": STOP,
    "stop_sequence": STOP,
    "max_tokens": LENGTH,
    "model_context_window_exceeded": LENGTH,
    "tool_use": TOOL_CALLS,
    "guardrail_intervened": CONTENT_FILTER,
    "content_filtered": CONTENT_FILTER,
}

# The members of a reasoningContent delta this module reads.
_REASONING_KNOWN = frozenset({"text", "signature", "redactedContent"})

# The kinds of location a Bedrock citation may have.
_LOCATIONS = ("web", "documentChar", "documentPage", "documentChunk", "searchResultLocation")

_text: Callable[[str, int], TextDelta] = constructor(TextDelta)

#: No text (a delta of another kind), where the typed decoding is not there to say so.
_UNSET = object()
_reasoning: Callable[[str, int], ReasoningDelta] = constructor(ReasoningDelta)

#: The field of an event that changes on every event without the decoder
#: reading it (a padding of random length), and its kind: the hole of a learnt
#: delta's `Template`, beside its text.
_FREE: dict[str, type] = {"p": str}

# What a learnt delta stood for: a text, a reasoning text or a tool call's input fragment.
_TEXT, _REASONING, _INPUT = 0, 1, 2


@dataclass(slots=True)
class _Block:
    """A content block that needs state until its `contentBlockStop`."""

    kind: str  # "tool", "server_tool", "tool_result", "reasoning" or "text" (one cited)
    index: int = 0  # the client tool call's index
    id: str | None = None
    name: str | None = None
    start: JSONObject = field(default_factory=dict)
    parts: list[str] = field(default_factory=list)  # input fragments, or thinking text
    signature: list[str] = field(default_factory=list)
    redacted: list[str] = field(default_factory=list)
    content: list[JSON] = field(default_factory=list)
    # A cited text block's offset in the answer's text, and its citations as they came.
    offset: int = 0
    citations: list[JSONObject] = field(default_factory=list)


class BedrockDecoder(DialectDecoder):
    """Decode a Bedrock ConverseStream's event-stream messages into deltas (see the module).

    Args:
        on_malformed: `"raise"` (the default) or `"skip"` messages that are
            not valid ConverseStream events.

    >>> def event(name, payload):
    ...     headers = {":event-type": name, ":message-type": "event"}
    ...     return EventStreamMessage(headers, payload.encode())
    >>> decoder = BedrockDecoder()
    >>> decoder.feed(event("contentBlockDelta", '{"contentBlockIndex":0,"delta":{"text":"Hi"}}'))
    [TextDelta(text='Hi', choice=0)]
    >>> decoder.feed(event("messageStop", '{"stopReason":"end_turn"}')), decoder.done
    ([Finish(reason='stop', choice=0, raw='end_turn')], False)
    >>> decoder.feed(event("metadata", '{"usage":{"inputTokens":3,"outputTokens":1}}'))[0]
    Usage(prompt_tokens=3, completion_tokens=1, total_tokens=4, reasoning_tokens=None, \
cached_tokens=None, choice=0, raw={'inputTokens': 3, 'outputTokens': 1}, \
cache_write_tokens=None, estimated=False)
    >>> decoder.done
    True
    """

    dialect: ClassVar[str] = "bedrock"
    end_marker: ClassVar[str] = "messageStop"

    def __init__(self, *, on_malformed: OnMalformed = "raise") -> None:
        super().__init__(on_malformed=on_malformed)
        self._blocks: dict[int, _Block] = {}
        self._calls = 0  # client tool calls begun
        self._stopped = False  # messageStop arrived
        # Characters of answer text so far, and where the block after the last
        # block boundary began: the span of a cited text block (blocks come one
        # after another).
        self._chars = 0
        self._mark = 0
        # A text block with text and no citations ended and no other block began since:
        # the next text starts a block of its own (`TextBlockStart` before it). Text
        # blocks have no contentBlockStart, so the mark waits for the first text delta.
        self._after_text = False
        self._events: dict[str, Callable[[JSONObject, EventStreamMessage], list[Delta]]] = {
            "contentBlockDelta": self._block_delta,
            "contentBlockStart": self._block_start,
            "contentBlockStop": self._block_stop,
            "messageStart": self._message_start,
            "messageStop": self._message_stop,
            "metadata": self._metadata,
        }
        # The typed decoding of the `fast` extra (rxstream._typed.bedrock), or None.
        module = typed("bedrock")
        self._read: Callable[[bytes], Any] | None = None
        self._unset: object = _UNSET
        if module is not None:
            self._read, self._unset = module.block_delta, module.UNSET
        # The last contentBlockDelta that gave one delta (a text, a reasoning text or
        # a tool call's input), as a `Template`, with what it stood for (`_TEXT`, ...)
        # and its content block: a later payload made of the same JSON but for that
        # text (and the padding `p`) stands for the same with its text. The standard
        # library's shortcut only (msgspec reads a whole payload faster).
        self._around: tuple[Template, int, int] | None = None
        # How often templates are learnt; None: never (typed decoding, or the fast paths off).
        self._budget = Budget() if enabled() and module is None else None
        # The headers of the content deltas from the parser fused in front (`_reader`).
        self._delta_headers: object = None

    #: What it takes, fused (`Handoff`): with an `EventStreamParser` fused in
    #: front (`_take`), `feed_all` takes a `(headers, payload)` tuple as the
    #: message it stands for.
    takes = Handoff.MESSAGE_PAIRS
    gives_deltas_only = True

    @staticmethod
    def _unpair(pair: tuple[Any, Any]) -> Any:
        """The message a `(headers, payload)` tuple from the fused parser stands for."""
        return _message(pair)

    def _reader(self, out: list[Delta]) -> Reader | None:
        """The usual event's reader (see `DialectDecoder._reader`): a text `contentBlockDelta`.

        Typed, or as a dict (on the standard library, a
        delta that repeats the JSON of the last one that gave one delta by its
        text alone: see `_learn`). A `(headers, payload)` tuple is a message
        from the parser fused in front (`_take`), whose headers are the
        very dict of every message with the same header block: one found to
        be a content delta's is known by its identity from then on.
        """
        append, pair, text_delta = out.append, pair_type(self._pairs), _text
        read, unset = self._read, self._unset
        plain = self._plain_delta

        def delta_events(items: list[Any], start: int) -> int:
            deltas = self._delta_headers
            chars = 0
            try:
                for at in range(start, len(items)):
                    item = items[at]
                    if type(item) is pair:
                        headers, payload = item
                        if headers is not deltas:
                            if not _is_delta(headers):
                                return at
                            deltas = headers
                    elif type(item) is EventStreamMessage:
                        payload = item.payload
                        if not _is_delta(item.headers):
                            return at
                    else:
                        return at
                    if read is None:
                        if not plain(payload.decode("utf-8", "replace"), out):
                            return at
                        continue
                    try:
                        text = read(payload).delta.text
                    except ValueError:  # not an event the types know: `_decode` reads it
                        return at
                    if text is unset:
                        return at
                    chars += len(text)
                    append(text_delta(text, 0))
                return len(items)
            finally:
                self._delta_headers = deltas
                self._chars += chars  # (the plain reader counts its own)

        return delta_events

    def _ready(self) -> bool:
        """After the first answer, before `messageStop`, and not while a text block's
        start is to be marked (see `DialectDecoder._ready`)."""
        return self._gave_answer and not self._stopped and not self._after_text

    def _text_start(self) -> list[Delta]:
        """`[TextBlockStart()]` where a text block ended just before this text, else `[]`."""
        if not self._after_text:
            return []
        self._after_text = False
        return [TextBlockStart()]

    def _plain_delta(self, payload: str, out: list[Delta]) -> bool:
        """A content delta's payload read on the standard library (False: `_decode` reads it).

        By its text alone where it repeats the learnt delta's JSON (`_again`
        for a reasoning text or tool input), else `_object` and
        `_block_delta`'s rules for a text delta.
        """
        around = self._around
        if around is not None:
            text = around[0].read(payload)
            if text is not None:
                # The learnt delta but for its text (and padding).
                if around[1] == _TEXT:
                    self._chars += len(text)
                    out.append(_text(text, 0))
                    return True
                if self._again(around[1], around[2], text, out):
                    return True
        try:
            data = self._loads(payload)
        except (ValueError, TypeError, RecursionError):
            return False
        if type(data) is not dict:
            return False
        index, delta = data.get("contentBlockIndex"), data.get("delta")
        if type(index) is not int or type(delta) is not dict:
            return False
        text = delta.get("text")
        if type(text) is not str:
            return False
        if text and self._budget is not None:
            self._around = self._learn(payload, _TEXT, index, text) or self._around
        self._chars += len(text)
        out.append(_text(text, 0))
        return True

    def _learn_other(
        self, payload: str, data: JSONObject, delta: Delta
    ) -> tuple[Template, int, int] | None:
        """`_learn` for a reasoning or tool input delta `_decode` read whole from `data`."""
        index = data["contentBlockIndex"]
        if type(delta) is ReasoningDelta:
            reasoning = data["delta"]["reasoningContent"]
            # A signature (or redacted content) is state of the block besides the text.
            if "signature" in reasoning or "redactedContent" in reasoning:
                return None
            return self._learn(payload, _REASONING, index, delta.text)
        if type(delta) is ToolCallDelta:
            return self._learn(payload, _INPUT, index, delta.arguments)
        return None

    def _learn(
        self, payload: str, kind: int, index: int, text: str
    ) -> tuple[Template, int, int] | None:
        """The template of a delta for block `index` just read whole that gave one delta, or None.

        `kind` says what the delta stood for (a text, a reasoning text or a
        tool call's input fragment: `text`). The decoder reads nothing of such
        a delta but its block and the delta's object, so a payload that
        repeats this one's JSON but for that text and the padding `p` stands
        for the same with its text (`_again`). As often as the `Budget` allows.
        """
        if self._budget is None or not self._budget.take():
            return None
        key = "input" if kind == _INPUT else "text"
        template = Template.learn(payload, key, text, _FREE)
        return None if template is None else (template, kind, index)

    def _again(self, kind: int, index: int, text: str, out: list[Delta]) -> bool:
        """`_block_delta`'s work for a reasoning or tool input delta like the learnt one.

        False (before anything changed) where the block at `index` is no
        longer of its kind: the general path says what is wrong.
        """
        block = self._blocks.get(index)
        if kind == _REASONING:
            if block is None:
                block = self._blocks[index] = _Block("reasoning")
            elif block.kind != "reasoning":
                return False
            block.parts.append(text)
            out.append(_reasoning(text, 0))
            return True
        if block is None or block.kind not in ("tool", "server_tool"):
            return False
        if text:
            block.parts.append(text)
            if block.kind == "tool":
                out.append(ToolCallDelta(block.index, text))
        return True

    def _decode(self, item: Any) -> list[Delta]:
        if type(item) is not EventStreamMessage and not isinstance(item, EventStreamMessage):
            raise TypeError(
                "BedrockDecoder takes EventStreamMessage items (add rs.eventstream_frames() "
                f"before rs.decode('bedrock')), got {type(item).__name__}"
            )
        headers = item.headers
        kind = headers.get(":message-type", "event")
        if kind != "event":
            return self._not_an_event(kind, item)
        name = headers.get(":event-type")
        handler = self._events.get(name) if type(name) is str else None
        if handler is None:
            return self._unknown(name, item)
        if name == "contentBlockDelta" and self._read is not None:
            got = self._typed_delta(item.payload)
            if got is not None:
                return got
        data = self._object(item.payload, item)
        if data is None:
            return []
        got = handler(data, item)
        if (
            len(got) == 1
            and name == "contentBlockDelta"
            and self._gave_answer
            and self._budget is not None
        ):
            # A reasoning text or tool input, where the hot reader reads: the next
            # like it may be read by its text.
            payload = bytes(item.payload).decode("utf-8", "replace")
            self._around = self._learn_other(payload, data, got[0]) or self._around
        return got

    def _end(self) -> list[Delta]:
        if self._stopped:
            return []  # messageStop came; the metadata after it is optional
        return super()._end()

    # -- events ------------------------------------------------------------------

    def _message_start(self, data: JSONObject, item: EventStreamMessage) -> list[Delta]:
        if self._stopped:
            return self._malformed("messageStart after messageStop", item)
        opt_str(data, "role", "")
        return []

    def _block_start(self, data: JSONObject, item: EventStreamMessage) -> list[Delta]:
        if self._stopped:
            return self._malformed("contentBlockStart after messageStop", item)
        index = _index(data)
        start = opt_object(data, "start", "")
        if start is None:
            raise ShapeError("start", "an object", None)
        self._answered = True
        self._mark = self._chars
        self._after_text = False
        use = opt_object(start, "toolUse", "start")
        if use is not None:
            call_id = opt_str(use, "toolUseId", "start.toolUse")
            name = opt_str(use, "name", "start.toolUse")
            if opt_str(use, "type", "start.toolUse") == "server_tool_use":
                self._blocks[index] = _Block("server_tool", id=call_id, name=name, start=use)
                return []
            n = self._calls
            self._calls += 1
            self._blocks[index] = _Block("tool", n, call_id, name)
            return [ToolCallDelta(n, "", call_id, name)]
        result = opt_object(start, "toolResult", "start")
        if result is not None:
            call_id = opt_str(result, "toolUseId", "start.toolResult")
            name = opt_str(result, "type", "start.toolResult") or "toolResult"
            opt_str(result, "status", "start.toolResult")
            self._blocks[index] = _Block("tool_result", id=call_id, name=name, start=result)
            return []
        if not start:
            return []  # a text block that says so (it tells nothing more)
        # An image block, or a kind this module does not know: kept whole.
        return [Metadata({"events": [{"event": "contentBlockStart", "data": _unpadded(data)}]})]

    def _block_delta(self, data: JSONObject, item: EventStreamMessage) -> list[Delta]:
        if self._stopped:
            return self._malformed("contentBlockDelta after messageStop", item)
        index = _index(data)
        delta = data.get("delta")
        if type(delta) is not dict:
            raise ShapeError("delta", "an object", delta)
        self._answered = True
        text = delta.get("text")
        if text is not None or "text" in delta:
            if type(text) is not str:  # null too: a text delta without its text
                raise ShapeError("delta.text", "a string", text)
            self._chars += len(text)
            return [*self._text_start(), _text(text, 0)]
        use = delta.get("toolUse")
        if use is not None:
            return self._tool_input(index, use, item)
        reasoning = delta.get("reasoningContent")
        if reasoning is not None:
            return self._reasoning(index, reasoning, item)
        citation = opt_object(delta, "citation", "delta")
        if citation is not None:
            return self._cite(index, citation, item)
        result = opt_list(delta, "toolResult", "delta")
        if result is not None:
            block = self._blocks.get(index)
            if block is None or block.kind != "tool_result":
                return self._malformed(
                    f"a toolResult delta for content block {index}, which no toolResult "
                    "contentBlockStart opened",
                    item,
                )
            block.content += result
            return []
        return [Metadata({"events": [{"event": "contentBlockDelta", "data": _unpadded(data)}]})]

    def _typed_delta(self, payload: bytes) -> list[Delta] | None:
        """`_block_delta` for a payload the typed decoding reads; None: not here.

        None (before anything changed) where the general path has more to
        say: a payload the types do not know, a delta after `messageStop`,
        one for a block that is not of its kind.
        """
        assert self._read is not None
        try:
            data = self._read(payload)
        except ValueError:  # msgspec's DecodeError: not a delta its types know
            return None
        if self._stopped:
            return None
        index, delta = data.content_block_index, data.delta
        if delta.text is not self._unset:
            self._answered = True
            self._chars += len(delta.text)
            return [*self._text_start(), _text(delta.text, 0)]
        use = delta.tool_use
        if use is not None:
            block = self._blocks.get(index)
            if block is None or block.kind not in ("tool", "server_tool"):
                return None
            self._answered = True
            fragment = use.input
            if fragment:
                block.parts.append(fragment)
                if block.kind == "tool":
                    return [ToolCallDelta(block.index, fragment)]
            return []
        reasoning = delta.reasoning_content
        if reasoning is None:
            return None
        block = self._blocks.get(index)
        if block is not None and block.kind != "reasoning":
            return None
        self._answered = True
        self._after_text = False
        if block is None:
            block = self._blocks[index] = _Block("reasoning")
        out: list[Delta] = []
        if reasoning.text is not None:
            block.parts.append(reasoning.text)
            out.append(_reasoning(reasoning.text, 0))
        if reasoning.signature is not None:
            block.signature.append(reasoning.signature)
        if reasoning.redacted_content is not None:
            block.redacted.append(reasoning.redacted_content)
        return out

    def _tool_input(self, index: int, use: JSON, item: EventStreamMessage) -> list[Delta]:
        if type(use) is not dict:
            raise ShapeError("delta.toolUse", "an object", use)
        fragment = use.get("input")
        if type(fragment) is not str:
            raise ShapeError("delta.toolUse.input", "a string", fragment)
        block = self._blocks.get(index)
        if block is None or block.kind not in ("tool", "server_tool"):
            return self._malformed(
                f"a toolUse delta for content block {index}, which no toolUse "
                "contentBlockStart opened",
                item,
            )
        if fragment:
            block.parts.append(fragment)
            if block.kind == "tool":
                return [ToolCallDelta(block.index, fragment)]
        return []

    def _reasoning(self, index: int, reasoning: JSON, item: EventStreamMessage) -> list[Delta]:
        if type(reasoning) is not dict:
            raise ShapeError("delta.reasoningContent", "an object", reasoning)
        block = self._blocks.get(index)
        if block is None:
            block = self._blocks[index] = _Block("reasoning")
        elif block.kind != "reasoning":
            return self._malformed(
                f"a reasoningContent delta in content block {index}, a {block.kind} block", item
            )
        self._after_text = False
        out: list[Delta] = []
        text = opt_str(reasoning, "text", "delta.reasoningContent")
        if text is not None:
            block.parts.append(text)
            out.append(_reasoning(text, 0))
        signature = opt_str(reasoning, "signature", "delta.reasoningContent")
        if signature is not None:
            block.signature.append(signature)
        redacted = opt_str(reasoning, "redactedContent", "delta.reasoningContent")
        if redacted is not None:
            block.redacted.append(redacted)
        if reasoning.keys() - _REASONING_KNOWN:
            # A member this module does not know (the union may grow): kept.
            event = {"contentBlockIndex": index, "delta": {"reasoningContent": reasoning}}
            out.append(Metadata({"events": [{"event": "contentBlockDelta", "data": event}]}))
        return out

    def _cite(self, index: int, citation: JSONObject, item: EventStreamMessage) -> list[Delta]:
        """Keep a citation of text block `index` until its stop, where its span is known."""
        _citation(citation)  # its fields are checked as it arrives
        block = self._blocks.get(index)
        if block is None:
            block = self._blocks[index] = _Block("text", offset=self._mark)
        elif block.kind != "text":
            return self._malformed(
                f"a citation delta in content block {index}, a {block.kind} block", item
            )
        block.citations.append(citation)
        return []

    def _flush(self, block: _Block) -> list[Delta]:
        """The deltas a block gives at its end: a cited text block's citations with its span.

        A block that had citations but no text gives them without a span:
        there is no text of its own for them to stay with.
        """
        if block.kind != "text":
            return _flush(block)
        start, end = block.offset, self._chars
        if end > start:
            return [_citation(c, start, end) for c in block.citations]
        return [_citation(c) for c in block.citations]

    def _block_stop(self, data: JSONObject, item: EventStreamMessage) -> list[Delta]:
        if self._stopped:
            return self._malformed("contentBlockStop after messageStop", item)
        index = _index(data)
        block = self._blocks.pop(index, None)
        out = [] if block is None else self._flush(block)
        # A plain text block (no citations: no block record) that brought text; an empty
        # one between two leaves the mark as it was.
        self._after_text = block is None and (self._after_text or self._chars > self._mark)
        self._mark = self._chars
        return out

    def _message_stop(self, data: JSONObject, item: EventStreamMessage) -> list[Delta]:
        if self._stopped:
            return self._malformed("a second messageStop", item)
        raw = data.get("stopReason")
        if type(raw) is not str:
            raise ShapeError("stopReason", "a string", raw)
        self._answered = self._stopped = True
        out: list[Delta] = []
        # Blocks the stream never stopped are complete all the same.
        for index in sorted(self._blocks):
            out += self._flush(self._blocks.pop(index))
        reason = FINISH_REASONS.get(raw, raw)
        if reason == STOP and self._calls:
            reason = TOOL_CALLS
        out.append(Finish(reason, 0, raw))
        extra = data.get("additionalModelResponseFields")
        if extra is not None:
            out.append(Metadata({"additionalModelResponseFields": extra}))
        return out

    def _metadata(self, data: JSONObject, item: EventStreamMessage) -> list[Delta]:
        out: list[Delta] = []
        counts = opt_object(data, "usage", "")
        if counts is not None:
            read = opt_int(counts, "cacheReadInputTokens", "usage")
            write = opt_int(counts, "cacheWriteInputTokens", "usage")
            prompt = (opt_int(counts, "inputTokens", "usage") or 0) + (read or 0) + (write or 0)
            out.append(
                usage(
                    prompt,
                    opt_int(counts, "outputTokens", "usage"),
                    total=opt_int(counts, "totalTokens", "usage"),
                    cached=read,
                    cache_write=write,
                    raw=counts,
                )
            )
        rest = {key: value for key, value in data.items() if key not in ("usage", "p")}
        if rest:
            out.append(Metadata(rest))
        if self._stopped:
            self._done = True
        return out

    def _not_an_event(self, kind: Any, item: EventStreamMessage) -> list[Delta]:
        headers = item.headers
        try:
            payload = load_json(item.payload) if item.payload else None
        except ValueError:
            payload = None
        body = payload if isinstance(payload, dict) else {}
        if kind == "exception":
            name = headers.get(":exception-type")
            name = name if type(name) is str and name else None
            message = body.get("message")
            code = body.get("originalStatusCode")
            raise ProviderError(
                message if type(message) is str and message else _quote(item.payload),
                type=name,
                code=code if type(code) is int else None,
                payload=payload,
                event=name or "exception",
            )
        if kind == "error":
            code = headers.get(":error-code")
            message = headers.get(":error-message")
            raise ProviderError(
                message if type(message) is str and message else _quote(item.payload),
                type=code if type(code) is str and code else None,
                payload=payload,
                event="error",
            )
        return self._malformed(f"an unknown :message-type header {kind!r}", item)

    def _unknown(self, name: Any, item: EventStreamMessage) -> list[Delta]:
        if type(name) is not str:
            raise ShapeError(":event-type header", "a string", name)
        if name == "chunk":
            return self._malformed(
                "a 'chunk' event is InvokeModelWithResponseStream's, not ConverseStream's", item
            )
        if not (name[:1].islower() and name.isascii() and name.isalnum()):
            # ConverseStream names its events in lowerCamelCase.
            return self._malformed(f"an event of another API ({name!r})", item)
        data = self._object(item.payload, item) if item.payload else {}
        if data is None:
            return []
        return [Metadata({"events": [{"event": name, "data": _unpadded(data)}]})]


def _is_delta(headers: Any) -> bool:
    """Whether a message's headers are a `contentBlockDelta` event's."""
    return bool(
        headers.get(":event-type") == "contentBlockDelta"
        and headers.get(":message-type", "event") == "event"
    )


def _message(item: Any) -> Any:
    """The message a `(headers, payload)` tuple from the fused parser stands for; else the item.

    The headers are copied: the parser gives the same dict for every message
    with the same header block, and the message is the caller's to keep.
    """
    if type(item) is tuple:
        headers, payload = item
        return EventStreamMessage(dict(headers), payload)
    return item


def _index(data: JSONObject) -> int:
    index = data.get("contentBlockIndex")
    if type(index) is not int:
        raise ShapeError("contentBlockIndex", "an integer", index)
    return index


def _flush(block: _Block) -> list[Delta]:
    """The deltas a block gives at its end."""
    text = "".join(block.parts)
    if block.kind == "tool":
        return [] if text else [ToolCallDelta(block.index, "{}")]
    if block.kind == "server_tool":
        try:
            value: JSON = load_json(text) if text.strip() else None
        except ValueError:
            value = text
        raw = {**block.start, "input": value}
        return [ServerToolCall(block.id, block.name or "", value, 0, {"toolUse": raw})]
    if block.kind == "tool_result":
        raw = {**block.start, "content": block.content}
        return [ServerToolResult(block.id, block.name or "", block.content, 0, {"toolResult": raw})]
    out: list[Delta] = []
    if block.redacted:
        data = "".join(block.redacted)
        out.append(ReasoningState("redacted_thinking", data, raw={"redactedContent": data}))
    if block.signature:
        signature = "".join(block.signature)
        raw = {"reasoningText": {"text": text, "signature": signature}}
        out.append(ReasoningState("thinking", signature, text, raw=raw))
    return out


def _citation(citation: JSONObject, start: int | None = None, end: int | None = None) -> Citation:
    """A Bedrock citation; with a span, a whole-block one (the text block from `start` to `end`)."""
    title = opt_str(citation, "title", "delta.citation")
    location = opt_object(citation, "location", "delta.citation") or {}
    kind = next((k for k in location if k in _LOCATIONS), None) or next(iter(location), "citation")
    where = location.get(kind)
    url = where.get("url") if isinstance(where, dict) else None
    sources = opt_list(citation, "sourceContent", "delta.citation") or []
    texts = [s["text"] for s in sources if isinstance(s, dict) and isinstance(s.get("text"), str)]
    return Citation(
        kind,
        url if isinstance(url, str) else None,
        title,
        "".join(texts) if texts else None,
        start,
        end,
        raw=citation,
        whole_block=start is not None,
    )


def _unpadded(data: JSONObject) -> JSONObject:
    return {key: value for key, value in data.items() if key != "p"} if "p" in data else data


def _quote(payload: bytes) -> str:
    return excerpt(payload) if payload.strip() else "(no message)"

"""The `"gemini"` dialect: the renderer (deltas -> wire events).

See the package docstring for the wire format and the rules.
"""

from __future__ import annotations

import json
import re
from json.encoder import encode_basestring
from typing import Any, ClassVar

from ...._fast import enabled
from ....errors import ProviderError
from ....models import (
    JSON,
    Citation,
    Delta,
    Finish,
    JSONObject,
    Metadata,
    ReasoningDelta,
    ReasoningState,
    Reset,
    ServerToolCall,
    ServerToolResult,
    SSEFrame,
    TextDelta,
    ToolCallDelta,
    Usage,
)
from ...tools import ToolCallAccumulator, is_generated_call_id
from .._base import (
    CONTENT_FILTER,
    LENGTH,
    STOP,
    TOOL_CALLS,
    ResetRule,
    Wire,
    WireKind,
)
from .._json_paths import path_values
from .._shared import TEXT_MARK, dumps, text_halves
from .fields import finish_reason

__all__ = ["GeminiRenderer"]

# --------------------------------------------------------------------------- renderer

#: The normalised finish reasons as Gemini words (a provider word passes as it is).
_WORDS = {STOP: "STOP", TOOL_CALLS: "STOP", LENGTH: "MAX_TOKENS", CONTENT_FILTER: "SAFETY"}
#: What Gemini's enum words look like (another dialect's raw word is not sent as one).
# The real API writes ": " after keys and nothing after commas.
_COLON = ": "

_WORD = re.compile(r"[A-Z][A-Z_]*")


class _Rendered:
    """What the renderer keeps of one candidate."""

    __slots__ = ("citations", "finish", "grounding", "sent", "signatures", "text")

    def __init__(self) -> None:
        self.sent = False  # anything of the answer went out for it
        self.text: list[str] = []
        self.signatures: dict[int, str] = {}
        self.citations: list[Citation] = []
        self.finish: Finish | None = None
        self.grounding: JSON = None  # a groundingMetadata object from Metadata, sent as it is


class GeminiRenderer:
    """Deltas back into a Gemini `streamGenerateContent?alt=sse` stream (`SSEFrame`s).

    Each text, thought or provider-side tool item becomes a chunk of its own
    (`{"candidates": [{"content": {"parts": [...], "role": "model"}, "index":
    n}], "modelVersion", "responseId"}`); a thought signature rides on the
    `functionCall` part of its call, or on an empty text part. A choice's tool
    calls are sent when it finishes (Gemini sends arguments as an object, so
    they must be whole): one chunk with a `functionCall` part each, or, with
    `partial_args=True`, Vertex streamed arguments (`name` + `willContinue`,
    then one `partialArgs` chunk per value, strings in two pieces and an
    empty closing piece, then an empty `functionCall`). `close()` sends the
    last chunk: every candidate with its `finishReason`, grounding and
    citation metadata, and `usageMetadata`. Bytes go on the wire with CRLF
    line ends like the real API (`newline`).

    Not expressible, so left out: refusals (Gemini has none), reasoning state
    other than thought signatures, `Metadata` other than `{"parts": [...]}`
    (sent as parts) and `groundingMetadata` (sent as it is, in place of the
    grounding citations), the text of a `"citation"` citation, reasoning
    tokens above completion tokens. Tool calls come back renumbered in index
    order with their arguments as compact JSON, a call's id only when the
    provider gave it (not one rxstream made, `is_generated_call_id`); a finish of `"tool_calls"`
    without calls comes back as `"stop"`; a choice that never finished ends
    with `STOP`; with `partial_args=True` empty arrays and objects nested in
    the arguments vanish (no path leads to them). Citations come back in the
    order grounding spans, grounding sources without a span, `"citation"`
    sources. Any other citation kind is sent as grounding.

    A `Reset` (a new answer replaces the one so far), which this format
    cannot carry, follows `ResetRule`: the new answer goes on in the same
    stream, its tool calls numbered after the dropped answer's. Tool calls
    not written yet when it comes (they wait for their choice's end here)
    are dropped with the answer.

    Args:
        model: the `modelVersion` written into every chunk.
        id: the `responseId` written into every chunk.
        partial_args: send tool-call arguments as Vertex streamed arguments.

    Gemini sends tool-call arguments as an object: a client tool call whose
    arguments are no JSON object (another type, or JSON cut short by a
    truncated stream) is left out. Provider-side tools go in the shapes
    google-genai's models take (they forbid any other key): `executableCode`
    and `codeExecutionResult` only for Gemini's own fields, any other call a
    `toolCall` whose `args` is an object (another value as `{"input": value}`),
    any other result a `toolResponse` whose `response` is an object (another
    value, such as a list of result blocks, as `{"output": value}`, Gemini's
    own key for a function's output).

    >>> r = GeminiRenderer()
    >>> r.feed(TextDelta("Hi"))[0].data[:54]
    '{"candidates": [{"content": {"parts": [{"text": "Hi"}]'
    """

    wire: ClassVar[WireKind] = "sse"
    #: The line end of the real API (events end with a blank line, `\\r\\n\\r\\n`).
    newline: ClassVar[str] = "\r\n"

    def __init__(
        self,
        *,
        model: str = "gemini-2.5-flash",
        id: str = "rxstream-gemini-0001",
        partial_args: bool = False,
    ) -> None:
        self._resets = ResetRule()  # what a Reset does here (ResetRule)
        self._model = model
        self._id = id
        self._partial = partial_args
        self._tools = ToolCallAccumulator()
        self._choices: dict[int, _Rendered] = {}
        self._usage: Usage | None = None
        self._closed = False
        # Each choice's text chunk as a template (a fast path, `text_event`): choice ->
        # the JSON before and after the text.
        self._templates = enabled()
        self._text_templates: dict[int, tuple[str, str]] = {}

    def feed(self, delta: Delta) -> list[Wire]:
        """The chunks `delta` becomes (often none: calls and finishes wait for their end)."""
        self._check_open()
        if type(delta) is Reset:
            self._tools.feed(delta)  # calls not written yet belong to the dropped answer
        if type(delta) is not TextDelta or self._resets.ended:
            seen = self._resets.see(delta)
            if seen is None:
                return []
            delta = seen
        match delta:
            case TextDelta(text=text, choice=choice):
                if not text:
                    return []
                self._choice(choice).text.append(text)
                return [self._chunk(choice, [{"text": text}])]
            case ReasoningDelta(text=text, choice=choice):
                self._choice(choice)
                return [self._chunk(choice, [{"text": text, "thought": True}])] if text else []
            case ToolCallDelta(choice=choice):
                self._choice(choice)
                self._tools.feed(delta)
                return []
            case Finish(choice=choice):
                state = self._choice(choice)
                state.finish = delta
                return self._calls(choice, self._tools.feed(delta))
            case Usage():
                self._usage = delta
                return []
            case Citation(choice=choice):
                self._choice(choice).citations.append(delta)
                return []
            case ServerToolCall(id=call_id, name=name, input=value, choice=choice):
                self._choice(choice)
                return [self._chunk(choice, [_server_call(call_id, name, value)])]
            case ServerToolResult(call_id=call_id, name=name, content=value, choice=choice):
                self._choice(choice)
                return [self._chunk(choice, [_server_result(call_id, name, value)])]
            case ReasoningState(kind="thought_signature", data=data, index=index, choice=choice):
                state = self._choice(choice)
                if index is not None and state.finish is None:
                    state.signatures[index] = data
                    return []
                return [self._chunk(choice, [{"text": "", "thoughtSignature": data}])]
            case Metadata(data=data, choice=choice):
                out: list[Wire] = []
                parts = data.get("parts")
                if type(parts) is list and parts and all(type(p) is dict for p in parts):
                    out.append(self._chunk(choice, parts))
                if type(data.get("groundingMetadata")) is dict:
                    self._choice(choice).grounding = data["groundingMetadata"]
                return out
        return []

    def text_event(self, delta: TextDelta) -> tuple[str, str] | None:
        """The one event `feed(delta)` gives for a text delta, as (name, data), when it
        changes nothing else (a chunk of the text alone); else None: `feed` it.

        What `feed` writes, without its layers (the text is kept for the
        citations' offsets): an encoder asks this first (a server writes one per
        token). Only where `feed` would only append that chunk: the renderer
        open, a choice already begun, a text that is not empty, no reset ending
        a choice, the fast paths on.
        """
        state = self._choices.get(delta.choice)
        if (
            state is None
            or not delta.text
            or self._closed
            or self._resets.ended
            or not self._templates
        ):
            return None
        template = self._text_templates.get(delta.choice)
        if template is None:
            chunk = self._chunk(delta.choice, [{"text": TEXT_MARK}])
            template = self._text_templates[delta.choice] = text_halves(chunk.data)
        state.text.append(delta.text)
        state.sent = True
        return "message", f"{template[0]}{encode_basestring(delta.text)}{template[1]}"

    def close(self) -> list[Wire]:
        """The last chunks: pending tool calls, then every candidate's finish and the usage."""
        self._check_open()
        self._closed = True
        out: list[Wire] = []
        done: dict[int, list[Any]] = {}
        for call in self._tools.close():
            done.setdefault(call.choice, []).append(call)
        for choice, calls in sorted(done.items()):
            out += self._calls(choice, calls)
        if not self._choices:
            self._choice(0)
        blocked = self._blocked()
        if blocked is not None:
            chunk: JSONObject = {"promptFeedback": {"blockReason": blocked}}
        else:
            chunk = {"candidates": [self._last(n, s) for n, s in sorted(self._choices.items())]}
        if self._usage is not None:
            chunk["usageMetadata"] = _usage_metadata(self._usage)
        chunk["modelVersion"] = self._model
        chunk["responseId"] = self._id
        out.append(SSEFrame(dumps(chunk, colon=_COLON)))
        return out

    def error(self, error: ProviderError) -> list[Wire]:
        """The chunk of an in-stream error: `{"error": {"code", "message", "status"}}`."""
        self._check_open()
        self._closed = True
        code, status = error.code, error.type
        body = {
            "code": code if type(code) is int else 500,
            "message": error.message,
            "status": status or (code if isinstance(code, str) else None) or "INTERNAL",
        }
        return [SSEFrame(dumps({"error": body}, colon=_COLON))]

    # -- helpers -------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("this GeminiRenderer is closed; it renders no more")

    def _choice(self, n: int) -> _Rendered:
        state = self._choices.get(n)
        if state is None:
            state = self._choices[n] = _Rendered()
        return state

    def _chunk(self, choice: int, parts: list[JSONObject]) -> SSEFrame:
        self._choice(choice).sent = True
        candidate = {"content": {"parts": parts, "role": "model"}, "index": choice}
        return SSEFrame(
            dumps(
                {"candidates": [candidate], "modelVersion": self._model, "responseId": self._id},
                colon=_COLON,
            )
        )

    def _calls(self, choice: int, calls: list[Any]) -> list[Wire]:
        if not calls:
            return []
        signatures = self._choice(choice).signatures
        parts: list[JSONObject] = []
        out: list[Wire] = []
        for call in sorted(calls, key=lambda c: c.index):
            args = _arguments(call.arguments)
            if args is None:
                continue  # not a JSON object: Gemini cannot carry it (class docstring)
            # An id rxstream made for a call that came without one is not Gemini's to see.
            own_id = call.id is not None and not is_generated_call_id(call.id)
            head: JSONObject = {"id": call.id} if own_id else {}
            head["name"] = call.name or ""
            signature = signatures.get(call.index)
            if not self._partial:
                head["args"] = args
                part: JSONObject = {"functionCall": head}
                if signature is not None:
                    part["thoughtSignature"] = signature
                parts.append(part)
                continue
            head["willContinue"] = True
            start: JSONObject = {"functionCall": head}
            if signature is not None:
                start["thoughtSignature"] = signature
            out.append(self._chunk(choice, [start]))
            for piece in _partial_pieces(args):
                call_part = {"functionCall": {"partialArgs": [piece], "willContinue": True}}
                out.append(self._chunk(choice, [call_part]))
            out.append(self._chunk(choice, [{"functionCall": {}}]))
        if parts:
            out.append(self._chunk(choice, parts))
        return out

    def _blocked(self) -> str | None:
        """The block reason, when the answer is a prompt blocked before any content."""
        if len(self._choices) != 1 or 0 not in self._choices:
            return None
        state = self._choices[0]
        finish = state.finish
        if (
            finish is None
            or finish.reason != CONTENT_FILTER
            or finish.raw is None
            or finish_reason(finish.raw, False) == CONTENT_FILTER
            or state.sent
            or state.citations
        ):
            return None
        return finish.raw

    def _last(self, choice: int, state: _Rendered) -> JSONObject:
        finish = state.finish
        if finish is None:
            word = "STOP"
        elif (
            finish.raw is not None
            and _WORD.fullmatch(finish.raw)
            and finish_reason(finish.raw, finish.reason == TOOL_CALLS) == finish.reason
        ):
            word = finish.raw  # Gemini's own word, or one that reads the same
        else:
            word = _WORDS.get(finish.reason, finish.reason)
        candidate: JSONObject = {
            "content": {"parts": [{"text": ""}], "role": "model"},
            "finishReason": word,
            "index": choice,
        }
        grounding, sources = _render_citations(state)
        if grounding:
            candidate["groundingMetadata"] = grounding
        if sources:
            candidate["citationMetadata"] = {"citationSources": sources}
        return candidate


def _with_id(value: JSONObject, call_id: str | None) -> JSONObject:
    return value if call_id is None else {**value, "id": call_id}


def _arguments(text: str) -> JSONObject | None:
    """The arguments as an object; None when they are no JSON object (the call is left out)."""
    if not text.strip():
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if type(value) is dict else None


# What google-genai's models take in each part (they forbid any other key).
_CODE_KEYS = frozenset({"code", "language"})
_RESULT_KEYS = frozenset({"outcome", "output"})


def _server_call(call_id: str | None, name: str, value: JSON) -> JSONObject:
    """The part of a provider-side tool call, in a shape google-genai's `Part` takes."""
    if name == "code_execution" and type(value) is dict and value.keys() <= _CODE_KEYS:
        return {"executableCode": _with_id(value, call_id)}
    args = value if value is None or type(value) is dict else {"input": value}
    return {"toolCall": {"id": call_id, "toolType": name, "args": args}}


def _server_result(call_id: str | None, name: str, value: JSON) -> JSONObject:
    """The part of a provider-side tool result, in a shape google-genai's `Part` takes."""
    if name == "code_execution" and type(value) is dict and value.keys() <= _RESULT_KEYS:
        return {"codeExecutionResult": _with_id(value, call_id)}
    response = value if value is None or type(value) is dict else {"output": value}
    return {"toolResponse": {"id": call_id, "toolType": name, "response": response}}


def _partial_pieces(args: JSONObject) -> list[JSONObject]:
    """The `partialArgs` that set `args`, value by value; a string in two pieces and an
    empty closing one, as Vertex sends them."""
    out: list[JSONObject] = []
    for path, value in path_values(args):
        if type(value) is str:
            half = len(value) // 2
            if half:
                out.append({"jsonPath": path, "stringValue": value[:half], "willContinue": True})
            out.append({"jsonPath": path, "stringValue": value[half:], "willContinue": True})
            out.append({"jsonPath": path, "stringValue": ""})
        elif type(value) is bool:
            out.append({"jsonPath": path, "boolValue": value})
        elif value is None:
            out.append({"jsonPath": path, "nullValue": "NULL_VALUE"})
        else:
            out.append({"jsonPath": path, "numberValue": value})
    return out


def _usage_metadata(u: Usage) -> JSONObject:
    counts: JSONObject = {
        "promptTokenCount": u.prompt_tokens,
        "candidatesTokenCount": max(u.completion_tokens - (u.reasoning_tokens or 0), 0),
        "totalTokenCount": u.total_tokens,
    }
    if u.reasoning_tokens is not None:
        counts["thoughtsTokenCount"] = u.reasoning_tokens
    if u.cached_tokens is not None:
        counts["cachedContentTokenCount"] = u.cached_tokens
    return counts


def _byte_offset(text: str, offset: int | None) -> int | None:
    if offset is None or text.isascii():
        return offset
    return len(text[:offset].encode("utf-8"))


def _render_citations(state: _Rendered) -> tuple[JSONObject, list[JSONObject]]:
    """The candidate's groundingMetadata and citation sources."""
    text = "".join(state.text)
    chunks: list[JSONObject] = []
    supports: list[JSONObject] = []
    sources: list[JSONObject] = []
    for c in state.citations:
        start, end = _byte_offset(text, c.start), _byte_offset(text, c.end)
        if c.kind == "citation":
            source: JSONObject = {}
            for key, value in (("startIndex", start), ("endIndex", end)):
                if value is not None:
                    source[key] = value
            for key, word in (("uri", c.url), ("title", c.title)):
                if word is not None:
                    source[key] = word
            sources.append(source)
            continue
        if state.grounding is not None:
            continue  # the groundingMetadata itself is sent
        site = {k: v for k, v in (("uri", c.url), ("title", c.title)) if v is not None}
        if start is None and end is None and site:
            if c.text is not None:
                chunks.append({"retrievedContext": {**site, "text": c.text}})
            else:
                chunks.append({"web": site})
            continue
        segment = {
            k: v
            for k, v in (("startIndex", start), ("endIndex", end), ("text", c.text))
            if v is not None
        }
        indices: list[int] = []
        if site:
            indices.append(len(chunks))
            chunks.append({"web": site})
        supports.append({"segment": segment, "groundingChunkIndices": indices})
    grounding: JSONObject = {}
    if state.grounding is not None:
        grounding = state.grounding
    elif chunks or supports:
        if chunks:
            grounding["groundingChunks"] = chunks
        if supports:
            grounding["groundingSupports"] = supports
    return grounding, sources

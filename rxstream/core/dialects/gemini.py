"""The `"gemini"` dialect: Gemini API / Vertex AI `streamGenerateContent?alt=sse`.

Input: `SSEFrame`s whose data is one whole `GenerateContentResponse` each
(no `event:` lines, no `[DONE]`; the real API frames them with CRLF, which
`sse_frames` reads like LF). Output: deltas.

What becomes what (per candidate; `choice` is the candidate's `index`, 0
when absent):

- a `text` part is `TextDelta`, a `thought: true` text part `ReasoningDelta`
  (empty texts give nothing);
- a `thoughtSignature` (on any part) is `ReasoningState("thought_signature",
  data=<signature>, index=<the tool call it rode on, else None>,
  raw=<the part>)`: the next turn must send it back on the same part;
- a `functionCall` is a client tool call, `ToolCallDelta(index=<order of
  appearance>, id=functionCall.id or None, name, arguments)`: an `args`
  object is serialised compactly (`{}` when absent). Vertex streamed
  arguments (`partialArgs` + `willContinue`) are written out as JSON text
  while they stream, so the fragments concatenate to the compact JSON of the
  final arguments (see `_json_paths`); the call ends at an empty
  `functionCall`, at a chunk that says it will not continue, at the next
  call, or at the candidate's `finishReason` (streams may end with
  `{"text": ""}` instead of a closing `functionCall`);
- `executableCode` / `codeExecutionResult` (code execution) and `toolCall` /
  `toolResponse` (Gemini 3 built-in tools) are `ServerToolCall` /
  `ServerToolResult` (`name` "code_execution" or the `toolType`; a result
  without an id answers the code run just before it);
- `groundingMetadata` (`{}` until the last chunk; the last non-empty one is
  used) becomes one `Citation("grounding")` per grounding support and chunk
  it cites (url and title from the chunk's `web`, `retrievedContext` or
  `maps`, text and span from the support's segment; raw
  `{"groundingSupport", "groundingChunk"}`) and one per chunk no support
  cites; `citationMetadata` sources (`citationSources` on the Gemini API,
  `citations` on Vertex) become `Citation("citation")`. Both are emitted at
  the candidate's finish. Their offsets are UTF-8 byte offsets on the wire;
  `start`/`end` are converted to character offsets into the candidate's
  answer text (`Message.content`), None when they point outside it. The
  whole `groundingMetadata` (search entry point, queries) is also kept as
  `Metadata({"groundingMetadata": ...})`;
- other information is `Metadata`: `{"id": responseId, "model":
  modelVersion}` (when they change), `createTime`, `promptFeedback`,
  `safetyRatings` (the candidate's last, at its finish), `finishMessage`,
  `urlContextMetadata`, `avgLogprobs`, `logprobsResult` (a list, one entry
  per chunk), parts of other kinds (`inlineData` images and audio,
  `fileData`, kinds rxstream does not know) as `{"parts": [<part>, ...]}`
  in wire order, and any field rxstream does not know, under its own name.

Finish: `STOP` is `"stop"`, or `"tool_calls"` when that candidate asked for
client function calls; `MAX_TOKENS` is `"length"`; the safety, recitation,
blocklist, prohibited-content and SPII reasons are `"content_filter"`; any
other reason (`MALFORMED_FUNCTION_CALL`, `LANGUAGE`, `OTHER`, ...) is the
provider's word. `Finish.raw` keeps what was sent. A prompt blocked before
any candidate (`promptFeedback.blockReason`) is `Finish("content_filter",
raw=<blockReason>)`.

Usage: the last `usageMetadata` with counts wins, emitted once at the end:
prompt = `promptTokenCount` + `toolUsePromptTokenCount` (tool results fed
back to the model are input too, and with them prompt + completion adds up
to `totalTokenCount`), completion = `candidatesTokenCount` +
`thoughtsTokenCount`, reasoning = `thoughtsTokenCount`, cached =
`cachedContentTokenCount`, total = `totalTokenCount`; `Usage.raw` keeps the
object.

The end: the stream is done at the chunk on which every candidate seen has
its `finishReason` (or the prompt was blocked); then the decoder takes no
more input and `rs.decode` releases the connection, so nothing after it is
read. One exception: Gemini sends `finishReason` on the chunk that starts a
code run (an `executableCode` whose `codeExecutionResult` has not come yet)
and then the result and the rest of the answer, ending with another
`finishReason`; such a finish is held back, and is the candidate's end only
if the input ends with nothing more for it. Content for a candidate after
its own finish (while others go on) is `MalformedChunkError`. End of input before the end is
`TruncatedStreamError`. The decoder keeps each candidate's answer text (to
convert citation offsets) and the open containers of a streamed call;
every chunk is read once. `{"error": {"code", "message", "status"}}` (also
wrapped in a one-element list) is `ProviderError` (type = `status`, code =
`code`).

Follows the `GenerateContentResponse` reference (Gemini API and Vertex AI),
the `FinishReason` and `BlockedReason` enums, and Vertex's
`streamFunctionCallArguments` (`FunctionCall.partialArgs`, JSON paths per
RFC 9535).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any, ClassVar

from ...errors import ProviderError
from ...models import (
    JSON,
    Citation,
    Delta,
    Finish,
    JSONObject,
    Metadata,
    ReasoningDelta,
    ReasoningState,
    ServerToolCall,
    ServerToolResult,
    SSEFrame,
    TextDelta,
    ToolCallDelta,
    Usage,
)
from .._build import constructor
from ..provider_errors import provider_error
from ..tools import ToolCallAccumulator
from ._base import (
    CONTENT_FILTER,
    LENGTH,
    STOP,
    TOOL_CALLS,
    DialectDecoder,
    OnMalformed,
    ShapeError,
    Wire,
    WireKind,
    json_kind,
    load_json,
    opt_int,
    opt_list,
    opt_object,
    opt_str,
    usage,
)
from ._json_paths import ArgumentsWriter, PathError, format_path, parse_path, path_values

__all__ = ["GeminiDecoder", "GeminiRenderer", "http_error"]

_FILTERED = frozenset(
    {
        "SAFETY",
        "RECITATION",
        "BLOCKLIST",
        "PROHIBITED_CONTENT",
        "SPII",
        "IMAGE_SAFETY",
        "IMAGE_PROHIBITED_CONTENT",
        "IMAGE_RECITATION",
    }
)
#: The keys a Gemini chunk may have; a frame with none of them is not Gemini's.
_CHUNK_KEYS = frozenset(
    {"candidates", "usageMetadata", "promptFeedback", "modelVersion", "responseId", "createTime"}
)
#: The keys of a chunk that `_chunk_fields` has nothing to say about (read by `_decode`).
_PLAIN_CHUNK_KEYS = _CHUNK_KEYS - {"promptFeedback"}
_CANDIDATE_KEYS = frozenset(
    {
        "content",
        "finishReason",
        "index",
        "groundingMetadata",
        "citationMetadata",
        "safetyRatings",
        "finishMessage",
        "logprobsResult",
    }
)
#: Part keys this decoder turns into items (modifiers included); others keep the part as Metadata.
_PART_KEYS = frozenset(
    {
        "text",
        "thought",
        "thoughtSignature",
        "functionCall",
        "executableCode",
        "codeExecutionResult",
        "toolCall",
        "toolResponse",
    }
)
#: The bytes of UTF-8 that start no character (continuation bytes), and all the others.
_NOT_CONTINUATION = bytes(b for b in range(256) if not 0x80 <= b < 0xC0)


#: A frame, or the data of a `"message"` frame handed over by the parser (see `take_strings`).
_Frame = SSEFrame | str

_text: Callable[[str, int], TextDelta] = constructor(TextDelta)
_reasoning: Callable[[str, int], ReasoningDelta] = constructor(ReasoningDelta)


def _compact(value: JSON) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


# --------------------------------------------------------------------------- decoder


class _Candidate:
    """What the decoder keeps of one candidate."""

    __slots__ = (
        "calls",
        "citations",
        "code_id",
        "code_open",
        "finished",
        "grounding",
        "open_call",
        "open_index",
        "pending",
        "safety",
        "texts",
    )

    def __init__(self) -> None:
        self.texts: list[str] = []  # the answer text, for converting byte offsets
        self.calls = 0  # client function calls begun
        self.open_call: ArgumentsWriter | None = None  # a Vertex call whose arguments stream
        self.open_index = 0
        self.code_id: str | None = None  # the id of the last executableCode
        self.code_open = False  # an executableCode whose codeExecutionResult has not come yet
        self.finished = False
        # A finishReason sent while a code run was open: (the candidate, its path).
        self.pending: tuple[JSONObject, str] | None = None
        self.grounding: JSONObject | None = None  # the last non-empty groundingMetadata
        self.citations: list[JSONObject] = []  # citationMetadata sources, deduplicated
        self.safety: JSON = None  # the last safetyRatings


class GeminiDecoder(DialectDecoder):
    """Decode a Gemini / Vertex `streamGenerateContent?alt=sse` stream (see the module docstring).

    Args:
        on_malformed: `"raise"` (the default) or `"skip"` frames that are not
            valid Gemini chunks.

    >>> d = GeminiDecoder()
    >>> d.feed(SSEFrame('{"candidates": [{"content": {"parts": [{"text": "Hi"}]}}]}'))
    [TextDelta(text='Hi', choice=0)]
    >>> out = d.feed(SSEFrame('{"candidates": [{"content": {"parts": [{"text": "!"}]},'
    ...                       ' "finishReason": "STOP"}]}'))
    >>> out[0], (out[1].reason, out[1].raw), d.done
    (TextDelta(text='!', choice=0), ('stop', 'STOP'), True)
    """

    dialect: ClassVar[str] = "gemini"
    end_marker: ClassVar[str] = "a finishReason"

    def __init__(self, *, on_malformed: OnMalformed = "raise") -> None:
        super().__init__(on_malformed=on_malformed)
        self._candidates: dict[int, _Candidate] = {}
        self._unfinished = 0  # candidates seen without their finishReason yet
        self._usage: JSONObject | None = None
        self._id: JSON = None
        self._model: JSON = None
        self._created: JSON = None
        self._last_path = ""
        self._last_segments: list[str | int] = []
        self._strings = False  # take a str as a "message" frame's data (see take_strings)

    def take_strings(self) -> bool:
        """Also take a plain `str` as the data of a `"message"` frame, if nothing was fed yet.

        For `SSEParser.fuse`: the decoder reads nothing of a Gemini frame but
        its data, so the parser may hand that over without building an
        `SSEFrame` for it.

        Returns:
            Whether the decoder takes them from now on.
        """
        if self._items or self._state != "open":
            return False
        self._strings = True
        return True

    def _decode(self, frame: _Frame) -> list[Delta]:
        if type(frame) is SSEFrame:
            data, event = frame.data, frame.event
        elif self._strings and type(frame) is str:
            data, event = frame, "message"  # from the parser fused with this decoder
        else:
            raise TypeError(f"the gemini decoder takes SSEFrame items, got {type(frame).__name__}")
        try:
            chunk = self._loads(data)
        except (ValueError, RecursionError):
            chunk = None
        if type(chunk) is not dict:
            chunk = self._not_object(data, event, frame)
            if chunk is None:
                return []
        if "error" in chunk:
            raise provider_error(chunk, data=data, event=event)
        out: list[Delta] = []
        candidates = chunk.get("candidates")
        if candidates is not None:
            if type(candidates) is not list:
                raise ShapeError("candidates", "an array", candidates)
            for n, candidate in enumerate(candidates):
                if type(candidate) is not dict:
                    raise ShapeError(f"candidates[{n}]", "an object", candidate)
                self._candidate(candidate, n, out, frame)
        elif not _CHUNK_KEYS.intersection(chunk):
            return self._foreign(chunk, frame)
        counts = chunk.get("usageMetadata")
        if counts is not None:
            if type(counts) is not dict:
                raise ShapeError("usageMetadata", "an object", counts)
            if (
                "totalTokenCount" in counts
                or "promptTokenCount" in counts
                or "candidatesTokenCount" in counts
            ):
                self._usage = counts
        if (
            chunk.get("responseId") != self._id
            or chunk.get("modelVersion") != self._model
            or chunk.get("createTime") != self._created
        ):
            self._ids(chunk, out)
        if not _PLAIN_CHUNK_KEYS.issuperset(chunk):
            self._chunk_fields(chunk, bool(candidates), out)
        if self._done or (self._unfinished == 0 and self._candidates):
            self._done = True
            if self._usage is not None:
                out.append(_usage(self._usage))
        return out

    def _not_object(self, data: str, event: str, frame: _Frame) -> JSONObject | None:
        """The chunk in `data` when the first decode gave none; None when there is none to read.

        Blank data is no chunk; what is not a JSON object is malformed (or a
        provider error in a list); the standard library has the last word.
        """
        if not data or data.isspace():
            return None
        try:
            chunk = load_json(data)
        except ValueError as exc:
            self._malformed(f"invalid JSON: {exc}", frame)
            return None
        if type(chunk) is dict:
            return chunk
        if type(chunk) is list and chunk and type(chunk[0]) is dict and "error" in chunk[0]:
            raise provider_error(chunk, data=data, event=event)
        self._malformed(f"a JSON {json_kind(chunk)}, not an object", frame)
        return None

    def _chunk_fields(self, chunk: JSONObject, has_candidates: bool, out: list[Delta]) -> None:
        for key in chunk:
            if key == "promptFeedback":
                self._prompt_feedback(chunk[key], has_candidates, out)
            elif key not in _CHUNK_KEYS:
                out.append(Metadata({key: chunk[key]}))  # a field rxstream does not know

    def _foreign(self, chunk: JSONObject, frame: _Frame) -> list[Delta]:
        for key in ("type", "object", "choices", "event", "message", "done"):
            if key in chunk:
                hint = chunk[key] if key in ("type", "object") else None
                what = f"{key!r}: {hint!r}" if isinstance(hint, str) else f"a {key!r} field"
                return self._malformed(
                    f"an event of another dialect ({what}), not a Gemini chunk", frame
                )
        return self._malformed(
            "no candidates, usageMetadata or promptFeedback: not a Gemini chunk", frame
        )

    def _ids(self, chunk: JSONObject, out: list[Delta]) -> None:
        rid, model = chunk.get("responseId"), chunk.get("modelVersion")
        opt_str(chunk, "responseId", "")
        opt_str(chunk, "modelVersion", "")
        data: JSONObject = {}
        if rid is not None and rid != self._id:
            data["id"] = self._id = rid
        if model is not None and model != self._model:
            data["model"] = self._model = model
        created = opt_str(chunk, "createTime", "")
        if created is not None and created != self._created:
            data["createTime"] = self._created = created
        if data:
            out.append(Metadata(data))

    def _prompt_feedback(self, feedback: JSON, has_candidates: bool, out: list[Delta]) -> None:
        if type(feedback) is not dict:
            raise ShapeError("promptFeedback", "an object", feedback)
        block = opt_str(feedback, "blockReason", "promptFeedback")
        out.append(Metadata({"promptFeedback": feedback}))
        self._answered = True
        if block and not has_candidates and not self._candidates:
            out.append(Finish(CONTENT_FILTER, 0, block))
            self._done = True

    def _candidate(self, candidate: JSONObject, n: int, out: list[Delta], frame: _Frame) -> None:
        choice = candidate.get("index", 0)
        if type(choice) is not int:
            if choice is not None:
                raise ShapeError(f"candidates[{n}].index", "an integer", choice)
            choice = 0
        state = self._candidates.get(choice)
        if state is None:
            state = self._candidates[choice] = _Candidate()
            self._unfinished += 1
        self._answered = True
        content = candidate.get("content")
        if content is not None:
            if type(content) is not dict:
                raise ShapeError(f"candidates[{n}].content", "an object", content)
            parts = content.get("parts")
            if parts:
                if type(parts) is not list:
                    raise ShapeError(f"candidates[{n}].content.parts", "an array", parts)
                if state.finished:
                    self._malformed(
                        f"candidate {choice} sent content after its finishReason", frame
                    )
                    return
                state.pending = None  # the answer goes on: that finishReason was not its end
                for j, part in enumerate(parts):
                    if type(part) is not dict:
                        raise ShapeError(f"candidates[{n}].content.parts[{j}]", "an object", part)
                    text = part.get("text")
                    size = len(part)
                    # The hot cases inline: a plain text part, a thought part.
                    if type(text) is str and size <= 2:
                        if size == 1:
                            if text:
                                state.texts.append(text)
                                out.append(_text(text, choice))
                            continue
                        if part.get("thought") is True:
                            if text:
                                out.append(_reasoning(text, choice))
                            continue
                    where = f"candidates[{n}].content.parts[{j}]"
                    self._part(part, state, choice, where, out, frame)
        if len(candidate) > (content is not None) + ("index" in candidate):
            self._candidate_fields(candidate, state, choice, f"candidates[{n}]", out, frame)

    def _part(
        self,
        part: JSONObject,
        state: _Candidate,
        choice: int,
        where: str,
        out: list[Delta],
        frame: _Frame,
    ) -> None:
        thought = part.get("thought")
        if thought is not None and type(thought) is not bool:
            raise ShapeError(f"{where}.thought", "a boolean", thought)
        signature = opt_str(part, "thoughtSignature", where)
        text = opt_str(part, "text", where)
        if text:
            if thought:
                out.append(_reasoning(text, choice))
            else:
                state.texts.append(text)
                out.append(_text(text, choice))
        call_index: int | None = None
        call = opt_object(part, "functionCall", where)
        if call is not None:
            call_index = self._function_call(
                call, state, choice, f"{where}.functionCall", out, frame
            )
        code = opt_object(part, "executableCode", where)
        if code is not None:
            call_id = opt_str(code, "id", f"{where}.executableCode")
            state.code_id = call_id
            state.code_open = True
            out.append(ServerToolCall(call_id, "code_execution", _without_id(code), choice, part))
        result = opt_object(part, "codeExecutionResult", where)
        if result is not None:
            call_id = opt_str(result, "id", f"{where}.codeExecutionResult")
            state.code_open = False
            out.append(
                ServerToolResult(
                    call_id if call_id is not None else state.code_id,
                    "code_execution",
                    _without_id(result),
                    choice,
                    part,
                )
            )
        tool = opt_object(part, "toolCall", where)
        if tool is not None:
            out.append(
                ServerToolCall(
                    opt_str(tool, "id", f"{where}.toolCall"),
                    opt_str(tool, "toolType", f"{where}.toolCall") or "tool",
                    tool.get("args"),
                    choice,
                    part,
                )
            )
        response = opt_object(part, "toolResponse", where)
        if response is not None:
            out.append(
                ServerToolResult(
                    opt_str(response, "id", f"{where}.toolResponse"),
                    opt_str(response, "toolType", f"{where}.toolResponse") or "tool",
                    response.get("response"),
                    choice,
                    part,
                )
            )
        if signature is not None:
            out.append(
                ReasoningState("thought_signature", signature, "", None, call_index, choice, part)
            )
        if not _PART_KEYS.issuperset(part):
            out.append(Metadata({"parts": [part]}, choice))

    def _function_call(
        self,
        call: JSONObject,
        state: _Candidate,
        choice: int,
        where: str,
        out: list[Delta],
        frame: _Frame,
    ) -> int | None:
        """Decode one `functionCall`; return the index of the call it belongs to (None if none)."""
        name = opt_str(call, "name", where)
        call_id = opt_str(call, "id", where)
        args = opt_object(call, "args", where)
        partial = opt_list(call, "partialArgs", where)
        more = call.get("willContinue")
        if more is not None and type(more) is not bool:
            raise ShapeError(f"{where}.willContinue", "a boolean", more)
        pieces = self._partial_args(partial, where) if partial else []
        if args is not None and partial:
            self._malformed(f"{where} has both args and partialArgs", frame)
            return None
        if name is not None:
            self._close_call(state, choice, out)
            index = state.calls
            state.calls += 1
            if args is not None:
                out.append(ToolCallDelta(index, _compact(args), call_id, name, choice))
            elif pieces or more:
                writer = ArgumentsWriter()
                text = self._write(writer, pieces, where, frame)
                if more or any(p[3] for p in pieces):
                    state.open_call, state.open_index = writer, index
                else:
                    text += writer.close()
                out.append(ToolCallDelta(index, text, call_id, name, choice))
            else:
                out.append(ToolCallDelta(index, "{}", call_id, name, choice))
            return index
        open_call = state.open_call
        if open_call is None:
            if not call:
                return None  # a stray terminator: the call it would end has ended
            self._malformed(f"{where} has no name and continues no streamed call", frame)
            return None
        index = state.open_index
        if args is not None:
            self._malformed(f"{where} brings args to a call whose arguments stream", frame)
            return index
        text = self._write(open_call, pieces, where, frame)
        if not more and not any(p[3] for p in pieces):
            text += open_call.close()
            state.open_call = None
        if text or call_id is not None:
            out.append(ToolCallDelta(index, text, call_id, None, choice))
        return index

    def _partial_args(
        self, partial: list[Any], where: str
    ) -> list[tuple[list[str | int] | str, JSON, bool, bool]]:
        """Each partial argument, shape checked: (segments or bad path, value, is_string, more)."""
        pieces: list[tuple[list[str | int] | str, JSON, bool, bool]] = []
        for k, arg in enumerate(partial):
            at = f"{where}.partialArgs[{k}]"
            if type(arg) is not dict:
                raise ShapeError(at, "an object", arg)
            path = arg.get("jsonPath")
            if type(path) is not str:
                raise ShapeError(f"{at}.jsonPath", "a string", path)
            more = arg.get("willContinue")
            if more is not None and type(more) is not bool:
                raise ShapeError(f"{at}.willContinue", "a boolean", more)
            value: JSON
            if (string := arg.get("stringValue")) is not None:
                if type(string) is not str:
                    raise ShapeError(f"{at}.stringValue", "a string", string)
                value, is_string = string, True
            elif (number := arg.get("numberValue")) is not None:
                if type(number) not in (int, float) or not math.isfinite(number):
                    raise ShapeError(f"{at}.numberValue", "a finite number", number)
                value, is_string = number, False
            elif (flag := arg.get("boolValue")) is not None:
                if type(flag) is not bool:
                    raise ShapeError(f"{at}.boolValue", "a boolean", flag)
                value, is_string = flag, False
            elif "nullValue" in arg:
                value, is_string = None, False
            else:
                continue  # no value: nothing to write
            if path == self._last_path:
                segments: list[str | int] | str = self._last_segments
            else:
                parsed = parse_path(path)
                if parsed is None:
                    segments = path  # reported when written, so that skipping drops it alone
                else:
                    segments = self._last_segments = parsed
                    self._last_path = path
            pieces.append((segments, value, is_string, bool(more)))
        return pieces

    def _write(
        self,
        writer: ArgumentsWriter,
        pieces: list[tuple[list[str | int] | str, JSON, bool, bool]],
        where: str,
        frame: _Frame,
    ) -> str:
        text = []
        for segments, value, is_string, _ in pieces:
            if isinstance(segments, str):
                self._malformed(f"{where}.partialArgs: {segments!r} is not a JSON path", frame)
                continue
            try:
                text.append(writer.write(segments, value, is_string))
            except PathError as exc:
                self._malformed(f"{where}.partialArgs: {format_path(segments)}: {exc}", frame)
        return "".join(text)

    def _close_call(self, state: _Candidate, choice: int, out: list[Delta]) -> None:
        writer = state.open_call
        if writer is not None:
            state.open_call = None
            out.append(ToolCallDelta(state.open_index, writer.close(), None, None, choice))

    def _candidate_fields(
        self,
        candidate: JSONObject,
        state: _Candidate,
        choice: int,
        where: str,
        out: list[Delta],
        frame: _Frame,
    ) -> None:
        grounding = candidate.get("groundingMetadata")
        if grounding is not None:
            if type(grounding) is not dict:
                raise ShapeError(f"{where}.groundingMetadata", "an object", grounding)
            if grounding:
                state.grounding = grounding
        cited = candidate.get("citationMetadata")
        if cited is not None:
            self._citation_sources(cited, state, f"{where}.citationMetadata")
        safety = candidate.get("safetyRatings")
        if safety is not None:
            state.safety = safety
        logprobs = candidate.get("logprobsResult")
        if logprobs is not None:
            out.append(Metadata({"logprobsResult": [logprobs]}, choice))
        for key in candidate:
            if key not in _CANDIDATE_KEYS:
                out.append(Metadata({key: candidate[key]}, choice))
        reason = opt_str(candidate, "finishReason", where)
        if reason is None:
            return
        if state.finished:
            self._malformed(f"candidate {choice} sent a second finishReason", frame)
            return
        if state.code_open:
            # Gemini says STOP on the chunk that starts a code run, then sends its
            # result and the rest of the answer with another finishReason: this one
            # ends the candidate only if nothing follows it (see `_end`).
            state.pending = (candidate, where)
            return
        self._finish_candidate(candidate, state, choice, where, reason, out)

    def _finish_candidate(
        self,
        candidate: JSONObject,
        state: _Candidate,
        choice: int,
        where: str,
        reason: str,
        out: list[Delta],
    ) -> None:
        self._close_call(state, choice, out)
        if state.grounding is not None or state.citations:
            out += _citations(state, choice, where)
        message = opt_str(candidate, "finishMessage", where)
        if message is not None:
            out.append(Metadata({"finishMessage": message}, choice))
        if state.safety is not None:
            out.append(Metadata({"safetyRatings": state.safety}, choice))
        out.append(Finish(_finish(reason, state.calls > 0), choice, reason))
        state.finished = True
        self._unfinished -= 1

    def _end(self) -> list[Delta]:
        """At the end of input, a finishReason held back for a code run is the end after all."""
        out: list[Delta] = []
        if not self._done:
            for choice, state in self._candidates.items():
                if state.pending is not None:
                    candidate, where = state.pending
                    state.pending = None
                    reason = opt_str(candidate, "finishReason", where) or ""
                    self._finish_candidate(candidate, state, choice, where, reason, out)
            if out and self._unfinished == 0:
                self._done = True
                if self._usage is not None:
                    out.append(_usage(self._usage))
        return out + super()._end()

    def _citation_sources(self, cited: JSON, state: _Candidate, where: str) -> None:
        if type(cited) is not dict:
            raise ShapeError(where, "an object", cited)
        key = "citationSources" if "citationSources" in cited else "citations"
        sources = opt_list(cited, key, where) or []
        for k, source in enumerate(sources):
            if type(source) is not dict:
                raise ShapeError(f"{where}.{key}[{k}]", "an object", source)
            if source not in state.citations:
                state.citations.append(source)


def _without_id(obj: JSONObject) -> JSONObject:
    return {k: v for k, v in obj.items() if k != "id"} if "id" in obj else obj


def _finish(reason: str, asked_for_calls: bool) -> str:
    if reason == "STOP":
        return TOOL_CALLS if asked_for_calls else STOP
    if reason == "MAX_TOKENS":
        return LENGTH
    if reason in _FILTERED:
        return CONTENT_FILTER
    return reason


def _usage(counts: JSONObject) -> Usage:
    where = "usageMetadata"
    prompt = opt_int(counts, "promptTokenCount", where)
    tool_use = opt_int(counts, "toolUsePromptTokenCount", where)
    candidates = opt_int(counts, "candidatesTokenCount", where)
    thoughts = opt_int(counts, "thoughtsTokenCount", where)
    return usage(
        (prompt or 0) + (tool_use or 0),
        (candidates or 0) + (thoughts or 0),
        total=opt_int(counts, "totalTokenCount", where),
        reasoning=thoughts,
        cached=opt_int(counts, "cachedContentTokenCount", where),
        raw=counts,
    )


class _Offsets:
    """UTF-8 byte offsets into a text, as character offsets (each byte read once per call)."""

    __slots__ = ("_encoded", "_text")

    def __init__(self, text: str) -> None:
        self._text = text
        self._encoded = b"" if text.isascii() else text.encode("utf-8")

    def convert(self, offsets: set[int]) -> dict[int, int]:
        if not self._encoded:
            size = len(self._text)
            return {b: b for b in offsets if 0 <= b <= size}
        encoded, out = self._encoded, {}
        at = chars = 0
        for b in sorted(offsets):
            if not 0 <= b <= len(encoded):
                continue
            # Every byte but a continuation byte starts a character.
            continuation = len(encoded[at:b].translate(None, _NOT_CONTINUATION))
            chars += b - at - continuation
            at = b
            out[b] = chars
        return out


def _span(
    obj: JSONObject, where: str, start_key: str, end_key: str
) -> tuple[int | None, int | None]:
    start = opt_int(obj, start_key, where)
    end = opt_int(obj, end_key, where)
    if end is not None and start is None:
        start = 0  # proto3 JSON leaves a zero start out
    return start, end


def _source(chunk: JSONObject, where: str) -> tuple[str | None, str | None, str | None]:
    """A grounding chunk's url, title and text, from whichever kind it is."""
    for kind in ("web", "retrievedContext", "maps", "image"):
        inner = opt_object(chunk, kind, where)
        if inner is not None:
            at = f"{where}.{kind}"
            return (
                opt_str(inner, "uri", at),
                opt_str(inner, "title", at),
                opt_str(inner, "text", at),
            )
    return None, None, None


def _citations(state: _Candidate, choice: int, where: str) -> list[Delta]:
    """The candidate's grounding and citation sources, with character offsets."""
    supports: list[tuple[JSONObject, JSONObject, int | None, int | None, str | None, list[int]]]
    supports = []
    chunks: list[JSONObject] = []
    grounding = state.grounding
    if grounding is not None:
        at = f"{where}.groundingMetadata"
        for k, chunk in enumerate(opt_list(grounding, "groundingChunks", at) or []):
            if type(chunk) is not dict:
                raise ShapeError(f"{at}.groundingChunks[{k}]", "an object", chunk)
            chunks.append(chunk)
        for k, support in enumerate(opt_list(grounding, "groundingSupports", at) or []):
            sat = f"{at}.groundingSupports[{k}]"
            if type(support) is not dict:
                raise ShapeError(sat, "an object", support)
            segment = opt_object(support, "segment", sat) or {}
            start, end = _span(segment, f"{sat}.segment", "startIndex", "endIndex")
            indices = opt_list(support, "groundingChunkIndices", sat) or []
            for i, index in enumerate(indices):
                if type(index) is not int or not 0 <= index < len(chunks):
                    raise ShapeError(
                        f"{sat}.groundingChunkIndices[{i}]",
                        f"an index into the {len(chunks)} grounding chunks",
                        index,
                    )
            text = opt_str(segment, "text", f"{sat}.segment")
            supports.append((support, segment, start, end, text, indices))
    sources: list[tuple[JSONObject, int | None, int | None]] = []
    for k, source in enumerate(state.citations):
        start, end = _span(source, f"{where}.citationMetadata[{k}]", "startIndex", "endIndex")
        sources.append((source, start, end))
    wanted = {o for s in supports for o in s[2:4] if o is not None}
    wanted.update(o for s in sources for o in s[1:3] if o is not None)
    chars = _Offsets("".join(state.texts)).convert(wanted) if wanted else {}
    out: list[Delta] = []
    cited: set[int] = set()
    for support, _, start, end, text, indices in supports:
        a = None if start is None else chars.get(start)
        b = None if end is None else chars.get(end)
        if not indices:
            out.append(
                Citation("grounding", None, None, text, a, b, choice, {"groundingSupport": support})
            )
        for index in indices:
            cited.add(index)
            url, title, _ = _source(chunks[index], f"groundingChunks[{index}]")
            raw = {"groundingSupport": support, "groundingChunk": chunks[index]}
            out.append(Citation("grounding", url, title, text, a, b, choice, raw))
    for index, chunk in enumerate(chunks):
        if index not in cited:
            url, title, text = _source(chunk, f"groundingChunks[{index}]")
            raw = {"groundingChunk": chunk}
            out.append(Citation("grounding", url, title, text, None, None, choice, raw))
    for source, start, end in sources:
        out.append(
            Citation(
                "citation",
                opt_str(source, "uri", "citationMetadata"),
                opt_str(source, "title", "citationMetadata"),
                None,
                None if start is None else chars.get(start),
                None if end is None else chars.get(end),
                choice,
                source,
            )
        )
    if grounding is not None:
        out.append(Metadata({"groundingMetadata": grounding}, choice))
    return out


# --------------------------------------------------------------------------- renderer

#: The normalised finish reasons as Gemini words (a provider word passes as it is).
_WORDS = {STOP: "STOP", TOOL_CALLS: "STOP", LENGTH: "MAX_TOKENS", CONTENT_FILTER: "SAFETY"}
#: What Gemini's enum words look like (another dialect's raw word is not sent as one).
_WORD = re.compile(r"[A-Z][A-Z_]*")


def _dumps(value: JSON) -> str:
    # The real API writes ": " after keys and nothing after commas.
    return json.dumps(value, separators=(",", ": "), ensure_ascii=False)


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
    order with their arguments as compact JSON; a finish of `"tool_calls"`
    without calls comes back as `"stop"`; a choice that never finished ends
    with `STOP`; with `partial_args=True` empty arrays and objects nested in
    the arguments vanish (no path leads to them). Citations come back in the
    order grounding spans, grounding sources without a span, `"citation"`
    sources. Any other citation kind is sent as grounding.

    Args:
        model: the `modelVersion` written into every chunk.
        id: the `responseId` written into every chunk.
        partial_args: send tool-call arguments as Vertex streamed arguments.

    Raises:
        ValueError: (from `feed`/`close`) tool-call arguments that are not a
            JSON object, which Gemini cannot send.

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
        self._model = model
        self._id = id
        self._partial = partial_args
        self._tools = ToolCallAccumulator()
        self._choices: dict[int, _Rendered] = {}
        self._usage: Usage | None = None
        self._closed = False

    def feed(self, delta: Delta) -> list[Wire]:
        """The chunks `delta` becomes (often none: calls and finishes wait for their end)."""
        self._check_open()
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
                if name == "code_execution" and type(value) is dict:
                    part: JSONObject = {"executableCode": _with_id(value, call_id)}
                else:
                    part = {"toolCall": {"id": call_id, "toolType": name, "args": value}}
                return [self._chunk(choice, [part])]
            case ServerToolResult(call_id=call_id, name=name, content=value, choice=choice):
                self._choice(choice)
                if name == "code_execution" and type(value) is dict:
                    part = {"codeExecutionResult": _with_id(value, call_id)}
                else:
                    part = {"toolResponse": {"id": call_id, "toolType": name, "response": value}}
                return [self._chunk(choice, [part])]
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
        out.append(SSEFrame(_dumps(chunk)))
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
        return [SSEFrame(_dumps({"error": body}))]

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
            _dumps({"candidates": [candidate], "modelVersion": self._model, "responseId": self._id})
        )

    def _calls(self, choice: int, calls: list[Any]) -> list[Wire]:
        if not calls:
            return []
        signatures = self._choice(choice).signatures
        parts: list[JSONObject] = []
        out: list[Wire] = []
        for call in sorted(calls, key=lambda c: c.index):
            args = _arguments(call.arguments, call.name)
            head: JSONObject = {} if call.id is None else {"id": call.id}
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
            or _finish(finish.raw, False) == CONTENT_FILTER
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
            and _finish(finish.raw, finish.reason == TOOL_CALLS) == finish.reason
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


def _arguments(text: str, name: str | None) -> JSONObject:
    if not text.strip():
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if type(value) is not dict:
        raise ValueError(
            f"Gemini sends tool-call arguments as a JSON object; the call {name!r} has "
            f"{text[:80]!r}"
        )
    return value


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


#: The `status` Google gives each HTTP status.
_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "ABORTED",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    500: "INTERNAL",
    501: "NOT_IMPLEMENTED",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


def http_error(
    status: int, message: str, *, type: str | None = None, code: str | int | None = None
) -> tuple[str, bytes]:
    """An HTTP error answer in Google's shape: `[{"error": {"code", "message", "status"}}]`.

    Pretty-printed and wrapped in a one-element list, as the streaming
    endpoints send it. `code` is the HTTP status unless an integer is given;
    `type` is the `status` word (by default the one Google gives `status`);
    a string `code` goes in an `ErrorInfo` detail as its `reason`.

    Returns:
        (content type, body).

    >>> http_error(429, "Quota exceeded")[1].decode().split()[:6]
    ['[', '{', '"error":', '{', '"code":', '429,']
    """
    error: JSONObject = {
        "code": code if isinstance(code, int) and not isinstance(code, bool) else status,
        "message": message,
        "status": type or _STATUS.get(status, "UNKNOWN"),
    }
    if isinstance(code, str):
        error["details"] = [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": code}]
    body = json.dumps([{"error": error}], indent=2, ensure_ascii=False) + "\n"
    return "application/json; charset=UTF-8", body.encode("utf-8")

"""The `"gemini"` dialect: the decoder (wire events -> deltas).

See the package docstring for the wire format and the rules.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, ClassVar

from ...._fast import constructor
from ...._typed import typed
from ....models import (
    JSON,
    Delta,
    Finish,
    JSONObject,
    Metadata,
    ReasoningDelta,
    ReasoningState,
    SSEFrame,
    TextDelta,
    ToolCallDelta,
)
from ...pipeline import Handoff
from ...provider_errors import provider_error
from .._base import (
    CONTENT_FILTER,
    DialectDecoder,
    OnMalformed,
    Reader,
    ShapeError,
    foreign,
    json_kind,
    load_json,
    looks_like,
    opt_list,
    opt_object,
    opt_str,
)
from .._json_paths import ArgumentsWriter, PathError, format_path, parse_path
from .._shared import Budget, Template, dumps, load_with
from .citations import _citations
from .fields import finish_reason, server_parts, usage_of

__all__ = ["GeminiDecoder"]

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


#: A frame, or the data of a `"message"` frame handed over by the parser (see `_take`).
_Frame = SSEFrame | str

#: The keys of the usual chunk (`_reader`), of its candidate.
_IDS_AND_CANDIDATES = frozenset(
    {"candidates", "usageMetadata", "modelVersion", "responseId", "createTime"}
)
#: The counts that make a `usageMetadata` the stream's usage (another object is left alone).
_USAGE_COUNTS = frozenset({"totalTokenCount", "promptTokenCount", "candidatesTokenCount"})


def _is_usage(counts: object) -> bool:
    """Whether a chunk's `usageMetadata` is the stream's usage so far: the one rule of every path.

    It is when it holds a token count; Vertex sends `{"trafficType": ...}`
    before it has any, and a chunk may send `{}` after them: those leave the
    usage so far as it was.
    """
    return type(counts) is dict and not _USAGE_COUNTS.isdisjoint(counts)


#: The counts of `usageMetadata` that change from chunk to chunk (Gemini sends the
#: counts so far with every chunk): the holes of a learnt chunk's `Template`.
_COUNTS: dict[str, type] = dict.fromkeys(
    (
        "promptTokenCount",
        "candidatesTokenCount",
        "totalTokenCount",
        "thoughtsTokenCount",
        "cachedContentTokenCount",
        "toolUsePromptTokenCount",
    ),
    int,
)
_CONTENT_AND_INDEX = frozenset({"content", "index"})

_text: Callable[[str, int], TextDelta] = constructor(TextDelta)
_reasoning: Callable[[str, int], ReasoningDelta] = constructor(ReasoningDelta)


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


#: What `_usual_typed` and `_usual_dict` found of a usual chunk (see `_usual_typed`).
_Usual = tuple[_Candidate, int, str, bool, bool]

#: A chunk but for its one part's text (see `GeminiDecoder._learn`): its
#: `Template`, whether its `usageMetadata` is the usage (`_is_usage`: then
#: its counts are holes, read when needed), the candidate's state and index,
#: and whether the part is a thought.
_Skeleton = tuple[Template, bool, _Candidate, int, bool]


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
    #: What it takes, fused (`Handoff`): a `"message"` frame's data as a bare `str`
    #: from an `SSEParser` in front; any other frame whole.
    takes = Handoff.STRINGS
    gives_deltas_only = True

    def __init__(self, *, on_malformed: OnMalformed = "raise") -> None:
        super().__init__(on_malformed=on_malformed)
        self._candidates: dict[int, _Candidate] = {}
        self._unfinished = 0  # candidates seen without their finishReason yet
        self._usage: JSONObject | None = None
        # A chunk a template read whose `usageMetadata` is the usage, not read yet
        # (see `_usage_so_far`): a later chunk's usage makes reading it needless.
        self._counted: str | None = None
        self._id: JSON = None
        self._model: JSON = None
        self._created: JSON = None
        self._last_path = ""
        self._last_segments: list[str | int] = []
        self._strings = False  # take a str as a "message" frame's data (see _take)
        # The last usual chunk the hot reader read, learnt (see `_learn`); None once
        # any other chunk was read (what it stood for may have changed).
        self._skeleton: _Skeleton | None = None
        self._budget = Budget()  # how often chunks are learnt (see `_learn`)
        # A chunk the hot reader read but found unusual, for `_decode`: the
        # chunk's str, its typed read (or None), the object it was read as (or None).
        self._held: tuple[str, Any, JSONObject | None] | None = None
        # The typed decoding of the `fast` extra (rxstream._typed.gemini), or None.
        module = typed("gemini")
        self._read: Callable[[str], Any] | None = None if module is None else module.decode

    def _take(self, mode: Handoff) -> bool:
        """Fusion hook (`rxstream.core.pipeline`): take a `"message"` frame's data as a `str`.

        The decoder reads nothing of a Gemini frame but its data, so an
        `SSEParser` fused in front may hand that over (`mode` is `STRINGS`)
        without building an `SSEFrame`. Only while nothing was fed; returns
        whether it takes them.
        """
        if mode is not Handoff.STRINGS or self._items or self._state != "open":
            return False
        self._strings = True
        return True

    def _reader(self, out: list[Delta]) -> Reader | None:
        """The usual chunk's reader (see `DialectDecoder._reader`), fused behind the SSE parser.

        The usual chunk (one candidate going on with one text or thought
        part, the same ids as before, the usage counts so far) is read in
        one of three ways:

        - the chunk is the last such chunk but for its text and its usage
          counts (a `Template`, see `_learn`): one compiled pattern checks
          the chunk and gives that string (read with `json.decoder.scanstring`,
          what `json.loads` reads strings with, where it has an escape), and
          the last such chunk's usage is read whole when it is needed (see
          `_usage_so_far`);
        - decoded into the typed `rxstream._typed.gemini` types (`_usual_typed`);
        - decoded to dicts (the standard library, `_usual_dict`).

        A chunk read but not usual is held for `_decode`, which reads it on
        without decoding its JSON again.
        """
        if not self._strings:
            return None
        append, usual = out.append, self._usual

        def usual_chunks(items: list[Any], start: int) -> int:
            for at in range(start, len(items)):
                item = items[at]
                if type(item) is not str:
                    return at
                skeleton = self._skeleton
                if skeleton is not None:
                    template, counts, state, choice, thought = skeleton
                    text = template.read(item)
                    if text is not None and not state.finished:
                        state.pending = None
                        if text:
                            if thought:
                                append(_reasoning(text, choice))
                            else:
                                state.texts.append(text)
                                append(_text(text, choice))
                        if counts:
                            # Its `usageMetadata` is the usage so far, read when it is needed.
                            self._counted = item
                        continue
                if not usual(item, out):
                    return at
            return len(items)

        return usual_chunks

    def _usual(self, item: str, out: list[Delta]) -> bool:
        """The usual chunk read whole, typed or as a dict, and learnt (False: not one).

        A chunk read but not usual is held for `_decode` (`_held`).
        """
        ids = (self._id, self._model, self._created)
        read = self._read
        if read is not None:
            try:
                chunk = read(item)
            except ValueError:  # not a chunk the types know: `_general` reads it
                self._held = (item, None, None)
                return False
            found = self._usual_typed(chunk, ids, out)
            if found is None:
                self._held = (item, chunk, None)
                return False
        else:
            try:
                data = self._loads(item)
            except (ValueError, TypeError, RecursionError):
                return False
            if type(data) is not dict:
                return False
            found = self._usual_dict(data, ids, out)
            if found is None:
                self._held = (item, None, data)
                return False
        self._skeleton = self._learn(item, *found) or self._skeleton
        return True

    def _take_usage(self, counts: JSON) -> bool:
        """Take a chunk's `usageMetadata` as the usage so far if it is one (`_is_usage`)."""
        if not _is_usage(counts):
            return False
        self._usage, self._counted = counts, None
        return True

    def _usage_so_far(self) -> JSONObject | None:
        """The usage so far: the last `usageMetadata` taken, or a template-read chunk's after it."""
        if self._counted is not None:
            self._usage, self._counted = self._counts(self._counted), None
        return self._usage

    def _counts(self, item: str) -> JSONObject:
        """The `usageMetadata` of a chunk a template read whose counts are holes (an object).

        Read as the plain path reads it: the standard library has the last
        word on what msgspec refuses (a lone surrogate in the text).
        """
        chunk: Any = load_with(item, self._fast)
        counts: JSONObject = chunk["usageMetadata"]
        return counts

    def _usual_typed(
        self, chunk: Any, ids: tuple[JSON, JSON, JSON], out: list[Delta]
    ) -> _Usual | None:
        """A typed chunk's deltas into `out` if it is the usual one; None (nothing done) if not.

        Returns (the candidate's state, its index, the text of its one part
        or "" when it has none or several, whether that is a thought, whether
        its `usageMetadata` is the usage: see `_is_usage`).
        """
        candidates = chunk.candidates
        if (
            candidates is None
            or len(candidates) != 1
            or chunk.response_id != ids[0]
            or chunk.model_version != ids[1]
            or chunk.create_time != ids[2]
        ):
            return None
        candidate = candidates[0]
        choice = candidate.index or 0
        state = self._candidates.get(choice)
        if candidate.finish_reason is not None or state is None or state.finished:
            return None
        content = candidate.content
        found: tuple[_Candidate, int, str, bool] = (state, choice, "", False)
        if content is not None and content.parts:
            state.pending = None
            for part in content.parts:
                text = part.text
                if text:
                    if part.thought:
                        out.append(_reasoning(text, choice))
                    else:
                        state.texts.append(text)
                        out.append(_text(text, choice))
            if len(content.parts) == 1:
                found = (state, choice, content.parts[0].text, content.parts[0].thought)
        counts = chunk.usage_metadata
        return (*found, self._take_usage(counts))

    def _usual_dict(
        self, chunk: JSONObject, ids: tuple[JSON, JSON, JSON], out: list[Delta]
    ) -> _Usual | None:
        """`_usual_typed` for a chunk decoded to dicts (`_general`'s and `_candidate`'s rules)."""
        if (
            not _IDS_AND_CANDIDATES.issuperset(chunk)
            or chunk.get("responseId") != ids[0]
            or chunk.get("modelVersion") != ids[1]
            or chunk.get("createTime") != ids[2]
        ):
            return None
        candidates = chunk.get("candidates")
        if type(candidates) is not list or len(candidates) != 1:
            return None
        counts = chunk.get("usageMetadata")
        if counts is not None and type(counts) is not dict:
            return None
        candidate = candidates[0]
        if type(candidate) is not dict or not _CONTENT_AND_INDEX.issuperset(candidate):
            return None
        choice = candidate.get("index")
        if choice is None:
            choice = 0
        elif type(choice) is not int:
            return None
        state = self._candidates.get(choice)
        content = candidate.get("content")
        if state is None or state.finished or type(content) is not dict:
            return None
        parts = content.get("parts")
        if type(parts) is not list or len(parts) != 1:
            return None
        part = parts[0]
        text = part.get("text") if type(part) is dict else None
        if type(text) is not str:
            return None
        if len(part) == 1:
            thought = False
        elif len(part) == 2 and part.get("thought") is True:
            thought = True
        else:
            return None
        state.pending = None
        if text:
            if thought:
                out.append(_reasoning(text, choice))
            else:
                state.texts.append(text)
                out.append(_text(text, choice))
        return (state, choice, text, thought, self._take_usage(counts))

    def _learn(
        self,
        item: str,
        state: _Candidate,
        choice: int,
        text: str,
        thought: bool,
        counted: bool,
    ) -> _Skeleton | None:
        """The chunk `item` (its one part holding `text`) learnt, or None.

        A chunk is learnt as a `Template` of the part's JSON string, whose
        holes are the usage counts it has (each written once, an integer): a
        later chunk made of the same text around another string and other
        counts is the same chunk with another text, so the hot reader reads only
        that string. Only for a chunk that says so beyond doubt: no escape
        outside the string (so no key spelled in two ways, no key twice
        unseen), the key `"text"` once, and the string there is the text read.
        As often as the `Budget` allows. `counted`: its `usageMetadata` was
        the usage (`_is_usage`), so a later one filling in the holes is too
        (it has the same keys); else a later one is not either.
        """
        if not text or not self._budget.take():
            return None
        template = Template.learn(item, "text", text, _COUNTS)
        if template is None:
            return None
        return (template, counted, state, choice, thought)

    def _read_held(self, item: str, chunk: Any, parsed: JSONObject | None) -> list[Delta]:
        """The deltas of a chunk the hot reader read but found unusual (see `_reader`).

        `chunk`: its typed read, None when that failed (or there is none: the
        standard library); `parsed`: the object the standard library read it as.
        """
        if chunk is not None:
            got = self._typed(chunk)
            if got is not None:
                return got
        if parsed is not None:
            return self._general_read(parsed, item, "message", item)
        return self._general(item, "message", item)

    def _decode(self, frame: _Frame) -> list[Delta]:
        self._skeleton = None  # what it stood for may change
        held, self._held = self._held, None
        if held is not None and held[0] is frame:
            return self._read_held(*held)
        if type(frame) is SSEFrame:
            data, event = frame.data, frame.event
        elif self._strings and type(frame) is str:
            data, event = frame, "message"  # from the parser fused with this decoder
        else:
            raise TypeError(f"the gemini decoder takes SSEFrame items, got {type(frame).__name__}")
        read = self._read
        if read is not None and type(data) is str:
            try:
                typed_chunk = read(data)
            except ValueError:  # msgspec's DecodeError: not a chunk its types know
                pass
            else:
                got = self._typed(typed_chunk)
                if got is not None:
                    return got
        return self._general(data, event, frame)

    def _general(self, data: str, event: str, frame: _Frame) -> list[Delta]:
        """The deltas of one frame's data, decoded to dicts (every chunk, every rule)."""
        try:
            chunk = self._loads(data)
        except (ValueError, TypeError, RecursionError):
            chunk = None
        return self._general_read(chunk, data, event, frame)

    def _general_read(self, chunk: JSON, data: str, event: str, frame: _Frame) -> list[Delta]:
        """`_general` once `data` was read (`chunk`: what the first loader made of it, or None)."""
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
            return self._not_gemini(frame)
        counts = chunk.get("usageMetadata")
        if counts is not None:
            if type(counts) is not dict:
                raise ShapeError("usageMetadata", "an object", counts)
            self._take_usage(counts)
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
            if (usage := self._usage_so_far()) is not None:
                out.append(usage_of(usage))
        return out

    def _typed(self, chunk: Any) -> list[Delta] | None:
        """The deltas of a chunk decoded into `rxstream._typed.gemini` types; None: not here.

        The rules are `_decode`'s, for the chunks the types know: candidates
        of text and thought parts, a `finishReason`, usage and ids. None
        (before anything changed) where the general path has more to say:
        no candidates, a candidate that would break a rule (content or a
        second finishReason after its finish), a finish held for a code run,
        one index twice in a chunk.
        """
        candidates = chunk.candidates
        if candidates is None:
            return None
        states = self._candidates
        if len(candidates) > 1 and len({c.index or 0 for c in candidates}) < len(candidates):
            return None
        for candidate in candidates:
            state = states.get(candidate.index or 0)
            if state is not None and (state.finished or state.code_open):
                content = candidate.content
                if candidate.finish_reason is not None or (
                    state.finished and content is not None and content.parts
                ):
                    return None
        out: list[Delta] = []
        for n, candidate in enumerate(candidates):
            choice = candidate.index or 0
            state = states.get(choice)
            if state is None:
                state = states[choice] = _Candidate()
                self._unfinished += 1
            self._answered = True
            content = candidate.content
            if content is not None and content.parts:
                state.pending = None
                for part in content.parts:
                    text = part.text
                    if text:
                        if part.thought:
                            out.append(_reasoning(text, choice))
                        else:
                            state.texts.append(text)
                            out.append(_text(text, choice))
            reason = candidate.finish_reason
            if reason is not None:
                self._finish_typed(state, choice, f"candidates[{n}]", reason, out)
        counts = chunk.usage_metadata
        self._take_usage(counts)
        rid, model, created = chunk.response_id, chunk.model_version, chunk.create_time
        if rid != self._id or model != self._model or created != self._created:
            data: JSONObject = {}
            if rid is not None and rid != self._id:
                data["id"] = self._id = rid
            if model is not None and model != self._model:
                data["model"] = self._model = model
            if created is not None and created != self._created:
                data["createTime"] = self._created = created
            if data:
                out.append(Metadata(data))
        if self._unfinished == 0 and states:
            self._done = True
            if (usage := self._usage_so_far()) is not None:
                out.append(usage_of(usage))
        return out

    def _finish_typed(
        self, state: _Candidate, choice: int, where: str, reason: str, out: list[Delta]
    ) -> None:
        """`_finish_candidate` for a typed candidate (which has no finishMessage)."""
        self._close_call(state, choice, out)
        if state.grounding is not None or state.citations:
            out += _citations(state, choice, where)
        if state.safety is not None:
            out.append(Metadata({"safetyRatings": state.safety}, choice))
        out.append(Finish(finish_reason(reason, state.calls > 0), choice, reason))
        state.finished = True
        self._unfinished -= 1

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

    def _not_gemini(self, frame: _Frame) -> list[Delta]:
        what = "no candidates, usageMetadata or promptFeedback: not a Gemini chunk"
        # A bare str is a "message" frame's data (from the fused parser), not an NDJSON line.
        other = foreign(SSEFrame(frame) if type(frame) is str else frame, self.dialect)
        return self._malformed(what if other is None else looks_like(what, other), frame)

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
            if parts is not None and type(parts) is not list:
                # Falsy too: `{}`, `0`, `""`, `false` are no "no parts" (that is `[]`).
                raise ShapeError(f"candidates[{n}].content.parts", "an array", parts)
            if parts:
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
        if text is None and "text" in part:
            # Missing: a part of another kind; null: a text part without its text.
            raise ShapeError(f"{where}.text", "a string", None)
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
        server_parts(part, state, choice, where, out)
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
                out.append(ToolCallDelta(index, dumps(args), call_id, name, choice))
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
        out.append(Finish(finish_reason(reason, state.calls > 0), choice, reason))
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
                if (usage := self._usage_so_far()) is not None:
                    out.append(usage_of(usage))
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

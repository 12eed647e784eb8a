"""Chat chunks to flat delta events, in wire order, checking every field read.

Input: `ChatChunk` items (deltas fed in pass through unchanged, so the machine
composes in any order). Output: `TextDelta`, `ReasoningDelta`, `RefusalDelta`,
`ToolCallDelta`, `Finish`, `Usage`, `Citation` and `Metadata`, each with the
`.choice` it belongs to.

Invariants:

- Choices are handled in the order the chunk lists them. Within one choice the
  order is logprobs (a `Metadata`), reasoning, text, citations, refusal, tool
  calls, then `Finish`; a chunk's sources (Perplexity) and then its `Usage`
  come after all its choices.
- Every field this module knows is checked for its JSON type, and a wrong one
  is `MalformedChunkError` naming its path (`choices[0].delta.content is a
  JSON number, not a string, an array or null`): nothing is skipped in
  silence. `null` stands for "absent" wherever a field may be absent, missing
  fields are fine, and fields this module does not know are left alone (they
  stay in `ChatChunk.raw`).
- Empty strings give no delta (an empty `finish_reason` is no finish either).
- A `finish_reason` repeated for the same choice with the same reason gives one
  `Finish`; a different reason gives another one.
- Usage is cumulative on the wire (some providers repeat it on every chunk), so a
  `Usage` is emitted only when it differs from the previous one: the last one
  wins and nothing is ever summed.

The fields read, and their JSON types (`null` is allowed wherever a field
may be absent, that is everywhere but in the items of an array):

- `id`, `model`: strings, given as one `Metadata({"id", "model"})` by the
  first chunk that names them, and again only by a chunk that changes one
  (before that chunk's other deltas);
- `choices`: an array of objects;
- `choices[i].index`: an integer (null counts as 0);
- `choices[i].delta`: an object; `choices[i].finish_reason`: a string;
- `choices[i].text` (legacy completions, read only without a `delta`): a string;
- `choices[i].logprobs`: an object whose `content` and `refusal` are arrays of
  objects (`token` a string, `logprob` a number, `bytes` an array of
  integers, `top_logprobs` an array of such objects), given as one
  `Metadata({"logprobs": [...], "refusal_logprobs": [...]})` of the
  non-empty ones, the entries as they came (so `Message.metadata["logprobs"]`
  is every content entry, in order);
- `delta.role`, `.refusal`, `.reasoning_content`, `.reasoning`: strings;
- `delta.content`: a string, or an array of parts (Mistral): strings, or
  objects with a string `type` (an object without one is malformed): `"text"`
  (with a string `text`), `"thinking"` (with a `thinking` that is a string or
  such an array of parts), or another
  kind (images, references: left alone);
- `delta.reasoning_details`: an array of objects with string `type`, `text`
  and `summary`;
- `delta.annotations` (OpenAI's search models): an array of objects with a
  string `type`, whose string `url`, `title` and integer `start_index`,
  `end_index` sit in an object under the type's name (`url_citation`) or
  beside it;
- `citations` (Perplexity, on every chunk): an array of strings (addresses)
  or objects; `search_results`: an array of objects with string `url` and
  `title` (each address gives one `Citation`, the first time it comes);
- `delta.tool_calls`: an array of objects: `index` an integer, `id` and
  `type` strings, `function` an object whose `name` is a string and whose
  `arguments` are a string or an object (sent on as compact JSON text);
  the legacy `delta.function_call` is such a `function` object;
- `usage` (or Groq's `x_groq.usage`, `x_groq` being an object): an object whose
  `prompt_tokens`, `completion_tokens`, `total_tokens`, `reasoning_tokens`
  and `prompt_cache_hit_tokens` are integers, and whose
  `completion_tokens_details` and `prompt_tokens_details` are objects with
  integer `reasoning_tokens`, `cached_tokens` and `cache_write_tokens`.

Follows the OpenAI `chat.completion.chunk` shape and the provider variations
the recordings in tests/data show (reasoning fields, content arrays, legacy
`function_call` and completions `text`; tests/data/PROVENANCE.md says which
provider shows what).
"""

from __future__ import annotations

import json
import reprlib
from collections.abc import Callable
from typing import NoReturn

from ...._fast import constructor
from ....errors import MalformedChunkError
from ....models import (
    JSON,
    Citation,
    Delta,
    Finish,
    JSONObject,
    Metadata,
    ReasoningDelta,
    RefusalDelta,
    TextDelta,
    ToolCallDelta,
    Usage,
)
from .._shared import ShapeError

__all__ = ["LOGPROBS", "TOO_DEEP", "ChunkReader", "chunk_text", "parse_usage"]

_text: Callable[[str, int], TextDelta] = constructor(TextDelta)
_reasoning: Callable[[str, int], ReasoningDelta] = constructor(ReasoningDelta)
_tool_call: Callable[[int | None, str, str | None, str | None, int], ToolCallDelta] = constructor(
    ToolCallDelta
)


_STRING = "a string or null"
_INTEGER = "an integer or null"
_OBJECT = "an object or null"
_ARRAY = "an array or null"

#: A delta's fields as `ChunkReader._fields` reads them: content, reasoning (a
#: string), reasoning_details, refusal (a string), tool_calls, function_call, annotations.
_Fields = tuple[JSON, str | None, JSON, str | None, JSON, JSON, JSON]

#: The chunk-level fields read after the choices (one test tells a chunk without them).
_CHUNK_FIELDS = frozenset({"search_results", "citations", "usage", "x_groq"})

#: A choice's `logprobs` lists, and the `Metadata` key each one's entries go under.
LOGPROBS = (("content", "logprobs"), ("refusal", "refusal_logprobs"))

#: The reason of the `MalformedChunkError` for JSON nested past Python's recursion limit.
TOO_DEEP = "JSON nested deeper than the decoder allows"


def chunk_text(raw: JSONObject) -> str:
    """The JSON text of a decoded chunk, for the message of an error about it.

    Used where the text the chunk was decoded from is not at hand (a
    `ChatChunk` built in code); never raises.
    """
    try:
        return json.dumps(raw, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError, RecursionError):
        # Too deep (or not JSON at all): a repr that stops a few levels down.
        return reprlib.repr(raw)


class ChunkReader:
    """Read the deltas out of decoded chat chunks, checking each field it reads.

    The one copy of the chunk-to-delta rules: `DeltaDecoder`, `ChunkDecoder`
    (which checks every chunk it passes on) and the machines that take
    chunks all read through one. Its state is what a stream needs beyond one
    chunk: the choices named so far, the last finish reason and the first
    role of each, and the last `Usage`.

    Attributes:
        seen: the indexes of every choice any chunk named.
        finished: each finished choice's last (non-empty) finish reason.
        roles: each choice's first non-empty `delta.role`.
        usage: the last `Usage` emitted.
        cited: the addresses of the chunk-level sources (Perplexity's
            `citations`, `search_results`) emitted so far.

    >>> reader, out = ChunkReader(), []
    >>> reader.read({"choices": [{"delta": {"content": "Hi"}, "finish_reason": "stop"}]}, out)
    True
    >>> out
    [TextDelta(text='Hi', choice=0), Finish(reason='stop', choice=0, raw='stop')]
    """

    __slots__ = (
        "cited",
        "finished",
        "id",
        "last_id",
        "last_model",
        "model",
        "roles",
        "seen",
        "usage",
    )

    def __init__(self) -> None:
        self.seen: set[int] = set()
        self.cited: set[str] = set()
        self.finished: dict[int, str] = {}
        self.roles: dict[int, str] = {}
        self.usage: Usage | None = None
        self.id: str | None = None
        self.model: str | None = None
        # The `id` and `model` of the last chunk `identify` read, as they came
        # (null and "" too): a chunk with the same two needs no second look.
        self.last_id: JSON = None
        self.last_model: JSON = None

    def identify(self, id: JSON, model: JSON, out: list[Delta]) -> None:
        """Note a chunk's `id` and `model`; a `Metadata` of them when they differ from the last.

        `read` calls it for a chunk whose `id` or `model` differs from the last
        chunk's (`last_id`, `last_model`), the typed reading likewise: the
        first chunk that names them gives one `Metadata`, and so does a chunk
        that changes either (a chunk without them, like a usage chunk, or with
        empty ones, changes nothing).

        Raises:
            ShapeError: `id` or `model` is not a string (nor null).
        """
        if id is not None and type(id) is not str:
            raise ShapeError("id", _STRING, id)
        if model is not None and type(model) is not str:
            raise ShapeError("model", _STRING, model)
        self.last_id, self.last_model = id, model
        data: JSONObject = {}
        # An empty string says no more than null (Ollama's OpenAI API sends `"id": ""`).
        if id and id != self.id:
            data["id"] = self.id = id
        if model and model != self.model:
            data["model"] = self.model = model
        if data:
            out.append(Metadata(data))

    def read(self, raw: JSONObject, out: list[Delta]) -> bool:
        """Append the deltas of one decoded chunk to `out`.

        Returns:
            Whether the chunk has a `choices` field (not null): a chunk without
            one may be an error report in disguise, which the caller checks.

        Raises:
            ShapeError: a field has the wrong JSON type; `out` and the state
                may hold part of the chunk (the caller fails, or checked the
                chunk with a fresh reader first).
            RecursionError: the content parts or the tool-call arguments nest
                deeper than Python's recursion limit.
        """
        # The hot path of the whole pipeline: each field is read once and
        # checked with one `type(x) is ...` test, messages are built only on
        # the way to an error, and the usual delta (one piece of text) is read
        # here, inline; any other delta, the finish and the chunk-level fields
        # each take a call of their own.
        choices = raw.get("choices")
        seen = self.seen
        id, model = raw.get("id"), raw.get("model")
        if id != self.last_id or model != self.last_model:
            self.identify(id, model, out)  # once a stream, as a rule: the response's id and model
        if choices is not None:
            if type(choices) is not list:
                raise ShapeError("choices", _ARRAY, choices)
            # Counted by hand: an `enumerate` costs an object per chunk.
            i = -1
            for choice in choices:
                i += 1
                if type(choice) is not dict:
                    raise ShapeError(f"choices[{i}]", "an object", choice)
                index = choice.get("index")
                if type(index) is int:
                    n: int = index
                elif index is None:
                    n = 0
                else:
                    raise ShapeError(f"choices[{i}].index", _INTEGER, index)
                if n not in seen:
                    seen.add(n)
                logprobs = choice.get("logprobs")
                if logprobs is not None:
                    _logprobs(logprobs, i, n, out)
                delta = choice.get("delta")
                if (
                    type(delta) is dict
                    and len(delta) == 1
                    and type(content := delta.get("content")) is str
                ):
                    # The usual delta: one piece of text, and nothing else to read.
                    if content:
                        out.append(_text(content, n))
                elif type(delta) is dict:
                    self._delta(delta, i, n, out)
                elif delta is None:
                    _legacy_text(choice, i, n, out)
                else:
                    raise ShapeError(f"choices[{i}].delta", _OBJECT, delta)
                reason = choice.get("finish_reason")
                if reason is not None:
                    self._finish(reason, i, n, out)
        if _CHUNK_FIELDS.isdisjoint(raw):
            return choices is not None  # the usual chunk: no sources, no usage
        self._chunk_fields(raw, out)
        return choices is not None

    def _delta(self, delta: JSONObject, i: int, n: int, out: list[Delta]) -> None:
        """Any delta but the usual one: reasoning, text, citations, refusal, tool calls."""
        content, reasoning, details, refusal, calls, legacy, notes = self._fields(delta, i, n)
        if details is not None:
            # Checked always, used only when no plain reasoning field came:
            # OpenRouter sends both with the same text.
            thoughts = _details_text(details, i)
            if not reasoning:
                reasoning = thoughts
        if content is not None:
            reasoning = _content(content, reasoning, i, n, out)
        if reasoning:
            out.append(_reasoning(reasoning, n))
        if notes is not None:
            _annotations(notes, n, f"choices[{i}].delta.annotations", out)
        if refusal:
            out.append(RefusalDelta(refusal, n))
        if calls is not None:
            _tool_calls(calls, i, n, out)
        if legacy is not None:
            if type(legacy) is not dict:
                raise ShapeError(f"choices[{i}].delta.function_call", _OBJECT, legacy)
            out.append(_function_delta(legacy, 0, None, n, f"choices[{i}].delta.function_call"))

    def _fields(self, delta: JSONObject, i: int, n: int) -> _Fields:
        """The fields of a delta, the strings among them checked; notes the choice's role.

        One pass over the fields the delta has (one or two, as a rule) costs
        less than a lookup of each of the eight it might have. The reasoning
        is `reasoning_content`, else `reasoning` (the two spellings).
        """
        content = reasoning = other = details = refusal = calls = legacy = notes = None
        for key, value in delta.items():
            if value is None:
                continue  # null is absent, in every field
            if key == "content":
                content = value
            elif key == "reasoning_content":
                if type(value) is not str:
                    raise ShapeError(f"choices[{i}].delta.{key}", _STRING, value)
                reasoning = value
            elif key == "tool_calls":
                calls = value
            elif key == "role":
                if type(value) is not str:
                    raise ShapeError(f"choices[{i}].delta.{key}", _STRING, value)
                if value and n not in self.roles:
                    self.roles[n] = value
            elif key == "reasoning":
                if type(value) is not str:
                    raise ShapeError(f"choices[{i}].delta.{key}", _STRING, value)
                other = value
            elif key == "refusal":
                if type(value) is not str:
                    raise ShapeError(f"choices[{i}].delta.{key}", _STRING, value)
                refusal = value
            elif key == "reasoning_details":
                details = value
            elif key == "function_call":
                legacy = value
            elif key == "annotations":
                notes = value
        return content, reasoning or other, details, refusal, calls, legacy, notes

    def _finish(self, reason: JSON, i: int, n: int, out: list[Delta]) -> None:
        """A choice's `finish_reason`: a `Finish` when it is new for that choice."""
        if type(reason) is not str:
            raise ShapeError(f"choices[{i}].finish_reason", _STRING, reason)
        if reason and self.finished.get(n) != reason:
            self.finished[n] = reason
            # The legacy function_call ends in a tool call like any other.
            norm = "tool_calls" if reason == "function_call" else reason
            out.append(Finish(norm, n, reason))

    def _chunk_fields(self, raw: JSONObject, out: list[Delta]) -> None:
        """The fields read after the choices: the sources (Perplexity), then the usage."""
        sources = raw.get("search_results")
        cited = raw.get("citations")
        if sources is not None or cited is not None:
            self._sources(sources, cited, out)
        usage = raw.get("usage")
        path = "usage"
        if usage is None:
            # Groq also puts the numbers in `x_groq.usage`; top-level usage wins when both exist.
            extra = raw.get("x_groq")
            if extra is not None:
                if type(extra) is not dict:
                    raise ShapeError("x_groq", _OBJECT, extra)
                usage = extra.get("usage")
                path = "x_groq.usage"
        if usage is not None:
            if type(usage) is not dict:
                raise ShapeError(path, _OBJECT, usage)
            parsed = _usage(usage, path)
            if parsed is not None and parsed != self.usage:
                self.usage = parsed
                out.append(parsed)

    def _sources(self, sources: JSON, cited: JSON, out: list[Delta]) -> None:
        """Perplexity's chunk-level sources as `Citation`s, each address once.

        Sent whole on every chunk: `search_results` (objects with `url`,
        `title`, ...) and `citations` (their addresses, which the text cites
        as `[1]`, `[2]`, ...), so a source named in both comes once.
        """
        for key, items in (("search_results", sources), ("citations", cited)):
            if items is None:
                continue
            if type(items) is not list:
                raise ShapeError(key, _ARRAY, items)
            for j, item in enumerate(items):
                url: str | None
                if type(item) is str:
                    url, title, note = item, None, None
                elif type(item) is dict:
                    url = _opt_str(item, "url", f"{key}[{j}]")
                    title = _opt_str(item, "title", f"{key}[{j}]")
                    note = item
                else:
                    raise ShapeError(f"{key}[{j}]", "a string or an object", item)
                if url is not None:
                    if url in self.cited:
                        continue
                    self.cited.add(url)
                out.append(Citation(key[:-1], url=url, title=title, raw=note))


def _opt_str(raw: JSONObject, key: str, path: str) -> str | None:
    value = raw.get(key)
    if value is None or type(value) is str:
        return value
    raise ShapeError(f"{path}.{key}", _STRING, value)


def _logprobs(logprobs: JSON, i: int, n: int, out: list[Delta]) -> None:
    """A choice's `logprobs`: one `Metadata` of its entries, before the choice's deltas.

    The `content` entries go under `"logprobs"` (as every dialect gives them,
    so `Message.metadata["logprobs"]` gathers them in order), the `refusal`
    entries under `"refusal_logprobs"`; an empty or null list gives nothing.
    Each entry is checked (`_entries`) and passed on as it came; other fields
    (the legacy completions' `tokens`, ...) are left alone.
    """
    if type(logprobs) is not dict:
        raise ShapeError(f"choices[{i}].logprobs", _OBJECT, logprobs)
    data: JSONObject = {}
    for key, name in LOGPROBS:
        entries = logprobs.get(key)
        if entries is not None:
            _entries(entries, f"choices[{i}].logprobs.{key}", True)
            if entries:
                data[name] = entries
    if data:
        out.append(Metadata(data, n))


def _entries(entries: JSON, path: str, top: bool) -> None:
    """Check an array of logprobs entries, `{"token", "logprob", "bytes", "top_logprobs"}`.

    `path` names the array; an entry's own path is written only to raise (a
    stream with logprobs has an entry per token). The entries of a
    `top_logprobs` have the same shape but for a `top_logprobs` of their own
    (`top` False).
    """
    if type(entries) is not list:
        raise ShapeError(path, _ARRAY, entries)
    j = -1
    for entry in entries:
        j += 1
        if type(entry) is not dict:
            raise ShapeError(f"{path}[{j}]", "an object", entry)
        value = entry.get("token")
        if value is not None and type(value) is not str:
            raise ShapeError(f"{path}[{j}].token", _STRING, value)
        value = entry.get("logprob")
        if value is not None and type(value) is not float and type(value) is not int:
            raise ShapeError(f"{path}[{j}].logprob", "a number or null", value)
        value = entry.get("bytes")
        if value is not None:
            if type(value) is not list:
                raise ShapeError(f"{path}[{j}].bytes", _ARRAY, value)
            for byte in value:
                if type(byte) is not int:
                    _not_bytes(value, f"{path}[{j}].bytes")
        value = entry.get("top_logprobs") if top else None
        if value:
            _entries(value, f"{path}[{j}].top_logprobs", False)
        elif value is not None and type(value) is not list:
            raise ShapeError(f"{path}[{j}].top_logprobs", _ARRAY, value)


def _not_bytes(values: list[JSON], path: str) -> NoReturn:
    """Raise for the first item of `values` that is not an integer."""
    for j, byte in enumerate(values):
        if type(byte) is not int:
            raise ShapeError(f"{path}[{j}]", "an integer", byte)
    raise AssertionError(path)  # pragma: no cover  (called with such an item)


def _legacy_text(choice: JSONObject, i: int, n: int, out: list[Delta]) -> None:
    """Legacy completions' `text`, read only without a `delta` (Together sends both)."""
    legacy_text = choice.get("text")
    if legacy_text is not None:
        if type(legacy_text) is not str:
            raise ShapeError(f"choices[{i}].text", _STRING, legacy_text)
        if legacy_text:
            out.append(_text(legacy_text, n))


def _content(content: JSON, reasoning: str | None, i: int, n: int, out: list[Delta]) -> str | None:
    """A delta's `content` (a string, or Mistral's parts), with the reasoning that goes first.

    Returns the reasoning still to send (None once sent before the text).
    """
    if type(content) is str:
        if content:
            if reasoning:
                out.append(_reasoning(reasoning, n))
            out.append(_text(content, n))
            return None
        return reasoning
    if type(content) is not list:
        raise ShapeError(f"choices[{i}].delta.content", "a string, an array or null", content)
    texts: list[str] = []
    parts = [reasoning] if reasoning else []
    _parts(content, texts, parts, f"choices[{i}].delta.content")
    thought = "".join(parts)
    if thought:
        out.append(_reasoning(thought, n))
    text = "".join(texts)
    if text:
        out.append(_text(text, n))
    return None


def _tool_calls(calls: JSON, i: int, n: int, out: list[Delta]) -> None:
    """`delta.tool_calls`: one `ToolCallDelta` per fragment."""
    if type(calls) is not list:
        raise ShapeError(_calls(i), _ARRAY, calls)
    j = -1
    for call in calls:
        j += 1
        if type(call) is not dict:
            raise ShapeError(f"{_calls(i)}[{j}]", "an object", call)
        wire = call.get("index")
        if wire is not None and type(wire) is not int:
            raise ShapeError(f"{_calls(i)}[{j}].index", _INTEGER, wire)
        id = call.get("id")
        if id is not None:
            if type(id) is not str:
                raise ShapeError(f"{_calls(i)}[{j}].id", _STRING, id)
            if not id:
                id = None  # Qwen sends "" on the follow-up fragments
        kind = call.get("type")
        if kind is not None and type(kind) is not str:
            raise ShapeError(f"{_calls(i)}[{j}].type", _STRING, kind)
        function = call.get("function")
        if type(function) is dict:
            arguments = function.get("arguments")
            name = function.get("name")
            if type(arguments) is str and (name is None or (type(name) is str and name)):
                out.append(_tool_call(wire, arguments, id, name, n))
            else:
                # Rare: empty or wrong names, arguments that are not text.
                out.append(_function_delta(function, wire, id, n, f"{_calls(i)}[{j}].function"))
        elif function is None:
            out.append(_tool_call(wire, "", id, None, n))
        else:
            raise ShapeError(f"{_calls(i)}[{j}].function", _OBJECT, function)


def _annotations(notes: JSON, choice: int, path: str, out: list[Delta]) -> None:
    """OpenAI's `delta.annotations` (`url_citation`s of the search models) as `Citation`s."""
    if type(notes) is not list:
        raise ShapeError(path, _ARRAY, notes)
    for j, note in enumerate(notes):
        where = f"{path}[{j}]"
        if type(note) is not dict:
            raise ShapeError(where, "an object", note)
        kind = _opt_str(note, "type", where) or "annotation"
        # OpenAI nests the fields under the type's name; others may not.
        body = note.get(kind)
        if body is None:
            body = note
        elif type(body) is dict:
            where = f"{where}.{kind}"
        else:
            raise ShapeError(f"{where}.{kind}", _OBJECT, body)
        out.append(
            Citation(
                kind,
                url=_opt_str(body, "url", where),
                title=_opt_str(body, "title", where),
                start=_opt_int(body, "start_index", where),
                end=_opt_int(body, "end_index", where),
                choice=choice,
                raw=note,
            )
        )


def parse_usage(raw: JSONObject) -> Usage | None:
    """Read a provider `usage` object into a `Usage` (None when it holds no counts).

    `reasoning_tokens` comes from `completion_tokens_details.reasoning_tokens` or a
    top-level `reasoning_tokens`; `cached_tokens` from
    `prompt_tokens_details.cached_tokens` or DeepSeek's `prompt_cache_hit_tokens`.
    A missing `total_tokens` is the sum of the other two. Where the total is
    prompt + completion + reasoning (xAI counts reasoning apart),
    `completion_tokens` is completion + reasoning, as everywhere else.

    Raises:
        MalformedChunkError: a counter is not an integer (or null), or a
            details field not an object (or null).

    >>> parse_usage({"prompt_tokens": 3, "completion_tokens": 4}).total_tokens
    7
    """
    try:
        return _usage(raw, "usage")
    except ShapeError as exc:
        raise MalformedChunkError(exc.reason, chunk_text(raw)) from None


def _usage(raw: JSONObject, path: str) -> Usage | None:
    prompt = _opt_int(raw, "prompt_tokens", path)
    completion = _opt_int(raw, "completion_tokens", path)
    total = _opt_int(raw, "total_tokens", path)
    reasoning = _opt_int(raw, "reasoning_tokens", path)
    cached = _opt_int(raw, "prompt_cache_hit_tokens", path)
    details = raw.get("completion_tokens_details")
    if details is not None:
        if type(details) is not dict:
            raise ShapeError(f"{path}.completion_tokens_details", _OBJECT, details)
        inner = _opt_int(details, "reasoning_tokens", f"{path}.completion_tokens_details")
        if inner is not None:
            reasoning = inner
    written = None
    details = raw.get("prompt_tokens_details")
    if details is not None:
        if type(details) is not dict:
            raise ShapeError(f"{path}.prompt_tokens_details", _OBJECT, details)
        inner = _opt_int(details, "cached_tokens", f"{path}.prompt_tokens_details")
        if inner is not None:
            cached = inner
        written = _opt_int(details, "cache_write_tokens", f"{path}.prompt_tokens_details")
    if prompt is None and completion is None and total is None:
        return None
    prompt, completion = prompt or 0, completion or 0
    if reasoning and total == prompt + completion + reasoning:
        # xAI counts the reasoning tokens apart from `completion_tokens`; its
        # total has both. A completion counts every output token here.
        completion += reasoning
    return Usage(
        prompt_tokens=prompt,
        completion_tokens=completion,
        total_tokens=prompt + completion if total is None else total,
        reasoning_tokens=reasoning,
        cached_tokens=cached,
        raw=raw,
        cache_write_tokens=written,
    )


def _opt_int(raw: JSONObject, key: str, path: str) -> int | None:
    value = raw.get(key)
    # bool is an int in Python, but never a count or an offset on the wire.
    if value is None or type(value) is int:
        return value
    raise ShapeError(f"{path}.{key}", _INTEGER, value)


def _details_text(details: JSON, i: int) -> str:
    """The reasoning text of OpenRouter's `reasoning_details` (encrypted items carry none)."""
    path = f"choices[{i}].delta.reasoning_details"
    if type(details) is not list:
        raise ShapeError(path, _ARRAY, details)
    out = []
    for j, item in enumerate(details):
        if type(item) is not dict:
            raise ShapeError(f"{path}[{j}]", "an object", item)
        kind = item.get("type")
        if kind is not None and type(kind) is not str:
            raise ShapeError(f"{path}[{j}].type", _STRING, kind)
        for key in ("text", "summary"):
            value = item.get(key)
            if value is not None and type(value) is not str:
                raise ShapeError(f"{path}[{j}].{key}", _STRING, value)
        # `reasoning.encrypted` items carry opaque data, not text: left alone.
        if kind == "reasoning.summary":
            out.append(item.get("summary") or "")
        elif kind in ("reasoning.text", None):
            out.append(item.get("text") or "")
    return "".join(out)


def _parts(content: list[JSON], text: list[str], reasoning: list[str], path: str) -> None:
    # Mistral Magistral: an array of typed parts, thinking parts nesting their own text parts.
    for j, part in enumerate(content):
        if type(part) is str:
            text.append(part)
            continue
        if type(part) is not dict:
            raise ShapeError(f"{path}[{j}]", "a string or an object", part)
        kind = part.get("type")
        if type(kind) is not str:
            # A part says what it is: one without a string `type` is no part to skip.
            raise ShapeError(f"{path}[{j}].type", "a string", kind)
        if kind == "text":
            value = part.get("text")
            if value is not None:
                if type(value) is not str:
                    raise ShapeError(f"{path}[{j}].text", _STRING, value)
                text.append(value)
        elif kind == "thinking":
            inner = part.get("thinking")
            if type(inner) is str:
                reasoning.append(inner)
            elif type(inner) is list:
                _parts(inner, reasoning, reasoning, f"{path}[{j}].thinking")
            elif inner is not None:
                raise ShapeError(f"{path}[{j}].thinking", "a string, an array or null", inner)
        # Parts of other kinds (images, references, ...) carry no text: left alone.


def _calls(i: int) -> str:
    return f"choices[{i}].delta.tool_calls"


def _function_delta(
    function: JSONObject, index: int | None, id: str | None, choice: int, path: str
) -> ToolCallDelta:
    name = function.get("name")
    if name is not None:
        if type(name) is not str:
            raise ShapeError(f"{path}.name", _STRING, name)
        if not name:
            name = None
    arguments = function.get("arguments")
    if type(arguments) is str:
        text = arguments
    elif arguments is None:
        text = ""
    elif type(arguments) is dict:
        # Some providers send the arguments as a JSON object, not its text.
        text = json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))
    else:
        raise ShapeError(f"{path}.arguments", "a string, an object or null", arguments)
    return _tool_call(index, text, id, name, choice)

"""The `"ollama"` dialect: Ollama `/api/chat` NDJSON lines to deltas and back.

Input: lines (`str`, one JSON object each, as `rs.lines()` cuts an
`application/x-ndjson` body); blank lines are ignored. Output: deltas.

Every line is `{"model", "created_at", "message": {"role", "content",
"thinking"?, "tool_calls"?}, "done": bool, ...}`:

- `message.content` is `TextDelta`, `message.thinking` `ReasoningDelta`
  (empty strings give nothing);
- `message.tool_calls` arrive whole: each is one `ToolCallDelta` with
  `id` = its `id` (None when absent, as before Ollama 0.5), `index` = the
  order of appearance across the stream, and `arguments` = the JSON object
  `function.arguments` serialised compactly (a string is taken as the JSON
  text it is);
- `logprobs` (a list per line) and output `images` are `Metadata`;
- the line with `"done": true` ends the stream: `done_reason` is `Finish`
  (`stop` -> `stop`, or `tool_calls` when the answer asked for tool calls,
  for which Ollama says `stop` too; `length` -> `length`; `load`/`unload`
  as they are; absent or `""` -> `stop` with `raw` None), `prompt_eval_count`
  / `eval_count` are `Usage` (a count Ollama omits is 0;
  `prompt_eval_cached_count`, the prompt tokens read from the cache and
  counted in `prompt_eval_count` too, is `cached_tokens`; `Usage.raw` keeps
  the counts and durations), and `model`, `created_at` and the durations
  (nanoseconds) are `Metadata`;
- a top-level field of a line that rxstream does not know (`_debug_info`,
  fields of newer servers) is `Metadata` under its own name.

A line `{"error": "..."}` is `ProviderError` (Ollama's error after the
stream began). Input that ends without `"done": true` is
`TruncatedStreamError`; a JSON object that is no `/api/chat` line (an
`/api/generate` line, an OpenAI chunk, ...) is `MalformedChunkError`.

Spec: Ollama's API documentation (`docs/api.md`, "Generate a chat
completion") and its server (`server/routes.go`, `api/types.go`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, ClassVar

from ...errors import ProviderError
from ...models import (
    JSON,
    Delta,
    Finish,
    JSONObject,
    Metadata,
    ReasoningDelta,
    TextDelta,
    ToolCallDelta,
    Usage,
)
from .._build import constructor
from ..provider_errors import provider_error
from ._base import (
    LENGTH,
    STOP,
    TOOL_CALLS,
    DialectDecoder,
    OnMalformed,
    ShapeError,
    Wire,
    WireKind,
    opt_int,
    opt_list,
    opt_object,
    opt_str,
    usage,
)

__all__ = ["OllamaDecoder", "OllamaRenderer", "http_error"]

#: The duration fields of the final line, in nanoseconds.
DURATIONS = ("total_duration", "load_duration", "prompt_eval_duration", "eval_duration")
#: The token counts of the final line (`Usage`).
COUNTS = ("prompt_eval_count", "prompt_eval_cached_count", "eval_count")
#: The top-level fields of a line this decoder reads; others are kept as `Metadata`.
_KNOWN = frozenset(
    {
        "model",
        "created_at",
        "message",
        "done",
        "done_reason",
        "logprobs",
        "remote_model",
        "remote_host",
        *COUNTS,
        *DURATIONS,
    }
)

_text: Callable[[str, int], TextDelta] = constructor(TextDelta)
_reasoning: Callable[[str, int], ReasoningDelta] = constructor(ReasoningDelta)


class OllamaDecoder(DialectDecoder):
    """Decode Ollama `/api/chat` NDJSON lines into deltas (see the module docstring).

    Args:
        on_malformed: `"raise"` (the default) or `"skip"` lines that are not
            valid `/api/chat` objects.

    >>> decoder = OllamaDecoder()
    >>> decoder.feed('{"model":"m","message":{"role":"assistant","content":"Hi"},"done":false}')
    [TextDelta(text='Hi', choice=0)]
    >>> last = decoder.feed('{"message":{"content":""},"done_reason":"stop","done":true,'
    ...                     '"prompt_eval_count":3,"eval_count":1}')
    >>> last[:2], decoder.done
    ([Finish(reason='stop', choice=0, raw='stop'), Usage(prompt_tokens=3, completion_tokens=1, \
total_tokens=4, reasoning_tokens=None, cached_tokens=None, choice=0, \
raw={'prompt_eval_count': 3, 'eval_count': 1})], True)
    """

    dialect: ClassVar[str] = "ollama"
    end_marker: ClassVar[str] = '"done": true'

    def __init__(self, *, on_malformed: OnMalformed = "raise") -> None:
        super().__init__(on_malformed=on_malformed)
        self._calls = 0  # tool calls so far

    def _decode(self, item: Any) -> list[Delta]:
        if type(item) is not str:
            if not isinstance(item, str):
                raise TypeError(
                    "OllamaDecoder takes NDJSON lines (str; add rs.lines() before "
                    f"rs.decode('ollama')), got {type(item).__name__}"
                )
            item = str(item)
        if not item or item.isspace():
            return []
        data = self._object(item, item)
        if data is None:
            return []
        message = data.get("message")
        done = data.get("done")
        out: list[Delta] = []
        if type(message) is dict:
            self._answered = True
            # Anything beyond role and content is rare: looked at only when there.
            extras = "thinking" in message or "tool_calls" in message or "images" in message
            if extras:
                thinking = opt_str(message, "thinking", "message")
                if thinking:
                    out.append(_reasoning(thinking, 0))
            content = message.get("content")
            if type(content) is str:
                if content:
                    out.append(_text(content, 0))
            elif content is not None:
                raise ShapeError("message.content", "a string", content)
            if extras:
                self._extras(message, out)
        elif message is not None:
            raise ShapeError("message", "an object", message)
        elif done is None or "response" in data:
            return self._not_chat(data, item)
        if "logprobs" in data:
            logprobs = opt_list(data, "logprobs", "")
            if logprobs:
                out.append(Metadata({"logprobs": logprobs}))
        # A line has model, created_at, message and done: more is looked at only when there.
        if len(data) > 4 and not _KNOWN.issuperset(data):
            out.append(Metadata({key: data[key] for key in data if key not in _KNOWN}))
        if done is False:
            return out
        if done is True:
            self._answered = True
            self._done = True
            return self._final(data, out)
        raise ShapeError("done", "a boolean", done)

    def _extras(self, message: JSONObject, out: list[Delta]) -> None:
        calls = opt_list(message, "tool_calls", "message")
        if calls:
            for i, call in enumerate(calls):
                out.append(self._tool_call(call, f"message.tool_calls[{i}]"))
        images = opt_list(message, "images", "message")
        if images:
            out.append(Metadata({"images": images}))

    def _tool_call(self, call: JSON, path: str) -> ToolCallDelta:
        if type(call) is not dict:
            raise ShapeError(path, "an object", call)
        function = opt_object(call, "function", path)
        if function is None:
            raise ShapeError(f"{path}.function", "an object", None)
        name = opt_str(function, "name", f"{path}.function")
        opt_int(function, "index", f"{path}.function")
        arguments = function.get("arguments")
        if arguments is None:
            text = "{}"
        elif type(arguments) is dict:
            text = json.dumps(arguments, separators=(",", ":"), ensure_ascii=False)
        elif type(arguments) is str:
            text = arguments
        else:
            raise ShapeError(f"{path}.function.arguments", "an object", arguments)
        index = self._calls
        self._calls += 1
        return ToolCallDelta(index, text, opt_str(call, "id", path), name)

    def _final(self, data: JSONObject, out: list[Delta]) -> list[Delta]:
        raw = opt_str(data, "done_reason", "")
        if raw == "stop" or not raw:
            reason = TOOL_CALLS if self._calls else STOP
        else:
            reason = LENGTH if raw == "length" else raw
        out.append(Finish(reason, 0, raw or None))
        prompt = opt_int(data, "prompt_eval_count", "")
        completion = opt_int(data, "eval_count", "")
        cached = opt_int(data, "prompt_eval_cached_count", "")
        durations: JSONObject = {key: data[key] for key in DURATIONS if key in data}
        for key, value in durations.items():
            if type(value) is not int:
                raise ShapeError(key, "an integer", value)
        if prompt is not None or completion is not None or cached is not None:
            counts: JSONObject = {key: data[key] for key in COUNTS if key in data}
            out.append(usage(prompt, completion, cached=cached, raw={**counts, **durations}))
        extra: JSONObject = {
            key: data[key]
            for key in ("model", "created_at", "remote_model", "remote_host")
            if key in data
        }
        extra.update(durations)
        if extra:
            out.append(Metadata(extra))
        return out

    def _not_chat(self, data: JSONObject, item: str) -> list[Delta]:
        if "error" in data:
            raise provider_error(data, data=item)
        if "response" in data:
            return self._malformed("an /api/generate line (response), not an /api/chat one", item)
        if "choices" in data:
            return self._malformed("an OpenAI chat chunk, not an Ollama /api/chat line", item)
        if "type" in data:
            return self._malformed(f"an event of type {data['type']!r}, not an Ollama line", item)
        return self._malformed("an object with neither message nor done", item)


# --------------------------------------------------------------------------- rendering

#: The `created_at` written on every line unless told otherwise (renders are reproducible).
DEFAULT_CREATED_AT = "2024-01-01T00:00:00Z"


class OllamaRenderer:
    """Render deltas as Ollama `/api/chat` NDJSON lines (`str`, without the newline).

    One line per text or reasoning delta; tool calls go out whole, one line
    per call, once its fragments are complete (at the next text, the finish
    or the end); `close()` writes the `"done": true` line with the finish
    (`tool_calls` is written as `stop`, as Ollama says it), the usage and the
    durations of any `Metadata`.

    What Ollama cannot express is left out: refusals, citations, provider-side
    tools, reasoning state, choices other than 0, `total_tokens` (recomputed
    as the sum) and `reasoning_tokens`; arguments that are
    not a JSON object are sent as the text they are, and arguments of `""`
    come back as `"{}"`.

    Args:
        model: the model name written on every line.
        id: unused (Ollama's stream carries no response id).
        created_at: the timestamp written on every line.

    >>> renderer = OllamaRenderer(model="llama3.2")
    >>> renderer.feed(TextDelta("Hi"))
    ['{"model":"llama3.2","created_at":"2024-01-01T00:00:00Z","message":{"role":"assistant",\
"content":"Hi"},"done":false}']
    """

    wire: ClassVar[WireKind] = "ndjson"
    newline: ClassVar[str] = "\n"

    def __init__(
        self,
        *,
        model: str = "rxstream-fake",
        id: str = "ollama-fake",
        created_at: str = DEFAULT_CREATED_AT,
    ) -> None:
        self.model = model
        self.id = id
        self.created_at = created_at
        self._pending: dict[int, list[Any]] = {}  # call index -> [id, name, fragments]
        self._order: list[int] = []
        self._last: int | None = None
        self._finish: Finish | None = None
        self._usage: Usage | None = None
        self._durations: JSONObject = {}
        self._closed = False

    def feed(self, delta: Delta) -> list[Wire]:
        """Take one delta; return the lines it completes.

        Raises:
            RuntimeError: after `close()` or `error()`.
        """
        if self._closed:
            raise RuntimeError("this OllamaRenderer is closed; it takes no more deltas")
        if delta.choice != 0:
            return []
        if isinstance(delta, TextDelta):
            return [*self._flush(), self._line({"role": "assistant", "content": delta.text})]
        if isinstance(delta, ReasoningDelta):
            message = {"role": "assistant", "content": "", "thinking": delta.text}
            return [*self._flush(), self._line(message)]
        if isinstance(delta, ToolCallDelta):
            self._fragment(delta)
            return []
        if isinstance(delta, Finish):
            self._finish = delta
            return self._flush()
        if isinstance(delta, Usage):
            self._usage = delta
        elif isinstance(delta, Metadata):
            self._durations.update(
                (key, value) for key, value in delta.data.items() if key in DURATIONS
            )
        return []

    def close(self) -> list[Wire]:
        """End the stream: pending tool calls, then the `"done": true` line.

        Raises:
            RuntimeError: already closed.
        """
        if self._closed:
            raise RuntimeError("this OllamaRenderer is closed already")
        self._closed = True
        out = self._flush()
        reason = self._finish.reason if self._finish is not None else STOP
        last: JSONObject = {
            "model": self.model,
            "created_at": self.created_at,
            "message": {"role": "assistant", "content": ""},
            "done_reason": STOP if reason == TOOL_CALLS else reason,
            "done": True,
        }
        last.update(self._durations)
        if self._usage is not None:
            last["prompt_eval_count"] = self._usage.prompt_tokens
            if self._usage.cached_tokens is not None:
                last["prompt_eval_cached_count"] = self._usage.cached_tokens
            last["eval_count"] = self._usage.completion_tokens
        out.append(_dumps(last))
        return out

    def error(self, error: ProviderError) -> list[Wire]:
        """End the stream with Ollama's error line, `{"error": message}`."""
        if self._closed:
            raise RuntimeError("this OllamaRenderer is closed already")
        self._closed = True
        return [_dumps({"error": error.message})]

    def _line(self, message: JSONObject) -> str:
        return _dumps(
            {"model": self.model, "created_at": self.created_at, "message": message, "done": False}
        )

    def _fragment(self, delta: ToolCallDelta) -> None:
        key = delta.index
        if key is None:
            # No index (Mistral sends whole calls): a fragment with an id or a
            # name begins a call, any other goes on with the last one.
            begins = delta.id is not None or delta.name is not None
            key = -len(self._order) - 1 if begins or self._last is None else self._last
        call = self._pending.get(key)
        if call is None:
            call = self._pending[key] = [delta.id, delta.name, []]
            self._order.append(key)
        if delta.id is not None:
            call[0] = delta.id
        if delta.name is not None:
            call[1] = delta.name
        call[2].append(delta.arguments)
        self._last = key

    def _flush(self) -> list[Wire]:
        """The pending tool calls, one line each, in the order they began."""
        out: list[Wire] = []
        for key in self._order:
            call_id, name, fragments = self._pending[key]
            text = "".join(fragments)
            try:
                arguments: JSON = json.loads(text) if text.strip() else {}
            except ValueError:
                arguments = text
            if not isinstance(arguments, dict):
                arguments = text
            function: JSONObject = {"name": name or "", "arguments": arguments}
            tool: JSONObject = {"function": function}
            if call_id is not None:
                tool["id"] = call_id
            out.append(self._line({"role": "assistant", "content": "", "tool_calls": [tool]}))
        self._pending.clear()
        self._order.clear()
        self._last = None
        return out


def _dumps(value: JSONObject) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def http_error(
    status: int, message: str, *, type: str | None = None, code: str | int | None = None
) -> tuple[str, bytes]:
    """The content type and body of an Ollama error answer (before the stream).

    Ollama answers `{"error": message}` with the status; `type` and `code`
    have no place in it.

    >>> http_error(404, "model 'x' not found")
    ('application/json', b'{"error":"model \\'x\\' not found"}')
    """
    return "application/json", _dumps({"error": message}).encode()

"""The `"ollama"` dialect: the decoder (wire events -> deltas).

See the package docstring for the wire format and the rules.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, ClassVar

from ...._fast import constructor
from ....models import (
    JSON,
    Delta,
    Finish,
    JSONObject,
    Metadata,
    ReasoningDelta,
    TextDelta,
    ToolCallDelta,
)
from ...provider_errors import provider_error
from .._base import (
    LENGTH,
    STOP,
    TOOL_CALLS,
    DialectDecoder,
    OnMalformed,
    ShapeError,
    opt_int,
    opt_list,
    opt_object,
    opt_str,
    usage,
)

__all__ = ["COUNTS", "DURATIONS", "OllamaDecoder"]

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
            elif content is not None or "content" in message:
                # Ollama always sends a string ("" when there is none): null is no text.
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

"""The `"ollama"` dialect: the decoder (wire events -> deltas).

See the package docstring for the wire format and the rules.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, ClassVar

from ...._fast import constructor, enabled
from ...._typed import typed
from ....models import (
    JSON,
    Delta,
    Finish,
    JSONObject,
    Metadata,
    ReasoningDelta,
    SSEFrame,
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
    Reader,
    ShapeError,
    foreign,
    looks_like,
    opt_int,
    opt_list,
    opt_object,
    opt_str,
    usage,
)
from .._shared import Budget, Template

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

#: No content sent, where the typed decoding is not there to say so.
_UNSET = object()

#: The field of a line that changes on every line while the decoder reads it
#: only on the last one (`done: true`, which a template never matches), and
#: its kind: the hole of a learnt line's `Template`, beside its text.
_FREE: dict[str, type] = {"created_at": str}


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
raw={'prompt_eval_count': 3, 'eval_count': 1}, cache_write_tokens=None, estimated=False)], True)
    """

    dialect: ClassVar[str] = "ollama"
    end_marker: ClassVar[str] = '"done": true'
    #: It takes lines only (no parser hands it frames) and gives deltas only.
    gives_deltas_only = True

    def __init__(self, *, on_malformed: OnMalformed = "raise") -> None:
        super().__init__(on_malformed=on_malformed)
        self._calls = 0  # tool calls so far
        # The typed decoding of the `fast` extra (rxstream._typed.ollama), or None.
        module = typed("ollama")
        self._read: Callable[[str], Any] | None = None
        self._unset: object = _UNSET
        if module is not None:
            self._read, self._unset = module.decode, module.UNSET
        # The last line that gave one text (or thinking) delta, as a `Template`, with
        # how to make that delta: a later line made of the same JSON but for that
        # text (and `created_at`) gives the same delta with its text. The standard
        # library's shortcut only (msgspec reads a whole line faster).
        self._around: tuple[Template, Callable[[str, int], Delta]] | None = None
        # How often templates are learnt; None: never (typed decoding, or the fast paths off).
        self._budget = Budget() if enabled() and module is None else None

    def _reader(self, out: list[Delta]) -> Reader | None:
        """The usual line's reader (see `DialectDecoder._reader`): content and thinking, not done.

        Typed with the `fast` extra (`_typed_reader`); on the standard library
        by its text alone where it repeats the JSON of the last line that gave
        one delta (see `_learn`), else as a dict, `_decode`'s rules for a line
        of plain content and thinking (`_plain_reader`).
        """
        if self._read is not None:
            return self._typed_reader(self._read, out)
        return self._plain_reader(out)

    def _typed_reader(self, read: Callable[[str], Any], out: list[Delta]) -> Reader:
        """Lines of content and thinking, not done, decoded into the typed module's types."""
        append, unset, text = out.append, self._unset, _text

        def typed_lines(items: list[Any], start: int) -> int:
            for at in range(start, len(items)):
                item = items[at]
                if type(item) is not str:
                    return at
                try:
                    line = read(item)
                except ValueError:  # not a line the types know: `_decode` reads it
                    return at
                if line.done:
                    return at
                message = line.message
                if message.thinking:
                    append(_reasoning(message.thinking, 0))
                content = message.content
                if content and content is not unset:
                    append(text(content, 0))
            return len(items)

        return typed_lines

    def _plain_reader(self, out: list[Delta]) -> Reader:
        """Lines of content and thinking read as dicts, or by their text alone (see `_reader`)."""
        append, loads = out.append, self._loads

        def plain_lines(items: list[Any], start: int) -> int:
            for at in range(start, len(items)):
                item = items[at]
                if type(item) is not str:
                    return at
                around = self._around
                if around is not None:
                    text = around[0].read(item)
                    if text is not None:
                        # The learnt line but for its text (and created_at): the decoder
                        # gives the same delta with this text (none for "").
                        if text:
                            append(around[1](text, 0))
                        continue
                try:
                    data = loads(item)
                except (ValueError, TypeError, RecursionError):
                    return at
                if type(data) is not dict or data.get("done") is not False:
                    return at
                message = data.get("message")
                if (
                    type(message) is not dict
                    or "logprobs" in data
                    or not (len(data) <= 4 or _KNOWN.issuperset(data))
                    or "tool_calls" in message
                    or "images" in message
                    or not self._plain(item, message, append)
                ):
                    return at
            return len(items)

        return plain_lines

    def _plain(self, line: str, message: JSONObject, append: Callable[[Delta], None]) -> bool:
        """`_message`'s rules for a message of content and thinking (False: not one; nothing done).

        A line that gave one delta is learnt (`_learn`).
        """
        content = message.get("content", self._unset)
        thinking = message.get("thinking")
        if (type(content) is not str and content is not self._unset) or (
            thinking is not None and type(thinking) is not str
        ):
            return False  # `_decode` says what is wrong
        given: list[Delta] = []
        if thinking:
            given.append(_reasoning(thinking, 0))
        if type(content) is str and content:
            given.append(_text(content, 0))
        for delta in given:
            append(delta)
        if len(given) == 1 and self._budget is not None:
            self._around = self._learn(line, given[0]) or self._around
        return True

    def _learn(
        self, line: str, delta: Delta
    ) -> tuple[Template, Callable[[str, int], Delta]] | None:
        """The template of a line just read whole that gave one `delta` (and nothing else), or None.

        Only for a text or reasoning delta (from `content` or `thinking`).
        The decoder reads nothing of a line before the last but its message
        (`created_at` and `model` only on the `done: true` line), so a line
        that repeats this one's JSON but for the delta's text and `created_at`
        gives the same delta with its text. As often as the `Budget` allows.
        """
        make: Callable[[str, int], Delta]
        if type(delta) is TextDelta:
            key, make = "content", _text
        elif type(delta) is ReasoningDelta:
            key, make = "thinking", _reasoning
        else:
            return None
        if self._budget is None or not self._budget.take():
            return None
        template = Template.learn(line, key, delta.text, _FREE)
        return None if template is None else (template, make)

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
        read = self._read
        if read is not None and type(item) is str:
            try:
                line = read(item)
            except ValueError:  # msgspec's DecodeError: not a line its types know
                pass
            else:
                if not line.done:
                    return self._typed(line)
        data = self._object(item, item)
        if data is None:
            return []
        message = data.get("message")
        done = data.get("done")
        out: list[Delta] = []
        if type(message) is dict:
            self._message(message, out)
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
            if len(out) == 1 and self._budget is not None:
                self._around = self._learn(item, out[0]) or self._around
            return out
        if done is True:
            self._answered = True
            self._done = True
            return self._final(data, out)
        raise ShapeError("done", "a boolean", done)

    def _message(self, message: JSONObject, out: list[Delta]) -> None:
        """A line's `message`: its thinking, text and (rare) tool calls and images."""
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

    def _typed(self, line: Any) -> list[Delta]:
        """The deltas of a line (not the last) decoded into `rxstream._typed.ollama` types."""
        self._answered = True
        message = line.message
        out: list[Delta] = []
        if message.thinking:
            out.append(_reasoning(message.thinking, 0))
        if message.content and message.content is not self._unset:
            out.append(_text(message.content, 0))
        return out

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
        # Read as an event's data, the line may be another dialect's (detect's reading).
        what, other = "an object with neither message nor done", foreign(SSEFrame(item), None)
        return self._malformed(what if other is None else looks_like(what, other), item)

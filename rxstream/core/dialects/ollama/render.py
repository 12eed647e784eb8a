"""The `"ollama"` dialect: the renderer (deltas -> wire events).

See the package docstring for the wire format and the rules.
"""

from __future__ import annotations

import json
from json.encoder import encode_basestring
from typing import Any, ClassVar

from ...._fast import enabled
from ....errors import ProviderError
from ....models import (
    JSON,
    Delta,
    Finish,
    JSONObject,
    Metadata,
    ReasoningDelta,
    Reset,
    TextDelta,
    ToolCallDelta,
    Usage,
)
from .._base import (
    STOP,
    TOOL_CALLS,
    ResetRule,
    Wire,
    WireKind,
)
from .._shared import TEXT_MARK, dumps, text_halves
from .decode import DURATIONS

__all__ = ["DEFAULT_CREATED_AT", "OllamaRenderer"]

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
    as the sum) and `reasoning_tokens`. A tool call whose arguments are not
    a JSON object (another type, or JSON cut short by a truncated stream) is
    left out: Ollama's `arguments` is an object, and the ollama client's
    model rejects the whole stream for a line that holds anything else.
    Arguments of `""` come back as `"{}"`. Each call carries
    `function.index`, its place among the stream's calls, as Ollama sends.

    A `Reset` (a new answer replaces the one so far), which this format
    cannot carry, follows `ResetRule`: the new answer goes on in the same
    stream, its tool calls numbered after the dropped answer's. Tool calls
    not written yet when it comes (they wait for their choice's end here)
    are dropped with the answer.

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
        self._resets = ResetRule()  # what a Reset does here (ResetRule)
        self.model = model
        self.id = id
        self.created_at = created_at
        self._pending: dict[int, list[Any]] = {}  # call index -> [id, name, fragments]
        self._order: list[int] = []
        self._last: int | None = None
        self._written = 0  # the calls written so far (the next `function.index`)
        self._finish: Finish | None = None
        self._usage: Usage | None = None
        self._durations: JSONObject = {}
        self._closed = False
        # A text line as a template (a fast path, `text_event`): the JSON before and
        # after the text.
        self._templates = enabled()
        self._text_template: tuple[str, str] | None = None

    def feed(self, delta: Delta) -> list[Wire]:
        """Take one delta; return the lines it completes.

        Raises:
            RuntimeError: after `close()` or `error()`.
        """
        if self._closed:
            raise RuntimeError("this OllamaRenderer is closed; it takes no more deltas")
        if type(delta) is Reset:
            self._drop_pending()
        if type(delta) is not TextDelta or self._resets.ended:
            seen = self._resets.see(delta)
            if seen is None:
                return []
            delta = seen
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

    def text_event(self, delta: TextDelta) -> tuple[str, str] | None:
        """The one line `feed(delta)` gives for a text delta, as (name, data), when it
        changes nothing else; else None: `feed` it. An NDJSON line has no event
        name: the name is `""`, the data the line (without its newline).

        What `feed` writes, without its layers (a server writes one per token).
        Only where `feed` would only give that line: the renderer open, the
        first choice's text, no tool call waiting to be written before it, no
        reset ending the choice, the fast paths on.
        """
        if (
            self._order
            or delta.choice != 0
            or self._closed
            or self._resets.ended
            or not self._templates
        ):
            return None
        template = self._text_template
        if template is None:
            line = self._line({"role": "assistant", "content": TEXT_MARK})
            template = self._text_template = text_halves(line)
        return "", f"{template[0]}{encode_basestring(delta.text)}{template[1]}"

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
        out.append(dumps(last))
        return out

    def error(self, error: ProviderError) -> list[Wire]:
        """End the stream with Ollama's error line, `{"error": message}`."""
        if self._closed:
            raise RuntimeError("this OllamaRenderer is closed already")
        self._closed = True
        return [dumps({"error": error.message})]

    def _line(self, message: JSONObject) -> str:
        return dumps(
            {"model": self.model, "created_at": self.created_at, "message": message, "done": False}
        )

    def _drop_pending(self) -> None:
        """Forget the tool calls not written yet (a `Reset` dropped their answer)."""
        self._pending.clear()
        self._order.clear()
        self._last = None

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
                continue  # not JSON: left out (see the class docstring)
            if not isinstance(arguments, dict):
                continue  # not an object: left out likewise
            function: JSONObject = {
                "index": self._written,
                "name": name or "",
                "arguments": arguments,
            }
            self._written += 1
            tool: JSONObject = {"function": function}
            if call_id is not None:
                tool["id"] = call_id
            out.append(self._line({"role": "assistant", "content": "", "tool_calls": [tool]}))
        self._pending.clear()
        self._order.clear()
        self._last = None
        return out

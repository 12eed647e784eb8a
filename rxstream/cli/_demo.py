"""The scripted answer `rxstream demo` streams: reasoning, text, two parallel tool calls."""

from __future__ import annotations

import json
import re

from ..models import ToolCall
from ..testing.builders import ChatStream
from ..testing.server import Scenario
from ._tokens import offline_encoding

__all__ = ["PROMPT", "demo_scenario"]

#: The question the demo pretends to ask.
PROMPT = "What's the weather in Paris and in Tokyo right now?"

_REASONING = (
    "The user wants the current weather in two cities. I can't know that myself, "
    "so I'll call get_weather once for Paris and once for Tokyo, in parallel, "
    "and use Celsius for both."
)
_TEXT = "Let me check the weather in Paris and Tokyo for you."
_CALLS = (
    ToolCall(0, "call_paris", "get_weather", json.dumps({"city": "Paris", "unit": "celsius"})),
    ToolCall(1, "call_tokyo", "get_weather", json.dumps({"city": "Tokyo", "unit": "celsius"})),
)


def _words(text: str) -> list[str]:
    """Word-sized pieces (each keeps its leading space), as models stream."""
    return re.findall(r"\s*\S+", text)


def demo_scenario(delay: float = 0.03, first: float | None = None) -> Scenario:
    """The demo answer, every chunk `delay` seconds apart (`first`: before the first one).

    Args:
        delay: seconds between chunks (0 streams at once).
        first: seconds before the first chunk (default ten times `delay`, the
            "time to first token" of a real model).
    """
    reasoning, text = _words(_REASONING), _words(_TEXT)
    # The fake provider's usage agrees with the local count when an encoding is on disk.
    encoding, _ = offline_encoding()

    def tokens(value: str) -> int:
        return len(encoding.encode_ordinary(value)) if encoding is not None else len(_words(value))

    thought = tokens(_REASONING)
    completion = thought + tokens(_TEXT) + sum(tokens(call.arguments) for call in _CALLS)
    stream = (
        ChatStream(model="fake-demo-model", id="chatcmpl-demo")
        .role()
        .reasoning(*reasoning)
        .text(*text)
        .tool_calls(_CALLS, fragments=4)
        .finish("tool_calls")
        .usage(58, completion, reasoning_tokens=thought)
        .done()
    )
    return Scenario.from_stream(stream).paced(delay, first=delay * 10 if first is None else first)

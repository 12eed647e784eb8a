"""What each Ollama recording in tests/data/ollama means: one check a recording."""

from __future__ import annotations

import pytest

from rxstream.core.tools import generated_call_id
from rxstream.models import (
    Message,
    ToolCall,
    Usage,
)


def check_phi3(message: Message) -> None:
    # The excerpt's text begins with "This " (its provenance note says " these": it does not).
    assert message.content == "This is test completion response"
    assert (message.reasoning, message.tool_calls) == ("", ())
    assert (message.finish_reason, message.finish_raw) == ("stop", "stop")
    assert message.usage == Usage(10, 239, 249)
    assert message.usage is not None
    assert message.usage.raw == {
        "prompt_eval_count": 10,
        "eval_count": 239,
        "total_duration": 58123571935,
        "load_duration": 55561676662,
        "prompt_eval_duration": 34847000,
        "eval_duration": 2381751000,
    }
    assert message.metadata == {
        "model": "phi3",
        "created_at": "2024-07-02T11:45:16.265598822Z",
        "total_duration": 58123571935,
        "load_duration": 55561676662,
        "prompt_eval_duration": 34847000,
        "eval_duration": 2381751000,
    }


def check_llama_tool_call(message: Message) -> None:
    assert (message.content, message.reasoning) == ("", "")
    # Ollama gave the call no id: it has the one rxstream makes from its place and content.
    arguments = '{"firstNumber":1,"secondNumber":1}'
    made = generated_call_id(0, "sum", arguments)
    assert message.tool_calls == (ToolCall(0, made, "sum", arguments),)
    assert message.tool_calls[0].parse_arguments() == {"firstNumber": 1, "secondNumber": 1}
    # Ollama says "stop" for a turn that asks for tools.
    assert (message.finish_reason, message.finish_raw) == ("tool_calls", "stop")
    assert message.usage == Usage(169, 22, 191)
    assert message.metadata["model"] == "llama3.1"
    assert message.metadata["total_duration"] == 28825672145


RECORDINGS = [
    pytest.param("chat-phi3-tail-excerpt.ndjson", check_phi3, id="phi3-text"),
    pytest.param("chat-tool-call-llama3.1.ndjson", check_llama_tool_call, id="llama3.1-tool"),
]

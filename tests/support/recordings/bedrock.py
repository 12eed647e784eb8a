"""What tests/data/bedrock/converse-stream-text.eventstream means: the one message it decodes to."""

from __future__ import annotations

from rxstream.models import (
    Message,
    Usage,
)


def check_recording(message: Message) -> None:
    assert message.content == "2 + 2 = 4."
    assert message.reasoning == ""
    assert message.tool_calls == ()
    assert (message.finish_reason, message.finish_raw) == ("stop", "end_turn")
    assert message.usage == Usage(37, 15, 52)
    assert message.usage is not None
    assert message.usage.raw == {"inputTokens": 37, "outputTokens": 15, "totalTokens": 52}
    assert message.metadata == {"metrics": {"latencyMs": 1382}}
    assert (message.citations, message.server_tools, message.reasoning_state) == ((), (), ())

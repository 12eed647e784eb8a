"""What each Cohere recording in tests/data/cohere means: one check a recording."""

from __future__ import annotations

from rxstream.models import (
    Message,
    Usage,
)

PLAN = (
    "I will use the weather tool to find the weather in San Francisco and the cityAttractions "
    "tool to find attractions in San Francisco."
)


def check_text(message: Message) -> None:
    assert message.content == "The capital of France is Paris."
    assert message.reasoning == ""
    assert message.tool_calls == ()
    assert (message.finish_reason, message.finish_raw) == ("stop", "COMPLETE")
    assert message.usage == Usage(507, 10, 517, cached_tokens=448)
    assert message.usage.raw is not None
    assert message.usage.raw["billed_units"] == {"input_tokens": 12, "output_tokens": 7}
    assert message.metadata == {"id": "321d178c-2c12-44d3-ae42-2f5510f6b1cc"}


def check_tool_call(message: Message) -> None:
    assert message.content == ""
    assert message.reasoning == PLAN
    calls = [(c.index, c.id, c.name, c.arguments) for c in message.tool_calls]
    assert calls == [
        (0, "weather_e8p4pn45zt0t", "weather", '{"location": "San Francisco"}'),
        (1, "cityAttractions_pyxssbwnq9fq", "cityAttractions", '{"city": "San Francisco"}'),
    ]
    assert [c.parse_arguments() for c in message.tool_calls] == [
        {"location": "San Francisco"},
        {"city": "San Francisco"},
    ]
    assert (message.finish_reason, message.finish_raw) == ("tool_calls", "TOOL_CALL")
    assert message.usage == Usage(1549, 95, 1644, cached_tokens=1504)
    assert message.metadata == {"id": "2941521a-b87a-45f6-9b0d-235fd66c3025"}


RECORDINGS = {"v2-text.sse": check_text, "v2-tool-call.sse": check_tool_call}

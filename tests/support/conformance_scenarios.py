"""The scenarios the official SDKs, the AI SDK client and the JS clients read from `FakeLLMServer`.

`SCENARIOS` are the answers every reader must read as rxstream does (text, reasoning, parallel
tool calls, cached usage, a length finish, keep-alives); `ERROR_MID_STREAM` and `HTTP_429` the
failures each reader must report as its own exception.
"""

from __future__ import annotations

import rxstream as rs
from rxstream.testing.server import Keepalive, Scenario

CALLS = [
    rs.ToolCallDelta(0, '{"city": ', id="call_1", name="weather"),
    rs.ToolCallDelta(0, '"Paris", "days": [1, 2]}'),
    rs.ToolCallDelta(1, '{"q": "rx"}', id="call_2", name="search"),
]

SCENARIOS = {
    # The OpenAI-shaped chunks of `Scenario.text`, played in every dialect.
    "text": Scenario.text("Hel", "lo, ", "world"),
    "reasoning": Scenario.answer(
        rs.ReasoningDelta("Let me "),
        rs.ReasoningDelta("think."),
        rs.TextDelta("42"),
        rs.Finish("stop"),
        rs.Usage(9, 6, 15, reasoning_tokens=4),
    ),
    "parallel-tool-calls": Scenario.answer(
        rs.TextDelta("Checking."), *CALLS, rs.Finish("tool_calls"), rs.Usage(20, 11, 31)
    ),
    "usage-cached": Scenario.answer(
        rs.TextDelta("Hi"), rs.Finish("stop"), rs.Usage(100, 3, 103, cached_tokens=64)
    ),
    "length": Scenario.answer(rs.TextDelta("Once upon"), rs.Finish("length"), rs.Usage(5, 2, 7)),
    "keepalives": Scenario(
        steps=(
            Keepalive(),
            *Scenario.answer(rs.TextDelta("a")).steps[:1],
            Keepalive(),
            Keepalive(),
            *Scenario.answer(rs.TextDelta("b"), rs.Finish("stop"), rs.Usage(1, 2, 3)).steps,
            Keepalive(),
        )
    ),
}

#: The provider's error event mid-stream (each SDK must raise what its users catch).
ERROR_MID_STREAM = Scenario.answer(
    rs.TextDelta("Hel"),
    rs.ProviderError("the model is overloaded", type="overloaded_error", code=529),
    end=False,
)

HTTP_429 = Scenario.error(
    429, "Rate limit reached", type="rate_limit_error", headers={"Retry-After": "1"}
)

"""What each Anthropic recording in tests/data/anthropic means: one check a recording."""

from __future__ import annotations

import pytest

from rxstream.errors import (
    ToolArgumentsError,
)
from rxstream.models import (
    Message,
    ServerToolCall,
    ServerToolResult,
    TextBlock,
    ToolCall,
    Usage,
)
from tests.support.json_paths import json_path  # noqa: F401  (every test runs on both JSON paths)
from tests.support.recordings import sha


def check_text_minimal(m: Message) -> None:
    assert m.content == "2"
    assert m.reasoning == ""
    assert m.tool_calls == ()
    assert (m.finish_reason, m.finish_raw) == ("stop", "end_turn")
    assert m.usage == Usage(20, 5, 25, None, 0, cache_write_tokens=0)
    assert m.usage is not None
    assert m.usage.raw is not None
    assert m.usage.raw["inference_geo"] == "not_available"
    assert m.metadata == {
        "id": "msg_018E1hg8GoVTGEKQY3ovMcSJ",
        "model": "claude-sonnet-4-5-20250929",
    }
    assert m.citations == ()
    assert m.server_tools == ()
    assert m.reasoning_state == ()


THINKING = (
    "This is a straightforward question about pedestrian safety. I should provide clear, helpful "
    "advice about how to safely cross a street. This is basic safety information that could help "
    "prevent accidents."
)


def check_thinking(m: Message) -> None:
    assert m.reasoning == THINKING
    assert len(m.reasoning) == 202
    assert len(m.content) == 1021
    assert sha(m.content) == "1b0c432c3a48"
    assert m.content.startswith("Here are the basic steps for safely cros")
    assert m.content.endswith("safety over speed when crossing streets.")
    (state,) = m.reasoning_state
    assert state.kind == "thinking"
    assert state.text == THINKING
    assert len(state.data) == 504
    assert state.data.startswith("EvMCCkYICxgCKkCHP2cSuEdc")
    assert state.data.endswith("jfQYAQ==")
    assert state.raw == {"type": "thinking", "thinking": THINKING, "signature": state.data}
    assert (m.finish_reason, m.finish_raw) == ("stop", "end_turn")
    assert m.usage == Usage(43, 282, 325, None, 0, cache_write_tokens=0)
    assert m.tool_calls == ()
    assert m.citations == ()
    assert m.server_tools == ()


REDACTED_TEXT = (
    "I notice that you've sent what appears to be some kind of test string or command. I don't "
    'have any special "magic string" triggers or backdoor commands that would expose internal '
    "systems or change my behavior.\n\nI'm Claude, an AI assistant created by Anthropic to be "
    "helpful, harmless, and honest. How can I assist you today with a legitimate task or question?"
)


def check_redacted(m: Message) -> None:
    assert m.content == REDACTED_TEXT
    assert len(m.content) == 359
    assert sha(m.content) == "33e0d169251b"
    assert m.reasoning == ""
    first, second = m.reasoning_state
    assert first.kind == second.kind == "redacted_thinking"
    assert (len(first.data), first.data[:24], first.data[-8:]) == (
        744,
        "EqkECkYIBxgCKkA8AZ4noDfV",
        "4ewJ/hgB",
    )
    assert (len(second.data), second.data[:24], second.data[-8:]) == (
        296,
        "EtgBCkYIBxgCKkDQfGkwzflE",
        "Z1J0GAE=",
    )
    assert first.raw == {"type": "redacted_thinking", "data": first.data}
    assert (m.finish_reason, m.finish_raw) == ("stop", "end_turn")
    assert m.usage == Usage(92, 189, 281, None, 0, cache_write_tokens=0)
    assert m.tool_calls == ()


def check_tool_use(m: Message) -> None:
    assert m.content == "I'll check the current weather in Paris for you."
    (call,) = m.tool_calls
    assert call == ToolCall(
        0, "toolu_01NRLabsLyVHZPKxbKvkfSMn", "get_weather", '{"location": "Paris"}'
    )
    assert call.parse_arguments() == {"location": "Paris"}
    assert (m.finish_reason, m.finish_raw) == ("tool_calls", "tool_use")
    assert m.usage == Usage(377, 65, 442, None, 0, cache_write_tokens=0)
    assert m.metadata == {"id": "msg_019Q1hrJbZG26Fb9BQhrkHEr", "model": "claude-sonnet-4-20250514"}


def check_tool_no_args(m: Message) -> None:
    assert m.content == "I'll update the issue list for you."
    (call,) = m.tool_calls
    assert call == ToolCall(0, "toolu_01QE1WLsSVp5hy5Q3GmGTmjP", "updateIssueList", "{}")
    assert call.parse_arguments() == {}
    assert (m.finish_reason, m.finish_raw) == ("tool_calls", "tool_use")
    assert m.usage == Usage(565, 48, 613, None, 0, cache_write_tokens=0)


TAX_TEXT = (
    "I'll create a comprehensive tax guide for someone with multiple W2s and save it in a file "
    "called taxes.txt. Let me do that for you now."
)
TAX_ARGS = (
    '{"filename": "taxes.txt", "lines_of_text": [\n"# COMPREHENSIVE TAX GUIDE FOR INDIVIDUALS '
    'WITH MULTIPLE W-2s",\n"",\n"## INTRODUCTION",\n"",\n"Filing taxes'
)


def check_max_tokens(m: Message) -> None:
    assert m.content == TAX_TEXT
    assert len(m.content) == 135
    (call,) = m.tool_calls
    assert call == ToolCall(0, "toolu_01EKqbqmZrGRXy18eN7m9kvY", "make_file", TAX_ARGS)
    with pytest.raises(ToolArgumentsError):
        call.parse_arguments()
    # Not a truncation: message_stop came; the model ran out of tokens.
    assert (m.finish_reason, m.finish_raw) == ("length", "max_tokens")
    assert m.usage == Usage(450, 124, 574, None, 0, cache_write_tokens=0)


SEARCH_1 = "srvtoolu_01NcU4XNwyxWK6a9tcJZ8wGY"
SEARCH_2 = "srvtoolu_01WiP3ZfXZXSykVQEL78XJ4T"
# (start, end, url) of each citation: the span of its text block in the answer.
CITATIONS = [
    (280, 461, "https://www.npr.org/sections/news/"),
    (280, 461, "https://abcnews.go.com/"),
    (463, 548, "https://abcnews.go.com/"),
    (
        550,
        742,
        "https://www.cnn.com/2025/07/14/us/5-things-to-know-for-july-14-immigration-gaza-"
        "epstein-files-kentucky-shooting-texas-flooding",
    ),
    (796, 962, "https://www.cnn.com/"),
    (964, 1135, "https://www.cbsnews.com/world/"),
    (1137, 1221, "https://edition.cnn.com/"),
    (1260, 1355, "https://www.npr.org/sections/news/"),
    (1357, 1612, "https://abcnews.go.com/International"),
]


def check_web_search(m: Message) -> None:
    assert len(m.content) == 1792
    assert sha(m.content) == "7f67a541a0aa"
    assert m.content.startswith("Let me search for more specific breaking")
    assert m.content.endswith("ion disruptions affecting North America.")
    assert m.tool_calls == ()
    assert m.reasoning == ""
    call1, result1, call2, result2 = m.server_tools
    assert call1 == ServerToolCall(SEARCH_1, "web_search", {"query": "top world news today"})
    assert call2 == ServerToolCall(
        SEARCH_2, "web_search", {"query": "breaking news headlines August 14 2025"}
    )
    for result, call_id, first_url in (
        (result1, SEARCH_1, "https://www.cnn.com/world"),
        (result2, SEARCH_2, "https://edition.cnn.com/"),
    ):
        assert isinstance(result, ServerToolResult)
        assert (result.call_id, result.name) == (call_id, "web_search_tool_result")
        assert len(result.content) == 10
        assert result.content[0]["url"] == first_url
        assert all(r["type"] == "web_search_result" for r in result.content)
        assert result.raw is not None
        assert result.raw["tool_use_id"] == call_id
    assert [(c.start, c.end, c.url) for c in m.citations] == CITATIONS
    assert {c.kind for c in m.citations} == {"web_search_result_location"}
    first = m.citations[0]
    assert first.title == "News: U.S. and World News Headlines : NPR"
    assert first.text is not None
    assert first.text.startswith("Filip Singer/Getty Images Europe")
    assert first.raw is not None
    assert "encrypted_index" in first.raw
    assert m.content[280:461].startswith("European leaders held a high-stakes meeting")
    assert m.citations[1].text == ""  # sent as "" (kept, not None)
    assert (m.finish_reason, m.finish_raw) == ("stop", "end_turn")
    # message_delta's input_tokens (31772) supersedes message_start's (2050).
    assert m.usage == Usage(31772, 644, 32416, None, 0, cache_write_tokens=0)
    assert m.usage is not None
    assert m.usage.raw is not None
    assert m.usage.raw["server_tool_use"] == {"web_search_requests": 2}


COMPACTION_SUMMARY = (
    "The user asked for the tide times at Brest on 3 May; the assistant gave the two high "
    "tides and offered the low tides too."
)
COMPACTION_SEALED = (
    "EqQBCkgIDxACGAIqQHJ4c3RyZWFtIHdyaXR0ZW4gY29tcGFjdGlvbiBmaXh0dXJlEgxzZWFsZWQtYnlvdGVz"
)


def check_compaction(m: Message) -> None:
    # Written by hand in the shape the anthropic SDK's own compaction fixture has: the block
    # opens with null content and encrypted_content, one compaction_delta brings both.
    (state,) = m.reasoning_state
    assert (state.kind, state.data) == ("compaction", COMPACTION_SUMMARY)
    assert state.raw == {
        "type": "compaction",
        "content": COMPACTION_SUMMARY,
        "encrypted_content": COMPACTION_SEALED,
    }
    assert m.content == "The low tides at Brest on 3 May are at 04:12 and 16:37."
    assert m.blocks == (state, TextBlock(m.content))
    assert (m.finish_reason, m.finish_raw) == ("stop", "end_turn")
    assert m.usage == Usage(52, 41, 93, raw={"input_tokens": 52, "output_tokens": 41})
    assert m.metadata == {"id": "msg_01RxWrittenCompaction0001", "model": "claude-sonnet-4-6"}


RECORDINGS = {
    "compaction-written.sse": check_compaction,
    "text-minimal-padded.sse": check_text_minimal,
    "thinking-signature-padded.sse": check_thinking,
    "redacted-thinking.sse": check_redacted,
    "tool-use-input-json.sse": check_tool_use,
    "tool-no-args-interleaved-pings.sse": check_tool_no_args,
    "max-tokens-truncated-tool-json-padded.sse": check_max_tokens,
    "web-search-server-tool-citations.sse": check_web_search,
}

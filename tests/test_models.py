"""Items and errors: the value semantics and messages users rely on."""

from __future__ import annotations

import pytest

import rxstream as rs
from rxstream.errors import excerpt


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ('{"city": "Paris"}', {"city": "Paris"}),
        ("", {}),
        ("   ", {}),
        ('{"a": [1, {"b": null}]}', {"a": [1, {"b": None}]}),
    ],
    ids=["object", "empty", "blank", "nested"],
)
def test_parse_arguments(arguments: str, expected: dict[str, object]) -> None:
    assert rs.ToolCall(0, "call_1", "f", arguments).parse_arguments() == expected


@pytest.mark.parametrize(
    ("arguments", "reason"),
    [('{"city": "Par', "invalid JSON"), ("[1, 2]", "a JSON list"), ("42", "a JSON int")],
    ids=["truncated", "array", "number"],
)
def test_parse_arguments_errors_name_the_call_and_quote_the_text(
    arguments: str, reason: str
) -> None:
    call = rs.ToolCall(3, "call_9", "get_weather", arguments)
    with pytest.raises(rs.ToolArgumentsError) as info:
        call.parse_arguments()
    message = str(info.value)
    assert "get_weather" in message
    assert "call_9" in message
    assert reason in message
    assert arguments[:10] in message
    assert info.value.arguments == arguments


def test_arguments_nested_past_the_decoder_are_a_tool_arguments_error() -> None:
    call = rs.ToolCall(0, "c", "f", '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(rs.ToolArgumentsError, match="nested deeper than the decoder allows"):
        call.parse_arguments()


def test_tool_arguments_error_quotes_a_bounded_excerpt() -> None:
    call = rs.ToolCall(0, "c", "f", '{"x": "' + "y" * 10_000)
    with pytest.raises(rs.ToolArgumentsError) as info:
        call.parse_arguments()
    assert len(str(info.value)) < 600


def test_excerpt_bounds_text_and_bytes() -> None:
    assert excerpt("short") == "short"
    assert excerpt("x" * 1000, limit=5) == "xxxxx… (1000 chars)"
    assert excerpt(b"\xff" + b"a" * 1000, limit=3) == "\ufffdaa… (1001 bytes)"


def test_message_defaults() -> None:
    message = rs.Message()
    assert (message.role, message.content, message.reasoning, message.refusal) == (
        "assistant",
        "",
        "",
        "",
    )
    assert message.tool_calls == ()
    assert message.finish_reason is None
    assert message.usage is None


def test_token_count_total_is_the_sum_of_local_counts() -> None:
    count = rs.TokenCount(text=3, reasoning=4, refusal=1, tool_arguments=2)
    assert count.total == 10


def test_chat_chunk_properties_read_raw() -> None:
    chunk = rs.ChatChunk(
        {"id": "c1", "model": "m", "choices": [{"index": 0}, "junk"], "usage": None, "x": 1}
    )
    assert (chunk.id, chunk.model, chunk.usage) == ("c1", "m", None)
    assert chunk.choices == [{"index": 0}]
    assert chunk.raw["x"] == 1
    assert rs.ChatChunk({}).choices == []


@pytest.mark.parametrize(
    ("error", "fragments"),
    [
        (
            rs.HTTPStatusError(
                429,
                reason="Too Many Requests",
                provider_message="Rate limit reached",
                retry_after=2.0,
                request="POST http://127.0.0.1:1/v1/chat/completions",
            ),
            ["429", "Too Many Requests", "Rate limit reached", "retry after 2 s", "POST"],
        ),
        (rs.HTTPStatusError(500, body="oops"), ["HTTP 500", "oops"]),
        (
            rs.ProviderError("Token limit reached", type="invalid_request", code=400),
            ["provider error", "invalid_request", "400", "Token limit reached"],
        ),
        (rs.MalformedChunkError("invalid JSON", '{"a": '), ["malformed chunk", '{"a": ']),
        (rs.StreamTimeoutError("idle", 2.5), ["'idle'", "2.5 s"]),
        (rs.LineTooLongError(10, "data: xxxxxxx"), ["limit of 10", "data: xxx"]),
        (
            rs.UnexpectedContentTypeError("application/json", status_code=200, body="{}"),
            ["application/json", "stream: true", "200"],
        ),
    ],
    ids=["429", "500", "provider", "malformed", "timeout", "line", "content-type"],
)
def test_error_messages_say_what_arrived(error: rs.StreamError, fragments: list[str]) -> None:
    for fragment in fragments:
        assert fragment in str(error)

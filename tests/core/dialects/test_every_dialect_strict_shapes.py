"""A value of the wrong type from the wire is a `StreamError` in every dialect, never a crash.

Issue 18, item 6: every field of every event recorded in tests/data (one
event per event type and field path, for each dialect) is set in turn to
`{}`, `[]`, `0`, `""`, `False` and `None`, and the whole stream is decoded
again, by the dialect's decoder (item by item and all at once, as the
operators feed it). The outcome must be a normal end or a `StreamError`
(`MalformedChunkError` naming the dialect, mostly); any other exception
(`TypeError: unhashable type`, `AttributeError`, ...) is a decoder that
let a wrong type through to a dict key, a set, `len()`, a string method or
arithmetic.

Item 8: the silent drops the issue names are `MalformedChunkError`s naming
the dialect and the field path.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import rxstream as rs
from rxstream.core import dialects
from rxstream.core.eventstream import encode_message
from tests.support.mutations import MUTATIONS, WRONG, mutated, pattern, text_of, with_text


def decode(dialect: str, items: list[Any], *, at_once: bool) -> None:
    decoder = dialects.decoder(dialect)
    if at_once:
        out: list[Any] = []
        decoder.feed_all(items, out)
    else:
        for item in items:
            decoder.feed(item)
            if decoder.done:
                break
    decoder.close()


def test_the_recordings_give_enough_mutations() -> None:
    assert len(MUTATIONS) > 1000
    assert {m[1] for m in MUTATIONS} == set(dialects.DIALECTS)


@pytest.mark.parametrize("dialect", dialects.DIALECTS)
def test_a_wrong_type_anywhere_is_a_stream_error(dialect: str) -> None:
    crashes: list[str] = []
    for name, where, items, n, path in MUTATIONS:
        if where != dialect:
            continue
        value = json.loads(text_of(items[n]))
        for k, new in enumerate(WRONG):
            stream = list(items)
            stream[n] = with_text(items[n], json.dumps(mutated(value, path, new)))
            try:
                decode(dialect, stream, at_once=bool(k % 2))
            except rs.StreamError:
                pass
            except Exception as exc:  # the point of the test: anything else is a crash
                crashes.append(f"{name} item {n} {pattern(path)} = {new!r}: {exc!r}")
    assert not crashes, f"{len(crashes)} crash(es):\n" + "\n".join(crashes[:40])


# --------------------------------------------------------------------- silent drops (item 8)


def frames_of(*events: tuple[str, Any]) -> list[rs.SSEFrame]:
    return [rs.SSEFrame(json.dumps(data), event) for event, data in events]


def malformed(dialect: str, items: list[Any]) -> rs.MalformedChunkError:
    with pytest.raises(rs.MalformedChunkError) as info:
        decode(dialect, items, at_once=False)
    assert info.value.dialect == dialect
    return info.value


@pytest.mark.parametrize("parts", [{}, 0, "", False, [], "x", 1])
def test_gemini_parts_of_a_wrong_type_are_malformed(parts: Any) -> None:
    chunk = {"candidates": [{"content": {"parts": parts, "role": "model"}, "finishReason": "STOP"}]}
    if parts == []:
        # An empty list is what Gemini sends for "no parts": an answer that only finished.
        decode("gemini", frames_of(("message", chunk)), at_once=False)
        return
    error = malformed("gemini", frames_of(("message", chunk)))
    assert error.reason.startswith("candidates[0].content.parts is ")


@pytest.mark.parametrize("kind", [{}, [], 0, False, None, 1.5])
def test_a_responses_output_item_type_of_a_wrong_type_is_malformed(kind: Any) -> None:
    response = {"id": "r", "status": "completed", "output": [{"type": kind, "id": "x"}]}
    events = frames_of(
        ("response.created", {"type": "response.created", "response": {"id": "r"}}),
        ("response.completed", {"type": "response.completed", "response": response}),
    )
    error = malformed("openai-responses", events)
    assert "response.output[0].type" in error.reason


@pytest.mark.parametrize("item_id", [{}, [], 0, False, 1.5])
def test_a_responses_item_id_of_a_wrong_type_is_malformed(item_id: Any) -> None:
    # It was a plain TypeError (unhashable dict) when response.completed matched the items.
    item = {"type": "message", "id": item_id, "role": "assistant", "content": []}
    response = {"id": "r", "status": "completed", "output": [item]}
    events = frames_of(
        ("response.created", {"type": "response.created", "response": {"id": "r"}}),
        (
            "response.output_item.done",
            {"type": "response.output_item.done", "output_index": 0, "item": item},
        ),
        ("response.completed", {"type": "response.completed", "response": response}),
    )
    error = malformed("openai-responses", events)
    assert error.reason.startswith("item.id is ")
    error = malformed("openai-responses", [events[0], events[2]])
    assert error.reason.startswith("response.output[0].id is ")


@pytest.mark.parametrize("part", [0, False, None, [], 1.5, ["a"]])
def test_chat_content_list_items_that_are_no_parts_are_malformed(part: Any) -> None:
    chunk = {"choices": [{"index": 0, "delta": {"content": [part]}, "finish_reason": None}]}
    error = malformed("openai-chat", frames_of(("message", chunk)))
    assert error.reason.startswith("choices[0].delta.content[0] is ")


def test_the_mutations_cover_bedrock_payloads_too() -> None:
    message = rs.EventStreamMessage(
        {":event-type": "messageStop", ":message-type": "event"}, b'{"stopReason": {}}'
    )
    assert encode_message(message.headers, message.payload)
    error = malformed("bedrock", [message])
    assert error.reason.startswith("stopReason is ")


# ------------------------------------------------- text and finish fields: what providers send


def event(name: str, data: Any) -> rs.EventStreamMessage:
    headers: dict[str, str | bytes | int | bool] = {":event-type": name, ":message-type": "event"}
    return rs.EventStreamMessage(headers, json.dumps(data).encode())


MISSING = object()


def put(obj: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    return obj if value is MISSING else {**obj, key: value}


A_START = {"type": "message_start", "message": {"id": "m", "model": "c", "usage": {}}}


def anthropic(kind: str, key: str, value: Any) -> list[Any]:
    block = {"type": "text", "text": ""} if kind == "text_delta" else {"type": "thinking"}
    return frames_of(
        ("message_start", A_START),
        (
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": block},
        ),
        (
            "content_block_delta",
            {"type": "content_block_delta", "index": 0, "delta": put({"type": kind}, key, value)},
        ),
    )


def responses_delta(value: Any) -> list[Any]:
    delta = put({"type": "response.output_text.delta", "output_index": 0}, "delta", value)
    return frames_of(
        ("response.created", {"type": "response.created", "response": {"id": "r"}}),
        ("response.output_text.delta", delta),
    )


def cohere_delta(value: Any) -> list[Any]:
    delta = {"message": {"content": put({}, "text", value)}}
    return frames_of(
        ("message-start", {"type": "message-start", "id": "x"}),
        ("content-delta", {"type": "content-delta", "index": 0, "delta": delta}),
    )


def gemini_part(value: Any) -> list[Any]:
    return frames_of(
        ("message", {"candidates": [{"content": {"parts": [put({}, "text", value)]}}]})
    )


def ollama_line(value: Any) -> list[Any]:
    message = put({"role": "assistant"}, "content", value)
    return [json.dumps({"model": "m", "message": message, "done": False})]


def bedrock_delta(value: Any) -> list[Any]:
    return [
        event("messageStart", {"role": "assistant"}),
        event("contentBlockDelta", {"contentBlockIndex": 0, "delta": put({}, "text", value)}),
    ]


def chat_delta(value: Any) -> list[Any]:
    return frames_of(("message", {"choices": [{"index": 0, "delta": put({}, "content", value)}]}))


# (id, dialect, items, the field path of the MalformedChunkError, or None: accepted).
# The rule per field is in each dialect's docs page (docs/dialects/<name>.md, "Strictness").
TEXT_FIELDS: list[tuple[str, str, list[Any], str | None]] = [
    (
        "anthropic text_delta.text null",
        "anthropic",
        anthropic("text_delta", "text", None),
        "delta.text",
    ),
    (
        "anthropic text_delta.text missing",
        "anthropic",
        anthropic("text_delta", "text", MISSING),
        "delta.text",
    ),
    (
        "anthropic thinking null",
        "anthropic",
        anthropic("thinking_delta", "thinking", None),
        "delta.thinking",
    ),
    ("responses delta null", "openai-responses", responses_delta(None), "delta"),
    ("responses delta missing", "openai-responses", responses_delta(MISSING), "delta"),
    ("cohere content text null", "cohere", cohere_delta(None), "delta.message.content.text"),
    ("cohere content text missing", "cohere", cohere_delta(MISSING), "delta.message.content.text"),
    ("gemini part text null", "gemini", gemini_part(None), "candidates[0].content.parts[0].text"),
    ("ollama content null", "ollama", ollama_line(None), "message.content"),
    ("ollama content missing (a tool or thinking line)", "ollama", ollama_line(MISSING), None),
    ("bedrock delta.text null", "bedrock", bedrock_delta(None), "delta.text"),
    ("openai-chat content null (DeepSeek, Mistral send it)", "openai-chat", chat_delta(None), None),
    ("openai-chat content missing", "openai-chat", chat_delta(MISSING), None),
]


@pytest.mark.parametrize(
    ("dialect", "items", "path"), [c[1:] for c in TEXT_FIELDS], ids=[c[0] for c in TEXT_FIELDS]
)
def test_text_fields_take_what_providers_send(
    dialect: str, items: list[Any], path: str | None
) -> None:
    decoder = dialects.decoder(dialect)
    if path is None:
        for item in items:
            assert not [d for d in decoder.feed(item) if isinstance(d, rs.TextDelta)]
        return
    for item in items[:-1]:
        decoder.feed(item)
    with pytest.raises(rs.MalformedChunkError) as info:
        decoder.feed(items[-1])
    assert info.value.dialect == dialect
    assert info.value.reason.startswith(f"{path} is ")


def finishes(dialect: str, items: list[Any]) -> list[rs.Finish]:
    decoder = dialects.decoder(dialect)
    out: list[Any] = []
    for item in items:
        out += decoder.feed(item)
    return [d for d in out if isinstance(d, rs.Finish)]


@pytest.mark.parametrize("value", [None, MISSING], ids=["null", "missing"])
def test_finish_fields_that_may_be_null_or_missing(value: Any) -> None:
    # Anthropic: stop_reason is null in every message_start (the recordings); a
    # message_delta without one finishes nothing (its message_stop still ends the stream).
    message = put({"id": "m", "usage": {}}, "stop_reason", value)
    start = {"type": "message_start", "message": message}
    delta = {"type": "message_delta", "delta": put({}, "stop_reason", value), "usage": {}}
    assert (
        finishes("anthropic", frames_of(("message_start", start), ("message_delta", delta))) == []
    )
    # Gemini: no finishReason until the last chunk.
    chunk = {"candidates": [put({"content": {"parts": [{"text": "a"}]}}, "finishReason", value)]}
    assert finishes("gemini", frames_of(("message", chunk))) == []
    # Ollama: older builds send no done_reason; done is the end, a plain stop.
    done = put({"message": {"content": ""}, "done": True}, "done_reason", value)
    assert finishes(
        "ollama", [json.dumps({"message": {"content": "a"}, "done": False}), json.dumps(done)]
    ) == [rs.Finish("stop")]
    # OpenAI chat: finish_reason is null (or missing: Z.ai, Snowflake) until the choice ends.
    assert finishes("openai-chat", chat_delta("a")) == []


@pytest.mark.parametrize("value", [{}, [], 0, False], ids=repr)
def test_finish_fields_of_a_wrong_type_are_malformed(value: Any) -> None:
    stop = {"type": "message_delta", "delta": {"stop_reason": value}, "usage": {}}
    malformed("anthropic", frames_of(("message_start", A_START), ("message_delta", stop)))
    chunk = {"candidates": [{"content": {"parts": [{"text": "a"}]}, "finishReason": value}]}
    malformed("gemini", frames_of(("message", chunk)))
    malformed("bedrock", [event("messageStop", {"stopReason": value})])
    end = {"type": "message-end", "delta": {"finish_reason": value}}
    malformed(
        "cohere", frames_of(("message-start", {"type": "message-start"}), ("message-end", end))
    )
    line = {"message": {"content": ""}, "done": True, "done_reason": value}
    malformed("ollama", [json.dumps(line)])

"""The `"openai-chat"` typed path: the usual chunks read by msgspec types, all else as before."""

from __future__ import annotations

import json
from typing import Any

import pytest

import rxstream as rs
import rxstream._typed as typed_decoding
from rxstream.core.dialects.openai_chat.reader import ChunkReader
from tests.support.typed import (
    assert_same_decoding,
)

pytest.importorskip("msgspec")
typed: Any = typed_decoding.typed("openai_chat")

DIALECT = "openai-chat"


def test_the_typed_module_is_used_with_msgspec() -> None:
    assert typed is not None
    assert typed_decoding.typed("openai_chat") is typed


def read_both(raw: str) -> tuple[bool, list[Any], ChunkReader, list[Any], ChunkReader]:
    """(whether the typed path took it, its deltas and reader; the general reader's)."""
    typed_reader, typed_out = ChunkReader(), list[Any]()
    handled = typed.ChunkFeeder(typed_reader).feed(raw, typed_out)
    reader, out = ChunkReader(), list[Any]()
    reader.read(json.loads(raw), out)
    return handled, typed_out, typed_reader, out, reader


def state(reader: ChunkReader) -> tuple[Any, ...]:
    return reader.seen, reader.finished, reader.roles, reader.usage


def choice(delta: Any = None, **fields: Any) -> dict[str, Any]:
    return {"index": 0, "delta": delta, **fields}


TAKEN = {
    "text": {"choices": [choice({"content": "Hi"})]},
    "role and empty text": {"choices": [choice({"role": "assistant", "content": ""})]},
    "the usual OpenAI chunk": {
        "id": "c",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "system_fingerprint": None,
        "service_tier": "default",
        "obfuscation": "x",
        "usage": None,
        "choices": [choice({"content": "a"}, finish_reason=None, logprobs=None)],
    },
    "reasoning_content": {"choices": [choice({"reasoning_content": "think"})]},
    "reasoning": {"choices": [choice({"reasoning": "think", "content": None})]},
    "both reasoning fields": {"choices": [choice({"reasoning_content": "", "reasoning": "r"})]},
    "reasoning then text": {"choices": [choice({"reasoning_content": "r", "content": "t"})]},
    "refusal": {"choices": [choice({"refusal": "no"})]},
    "a tool call start": {
        "choices": [
            choice(
                {
                    "tool_calls": [
                        {"index": 0, "id": "call_1", "type": "function", "function": {"name": "f"}}
                    ]
                }
            )
        ]
    },
    "tool call arguments": {
        "choices": [choice({"tool_calls": [{"index": 0, "function": {"arguments": '{"a"'}}]})]
    },
    "an empty tool id and name": {
        "choices": [
            choice(
                {"tool_calls": [{"index": 1, "id": "", "function": {"name": "", "arguments": ""}}]}
            )
        ]
    },
    "a tool call without function": {"choices": [choice({"tool_calls": [{"index": 0}]})]},
    "finish": {"choices": [choice({}, finish_reason="stop")]},
    "function_call finish": {"choices": [choice(None, finish_reason="function_call")]},
    "empty finish": {"choices": [choice({}, finish_reason="")]},
    "no delta": {"choices": [{"index": 2}]},
    "null index": {"choices": [{"index": None, "delta": {"content": "x"}}]},
    "two choices": {"choices": [choice({"content": "a"}), {"index": 1, "delta": {"content": "b"}}]},
    "empty choices": {"choices": []},
    "a big index": {"choices": [{"index": 2**70, "delta": {"content": "x"}}]},
    "ignored fields": {
        "choices": [
            choice(
                {"content": "x", "channel": "final"},
                content_filter_results={"hate": {}},
                matched_stop=None,
                native_finish_reason=None,
            )
        ],
        "provider": "p",
    },
}

LEFT = {
    "usage": {"choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 2}},
    "no choices": {"id": "x"},
    "an error": {"error": {"message": "boom"}},
    "an error type": {"type": "error", "message": "boom"},
    "an unknown field": {"choices": [choice({"content": "x"})], "novel": 1},
    "an unknown delta field": {"choices": [choice({"content": "x", "audio": {}})]},
    "content parts": {"choices": [choice({"content": [{"type": "text", "text": "x"}]})]},
    "legacy text": {"choices": [{"index": 0, "text": "x"}]},
    "arguments as an object": {
        "choices": [choice({"tool_calls": [{"index": 0, "function": {"arguments": {"a": 1}}}]})]
    },
    "a float index": {"choices": [{"index": 1.0, "delta": {"content": "x"}}]},
    "a bool index": {"choices": [{"index": True, "delta": {"content": "x"}}]},
    "a number for text": {"choices": [choice({"content": 1})]},
    "x_groq": {"choices": [], "x_groq": {"usage": {"prompt_tokens": 1}}},
    "citations": {"choices": [choice({"content": "x"})], "citations": ["https://a"]},
    "annotations": {"choices": [choice({"content": "x", "annotations": []})]},
    # Logprobs are the reader's to read (a `Metadata`); only a null stays typed.
    "logprobs": {"choices": [choice({"content": "x"}, logprobs={"content": []})]},
}


@pytest.mark.parametrize("chunk", TAKEN.values(), ids=TAKEN.keys())
def test_the_typed_path_reads_the_usual_chunks_as_the_reader_does(chunk: Any) -> None:
    handled, typed_out, typed_reader, out, reader = read_both(json.dumps(chunk))
    assert handled
    assert repr(typed_out) == repr(out)
    assert state(typed_reader) == state(reader)


@pytest.mark.parametrize("chunk", LEFT.values(), ids=LEFT.keys())
def test_what_the_types_do_not_know_goes_to_the_general_path(chunk: Any) -> None:
    reader, out = ChunkReader(), list[Any]()
    assert not typed.ChunkFeeder(reader).feed(json.dumps(chunk), out)
    assert out == []
    assert state(reader) == state(ChunkReader())


@pytest.mark.parametrize(
    "data",
    [
        '{"choices": [{"delta": {"content": "a", "content": "b"}}]}',  # the last one counts
        '{"choices": [{"delta": {"content": "a"}}], "choices": []}',
        '{"choices": [{"delta": {"content": "\\ud800"}}]}',  # a lone surrogate
        '{"choices": [{"delta": {"content": "\\ud83d\\ude00"}}]}',
        '{"choices": [{"delta": {"content": "x"}}], "created": NaN}',
        '{"choices": [{"delta": {"content": "x"}}], "created": 1e400}',
        '{"choices": [{"delta": {"content": "x"}, "index": -0}]}',
        ' {"choices": [{"delta": {"content": ""}, "finish_reason": "stop"}]} ',
        '{"choices": [{"delta": {"content": "x"}}]}x',
        '{"choices": [{"delta": {"content": "x"}}',
        '{"choices": [{"delta": {"content": "x"}}]}\x00',
        "[DONE]",
        "",
        "[]",
        "null",
    ],
)
@pytest.mark.parametrize("skip", [False, True])
def test_edge_cases_give_the_same_deltas_and_errors(data: str, skip: bool) -> None:
    frames = [rs.SSEFrame(data), rs.SSEFrame('{"choices": [{"finish_reason": "stop"}]}')]
    for at_once in (False, True):
        assert_same_decoding(DIALECT, frames, at_once=at_once, skip=skip)

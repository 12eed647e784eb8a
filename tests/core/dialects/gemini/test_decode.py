"""The Gemini decoder's fast paths read what its plain path reads (three shapes a fuzz found).

The fast paths read the usual chunk (one candidate, one text part, the usage so
far) by a `Template` of the last such chunk, or into msgspec types; what they
make of a chunk must be what the plain path (`RXSTREAM_NO_FAST=1`) makes of it:
a lone surrogate in a text, the word `usageMetadata` in a text, a
`usageMetadata` without token counts.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import rxstream as rs
from rxstream.core.dialects import _shared
from rxstream.core.dialects._shared import Template
from tests.support.fast import WAYS, Outcome, outcome

JSONObject = dict[str, Any]

PIPELINE = lambda: [rs.lines(), rs.sse_frames(), rs.decode("gemini")]  # noqa: E731


def _chunk(text: str, usage: JSONObject | None = None, finish: str | None = None) -> JSONObject:
    candidate: JSONObject = {"content": {"parts": [{"text": text}], "role": "model"}, "index": 0}
    if finish is not None:
        candidate["finishReason"] = finish
    chunk: JSONObject = {"candidates": [candidate]}
    if usage is not None:
        chunk["usageMetadata"] = usage
    chunk["modelVersion"] = "gemini-2.5-flash"
    return chunk


def _event(chunk: JSONObject) -> str:
    return f"data: {json.dumps(chunk)}\r\n\r\n"


def _counts(prompt: int, answer: int) -> JSONObject:
    return {
        "promptTokenCount": prompt,
        "candidatesTokenCount": answer,
        "totalTokenCount": prompt + answer,
    }


def _reads(*reads: list[JSONObject]) -> list[bytes]:
    """Each read the events of its chunks (a lone surrogate kept as the JSON escape it is)."""
    return ["".join(map(_event, chunks)).encode() for chunks in reads]


def _usage(seen: Outcome) -> list[rs.Usage]:
    return [item for item in seen[0] if isinstance(item, rs.Usage)]


def _texts(seen: Outcome) -> str:
    return "".join(item.text for item in seen[0] if isinstance(item, rs.TextDelta))


@pytest.mark.parametrize("way", WAYS)
def test_a_lone_surrogate_in_the_last_template_read_chunk_of_a_read_reads_on(way: str) -> None:
    # json.dumps writes "\ud800" as the escape `\ud800`, which msgspec refuses
    # and the standard library reads (as the plain path does).
    first = [
        _chunk("Hel", _counts(3, 1)),
        _chunk("lo", _counts(3, 2)),
        _chunk("\ud800", _counts(3, 3)),
    ]
    reads = _reads(first, [_chunk("!", _counts(3, 4), "STOP")])
    seen = outcome(reads, PIPELINE, way)
    assert seen[2] == []
    assert _texts(seen) == "Hello\ud800!"
    assert [(u.prompt_tokens, u.completion_tokens) for u in _usage(seen)] == [(3, 4)]
    assert seen == outcome(reads, PIPELINE, "plain")


@pytest.mark.parametrize("way", WAYS)
def test_the_word_usage_metadata_in_a_text_is_text(way: str) -> None:
    first = [_chunk("Hel"), _chunk("usageMetadata"), _chunk('"usageMetadata": 1')]
    reads = _reads(first, [_chunk("!", None, "STOP")])
    seen = outcome(reads, PIPELINE, way)
    assert seen[2] == []
    assert _texts(seen) == 'HelusageMetadata"usageMetadata": 1!'
    assert _usage(seen) == []
    assert seen == outcome(reads, PIPELINE, "plain")


@pytest.mark.parametrize("way", WAYS)
def test_a_usage_metadata_without_counts_is_no_usage(way: str) -> None:
    # Vertex sends `{"trafficType": "ON_DEMAND"}` where it has no counts yet.
    traffic = {"trafficType": "ON_DEMAND"}
    first = [_chunk("Hel", traffic), _chunk("lo", traffic), _chunk(" there", traffic)]
    reads = _reads(first, [_chunk("!", traffic, "STOP")])
    seen = outcome(reads, PIPELINE, way)
    assert seen[2] == []
    assert _texts(seen) == "Hello there!"
    assert _usage(seen) == []
    assert seen == outcome(reads, PIPELINE, "plain")


@pytest.mark.parametrize("way", WAYS)
def test_an_empty_usage_metadata_keeps_the_counts_before_it(way: str) -> None:
    first = [_chunk("Hel", _counts(3, 1)), _chunk("lo", {}), _chunk(" there", {})]
    reads = _reads(first, [_chunk("!", {}, "STOP")])
    seen = outcome(reads, PIPELINE, way)
    assert seen[2] == []
    usage = _usage(seen)
    assert [(u.prompt_tokens, u.completion_tokens, u.raw) for u in usage] == [(3, 1, _counts(3, 1))]
    assert seen == outcome(reads, PIPELINE, "plain")


def test_a_long_stream_compiles_its_template_and_reads_alike(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A template reads part by part, then (after `_COMPILE_AT` reads) with its one
    # compiled pattern: the stream reads alike every way across the switch.
    compiled: list[Template] = []
    original = Template._compile

    def counted(self: Template) -> Any:
        compiled.append(self)
        return original(self)

    monkeypatch.setattr(Template, "_compile", counted)
    count = _shared._COMPILE_AT + 40
    chunks = [_chunk(f"w{i} ", _counts(3, i)) for i in range(count)]
    reads = _reads(chunks[:300], chunks[300:], [_chunk("!", _counts(3, count), "STOP")])
    seen = outcome(reads, PIPELINE, "stdlib")
    assert compiled  # the switch was crossed
    assert seen[2] == []
    assert _texts(seen) == "".join(f"w{i} " for i in range(count)) + "!"
    assert [u.completion_tokens for u in _usage(seen)] == [count]
    assert seen == outcome(reads, PIPELINE, "plain") == outcome(reads, PIPELINE, "typed")

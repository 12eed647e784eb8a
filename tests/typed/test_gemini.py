"""Gemini's typed decoding (`rxstream._typed.gemini`) gives what the general path gives.

Table cases of each chunk the types know (and of the ones they leave to the
general path), every recording whole, cut at random and damaged, chunks made
up by hypothesis with wrong types, nulls, big and fractional numbers,
duplicate keys, escapes and fields the types do not declare, and the
wrong-type mutations of `test_every_dialect_strict_shapes`: both paths must
agree on the items, the error (class and message) and the end.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rxstream.core.dialects.gemini import GeminiDecoder
from rxstream.core.pipeline import Handoff
from rxstream.models import SSEFrame
from tests.support.fast import way
from tests.support.mutations import (
    MUTATIONS,
    WRONG,
    mutated,
    text_of,
    with_text,
)
from tests.support.pipelines import pipelines
from tests.support.typed_gemini_ollama_bedrock import (
    Outcome,
    assert_both_alike,
    assert_decoded_alike,
    cut,
    damaged,
    recordings,
)

pytest.importorskip("msgspec")

FILES = recordings("gemini")
PIPELINES = pipelines("gemini")


def sse(*chunks: str) -> bytes:
    return b"".join(f"data: {chunk}\r\n\r\n".encode() for chunk in chunks)


def strings_outcome(datas: list[str], *, typed: bool) -> Outcome:
    """A decoder taking bare data strings (as fused behind the SSE parser), in one `feed_all`."""
    out: list[Any] = []
    errors: list[tuple[str, str]] = []
    with way("typed" if typed else "stdlib"):
        decoder = GeminiDecoder()
    assert decoder._take(Handoff.STRINGS)
    try:
        decoder.feed_all(datas, out)
        out += decoder.close()
    except Exception as exc:
        errors.append((type(exc).__name__, str(exc)))
    return out, repr(out), errors, [not errors]


def assert_all_alike(*chunks: str) -> Outcome:
    """Every way in: the pipelines, the decoder fed frames, and fed bare strings."""
    body = sse(*chunks)
    for name in PIPELINES:
        assert_both_alike([body], PIPELINES[name])
    frames = [SSEFrame(chunk) for chunk in chunks]
    first = assert_decoded_alike("gemini", frames)
    strings = strings_outcome(list(chunks), typed=True)
    assert strings == strings_outcome(list(chunks), typed=False)
    assert strings == first
    return first


TEXT = '{"candidates": [{"content": {"parts": [{"text": "Hi"}], "role": "model"}, "index": 0}]}'
END = (
    '{"candidates": [{"content": {"parts": [{"text": "!"}], "role": "model"}, '
    '"finishReason": "STOP", "index": 0}], "usageMetadata": {"promptTokenCount": 3, '
    '"candidatesTokenCount": 2, "totalTokenCount": 5}, "modelVersion": "m", "responseId": "r"}'
)

#: Chunks the types know: each stream must take the typed path for every chunk.
TYPED_CASES = {
    "text then finish": [TEXT, END],
    "thought parts": [
        '{"candidates": [{"content": {"parts": [{"text": "hm", "thought": true}]}}]}',
        '{"candidates": [{"content": {"parts": [{"thought": false, "text": "ok"}]}}]}',
        END,
    ],
    "empty texts": ['{"candidates": [{"content": {"parts": [{"text": ""}]}}]}', TEXT, END],
    "no index, null index": [
        '{"candidates": [{"content": {"parts": [{"text": "a"}]}, "index": null}]}',
        '{"candidates": [{"content": {"parts": [{"text": "b"}]}}]}',
        END,
    ],
    "null and empty content": [
        '{"candidates": [{"content": null}]}',
        '{"candidates": [{"content": {}}]}',
        '{"candidates": [{"content": {"parts": []}}]}',
        '{"candidates": [{"content": {"parts": null, "role": null}}]}',
        TEXT,
        END,
    ],
    "ids change": [
        '{"candidates": [{"content": {"parts": [{"text": "a"}]}}], "responseId": "1"}',
        '{"candidates": [{"content": {"parts": [{"text": "b"}]}}], "responseId": "2",'
        ' "modelVersion": "m", "createTime": "2025-01-01T00:00:00Z"}',
        '{"candidates": [{"content": {"parts": [{"text": "c"}]}}], "responseId": null}',
        END,
    ],
    "usage in every chunk, the last with counts wins": [
        '{"candidates": [{"content": {"parts": [{"text": "a"}]}}], "usageMetadata":'
        ' {"promptTokenCount": 1, "totalTokenCount": 1, "promptTokensDetails":'
        ' [{"modality": "TEXT", "tokenCount": 1}]}}',
        '{"candidates": [{"content": {"parts": [{"text": "b"}]}}], "usageMetadata": {}}',
        '{"candidates": [{"content": {"parts": [{"text": "c"}]}}], "usageMetadata": null}',
        '{"candidates": [{"content": {"parts": [], "role": "model"},'
        ' "finishReason": "MAX_TOKENS"}]}',
    ],
    "usage with thoughts and big numbers": [
        TEXT,
        '{"candidates": [{"finishReason": "STOP"}], "usageMetadata": {"promptTokenCount":'
        ' 123456789012345678901234567890, "thoughtsTokenCount": 2, "cachedContentTokenCount": 1}}',
    ],
    "two candidates": [
        '{"candidates": [{"content": {"parts": [{"text": "a"}]}, "index": 0},'
        ' {"content": {"parts": [{"text": "b"}]}, "index": 1}]}',
        '{"candidates": [{"finishReason": "STOP", "index": 1}]}',
        '{"candidates": [{"content": {"parts": [{"text": "c"}]}, "index": 0}]}',
        '{"candidates": [{"finishReason": "SAFETY", "index": 0}]}',
    ],
    "no candidates yet": ['{"candidates": []}', TEXT, END],
    "escapes, non-ASCII and blanks": [
        ' {"candidates": [{"content": {"parts": [{"te\\u0078t": "caf\\u00e9 \\ud83d\\ude00"}]}}]} ',
        '{"candidates": [{"content": {"parts": [{"text": "\\u00e9\\n\\"\\\\"}]}}]}',
        END,
    ],
    "finish reasons": [
        TEXT,
        '{"candidates": [{"content": {"parts": [{"text": "x"}]}, "finishReason": "OTHER"}]}',
    ],
}


def same_but_text(*texts: str, template: str = TEXT.replace('"Hi"', "{}")) -> list[str]:
    """Chunks alike but for their text (given as JSON string literals): read as one skeleton."""
    return [template.replace("{}", text) for text in texts]


#: Streams of chunks alike but for one JSON string (`GeminiDecoder._learn`), each ending in END.
SKELETON_CASES = {
    "plain": [*same_but_text('"a"', '"b"', '""', '"c d"'), END],
    "escapes in the text": [
        *same_but_text('"a"', '"\\u00e9\\n"', '"\\"text\\""', '"\\ud800"'),
        END,
    ],
    "a broken string": [*same_but_text('"a"', '"b"', '"\\x"'), END],
    "a control character": [*same_but_text('"a"', '"b"', '"\t"'), END],
    "a string that ends early": [*same_but_text('"a"', '"b"', '"c", "d"', '"e"'), END],
    "another value": [*same_but_text('"a"', '"b"', "1", "null", '"c"'), END],
    "thoughts": [
        *same_but_text(
            '"a"',
            '"b"',
            '""',
            template='{"candidates": [{"content": {"parts":'
            ' [{"thought": true, "text": {}}]}, "index": 0}], "responseId": "r"}',
        ),
        END,
    ],
    "a key spelled twice": [
        *same_but_text(
            '"a"',
            '"a"',
            '"zz"',
            template='{"candidates": [{"content": {"parts": [{"text": {}, "te\\u0078t": "a"}]}}]}',
        ),
        END,
    ],
    "escapes around": [
        *same_but_text(
            '"a"',
            '"b"',
            template='{"candidates": [{"content": {"parts":'
            ' [{"text": {}}]}}], "responseId": "\\u0072"}',
        ),
        END,
    ],
    "text in a value": [
        *same_but_text(
            '"a"',
            '"b"',
            template='{"candidates": [{"content": {"parts":'
            ' [{"text": {}}], "role": "\\"text\\""}}]}',
        ),
        END,
    ],
    "two candidates, one finishes": [
        '{"candidates": [{"content": {"parts": [{"text": "a"}]}, "index": 0},'
        ' {"content": {"parts": [{"text": "b"}]}, "index": 1}]}',
        *same_but_text(
            '"c"',
            '"d"',
            template='{"candidates": [{"content": {"parts": [{"text": {}}]}, "index": 1}]}',
        ),
        '{"candidates": [{"finishReason": "STOP", "index": 1}]}',
        *same_but_text(
            '"e"', template='{"candidates": [{"content": {"parts": [{"text": {}}]}, "index": 1}]}'
        ),
    ],
}


@pytest.mark.parametrize("chunks", SKELETON_CASES.values(), ids=list(SKELETON_CASES))
def test_chunks_alike_but_for_their_text_agree(chunks: list[str]) -> None:
    assert_all_alike(*chunks)


#: Chunks the types leave to the general path (which must then answer alone).
GENERAL_CASES = {
    "function call": [
        '{"candidates": [{"content": {"parts": [{"functionCall": {"name": "f", "args": {}}}]}}]}',
        END,
    ],
    "thought signature": [
        '{"candidates": [{"content": {"parts": [{"text": "a", "thoughtSignature": "c2ln"}]}}]}',
        END,
    ],
    "safety ratings": [
        TEXT,
        '{"candidates": [{"finishReason": "SAFETY", "safetyRatings": [{"category": "X"}]}]}',
    ],
    "unknown chunk field": ['{"candidates": [], "surprise": 1}', TEXT, END],
    "prompt blocked": ['{"promptFeedback": {"blockReason": "SAFETY"}}'],
    "error": [TEXT, '{"error": {"code": 429, "message": "slow down", "status": "X"}}'],
    "error in a list": ['[{"error": {"code": 500, "message": "m"}}]'],
    "usage only": [TEXT, '{"usageMetadata": {"promptTokenCount": 1}}', END],
    "content after the finish": [END, TEXT],
    "second candidate content after its finish": [
        '{"candidates": [{"content": {"parts": [{"text": "a"}]}}, {"index": 1}]}',
        '{"candidates": [{"finishReason": "STOP", "index": 1}]}',
        '{"candidates": [{"content": {"parts": [{"text": "b"}]}, "index": 1}]}',
    ],
    "one index twice": [
        '{"candidates": [{"content": {"parts": [{"text": "a"}]}, "finishReason": "STOP"},'
        ' {"content": {"parts": [{"text": "b"}]}}]}',
    ],
    "bool index": ['{"candidates": [{"index": true}]}'],
    "float index": ['{"candidates": [{"index": 0.0, "content": {"parts": [{"text": "a"}]}}]}'],
    "int text": ['{"candidates": [{"content": {"parts": [{"text": 1}]}}]}'],
    "null text": ['{"candidates": [{"content": {"parts": [{"text": null}]}}]}'],
    "int thought": ['{"candidates": [{"content": {"parts": [{"text": "a", "thought": 1}]}}]}'],
    "null finish reason": [TEXT, '{"candidates": [{"finishReason": null}]}'],
    "usage of the wrong type": [
        TEXT,
        '{"candidates": [{"finishReason": "STOP"}], "usageMetadata": 1}',
    ],
    "usage counts of the wrong type": [
        TEXT,
        '{"candidates": [{"finishReason": "STOP"}], "usageMetadata": {"promptTokenCount": 1.0}}',
    ],
    "usage with NaN": [
        TEXT,
        '{"candidates": [{"finishReason": "STOP"}], "usageMetadata": {"totalTokenCount": NaN}}',
    ],
    "lone surrogate": ['{"candidates": [{"content": {"parts": [{"text": "\\ud800"}]}}]}', END],
    "duplicate keys": [
        '{"candidates": [{"content": {"parts": [{"text": 1, "text": "a"}]}}]}',
        '{"candidates": [{"content": {"parts": [{"text": "b", "text": 2}]}}]}',
    ],
    "model of the wrong type": ['{"candidates": [], "modelVersion": 1}'],
    "not an object": ["[]", "1", '"x"', "null"],
    "invalid JSON": ['{"candidates": ['],
    "blank": ["", " ", TEXT, END],
    "another dialect": ['{"choices": []}'],
}


@pytest.mark.parametrize("chunks", TYPED_CASES.values(), ids=list(TYPED_CASES))
def test_typed_chunks_take_the_typed_path_and_agree(
    chunks: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    general: list[str] = []
    original = GeminiDecoder._general

    def counted(self: GeminiDecoder, data: str, event: str, frame: Any) -> Any:
        general.append(data)
        return original(self, data, event, frame)

    monkeypatch.setattr(GeminiDecoder, "_general", counted)
    typed = strings_outcome(chunks, typed=True)
    assert general == []
    assert typed == strings_outcome(chunks, typed=False)
    assert set(general) <= set(chunks)  # the general path read (some of) them
    assert_all_alike(*chunks)


@pytest.mark.parametrize("chunks", GENERAL_CASES.values(), ids=list(GENERAL_CASES))
def test_other_chunks_agree_too(chunks: list[str]) -> None:
    assert_all_alike(*chunks)


def test_the_typed_path_is_off_without_msgspec_loads() -> None:
    with way("stdlib"):
        assert GeminiDecoder()._read is None
    with way("typed"):
        assert GeminiDecoder()._read is not None
    with way("plain"):
        assert GeminiDecoder()._read is None


def test_a_typed_end_gives_the_finish_and_the_usage() -> None:
    out, _, errors, _ = strings_outcome([TEXT, END], typed=True)
    assert errors == []
    assert [type(item).__name__ for item in out] == [
        "TextDelta",
        "TextDelta",
        "Finish",
        "Metadata",
        "Usage",
    ]
    assert out[-1].raw == json.loads(END)["usageMetadata"]


# --------------------------------------------------------------------------- recordings


def test_there_are_gemini_recordings() -> None:
    assert len(FILES) >= 5


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
@pytest.mark.parametrize("name", list(PIPELINES))
def test_whole_recordings_agree(path: Path, name: str) -> None:
    assert_both_alike([path.read_bytes()], PIPELINES[name])


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
@settings(max_examples=15, deadline=None)
@given(
    points=st.lists(st.integers(min_value=0, max_value=1 << 20), max_size=12),
    damage=st.sampled_from(["none", "truncate", "flip"]),
    where=st.integers(min_value=0, max_value=1 << 20),
    bit=st.integers(min_value=0, max_value=7),
    name=st.sampled_from(list(PIPELINES)),
)
def test_cut_and_damaged_recordings_agree(
    path: Path, points: list[int], damage: str, where: int, bit: int, name: str
) -> None:
    body = damaged(path.read_bytes(), damage, where, bit)
    assert_both_alike(cut(body, points), PIPELINES[name])


# --------------------------------------------------------------------------- made-up chunks

#: Values of every JSON kind, with the ones where msgspec and json could part ways.
ODD: st.SearchStrategy[Any] = st.sampled_from(
    [
        None,
        True,
        False,
        0,
        1,
        -1,
        1.0,
        -0.0,
        0.5,
        2**63,
        -(2**63) - 1,
        10**30,
        "",
        "x",
        "STOP",
        [],
        {},
        {"a": 1},
        [{"text": "a"}],
    ]
)
TEXTS = st.one_of(
    st.sampled_from(["a", "bc", "", "\ud800", "é", "\x00", "a\nb"]), st.text(max_size=5)
)
#: Where a made-up chunk may get an odd value (a path into the chunk; ints index lists).
SPOTS = [
    ("candidates",),
    ("candidates", 0),
    ("candidates", 0, "index"),
    ("candidates", 0, "content"),
    ("candidates", 0, "content", "parts"),
    ("candidates", 0, "content", "parts", 0),
    ("candidates", 0, "content", "parts", 0, "text"),
    ("candidates", 0, "content", "parts", 0, "thought"),
    ("candidates", 0, "content", "role"),
    ("candidates", 0, "finishReason"),
    ("usageMetadata",),
    ("usageMetadata", "promptTokenCount"),
    ("modelVersion",),
    ("responseId",),
]


@st.composite
def part(draw: st.DrawFn) -> dict[str, Any]:
    made: dict[str, Any] = {"text": draw(TEXTS)}
    kind = draw(st.sampled_from(["text"] * 4 + ["thought", "not thought", "signature", "image"]))
    if kind == "thought":
        made["thought"] = True
    elif kind == "not thought":
        made["thought"] = False
    elif kind == "signature":
        made["thoughtSignature"] = "c2ln"
    elif kind == "image":
        made = {"inlineData": {"mimeType": "image/png", "data": ""}}
    return made


@st.composite
def chunk_texts(draw: st.DrawFn) -> str:
    """A chunk as Gemini sends it; one in three damaged (an odd value, a key twice, cut, ...)."""
    candidates = []
    for index in range(draw(st.sampled_from([1, 1, 1, 1, 2, 0]))):
        candidate: dict[str, Any] = {
            "content": {"parts": draw(st.lists(part(), min_size=1, max_size=2)), "role": "model"}
        }
        if draw(st.booleans()):
            candidate["index"] = index
        if not draw(st.integers(0, 5)):
            candidate["finishReason"] = draw(st.sampled_from(["STOP", "MAX_TOKENS", "SAFETY"]))
        candidates.append(candidate)
    chunk: dict[str, Any] = {"candidates": candidates}
    if draw(st.booleans()):
        chunk["usageMetadata"] = {"promptTokenCount": 3, "totalTokenCount": draw(st.integers(3, 9))}
    chunk["modelVersion"] = draw(st.sampled_from(["m", "n"]))
    chunk["responseId"] = "r"
    how = draw(st.sampled_from(["plain"] * 8 + ["odd", "twice", "nan", "cut", "extra"]))
    if how == "odd":
        *parents, key = draw(st.sampled_from(SPOTS))
        at: Any = chunk
        try:
            for parent in parents:
                at = at[parent]
            at[key] = draw(ODD)
        except (IndexError, KeyError, TypeError):
            pass  # that spot is not in this chunk
    text = json.dumps(chunk, ensure_ascii=draw(st.booleans()))
    if how == "twice":
        key = draw(st.sampled_from(sorted(chunk)))
        text = "{" + f"{json.dumps(key)}: {json.dumps(draw(ODD))}, " + text[1:]
    elif how == "nan":
        text = text.replace("3", "NaN", 1)
    elif how == "cut":
        text = text[: draw(st.integers(0, len(text)))]
    elif how == "extra":
        text = '{"x": 1, ' + text[1:]
    return text


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(chunk_texts(), min_size=1, max_size=8))
def test_made_up_chunks_agree(chunks: list[str]) -> None:
    frames = [SSEFrame(chunk) for chunk in chunks]
    first = assert_decoded_alike("gemini", frames)
    strings = strings_outcome(chunks, typed=True)
    assert strings == strings_outcome(chunks, typed=False)
    assert strings == first


# --------------------------------------------------------------------------- wrong types

GEMINI_MUTATIONS = [m for m in MUTATIONS if m[1] == "gemini"]


def test_there_are_gemini_mutations() -> None:
    assert len(GEMINI_MUTATIONS) > 50


@pytest.mark.parametrize("new", WRONG, ids=repr)
def test_a_wrong_type_anywhere_is_reported_alike(new: Any) -> None:
    for _, _, items, n, path in GEMINI_MUTATIONS:
        value = json.loads(text_of(items[n]))
        stream = list(items)
        stream[n] = with_text(items[n], json.dumps(mutated(value, path, new)))
        first = assert_decoded_alike("gemini", stream)
        datas = [frame.data for frame in stream if frame.event == "message"]
        if len(datas) == len(stream):
            assert strings_outcome(datas, typed=True) == first
            assert strings_outcome(datas, typed=False) == first

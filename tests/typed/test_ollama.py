"""Ollama's typed decoding (`rxstream._typed.ollama`) gives what the general path gives.

Table cases of each line the types know (content, thinking) and of the ones
they leave to the general path, the recordings and rendered streams whole,
cut at random and damaged, lines made up by hypothesis (wrong types, nulls,
keys twice, fields the types do not declare, final lines), and the
wrong-type mutations of `test_every_dialect_strict_shapes`: both paths must
agree on the items, the error (class and message) and the end.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rxstream as rs
from rxstream.core.dialects import renderer, wire_bytes
from rxstream.core.dialects.ollama import OllamaDecoder
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
    assert_both_alike,
    assert_decoded_alike,
    cut,
    damaged,
    recordings,
)

pytest.importorskip("msgspec")

FILES = recordings("ollama")
PIPELINES = pipelines("ollama")


def ndjson(*lines: str) -> bytes:
    return "".join(f"{line}\n" for line in lines).encode()


def assert_all_alike(*lines: str) -> None:
    for name in PIPELINES:
        assert_both_alike([ndjson(*lines)], PIPELINES[name])
    assert_decoded_alike("ollama", list(lines))


def line(content: Any = "Hi", **more: Any) -> str:
    message = {"role": "assistant", "content": content} if content is not ... else {}
    message.update(more.pop("message", {}))
    return json.dumps(
        {"model": "m", "created_at": "2024-01-01T00:00:00Z", "message": message, "done": False}
        | more
    )


LAST = (
    '{"model":"m","created_at":"t","message":{"role":"assistant","content":""},'
    '"done_reason":"stop","done":true,"prompt_eval_count":3,"eval_count":2,"total_duration":9}'
)

#: Lines the types know (all but the last of each stream): each must take the typed path.
TYPED_CASES = {
    "content": [line("Hi"), line(""), line(" there"), LAST],
    "thinking": [
        line("", message={"thinking": "hm"}),
        line("ok", message={"thinking": ""}),
        line("!", message={"thinking": None}),
        LAST,
    ],
    "no content": [line("a"), line(...), LAST],
    "lean lines": ['{"message":{"content":"a"},"done":false}', '{"done":false,"message":{}}', LAST],
    "escapes": [line("caf\u00e9 \U0001f600 \n \u2028 \\"), LAST],
    "ends without the last line": [line("a"), line("b")],
}

#: Lines the types leave to the general path.
GENERAL_CASES = {
    "null content": [line("a"), line(None), LAST],
    "int content": [line("a"), line(1), LAST],
    "int thinking": [line("a", message={"thinking": 1}), LAST],
    "tool calls": [
        line("", message={"tool_calls": [{"function": {"name": "f", "arguments": {"a": 1}}}]}),
        LAST,
    ],
    "images": [line("a", message={"images": ["aGk="]}), LAST],
    "unknown message member": [line("a", message={"x": 1}), LAST],
    "logprobs": [line("a", logprobs=[{"token": "a"}]), LAST],
    "unknown field": [line("a", _debug_info={"x": 1}), LAST],
    "done null": [line("a", done=None)],
    "done int": [line("a"), line("b", done=0)],
    "model int": [line("a", model=1), LAST],
    "message null": [line("a"), '{"message":null,"done":false}', LAST],
    "no message": ['{"done":false}', LAST],
    "error": [line("a"), '{"error":"model not found"}'],
    "generate line": ['{"model":"m","response":"a","done":false}'],
    "openai chunk": ['{"choices":[]}'],
    "blank lines": [line("a"), "", "   ", LAST],
    "not JSON": [line("a"), "{", LAST],
    "not an object": [line("a"), "[]", LAST],
    "duplicate keys": [
        line("a"),
        '{"message":{"content":"b","content":1},"done":false}',
        '{"message":{"content":1,"content":"c"},"done":false}',
        '{"message":{"content":"d"},"done":false,"done":true}',
    ],
    "lone surrogate": [line("a"), '{"message":{"content":"\\ud800"},"done":false}', LAST],
    "big number": [line("a"), '{"message":{"content":"b"},"done":false,"eval_count":1e400}'],
    "NaN": [line("a"), '{"message":{"content":"b"},"done":false,"x":NaN}', LAST],
    "content after the last line": [line("a"), LAST, line("b")],
}


@pytest.mark.parametrize("lines", TYPED_CASES.values(), ids=list(TYPED_CASES))
def test_typed_lines_take_the_typed_path_and_agree(
    lines: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    general: list[Any] = []
    original = OllamaDecoder._object

    def counted(self: OllamaDecoder, data: Any, item: Any) -> Any:
        general.append(data)
        return original(self, data, item)

    monkeypatch.setattr(OllamaDecoder, "_object", counted)
    with way("typed"):
        decoder = OllamaDecoder()
    decoder.feed_all(lines, [])
    assert general == [line for line in lines if '"done": true' in line or '"done":true' in line]
    assert_all_alike(*lines)


@pytest.mark.parametrize("lines", GENERAL_CASES.values(), ids=list(GENERAL_CASES))
def test_other_lines_agree_too(lines: list[str]) -> None:
    assert_all_alike(*lines)


def test_the_typed_path_is_off_without_msgspec_loads() -> None:
    with way("stdlib"):
        assert OllamaDecoder()._read is None
    with way("typed"):
        assert OllamaDecoder()._read is not None


# --------------------------------------------------------------------------- streams


def rendered(*deltas: rs.Delta) -> bytes:
    made = renderer("ollama")
    items: list[Any] = []
    for delta in deltas:
        items += made.feed(delta)
    items += made.close()
    return wire_bytes(made, items)


STREAMS = {path.name: path.read_bytes() for path in FILES} | {
    "rendered": rendered(
        rs.ReasoningDelta("think"),
        rs.TextDelta("Hello"),
        rs.TextDelta(" you"),
        rs.ToolCallDelta(0, '{"a":1}', "t1", "f"),
        rs.Finish("tool_calls"),
        rs.Usage(3, 4, 7),
    ),
}


def test_there_are_ollama_recordings() -> None:
    assert len(FILES) >= 2


@pytest.mark.parametrize("stream", list(STREAMS))
@pytest.mark.parametrize("name", list(PIPELINES))
def test_whole_streams_agree(stream: str, name: str) -> None:
    assert_both_alike([STREAMS[stream]], PIPELINES[name])


@pytest.mark.parametrize("stream", list(STREAMS))
@settings(max_examples=25, deadline=None)
@given(
    points=st.lists(st.integers(min_value=0, max_value=1 << 20), max_size=12),
    damage=st.sampled_from(["none", "truncate", "flip"]),
    where=st.integers(min_value=0, max_value=1 << 20),
    bit=st.integers(min_value=0, max_value=7),
    name=st.sampled_from(list(PIPELINES)),
)
def test_cut_and_damaged_streams_agree(
    stream: str, points: list[int], damage: str, where: int, bit: int, name: str
) -> None:
    data = damaged(STREAMS[stream], damage, where, bit)
    assert_both_alike(cut(data, points), PIPELINES[name])


# --------------------------------------------------------------------------- made-up lines

ODD: st.SearchStrategy[Any] = st.sampled_from(
    [None, True, False, 0, 1, 1.0, -0.0, 2**64, "", "x", [], {}, {"content": "a"}]
)
TEXTS = st.one_of(st.sampled_from(["a", "bc", "", "\ud800", "é"]), st.text(max_size=4))
#: Where a made-up line may get an odd value (a path into the line).
SPOTS = [("message", "content"), ("message", "thinking"), ("message",), ("done",), ("model",)]


@st.composite
def lines(draw: st.DrawFn) -> str:
    """A line as Ollama sends it; one in three damaged (an odd value, a key twice, cut, ...)."""
    message: dict[str, Any] = {"role": "assistant"}
    if draw(st.integers(0, 5)):
        message["content"] = draw(TEXTS)
    if not draw(st.integers(0, 2)):
        message["thinking"] = draw(st.one_of(TEXTS, st.none()))
    done = not draw(st.integers(0, 5))
    line: dict[str, Any] = {"model": "m", "created_at": "t", "message": message, "done": done}
    if done:
        line |= {"done_reason": draw(st.sampled_from(["stop", "length"])), "eval_count": 2}
    how = draw(st.sampled_from(["plain"] * 6 + ["odd", "twice", "cut", "extra"]))
    if how == "odd":
        *parents, key = draw(st.sampled_from(SPOTS))
        at = line
        for parent in parents:
            at = at[parent]
        at[key] = draw(ODD)
    text = json.dumps(line, ensure_ascii=draw(st.booleans()))
    if how == "twice":
        key = draw(st.sampled_from(["message", "done", "model"]))
        text = "{" + f"{json.dumps(key)}: {json.dumps(draw(ODD))}, " + text[1:]
    elif how == "cut":
        text = text[: draw(st.integers(0, len(text)))]
    elif how == "extra":
        text = '{"x": 1, ' + text[1:]
    return text


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(lines(), min_size=1, max_size=8), st.booleans())
def test_made_up_lines_agree(made: list[str], last: bool) -> None:
    assert_decoded_alike("ollama", [*made, LAST] if last else made)


# --------------------------------------------------------------------------- wrong types

OLLAMA_MUTATIONS = [m for m in MUTATIONS if m[1] == "ollama"]


def test_there_are_ollama_mutations() -> None:
    assert len(OLLAMA_MUTATIONS) > 10


@pytest.mark.parametrize("new", WRONG, ids=repr)
def test_a_wrong_type_anywhere_is_reported_alike(new: Any) -> None:
    for _, _, items, n, path in OLLAMA_MUTATIONS:
        value = json.loads(text_of(items[n]))
        stream = list(items)
        stream[n] = with_text(items[n], json.dumps(mutated(value, path, new)))
        assert_decoded_alike("ollama", stream)
        assert_both_alike([ndjson(*stream)], PIPELINES["named-message"])

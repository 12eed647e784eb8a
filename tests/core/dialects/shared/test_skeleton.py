"""The "same event but its text" shortcut (`_shared.skeleton` / `reread`) reads what json reads.

Gemini, Anthropic and Cohere (standard-library path) read a text event that repeats
the last one's JSON but for its text string by that string alone. These tests
pin the rule: a skeleton is learnt only beyond doubt, and a text either is
made of the skeleton around one JSON string (then its string is exactly what
`json.loads` gives there) or is read whole.
"""

from __future__ import annotations

import json

import pytest
import reactivex
from hypothesis import given, settings
from hypothesis import strategies as st
from reactivex import operators as ops

import rxstream as rs
from rxstream.core.dialects._shared import Budget, reread, skeleton
from rxstream.core.lines import Cut, Unterminated
from tests.support.fast import learning_at_once, way
from tests.support.ways import decoded, same_every_way, template_reads

EVENT = '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"%s"}}'


@pytest.mark.parametrize(
    ("data", "value", "expected"),
    [
        (EVENT % "hi", "hi", (EVENT.split("%s")[0], '"}}'[1:])),
        ('{"text" : "hi" }', "hi", ('{"text" : "', " }")),
        # Not beyond doubt: the key twice, an escape outside the string, no string there,
        # the string read is not the value, an empty value, a cut last event.
        ('{"text":"hi","t":{"text":"x"}}', "hi", None),
        ('{"\\u0074ext":"x","text":"hi"}', "hi", None),
        ('{"text":1}', "1", None),
        ('{"text":"hi"}', "ho", None),
        ('{"text":""}', "", None),
        (Unterminated('{"text":"hi"}'), "hi", None),
        (Cut('{"text":"hi"}'), "hi", None),
        ('{"text":"hi}', "hi", None),
    ],
)
def test_a_skeleton_is_learnt_only_beyond_doubt(
    data: str, value: str, expected: tuple[str, str] | None
) -> None:
    assert skeleton(data, "text", value) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"text":"yo"}', "yo"),
        ('{"text":"a\\"b\\\\c\\u00e9\\n"}', 'a"b\\cé\n'),
        ('{"text":""}', ""),
        ('{"text":"a","more":1}', None),  # another shape
        ('{"text":"a" }', None),  # another suffix
        ('{"text":"}', None),  # the prefix's quote is not a string
        ('{"text":"a\x01"}', None),  # a control character: json refuses it too
        ('{"text":"a\\x"}', None),  # a bad escape
        (Unterminated('{"text":"yo"}'), None),  # a last event is read whole
    ],
)
def test_reread_gives_the_string_json_gives_or_none(text: str, expected: str | None) -> None:
    assert reread(text, '{"text":"', "}") == expected


@settings(max_examples=300, deadline=None)
@given(first=st.text(min_size=1), second=st.text())
def test_reread_agrees_with_json_loads(first: str, second: str) -> None:
    learnt = json.dumps({"type": "x", "text": first}, ensure_ascii=False)
    around = skeleton(learnt, "text", first)
    assert around is not None
    for ascii in (True, False):
        later = json.dumps({"type": "x", "text": second}, ensure_ascii=ascii)
        read = reread(later, *around)
        if read is not None:
            assert read == json.loads(later)["text"]
        else:  # only a text the skeleton cannot stand for (the separators' spelling)
            assert not later.startswith(around[0])


START = (
    b'event: message_start\ndata: {"type":"message_start","message":{"id":"m","type":"message",'
    b'"role":"assistant","model":"c","content":[],"stop_reason":null,"usage":{"input_tokens":1,'
    b'"output_tokens":1}}}\n\nevent: content_block_start\ndata: {"type":"content_block_start",'
    b'"index":0,"content_block":{"type":"text","text":""}}\n\n'
)
END = (
    b'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n'
    b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
)


def _delta(data: str) -> bytes:
    return b"event: content_block_delta\ndata: " + data.encode() + b"\n\n"


@pytest.mark.parametrize(
    "later",
    [
        EVENT % "b",
        EVENT % "",
        EVENT % 'q\\"uote',
        EVENT.replace('"index":0', '"index":1') % "b",  # no such block: the general path says so
        EVENT % "b" + " ",
        EVENT[:-2] % "b" + ',"x":1}}',
        EVENT % 'b","text":"c',  # the key twice: json takes the last
    ],
)
def test_anthropic_reads_the_same_with_and_without_the_shortcut(later: str) -> None:
    body = START + _delta(EVENT % "a") + _delta(later) + _delta(EVENT % "c") + END
    same_every_way("anthropic", body)


def test_anthropic_takes_the_shortcut_on_the_standard_library(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import rxstream.core.dialects.anthropic.decode as decode

    read: list[str | None] = []

    def counted(data: object, prefix: str, suffix: str) -> str | None:
        read.append(reread(data, prefix, suffix))
        return read[-1]

    monkeypatch.setattr(decode, "reread", counted)
    body = START + b"".join(_delta(EVENT % w) for w in "abcdefgh") + END
    items, errors = decoded("anthropic", body, typed=False)
    assert errors == []
    # The first four deltas were read whole (`Budget.wait`), the fifth taught the
    # skeleton; the stop event is no match.
    assert read == ["f", "g", "h", None]
    read.clear()
    with learning_at_once():  # no wait: the first delta teaches it
        decoded("anthropic", body, typed=False)
    assert read == [*"bcdefgh", None]
    assert "".join(d.text for d in items if isinstance(d, rs.TextDelta)) == "abcdefgh"


COHERE = '{"type":"content-delta","index":0,"delta":{"message":{"content":{"text":"%s"}}}}'
COHERE_START = (
    b'event: message-start\ndata: {"id":"c","type":"message-start","delta":{"message":'
    b'{"role":"assistant","content":[],"tool_plan":"","tool_calls":[],"citations":[]}}}\n\n'
    b'event: content-start\ndata: {"type":"content-start","index":0,"delta":{"message":'
    b'{"content":{"type":"text","text":""}}}}\n\n'
)
COHERE_END = (
    b'event: content-end\ndata: {"type":"content-end","index":0}\n\n'
    b'event: message-end\ndata: {"type":"message-end","delta":{"finish_reason":"COMPLETE",'
    b'"usage":{"tokens":{"input_tokens":1,"output_tokens":2}}}}\n\n'
)


@pytest.mark.parametrize(
    ("event", "later"),
    [
        ("content-delta", COHERE % "b"),
        ("content-delta", COHERE % ""),
        ("content-delta", COHERE % "\\u00e9\\n"),
        ("tool-call-delta", COHERE % "b"),  # the event name no longer says content-delta
        ("content-delta", COHERE[:-3] % "b" + ',"thinking":"t"}}}}'),
        ("content-delta", COHERE[:-1] % "b" + ',"logprobs":[]}'),
    ],
)
def test_cohere_reads_the_same_with_and_without_the_shortcut(event: str, later: str) -> None:
    def frame(name: str, data: str) -> bytes:
        return f"event: {name}\ndata: {data}\n\n".encode()

    body = (
        COHERE_START
        + frame("content-delta", COHERE % "a")
        + frame(event, later)
        + frame("content-delta", COHERE % "c")
        + COHERE_END
    )
    items, _ = same_every_way("cohere", body)
    assert items  # it decoded something


# -- how often a template is learnt (`Budget`) -------------------------------------------------


def test_the_budget_waits_four_offers_then_learns_four_then_one_in_sixteen() -> None:
    budget = Budget()
    learnt = [offer for offer in range(1, 121) if budget.take()]
    assert Budget.wait == 4
    assert learnt == [5, 6, 7, 8, 68, 84, 100, 116]


@pytest.mark.parametrize(
    ("texts", "read"),
    [
        # Four lines are offered and teach nothing: a short stream never pays for learning.
        ("abcd", []),
        # The fifth teaches the template; the sixth is read by its text, the done line is no match.
        ("abcdef", ["f", None]),
    ],
)
def test_a_short_stream_learns_no_template(
    monkeypatch: pytest.MonkeyPatch, texts: str, read: list[str | None]
) -> None:
    reads = template_reads(monkeypatch)
    line = '{"created_at":"2024-07-02T11:45:16.%dZ","message":{"content":"%s"},"done":false}'
    done = '{"message":{"content":""},"done":true,"prompt_eval_count":1,"eval_count":2}'
    body = "\n".join([*(line % (i, text) for i, text in enumerate(texts)), done, ""])
    with way("stdlib"):
        deltas = (
            reactivex.from_iterable([body])
            .pipe(rs.lines(), rs.decode("ollama"), ops.to_list())
            .run()
        )
    assert "".join(d.text for d in deltas if isinstance(d, rs.TextDelta)) == texts
    assert reads == read

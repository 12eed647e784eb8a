"""`_shared.Template`: an event read by its text alone reads what `json.loads` reads.

OpenAI chat (and Responses) events repeat the last one's JSON but for their
text and a few fields the reader ignores (`created`, `sequence_number`, an
`obfuscation` padding). A `Template` learnt from an event read whole reads a
later one by its text alone. These tests pin the rule: a template is learnt
only beyond doubt, and a later text either fills it in (then `json.loads` of
it is the learnt object with other values in the holes, and the text read is
exactly json's) or is refused (and read whole by the caller).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rxstream as rs
from rxstream.core.dialects import _shared
from rxstream.core.dialects._shared import Template
from rxstream.core.lines import Cut, Unterminated
from tests.support.fast import learning_at_once
from tests.support.ways import decoded, same_every_way, template_reads


@pytest.fixture(autouse=True, scope="module")
def _learning_at_once() -> Iterator[None]:
    """These tests are about what a learnt template reads: learnt at the first offer."""
    with learning_at_once():
        yield


FREE: dict[str, type] = {"n": int, "pad": str}
LEARNT = '{"n":7,"a":[1,{"b":null}],"text":"hi","pad":"xy"}'


@pytest.mark.parametrize(
    ("data", "value", "learnt"),
    [
        (LEARNT, "hi", True),
        ('{"text" : "hi" , "n" :\t-3}', "hi", True),  # blanks, a negative integer
        ('{"pad":"","text":"hi"}', "hi", True),  # a free field before the text, no `n`
        ('{"text":"h\\u00e9"}', "hé", True),  # an escape inside the text is fine
        # Not beyond doubt: the key twice, a free field twice, an escape outside the
        # holes, a number with a fraction or an exponent where an integer was
        # promised, a free string that is not one, no string at the key, the
        # string read is not the value, an empty value, a cut last event.
        ('{"text":"hi","t":{"text":"x"}}', "hi", False),
        ('{"n":1,"text":"hi","m":{"n":2}}', "hi", False),
        ('{"\\u006e":1,"text":"hi"}', "hi", False),
        ('{"n":1.5,"text":"hi"}', "hi", False),
        ('{"n":1e3,"text":"hi"}', "hi", False),
        ('{"n":"1","text":"hi"}', "hi", False),
        ('{"pad":3,"text":"hi"}', "hi", False),
        ('{"text":1}', "1", False),
        ('{"text":"hi"}', "ho", False),
        ('{"text":""}', "", False),
        (Unterminated('{"text":"hi"}'), "hi", False),
        (Cut('{"text":"hi"}'), "hi", False),
    ],
)
def test_a_template_is_learnt_only_beyond_doubt(data: str, value: str, learnt: bool) -> None:
    template = Template.learn(data, "text", value, FREE)
    assert (template is not None) == learnt
    if template is not None:
        assert template.read(data) == value  # it reads what it was learnt from


@pytest.mark.parametrize(
    ("later", "expected"),
    [
        ('{"n":8,"a":[1,{"b":null}],"text":"yo","pad":"xyz"}', "yo"),
        ('{"n":-12345678901234567890,"a":[1,{"b":null}],"text":"","pad":""}', ""),
        ('{"n":7,"a":[1,{"b":null}],"text":"a\\"b\\\\c\\u00e9\\n","pad":"q\\"x"}', 'a"b\\cé\n'),
        (
            '{"n":-0,"a":[1,{"b":null}],"text":"\x7f\U0001f600 \u2028","pad":"\U0001f600"}',
            "\x7f\U0001f600 \u2028",
        ),
        ('{"n":0,"a":[1,{"b":null}],"text":"\\ud83d\\ude00\\/","pad":"\\u0000"}', "\U0001f600/"),
        # Refused: another value elsewhere, a number that is not an integer, a
        # leading zero, a free string that is not one, a control character or a
        # bad escape (json refuses them too), blanks that were not there, a cut.
        ('{"n":7,"a":[2,{"b":null}],"text":"yo","pad":"xy"}', None),
        ('{"n":7.0,"a":[1,{"b":null}],"text":"yo","pad":"xy"}', None),
        ('{"n":7e1,"a":[1,{"b":null}],"text":"yo","pad":"xy"}', None),
        ('{"n":07,"a":[1,{"b":null}],"text":"yo","pad":"xy"}', None),
        ('{"n":-07,"a":[1,{"b":null}],"text":"yo","pad":"xy"}', None),
        ('{"n":00,"a":[1,{"b":null}],"text":"yo","pad":"xy"}', None),
        ('{"n":+7,"a":[1,{"b":null}],"text":"yo","pad":"xy"}', None),
        ('{"n":7,"a":[1,{"b":null}],"text":"y\\u12g4","pad":"xy"}', None),
        ('{"n":7,"a":[1,{"b":null}],"text":"y"o","pad":"xy"}', None),
        ('{"n":-,"a":[1,{"b":null}],"text":"yo","pad":"xy"}', None),
        ('{"n":7,"a":[1,{"b":null}],"text":"yo","pad":null}', None),
        ('{"n":7,"a":[1,{"b":null}],"text":"y\x01","pad":"xy"}', None),
        ('{"n":7,"a":[1,{"b":null}],"text":"y\\x","pad":"xy"}', None),
        ('{"n":7,"a":[1,{"b":null}],"text":"yo","pad":"xy"} ', None),
        ('{"n":7,"a":[1,{"b":null}],"text":"yo","pad":"xy","c":1}', None),
        ('{"n":7,"a":[1,{"b":null}],"text":"yo', None),
        (Unterminated('{"n":8,"a":[1,{"b":null}],"text":"yo","pad":"xyz"}'), None),
    ],
)
def test_read_gives_the_string_json_gives_or_none(later: str, expected: str | None) -> None:
    template = Template.learn(LEARNT, "text", "hi", FREE)
    assert template is not None
    assert template.read(later) == expected
    assert _compiled(LEARNT, "hi").read(later) == expected


def _compiled(learnt: str, value: str) -> Template:
    """The template of `learnt` reading with its one compiled pattern from the first read.

    A template reads part by part until it has read often enough to compile
    that pattern (`_shared._COMPILE_AT`); both readers must read alike.
    """
    template = Template.learn(learnt, "text", value, FREE)
    assert template is not None
    template._compile()
    return template


def _without_holes(value: Any) -> Any:
    return {k: v for k, v in value.items() if k not in ("text", "n", "pad")}


@settings(max_examples=400, deadline=None)
@given(
    text=st.text(min_size=1),
    n=st.integers(),
    pad=st.text(),
    cut=st.tuples(st.integers(0, 200), st.integers(0, 200)),
    insert=st.text(alphabet='{}[]":,0123456789.eE-+ \\nultrxyzabc', max_size=6),
    ascii=st.booleans(),
)
def test_whatever_a_template_reads_json_reads_the_same(
    text: str, n: int, pad: str, cut: tuple[int, int], insert: str, ascii: bool
) -> None:
    """Any edit of a learnt text: read gives None, or exactly what json.loads gives."""
    obj = {"n": 1, "a": [1, {"b": None}], "text": "seed", "pad": "p", "z": "end"}
    learnt = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    template = Template.learn(learnt, "text", "seed", FREE)
    assert template is not None
    later = json.dumps(
        {**obj, "text": text, "n": n, "pad": pad}, ensure_ascii=ascii, separators=(",", ":")
    )
    assert template.read(later) == text  # every value of the holes' kinds fills them in
    start, stop = sorted(cut)
    edited = later[:start] + insert + later[stop:]
    read = template.read(edited)
    assert _compiled(learnt, "seed").read(edited) == read
    if read is not None:
        value = json.loads(edited)  # never refused by json when the template took it
        assert value["text"] == read
        assert type(value["n"]) is int
        assert type(value["pad"]) is str
        assert _without_holes(value) == _without_holes(obj)


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str | None]:
    """What every `Template.read` of the test gives, in turn."""
    return template_reads(monkeypatch)


# -- the openai-chat decoder ---------------------------------------------------------------

CHUNK = (
    '{"id":"c","object":"chat.completion.chunk","created":%s,"model":"m",'
    '"choices":[{"index":0,"delta":{"content":"%s"},"finish_reason":null}],'
    '"usage":null,"obfuscation":"%s"}'
)
REASONING = (
    '{"id":"c","created":1,"choices":[{"index":0,"delta":{"content":null,'
    '"reasoning_content":"%s"},"finish_reason":null}]}'
)
END = (
    'data: {"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
    'data: {"id":"c","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2,'
    '"total_tokens":3}}\n\ndata: [DONE]\n\n'
)


def _frames(*datas: str) -> str:
    return "".join(f"data: {d}\n\n" for d in datas)


@pytest.mark.parametrize(
    "later",
    [
        CHUNK % (1, "b", "xyz"),
        CHUNK % (2, "b", ""),  # another time, another padding
        CHUNK % (1, "", "x"),  # an empty text: read whole (it gives no delta)
        CHUNK % (1, 'q\\"uote\\n', "x"),
        CHUNK % ("1.5", "b", "x"),  # not an integer: read whole (the reader ignores it)
        (CHUNK % (1, "b", "x")).replace('"finish_reason":null', '"finish_reason":"stop"'),
        (CHUNK % (1, "b", "x")).replace('"index":0', '"index":1'),
        (CHUNK % (1, "b", "x")).replace('"usage":null', '"usage":{"prompt_tokens":"1"}'),
        (CHUNK % (1, "b", "x")).replace('"content":"b"', '"content":5'),
        (CHUNK % (1, "b", "x")).replace('"content":"b"', '"content":"b","content":"c"'),
        (CHUNK % (1, "b", "x")).replace('"content":"b"', '"content":"b","role":"assistant"'),
        CHUNK % (1, "b", "x") + " ",
        (CHUNK % (1, "b", "x"))[:-10],  # cut: malformed
        REASONING % "think",
    ],
)
def test_openai_chat_reads_the_same_with_and_without_the_shortcut(later: str) -> None:
    body = _frames(CHUNK % (1, "a", "x"), later, CHUNK % (3, "c", "xy")) + END
    with_shortcut = same_every_way("openai-chat", body)
    assert with_shortcut[0]  # it decoded something


def test_openai_chat_reasoning_reads_the_same_with_and_without_the_shortcut() -> None:
    body = _frames(*(REASONING % w for w in ("a", "b", "", "c")), CHUNK % (1, "d", "x")) + END
    items, _ = same_every_way("openai-chat", body)
    # The response's id and model first (one Metadata), then the reasoning.
    assert [type(d).__name__ for d in items[:4]] == ["Metadata"] + ["ReasoningDelta"] * 3


def _chunk(text: str, finish: str | None = None, usage: int | None = None) -> str:
    return json.dumps(
        {
            "id": "c",
            "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": finish}],
            "usage": None
            if usage is None
            else {"prompt_tokens": 1, "completion_tokens": usage, "total_tokens": 1 + usage},
        },
        separators=(",", ":"),
    )


@pytest.mark.parametrize(
    "chunks",
    [
        # A repeated finish gives no Finish, so its chunk teaches a template; another
        # finish between makes the learnt one give a Finish again.
        [_chunk("a", "stop"), _chunk("b", "stop"), _chunk("", "length"), _chunk("c", "stop")],
        # Usage is emitted when it changes: the learnt usage after another one is new again.
        [_chunk("a", None, 1), _chunk("b", None, 1), _chunk("", None, 2), _chunk("c", None, 1)],
        [_chunk("a", None, 1), _chunk("b", None, 1), _chunk("c", None, 2), _chunk("d", None, 1)],
    ],
)
def test_openai_chat_forgets_a_template_when_the_reader_state_changes(chunks: list[str]) -> None:
    body = _frames(*chunks) + END
    items, _ = same_every_way("openai-chat", body)
    assert sum(isinstance(d, (rs.Finish, rs.Usage)) for d in items) >= 3


def _any_chunk(
    text: str | None,
    key: str,
    finish: str | None,
    usage: int | None,
    created: float,
    pad: str,
    choice: int,
) -> str:
    delta: dict[str, Any] = {key: text}
    if key.startswith("tool_calls"):  # a fragment of call 0 or 1, with an id or without
        call = {"index": int(key[-1]), "function": {"arguments": text}}
        delta = {"tool_calls": [{**call, "id": "c1", "type": "function"} if pad else call]}
    return json.dumps(
        {
            "id": "c",
            "created": created,
            "choices": [{"index": choice, "delta": delta, "finish_reason": finish}],
            "usage": None
            if usage is None
            else {"prompt_tokens": 1, "completion_tokens": usage, "total_tokens": 1 + usage},
            "obfuscation": pad,
        },
        separators=(",", ":"),
    )


_CHUNKS = st.builds(
    _any_chunk,
    st.sampled_from(["a", "b", "", 'q"\\', None]),
    st.sampled_from(
        ["content"] * 4
        + ["reasoning_content", "reasoning", "refusal"]
        + ["tool_calls0"] * 2
        + ["tool_calls1"]
    ),
    st.sampled_from([None, "stop", "length"]),
    st.sampled_from([None, 1, 2]),
    st.sampled_from([0, 1, 1.5]),
    st.sampled_from(["", "xy"]),
    st.sampled_from([0] * 4 + [1]),
)


@settings(max_examples=1000, deadline=None)
@given(chunks=st.lists(_CHUNKS, min_size=1, max_size=12))
def test_openai_chat_reads_any_chunks_the_same_with_and_without_the_shortcut(
    chunks: list[str],
) -> None:
    body = _frames(*chunks) + "data: [DONE]\n\n"
    same_every_way("openai-chat", body)


@pytest.mark.parametrize("typed", [False, True])
def test_openai_chat_takes_the_shortcut_on_the_standard_library(
    reads: list[str | None], typed: bool
) -> None:
    body = _frames(*(CHUNK % (i, w, "o" * i) for i, w in enumerate("abcd"))) + END
    items, errors = decoded("openai-chat", body, typed=typed)
    assert errors == []
    # The first chunk (which also gave the response's id and model) and the second
    # were read whole, the second taught the template; the finish chunk is no match,
    # and changes the reader's state: the template is forgotten. msgspec reads whole
    # chunks faster: with it, no template.
    assert reads == ([] if typed else ["c", "d", None])
    assert "".join(d.text for d in items if isinstance(d, rs.TextDelta)) == "abcd"


# -- the openai-responses decoder ----------------------------------------------------------

DELTA = (
    '{"type":"response.output_text.delta","sequence_number":%s,"item_id":"msg_0",'
    '"output_index":0,"content_index":0,"delta":"%s","logprobs":[],"obfuscation":"%s"}'
)


def _responses_body(*events: tuple[str, str]) -> str:
    def frame(name: str, data: str) -> str:
        return f"event: {name}\ndata: {data}\n\n"

    response = '{"id":"r","object":"response","status":"%s","model":"m","output":[]%s}'
    start = [
        (
            "response.created",
            '{"type":"response.created","sequence_number":0,"response":'
            + response % ("in_progress", "")
            + "}",
        ),
        (
            "response.output_item.added",
            '{"type":"response.output_item.added","sequence_number":1,'
            '"output_index":0,"item":{"id":"msg_0","type":"message","status":"in_progress",'
            '"role":"assistant","content":[]}}',
        ),
    ]
    end = [
        (
            "response.completed",
            '{"type":"response.completed","sequence_number":99,"response":'
            + response
            % ("completed", ',"usage":{"input_tokens":1,"output_tokens":2,"total_tokens":3}')
            + "}",
        ),
    ]
    return "".join(frame(*e) for e in [*start, *events, *end])


TEXT = "response.output_text.delta"


@pytest.mark.parametrize(
    ("event", "later"),
    [
        (TEXT, DELTA % (3, "b", "xyz")),
        (TEXT, DELTA % (3, "", "")),  # an empty text is a delta too
        (TEXT, DELTA % (3, 'q\\"uote\\u00e9', "x")),
        ("message", DELTA % (3, "b", "x")),
        ("response.refusal.delta", DELTA % (3, "b", "x")),  # the event name disagrees
        (TEXT, DELTA % ("3.5", "b", "x")),
        (TEXT, (DELTA % (3, "b", "x")).replace('"output_index":0', '"output_index":1')),
        (TEXT, (DELTA % (3, "b", "x")).replace('"logprobs":[]', '"logprobs":[{"token":"b"}]')),
        (TEXT, (DELTA % (3, "b", "x")).replace('"delta":"b"', '"delta":5')),
        (TEXT, (DELTA % (3, "b", "x")).replace('"delta":"b"', '"delta":"b","delta":"c"')),
        (TEXT, (DELTA % (3, "b", "x"))[:-5]),  # cut: malformed
    ],
)
def test_openai_responses_reads_the_same_with_and_without_the_shortcut(
    event: str, later: str
) -> None:
    body = _responses_body(
        (TEXT, DELTA % (2, "a", "x")), (event, later), (TEXT, DELTA % (4, "c", "xy"))
    )
    with_shortcut = same_every_way("openai-responses", body)
    assert with_shortcut[0]  # it decoded something


@pytest.mark.parametrize("typed", [False, True])
def test_openai_responses_takes_the_shortcut_on_the_standard_library(
    reads: list[str | None], typed: bool
) -> None:
    body = _responses_body(*((TEXT, DELTA % (i + 2, w, "o" * i)) for i, w in enumerate("abcd")))
    items, errors = decoded("openai-responses", body, typed=typed)
    assert errors == []
    assert reads == ([] if typed else ["b", "c", "d"])
    assert "".join(d.text for d in items if isinstance(d, rs.TextDelta)) == "abcd"


_EVENTS = st.builds(
    lambda kind, seq, oi, text, logprobs, pad, named: (
        kind if named else "message",
        json.dumps(
            {
                "type": kind,
                "sequence_number": seq,
                "item_id": "msg_0",
                "output_index": oi,
                "content_index": 0,
                "delta": text,
                "logprobs": logprobs,
                "obfuscation": pad,
            },
            separators=(",", ":"),
        ),
    ),
    st.sampled_from([TEXT] * 4 + ["response.refusal.delta", "response.output_text.done"]),
    st.sampled_from([1, 2, 2.5]),
    st.sampled_from([0] * 4 + [1]),
    st.sampled_from(["a", "b", "", 'q"\\', None]),
    st.sampled_from([[], [], None, [{"token": "a"}]]),
    st.sampled_from(["", "xy"]),
    st.booleans(),
)


@settings(max_examples=500, deadline=None)
@given(events=st.lists(_EVENTS, min_size=1, max_size=10))
def test_openai_responses_reads_any_events_the_same_with_and_without_the_shortcut(
    events: list[tuple[str, str]],
) -> None:
    body = _responses_body(*events)
    same_every_way("openai-responses", body)


# -- gemini: the usage counts every chunk carries --------------------------------------------

GEMINI = (
    '{"candidates": [{"content": {"parts": [{"text": "%s"}],"role": "model"},"index": 0}],'
    '"usageMetadata": {"promptTokenCount": 3,"candidatesTokenCount": %s,"totalTokenCount": %s},'
    '"modelVersion": "m","responseId": "r"}'
)
GEMINI_END = (
    '{"candidates": [{"content": {"parts": [{"text": ""}],"role": "model"},'
    '"finishReason": "STOP","index": 0}],"modelVersion": "m","responseId": "r"}'
)


@pytest.mark.parametrize(
    "later",
    [
        GEMINI % ("b", 2, 5),
        GEMINI % ("b", 20, 23),  # other counts: the last ones are the usage
        GEMINI % ("", 2, 5),
        GEMINI % ('q\\"uote\\u00e9', 2, 5),
        GEMINI % ("b", "2.0", 5),  # not an integer: read whole
        GEMINI % ("b", -1, 5),
        GEMINI % ("b", '"2"', 5),  # a string count: the general path says what it makes of it
        (GEMINI % ("b", 2, 5)).replace('"promptTokenCount": 3,', ""),
        (GEMINI % ("b", 2, 5)).replace('"text": "b"}', '"text": "b", "thought": true}'),
        (GEMINI % ("b", 2, 5)).replace('"index": 0}]', '"index": 0, "finishReason": "STOP"}]'),
        (GEMINI % ("b", 2, 5)).replace('"responseId": "r"', '"responseId": "s"'),
        GEMINI_END,
        (GEMINI % ("b", 2, 5))[:-3],
    ],
)
@pytest.mark.parametrize("size", [0, 7, 300])
def test_gemini_reads_the_same_with_and_without_the_shortcut(later: str, size: int) -> None:
    chunks = [GEMINI % ("a", 1, 4), GEMINI % ("x", 2, 5), later, GEMINI % ("c", 9, 12), GEMINI_END]
    body = _frames(*chunks)
    items, _ = same_every_way("gemini", body, size=size)
    assert items  # it decoded something


@pytest.mark.parametrize("size", [0, 50, 400])
def test_gemini_usage_is_the_last_chunks_counts(size: int) -> None:
    body = _frames(*(GEMINI % (w, i, 3 + i) for i, w in enumerate("abcdef", 1)), GEMINI_END)
    items, errors = same_every_way("gemini", body, size=size)
    assert errors == []
    [usage] = [d for d in items if isinstance(d, rs.Usage)]
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (3, 6, 9)


def test_gemini_takes_the_shortcut_when_the_counts_change(reads: list[str | None]) -> None:
    body = _frames(*(GEMINI % (w, i, 3 + i) for i, w in enumerate("abcd", 1)), GEMINI_END)
    items, errors = decoded("gemini", body, typed=False)
    assert errors == []
    # The first chunk is read whole (no answer yet), the second teaches the template.
    assert reads == ["c", "d", None]
    assert "".join(d.text for d in items if isinstance(d, rs.TextDelta)) == "abcd"


def test_free_fields_made_anew_for_each_learning_are_not_kept() -> None:
    # `Template.learn` keeps each free dict's quoted fields (a decoder's constant);
    # dicts made anew each time are dropped after a few dozen.
    for n in range(100):
        template = Template.learn(LEARNT, "text", "hi", dict(FREE))
        assert template is not None
        assert template.read(LEARNT.replace('"n":7', f'"n":{n}')) == "hi"
    assert len(_shared._FIELDS) <= 64

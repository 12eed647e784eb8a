"""Ollama and Bedrock read a repeated line (payload) by its text alone: the same items and errors.

On the standard library, the Ollama decoder keeps the last line that gave one
text (or thinking) delta as a `_shared.Template`, with `created_at` a hole,
and the Bedrock decoder the last `contentBlockDelta` payload that gave one
text, reasoning or tool input delta, with the padding `p` a hole. A later line
(payload) made of the same JSON but for its text and those holes is read by
its text alone. Whatever comes later, the shortcut, the fast paths switched
off and the typed (msgspec) decoding give the same items and the same errors.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any, Literal

import pytest
import reactivex

import rxstream as rs
from rxstream.core.eventstream import encode_message
from tests.support.fast import learning_at_once, typed_decoding, way
from tests.support.ways import template_reads


@pytest.fixture(autouse=True, scope="module")
def _learning_at_once() -> Iterator[None]:
    """These tests are about what a learnt template reads: learnt at the first offer."""
    with learning_at_once():
        yield


Outcome = tuple[list[Any], list[str]]
OnMalformed = Literal["raise", "skip"]


def _run(pieces: list[bytes], front: Callable[[], Any], decode: Any, *, typed: bool) -> Outcome:
    items: list[Any] = []
    errors: list[str] = []
    with typed_decoding(typed):
        reactivex.from_iterable(pieces).pipe(front(), decode()).subscribe(
            items.append, lambda e: errors.append(f"{type(e).__name__}: {e}")
        )
    return items, errors


def _three_ways(
    body: bytes, front: Callable[[], Any], decode: Callable[[], Any], *, piece: int = 0
) -> Outcome:
    """The outcome of `body` with the shortcut, asserted equal to the other two ways."""
    pieces = [body[i : i + piece] for i in range(0, len(body), piece)] if piece else [body]
    with_shortcut = _run(pieces, front, decode, typed=False)
    with way("plain"):
        plain = _run(pieces, front, decode, typed=False)
    assert with_shortcut == plain
    assert [repr(i) for i in with_shortcut[0]] == [repr(i) for i in plain[0]]
    assert with_shortcut == _run(pieces, front, decode, typed=True)
    return with_shortcut


# -- ollama ----------------------------------------------------------------------------------

LINE = (
    '{"model":"phi3","created_at":"2024-07-02T11:45:16.%sZ",'
    '"message":{"role":"assistant","content":"%s"},"done":false}'
)
THINKING = (
    '{"model":"phi3","created_at":"2024-07-02T11:45:16.%sZ",'
    '"message":{"role":"assistant","content":"","thinking":"%s"},"done":false}'
)
DONE = (
    '{"model":"phi3","created_at":"2024-07-02T11:45:17Z","message":{"role":"assistant",'
    '"content":""},"done_reason":"stop","done":true,"total_duration":5,"prompt_eval_count":3,'
    '"eval_count":4}'
)


def _ollama(on_malformed: OnMalformed) -> Callable[[], Any]:
    return lambda: rs.decode("ollama", on_malformed=on_malformed)


def _ndjson(*lines: str, last: bool = True) -> bytes:
    return ("\n".join(lines) + ("\n" if last else "")).encode()


@pytest.mark.parametrize(
    "later",
    [
        pytest.param(LINE % ("3", "b"), id="another-text"),
        pytest.param(LINE % ("3", ""), id="empty-text"),
        pytest.param(LINE % ("3", 'q\\"uote\\\\ \\u00e9\\n\\ud83d\\ude00'), id="escapes"),
        pytest.param(LINE % ("216898458999", "b"), id="created-at-longer"),
        pytest.param((LINE % ("3", "b")).replace('"2024-07-02T11:45:16.3Z"', "17"), id="time-int"),
        pytest.param((LINE % ("3", "b")).replace('"2024-07-02T11:45:16.3Z"', "null"), id="no-time"),
        pytest.param((LINE % ("3", "b")).replace('"phi3"', '"llama3"'), id="another-model"),
        pytest.param((LINE % ("3", "b")).replace('"assistant"', '"user"'), id="another-role"),
        pytest.param((LINE % ("3", "b")).replace("false", '"no"'), id="done-not-bool"),
        pytest.param((LINE % ("3", "b")).replace("false", "true"), id="done-true"),
        pytest.param(DONE, id="the-done-line"),
        pytest.param((LINE % ("3", "b")).replace('"b"', "5"), id="content-number"),
        pytest.param((LINE % ("3", "b")).replace('"b"', "null"), id="content-null"),
        pytest.param(
            (LINE % ("3", "b")).replace('"content":"b"', '"content":"b","content":"c"'),
            id="content-twice",
        ),
        pytest.param(
            (LINE % ("3", "b")).replace('"done":false', '"done":false,"done":true'),
            id="done-twice",
        ),
        pytest.param(
            (LINE % ("3", "b")).replace('"done":false', '"done":false,"x_debug":{"a":1}'),
            id="field-added",
        ),
        pytest.param(
            (LINE % ("3", "b")).replace('"done":false', '"done":false,"logprobs":[{"t":1}]'),
            id="logprobs-added",
        ),
        pytest.param(
            (LINE % ("3", "b")).replace('"content":"b"', '"content":"b","images":["x"]'),
            id="images-added",
        ),
        pytest.param(
            (LINE % ("3", "")).replace(
                '"content":""',
                '"content":"","tool_calls":[{"function":{"name":"f","arguments":{"a":1}}}]',
            ),
            id="tool-call",
        ),
        pytest.param(THINKING % ("3", "hmm"), id="thinking"),
        pytest.param(LINE % ("3", "b") + " ", id="trailing-blank"),
        pytest.param(" " + LINE % ("3", "b"), id="leading-blank"),
        pytest.param((LINE % ("3", "b"))[:-8], id="cut-inside"),
        pytest.param('{"error":"model crashed"}', id="provider-error"),
        pytest.param("", id="blank-line"),
        pytest.param("[1,2]", id="not-an-object"),
    ],
)
@pytest.mark.parametrize("on_malformed", ["raise", "skip"])
def test_ollama_reads_the_same_with_and_without_the_shortcut(
    monkeypatch: pytest.MonkeyPatch, later: str, on_malformed: OnMalformed
) -> None:
    read = template_reads(monkeypatch)
    body = _ndjson(LINE % ("1", "a"), LINE % ("2", "c"), later, LINE % ("4", "d"), DONE)
    whole = _three_ways(body, rs.lines, _ollama(on_malformed))
    assert whole[0]  # it decoded something
    # The first line taught the template, the second filled it in, and the later
    # line was offered to it.
    assert read[0] == "c"
    assert len(read) >= 2
    for piece in (1, 7):  # the template outlives a batch of lines
        assert _three_ways(body, rs.lines, _ollama(on_malformed), piece=piece) == whole


@pytest.mark.parametrize(
    "last",
    [
        pytest.param(LINE % ("3", "b"), id="whole-line-unterminated"),
        pytest.param((LINE % ("3", "b"))[:-3], id="cut-line"),
        pytest.param((LINE % ("3", "bc"))[:-30], id="cut-in-the-text"),
        pytest.param(DONE, id="done-unterminated"),
    ],
)
def test_ollama_a_cut_last_line_reads_the_same(last: str) -> None:
    body = _ndjson(LINE % ("1", "a"), LINE % ("2", "c"), last, last=False)
    items, _ = _three_ways(body, rs.lines, _ollama("raise"))
    assert items


def test_ollama_thinking_reads_the_same_with_and_without_the_shortcut() -> None:
    lines = [THINKING % (i, w) for i, w in enumerate(["a", "b", "", 'q\\"', "c"])]
    lines += [LINE % ("8", "x"), LINE % ("9", "y"), DONE]
    items, errors = _three_ways(_ndjson(*lines), rs.lines, _ollama("raise"))
    assert errors == []
    assert [type(d).__name__ for d in items[:4]] == ["ReasoningDelta"] * 4


def test_ollama_the_recordings_read_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    from pathlib import Path

    read = template_reads(monkeypatch)
    for path in sorted((Path(__file__).parents[3] / "data" / "ollama").glob("*.ndjson")):
        items, errors = _three_ways(path.read_bytes(), rs.lines, _ollama("raise"))
        assert errors == []
        assert items
    # The phi3 recording: four lines read by their text, `created_at` changing on each.
    assert read[:4] == ["is ", "test ", "completion ", "response"]


@pytest.mark.parametrize("typed", [False, True])
def test_ollama_takes_the_shortcut_on_the_standard_library(
    monkeypatch: pytest.MonkeyPatch, typed: bool
) -> None:
    read = template_reads(monkeypatch)
    body = _ndjson(*(LINE % (i * 1000, w) for i, w in enumerate("abcd")), DONE)
    items, errors = _run([body], rs.lines, _ollama("raise"), typed=typed)
    assert errors == []
    # The first line was read whole and taught the template; the done line is no
    # match. msgspec reads whole lines faster: with it, no template.
    assert read == ([] if typed else ["b", "c", "d", None])
    assert "".join(d.text for d in items if isinstance(d, rs.TextDelta)) == "abcd"


def test_ollama_takes_no_shortcut_with_the_fast_paths_off(monkeypatch: pytest.MonkeyPatch) -> None:
    read = template_reads(monkeypatch)
    body = _ndjson(*(LINE % (i, w) for i, w in enumerate("abcd")), DONE)
    with way("plain"):
        items, errors = _run([body], rs.lines, _ollama("raise"), typed=False)
    assert errors == []
    assert read == []
    assert "".join(d.text for d in items if isinstance(d, rs.TextDelta)) == "abcd"


# -- bedrock ---------------------------------------------------------------------------------


def _event(name: str, payload: str | bytes, kind: str = "event") -> bytes:
    data = payload.encode() if isinstance(payload, str) else payload
    headers = {":event-type": name, ":content-type": "application/json", ":message-type": kind}
    return encode_message(headers, data)


TEXT = '{"contentBlockIndex":%d,"delta":{"text":"%s"},"p":"%s"}'
REASONING = '{"contentBlockIndex":%d,"delta":{"reasoningContent":{"text":"%s"}},"p":"%s"}'
INPUT = '{"contentBlockIndex":%d,"delta":{"toolUse":{"input":"%s"}},"p":"%s"}'
STOP = '{"p":"abcdefghijklmnopqrs","stopReason":"%s"}'


def _text(text: str, pad: str = "abc", index: int = 0) -> str:
    return TEXT % (index, text, pad)


def _reasoning(text: str, pad: str = "abc", index: int = 0) -> str:
    return REASONING % (index, text, pad)


def _input(fragment: str, pad: str = "abc", index: int = 1) -> str:
    return INPUT % (index, fragment, pad)


START = _event("messageStart", '{"p":"abcdefghijklmn","role":"assistant"}')
DELTA = "contentBlockDelta"


def _end(stop: str = "end_turn") -> bytes:
    return (
        _event("contentBlockStop", '{"contentBlockIndex":0,"p":"abcdefg"}')
        + _event("messageStop", STOP % stop)
        + _event(
            "metadata",
            '{"metrics":{"latencyMs":1},"p":"ab","usage":{"inputTokens":3,'
            '"outputTokens":4,"totalTokens":7}}',
        )
    )


def _bedrock(on_malformed: OnMalformed) -> Callable[[], Any]:
    return lambda: rs.decode("bedrock", on_malformed=on_malformed)


@pytest.mark.parametrize(
    ("name", "later"),
    [
        pytest.param(DELTA, _text("b", "xyzxyzxyz"), id="another-text"),
        pytest.param(DELTA, _text("", ""), id="empty-text"),
        pytest.param(DELTA, _text('q\\"uote\\\\ \\u00e9\\n\\ud83d\\ude00'), id="escapes"),
        pytest.param(DELTA, _text("b").replace('"abc"', "12"), id="pad-int"),
        pytest.param(DELTA, _text("b").replace(',"p":"abc"', ""), id="no-pad"),
        pytest.param(DELTA, _text("b", index=1), id="another-block"),
        pytest.param(DELTA, _text("b").replace(":0", ":0.0"), id="index-float"),
        pytest.param(DELTA, _text("b").replace('"b"', "5"), id="text-number"),
        pytest.param(DELTA, _text("b").replace('"b"', "null"), id="text-null"),
        pytest.param(
            DELTA, _text("b").replace('"text":"b"', '"text":"b","text":"c"'), id="text-twice"
        ),
        pytest.param(DELTA, _text("b").replace('"p":', '"x":1,"p":'), id="field-added"),
        pytest.param(
            DELTA, _text("b").replace('"text":"b"', '"text":"b","citation":{}'), id="delta-added"
        ),
        pytest.param(DELTA, _reasoning("hmm"), id="reasoning"),
        pytest.param(DELTA, _input("{}"), id="input-no-tool-block"),
        pytest.param(DELTA, _text("b")[:-6], id="cut-payload"),
        pytest.param(DELTA, _text("b").encode() + b"\xff", id="bad-utf8-after"),
        pytest.param(DELTA, _text("b\xff").encode("latin-1"), id="bad-utf8-inside"),
        pytest.param(DELTA, _text("b") + " ", id="trailing-blank"),
        pytest.param("contentBlockStop", _text("b"), id="another-event-type"),
        pytest.param("somethingNew", _text("b"), id="unknown-event"),
        pytest.param("messageStop", '{"p":"abc","stopReason":"end_turn"}', id="message-stop"),
        pytest.param("exception", '{"message":"throttled"}', id="exception-type"),
    ],
)
@pytest.mark.parametrize("on_malformed", ["raise", "skip"])
def test_bedrock_reads_the_same_with_and_without_the_shortcut(
    monkeypatch: pytest.MonkeyPatch, name: str, later: str | bytes, on_malformed: OnMalformed
) -> None:
    read = template_reads(monkeypatch)
    kind = "exception" if name == "exception" else "event"
    body = (
        START
        + _event(DELTA, _text("a", "a"))
        + _event(DELTA, _text("b", "abcd"))
        + _event(name, later, kind)
        + _event(DELTA, _text("c", "xy"))
        + _end()
    )
    whole = _three_ways(body, rs.eventstream_frames, _bedrock(on_malformed))
    assert whole[0]
    if name == DELTA:  # the second delta taught the template: the later one was offered to it
        assert read
    for piece in (1, 50):  # the template outlives a batch of events
        assert (
            _three_ways(body, rs.eventstream_frames, _bedrock(on_malformed), piece=piece) == whole
        )


def test_bedrock_a_delta_after_message_stop_reads_the_same() -> None:
    body = (
        START
        + _event(DELTA, _text("a"))
        + _event(DELTA, _text("b"))
        + _event("messageStop", '{"stopReason":"end_turn"}')
        + _event(DELTA, _text("c"))
    )
    _, errors = _three_ways(body, rs.eventstream_frames, _bedrock("raise"))
    assert "after messageStop" in errors[0]


def test_bedrock_a_cut_stream_reads_the_same() -> None:
    body = START + _event(DELTA, _text("a")) + _event(DELTA, _text("b")) + _event(DELTA, _text("c"))
    items, errors = _three_ways(body[:-20], rs.eventstream_frames, _bedrock("raise"))
    assert items
    assert errors


REASONING_STREAM = [
    (DELTA, _reasoning("Let", "a")),
    (DELTA, _reasoning(" me", "abcdef")),
    (DELTA, _reasoning("", "ab")),
    (DELTA, _reasoning(' \\"think\\"', "abcdefgh")),
    (DELTA, '{"contentBlockIndex":0,"delta":{"reasoningContent":{"signature":"sig"}},"p":"a"}'),
    (DELTA, _reasoning(" more", "abc")),
    ("contentBlockStop", '{"contentBlockIndex":0,"p":"a"}'),
    (DELTA, _reasoning("again", "ab")),  # a new reasoning block at the same index
    (DELTA, _reasoning("!", "abcd")),
    ("contentBlockStop", '{"contentBlockIndex":0}'),
    (DELTA, _text("The", index=1)),
    (DELTA, _text(" answer", "a", index=1)),
]

TOOL_STREAM = [
    (DELTA, _text("Let me look.")),
    (DELTA, _text(" Now.", "a")),
    ("contentBlockStop", '{"contentBlockIndex":0}'),
    (
        "contentBlockStart",
        '{"contentBlockIndex":1,"start":{"toolUse":{"toolUseId":"t1","name":"f"}},"p":"ab"}',
    ),
    (DELTA, _input('{\\"a\\"')),
    (DELTA, _input(":1", "abcdefg")),
    (DELTA, _input("", "a")),
    (DELTA, _input("}", "abcd")),
    ("contentBlockStop", '{"contentBlockIndex":1}'),
    (DELTA, _input("{}", "ab")),  # the block is gone: malformed
]

SERVER_TOOL_STREAM = [
    (DELTA, _text("Searching.")),
    (
        "contentBlockStart",
        '{"contentBlockIndex":1,"start":{"toolUse":{"toolUseId":"t1","name":"f"}}}',
    ),
    (DELTA, _input('{\\"q\\"')),
    (DELTA, _input(':\\"x\\"', "abcdef")),
    ("contentBlockStop", '{"contentBlockIndex":1}'),
    (
        "contentBlockStart",
        '{"contentBlockIndex":1,"start":{"toolUse":{"toolUseId":"s1","name":"web",'
        '"type":"server_tool_use"}}}',
    ),
    (DELTA, _input('{\\"q\\"', "a")),  # the same payload, now in a server tool's block
    (DELTA, _input(":1}", "abcd")),
    ("contentBlockStop", '{"contentBlockIndex":1}'),
    (DELTA, _reasoning("late", index=1)),
]

SIGNED = '{"contentBlockIndex":0,"delta":{"reasoningContent":{"text":"%s","signature":"s"}}}'

SIGNED_STREAM = [(DELTA, SIGNED % w) for w in ("a", "b", "c", "d")]

REASONING_THEN_TOOL_STREAM = [
    (DELTA, _text("Hi")),
    *((DELTA, _reasoning(w, "x" * i, index=1)) for i, w in enumerate("abc")),
    ("contentBlockStop", '{"contentBlockIndex":1}'),
    (
        "contentBlockStart",
        '{"contentBlockIndex":1,"start":{"toolUse":{"toolUseId":"t1","name":"f"}}}',
    ),
    (DELTA, _reasoning("d", "xyz", index=1)),  # in a tool block now: malformed
]

SIGNATURE = '{"contentBlockIndex":%d,"delta":{"reasoningContent":{"signature":"s%d"}}}'

TWO_REASONING_BLOCKS_STREAM = [
    *((DELTA, _reasoning(w, "x" * i, index=0)) for i, w in enumerate("abc")),
    *((DELTA, _reasoning(w, "x" * i, index=2)) for i, w in enumerate("de")),  # another block
    (DELTA, SIGNATURE % (2, 2)),
    ("contentBlockStop", '{"contentBlockIndex":2}'),
    (DELTA, SIGNATURE % (0, 0)),
]


@pytest.mark.parametrize(
    "events",
    [
        pytest.param(REASONING_STREAM, id="reasoning"),
        pytest.param(SIGNED_STREAM, id="reasoning-with-signatures"),
        pytest.param(TWO_REASONING_BLOCKS_STREAM, id="two-reasoning-blocks"),
        pytest.param(REASONING_THEN_TOOL_STREAM, id="reasoning-then-a-tool-block"),
        pytest.param(TOOL_STREAM, id="tool-input"),
        pytest.param(SERVER_TOOL_STREAM, id="server-tool-input"),
        pytest.param(
            [*REASONING_STREAM[:3], (DELTA, _text("x", index=0)), *REASONING_STREAM[3:]],
            id="text-in-a-reasoning-block",
        ),
        pytest.param(
            [*TOOL_STREAM[:6], (DELTA, _reasoning("x", index=1)), *TOOL_STREAM[6:]],
            id="reasoning-in-a-tool-block",
        ),
    ],
)
@pytest.mark.parametrize("on_malformed", ["raise", "skip"])
@pytest.mark.parametrize("stop", ["end_turn", "tool_use"])
def test_bedrock_reasoning_and_tool_input_read_the_same(
    events: list[tuple[str, str]], on_malformed: OnMalformed, stop: str
) -> None:
    body = START + b"".join(_event(name, payload) for name, payload in events) + _end(stop)
    items, _ = _three_ways(body, rs.eventstream_frames, _bedrock(on_malformed))
    assert items
    assert _three_ways(body, rs.eventstream_frames, _bedrock(on_malformed), piece=33)[0] == items


def test_bedrock_the_recording_reads_the_same() -> None:
    from pathlib import Path

    for path in sorted((Path(__file__).parents[3] / "data" / "bedrock").glob("*.eventstream")):
        items, errors = _three_ways(path.read_bytes(), rs.eventstream_frames, _bedrock("raise"))
        assert errors == []
        assert items


@pytest.mark.parametrize("typed", [False, True])
def test_bedrock_takes_the_shortcut_on_the_standard_library(
    monkeypatch: pytest.MonkeyPatch, typed: bool
) -> None:
    read = template_reads(monkeypatch)
    texts = [_text(w, "p" * (i + 1)) for i, w in enumerate("abcde")]
    body = START + b"".join(_event(DELTA, t) for t in texts) + _end()
    items, errors = _run([body], rs.eventstream_frames, _bedrock("raise"), typed=typed)
    assert errors == []
    # The first delta goes the general way (nothing answered yet), the second is
    # read inline and teaches the template. msgspec reads whole payloads faster.
    assert read == ([] if typed else ["c", "d", "e"])
    assert "".join(d.text for d in items if isinstance(d, rs.TextDelta)) == "abcde"


def test_bedrock_takes_the_shortcut_for_reasoning_and_tool_input(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    read = template_reads(monkeypatch)
    events = [
        (DELTA, _reasoning("a", "x")),
        (DELTA, _reasoning("b", "xy")),
        (DELTA, _reasoning("c", "xyz")),
        ("contentBlockStop", '{"contentBlockIndex":0}'),
        (
            "contentBlockStart",
            '{"contentBlockIndex":1,"start":{"toolUse":{"toolUseId":"t","name":"f"}}}',
        ),
        (DELTA, _input("{", "x")),
        (DELTA, _input("}", "xy")),
        (DELTA, _input(" ", "xyz")),
        ("contentBlockStop", '{"contentBlockIndex":1}'),
    ]
    body = START + b"".join(_event(n, p) for n, p in events) + _end("tool_use")
    items, errors = _run([body], rs.eventstream_frames, _bedrock("raise"), typed=False)
    assert errors == []
    # The first reasoning delta goes the general way (nothing answered yet), the
    # second teaches the template; the first input fragment is no match (read
    # whole, it teaches another), the next two are.
    assert read == ["c", None, "}", " "]
    call = [d for d in items if isinstance(d, rs.ToolCallDelta)]
    assert "".join(d.arguments for d in call) == "{} "


def test_bedrock_reasoning_after_an_answer_takes_the_shortcut(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    read = template_reads(monkeypatch)
    events = [
        (DELTA, _text("Hi", index=0)),
        ("contentBlockStop", '{"contentBlockIndex":0}'),
        *((DELTA, _reasoning(w, "x" * i, index=1)) for i, w in enumerate("abcd")),
        ("contentBlockStop", '{"contentBlockIndex":1}'),
    ]
    body = START + b"".join(_event(n, p) for n, p in events) + _end()
    items, errors = _three_ways(body, rs.eventstream_frames, _bedrock("raise"))
    assert errors == []
    assert read == ["b", "c", "d"]  # (the other two ways learn no template)
    assert "".join(d.text for d in items if isinstance(d, rs.ReasoningDelta)) == "abcd"


def test_the_payloads_in_these_tests_are_json() -> None:
    for payload in [_text("a"), _reasoning("a"), _input('{\\"a\\"'), *(p for _, p in TOOL_STREAM)]:
        assert isinstance(json.loads(payload), dict)

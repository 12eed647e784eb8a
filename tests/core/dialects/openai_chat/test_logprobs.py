"""OpenAI chat `logprobs`: one reading (the chunk reader's), the same on every path.

`choices[i].logprobs` (`{"content": [entry, ...], "refusal": [entry, ...]}`,
each entry `{"token", "logprob", "bytes", "top_logprobs"}`) becomes one
`Metadata({"logprobs": [...], "refusal_logprobs": [...]}, choice=i)` before
the choice's other deltas, so `accumulate_message` gathers each list in order.
Every path gives the same: the plain reader (`RXSTREAM_NO_FAST=1`), the
msgspec typed reading (which leaves a chunk with logprobs to the reader), the
learnt-template shortcut (which never reads logprobs by its text), the fused
machine pairs (chunk decoder with delta decoder, message accumulator or token
counter) and `rs.decode`. The streams are written here by hand in the shape
OpenAI sends (`logprobs=True, top_logprobs=2`).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest
import reactivex
from hypothesis import given
from hypothesis import strategies as st
from reactivex import operators as ops

import rxstream as rs
from rxstream._typed import typed as typed_module
from rxstream.core.dialects.openai_chat.decode import OpenAIChatDecoder
from rxstream.core.dialects.openai_chat.reader import ChunkReader
from rxstream.core.dialects.openai_chat.render import OpenAIChatRenderer
from rxstream.testing.server import End, FakeLLMServer, Say, Scenario
from tests.support.fast import WAYS, learning_at_once, outcome, way
from tests.support.pipelines import Pipeline
from tests.support.ways import template_reads

JSONObject = dict[str, Any]

# --------------------------------------------------------------------------- the streams

#: What every chunk of the stream starts with, as OpenAI writes it.
HEAD: JSONObject = {
    "id": "chatcmpl-CkLp9xQmZr3tYb7WvN2sE4aHdF1gU",
    "object": "chat.completion.chunk",
    "created": 1765108800,
    "model": "gpt-4o-mini-2024-07-18",
    "service_tier": "default",
    "system_fingerprint": "fp_51db84afab",
}

TOKENS = ["Hello", ",", " world", "!"]
#: (token, logprob) of the two most likely tokens at each place (the chosen one first).
TOP = [
    [("Hello", -0.0000073), ("Hi", -12.25)],
    [(",", -0.31326), ("!", -1.3133)],
    [(" world", -0.0019), (" there", -6.44)],
    [("!", -0.0000016), (".", -13.5)],
]


def entry(token: str, logprob: float, *, top: list[tuple[str, float]] | None = None) -> JSONObject:
    """One logprobs entry as OpenAI sends it (the alternatives without their own)."""
    out: JSONObject = {"token": token, "logprob": logprob, "bytes": list(token.encode())}
    if top is not None:
        out["top_logprobs"] = [entry(t, p) for t, p in top]
    return out


ENTRIES = [entry(*top[0], top=top) for top in TOP]


def choice(delta: JSONObject, logprobs: Any, finish: str | None = None, n: int = 0) -> JSONObject:
    return {"index": n, "delta": delta, "logprobs": logprobs, "finish_reason": finish}


def event(choices: list[JSONObject], pad: str = "", **extra: Any) -> str:
    chunk = {**HEAD, "choices": choices, **extra}
    if pad:
        chunk["obfuscation"] = pad
    return f"data: {json.dumps(chunk, separators=(',', ':'))}\n\n"


def logprobs(content: list[Any] | None, refusal: list[Any] | None = None) -> Any:
    return {"content": content, "refusal": refusal}


USAGE = {
    "prompt_tokens": 11,
    "completion_tokens": 4,
    "total_tokens": 15,
    "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
    "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
}


def answer(*, asked: bool = True, plain_first: int = 0) -> bytes:
    """The text answer, with logprobs when `asked` (else `"logprobs": null`, as OpenAI
    sends when not asked); `plain_first` text chunks without logprobs come first."""
    events = [event([choice({"role": "assistant", "content": "", "refusal": None}, None)])]
    for k in range(plain_first):
        events.append(event([choice({"content": f"({k})"}, None)], pad="x" * (k + 1)))
    for k, (token, one) in enumerate(zip(TOKENS, ENTRIES, strict=True)):
        carried = logprobs([one]) if asked else None
        events.append(event([choice({"content": token}, carried)], pad="ab"[: 1 + k % 2]))
    events.append(event([choice({}, None, "stop")], pad="z"))
    events.append(event([], usage=USAGE, pad="u"))
    return ("".join(events) + "data: [DONE]\n\n").encode()


REFUSAL = ["I'm", " sorry", "."]
REFUSAL_ENTRIES = [entry(t, -0.25 * (k + 1), top=[]) for k, t in enumerate(REFUSAL)]


def refusal_answer() -> bytes:
    """A refusal, its logprobs under `logprobs.refusal` (OpenAI's first chunk has `[]`)."""
    opening = choice({"role": "assistant", "content": None, "refusal": ""}, logprobs(None, []))
    events = [event([opening])]
    for token, one in zip(REFUSAL, REFUSAL_ENTRIES, strict=True):
        events.append(event([choice({"refusal": token}, logprobs(None, [one]))]))
    events.append(event([choice({}, None, "stop")]))
    return ("".join(events) + "data: [DONE]\n\n").encode()


def two_choices() -> bytes:
    """`n=2`: the two choices' chunks interleaved, one chunk holding both at the start."""
    first = [entry("A", -0.5), entry("B", -0.75)]
    second = [entry("C", -1.0), entry("D", -1.5)]
    events = [
        event(
            [
                choice({"content": "A"}, logprobs([first[0]])),
                choice({"content": "C"}, logprobs([second[0]]), n=1),
            ]
        ),
        event([choice({"content": "D"}, logprobs([second[1]]), n=1)]),
        event([choice({"content": "B"}, logprobs([first[1]]))]),
        event([choice({}, None, "stop"), choice({}, None, "stop", n=1)]),
    ]
    return ("".join(events) + "data: [DONE]\n\n").encode()


def reads(data: bytes, size: int = 97) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


# --------------------------------------------------------------------------- the paths

FRAMES = [rs.lines(), rs.sse_frames()]

#: The pipelines that give deltas, by the path they take.
DELTA_PATHS: dict[str, Pipeline] = {
    "decode": lambda: [rs.lines(), rs.sse_frames(), rs.decode("openai-chat")],
    "decode auto": lambda: [rs.lines(), rs.sse_frames(), rs.decode()],
    # The chunk decoder fused with the delta decoder (the pair `deltas`).
    "decode_chunks, deltas": lambda: [rs.lines(), rs.sse_frames(), rs.decode_chunks(), rs.deltas()],
}

#: The pipelines that give the final messages.
MESSAGE_PATHS: dict[str, Pipeline] = {
    "decode, accumulate_message": lambda: [
        *[rs.lines(), rs.sse_frames()],
        rs.decode("openai-chat"),
        rs.accumulate_message(),
    ],
    "decode auto, accumulate_message": lambda: [
        *[rs.lines(), rs.sse_frames()],
        rs.decode(),
        rs.accumulate_message(),
    ],
    "decode_chunks, deltas, accumulate_message": lambda: [
        *[rs.lines(), rs.sse_frames()],
        rs.decode_chunks(),
        rs.deltas(),
        rs.accumulate_message(),
    ],
    # The chunk decoder fused with the accumulator (the pair `accumulate`).
    "decode_chunks, accumulate_message": lambda: [
        *[rs.lines(), rs.sse_frames()],
        rs.decode_chunks(),
        rs.accumulate_message(),
    ],
}

#: The pipelines that count tokens (one "token" per word).
COUNT_PATHS: dict[str, Pipeline] = {
    "decode, count_tokens": lambda: [
        *[rs.lines(), rs.sse_frames()],
        rs.decode("openai-chat"),
        rs.count_tokens(encoding=str.split),
    ],
    # The chunk decoder fused with the counter's delta decoder (the pair `counted`).
    "decode_chunks, count_tokens": lambda: [
        *[rs.lines(), rs.sse_frames()],
        rs.decode_chunks(),
        rs.count_tokens(encoding=str.split),
    ],
    # The delta decoder fused into the counter (the pair `count`).
    "decode_chunks, deltas, count_tokens": lambda: [
        *[rs.lines(), rs.sse_frames()],
        rs.decode_chunks(),
        rs.deltas(),
        rs.count_tokens(encoding=str.split),
    ],
}

EVERY_PATH = {**DELTA_PATHS, **MESSAGE_PATHS, **COUNT_PATHS}


def logprob_items(items: list[Any]) -> list[rs.Metadata]:
    return [i for i in items if isinstance(i, rs.Metadata) and "id" not in i.data]


def message_of(data: bytes, path: str, name: str, size: int = 97) -> list[rs.Message]:
    items, _, errors, completed = outcome(reads(data, size), MESSAGE_PATHS[path], name)
    assert errors == []
    assert completed
    return items


# --------------------------------------------------------------------------- every path


@pytest.mark.parametrize("name", WAYS)
@pytest.mark.parametrize("path", DELTA_PATHS)
def test_each_chunk_s_logprobs_come_as_one_metadata_before_its_text(path: str, name: str) -> None:
    seen = outcome(reads(answer()), DELTA_PATHS[path], name)
    items, _, errors, completed = seen
    assert errors == []
    assert completed
    texts = [i for i in items if isinstance(i, rs.TextDelta)]
    assert logprob_items(items) == [rs.Metadata({"logprobs": [one]}) for one in ENTRIES]
    for text, one in zip(texts, ENTRIES, strict=True):
        # Right before the text whose token it describes.
        assert items[items.index(text) - 1] == rs.Metadata({"logprobs": [one]})
        assert text.text == one["token"]
    assert seen == outcome(reads(answer()), DELTA_PATHS[path], "plain")


STREAMS: dict[str, tuple[Callable[[], bytes], list[JSONObject]]] = {
    # (the stream, and each choice's metadata at the end)
    "text": (answer, [{"logprobs": ENTRIES}]),
    "refusal": (refusal_answer, [{"refusal_logprobs": REFUSAL_ENTRIES}]),
    "two choices": (
        two_choices,
        [
            {"logprobs": [entry("A", -0.5), entry("B", -0.75)]},
            {"logprobs": [entry("C", -1.0), entry("D", -1.5)]},
        ],
    ),
    "plain chunks, then logprobs": (lambda: answer(plain_first=6), [{"logprobs": ENTRIES}]),
}


@pytest.mark.parametrize("name", WAYS)
@pytest.mark.parametrize("path", MESSAGE_PATHS)
@pytest.mark.parametrize("stream", STREAMS)
def test_the_message_holds_every_entry_in_order(stream: str, path: str, name: str) -> None:
    make, expected = STREAMS[stream]
    messages = message_of(make(), path, name)
    got = [{k: v for k, v in m.metadata.items() if "logprobs" in k} for m in messages]
    assert got == expected
    assert [m.choice for m in messages] == list(range(len(expected)))


def test_the_text_and_refusal_come_as_without_logprobs() -> None:
    [text] = message_of(answer(), "decode, accumulate_message", "plain")
    [refused] = message_of(refusal_answer(), "decode, accumulate_message", "plain")
    assert (text.content, text.finish_reason) == ("".join(TOKENS), "stop")
    assert text.usage is not None
    assert text.usage.total_tokens == 15
    assert (refused.content, refused.refusal) == ("", "".join(REFUSAL))


@pytest.mark.parametrize("name", WAYS)
@pytest.mark.parametrize("path", COUNT_PATHS)
def test_token_counts_are_those_of_the_stream_without_logprobs(path: str, name: str) -> None:
    counted = outcome(reads(answer()), COUNT_PATHS[path], name)
    assert counted[2] == []
    assert counted[3]
    assert counted[0] == outcome(reads(answer(asked=False)), COUNT_PATHS[path], "plain")[0]
    assert counted[0][-1].final
    assert counted[0][-1].text == 2


CUT = answer(plain_first=2)


@given(
    cuts=st.lists(st.integers(1, len(CUT) - 1), max_size=12, unique=True),
    name=st.sampled_from(sorted(WAYS)),
    path=st.sampled_from(sorted(MESSAGE_PATHS)),
)
def test_any_chunking_gives_the_same_logprobs(cuts: list[int], name: str, path: str) -> None:
    bounds = [0, *sorted(cuts), len(CUT)]
    pieces = [CUT[a:b] for a, b in itertools.pairwise(bounds)]
    items, _, errors, _ = outcome(pieces, MESSAGE_PATHS[path], name)
    assert errors == []
    [message] = items
    assert message.metadata["logprobs"] == ENTRIES


# --------------------------------------------------------------------------- the fast paths


def test_null_logprobs_stay_on_the_typed_path_and_logprobs_leave_it() -> None:
    typed: Any = typed_module("openai_chat")
    if typed is None:
        pytest.skip("the fast extra (msgspec) is not installed")
    plain = json.dumps({**HEAD, "choices": [choice({"content": "a"}, None)]})
    carried = json.dumps({**HEAD, "choices": [choice({"content": "a"}, logprobs([]))]})
    reader, out = ChunkReader(), list[Any]()
    assert typed.ChunkFeeder(reader).feed(plain, out)
    assert out[-1] == rs.TextDelta("a")
    reader, out = ChunkReader(), []
    assert not typed.ChunkFeeder(reader).feed(carried, out)
    assert out == []
    assert not reader.seen


def test_null_logprobs_stay_on_the_template_path(monkeypatch: pytest.MonkeyPatch) -> None:
    template = template_reads(monkeypatch)
    with learning_at_once():  # (a template learnt at the first chunk that could teach one)
        seen = outcome(reads(answer(asked=False, plain_first=8)), DELTA_PATHS["decode"], "stdlib")
    assert seen[2] == []
    # Every text chunk after the one the template was learnt from reads by its text.
    assert [text for text in template if text is not None] == [f"({k})" for k in range(1, 8)] + [
        *TOKENS
    ]


def test_a_template_learnt_on_plain_chunks_reads_no_chunk_with_logprobs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    template = template_reads(monkeypatch)
    data = answer(plain_first=4)
    with learning_at_once():  # (a template learnt at the first chunk that could teach one)
        seen = outcome(reads(data), DELTA_PATHS["decode"], "stdlib")
    assert [text for text in template if text is not None] == ["(1)", "(2)", "(3)"]
    assert seen == outcome(reads(data), DELTA_PATHS["decode"], "plain")


# --------------------------------------------------------------------------- wrong types


def with_logprobs(value: Any) -> bytes:
    """A stream whose second chunk's choice has `value` as its `logprobs`."""
    events = [
        event([choice({"content": "a"}, None)]),
        event([choice({"content": "b"}, value)]),
        event([choice({}, None, "stop")]),
    ]
    return ("".join(events) + "data: [DONE]\n\n").encode()


GOOD = entry("b", -0.5, top=[("b", -0.5)])

WRONG: list[tuple[str, Any, str]] = [
    ("logprobs a string", "x", "choices[0].logprobs is a JSON string"),
    ("logprobs an array", [GOOD], "choices[0].logprobs is a JSON array"),
    ("content an object", {"content": GOOD}, "choices[0].logprobs.content is a JSON object"),
    ("refusal a number", {"refusal": 1}, "choices[0].logprobs.refusal is a JSON number"),
    ("an entry a string", logprobs(["b"]), "choices[0].logprobs.content[0] is a JSON string"),
    (
        "a token a number",
        logprobs([{**GOOD, "token": 7}]),
        "choices[0].logprobs.content[0].token is a JSON number",
    ),
    (
        "a logprob a string",
        logprobs([{**GOOD, "logprob": "-0.5"}]),
        "choices[0].logprobs.content[0].logprob is a JSON string",
    ),
    (
        "a logprob a boolean",
        logprobs(None, [{**GOOD, "logprob": True}]),
        "choices[0].logprobs.refusal[0].logprob is a JSON boolean",
    ),
    (
        "a byte a string",
        logprobs([{**GOOD, "bytes": [98, "c"]}]),
        "choices[0].logprobs.content[0].bytes[1] is a JSON string",
    ),
    (
        "top_logprobs an object",
        logprobs([{**GOOD, "top_logprobs": {}}]),
        "choices[0].logprobs.content[0].top_logprobs is a JSON object",
    ),
    (
        "an alternative's logprob null is fine, its bytes a string not",
        logprobs([{**GOOD, "top_logprobs": [{"token": "b", "logprob": None, "bytes": "b"}]}]),
        "choices[0].logprobs.content[0].top_logprobs[0].bytes is a JSON string",
    ),
]


def errors_of(data: bytes, pipeline: Pipeline, name: str) -> tuple[list[Any], list[Exception]]:
    items: list[Any] = []
    errors: list[Exception] = []
    with way(name):
        reactivex.from_iterable(reads(data, 50)).pipe(*pipeline()).subscribe(
            items.append, errors.append
        )
    return items, errors


@pytest.mark.parametrize("name", WAYS)
@pytest.mark.parametrize("path", EVERY_PATH)
@pytest.mark.parametrize(("value", "reason"), [c[1:] for c in WRONG], ids=[c[0] for c in WRONG])
def test_a_wrong_type_is_malformed_naming_its_path(
    value: Any, reason: str, path: str, name: str
) -> None:
    items, errors = errors_of(with_logprobs(value), EVERY_PATH[path], name)
    [error] = errors
    assert isinstance(error, rs.MalformedChunkError), repr(error)
    assert error.reason.startswith(reason + ", not "), error.reason
    # The chunk before it gave its text (or its count); none of the broken chunk came.
    assert not any(isinstance(i, rs.TextDelta) and i.text == "b" for i in items)


@pytest.mark.parametrize("name", WAYS)
def test_a_chunk_with_wrong_logprobs_is_skipped_when_asked(name: str) -> None:
    pipeline = lambda: [*FRAMES, rs.decode("openai-chat", on_malformed="skip")]  # noqa: E731
    items, errors = errors_of(with_logprobs("x"), pipeline, name)
    assert errors == []
    assert [i for i in items if not isinstance(i, rs.Metadata)] == [
        rs.TextDelta("a"),
        rs.Finish("stop", raw="stop"),
    ]


@pytest.mark.parametrize("value", [None, logprobs([]), logprobs(None, None), {"tokens": ["b"]}])
def test_empty_null_or_unknown_logprobs_give_no_metadata(value: Any) -> None:
    items, errors = errors_of(with_logprobs(value), DELTA_PATHS["decode"], "plain")
    assert errors == []
    assert logprob_items(items) == []


# --------------------------------------------------------------------------- rendering


def decoded_again(deltas: list[Any]) -> list[Any]:
    """What the renderer writes of `deltas`, decoded (the response's own id left out)."""
    renderer, decoder, out = OpenAIChatRenderer(), OpenAIChatDecoder(), list[Any]()
    frames = [frame for delta in deltas for frame in renderer.feed(delta)] + renderer.close()
    for frame in frames:
        assert isinstance(frame, rs.SSEFrame)
        out += decoder.feed(frame)
    decoder.close()
    return [item for item in out if not (isinstance(item, rs.Metadata) and "id" in item.data)]


LP = rs.Metadata({"logprobs": [entry("a", -0.5)]})
LP1 = rs.Metadata({"logprobs": [entry("b", -1.5)]}, choice=1)
TEXT, STOP = rs.TextDelta("a"), rs.Finish("stop", raw="stop")

ROUND_TRIPS: dict[str, list[Any]] = {
    "logprobs with their text": [LP, TEXT, STOP],
    "logprobs with a finish": [TEXT, LP, STOP],
    "a refusal's": [
        rs.Metadata({"refusal_logprobs": [entry("No", -0.1)]}),
        rs.RefusalDelta("No"),
        STOP,
    ],
    "both lists": [
        rs.Metadata({"logprobs": [entry("a", -0.5)], "refusal_logprobs": [entry("N", -2.0)]}),
        TEXT,
        STOP,
    ],
    "two in a row": [LP, rs.Metadata({"logprobs": [entry("b", -1.0)]}), TEXT, STOP],
    "another choice next": [
        LP,
        rs.TextDelta("b", choice=1),
        TEXT,
        STOP,
        rs.Finish("stop", 1, "stop"),
    ],
    "the second choice's": [LP1, rs.TextDelta("b", choice=1), rs.Finish("stop", 1, "stop")],
    "a usage next": [TEXT, STOP, LP, rs.Usage(1, 2, 3)],
    "the end next": [TEXT, STOP, LP],
}


@pytest.mark.parametrize("deltas", ROUND_TRIPS.values(), ids=ROUND_TRIPS.keys())
def test_decoding_what_the_renderer_writes_gives_the_deltas_back(deltas: list[Any]) -> None:
    assert decoded_again(deltas) == deltas


@pytest.mark.parametrize("stream", STREAMS)
def test_a_recorded_stream_round_trips(stream: str) -> None:
    items = outcome(reads(STREAMS[stream][0]()), DELTA_PATHS["decode"], "plain")[0]
    deltas = [i for i in items if not (isinstance(i, rs.Metadata) and "id" in i.data)]
    assert decoded_again(deltas) == deltas


def test_the_renderer_writes_them_in_the_chunk_of_their_text() -> None:
    renderer = OpenAIChatRenderer()
    assert renderer.feed(LP) == []
    [_, frame] = renderer.feed(TEXT)  # (the role chunk first)
    [written] = json.loads(frame.data)["choices"]
    assert written == {
        "index": 0,
        "delta": {"content": "a"},
        "logprobs": {"content": LP.data["logprobs"], "refusal": None},
        "finish_reason": None,
    }


def test_logprobs_held_at_an_error_go_before_it() -> None:
    renderer = OpenAIChatRenderer()
    renderer.feed(LP)
    *frames, error = renderer.error(rs.ProviderError("overloaded", type="server_error"))
    assert json.loads(error.data)["error"]["message"] == "overloaded"
    written = [json.loads(frame.data)["choices"][0] for frame in frames]
    assert [w.get("logprobs") for w in written] == [
        None,
        {"content": LP.data["logprobs"], "refusal": None},
    ]


def test_other_metadata_is_not_written() -> None:
    renderer = OpenAIChatRenderer()
    assert renderer.feed(rs.Metadata({"logprobs": "not a list", "seed": 1})) == []
    [_, frame] = renderer.feed(TEXT)
    assert "logprobs" not in json.loads(frame.data)["choices"][0]


# --------------------------------------------------------------------------- request and server


def test_the_request_passes_the_logprobs_options_through() -> None:
    request = rs.request(
        "openai-chat",
        model="gpt-4o-mini",
        messages=[{"role": "user", "content": "Hi"}],
        api_key="k",
        logprobs=True,
        top_logprobs=2,
    )
    body = json.loads(request.content)
    assert (body["logprobs"], body["top_logprobs"]) == (True, 2)


def test_the_fake_server_answers_with_logprobs_that_rs_chat_reads() -> None:
    script = Scenario(steps=(Say(LP, TEXT), Say(LP1, rs.TextDelta("b", choice=1)), End()))
    with FakeLLMServer(script) as server, httpx.Client() as client:
        messages = (
            rs.chat(
                client,
                "openai-chat",
                model="fake-model",
                messages=[{"role": "user", "content": "Hi"}],
                api_key="k",
                base_url=server.base_url,
                logprobs=True,
                top_logprobs=1,
            )
            .pipe(rs.accumulate_message(), ops.to_list())
            .run()
        )
        asked = server.requests[0].json
    assert (asked["logprobs"], asked["top_logprobs"]) == (True, 1)
    assert [m.metadata["logprobs"] for m in messages] == [LP.data["logprobs"], LP1.data["logprobs"]]


def test_the_openai_sdk_reads_the_logprobs_the_renderer_writes() -> None:
    openai = pytest.importorskip("openai")
    script = Scenario(steps=(Say(LP, TEXT, STOP), End()))
    with FakeLLMServer(script) as server:
        client = openai.OpenAI(api_key="k", base_url=server.base_url, max_retries=0)
        stream = client.chat.completions.create(
            model="fake-model",
            messages=[{"role": "user", "content": "Hi"}],
            stream=True,
            logprobs=True,
        )
        tokens = [
            (item.token, item.logprob, item.bytes)
            for chunk in stream
            for one in chunk.choices
            if one.logprobs is not None and one.logprobs.content
            for item in one.logprobs.content
        ]
        client.close()
    assert tokens == [("a", -0.5, [97])]

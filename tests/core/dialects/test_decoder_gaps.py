"""Three decoder gaps, closed on every path (standard library, templates, msgspec types).

- openai-chat: a `delta.content` array whose parts are not objects with a
  string `type` is `MalformedChunkError`, not dropped;
- openai-responses: a `response.completed` output item whose `type` is not a
  string is `MalformedChunkError`, streamed before or not;
- openai-chat: the chunks' `id` and `model` are one `Metadata` (again only
  when one changes), so `Message.metadata` and `rs.telemetry` have them; the
  other dialects report what their streams carry.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import reactivex
from reactivex import Observable

import rxstream as rs
from rxstream.models import Metadata, SSEFrame
from tests.support.fast import fast_switch  # noqa: F401  (the `fast` fixture: on, then off)
from tests.support.json_paths import json_path  # noqa: F401  (every test runs on both JSON paths)

DATA = Path(__file__).resolve().parents[2] / "data"


def sse(*payloads: Any) -> bytes:
    return "".join(f"data: {json.dumps(p)}\n\n" for p in payloads).encode()


def run(body: bytes, *operators: Any) -> tuple[list[Any], list[Exception]]:
    items: list[Any] = []
    errors: list[Exception] = []
    source: Observable[Any] = reactivex.from_iterable(
        [body[i : i + 97] for i in range(0, len(body), 97)]
    )
    for operator in [rs.lines(), rs.sse_frames(), *operators]:
        source = operator(source)
    source.subscribe(items.append, errors.append)
    return items, errors


def chat(content: Any, id: str = "chatcmpl-1", model: str = "gpt-x") -> dict[str, Any]:
    return {
        "id": id,
        "object": "chat.completion.chunk",
        "created": 1,
        "model": model,
        "choices": [{"index": 0, "delta": {"content": content}, "finish_reason": None}],
    }


DECODINGS: dict[str, Callable[[], list[Any]]] = {
    "decode": lambda: [rs.decode("openai-chat")],
    "auto": lambda: [rs.decode()],
    "chunks-deltas": lambda: [rs.decode_chunks(), rs.deltas()],
    "chunks": lambda: [rs.decode_chunks()],
}

# -- openai-chat content parts -----------------------------------------------------------

BAD_PARTS = [
    ([{}], "choices[0].delta.content[0].type is a JSON null, not a string"),
    ([1], "choices[0].delta.content[0] is a JSON number, not a string or an object"),
    ([{"type": 3}], "choices[0].delta.content[0].type is a JSON number, not a string"),
    ([{"text": "a"}], "choices[0].delta.content[0].type is a JSON null, not a string"),
    (
        [{"type": "thinking", "thinking": [{}]}],
        "choices[0].delta.content[0].thinking[0].type is a JSON null, not a string",
    ),
]


@pytest.mark.parametrize("decoding", DECODINGS, ids=list(DECODINGS))
@pytest.mark.parametrize(
    ("parts", "reason"),
    BAD_PARTS,
    ids=["empty object", "number", "type number", "untyped", "nested"],
)
def test_content_parts_without_a_string_type_are_malformed(
    parts: list[Any], reason: str, decoding: str, fast: bool
) -> None:
    # Text chunks first, so the templates and the typed reading are warm.
    body = sse(*[chat("Hi")] * 5, chat(parts)) + b"data: [DONE]\n\n"
    items, errors = run(body, *DECODINGS[decoding]())
    assert [type(e) for e in errors] == [rs.MalformedChunkError]
    assert reason in str(errors[0])
    if decoding != "chunks":
        assert [i.text for i in items if isinstance(i, rs.TextDelta)] == ["Hi"] * 5


def test_typed_content_parts_still_read(fast: bool) -> None:
    parts = [{"type": "text", "text": "a"}, "b", {"type": "image_url", "image_url": {}}]
    body = sse(
        chat(parts), {**chat(""), "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    )
    items, errors = run(
        body + b"data: [DONE]\n\n", rs.decode("openai-chat"), rs.accumulate_message()
    )
    assert errors == []
    assert items[0].content == "ab"


# -- openai-responses output items ----------------------------------------------------------


def responses(*events: dict[str, Any]) -> bytes:
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()


MESSAGE = {"type": "message", "id": "msg_1", "role": "assistant", "content": []}
STREAMED = [
    {"type": "response.output_item.added", "output_index": 0, "item": MESSAGE},
    {
        "type": "response.output_text.delta",
        "output_index": 0,
        "content_index": 0,
        "item_id": "msg_1",
        "delta": "Hi",
    },
    {"type": "response.output_item.done", "output_index": 0, "item": MESSAGE},
]


@pytest.mark.parametrize("kind", [None, 5, ["message"]], ids=["null", "number", "array"])
@pytest.mark.parametrize("streamed", [True, False], ids=["streamed", "only-at-the-end"])
def test_a_completed_output_item_without_a_string_type_is_malformed(
    kind: Any, streamed: bool, fast: bool
) -> None:
    item = {**MESSAGE, "type": kind}
    done = {"type": "response.completed", "response": {"status": "completed", "output": [item]}}
    body = responses(*(STREAMED if streamed else []), done)
    _, errors = run(body, rs.decode("openai-responses"))
    assert [type(e) for e in errors] == [rs.MalformedChunkError]
    assert f"response.output[0].type is a JSON {rs.core.dialects.json_kind(kind)}" in str(errors[0])


# -- openai-chat id and model ----------------------------------------------------------------


@pytest.mark.parametrize("decoding", ["decode", "auto", "chunks-deltas"])
def test_the_chunks_id_and_model_are_one_metadata(decoding: str, fast: bool) -> None:
    finish = {**chat(""), "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    usage = {"id": "chatcmpl-1", "model": "gpt-x", "choices": [], "usage": {"prompt_tokens": 1}}
    body = sse(*[chat(f"t{i}") for i in range(40)], finish, usage) + b"data: [DONE]\n\n"
    items, errors = run(body, *DECODINGS[decoding]())
    assert errors == []
    assert [i for i in items if isinstance(i, Metadata)] == [
        Metadata({"id": "chatcmpl-1", "model": "gpt-x"})
    ]
    assert isinstance(items[0], Metadata)  # before the first chunk's text
    assert len([i for i in items if isinstance(i, rs.TextDelta)]) == 40


def test_a_change_of_model_is_another_metadata(fast: bool) -> None:
    body = sse(*[chat("a")] * 20, *[chat("b", model="gpt-y")] * 20) + b"data: [DONE]\n\n"
    items, _ = run(body, rs.decode("openai-chat"))
    metadata = [(n, i) for n, i in enumerate(items) if isinstance(i, Metadata)]
    assert metadata == [
        (0, Metadata({"id": "chatcmpl-1", "model": "gpt-x"})),
        (21, Metadata({"model": "gpt-y"})),
    ]


def test_a_number_for_an_id_is_malformed(fast: bool) -> None:
    body = sse(chat("a"), {**chat("b"), "id": 5}) + b"data: [DONE]\n\n"
    _, errors = run(body, rs.decode("openai-chat"))
    assert [type(e) for e in errors] == [rs.MalformedChunkError]
    assert "(id is a JSON number, not a string or null)" in str(errors[0])


IDENTIFIED = [
    (
        "openai-chat",
        "openai/chat-text-usage.sse",
        "chatcmpl-ABfw031mOJeYCSHe4yI2ZjOA6kMJL",
        "gpt-4o-2024-08-06",
    ),
    ("gemini", "google/text-crlf.sse", "w1peaMz6INOvnvgPgYfPiQY", "gemini-2.0-flash-exp"),
    ("cohere", "cohere/v2-text.sse", "321d178c-2c12-44d3-ae42-2f5510f6b1cc", None),
    ("ollama", "ollama/chat-tool-call-llama3.1.ndjson", None, "llama3.1"),
    ("bedrock", "bedrock/converse-stream-text.eventstream", None, None),
]


@pytest.mark.parametrize(
    ("dialect", "path", "id", "model"), IDENTIFIED, ids=[c[0] for c in IDENTIFIED]
)
def test_every_dialect_reports_the_id_and_model_its_stream_carries(
    dialect: str, path: str, id: str | None, model: str | None, fast: bool
) -> None:
    body = (DATA / path).read_bytes()
    front: dict[str, list[Any]] = {"ollama": [rs.lines()], "bedrock": [rs.eventstream_frames()]}
    messages: list[rs.Message] = []
    source: Observable[Any] = reactivex.of(body)
    for operator in [*front.get(dialect, [rs.lines(), rs.sse_frames()]), rs.decode(dialect)]:
        source = operator(source)
    source.pipe(rs.accumulate_message()).subscribe(messages.append)
    assert (messages[0].metadata.get("id"), messages[0].metadata.get("model")) == (id, model)


def test_a_frame_is_still_read_as_before(fast: bool) -> None:
    frame = SSEFrame(json.dumps(chat("Hi")))
    assert rs.core.dialects.decoder("openai-chat").feed(frame) == [
        Metadata({"id": "chatcmpl-1", "model": "gpt-x"}),
        rs.TextDelta("Hi"),
    ]

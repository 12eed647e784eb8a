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
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import reactivex

import rxstream as rs
from rxstream.core import dialects
from rxstream.core.eventstream import encode_message

DATA = Path(__file__).parent.parent.parent / "data"

#: What each field is set to in turn: the empty and falsy values of each JSON type.
WRONG: list[Any] = [{}, [], 0, "", False, None]

Step = str | int


def wire_items(path: Path) -> tuple[str, list[Any]]:
    """(dialect, wire items) of a recording, the dialect as auto-detection names it."""
    body = path.read_bytes()
    source = reactivex.from_iterable([body])
    items: list[Any] = []
    if path.suffix == ".eventstream":
        source.pipe(rs.eventstream_frames()).subscribe(items.append)
    elif path.suffix == ".ndjson":
        source.pipe(rs.lines()).subscribe(items.append)
    else:
        source.pipe(rs.lines(), rs.sse_frames()).subscribe(items.append)
    auto = dialects.AutoDecoder()
    for item in items:
        try:
            auto.feed(item)
        except rs.StreamError:
            break
        if auto.dialect is not None:
            break
    assert auto.dialect is not None, path
    return auto.dialect, items


def text_of(item: Any) -> str:
    if isinstance(item, rs.SSEFrame):
        return item.data
    if isinstance(item, rs.EventStreamMessage):
        return item.payload.decode()
    return str(item)


def with_text(item: Any, text: str) -> Any:
    if isinstance(item, rs.SSEFrame):
        return rs.SSEFrame(text, item.event, item.id, item.retry)
    if isinstance(item, rs.EventStreamMessage):
        return rs.EventStreamMessage(item.headers, text.encode())
    return text


def kind_of(value: Any) -> str:
    """The event type an item's JSON names (for one mutation per type and path)."""
    for key in ("type", "event"):
        if isinstance(value.get(key), str):
            return str(value[key])
    return "+".join(sorted(value)[:3])


def paths(value: Any, prefix: tuple[Step, ...] = ()) -> Iterator[tuple[Step, ...]]:
    children: Any = (
        value.items()
        if isinstance(value, dict)
        else enumerate(value)
        if isinstance(value, list)
        else ()
    )
    for step, child in children:
        yield (*prefix, step)
        yield from paths(child, (*prefix, step))


def pattern(path: tuple[Step, ...]) -> str:
    return "".join(f"[{s}]" if isinstance(s, int) else f".{s}" for s in path)


def normal(path: tuple[Step, ...]) -> str:
    return re.sub(r"\[\d+\]", "[]", pattern(path))


def mutated(value: Any, path: tuple[Step, ...], new: Any) -> Any:
    copy = json.loads(json.dumps(value))
    parent = copy
    for step in path[:-1]:
        parent = parent[step]
    parent[path[-1]] = new
    return copy


Mutation = tuple[str, str, list[Any], int, tuple[Step, ...]]


def mutations() -> list[Mutation]:
    """(file, dialect, items, index of the item, path): one per dialect, event type and path."""
    out: list[Mutation] = []
    seen: set[tuple[str, str, str]] = set()
    for file in sorted(DATA.glob("*/*")):
        if file.suffix not in (".sse", ".ndjson", ".eventstream"):
            continue
        dialect, items = wire_items(file)
        for n, item in enumerate(items):
            try:
                value = json.loads(text_of(item))
            except ValueError:
                continue
            if not isinstance(value, dict):
                continue
            if isinstance(item, rs.EventStreamMessage):
                kind = str(item.headers.get(":event-type"))
            elif isinstance(item, rs.SSEFrame) and item.event != "message":
                kind = item.event
            else:
                kind = kind_of(value)
            for path in paths(value):
                key = (dialect, kind, normal(path))
                if key not in seen:
                    seen.add(key)
                    out.append((f"{file.parent.name}/{file.name}", dialect, items, n, path))
    return out


MUTATIONS = mutations()


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

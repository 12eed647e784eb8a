"""Anthropic's and Cohere's skeletons: kept from one `feed_all` to the next, forgotten at `feed`.

A text delta read whole teaches the decoder the JSON around its text; the next
delta made of the same JSON is read by its text alone, also in a later call.
Whatever changes what it stood for (any frame that takes `feed`, from inside
`feed_all` or from outside) forgets it: the outcome is the plain decoder's.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Iterator
from typing import Any

import pytest

import rxstream as rs
from rxstream.core import dialects
from tests.support.fast import learning_at_once, typed_decoding, way


@pytest.fixture(autouse=True, scope="module")
def _learning_at_once() -> Iterator[None]:
    """These tests are about when a skeleton is kept: learnt at the first text delta."""
    with learning_at_once():
        yield


def anthropic(kind: str, **fields: Any) -> tuple[str, str]:
    return kind, json.dumps({"type": kind, **fields})


def anthropic_text(text: str) -> tuple[str, str]:
    return anthropic("content_block_delta", index=0, delta={"type": "text_delta", "text": text})


def cohere(kind: str, **fields: Any) -> tuple[str, str]:
    return kind, json.dumps({"type": kind, **fields})


def cohere_text(text: str) -> tuple[str, str]:
    return cohere("content-delta", index=0, delta={"message": {"content": {"text": text}}})


STREAMS = {
    "anthropic": (
        [
            anthropic("message_start", message={"id": "m"}),
            anthropic("content_block_start", index=0, content_block={"type": "text", "text": ""}),
            anthropic_text("a"),
            anthropic_text("b"),
        ],
        anthropic("content_block_stop", index=0),
        [anthropic_text("c"), anthropic_text("d")],
    ),
    "cohere": (
        [
            cohere("message-start", id="m"),
            cohere("content-start", index=0, delta={"message": {"content": {"text": ""}}}),
            cohere_text("a"),
            cohere_text("b"),
        ],
        cohere("content-end", index=0),
        [cohere_text("c"), cohere_text("d")],
    ),
}


def _run(dialect: str, *, between: bool) -> tuple[list[Any], str | None]:
    first, middle, last = STREAMS[dialect]
    decoder: Any = dialects.decoder(dialect)
    out: list[Any] = []
    frames = [rs.SSEFrame(data, event) for event, data in first]
    try:
        decoder.feed_all(frames, out)
        if between:
            out += decoder.feed(rs.SSEFrame(middle[1], middle[0]))
        decoder.feed_all([rs.SSEFrame(data, event) for event, data in last], out)
    except rs.StreamError as error:
        return out, f"{type(error).__name__}: {error}"
    return out, None


@pytest.mark.parametrize("dialect", sorted(STREAMS))
@pytest.mark.parametrize("between", [False, True])
def test_the_skeleton_of_one_call_serves_the_next_unless_feed_ran_between(
    dialect: str, between: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = importlib.import_module(f"rxstream.core.dialects.{dialect}.decode")
    read = module.reread
    reread: list[Any] = []
    monkeypatch.setattr(module, "reread", lambda *args: reread.append(read(*args)) or reread[-1])
    with typed_decoding(False):
        shortcut = _run(dialect, between=between)
        assert ("c" in reread) is not between  # read by its text alone in the second call
        with way("plain"):
            plain = _run(dialect, between=between)
    assert shortcut == plain
    texts = [d.text for d in shortcut[0] if isinstance(d, rs.TextDelta)]
    if between and dialect == "anthropic":
        assert texts == ["a", "b"]  # the block was closed: the general path judged the rest
    else:
        assert texts == ["a", "b", "c", "d"]
        assert shortcut[1] is None

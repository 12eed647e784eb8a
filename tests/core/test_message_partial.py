"""`partial_message`, `keep_partial` and `Arrived`: what an error keeps of what arrived."""

from __future__ import annotations

import copy
import pickle
from typing import Any

import pytest

import rxstream.errors as errors
from rxstream.core.message import Arrived, keep_partial, partial_message
from rxstream.models import (
    Finish,
    Message,
    Metadata,
    ReasoningDelta,
    SSEFrame,
    StreamEntry,
    TextDelta,
    ToolCallDelta,
    Usage,
)

CALL = ToolCallDelta(0, '{"q": ', id="c1", name="search")
REST = ToolCallDelta(0, '"x"}')


def shape(message: Message | None) -> tuple[Any, ...] | None:
    if message is None:
        return None
    calls = tuple((c.name, c.arguments, c.complete) for c in message.tool_calls)
    return message.choice, message.reasoning, message.content, calls, message.finish_reason


CASES = [
    pytest.param([], None, id="nothing"),
    pytest.param(["a line", SSEFrame("x")], None, id="no-delta"),
    pytest.param([Usage(1, 2, 3)], None, id="usage-alone-names-no-choice"),
    pytest.param([TextDelta("Hel"), TextDelta("lo")], (0, "", "Hello", (), None), id="text"),
    pytest.param(
        [ReasoningDelta("Hmm"), TextDelta("A")], (0, "Hmm", "A", (), None), id="reasoning"
    ),
    pytest.param(
        [TextDelta("A"), CALL],
        (0, "", "A", (("search", '{"q": ', False),), None),
        id="call-cut-in-its-arguments",
    ),
    pytest.param(
        [CALL, REST],
        (0, "", "", (("search", '{"q": "x"}', True),), None),
        id="call-whole-before-the-cut",
    ),
    pytest.param(
        [CALL, Finish("tool_calls")],
        (0, "", "", (("search", '{"q": ', True),), "tool_calls"),
        id="finished-choice-keeps-its-finish",
    ),
    pytest.param(
        [TextDelta("B", choice=1), TextDelta("A", choice=0)],
        (0, "", "A", (), None),
        id="the-first-choice",
    ),
    pytest.param(
        [StreamEntry("1-0", TextDelta("Hi")), StreamEntry("1-1", "other")],
        (0, "", "Hi", (), None),
        id="items-under-their-ids",
    ),
    pytest.param([Metadata({"model": "m"})], (0, "", "", (), None), id="metadata-alone"),
]


@pytest.mark.parametrize(("items", "want"), CASES)
def test_partial_message(items: list[Any], want: tuple[Any, ...] | None) -> None:
    assert shape(partial_message(items)) == want


def test_keep_partial_gives_a_stream_error_its_partial_once() -> None:
    error = errors.TransportError("cut")
    keep_partial(error, [TextDelta("first")])
    keep_partial(error, [TextDelta("second, knowing less")])
    assert error.partial is not None
    assert error.partial.content == "first"


def test_keep_partial_leaves_other_errors_alone() -> None:
    bug = ValueError("bug")
    keep_partial(bug, [TextDelta("x")])
    assert not hasattr(bug, "partial")


def test_arrived_keeps_deltas_only() -> None:
    arrived = Arrived()
    for item in ("line", SSEFrame("x"), TextDelta("Hi"), StreamEntry("1-0", TextDelta("!"))):
        arrived.see(item)
    assert len(arrived.items) == 2
    error = errors.StreamTimeoutError("idle", 3.0)
    assert arrived.keep_partial(error) is error
    assert error.partial is not None
    assert error.partial.content == "Hi!"


def test_a_stream_error_has_no_partial_by_default() -> None:
    assert errors.StreamError("x").partial is None


SAMPLES = [
    errors.StreamError("plain"),
    errors.HTTPStatusError(429, reason="Too Many Requests", body="{}", retry_after=2.0),
    errors.UnexpectedContentTypeError("text/html", status_code=200, body="<html>"),
    errors.TransportError("reset"),
    errors.StreamTimeoutError("idle", 3.0),
    errors.ProviderError("overloaded", type="overloaded_error", code=529, payload={"a": 1}),
    errors.MalformedChunkError("invalid JSON", "{", dialect="anthropic"),
    errors.TruncatedStreamError("cut", unfinished=(0,)),
    errors.EmptyStreamError("nothing", status_code=200, content_type="text/event-stream"),
    errors.LineTooLongError(10, "x" * 20),
    errors.ToolArgumentsError(name="f", id="c1", arguments="{", reason="cut"),
    errors.BufferOverflowError(2, observer="ui", item=TextDelta("x")),
    errors.StoredStreamError("k", "gone", after="1-0", missing=(1, 2)),
]


@pytest.mark.parametrize("error", SAMPLES, ids=lambda e: type(e).__name__)
@pytest.mark.parametrize("with_partial", [False, True], ids=["none", "partial"])
def test_every_error_pickles_and_copies_as_it_was(
    error: errors.StreamError, with_partial: bool
) -> None:
    error = copy.copy(error)  # the samples stay as they are
    if with_partial:
        error.partial = partial_message([TextDelta("Hi"), CALL])
    for again in (pickle.loads(pickle.dumps(error)), copy.copy(error), copy.deepcopy(error)):
        assert type(again) is type(error)
        assert (str(again), repr(again), again.args) == (str(error), repr(error), error.args)
        assert vars(again) == vars(error)
        assert again.partial == error.partial

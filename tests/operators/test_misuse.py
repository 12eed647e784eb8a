"""An operator fed the wrong kind of item ends with a TypeError that names the fix.

The error names the operator the user wrote and the operator probably
missing in front of it, arrives through `on_error` (never raised up the
stack), and the upstream is disposed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from reactivex import Observable
from reactivex.testing import TestScheduler

import rxstream as rs
from tests.support.operators import error_of, on_completed, on_next, subscribe

FRAME = rs.SSEFrame('{"choices": []}')

# (id, operator, item, words the message holds)
MISUSE: list[tuple[str, Callable[[], Callable[[Observable[Any]], Observable[Any]]], Any, str]] = [
    (
        "decode_chunks fed lines",
        rs.decode_chunks,
        "data: {}",
        "rs.decode_chunks() takes SSEFrame items, got a str ('data: {}'): "
        "add rs.sse_frames() before it",
    ),
    ("sse_frames fed bytes", rs.sse_frames, b"data: {}", "add rs.lines() before it"),
    (
        "accumulate_message fed frames",
        rs.accumulate_message,
        FRAME,
        "rs.accumulate_message() takes ChatChunk or delta items, got an SSEFrame",
    ),
    ("deltas fed frames", rs.deltas, FRAME, "add rs.decode_chunks() before it"),
    ("think_tags fed lines", rs.think_tags, "data: {}", "rs.think_tags() takes ChatChunk"),
    (
        "split_by_delta_type fed frames",
        rs.split_by_delta_type,
        FRAME,
        "rs.split_by_delta_type() takes ChatChunk or delta items, got an SSEFrame",
    ),
    ("lines fed frames", rs.lines, FRAME, "rs.lines() takes str or bytes chunks"),
]


@pytest.mark.parametrize(
    ("operator", "item", "words"), [c[1:] for c in MISUSE], ids=[c[0] for c in MISUSE]
)
def test_misuse_reaches_on_error_with_the_fix(
    operator: Callable[[], Callable[[Observable[Any]], Observable[Any]]], item: Any, words: str
) -> None:
    scheduler = TestScheduler()
    source = scheduler.create_hot_observable(on_next(210, item), on_completed(300))
    results = scheduler.start(lambda: source.pipe(operator()))
    [record] = results.messages
    error = error_of(record)
    assert isinstance(error, TypeError)
    assert words in str(error)
    assert record.time == 210
    assert source.subscriptions == [subscribe(200, 210)]

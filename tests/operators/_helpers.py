"""Shared bits of the operator tests: ReactiveTest shorthands, error records, chunks."""

from __future__ import annotations

from typing import Any

from reactivex.testing import ReactiveTest
from reactivex.testing.recorded import Recorded

from rxstream.models import ChatChunk

on_next, on_completed, on_error = (
    ReactiveTest.on_next,
    ReactiveTest.on_completed,
    ReactiveTest.on_error,
)
subscribe = ReactiveTest.subscribe


def error_of(record: Recorded[Any]) -> BaseException:
    """The exception of an OnError record (OnError equality compares only the message)."""
    assert record.value.kind == "E", record
    exc: BaseException = record.value.exception
    return exc


def chunk(
    delta: dict[str, Any], finish: str | None = None, index: int = 0, **extra: Any
) -> ChatChunk:
    return ChatChunk(
        {"choices": [{"index": index, "delta": delta, "finish_reason": finish}], **extra}
    )

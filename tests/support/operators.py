"""Shared bits of the operator tests: ReactiveTest shorthands, error records, chunks."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from typing import Any, Protocol, cast

from reactivex import Observable
from reactivex.testing import ReactiveTest
from reactivex.testing.marbles import marbles_testing as _marbles_testing
from reactivex.testing.recorded import Recorded

from rxstream.models import ChatChunk

on_next, on_completed = ReactiveTest.on_next, ReactiveTest.on_completed
subscribe = ReactiveTest.subscribe


def on_error(ticks: int, error: Exception | str | Callable[[Any], bool]) -> Recorded[Any]:
    """`ReactiveTest.on_error`, typed to take a predicate of the error too (as it does)."""
    return ReactiveTest.on_error(ticks, cast(Any, error))


class _Make(Protocol):
    def __call__(
        self, string: str, lookup: Mapping[str, Any] | None = None, error: Exception | None = None
    ) -> Observable[Any]: ...


class _Expect(Protocol):
    def __call__(
        self, string: str, lookup: Mapping[str, Any] | None = None, error: Exception | None = None
    ) -> list[Recorded[Any]]: ...


_Start = Callable[[Observable[Any] | Callable[[], Observable[Any]]], list[Recorded[Any]]]


def marbles_testing(
    timespan: float = 1.0,
) -> AbstractContextManager[tuple[_Start, _Make, _Make, _Expect]]:
    """reactivex's `marbles_testing`, typed as it is called (lookup and error are optional)."""
    return cast(
        AbstractContextManager[tuple[_Start, _Make, _Make, _Expect]], _marbles_testing(timespan)
    )


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

"""A retried stream takes each attempt's run of machines directly (no observer wrapper per
delta, no lines kept for a partial there) and still gives every error it passes on the
partial `Message` of what arrived, as the plain pipeline does."""

from __future__ import annotations

import json
from typing import Any

import pytest
import reactivex
from reactivex import Observable

import rxstream as rs
from rxstream.operators import _machine
from rxstream.operators.delta_source import subscribe_direct


def line(payload: dict[str, Any]) -> str:
    return "data: " + json.dumps(payload)


USAGE = line({"id": "a", "choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 0}})
HEL = line({"id": "a", "choices": [{"index": 0, "delta": {"content": "Hel"}}]})
STOP = line({"id": "a", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})


def decoded(*lines: str) -> Observable[Any]:
    """A cold run of machines: SSE lines in, openai-chat deltas out."""
    return reactivex.from_iterable(lines).pipe(rs.sse_frames(), rs.decode("openai-chat"))


def failure(source: Observable[Any]) -> Exception:
    errors: list[Exception] = []
    source.subscribe(on_error=errors.append)
    [error] = errors
    return error


CASES = {
    # Not worth retrying: the error goes on as it came, before any output.
    "malformed": ((USAGE, "", "data: {not json", ""), rs.Retry()),
    # After output, policy "raise": the run's own partial (with its attempts).
    "cut-after-output": ((USAGE, "", HEL, "", "data: {"), rs.Retry()),
}


@pytest.mark.parametrize(("lines", "policy"), list(CASES.values()), ids=list(CASES))
def test_an_error_passed_on_carries_what_the_plain_pipeline_says_arrived(
    lines: tuple[str, ...], policy: rs.Retry
) -> None:
    plain = failure(decoded(*lines))
    retried = failure(decoded(*lines).pipe(rs.retrying(policy)))
    assert type(retried) is type(plain)
    assert isinstance(plain, rs.StreamError)
    assert isinstance(retried, rs.StreamError)
    assert plain.partial is not None
    assert retried.partial is not None
    assert retried.partial.usage == plain.partial.usage == rs.Usage(3, 0, 3)
    assert retried.partial.content == plain.partial.content


def test_the_last_error_of_a_run_that_gave_up_carries_its_attempts_partial() -> None:
    # A cut before any output is retried; once the attempts run out the last
    # attempt's error still says what arrived (the usage).
    error = failure(decoded(USAGE, "", "data: {").pipe(rs.retrying(rs.Retry(attempts=1))))
    assert isinstance(error, rs.RetryError)
    assert error.last is not None
    assert error.last.partial is not None
    assert error.last.partial.usage == rs.Usage(3, 0, 3)


def test_a_retried_run_subscribes_each_attempt_directly_keeping_nothing_for_a_partial(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked: list[bool] = []
    direct = _machine._MachineChain.subscribe_observer

    def spy(self: Any, observer: Any, scheduler: Any = None, *, partial: bool = True) -> Any:
        asked.append(partial)
        return direct(self, observer, scheduler, partial=partial)

    monkeypatch.setattr(_machine._MachineChain, "subscribe_observer", spy)
    answer = decoded(HEL, "", STOP, "", "data: [DONE]", "")
    items = answer.pipe(rs.retrying(rs.Retry()), rs.accumulate_message())
    [message] = [m for m in _collect(items) if isinstance(m, rs.Message)]
    assert message.content == "Hel"
    # The attempt's run, with nothing kept; then (a DeltaSource) the accumulator's.
    assert False in asked


def _collect(source: Observable[Any]) -> list[Any]:
    out: list[Any] = []
    source.subscribe(out.append)
    return out


class Observer:
    def __init__(self) -> None:
        self.items: list[Any] = []
        self.errors: list[Exception] = []
        self.completed = 0

    def on_next(self, item: Any) -> None:
        self.items.append(item)

    def on_error(self, error: Exception) -> None:
        self.errors.append(error)

    def on_completed(self) -> None:
        self.completed += 1


@pytest.mark.parametrize("partial", [True, False])
def test_subscribe_direct_hands_a_run_the_observer_and_keeps_a_partial_only_if_asked(
    partial: bool,
) -> None:
    observer = Observer()
    subscribe_direct(decoded(HEL, "", "data: {"), observer, partial=partial)
    assert [type(i) for i in observer.items] == [rs.Metadata, rs.TextDelta]
    [error] = observer.errors
    assert isinstance(error, rs.StreamError)
    if partial:
        assert error.partial is not None
        assert error.partial.content == "Hel"
    else:
        assert error.partial is None  # the observer gives it its partial itself


def test_subscribe_direct_subscribes_any_other_observable_as_usual() -> None:
    observer = Observer()
    disposable = subscribe_direct(reactivex.of(1, 2), observer, partial=False)
    assert (observer.items, observer.completed) == ([1, 2], 1)
    disposable.dispose()

"""rs.Limiter on virtual time: admission, FIFO, holds after 429 and headers, withdrawal, usage."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pytest
from reactivex.testing import TestScheduler

from rxstream import LimiterError, Usage
from rxstream.io.limits import Ask, Ticket
from rxstream.runs.limits import HOLD_AFTER_429, WINDOW, Limiter


class Probe:
    """Queues asks on a limiter and records when each was admitted (virtual seconds)."""

    def __init__(self, limiter: Limiter, scheduler: TestScheduler) -> None:
        self.limiter = limiter
        self.scheduler = scheduler
        self.admitted: dict[str, float] = {}
        self.tickets: dict[str, Ticket] = {}
        self.errors: dict[str, Exception] = {}
        self.withdraw: dict[str, Any] = {}

    def ask(self, name: str, tokens: int = 1, route: str = "r") -> None:
        def admitted(ticket: Ticket) -> None:
            self.admitted[name] = self.scheduler.clock
            self.tickets[name] = ticket

        def failed(error: Exception) -> None:
            self.errors[name] = error

        self.withdraw[name] = self.limiter.admit(Ask(route, tokens), admitted, failed)

    def at(self, seconds: float, action: Any) -> None:
        self.scheduler.schedule_absolute(seconds, lambda *_: action())

    def release(self, name: str, usage: Usage | None = None) -> None:
        self.tickets[name].release(usage)

    def answer(self, name: str, status: int, headers: Mapping[str, str]) -> None:
        self.tickets[name].answered(status, headers)


def probe(**bounds: Any) -> Probe:
    scheduler = TestScheduler()
    return Probe(Limiter(scheduler=scheduler, **bounds), scheduler)


def test_what_the_budget_allows_is_admitted_at_once() -> None:
    p = probe(requests_per_minute=3, tokens_per_minute=100, concurrency=3)
    for name in "abc":
        p.ask(name, 10)
    assert p.admitted == {"a": 0.0, "b": 0.0, "c": 0.0}
    assert p.limiter.running == 3


@pytest.mark.parametrize(
    ("bounds", "tokens", "expected"),
    [
        pytest.param({"requests_per_minute": 2}, 1, {"a": 0, "b": 0, "c": 60}, id="rpm"),
        pytest.param({"tokens_per_minute": 100}, 40, {"a": 0, "b": 0, "c": 60}, id="tpm"),
        pytest.param({"requests_per_minute": 1}, 1, {"a": 0, "b": 60, "c": 120}, id="one-a-minute"),
    ],
)
def test_a_minute_budget_waits_for_the_window_to_slide(
    bounds: dict[str, int], tokens: int, expected: dict[str, float]
) -> None:
    p = probe(**bounds)
    for name in "abc":
        p.ask(name, tokens)
    p.scheduler.start()
    assert p.admitted == expected


def test_concurrency_admits_the_next_on_release_in_arrival_order() -> None:
    p = probe(concurrency=1)
    for name in "abcd":
        p.ask(name)
    p.at(5, lambda: p.release("a"))
    p.at(7, lambda: p.release("b"))
    p.at(9, lambda: p.release("c"))
    p.scheduler.start()
    assert p.admitted == {"a": 0, "b": 5, "c": 7, "d": 9}


def test_first_come_first_served_a_big_request_is_not_overtaken() -> None:
    p = probe(tokens_per_minute=100)
    p.ask("a", 60)
    p.ask("big", 80)  # must wait for a's tokens to leave the window
    p.ask("small", 10)  # would fit now, but came later
    p.scheduler.start()
    assert p.admitted == {"a": 0, "big": 60, "small": 60}


def test_a_withdrawn_request_leaves_the_queue() -> None:
    p = probe(concurrency=1)
    for name in "abc":
        p.ask(name)
    p.at(2, lambda: p.withdraw["b"]())
    p.at(5, lambda: p.release("a"))
    p.scheduler.start()
    assert p.admitted == {"a": 0, "c": 5}
    assert p.limiter.waiting == 0


def test_withdrawing_the_head_lets_the_next_through_at_once() -> None:
    p = probe(tokens_per_minute=100)
    p.ask("a", 60)
    p.ask("big", 80)
    p.ask("small", 10)
    p.at(3, lambda: p.withdraw["big"]())
    p.scheduler.start()
    assert p.admitted == {"a": 0, "small": 3}


def test_tokens_are_corrected_by_the_answers_usage() -> None:
    p = probe(tokens_per_minute=100)
    p.ask("a", 90)  # estimated: the prompt and max_tokens
    p.ask("b", 50)
    p.at(4, lambda: p.release("a", Usage(20, 10, 30)))  # spent 30 in fact
    p.scheduler.start()
    assert p.admitted == {"a": 0, "b": 4}
    assert p.limiter.tokens_spent == 0  # both left the window by the end


def test_usage_above_the_estimate_makes_later_requests_wait_longer() -> None:
    p = probe(tokens_per_minute=100)
    p.ask("a", 10)
    p.at(1, lambda: p.release("a", Usage(50, 45, 95)))
    p.at(2, lambda: p.ask("b", 10))
    p.scheduler.start()
    assert p.admitted == {"a": 0, "b": 60}


def test_a_request_larger_than_the_whole_budget_fails_clearly() -> None:
    p = probe(tokens_per_minute=100)
    p.ask("huge", 101, route="api.test/v1/chat gpt")
    assert p.admitted == {}
    error = p.errors["huge"]
    assert isinstance(error, LimiterError)
    assert "101 tokens" in str(error)
    assert "tokens_per_minute=100" in str(error)
    assert "'api.test/v1/chat gpt'" in str(error)


@pytest.mark.parametrize(
    ("headers", "held"),
    [
        pytest.param({"retry-after": "5"}, 5, id="retry-after"),
        pytest.param({"retry-after-ms": "2500"}, 2.5, id="retry-after-ms"),
        pytest.param({"x-ratelimit-reset-requests": "6m0s"}, 360, id="openai-reset"),
        pytest.param(
            {"anthropic-ratelimit-requests-reset": "1970-01-01T00:00:30Z"}, 30, id="anthropic-reset"
        ),
        pytest.param({}, HOLD_AFTER_429, id="no-signal"),
    ],
)
def test_a_429_holds_its_route_until_the_reset(headers: dict[str, str], held: float) -> None:
    p = probe(concurrency=10)
    p.ask("a")
    p.answer("a", 429, headers)
    p.release("a")
    p.ask("b")
    p.ask("other", route="elsewhere")  # another route is not held
    p.ask("c")
    p.scheduler.start()
    assert p.admitted == {"a": 0, "other": 0, "b": held, "c": held}


def test_remaining_requests_zero_holds_the_route_until_its_reset() -> None:
    p = probe()
    p.ask("a")
    p.answer(
        "a", 200, {"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "20ms"}
    )
    p.ask("b")
    p.scheduler.start()
    assert p.admitted == {"a": 0, "b": 0.02}


def test_remaining_tokens_hold_only_requests_that_do_not_fit() -> None:
    p = probe()
    p.ask("a")
    p.answer(
        "a",
        200,
        {"anthropic-ratelimit-tokens-remaining": "100", "anthropic-ratelimit-tokens-reset": "10"},
    )
    p.ask("fits", 60)  # 40 left after it
    p.ask("too-big", 50)
    p.ask("behind", 1)  # same route: waits behind too-big, in order
    p.scheduler.start()
    assert p.admitted == {"a": 0, "fits": 0, "too-big": 10, "behind": 10}


def test_nothing_spins_while_all_wait() -> None:
    scheduler = TestScheduler()
    timers: list[float] = []
    schedule_relative = scheduler.schedule_relative

    def counted(duetime: Any, action: Any, state: Any = None) -> Any:
        timers.append(scheduler.clock)
        return schedule_relative(duetime, action, state)

    scheduler.schedule_relative = counted  # type: ignore[method-assign]
    p = Probe(Limiter(requests_per_minute=10, concurrency=5, scheduler=scheduler), scheduler)
    for n in range(1000):
        p.ask(f"r{n}")
    assert len(timers) == 0  # only releases can help: no timer at all
    for n in range(5):
        p.release(f"r{n}")  # each release admits one: ten per minute used up
    p.scheduler.start()
    assert len(p.admitted) == 10
    assert timers == [0.0] * len(timers)
    assert len(timers) <= 1
    assert p.limiter.waiting == 990


def test_bounds_are_checked() -> None:
    with pytest.raises(ValueError, match="concurrency must be at least 1, got 0"):
        Limiter(concurrency=0)
    with pytest.raises(TypeError, match="requests_per_minute must be an int or None, got float"):
        Limiter(requests_per_minute=1.5)  # type: ignore[arg-type]


def test_a_ticket_is_released_once_and_repr_names_the_bounds() -> None:
    p = probe(concurrency=1)
    p.ask("a")
    p.release("a")
    p.release("a")
    assert p.limiter.running == 0
    assert repr(p.limiter) == "Limiter(concurrency=1)"
    assert WINDOW == 60.0


def test_a_callback_that_raises_gives_its_slot_back_and_the_others_are_told() -> None:
    scheduler = TestScheduler()
    limiter = Limiter(requests_per_minute=2, scheduler=scheduler)
    told: list[str] = []

    def broken(_: Ticket) -> None:
        raise RuntimeError("observer gone")

    def teller(name: str) -> Callable[[Ticket], None]:
        return lambda _: told.append(name)

    for name in "ab":
        limiter.admit(Ask("r", 1), teller(name), print)
    limiter.admit(Ask("r", 1), broken, print)
    limiter.admit(Ask("r", 1), teller("d"), print)
    with pytest.raises(RuntimeError, match="observer gone"):
        scheduler.advance_to(60)  # both admitted by one timer: d is told all the same
    assert told == ["a", "b", "d"]
    assert limiter.running == 3  # a, b and d: the broken one's slot went back

"""`rs.Retry`, `rs.Route`, `worth_retrying` and `rs.retrying` over scripted sources."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
import reactivex
from reactivex import Observable, abc
from reactivex.scheduler import HistoricalScheduler

import rxstream as rs
from rxstream.runs import retry as retry_module
from rxstream.runs.retry import Leg, Resume, worth_retrying

START = datetime(2026, 1, 1, tzinfo=UTC)

# --------------------------------------------------------------------------- what is retried

WORTH: dict[str, tuple[BaseException, bool]] = {
    "429": (rs.HTTPStatusError(429), True),
    "408": (rs.HTTPStatusError(408), True),
    "409": (rs.HTTPStatusError(409), True),
    "500": (rs.HTTPStatusError(500), True),
    "529": (rs.HTTPStatusError(529), True),
    "400": (rs.HTTPStatusError(400), False),
    "401": (rs.HTTPStatusError(401), False),
    "403": (rs.HTTPStatusError(403), False),
    "404": (rs.HTTPStatusError(404), False),
    "422": (rs.HTTPStatusError(422), False),
    "503-should-not": (rs.HTTPStatusError(503, should_retry=False), False),
    "400-should": (rs.HTTPStatusError(400, should_retry=True), True),
    "transport": (rs.TransportError("reset"), True),
    "client-closed": (rs.TransportError("the client was closed", retryable=False), False),
    "timeout": (rs.StreamTimeoutError("first", 1.0), True),
    "truncated": (rs.TruncatedStreamError("cut"), True),
    "empty": (rs.EmptyStreamError("nothing"), True),
    "anthropic-overloaded": (rs.ProviderError("Overloaded", type="overloaded_error"), True),
    "openai-rate-limit": (rs.ProviderError("slow", type="rate_limit_exceeded"), True),
    "gemini-exhausted": (rs.ProviderError("q", type="RESOURCE_EXHAUSTED", code=429), True),
    "gemini-unavailable": (rs.ProviderError("u", type="UNAVAILABLE", code=503), True),
    "bedrock-throttling": (rs.ProviderError("t", type="throttlingException"), True),
    "bedrock-unavailable": (rs.ProviderError("u", type="serviceUnavailableException"), True),
    "provider-server-error": (rs.ProviderError("boom", type="server_error"), False),
    "provider-invalid": (rs.ProviderError("bad", type="invalid_request_error"), False),
    "malformed": (rs.MalformedChunkError("not JSON", "{", dialect="openai-chat"), False),
    "content-type": (rs.UnexpectedContentTypeError("text/html", status_code=200), False),
    "line-too-long": (rs.LineTooLongError(10, "x"), False),
}


@pytest.mark.parametrize(("error", "worth"), list(WORTH.values()), ids=list(WORTH))
def test_what_is_worth_retrying(error: BaseException, worth: bool) -> None:
    assert worth_retrying(error) is worth


# --------------------------------------------------------------------------- the policy

BAD_RETRY: dict[str, tuple[dict[str, Any], type[Exception], str]] = {
    "no-attempts": ({"attempts": 0}, ValueError, "at least 1"),
    "float-attempts": ({"attempts": 2.0}, TypeError, "attempts must be an int"),
    "negative-backoff": ({"backoff": -1}, ValueError, "backoff must be 0 or more"),
    "text-backoff": ({"backoff": "1"}, TypeError, "backoff must be a number"),
    "zero-deadline": ({"deadline": 0}, ValueError, "deadline must be more than 0"),
    "infinite-cap": ({"max_wait": float("inf")}, ValueError, "finite"),
    "jitter-above-one": ({"jitter": 1.5}, ValueError, "between 0 and 1"),
    "jitter-bool": ({"jitter": True}, TypeError, "jitter must be a number"),
    "random-not-callable": ({"random": 0.5}, TypeError, "random must be a function"),
    "unknown-policy": ({"after_output": "retry"}, ValueError, "after_output must be one of"),
    "idle-negative": ({"idle": -2}, ValueError, "idle must be more than 0"),
}


@pytest.mark.parametrize(
    ("kwargs", "kind", "message"), list(BAD_RETRY.values()), ids=list(BAD_RETRY)
)
def test_a_bad_retry_is_refused_on_construction(
    kwargs: dict[str, Any], kind: type[Exception], message: str
) -> None:
    with pytest.raises(kind, match=message):
        rs.Retry(**kwargs)


def test_backoff_doubles_up_to_its_cap_and_jitter_only_shortens_it() -> None:
    policy = rs.Retry(backoff=0.5, max_wait=3.0, jitter=0.25, random=lambda: 1.0)
    error = rs.TransportError("reset")
    assert [policy.wait(n, error) for n in range(5)] == [0.375, 0.75, 1.5, 2.25, 2.25]
    assert rs.Retry(jitter=0.25, random=lambda: 0.0).wait(0, error) == 0.5


def test_a_server_asked_wait_is_honoured_and_only_lengthened() -> None:
    policy = rs.Retry(jitter=0.1, random=lambda: 0.5, max_retry_after=30)
    assert policy.wait(0, rs.HTTPStatusError(429, retry_after=2.0)) == pytest.approx(2.1)
    assert policy.wait(7, rs.HTTPStatusError(429, retry_after=20.0)) == pytest.approx(21.0)
    assert policy.wait(0, rs.HTTPStatusError(429, retry_after=31.0)) is None


def test_a_route_is_frozen_validated_and_hides_its_key() -> None:
    route = rs.Route("anthropic", "claude", api_key="sk-secret", max_tokens=10)
    assert (route.dialect, route.model, route.options["max_tokens"]) == ("anthropic", "claude", 10)
    assert "sk-secret" not in repr(route)
    assert "api_key=[redacted]" in repr(route)
    assert route == rs.Route("anthropic", "claude", api_key="sk-secret", max_tokens=10)
    assert hash(route) == hash(rs.Route("anthropic", "claude", max_tokens=10, api_key="x"))
    with pytest.raises(AttributeError, match="frozen"):
        route.model = "other"
    with pytest.raises(TypeError, match="does not support item assignment"):
        route.options["max_tokens"] = 5  # type: ignore[index]
    with pytest.raises(ValueError, match="unknown dialect 'nope'"):
        rs.Route("nope", "m")
    with pytest.raises(ValueError, match="must not be empty"):
        rs.Route("gemini", " ")
    with pytest.raises(TypeError, match="model is a str"):
        rs.Route("gemini", 3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="dialect is a str"):
        rs.Route(None, "m")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="no messages= option"):
        rs.Route("gemini", "m", messages=[])
    assert route.__eq__(3) is NotImplemented


def test_retrying_takes_a_retry() -> None:
    with pytest.raises(TypeError, match=r"rs\.Retry"):
        rs.retrying(3)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- runs on virtual time


class Scripted:
    """A cold source whose Nth subscription plays the Nth script (items, then an error or not)."""

    def __init__(self, *scripts: tuple[list[Any], Exception | None]) -> None:
        self.scripts = scripts
        self.subscribed_at: list[float] = []

    def observable(self, scheduler: HistoricalScheduler) -> Observable[Any]:
        def subscribe(
            observer: abc.ObserverBase[Any], _: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            n = len(self.subscribed_at)
            self.subscribed_at.append((scheduler.now - START).total_seconds())
            items, error = self.scripts[min(n, len(self.scripts) - 1)]
            for item in items:
                observer.on_next(item)
            if error is None:
                observer.on_completed()
            else:
                observer.on_error(error)
            return reactivex.disposable.Disposable()

        return Observable(subscribe)


class Outcome:
    def __init__(self) -> None:
        self.items: list[Any] = []
        self.error: Exception | None = None
        self.completed = False


def run(source: Scripted, policy: rs.Retry, *, until: float = 1000.0) -> Outcome:
    scheduler = HistoricalScheduler(START)
    outcome = Outcome()

    def failed(error: Exception) -> None:
        outcome.error = error

    def completed() -> None:
        outcome.completed = True

    source.observable(scheduler).pipe(rs.retrying(policy, scheduler=scheduler)).subscribe(
        outcome.items.append, failed, completed
    )
    scheduler.advance_by(until)
    return outcome


ANSWER = [rs.TextDelta("Hel"), rs.TextDelta("lo"), rs.Finish("stop"), rs.Usage(3, 2, 5)]
STEADY = rs.Retry(attempts=4, backoff=1.0, jitter=0.0)


def test_a_429_then_the_answer_gives_the_answer_once_after_the_asked_wait() -> None:
    source = Scripted(([], rs.HTTPStatusError(429, retry_after=2.0)), (ANSWER, None))
    outcome = run(source, STEADY)
    assert outcome.completed
    assert outcome.items[:4] == ANSWER
    assert source.subscribed_at == [0.0, 2.0]
    attempts = outcome.items[4]
    assert isinstance(attempts, rs.Metadata)
    assert [(a["error_type"], a["wait"]) for a in attempts.data["attempts"]] == [
        ("HTTPStatusError", 0.0),
        (None, 2.0),
    ]
    assert len(outcome.items) == 5  # no usage of an earlier attempt to add


def test_backoff_waits_grow_and_the_attempts_run_out_with_an_error_naming_them() -> None:
    source = Scripted(([], rs.TransportError("connection reset")))
    outcome = run(source, STEADY)
    assert source.subscribed_at == [0.0, 1.0, 3.0, 7.0]
    assert isinstance(outcome.error, rs.RetryError)
    assert isinstance(outcome.error.__cause__, rs.TransportError)
    assert outcome.error.last is outcome.error.__cause__
    text = str(outcome.error)
    assert text.startswith("gave up after 4 attempts")
    assert "4. the source: connection reset (after a wait of 4 s)" in text
    assert len(outcome.error.attempts) == 4


def test_the_deadline_stops_the_waits_and_says_so() -> None:
    source = Scripted(([], rs.HTTPStatusError(503, retry_after=4.0)))
    outcome = run(source, rs.Retry(attempts=10, deadline=10.0, jitter=0.0))
    assert source.subscribed_at == [0.0, 4.0, 8.0]
    assert isinstance(outcome.error, rs.RetryError)
    assert "the deadline of 10 s leaves no time for a wait of 4 s after 8 s" in str(outcome.error)
    assert "3. the source: HTTP 503" in str(outcome.error)


def test_a_wait_longer_than_allowed_gives_up() -> None:
    source = Scripted(([], rs.HTTPStatusError(429, retry_after=120.0)))
    outcome = run(source, rs.Retry(max_retry_after=60))
    assert source.subscribed_at == [0.0]
    assert isinstance(outcome.error, rs.RetryError)
    assert "a wait longer than 60 s" in str(outcome.error)


def test_what_cannot_succeed_is_not_retried_and_arrives_as_it_is() -> None:
    error = rs.HTTPStatusError(401, provider_message="bad key")
    source = Scripted(([], error))
    outcome = run(source, STEADY)
    assert source.subscribed_at == [0.0]
    assert outcome.error is error


def test_a_bug_in_the_pipeline_is_not_retried() -> None:
    source = Scripted(([], KeyError("bug")))
    outcome = run(source, STEADY)
    assert isinstance(outcome.error, KeyError)
    assert source.subscribed_at == [0.0]


def test_usage_and_metadata_before_an_error_are_no_output() -> None:
    early = [rs.Metadata({"id": "a"}), rs.Usage(3, 0, 3), rs.TextDelta("")]
    source = Scripted(
        (early, rs.ProviderError("Overloaded", type="overloaded_error")), (ANSWER, None)
    )
    outcome = run(source, STEADY)
    assert outcome.completed
    assert source.subscribed_at == [0.0, 1.0]
    *_, attempts, usage = outcome.items
    assert [a["usage"]["prompt_tokens"] for a in attempts.data["attempts"]] == [3, 3]
    assert usage == rs.Usage(6, 2, 8)  # every attempt's usage, summed
    message = reactivex.from_iterable(outcome.items).pipe(rs.accumulate_message()).run()
    assert (message.content, message.usage) == ("Hello", rs.Usage(6, 2, 8))
    assert len(message.metadata["attempts"]) == 2


def test_after_output_the_error_carries_the_partial_message() -> None:
    said = [
        rs.TextDelta("Hel"),
        rs.ToolCallDelta(2, "", "c0", "now"),
        rs.ToolCallDelta(0, '{"a": 1}', "c1", "f"),
        rs.ToolCallDelta(1, '{"b"', "c2", "g"),
    ]
    cut = rs.TruncatedStreamError("ended early")
    source = Scripted((said, cut), (ANSWER, None))
    outcome = run(source, STEADY)
    assert source.subscribed_at == [0.0]  # no retry after output
    assert outcome.error is cut
    assert outcome.items == said
    partial = cut.partial
    assert partial is not None
    assert partial.content == "Hel"
    # The half call is kept as a stop keeps it: not complete (the errors page's rule).
    assert [(c.name, c.complete) for c in partial.tool_calls] == [
        ("f", True),
        ("g", False),
        ("now", False),  # no arguments yet: not a whole JSON object either
    ]
    assert partial.metadata["attempts"][0]["error_type"] == "TruncatedStreamError"


def test_a_stream_of_other_items_has_no_partial_message() -> None:
    cut = rs.TruncatedStreamError("ended early")
    outcome = run(Scripted((["a line"], cut)), STEADY)
    assert outcome.error is cut
    assert cut.partial is None


def test_the_runs_partial_replaces_the_one_the_attempt_gave() -> None:
    # The attempt's decoder knew that attempt only; the run knows what the consumer saw
    # and the attempts.
    cut = rs.TruncatedStreamError("ended early")
    cut.partial = rs.Message(content="x")
    outcome = run(Scripted(([rs.TextDelta("x")], cut)), STEADY)
    assert outcome.error is cut
    assert cut.partial is not None
    assert cut.partial.content == "x"
    assert cut.partial.metadata["attempts"][0]["error_type"] == "TruncatedStreamError"


def test_dispose_during_a_wait_cancels_the_next_attempt() -> None:
    source = Scripted(([], rs.HTTPStatusError(429, retry_after=5.0)), (ANSWER, None))
    scheduler = HistoricalScheduler(START)
    items: list[Any] = []
    subscription = (
        source.observable(scheduler)
        .pipe(rs.retrying(STEADY, scheduler=scheduler))
        .subscribe(items.append)
    )
    scheduler.advance_by(2.0)
    subscription.dispose()
    scheduler.advance_by(100.0)
    assert source.subscribed_at == [0.0]
    assert items == []


def test_the_subscriptions_scheduler_is_used_when_none_is_given() -> None:
    source = Scripted(([], rs.HTTPStatusError(429, retry_after=3.0)), (ANSWER, None))
    scheduler = HistoricalScheduler(START)
    items: list[Any] = []
    source.observable(scheduler).pipe(rs.retrying(STEADY)).subscribe(
        items.append, scheduler=scheduler
    )
    scheduler.advance_by(10.0)
    assert source.subscribed_at == [0.0, 3.0]
    assert items[:4] == ANSWER


class Again:
    """A strategy that resumes once with another source, after a marker item."""

    def __init__(self, source: Observable[Any]) -> None:
        self.source = source
        self.seen: list[tuple[str, str | None]] = []

    def failed(
        self, error: rs.StreamError, shown: rs.Message, came: Leg, goes: Leg, attempt: int
    ) -> Resume | None:
        self.seen.append((type(error).__name__, shown.content))
        return (
            Resume(self.source, before=(rs.Metadata({"reset": True}),))
            if len(self.seen) == 1
            else None
        )


def test_an_after_output_strategy_plugs_in_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    strategy = Again(reactivex.from_iterable([rs.TextDelta("lo"), rs.Finish("stop")]))
    monkeypatch.setitem(retry_module.AFTER_OUTPUT, "again", strategy)
    policy = rs.Retry(after_output="again")  # type: ignore[arg-type]
    source = Scripted(([rs.TextDelta("Hel")], rs.TruncatedStreamError("cut")))
    outcome = run(source, policy)
    assert outcome.completed
    assert strategy.seen == [("TruncatedStreamError", "Hel")]
    texts = [i.text for i in outcome.items if isinstance(i, rs.TextDelta)]
    assert texts == ["Hel", "lo"]
    assert outcome.items[1] == rs.Metadata({"reset": True})


class Always:
    """A strategy that always resumes with the leg the run goes on with (or a source)."""

    def __init__(self, source: Observable[Any] | None = None) -> None:
        self.source = source
        self.asked: list[int] = []  # the attempt numbers it was asked for

    def failed(
        self, error: rs.StreamError, shown: rs.Message, came: Leg, goes: Leg, attempt: int
    ) -> Resume | None:
        self.asked.append(attempt)
        return Resume(self.source if self.source is not None else goes.source)


def test_resuming_after_output_counts_against_the_attempts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cut = Scripted(([rs.TextDelta("Hel")], rs.TruncatedStreamError("cut")))
    scheduler = HistoricalScheduler(START)
    strategy = Always(cut.observable(scheduler))
    monkeypatch.setitem(retry_module.AFTER_OUTPUT, "always", strategy)
    policy = rs.Retry(attempts=3, backoff=2.0, jitter=0.0, after_output="always")  # type: ignore[arg-type]
    errors: list[Exception] = []
    cut.observable(scheduler).pipe(rs.retrying(policy, scheduler=scheduler)).subscribe(
        on_error=errors.append
    )
    scheduler.advance_by(100.0)
    assert strategy.asked == [2, 3]
    # After output as before it: the backoff waits (2 s, then 4 s), within the attempts.
    assert cut.subscribed_at == [0.0, 2.0, 6.0]
    (error,) = errors
    assert isinstance(error, rs.TruncatedStreamError)
    assert error.partial is not None
    assert error.partial.content == "Hel"
    assert [a["wait"] for a in error.partial.metadata["attempts"]] == [0.0, 2.0, 4.0]


def test_a_resume_on_another_leg_is_recorded_under_its_route(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    scheduler = HistoricalScheduler(START)
    first = Scripted(([rs.TextDelta("Hel")], rs.TruncatedStreamError("cut")))
    second = Scripted(([rs.TextDelta("lo"), rs.Finish("stop")], None))
    legs = [
        Leg(rs.Route("gemini", "a"), first.observable(scheduler)),
        Leg(rs.Route("ollama", "b"), second.observable(scheduler)),
    ]
    monkeypatch.setitem(retry_module.AFTER_OUTPUT, "other", Always())
    # One attempt a route: after the cut the run goes on with the next route, at once.
    policy = rs.Retry(attempts=1, after_output="other")  # type: ignore[arg-type]
    items: list[Any] = []
    retry_module._resilient(legs, policy, scheduler, async_=False).subscribe(items.append)
    scheduler.advance_by(10.0)
    (metadata,) = [i for i in items if isinstance(i, rs.Metadata)]
    attempts = metadata.data["attempts"]
    assert [a["route"]["dialect"] for a in attempts] == ["gemini", "ollama"]
    assert attempts[0]["usage"]["estimated"] is True  # "Hel" was streamed, then cut
    assert items[-1] is metadata  # no usage was reported: an estimate alone is not summed
    assert second.subscribed_at == [0.0]


def test_an_error_not_worth_retrying_after_output_goes_to_the_next_route_or_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    scheduler = HistoricalScheduler(START)
    bad = Scripted(([rs.TextDelta("Hel")], rs.MalformedChunkError("not JSON", "{")))
    strategy = Always()
    monkeypatch.setitem(retry_module.AFTER_OUTPUT, "always", strategy)
    policy = rs.Retry(attempts=3, after_output="always")  # type: ignore[arg-type]
    errors: list[Exception] = []
    bad.observable(scheduler).pipe(rs.retrying(policy, scheduler=scheduler)).subscribe(
        on_error=errors.append
    )
    scheduler.advance_by(100.0)
    assert strategy.asked == []  # the same source would fail the same way; no route is left
    assert bad.subscribed_at == [0.0]
    (error,) = errors
    assert isinstance(error, rs.MalformedChunkError)
    assert error.partial is not None
    assert error.partial.content == "Hel"


def test_per_attempt_time_limits_make_a_silent_server_a_retry() -> None:
    silent = Scripted(([], None))
    scheduler = HistoricalScheduler(START)

    def never(
        observer: abc.ObserverBase[Any], _: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        silent.subscribed_at.append((scheduler.now - START).total_seconds())
        if len(silent.subscribed_at) > 1:
            for item in ANSWER:
                observer.on_next(item)
            observer.on_completed()
        return reactivex.disposable.Disposable()

    items: list[Any] = []
    policy = rs.Retry(first=5.0, backoff=1.0, jitter=0.0)
    Observable(never).pipe(rs.retrying(policy, scheduler=scheduler)).subscribe(items.append)
    scheduler.advance_by(30.0)
    assert silent.subscribed_at == [0.0, 6.0]
    assert items[:4] == ANSWER
    assert items[4].data["attempts"][0]["error_type"] == "StreamTimeoutError"


def test_an_attempt_due_after_dispose_is_not_made() -> None:
    source = Scripted((ANSWER, None))
    scheduler = HistoricalScheduler(START)
    legs = [Leg(None, source.observable(scheduler))]
    run = retry_module.RetryRun(legs, STEADY, reactivex.Subject(), scheduler)
    run.dispose()  # from another thread, while the timer fired
    run.attempt(legs[0].source)
    assert source.subscribed_at == []

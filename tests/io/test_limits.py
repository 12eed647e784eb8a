"""rxstream.io.limits: the gate a source waits at, and the Ask it makes of a request."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Mapping
from typing import Any

import pytest
import reactivex
from reactivex.scheduler import ImmediateScheduler

import rxstream as rs
from rxstream.io import limits
from rxstream.io.limits import Ask, Ticket, ask_for, estimate_tokens, limited


class Hand:
    """An `Admission` the test answers by hand, from any thread."""

    def __init__(self) -> None:
        self.asks: list[Ask] = []
        self.admitted: list[Callable[[Ticket], None]] = []
        self.failed: list[Callable[[Exception], None]] = []
        self.withdrawn = 0
        self.released: list[rs.Usage | None] = []
        self.answers: list[int] = []
        self.waiting = threading.Event()

    def admit(
        self, ask: Ask, admitted: Callable[[Ticket], None], failed: Callable[[Exception], None]
    ) -> Callable[[], None]:
        self.asks.append(ask)
        self.admitted.append(admitted)
        self.failed.append(failed)
        self.waiting.set()

        def withdraw() -> None:
            self.withdrawn += 1

        return withdraw

    def ticket(self) -> Ticket:
        hand = self

        class Held:
            def answered(self, status: int, headers: Mapping[str, str]) -> None:
                hand.answers.append(status)

            def release(self, usage: rs.Usage | None) -> None:
                hand.released.append(usage)

        return Held()


ASK = Ask("r", 1)
USAGE = rs.Usage(1, 2, 3)


def test_a_sync_stream_waits_on_its_thread_then_runs_there() -> None:
    hand = Hand()
    seen: list[Any] = []
    threads: list[threading.Thread] = []
    source = limited(
        lambda _: reactivex.of(rs.TextDelta("a"), USAGE).pipe(
            reactivex.operators.do_action(lambda _: threads.append(threading.current_thread()))
        ),
        hand,
        ASK,
        asynchronous=False,
        scheduler=None,
    )
    subscriber = threading.Thread(target=lambda: source.subscribe(seen.append))
    subscriber.start()
    assert hand.waiting.wait(5)
    assert seen == []
    hand.admitted[0](hand.ticket())  # from this thread: the stream runs on the subscriber's
    subscriber.join(5)
    assert seen == [rs.TextDelta("a"), USAGE]
    assert set(threads) == {subscriber}
    assert hand.released == [USAGE]


def test_a_refusal_reaches_the_waiting_subscriber() -> None:
    hand = Hand()
    errors: list[Exception] = []
    source = limited(lambda _: reactivex.empty(), hand, ASK, asynchronous=False, scheduler=None)
    subscriber = threading.Thread(target=lambda: source.subscribe(on_error=errors.append))
    subscriber.start()
    assert hand.waiting.wait(5)
    hand.failed[0](rs.LimiterError("L", "never"))
    subscriber.join(5)
    assert [str(e) for e in errors] == ["L: never"]
    assert hand.released == []


def test_a_source_that_cannot_be_made_fails_and_releases() -> None:
    hand = Hand()
    errors: list[Exception] = []

    def make(_: Ticket) -> reactivex.Observable[Any]:
        raise ValueError("no such request")

    scheduler = ImmediateScheduler.singleton()
    limited(make, hand, ASK, asynchronous=False, scheduler=scheduler).subscribe(
        on_error=errors.append
    )
    hand.admitted[0](hand.ticket())
    assert [str(e) for e in errors] == ["no such request"]
    assert hand.released == [None]


def test_disposed_while_queued_withdraws_and_a_late_admission_is_given_back() -> None:
    hand = Hand()
    made: list[Ticket] = []
    scheduler = ImmediateScheduler.singleton()
    source = limited(
        lambda t: made.append(t) or reactivex.never(),
        hand,
        ASK,
        asynchronous=False,
        scheduler=scheduler,
    )
    subscription = source.subscribe()
    subscription.dispose()
    assert hand.withdrawn == 1
    hand.admitted[0](hand.ticket())  # the limiter had picked it just before the withdrawal
    assert made == []
    assert hand.released == [None]
    subscription.dispose()
    assert hand.released == [None]


def test_an_error_of_the_stream_releases_before_it_is_passed_on() -> None:
    hand = Hand()
    order: list[str] = []
    scheduler = ImmediateScheduler.singleton()
    source = limited(
        lambda _: reactivex.throw(rs.TransportError("cut")),
        hand,
        ASK,
        asynchronous=False,
        scheduler=scheduler,
    )
    source.subscribe(on_error=lambda e: order.append(f"error {e} after {len(hand.released)}"))
    hand.admitted[0](hand.ticket())
    assert order == ["error cut after 1"]


def test_an_async_stream_starts_on_its_loop_whatever_thread_admits_it() -> None:
    hand = Hand()

    async def main() -> tuple[list[Any], bool]:
        loop = asyncio.get_running_loop()
        on_loop: list[bool] = []

        def make(_: Ticket) -> reactivex.Observable[Any]:
            on_loop.append(asyncio.get_running_loop() is loop)
            return reactivex.of(1, 2)

        result = asyncio.ensure_future(
            _collect(limited(make, hand, ASK, asynchronous=True, scheduler=None))
        )
        await asyncio.sleep(0)
        admitting = threading.Thread(target=lambda: hand.admitted[0](hand.ticket()))
        admitting.start()
        admitting.join()
        return await result, all(on_loop)

    items, on_loop = asyncio.run(main())
    assert items == [1, 2]
    assert on_loop


def test_an_async_refusal_arrives_on_the_loop() -> None:
    hand = Hand()

    async def main() -> None:
        result = asyncio.ensure_future(
            _collect(
                limited(lambda _: reactivex.empty(), hand, ASK, asynchronous=True, scheduler=None)
            )
        )
        await asyncio.sleep(0)
        threading.Thread(target=lambda: hand.failed[0](rs.LimiterError("L", "no"))).start()
        with pytest.raises(rs.LimiterError, match="L: no"):
            await result

    asyncio.run(main())


async def _collect(source: reactivex.Observable[Any]) -> list[Any]:
    loop = asyncio.get_running_loop()
    done: asyncio.Future[list[Any]] = loop.create_future()
    items: list[Any] = []
    source.subscribe(
        items.append,
        lambda e: done.set_exception(e),
        lambda: done.set_result(items),
    )
    return await done


# -- the Ask of a request -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "body", "route", "bound"),
    [
        pytest.param(
            "https://api.test/v1/chat/completions?x=1",
            {"model": "gpt", "max_completion_tokens": 300, "messages": []},
            "api.test/v1/chat/completions gpt",
            300,
            id="openai",
        ),
        pytest.param(
            "https://g.test/v1/models/gem:streamGenerateContent?alt=sse",
            {"contents": [], "generationConfig": {"maxOutputTokens": 70}},
            "g.test/v1/models/gem:streamGenerateContent",
            70,
            id="gemini-nested",
        ),
        pytest.param(
            "https://b.test/model/m1/converse-stream",
            {"inferenceConfig": {"maxTokens": 9}, "flag": True, "n": [1, None]},
            "b.test/model/m1/converse-stream",
            9,
            id="bedrock",
        ),
        pytest.param(
            "http://o.test/api/chat",
            {"model": "llama", "options": {"num_predict": True}},
            "o.test/api/chat llama",
            0,
            id="a-bool-is-no-bound",
        ),
    ],
)
def test_the_ask_of_a_json_body(url: str, body: dict[str, Any], route: str, bound: int) -> None:
    ask = ask_for(url, body)
    assert ask.route == route
    assert ask.tokens == bound  # no text in these bodies: the bound alone


def test_the_ask_counts_the_text_but_not_the_model() -> None:
    body = b'{"model": "a-very-long-model-name", "messages": [{"role": "user", "content": "Hi"}]}'
    assert ask_for("http://h/p", body).tokens == estimate_tokens("user\nHi")


def test_a_body_that_is_not_json_counts_as_text() -> None:
    assert ask_for("http://h/p", b"plain words here") == Ask(
        "h/p", estimate_tokens("plain words here")
    )
    assert ask_for("http://h/p", None) == Ask("h/p", 0)


def test_without_the_token_counter_the_estimate_is_a_quarter_of_the_characters(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import rxstream.core.tokens as tokens

    def missing(*_: Any) -> Any:
        raise ImportError("no tiktoken")

    monkeypatch.setattr(tokens, "TokenCounter", missing)
    assert estimate_tokens("abcdefghi") == 3
    assert estimate_tokens("") == 0
    assert limits.estimate_tokens is estimate_tokens


def test_the_route_never_holds_a_credential_of_the_url() -> None:
    ask = ask_for("https://user:secret@h.test:8443/v1/models/g:stream?key=AIza-secret", {})
    assert ask.route == "h.test:8443/v1/models/g:stream"

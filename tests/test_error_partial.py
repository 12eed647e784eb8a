"""Every `StreamError` carries what arrived: every dialect, every cut position, several tails.

For each dialect and each position k of a scripted answer (reasoning, text and
a tool call whose arguments come in two fragments), the stream fails after k
events: a transport cut on the fake server (through `rs.chat`), a malformed
event at k, a stall caught by `rs.timeouts` (on the virtual clock). Whatever
the pipeline's tail (`decode` alone, `accumulate_message`, `accumulate_tool_calls`,
`split_by_delta_type`, `count_tokens`, `rs.multicast`, the sync and async
iterator bridges), the error the subscriber gets has as `partial` the message
of the deltas that arrived before it, read here from those deltas by a rule of
this test's own (joined texts; a call's joined arguments, complete when they
are a whole JSON object or its choice finished), or None when none arrived.

A sample of each sweep runs every day (`SAMPLED` in tests/conftest.py); `--full` runs them all.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import httpx
import pytest
import reactivex
from reactivex import Observable
from reactivex.testing import TestScheduler

import rxstream as rs
from rxstream.core import dialects
from rxstream.models import EventStreamMessage, SSEFrame
from rxstream.testing.server import FAULT_HEADER, FakeLLMServer, Scenario

SCRIPT: list[rs.Delta] = [
    rs.ReasoningDelta("Let me "),
    rs.ReasoningDelta("think."),
    rs.TextDelta("Hel"),
    rs.TextDelta("lo."),
    rs.ToolCallDelta(0, '{"city": ', id="call_1", name="weather"),
    rs.ToolCallDelta(0, '"Paris"}'),
    rs.Finish("tool_calls"),
    rs.Usage(10, 5, 15),
]

CHAT_DIALECTS = list(dialects.DIALECTS)
WIRE_DIALECTS = [*CHAT_DIALECTS, "ai-sdk"]
CUTS = range(len(SCRIPT) + 1)


# --------------------------------------------------------------------------- the oracle


def expected(deltas: list[Any]) -> tuple[Any, ...] | None:
    """What the partial of `deltas` says, by this test's own reading (choice 0)."""
    if not deltas:
        return None
    reasoning, content, finish = "", "", None
    calls: dict[int | None, list[Any]] = {}
    for delta in deltas:
        if isinstance(delta, rs.ReasoningDelta):
            reasoning += delta.text
        elif isinstance(delta, rs.TextDelta):
            content += delta.text
        elif isinstance(delta, rs.ToolCallDelta):
            call = calls.setdefault(delta.index, [None, None, ""])
            call[0] = call[0] or delta.id
            call[1] = call[1] or delta.name
            call[2] += delta.arguments
        elif isinstance(delta, rs.Finish):
            finish = delta.reason
    order = sorted(calls, key=lambda index: -1 if index is None else index)
    shown = tuple(
        (id, name, arguments, finish is not None or whole_object(arguments))
        for id, name, arguments in (calls[index] for index in order)
    )
    return reasoning, content, shown, finish


def whole_object(arguments: str) -> bool:
    try:
        return isinstance(json.loads(arguments), dict)
    except ValueError:
        return False


def seen(message: rs.Message | None) -> tuple[Any, ...] | None:
    """The same reading of a partial `Message`."""
    if message is None:
        return None
    calls = tuple((c.id, c.name, c.arguments, c.complete) for c in message.tool_calls)
    return message.reasoning, message.content, calls, message.finish_reason


# --------------------------------------------------------------------------- the tails


def run_decode(source: Observable[Any]) -> tuple[list[Any], BaseException]:
    """The deltas and the error of the pipeline with no tail."""
    items: list[Any] = []
    errors: list[BaseException] = []
    source.subscribe(items.append, errors.append)
    (error,) = errors
    return items, error


def subscribed(source: Observable[Any]) -> BaseException:
    errors: list[BaseException] = []
    source.subscribe(on_error=errors.append)
    (error,) = errors
    return error


def split(source: Observable[Any]) -> BaseException:
    errors: list[BaseException] = []

    def group(grouped: Any) -> None:
        grouped.subscribe(on_error=errors.append)

    source.pipe(rs.split_by_delta_type()).subscribe(group, errors.append)
    assert errors
    assert all(error is errors[0] for error in errors)
    return errors[0]


def multicast(source: Observable[Any]) -> BaseException:
    errors: list[BaseException] = []
    hub = rs.multicast(source)
    hub.subscribe(on_error=errors.append)
    hub.subscribe(on_error=errors.append)
    hub.connect()
    first, second = errors
    assert first is second
    return first


def iterated(source: Observable[Any]) -> BaseException:
    with pytest.raises(rs.StreamError) as caught:
        for _ in rs.to_iterator(source):
            pass
    return caught.value


def iterated_async(source: Observable[Any]) -> BaseException:
    async def main() -> None:
        async for _ in rs.to_async_iterator(source):
            pass

    with pytest.raises(rs.StreamError) as caught:
        asyncio.run(main())
    return caught.value


TAILS: dict[str, Callable[[Observable[Any]], BaseException]] = {
    "decode": lambda source: run_decode(source)[1],
    "accumulate_message": lambda source: subscribed(source.pipe(rs.accumulate_message())),
    "accumulate_tool_calls": lambda source: subscribed(source.pipe(rs.accumulate_tool_calls())),
    "split_by_delta_type": split,
    "count_tokens": lambda source: subscribed(source.pipe(rs.count_tokens())),
    "multicast": multicast,
    "to_iterator": iterated,
    "to_async_iterator": iterated_async,
}


def check(error: BaseException, deltas: list[Any]) -> None:
    assert isinstance(error, rs.StreamError)
    assert seen(error.partial) == expected(deltas)
    if error.partial is not None:
        # What arrived is a beginning of the answer.
        assert "Let me think.".startswith(error.partial.reasoning)
        assert "Hello.".startswith(error.partial.content)


# --------------------------------------------------------------------------- a cut on the server


@pytest.fixture(scope="module")
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(Scenario.answer(*SCRIPT), check_requests=False) as fake:
        yield fake


def chat(client: httpx.Client, server: FakeLLMServer, dialect: str) -> Observable[rs.Delta]:
    root = f"http://127.0.0.1:{server.port}"
    return rs.chat(
        client,
        dialect,
        model="m",
        messages=[{"role": "user", "content": "Weather in Paris?"}],
        base_url=f"{root}/v1" if dialect.startswith("openai") else root,
        api_key="k",
        max_tokens=50,
    )


def faulty_client(fault: str) -> httpx.Client:
    def script(request: httpx.Request) -> None:
        request.headers[FAULT_HEADER] = fault

    return httpx.Client(timeout=10, event_hooks={"request": [script]})


@pytest.mark.parametrize("tail", TAILS)
@pytest.mark.parametrize("k", CUTS)
@pytest.mark.parametrize("dialect", CHAT_DIALECTS)
def test_a_cut_after_k_events_keeps_the_first_k(
    server: FakeLLMServer, dialect: str, k: int, tail: str
) -> None:
    with faulty_client(f"cut:{k}") as client:
        deltas, _ = run_decode(chat(client, server, dialect))
        error = TAILS[tail](chat(client, server, dialect))
    assert isinstance(error, rs.TransportError | rs.TruncatedStreamError)
    check(error, deltas)


def test_the_cuts_reach_every_part_of_the_answer(server: FakeLLMServer) -> None:
    """The sweep's positions cover no delta, a cut call, a whole call and a finish."""
    found: set[object] = set()
    for k in CUTS:
        with faulty_client(f"cut:{k}") as client:
            _deltas, error = run_decode(chat(client, server, "anthropic"))
        assert isinstance(error, rs.StreamError)
        found.add(seen(error.partial) is None)
        if error.partial is not None:
            found |= {(c.complete, error.partial.finish_reason) for c in error.partial.tool_calls}
    assert found >= {True, False, (False, None), (True, None)}


# --------------------------------------------------------------------------- a malformed event at k


def wire_items(dialect: str) -> list[Any]:
    renderer = dialects.renderer(dialect)
    items: list[Any] = []
    for delta in SCRIPT:
        items += renderer.feed(delta)
    return items + renderer.close()


def broken(item: Any) -> Any:
    """`item` with its data cut in half: malformed JSON in every dialect."""
    if isinstance(item, SSEFrame):
        return replace(item, data=item.data[: len(item.data) // 2])
    if isinstance(item, EventStreamMessage):
        return EventStreamMessage(item.headers, item.payload[: len(item.payload) // 2])
    assert isinstance(item, str)
    return item[: len(item) // 2]


def with_malformed(dialect: str, k: int) -> Observable[rs.Delta]:
    items = wire_items(dialect)
    items[k] = broken(items[k])
    return reactivex.from_iterable(items[: k + 1]).pipe(rs.decode(dialect))


#: (dialect, k) for every event k of the answer as each dialect renders it.
POSITIONS = [
    pytest.param(dialect, k, id=f"{dialect}-{k}")
    for dialect in WIRE_DIALECTS
    for k in range(len(wire_items(dialect)))
]


@pytest.mark.parametrize("tail", TAILS)
@pytest.mark.parametrize(("dialect", "k"), POSITIONS)
def test_a_malformed_event_at_k_keeps_what_came_before(dialect: str, k: int, tail: str) -> None:
    deltas, error = run_decode(with_malformed(dialect, k))
    assert isinstance(error, rs.MalformedChunkError | rs.TruncatedStreamError)
    deltas_again = deltas if tail == "decode" else run_decode(with_malformed(dialect, k))[0]
    assert deltas_again == deltas
    check(TAILS[tail](with_malformed(dialect, k)), deltas)


# --------------------------------------------------------------------------- a stall at k


def stalled(scheduler: TestScheduler, dialect: str, k: int, before: bool) -> Observable[rs.Delta]:
    """The first k events, one every 10 ticks, then silence; `timeouts(idle=25)` before or
    after the decoder."""
    records = [
        reactivex.testing.ReactiveTest.on_next(10 * (i + 1), item)
        for i, item in enumerate(wire_items(dialect)[:k])
    ]
    source: Observable[Any] = scheduler.create_cold_observable(records)
    watch = rs.timeouts(idle=25, scheduler=scheduler)
    if before:
        return source.pipe(watch, rs.decode(dialect))
    return source.pipe(rs.decode(dialect), watch)


VIRTUAL_TAILS = [
    "decode",
    "accumulate_message",
    "accumulate_tool_calls",
    "split_by_delta_type",
    "count_tokens",
]


@pytest.mark.parametrize("before", [False, True], ids=["after-decode", "before-decode"])
@pytest.mark.parametrize("tail", [*VIRTUAL_TAILS, "multicast"])
@pytest.mark.parametrize(("dialect", "k"), POSITIONS)
def test_a_timeout_after_k_events_keeps_them(dialect: str, k: int, tail: str, before: bool) -> None:
    errors: list[BaseException] = []
    deltas: list[Any] = []
    first, second = TestScheduler(), TestScheduler()
    stalled(first, dialect, k, before).subscribe(deltas.append, errors.append)
    first.advance_to(10_000)
    source = stalled(second, dialect, k, before)
    if tail == "multicast":
        hub = rs.multicast(source)
        hub.subscribe(on_error=errors.append)
        hub.connect()
    elif tail == "split_by_delta_type":
        source.pipe(rs.split_by_delta_type()).subscribe(on_error=errors.append)
    else:
        tails = {
            "decode": lambda o: o,
            "accumulate_message": lambda o: o.pipe(rs.accumulate_message()),
            "accumulate_tool_calls": lambda o: o.pipe(rs.accumulate_tool_calls()),
            "count_tokens": lambda o: o.pipe(rs.count_tokens()),
        }
        tails[tail](source).subscribe(on_error=errors.append)
    second.advance_to(10_000)
    baseline, error = errors
    assert isinstance(baseline, rs.StreamTimeoutError)
    assert isinstance(error, rs.StreamTimeoutError)
    assert error.seconds == 25
    check(error, deltas)


# --------------------------------------------------------------------------- the error itself


def test_a_multicast_observer_that_overflows_gets_the_partial() -> None:
    from reactivex.scheduler import HistoricalScheduler

    slow = HistoricalScheduler()  # never advanced: its observer never drains
    errors: list[BaseException] = []
    hub = rs.multicast(reactivex.from_iterable(SCRIPT[:5]))
    hub.subscribe(on_error=errors.append, overflow="error", maxsize=2, scheduler=slow)
    hub.connect()
    slow.advance_by(1)
    (error,) = errors
    assert isinstance(error, rs.BufferOverflowError)
    # The third delta did not fit: the partial is the two before it.
    assert seen(error.partial) == expected(SCRIPT[:2])

"""A stop on real sockets: the server sees the client go at once, and every observer completes
with what arrived (the partial message marked `"cancelled"`, the final token count).

Each scenario sends two text pieces and then stalls for a long time without ending, so a stream
that ends at all was stopped, and the fake server counts the client leaving during the stall.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

import httpx
import pytest
import reactivex
import reactivex.operators as ops
from reactivex import Observable
from reactivex.scheduler import ThreadPoolScheduler
from reactivex.scheduler.eventloop import AsyncIOScheduler

import rxstream as rs
from rxstream.models import Delta, Finish, Message, TextDelta, TokenCount
from rxstream.testing.server import FakeLLMServer, Scenario, Stall
from tests.support.sources import TIMEOUT

PAYLOAD = {"model": "fake-model", "stream": True, "messages": [{"role": "user", "content": "hi"}]}

#: Two pieces of text, then nothing for far longer than any test runs.
STALLED = Scenario.answer(TextDelta("Hel"), TextDelta("lo"), end=False).then(Stall(60.0))


@pytest.fixture
def server(fake_llm_server: FakeLLMServer) -> FakeLLMServer:
    fake_llm_server.serve(STALLED)
    return fake_llm_server


def deltas(source: Observable[str]) -> Observable[Delta]:
    return source.pipe(rs.sse_frames(), rs.decode("openai-chat"))


def stop_after_text(button: rs.StopSignal, pieces: int) -> Callable[[Any], None]:
    """An `on_next` that stops once `pieces` text deltas went by."""
    seen: list[Any] = []

    def on_next(item: Any) -> None:
        if isinstance(item, TextDelta):
            seen.append(item)
            if len(seen) == pieces:
                button.stop()

    return on_next


def assert_cancelled(messages: list[Message], text: str = "Hello") -> None:
    [message] = messages
    assert (message.content, message.finish_reason, message.finish_raw) == (
        text,
        "cancelled",
        None,
    )


# --------------------------------------------------------------------------- stop_on


def test_sync_stop_from_on_next_closes_the_connection_at_once(server: FakeLLMServer) -> None:
    """Stop after N tokens, on the source's own thread: `subscribe` returns with the message."""
    button = rs.StopSignal()
    messages: list[Message] = []
    completed = threading.Event()
    with httpx.Client() as client:
        source = rs.from_request(client, "POST", server.url, json=PAYLOAD)
        deltas(source).pipe(
            rs.stop_on(button),
            ops.do_action(stop_after_text(button, 2)),
            rs.accumulate_message(),
        ).subscribe(messages.append, on_completed=completed.set)
        # A sync source on the current thread: all of it happened inside subscribe.
        assert completed.is_set()
        assert_cancelled(messages)
        assert server.wait_for_disconnect(TIMEOUT)
    assert len(server.requests) == 1


def test_sync_stop_from_a_timer_thread_is_delivered_before_subscribe_returns(
    server: FakeLLMServer,
) -> None:
    messages: list[Message] = []
    counts: list[TokenCount] = []
    with httpx.Client() as client:
        source = rs.from_request(client, "POST", server.url, json=PAYLOAD)
        got_text = threading.Event()
        button = rs.StopSignal()
        stopper = threading.Thread(target=lambda: (got_text.wait(TIMEOUT), button.stop()))
        stopper.start()
        shared = deltas(source).pipe(
            ops.do_action(lambda d: got_text.set() if d == TextDelta("lo") else None),
            rs.stop_on(button),
            ops.publish(),
        )
        shared.pipe(rs.accumulate_message()).subscribe(messages.append)
        shared.pipe(rs.count_tokens(encoding=str.split)).subscribe(counts.append)
        shared.connect()
        # The socket woke at the stop; the end was delivered (on the stopper's thread) first.
        assert_cancelled(messages)
        assert counts[-1].final
        assert counts[-1].text == 1
        stopper.join(TIMEOUT)
        assert server.wait_for_disconnect(TIMEOUT)


def test_stop_of_a_stream_on_a_thread_pool(
    server: FakeLLMServer, pool: Callable[[], ThreadPoolScheduler]
) -> None:
    button = rs.StopSignal()
    messages: list[Message] = []
    done = threading.Event()
    got_text = threading.Event()
    with httpx.Client() as client:
        source = rs.from_request(client, "POST", server.url, json=PAYLOAD, scheduler=pool())
        deltas(source).pipe(
            ops.do_action(lambda d: got_text.set() if d == TextDelta("lo") else None),
            rs.stop_on(button),
            rs.accumulate_message(),
        ).subscribe(messages.append, on_completed=done.set)
        assert got_text.wait(TIMEOUT)
        button.stop()  # from the main thread, while the reader waits on the socket
        assert done.wait(TIMEOUT)
        assert_cancelled(messages)
        assert server.wait_for_disconnect(TIMEOUT)


def test_async_stop_closes_the_connection(server: FakeLLMServer) -> None:
    async def main() -> tuple[list[Message], list[TokenCount], bool]:
        button = rs.StopSignal()
        messages: list[Message] = []
        counts: list[TokenCount] = []
        ended = asyncio.Event()
        async with httpx.AsyncClient() as client:
            source = rs.from_request(client, "POST", server.url, json=PAYLOAD)
            shared = deltas(source).pipe(rs.stop_on(button), ops.publish())
            shared.pipe(rs.accumulate_message()).subscribe(messages.append)
            shared.pipe(rs.count_tokens(encoding=str.split)).subscribe(
                counts.append, on_completed=ended.set
            )
            shared.subscribe(stop_after_text(button, 2))
            shared.connect()
            await asyncio.wait_for(ended.wait(), TIMEOUT)
            gone = await asyncio.to_thread(server.wait_for_disconnect, TIMEOUT)
        return messages, counts, gone

    messages, counts, gone = asyncio.run(main())
    assert_cancelled(messages)
    assert counts[-1].final
    assert counts[-1].text == 1
    assert gone


def test_async_stop_by_a_timer_on_the_loop(server: FakeLLMServer) -> None:
    async def main() -> tuple[list[Message], bool]:
        messages: list[Message] = []
        ended = asyncio.Event()
        async with httpx.AsyncClient() as client:
            source = rs.from_request(client, "POST", server.url, json=PAYLOAD)
            loop = AsyncIOScheduler(asyncio.get_running_loop())
            # Stops once the two pieces are in (the server then stalls for a minute).
            signal = reactivex.timer(0.3, scheduler=loop)
            deltas(source).pipe(rs.stop_on(signal), rs.accumulate_message()).subscribe(
                messages.append, on_completed=ended.set
            )
            await asyncio.wait_for(ended.wait(), TIMEOUT)
            gone = await asyncio.to_thread(server.wait_for_disconnect, TIMEOUT)
        return messages, gone

    messages, gone = asyncio.run(main())
    [message] = messages
    assert message.finish_reason == "cancelled"
    assert message.content in ("", "Hel", "Hello")  # what had arrived by then
    assert gone


# --------------------------------------------------------------------------- Multicast.stop


def test_hub_stop_completes_the_ui_and_the_logger_with_what_arrived(
    server: FakeLLMServer, pool: Callable[[], ThreadPoolScheduler]
) -> None:
    messages: list[Message] = []
    counts: list[TokenCount] = []
    ui_items: list[Any] = []
    ui_done, log_done, counted = threading.Event(), threading.Event(), threading.Event()
    with httpx.Client() as client:
        source = rs.from_request(client, "POST", server.url, json=PAYLOAD)
        hub = rs.multicast(deltas(source))

        def ui(item: Any) -> None:  # on its own thread: the stop comes from there
            ui_items.append(item)
            if item == TextDelta("lo"):
                hub.stop()

        hub.subscribe(ui, on_completed=ui_done.set, scheduler=pool())
        hub.observe().pipe(rs.accumulate_message()).subscribe(
            messages.append, on_completed=log_done.set
        )
        hub.observe(scheduler=pool()).pipe(rs.count_tokens(encoding=str.split)).subscribe(
            counts.append, on_completed=counted.set
        )
        hub.connect()
        for done in (ui_done, log_done, counted):
            assert done.wait(TIMEOUT)
        assert_cancelled(messages)
        # The UI got every piece and then the stop's finish, after what it already had.
        texts = [item for item in ui_items if isinstance(item, TextDelta)]
        assert texts == [TextDelta("Hel"), TextDelta("lo")]
        assert ui_items[-1] == Finish("cancelled")
        assert counts[-1].final
        assert counts[-1].text == 1
        assert server.wait_for_disconnect(TIMEOUT)
    assert len(server.requests) == 1


def test_hub_stop_from_an_observer_on_the_source_thread(server: FakeLLMServer) -> None:
    messages: list[Message] = []
    log: list[Any] = []
    with httpx.Client() as client:
        source = rs.from_request(client, "POST", server.url, json=PAYLOAD)
        hub = rs.multicast(deltas(source))

        def ui(item: Any) -> None:
            if item == TextDelta("lo"):
                hub.stop()

        hub.subscribe(ui)
        hub.observe().pipe(rs.accumulate_message()).subscribe(messages.append)
        hub.subscribe(log.append, on_completed=lambda: log.append("completed"))
        hub.connect()  # returns: the stop ended the stream
        assert_cancelled(messages)
        assert log[-2:] == [Finish("cancelled"), "completed"]
        assert server.wait_for_disconnect(TIMEOUT)
        hub.stop()  # after the end: nothing happens


def test_async_hub_stop(server: FakeLLMServer) -> None:
    async def main() -> tuple[list[Message], bool]:
        messages: list[Message] = []
        ended = asyncio.Event()
        async with httpx.AsyncClient() as client:
            hub = rs.multicast(deltas(rs.from_request(client, "POST", server.url, json=PAYLOAD)))
            loop = AsyncIOScheduler(asyncio.get_running_loop())

            def ui(item: Any) -> None:
                if item == TextDelta("lo"):
                    hub.stop()

            hub.subscribe(ui, scheduler=loop)
            hub.observe().pipe(rs.accumulate_message()).subscribe(
                messages.append, on_completed=ended.set
            )
            hub.connect()
            await asyncio.wait_for(ended.wait(), TIMEOUT)
            gone = await asyncio.to_thread(server.wait_for_disconnect, TIMEOUT)
        return messages, gone

    messages, gone = asyncio.run(main())
    assert_cancelled(messages)
    assert gone


def test_hub_stop_before_connect_makes_no_request(server: FakeLLMServer) -> None:
    done = threading.Event()
    with httpx.Client() as client:
        hub = rs.multicast(deltas(rs.from_request(client, "POST", server.url, json=PAYLOAD)))
        items: list[Any] = []
        hub.subscribe(items.append, on_completed=done.set)
        hub.stop()
        hub.connect()
    assert done.is_set()
    assert items == []
    assert server.requests == []

"""No stream error goes silent, sync or async, when the subscriber passed no `on_error`.

A sync stream runs inside `subscribe()`: reactivex's default `on_error` raises
there, so the caller gets the error as from any call. An async stream runs as
a task after `subscribe()` returned: there is no caller left to raise to, and
the error used to surface only as "Task exception was never retrieved" when
the task was collected (if ever), while the program went on. Now it goes to the
event loop's exception handler at once, as asyncio does for a callback that
raises: logged with its traceback by default, and fatal for an application
that installs a handler saying so. The task itself ends cleanly.
"""

from __future__ import annotations

import asyncio
import gc
from typing import Any

import httpx
import pytest

import rxstream as rs
from rxstream.testing.server import FakeLLMServer, Scenario
from tests.support.sources import TIMEOUT

PAYLOAD = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
SCENARIOS = {
    "http-error": (Scenario.error(500, "the model is overloaded"), rs.HTTPStatusError),
    "cut-mid-stream": (Scenario.text("Hel", "lo").disconnect_after(2), rs.TransportError),
}


@pytest.mark.parametrize("case", list(SCENARIOS))
def test_a_sync_stream_without_on_error_raises_from_subscribe(case: str) -> None:
    scenario, expected = SCENARIOS[case]
    seen: list[Any] = []
    with FakeLLMServer(scenario) as server, httpx.Client() as client:
        source = rs.from_request(client, "POST", server.url, json=PAYLOAD)
        with pytest.raises(expected):
            source.subscribe(on_next=seen.append)


async def unhandled(subscribe: Any) -> list[dict[str, Any]]:
    """Run `subscribe()` on this loop; what reached the loop's exception handler, in order."""
    loop = asyncio.get_running_loop()
    reported: list[dict[str, Any]] = []
    arrived = asyncio.Event()

    def handler(_: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        reported.append(context)
        arrived.set()

    previous = loop.get_exception_handler()
    loop.set_exception_handler(handler)
    try:
        subscribe()
        await asyncio.wait_for(arrived.wait(), TIMEOUT)
        # Let the task end, then collect it: a task whose exception was never
        # retrieved would report a second time here.
        for _ in range(5):
            await asyncio.sleep(0)
        gc.collect()
        await asyncio.sleep(0)
    finally:
        loop.set_exception_handler(previous)
    return reported


@pytest.mark.parametrize("case", list(SCENARIOS))
def test_an_async_stream_without_on_error_reports_to_the_loop_at_once(case: str) -> None:
    scenario, expected = SCENARIOS[case]
    seen: list[Any] = []

    async def main() -> list[dict[str, Any]]:
        async with httpx.AsyncClient() as client:
            source = rs.from_request(client, "POST", server.url, json=PAYLOAD)
            return await unhandled(lambda: source.subscribe(on_next=seen.append))

    with FakeLLMServer(scenario) as server:
        reported = asyncio.run(main())
    [context] = reported  # once, and no "Task exception was never retrieved" after it
    assert isinstance(context["exception"], expected)
    assert "has no on_error" in context["message"]
    assert isinstance(context["task"], asyncio.Task)
    assert context["task"].done()
    assert context["task"].exception() is None


def test_an_async_stream_with_on_error_reports_nothing_to_the_loop() -> None:
    errors: list[BaseException] = []

    async def main() -> list[dict[str, Any]]:
        loop = asyncio.get_running_loop()
        reported: list[dict[str, Any]] = []
        loop.set_exception_handler(lambda _, context: reported.append(context))
        done = asyncio.Event()

        def on_error(error: BaseException) -> None:
            errors.append(error)
            done.set()

        async with httpx.AsyncClient() as client:
            rs.from_request(client, "POST", server.url, json=PAYLOAD).subscribe(on_error=on_error)
            await asyncio.wait_for(done.wait(), TIMEOUT)
            await asyncio.sleep(0)
            gc.collect()
            await asyncio.sleep(0)
        return reported

    with FakeLLMServer(Scenario.error(429, "slow down")) as server:
        assert asyncio.run(main()) == []
    [error] = errors
    assert isinstance(error, rs.HTTPStatusError)
    assert error.status_code == 429


@pytest.mark.parametrize("raising", ["on_next", "on_completed"])
def test_an_async_subscriber_that_raises_is_reported_too(raising: str) -> None:
    class Boom(Exception):
        pass

    def boom(*_: Any) -> None:
        raise Boom(raising)

    async def main() -> list[dict[str, Any]]:
        async with httpx.AsyncClient() as client:
            source = rs.from_request(client, "POST", server.url, json=PAYLOAD)
            if raising == "on_next":
                return await unhandled(lambda: source.subscribe(on_next=boom))
            return await unhandled(lambda: source.subscribe(on_completed=boom))

    with FakeLLMServer(Scenario.text("Hi")) as server:
        reported = asyncio.run(main())
    [context] = reported
    assert isinstance(context["exception"], Boom)
    assert str(context["exception"]) == raising

"""`rs.run` against the fake server: the same three-step run in every dialect, async tools,
errors back to the model, approval resumed in a new process, cancellation."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest
import reactivex
from reactivex import operators as ops

import rxstream as rs
from rxstream.testing import FakeLLMServer, Scenario
from rxstream.testing._asked import read_asked
from rxstream.testing._routes import route
from rxstream.testing._scenario import RecordedRequest

from .run_resume import TOOLS, get_time, get_weather, resume, to_fahrenheit

DIALECTS = ("openai-chat", "openai-responses", "anthropic", "gemini", "cohere", "ollama", "bedrock")
ASK = [{"role": "user", "content": "How warm is it in Paris, in Fahrenheit, and what time is it?"}]


def call(index: int, call_id: str, name: str, arguments: dict[str, Any]) -> rs.ToolCallDelta:
    return rs.ToolCallDelta(index, json.dumps(arguments), id=call_id, name=name)


def three_steps(request: RecordedRequest) -> Scenario:
    """Step 1: two calls at once; step 2: a call that needs their results; step 3: the answer."""
    dialect = route(request.path, request.json) or "openai-chat"
    results = read_asked(dialect, request.path, request.json).results
    if not results:
        deltas: list[rs.Delta] = [
            call(0, "call_w", "get_weather", {"city": "Paris"}),
            call(1, "call_t", "get_time", {"city": "Paris"}),
            rs.Finish("tool_calls"),
        ]
    elif len(results) == 2:
        weather = json.loads(next(r for r in results if "temperature_c" in r))
        celsius = weather["temperature_c"]
        deltas = [call(0, "call_f", "to_fahrenheit", {"celsius": celsius}), rs.Finish("tool_calls")]
    else:
        deltas = [rs.TextDelta(f"It is {float(results[0]):g} F in Paris."), rs.Finish("stop")]
    return Scenario.answer(*deltas, rs.Usage(10, 2, 12))


def base_url(server: FakeLLMServer, dialect: str) -> str:
    root = f"http://127.0.0.1:{server.port}"
    return f"{root}/v1" if dialect.startswith("openai") else root


def options(server: FakeLLMServer, dialect: str) -> dict[str, Any]:
    return {"base_url": base_url(server, dialect), "api_key": "k", "max_tokens": 100}


def items_of(observable: reactivex.Observable[Any]) -> list[Any]:
    out: list[Any] = observable.pipe(ops.to_list()).run()
    return out


def shape(messages: tuple[Any, ...]) -> list[Any]:
    """The conversation's shape: roles, the calls' names, the results' contents."""
    out: list[Any] = []
    for message in messages:
        if isinstance(message, rs.Message):
            out.append(("assistant", [c.name for c in message.tool_calls], message.content))
        else:
            out.append((message["role"], message.get("name"), message["content"]))
    return out


EXPECTED_SHAPE = [
    ("user", None, ASK[0]["content"]),
    ("assistant", ["get_weather", "get_time"], ""),
    ("tool", "get_weather", '{"city": "Paris", "temperature_c": 18}'),
    ("tool", "get_time", "12:00 in Paris"),
    ("assistant", ["to_fahrenheit"], ""),
    ("tool", "to_fahrenheit", "64.4"),
    ("assistant", [], "It is 64.4 F in Paris."),
]


@pytest.fixture(scope="module")
def server() -> Any:
    with FakeLLMServer(three_steps) as running:
        yield running


@pytest.mark.parametrize("dialect", DIALECTS)
def test_the_same_three_step_run_in_every_dialect(server: FakeLLMServer, dialect: str) -> None:
    with httpx.Client() as client:
        items = items_of(
            rs.run(
                client, dialect, model="m", messages=ASK, tools=TOOLS, **options(server, dialect)
            )
        )
    kinds = [type(i).__name__ for i in items if isinstance(i, rs.models.RUN_ITEM_CLASSES)]
    assert kinds == [
        "StepStart", "StepEnd", "ToolResult", "ToolResult",
        "StepStart", "StepEnd", "ToolResult",
        "StepStart", "StepEnd", "RunEnd",
    ]  # fmt: skip
    end = items[-1]
    assert shape(end.messages) == EXPECTED_SHAPE
    assert end.steps == 3
    assert end.usage == rs.Usage(30, 6, 36)
    assert end.pending == ()
    texts = "".join(i.text for i in items if isinstance(i, rs.TextDelta))
    assert texts == "It is 64.4 F in Paris."


def test_an_async_client_runs_async_and_sync_tools_on_its_loop(server: FakeLLMServer) -> None:
    loops: list[asyncio.AbstractEventLoop] = []

    async def get_weather(city: str) -> dict[str, Any]:
        """The weather in a city."""
        loops.append(asyncio.get_running_loop())
        await asyncio.sleep(0)
        return {"city": city, "temperature_c": 18}

    async def main() -> list[Any]:
        async with httpx.AsyncClient() as client:
            observable = rs.run(
                client,
                "anthropic",
                model="m",
                messages=ASK,
                tools=[get_weather, get_time, to_fahrenheit],
                **options(server, "anthropic"),
            )
            items = [item async for item in rs.to_async_iterator(observable)]
            assert loops == [asyncio.get_running_loop()]
            return items

    items = asyncio.run(main())
    assert shape(items[-1].messages) == EXPECTED_SHAPE


def test_an_async_tool_with_a_sync_client_gets_a_loop_of_its_own(server: FakeLLMServer) -> None:
    async def get_time(city: str) -> str:
        """The local time in a city."""
        await asyncio.sleep(0)
        return f"12:00 in {city}"

    with httpx.Client() as client:
        tools = [get_weather, get_time, to_fahrenheit]
        run = rs.run(
            client, "gemini", model="m", messages=ASK, tools=tools, **options(server, "gemini")
        )
        assert shape(items_of(run)[-1].messages) == EXPECTED_SHAPE


def test_a_tool_error_goes_back_to_the_model_or_ends_the_run(server: FakeLLMServer) -> None:
    def get_time(city: str) -> str:
        """The local time in a city."""
        raise LookupError(f"no clock in {city}")

    tools = [get_weather, get_time, to_fahrenheit]
    with httpx.Client() as client:
        end = items_of(
            rs.run(
                client,
                "openai-chat",
                model="m",
                messages=ASK,
                tools=tools,
                **options(server, "openai-chat"),
            )
        )[-1]
        assert shape(end.messages)[3] == (
            "tool",
            "get_time",
            "Error: LookupError: no clock in Paris",
        )
        with pytest.raises(rs.ToolError) as caught:
            items_of(
                rs.run(
                    client, "openai-chat", model="m", messages=ASK, tools=tools,
                    tool_errors="raise", **options(server, "openai-chat"),
                )
            )  # fmt: skip
    assert caught.value.name == "get_time"
    assert caught.value.call_id == "call_t"
    assert isinstance(caught.value.__cause__, LookupError)
    assert "no clock in Paris" in str(caught.value)


def resumed_elsewhere(state: rs.RunState, port: int, dialect: str) -> rs.RunState:
    """`state` approved and resumed in a new process (`tests/runs/run_resume.py`)."""
    done = subprocess.run(
        [sys.executable, "-m", "tests.runs.run_resume", str(port), dialect, "1"],
        input=state.to_json(), capture_output=True, text=True, timeout=120, check=False,
        cwd=Path(__file__).parents[2],
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return rs.RunState.from_json(done.stdout)


def test_an_approval_stored_as_json_resumes_in_a_new_process(server: FakeLLMServer) -> None:
    dialect = "openai-responses"
    waiting_time = rs.tool(get_time, needs_approval=True)
    tools = [get_weather, waiting_time, to_fahrenheit]
    with httpx.Client() as client:
        first = items_of(
            rs.run(
                client, dialect, model="m", messages=ASK, tools=tools, **options(server, dialect)
            )
        )
        whole = items_of(
            rs.run(
                client, dialect, model="m", messages=ASK, tools=TOOLS, **options(server, dialect)
            )
        )
    assert [type(i).__name__ for i in first[-3:]] == ["StepEnd", "ApprovalRequest", "RunEnd"]
    waiting = first[-1]
    assert waiting.pending == (rs.ApprovalRequest("call_t", "get_time", {"city": "Paris"}),)
    assert len(waiting.messages) == 2  # the question and the turn whose calls wait
    state = rs.RunState.from_json(rs.RunState.of(waiting).to_json())
    assert state == rs.RunState.of(waiting)

    resumed = resumed_elsewhere(state, server.port, dialect)
    assert resumed.messages == whole[-1].messages
    assert resumed.steps == 3
    assert resumed.usage == whole[-1].usage

    denied = resume(state, server.port, dialect, approved=False)
    assert shape(denied.messages)[3] == ("tool", "get_time", "Denied: no")


def test_disposing_a_run_cancels_its_thread_tool(server: FakeLLMServer) -> None:
    started, stopped = threading.Event(), threading.Event()
    seen: list[rs.CancelToken] = []

    def get_time(city: str, cancel: rs.CancelToken) -> str:
        """The local time in a city."""
        seen.append(cancel)
        started.set()
        while not cancel.wait(0.01):
            pass
        stopped.set()
        return "never used"

    tools = [get_weather, get_time, to_fahrenheit]
    with httpx.Client() as client:
        got: list[Any] = []
        run = rs.run(
            client, "cohere", model="m", messages=ASK, tools=tools, **options(server, "cohere")
        )
        subscription = run.subscribe(got.append)
        assert started.wait(10)
        subscription.dispose()
        assert stopped.wait(10)
    assert seen[0].cancelled
    assert not any(isinstance(i, rs.RunEnd) for i in got)
    assert "properties" in rs.tool(get_time).spec.parameters
    assert "cancel" not in rs.tool(get_time).spec.parameters["properties"]


def test_disposing_an_async_run_cancels_its_async_tool(server: FakeLLMServer) -> None:
    async def main() -> bool:
        started, stopped = asyncio.Event(), asyncio.Event()
        outcome: list[str] = []

        async def get_time(city: str) -> str:
            """The local time in a city."""
            started.set()
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                outcome.append("cancelled")
                stopped.set()
                raise
            return "never"

        async with httpx.AsyncClient() as client:
            tools = [get_weather, get_time, to_fahrenheit]
            run = rs.run(
                client, "ollama", model="m", messages=ASK, tools=tools, **options(server, "ollama")
            )
            subscription = run.subscribe(lambda _: None)
            await asyncio.wait_for(started.wait(), 10)
            subscription.dispose()
            await asyncio.wait_for(stopped.wait(), 10)
        return outcome == ["cancelled"]

    assert asyncio.run(main())


def unknown_and_bad(request: RecordedRequest) -> Scenario:
    dialect = route(request.path, request.json) or "openai-chat"
    results = read_asked(dialect, request.path, request.json).results
    if results:
        return Scenario.answer(rs.TextDelta(" | ".join(results)), rs.Finish("stop"))
    return Scenario.answer(
        call(0, "call_u", "get_stock", {"ticker": "X"}),
        call(1, "call_b", "get_weather", {"town": "Paris"}),
        rs.ToolCallDelta(2, '{"city": "Pa', id="call_j", name="get_weather"),
        rs.Finish("tool_calls"),
    )


def test_unknown_tools_and_bad_arguments_go_back_as_errors() -> None:
    with FakeLLMServer(unknown_and_bad) as server, httpx.Client() as client:
        items = items_of(
            rs.run(
                client,
                "openai-chat",
                model="m",
                messages=ASK,
                tools=TOOLS,
                **options(server, "openai-chat"),
            )
        )
    results = [i for i in items if isinstance(i, rs.ToolResult)]
    assert [r.call_id for r in results] == ["call_u", "call_b", "call_j"]
    assert all(r.output is None and r.error for r in results)
    assert re.search(
        r"no tool is named 'get_stock' \(tools: \[.*'get_weather'", results[0].error or ""
    )
    assert "arguments do not fit" in (results[1].error or "")
    assert "town" in (results[1].error or "")
    assert "city" in (results[1].error or "")
    assert "invalid JSON" in (results[2].error or "")
    assert items[-1].messages[-1].content.count("Error: ") == 3


def test_the_calls_of_a_step_really_run_at_once() -> None:
    """Each of two thread tools waits for the other: they pass only if they overlap."""
    both = threading.Barrier(2, timeout=30)

    def get_weather(city: str) -> dict[str, Any]:
        """The weather in a city."""
        both.wait()
        return {"city": city, "temperature_c": 18}

    def get_time(city: str) -> str:
        """The local time in a city."""
        both.wait()
        return f"12:00 in {city}"

    with FakeLLMServer(three_steps) as server, httpx.Client() as client:
        tools = [get_weather, get_time, to_fahrenheit]
        run = rs.run(
            client, "bedrock", model="m", messages=ASK, tools=tools, **options(server, "bedrock")
        )
        assert shape(items_of(run)[-1].messages) == EXPECTED_SHAPE


def test_retry_applies_to_each_step() -> None:
    faults = ["ok", "503", "ok", "503", "ok"]  # the second and third steps fail once each
    with FakeLLMServer(three_steps, faults=faults) as server, httpx.Client() as client:
        retry = rs.Retry(attempts=2, backoff=0.001, jitter=0)
        run = rs.run(
            client,
            "openai-chat",
            model="m",
            messages=ASK,
            tools=TOOLS,
            retry=retry,
            **options(server, "openai-chat"),
        )
        end = items_of(run)[-1]
        assert len(server.requests) == 5
    assert shape(end.messages) == EXPECTED_SHAPE
    assert end.steps == 3


def test_a_runs_items_price_it_step_by_step_even_when_it_fails(server: FakeLLMServer) -> None:
    """`rs.run_cost` reads the items a run emitted: each step with its own model."""
    pytest.importorskip("genai_prices", reason="pip install 'rxstream[prices]'")
    models = iter(["gpt-4o", "gpt-4o-mini", "gpt-4o"])

    def next_model(step: int, messages: object) -> dict[str, Any]:
        return {"model": next(models)}

    with httpx.Client() as client:
        whole = rs.run(
            client, "openai-chat", model="m", messages=ASK, tools=TOOLS, prepare_step=next_model,
            **options(server, "openai-chat"),
        )  # fmt: skip
        items = items_of(whole)
    usage = rs.Usage(10, 2, 12)
    one = rs.cost(usage, model="gpt-4o", dialect="openai-chat")
    two = rs.cost(usage, model="gpt-4o-mini", dialect="openai-chat")
    assert one is not None
    assert two is not None
    assert rs.run_cost(items, dialect="openai-chat") == one + two + one

    # A run whose third tool fails it: the steps that ended are priced.
    def broken(celsius: float) -> float:
        """Convert."""
        raise RuntimeError("no thermometer")

    broken.__name__ = "to_fahrenheit"
    tools = [*TOOLS[:2], broken]
    seen: list[Any] = []
    models = iter(["gpt-4o", "gpt-4o-mini", "gpt-4o"])
    with httpx.Client() as client:
        failing = rs.run(
            client, "openai-chat", model="m", messages=ASK, tools=tools, prepare_step=next_model,
            tool_errors="raise", **options(server, "openai-chat"),
        )  # fmt: skip
        with pytest.raises(rs.ToolError):
            failing.pipe(ops.do_action(seen.append)).run()
    assert [type(i).__name__ for i in seen if isinstance(i, (rs.StepStart, rs.StepEnd))] == [
        "StepStart", "StepEnd", "StepStart", "StepEnd",
    ]  # fmt: skip
    assert rs.run_cost(seen, dialect="openai-chat") == one + two

"""`rs.run` against `RunScript` on a real socket: what the run sent back at each step, in every
dialect; the run's own items rendered for the UI and in rxstream's format; a run waiting for
approval stored in Redis, read back and resumed to the end an uninterrupted run reaches."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import reactivex

import rxstream as rs
from rxstream.core import wire
from rxstream.core.dialects import DIALECTS
from rxstream.core.dialects.ai_sdk import AISDKRenderer
from rxstream.testing import FakeLLMServer, RunScript, ScriptCall, tool_results
from rxstream.testing.redis_server import RedisServer
from tests.support.redis import client as redis_client
from tests.support.redis import follow, produce
from tests.support.run_items import as_the_ui_stream_carries


def get_weather(city: str) -> dict[str, Any]:
    """The weather in a city."""
    return {"city": city, "temp_c": 18}


def get_time(zone: str) -> str:
    """The time in a zone."""
    return f"14:05 {zone}"


def to_fahrenheit(celsius: float) -> float:
    """Celsius to Fahrenheit."""
    return celsius * 9 / 5 + 32


TOOLS = [get_weather, get_time, to_fahrenheit]
ASK = [{"role": "user", "content": "Weather and time in Paris, in Fahrenheit?"}]


def script() -> RunScript:
    return RunScript(
        [ScriptCall("get_weather", {"city": "Paris"}), ScriptCall("get_time", {"zone": "CET"})],
        lambda seen: [ScriptCall("to_fahrenheit", {"celsius": seen["get_weather"]["temp_c"]})],
        lambda seen: f"{seen['to_fahrenheit']} F at {seen['get_time']}",
    )


@pytest.fixture(scope="module")
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(script()) as fake:
        yield fake


def options(server: FakeLLMServer, dialect: str) -> dict[str, Any]:
    root = f"http://127.0.0.1:{server.port}"
    url = f"{root}/v1" if dialect.startswith("openai") else root
    return {"base_url": url, "api_key": "k", "max_tokens": 100}


def whole(run: reactivex.Observable[Any]) -> list[Any]:
    return list(rs.to_iterator(run))


@pytest.mark.parametrize("dialect", DIALECTS)
def test_rs_run_sends_each_steps_results_back_in_every_dialect(
    server: FakeLLMServer, dialect: str
) -> None:
    before = len(server.requests)
    with httpx.Client() as client:
        run = rs.run(
            client, dialect, model="m", messages=ASK, tools=TOOLS, **options(server, dialect)
        )
        items = whole(run)
    end = items[-1]
    assert isinstance(end, rs.RunEnd)
    assert end.steps == 3
    assert end.messages[-1].content == "64.4 F at 14:05 CET"

    requests = server.requests[before:]
    sent = [[(r.name, r.output) for r in tool_results(request)] for request in requests]
    # Step 1's results went back in call order, whichever tool finished first.
    step_one = [("get_weather", {"city": "Paris", "temp_c": 18}), ("get_time", "14:05 CET")]
    assert sent == [[], step_one, [*step_one, ("to_fahrenheit", 64.4)]]

    # The run's own items, exactly, through rxstream's format.
    assert [wire.decode(json.loads(json.dumps(wire.encode(i)))) for i in items] == items
    # And as one UI message of three steps.
    renderer = AISDKRenderer(id="msg-1")
    frames = [f for item in items for f in renderer.feed(item)] + renderer.close()
    kinds = [json.loads(f.data)["type"] for f in frames if f.data != "[DONE]"]
    assert kinds.count("start-step") == kinds.count("finish-step") == 3
    assert kinds.count("tool-input-available") == kinds.count("tool-output-available") == 3
    assert kinds[0] == "start"
    assert kinds[-1] == "finish"
    # Which a Python client reads back as the run's items.
    read = list(
        rs.to_iterator(reactivex.from_iterable(frames).pipe(rs.decode("ai-sdk", runs=True)))
    )
    assert as_the_ui_stream_carries(read) == as_the_ui_stream_carries(items)


def turns(messages: tuple[Any, ...]) -> list[Any]:
    return [
        (m.content, m.tool_calls, m.finish_reason) if isinstance(m, rs.Message) else m
        for m in messages
    ]


def needs_a_person(city: str) -> dict[str, Any]:
    """The weather in a city (a person approves each look)."""
    return get_weather(city)


def test_a_waiting_run_stored_in_redis_resumes_to_the_uninterrupted_end(
    server: FakeLLMServer, redis_server: RedisServer
) -> None:
    dialect = "anthropic"
    guarded = [
        rs.tool(needs_a_person, rs.Tool("get_weather"), needs_approval=True),
        get_time,
        to_fahrenheit,
    ]
    r = redis_client(redis_server)
    with httpx.Client() as client:
        plain = whole(
            rs.run(
                client, dialect, model="m", messages=ASK, tools=TOOLS, **options(server, dialect)
            )
        )
        first = rs.run(
            client, dialect, model="m", messages=ASK, tools=guarded, **options(server, dialect)
        )
        produce(r, "run:waiting", whole(first))
        # Another process (here: the same one, from Redis alone) reads the run back.
        stored = follow(r, "run:waiting").items
        waiting = stored[-1]
        assert isinstance(waiting, rs.RunEnd)
        assert [p.name for p in waiting.pending] == ["get_weather"]
        decision = rs.ApprovalResponse(waiting.pending[0].call_id, approved=True)
        resumed = whole(
            rs.run(
                client,
                dialect,
                model="m",
                tools=guarded,
                resume=rs.RunState.of(waiting),
                decisions=[decision],
                **options(server, dialect),
            )
        )
    final = resumed[-1]
    assert isinstance(final, rs.RunEnd)
    assert resumed[0] == decision
    # The same conversation (the usage differs: the scripted usage counts the request's bytes,
    # and the guarded tool's description is its own).
    assert turns(final.messages) == turns(plain[-1].messages)
    assert final.steps == plain[-1].steps == 3


@pytest.mark.parametrize("dialect", ["anthropic", "openai-responses"])
def test_a_waiting_run_in_redis_survives_its_process_and_resumes_in_another(
    server: FakeLLMServer, redis_server: RedisServer, dialect: str
) -> None:
    """The process that ran up to the approval is killed; a new one resumes from Redis alone."""
    key = f"run:killed:{dialect}"
    where = [str(server.port), str(redis_server.port), key, dialect]
    command = [sys.executable, "-m", "tests.runs.run_redis_process"]
    root = Path(__file__).resolve().parents[2]
    with subprocess.Popen([*command, "store", *where], cwd=root, stdout=subprocess.PIPE) as first:
        try:
            assert first.stdout is not None
            assert first.stdout.readline().strip() == b"stored"
        finally:
            first.kill()  # SIGKILL: no clean-up of its own
    done = subprocess.run(
        [*command, "resume", *where], cwd=root, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    final = rs.RunState.from_json(done.stdout)
    with httpx.Client() as client:
        plain = whole(
            rs.run(
                client, dialect, model="m", messages=ASK, tools=TOOLS, **options(server, dialect)
            )
        )
    assert turns(final.messages) == turns(plain[-1].messages)
    assert final.steps == plain[-1].steps == 3
    assert final.pending == ()

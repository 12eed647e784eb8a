"""The two processes of the Redis approval test: one runs until the approval and is killed, the
other resumes from Redis alone.

`python -m tests.runs.run_redis_process store PORT REDIS_PORT KEY DIALECT` runs the guarded run
against the fake server on PORT, writing every item to the Redis stream KEY
(`rs.to_redis_stream`), prints `stored` once the stream has ended, and waits to be killed.
`python -m tests.runs.run_redis_process resume PORT REDIS_PORT KEY DIALECT` reads the run back
from Redis (`rs.from_redis_stream`), approves the waiting call, runs it to its end and prints
the final `rs.RunState` as JSON.
"""

from __future__ import annotations

import sys
import time
from typing import Any

import httpx
import redis

import rxstream as rs

ASK = [{"role": "user", "content": "Weather and time in Paris, in Fahrenheit?"}]


def get_weather(city: str) -> dict[str, Any]:
    """The weather in a city."""
    return {"city": city, "temp_c": 18}


def get_time(zone: str) -> str:
    """The time in a zone."""
    return f"14:05 {zone}"


def to_fahrenheit(celsius: float) -> float:
    """Celsius to Fahrenheit."""
    return celsius * 9 / 5 + 32


GUARDED = [rs.tool(get_weather, needs_approval=True), get_time, to_fahrenheit]


def options(port: int, dialect: str) -> dict[str, Any]:
    root = f"http://127.0.0.1:{port}"
    url = f"{root}/v1" if dialect.startswith("openai") else root
    return {"base_url": url, "api_key": "k", "max_tokens": 100}


def store(port: int, r: redis.Redis, key: str, dialect: str) -> None:
    with httpx.Client() as client:
        run = rs.run(
            client, dialect, model="m", messages=ASK, tools=GUARDED, **options(port, dialect)
        )
        for _ in rs.to_iterator(run.pipe(rs.to_redis_stream(r, key))):
            pass
    print("stored", flush=True)
    while True:  # until killed: nothing of this process is left for the resume
        time.sleep(60)


def resume(port: int, r: redis.Redis, key: str, dialect: str) -> rs.RunState:
    stored = list(rs.to_iterator(rs.from_redis_stream(r, key)))
    waiting = stored[-1]
    assert isinstance(waiting, rs.RunEnd), waiting
    decision = rs.ApprovalResponse(waiting.pending[0].call_id, approved=True)
    with httpx.Client() as client:
        run = rs.run(
            client,
            dialect,
            model="m",
            tools=GUARDED,
            resume=rs.RunState.of(waiting),
            decisions=[decision],
            **options(port, dialect),
        )
        final = list(rs.to_iterator(run))[-1]
    assert isinstance(final, rs.RunEnd), final
    return rs.RunState.of(final)


if __name__ == "__main__":
    mode, port, redis_port, key, dialect = sys.argv[1:6]
    client = redis.Redis(host="127.0.0.1", port=int(redis_port))
    if mode == "store":
        store(int(port), client, key, dialect)
    else:
        print(resume(int(port), client, key, dialect).to_json())

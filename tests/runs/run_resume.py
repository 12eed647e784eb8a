"""The resuming process of the approval test: reads a `rs.RunState` on stdin, resumes it.

Run as `python -m tests.runs.run_resume PORT DIALECT APPROVED`: the waiting call gets the
decision (`APPROVED` is `1` or `0`), the run goes on against the fake server on `PORT`,
and the final state is printed as JSON. The tools are the test's own (`TOOLS`).
"""

from __future__ import annotations

import sys
from typing import Any

import httpx

import rxstream as rs


def get_weather(city: str) -> dict[str, Any]:
    """The weather in a city."""
    return {"city": city, "temperature_c": 18}


def get_time(city: str) -> str:
    """The local time in a city."""
    return f"12:00 in {city}"


def to_fahrenheit(celsius: float) -> float:
    """Celsius to Fahrenheit."""
    return celsius * 9 / 5 + 32


TOOLS = [get_weather, get_time, to_fahrenheit]


def options_for(port: int, dialect: str) -> dict[str, Any]:
    """The fake server's address for a dialect, and the rest of a step's options."""
    root = f"http://127.0.0.1:{port}"
    url = f"{root}/v1" if dialect.startswith("openai") else root
    return {"base_url": url, "api_key": "k", "max_tokens": 100}


def resume(state: rs.RunState, port: int, dialect: str, *, approved: bool) -> rs.RunState:
    """The run of `state` carried on with a decision on its first waiting call."""
    decision = rs.ApprovalResponse(state.pending[0].call_id, approved=approved, reason="no")
    with httpx.Client() as client:
        run = rs.run(
            client,
            dialect,
            model="m",
            tools=TOOLS,
            resume=state,
            decisions=[decision],
            **options_for(port, dialect),
        )
        items = list(rs.to_iterator(run))
    final = items[-1]
    assert isinstance(final, rs.RunEnd), final
    return rs.RunState.of(final)


if __name__ == "__main__":
    port, dialect, approved = int(sys.argv[1]), sys.argv[2], sys.argv[3] == "1"
    print(
        resume(rs.RunState.from_json(sys.stdin.read()), port, dialect, approved=approved).to_json()
    )

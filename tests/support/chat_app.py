"""The example chat app (examples/fastapi_chat) from its client's side: start a chat, read it.

`ANSWER` is the scripted model's answer and `EXPECTED` what the app stores for it (the deltas,
then the `Metadata` of its one attempt, built by `attempts`); `start` POSTs a chat, `read` GETs
its events on a fresh connection, `read_on_another_worker` reconnects until the other worker
serves. Import it only where fastapi is installed (the example's app needs it).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from unittest import mock

import httpx

import rxstream as rs
from examples.fastapi_chat.provider import fake_answer
from rxstream.cli._apis import APIS
from rxstream.models import StreamEntry
from tests.support.launch import App

PACE = 0.02
ANSWER = fake_answer(PACE)


def attempts(*records: tuple[str, str | None, Any]) -> rs.Metadata:
    """The `Metadata` a run ends with: one record per (dialect, error type, usage or ANY)."""
    return rs.Metadata(
        {
            "attempts": [
                {
                    "route": {"dialect": dialect, "model": APIS[dialect].default_model},
                    "error": mock.ANY if error else None,
                    "error_type": error,
                    "wait": mock.ANY,
                    "usage": _usage_record(usage) if isinstance(usage, rs.Usage) else usage,
                }
                for dialect, error, usage in records
            ]
        }
    )


def _usage_record(usage: rs.Usage) -> dict[str, int | None]:
    names = ("prompt_tokens", "completion_tokens", "total_tokens", "reasoning_tokens")
    cached = {"cached_tokens": usage.cached_tokens, "cache_write_tokens": usage.cache_write_tokens}
    return {**{n: getattr(usage, n) for n in names}, **cached}


DELTAS = ANSWER.deltas()
USAGE = next(d for d in DELTAS if isinstance(d, rs.Usage))
#: What the app stores: the answer, then the record of its one attempt.
EXPECTED = [*DELTAS, attempts(("openai-chat", None, USAGE))]


@dataclass
class Read:
    """What one GET of the events gave: the worker that served it, the entries, the end."""

    worker: int
    entries: list[StreamEntry]
    complete: bool
    status: int = 200


def start(app: App, prompt: str = "What's the weather in Lisbon?") -> tuple[str, int]:
    """POST /chat: (the chat id, the worker that runs the generation)."""
    answer = httpx.post(f"{app.url}/chat", json={"prompt": prompt}, timeout=10)
    assert answer.status_code == 201, answer.text
    assert answer.headers["location"] == f"/chat/{answer.json()['id']}"
    return answer.json()["id"], int(answer.headers["x-worker-pid"])


def read(
    app: App,
    chat_id: str,
    *,
    last_event_id: str | None = None,
    after: str | None = None,
    stop_after: int | None = None,
    accept: Callable[[int], bool] = lambda worker: True,
) -> Read | None:
    """GET the events on a fresh connection; leave after `stop_after` items.

    Returns None, having read nothing, when `accept(worker)` is false.
    """
    headers = {"Last-Event-ID": last_event_id} if last_event_id else {}
    params = {"after": after} if after else {}
    url = f"{app.url}/chat/{chat_id}/events"
    with (
        httpx.Client(timeout=30) as client,
        client.stream("GET", url, headers=headers, params=params) as response,
    ):
        worker = int(response.headers["x-worker-pid"])
        if response.status_code != 200:
            response.read()
            return Read(worker, [], False, response.status_code)
        if not accept(worker):
            return None
        entries: list[StreamEntry] = []
        events = rs.from_response(response).pipe(rs.sse_frames(), rs.decode("rxstream", ids=True))
        with rs.to_iterator(events) as iterator:
            for entry in iterator:
                entries.append(entry)
                if stop_after is not None and len(entries) >= stop_after:
                    return Read(worker, entries, False)
        return Read(worker, entries, True)


def read_on_another_worker(app: App, chat_id: str, worker: int, **options: Any) -> Read:
    """Reconnect until a worker other than `worker` takes the connection (bounded)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        result = read(app, chat_id, accept=lambda w: w != worker, **options)
        if result is not None:
            return result
    raise AssertionError(f"every reconnect in 30 s landed on worker {worker}")

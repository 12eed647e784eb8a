"""Shared helpers for the source tests: run an observable to its end, sync or async."""

from __future__ import annotations

import asyncio
import socket
import threading
from dataclasses import dataclass, field
from typing import Any

from reactivex import Observable

#: The bound on every wait in these tests; a healthy run is far quicker.
TIMEOUT = 5.0


@dataclass
class Outcome:
    """What an observer saw."""

    items: list[Any] = field(default_factory=list)
    error: BaseException | None = None
    completed: bool = False
    ended: threading.Event = field(default_factory=threading.Event)

    def on_next(self, item: Any) -> None:
        self.items.append(item)

    def on_error(self, error: BaseException) -> None:
        self.error = error
        self.ended.set()

    def on_completed(self) -> None:
        self.completed = True
        self.ended.set()


def run(observable: Observable[Any]) -> Outcome:
    """Subscribe on the current thread (a sync source ends before subscribe returns)."""
    outcome = Outcome()
    observable.subscribe(outcome.on_next, outcome.on_error, outcome.on_completed)
    assert outcome.ended.is_set(), "a sync source on the default scheduler must end in subscribe"
    return outcome


async def arun(observable: Observable[Any]) -> Outcome:
    """Subscribe inside the running loop and wait (bounded) for the end."""
    outcome = Outcome()
    done = asyncio.Event()

    def end(_: object = None) -> None:
        done.set()

    def on_error(error: Exception) -> None:
        outcome.on_error(error)
        end()

    def on_completed() -> None:
        outcome.on_completed()
        end()

    observable.subscribe(outcome.on_next, on_error, on_completed)
    await asyncio.wait_for(done.wait(), TIMEOUT)
    return outcome


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])

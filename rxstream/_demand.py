"""The demand signal between an async bridge and an async source.

Rx's `on_next` cannot wait, so an async source cannot learn through the
observer that its consumer is behind. Instead, `to_async_iterator` opens a
`demand_scope` around its `subscribe` call; an async source captures
`current_demand()` while it is being subscribed (inside that scope) and awaits
`Demand.wait()` before each read. The bridge pauses the demand when its buffer
is full and resumes it as the consumer pulls, so the socket is not read ahead
of the consumer. Without a bridge there is no demand object and a source reads
as fast as its observers accept.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = ["Demand", "current_demand", "demand_scope"]


class Demand:
    """A gate an async source awaits before each read; open until paused."""

    def __init__(self) -> None:
        self._open = asyncio.Event()
        self._open.set()

    def pause(self) -> None:
        """Close the gate: the source stops before its next read."""
        self._open.clear()

    def resume(self) -> None:
        """Open the gate: a waiting source reads on."""
        self._open.set()

    @property
    def paused(self) -> bool:
        return not self._open.is_set()

    async def wait(self) -> None:
        """Return at once when open, else when the gate is resumed."""
        if not self._open.is_set():
            await self._open.wait()


_current: ContextVar[Demand | None] = ContextVar("rxstream_demand", default=None)


def current_demand() -> Demand | None:
    """The demand of the bridge subscribing right now, if any."""
    return _current.get()


@contextmanager
def demand_scope(demand: Demand) -> Iterator[Demand]:
    """Make `demand` visible to the sources subscribed inside this block."""
    token = _current.set(demand)
    try:
        yield demand
    finally:
        _current.reset(token)

"""Flow control: the demand signal between a bounded consumer and an async source.

Rx's `on_next` cannot wait, so an async source cannot learn through the
observer that its consumer is behind. The demand signal is how it learns:

- a consumer with a bounded buffer (`to_async_iterator`, a `multicast` hub
  with a `"block"` observer) makes a `Demand` and subscribes to its source
  inside `demand_scope(demand)`;
- an rxstream async source captures `current_demand()` while it is being
  subscribed (inside that scope) and awaits `Demand.wait()` before each read
  and each item, so the socket is never read ahead of the consumer;
- the consumer calls `pause()` when its buffer is full and `resume()` as it
  drains; `timeouts(idle=...)` reads `paused` so a consumer's pause is not
  taken for a stalled server.

Without a consumer that makes a demand there is none (`current_demand()` is
None) and a source reads as fast as its observers accept. Sync sources need
no signal: their thread blocks in `on_next` while a bounded consumer is full.

Limits (what loses the signal; the source then reads at full speed, and the
consumer's buffer bound still holds only for what it buffers itself):

- the demand travels in a context variable at subscribe time: an operator
  that subscribes to its source later, outside the scope (`retry`, `repeat`,
  the later sources of `concat`, `delay_subscription`), or on another thread
  (`subscribe_on`), hands that source no demand;
- an operator between source and consumer that buffers on its own
  (`observe_on`, `buffer_with_time`) hides the consumer's pace from the
  source: the demand pauses the source only when the consumer itself is full;
- the gate is an `asyncio.Event`: `pause`, `resume` and `wait` belong on the
  event loop's thread (consumers on other threads hand their calls to the
  loop with `call_soon_threadsafe`).

Stdlib only, like models and errors: every layer above may use it.
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
        """True while the consumer wants nothing more."""
        return not self._open.is_set()

    async def wait(self) -> None:
        """Return at once when open, else when the gate is resumed."""
        if not self._open.is_set():
            await self._open.wait()


_current: ContextVar[Demand | None] = ContextVar("rxstream_demand", default=None)


def current_demand() -> Demand | None:
    """The demand of the consumer subscribing right now, if any."""
    return _current.get()


@contextmanager
def demand_scope(demand: Demand) -> Iterator[Demand]:
    """Make `demand` visible to the sources subscribed inside this block."""
    token = _current.set(demand)
    try:
        yield demand
    finally:
        _current.reset(token)

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
  drains (several consumers of one source each `hold(key)` and `release(key)`:
  the gate is open while nobody holds it); `timeouts(idle=...)` reads `paused`
  so a consumer's pause is not taken for a stalled server.

A consumer that writes what it receives (a server's response) may also lend
the source its writer (`lend(write, loop)`): an rxstream async source on that
loop then sets `batching` while it emits one read's worth of items and awaits
`write()` after it, in its own task, so the consumer needs no task of its own
woken per read. The consumer still writes by itself what arrives any other
way (outside a batch, or from a source on another loop).

Without a consumer that makes a demand there is none (`current_demand()` is
None) and a source reads as fast as its observers accept. Sync sources need
no signal: their thread blocks in `on_next` while a bounded consumer is full.

Threads: the gate is an `asyncio.Event` of the loop the source runs on, and
only that loop's thread touches it. `pause`, `resume`, `hold`, `release` and
`reset` may be called from any thread: off the loop's thread they are handed
to the loop (in order, with `call_soon_threadsafe`), so they take effect a
moment later; `paused` then tells the state the loop last saw.

Limits (what loses the signal; the source then reads at full speed, and the
consumer's buffer bound still holds only for what it buffers itself):

- the demand travels in a context variable at subscribe time: an operator
  that subscribes to its source later, outside the scope (`retry`, `repeat`,
  the later sources of `concat`, `delay_subscription`), or on another thread
  (`subscribe_on`), hands that source no demand;
- an operator between source and consumer that buffers on its own
  (`observe_on`, `buffer_with_time`) hides the consumer's pace from the
  source: the demand pauses the source only when the consumer itself is full;
- one `Demand` serves one event loop (the first one that uses it).

Stdlib only, like models and errors: every layer above may use it.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = ["Demand", "current_demand", "demand_scope"]


class Demand:
    """A gate an async source awaits before each read: open while no consumer holds it.

    Example:
        >>> demand = Demand()
        >>> demand.pause(); demand.paused
        True
        >>> demand.resume(); demand.paused
        False
    """

    def __init__(self) -> None:
        self._open = asyncio.Event()
        self._open.set()
        self._holders: set[object] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None
        self._writer: Callable[[], Awaitable[None]] | None = None
        self._writer_loop: asyncio.AbstractEventLoop | None = None
        #: True while a source emits a batch after which it awaits the lent writer.
        self.batching = False

    @property
    def paused(self) -> bool:
        """True while a consumer wants nothing more."""
        return bool(self._holders)

    def pause(self) -> None:
        """Close the gate: the source stops before its next read (one consumer's `hold`)."""
        self.hold(self)

    def resume(self) -> None:
        """Open the gate again (that consumer's `release`): a waiting source reads on."""
        self.release(self)

    def hold(self, holder: object) -> None:
        """Keep the gate closed on behalf of `holder` (one of several consumers)."""
        self._on_loop(self._hold, holder)

    def release(self, holder: object) -> None:
        """`holder` wants more: the gate opens when no other holder keeps it closed."""
        self._on_loop(self._release, holder)

    def reset(self) -> None:
        """Open the gate whoever holds it (the consumers are gone: a waiting source ends)."""
        self._on_loop(self._reset)

    def lend(self, write: Callable[[], Awaitable[None]], loop: asyncio.AbstractEventLoop) -> None:
        """Let a source on `loop` run `write()` in its own task after each batch it emits."""
        self._writer = write
        self._writer_loop = loop

    def writer_for(self, loop: asyncio.AbstractEventLoop) -> Callable[[], Awaitable[None]] | None:
        """The writer lent to sources on `loop` (None: none, or lent to another loop)."""
        return self._writer if self._writer_loop is loop else None

    async def wait(self) -> None:
        """Return at once when open, else when the last holder lets go."""
        if self._loop is None:
            self._bind(asyncio.get_running_loop())
        while not self._open.is_set():
            await self._open.wait()

    # ----------------------------------------------------------------- on the loop

    def _hold(self, holder: object) -> None:
        self._holders.add(holder)
        self._open.clear()

    def _release(self, holder: object) -> None:
        self._holders.discard(holder)
        if not self._holders:
            self._open.set()

    def _reset(self) -> None:
        self._holders.clear()
        self._open.set()

    def _bind(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._loop_thread = threading.get_ident()

    def _on_loop(self, call: Callable[..., None], *args: object) -> None:
        loop = self._loop
        if loop is None:
            with contextlib.suppress(RuntimeError):
                self._bind(asyncio.get_running_loop())
            call(*args)  # no loop waits on the gate yet (or this is its thread)
        elif threading.get_ident() == self._loop_thread or loop.is_closed():
            call(*args)
        else:
            # A loop that closed meanwhile raises: nobody waits any more.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(call, *args)


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

"""Chaining machines into one, and fusing the adjacent ones that know a shortcut.

The operator plumbing (`rxstream.operators`) hands the machines of a run of
adjacent machine operators to `chain()`, which gives back one machine
(`Chained`, nested) with the whole contract (`feed_all`, `done`, `close`).
With the fast paths on (`rxstream._fast`, the switch), `chain()` first asks
each pair of neighbours, once, before any input, whether they fuse. This
module names no machine: each machine declares what it can do, and the rules
below read those declarations.

**Handing over.** A parser hands each frame on in one of the modes of
`Handoff`, one documented item type per mode: it declares the modes it can
hand on (`hands`), and, before any input, whether it still may switch
(`_can_hand(mode)`) and the switch (`_hand(mode)`); a decoder declares the
mode it would rather take (`takes`) and switches to it with `_take(mode)`
(False once it was fed). Where the parser hands on what the decoder takes,
they switch, and each frame goes over without the `SSEFrame` (or
`EventStreamMessage`) being built.

**Left out.** A decoder that gives deltas only (`gives_deltas_only`) in front
of a machine that, while nothing was fed, passes deltas on as they are
(`_passes_deltas()`: the `DeltaDecoder` the delta operators put in front of
their machine for chunk input) has that machine left out.

**The machine's own.** Any other shortcut is the machines': the upper one's
`_fuse_below(lower)` (the chat chunk decoder giving the deltas of its chunks
to the machines below it), then the lower one's `_fuse_above(upper)` (the
token counter taking chunks through its own delta decoder). Each returns the
machine standing for the pair, or None.

A new shortcut is declared on the machines it joins; nothing here changes.
The rule that applies to a pair of machine types is looked up once per pair
of types, so fusing costs a stream a few dictionary lookups.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
from functools import cache
from typing import Any

from .._fast import enabled
from ._machine import Feeder

__all__ = [
    "Chained",
    "Handoff",
    "behind_deltas",
    "chain",
    "fuse",
    "fuse_pair",
    "last_machine",
    "takes",
]


class Handoff(enum.Enum):
    """How a parser hands each frame to the decoder below it: one item type per mode.

    The mode is set once, when the two are fused, before any input; a decoder
    that takes a mode other than `FRAMES` (its `takes`) reads the one item
    type that mode names, plus the whole frame where the mode says so.
    """

    #: Each frame whole: an `SSEFrame` (an `EventStreamMessage` from the
    #: event-stream parser). What every parser gives unfused.
    FRAMES = "frames"
    #: The data of a `"message"` frame as a bare `str`; any other frame, and
    #: the last one no blank line ended (its data `Unterminated`), whole as an
    #: `SSEFrame`. For decoders that read nothing of a `"message"` frame but its
    #: data (openai-chat, Gemini, `decode()`'s detection).
    STRINGS = "strings"
    #: Each frame as an `(event, data)` tuple of two `str`; the last one no blank
    #: line ended whole, as an `SSEFrame` (so its `Unterminated` mark arrives).
    #: For decoders that read nothing of a frame but those two (anthropic,
    #: openai-responses, cohere).
    PAIRS = "pairs"
    #: Each event-stream message as a `(headers, payload)` tuple: the headers
    #: dict (the same dict for a header block seen before; never changed) and
    #: the payload `bytes`. For the Bedrock decoder.
    MESSAGE_PAIRS = "message pairs"


def takes(machine: Any, mode: Handoff) -> bool:
    """Whether `machine` takes the items of `mode` from now on (switched if it could be).

    For a decoder picked behind a parser that already hands `mode` on (what
    `decode()` picks by detection): False when it takes another mode or was fed.
    """
    if getattr(type(machine), "takes", Handoff.FRAMES) is not mode:
        return False
    taken: bool = machine._take(mode)
    return taken


# --------------------------------------------------------------------------- chaining


class Chained:
    """Two machines as one: what the upper one gives goes straight into the lower one.

    It gives what the two give in a row, errors and `done` included: the lower
    one gets the upper one's output (also what came before an error); when
    the upper one is done, the lower one is closed at once; when the lower one
    is done, so is the pair. `close_into(out)` is `close()` that keeps what
    came out before an error, as `feed_all` does.

    >>> from rxstream.core import LineSplitter, SSEParser
    >>> pair = Chained(LineSplitter(), SSEParser())
    >>> [frame.data for frame in pair.feed("data: hi\\n\\n")]
    ['hi']
    """

    __slots__ = ("_lower", "_lower_closed", "_upper")

    def __init__(self, upper: Feeder[Any, Any], lower: Feeder[Any, Any]) -> None:
        self._upper: Any = _batched(upper)
        self._lower: Any = _batched(lower)
        self._lower_closed = False

    @property
    def parts(self) -> tuple[Any, Any]:
        """The upper machine and the lower one."""
        return self._upper, self._lower

    @property
    def done(self) -> bool:
        """True once either machine is done."""
        return bool(self._upper.done or self._lower.done)

    def feed(self, item: Any) -> list[Any]:
        """Feed one item through both machines."""
        out: list[Any] = []
        self.feed_all((item,), out)
        return out

    def feed_all(self, items: Iterable[Any], out: list[Any]) -> None:
        """Feed many items through both machines."""
        middle: list[Any] = []
        try:
            self._upper.feed_all(items, middle)
        except Exception:
            if middle:
                self._lower.feed_all(middle, out)
                if self._lower.done:
                    return  # the lower one ended the stream before the error mattered
            raise
        if middle:
            self._lower.feed_all(middle, out)
        if self._upper.done and not self._lower_closed:
            self._close_lower(out)

    def close(self) -> list[Any]:
        """Close the upper machine, then the lower one (unless it is done or closed)."""
        out: list[Any] = []
        self.close_into(out)
        return out

    def close_into(self, out: list[Any]) -> None:
        """`close()`, appending to `out` (which keeps what came before an error)."""
        if self._lower_closed:
            # The upper machine was done, and the lower one closed then.
            self._upper.close()
            return
        middle = list(self._upper.close())
        if middle:
            self._lower.feed_all(middle, out)
            if self._lower.done:
                return
        if not self._lower_closed:
            self._close_lower(out)

    def _close_lower(self, out: list[Any]) -> None:
        self._lower_closed = True
        lower = self._lower
        if type(lower) is Chained:
            lower.close_into(out)
        else:
            out += lower.close()


class _Batch:
    """A `Feeder` given what it lacks of the whole contract: `feed_all` and `done`."""

    __slots__ = ("_machine", "close", "feed_all")

    def __init__(self, machine: Feeder[Any, Any]) -> None:
        self._machine = machine
        self.close = machine.close
        feed_all = getattr(machine, "feed_all", None)
        self.feed_all: Callable[[Iterable[Any], list[Any]], None] = feed_all or self._feed_each

    @property
    def done(self) -> bool:
        return bool(getattr(self._machine, "done", False))

    def _feed_each(self, items: Iterable[Any], out: list[Any]) -> None:
        feed = self._machine.feed
        for item in items:
            out += feed(item)


class _Each:
    """A machine fed one item at a time through its own `feed` (the fast paths off).

    What a plain `for` loop over the machine does: `feed` per item, stopping
    once `done`; an error leaves in `out` what the items before it gave.
    (`EventStreamParser.feed` reports a broken message on the next `feed` or
    at `close()`, so there the error comes one read later, after the same
    messages.)
    """

    __slots__ = ("_machine", "close")

    def __init__(self, machine: Feeder[Any, Any]) -> None:
        self._machine = machine
        self.close = machine.close

    @property
    def done(self) -> bool:
        return bool(getattr(self._machine, "done", False))

    def feed_all(self, items: Iterable[Any], out: list[Any]) -> None:
        machine = self._machine
        for item in items:
            out += machine.feed(item)
            if getattr(machine, "done", False):
                break


def _batched(machine: Feeder[Any, Any]) -> Any:
    """The machine as chaining runs it: itself when it has the whole contract, else adapted."""
    if type(machine) in (Chained, _Each, _Batch):
        return machine
    if not enabled():
        return _Each(machine)
    if hasattr(type(machine), "feed_all") and hasattr(type(machine), "done"):
        return machine
    return _Batch(machine)


def chain(machines: list[Feeder[Any, Any]]) -> Any:
    """The machines, first to last, as one (`Chained`, nested), fused where the fast paths allow.

    What the operator plumbing runs: `feed_all`, `done` and `close` (for a
    `Chained`, `close_into`) on the result give what the machines give in a
    row.
    """
    run = fuse(machines)
    whole = _batched(run[-1])
    for machine in reversed(run[:-1]):
        whole = Chained(machine, whole)
    return whole


# --------------------------------------------------------------------------- inspection


def last_machine(whole: Any) -> object:
    """The last machine of the chain `whole` (from `chain`), as it was built (not adapted)."""
    while isinstance(whole, Chained):
        whole = whole._lower
    return whole._machine if type(whole) in (_Each, _Batch) else whole


def _passes_deltas(machine: object) -> bool:
    """Whether `machine` passes deltas on as they are and may be left out (see the top)."""
    passes: Callable[[], bool] | None = getattr(machine, "_passes_deltas", None)
    return passes is not None and passes()


def behind_deltas(machines: list[Feeder[Any, Any]]) -> list[Feeder[Any, Any]]:
    """The machines of a run fed by a source of deltas only (`DeltaSource`): the
    machine in front of the first one that passes deltas on as they are (the
    `DeltaDecoder` of the delta operators) left out, as behind a decoder that
    gives deltas only. None left out with the fast paths off.
    """
    if not enabled() or not machines:
        return machines
    first = machines[0]
    if _passes_deltas(first):
        return machines[1:] or machines
    if type(first) is Chained:
        upper, lower = first.parts
        if _passes_deltas(upper):
            return [lower, *machines[1:]]
    return machines


# --------------------------------------------------------------------------- fusion


def fuse(machines: list[Feeder[Any, Any]]) -> list[Feeder[Any, Any]]:
    """Merge each machine with the one below it where a pair knows a shortcut (none when off).

    Asked once, before any input. Returns the run of machines to chain, the
    same length or shorter.
    """
    machines = list(machines)
    if not enabled():
        return machines
    k = 0
    while k < len(machines) - 1:
        merged = fuse_pair(machines[k], machines[k + 1])
        if merged is None:
            k += 1
        else:
            machines[k : k + 2] = [merged]
    return machines


def fuse_pair(upper: object, lower: object) -> Any:
    """The machine standing for `upper` feeding `lower`, or None when no shortcut applies."""
    if type(upper) is Chained:
        # The pair's lower machine may take the machine below the pair as its own.
        merged = fuse_pair(upper._lower, lower)
        if merged is None:
            return None
        upper._lower = merged
        return upper
    types_: tuple[Any, Any] = (type(upper), type(lower))  # (no Hashable to mypy as type[object])
    how = _rule(*types_)
    return None if how is None else how(upper, lower)


@cache
def _rule(upper: type, lower: type) -> Callable[[Any, Any], Any] | None:
    """The rule that fuses a machine of type `upper` feeding one of type `lower`, or None.

    Read from what the two types declare (see the top), once per pair of types.
    """
    mode = getattr(lower, "takes", Handoff.FRAMES)
    if mode is not Handoff.FRAMES and mode in getattr(upper, "hands", ()):
        return _hand_over
    if getattr(upper, "gives_deltas_only", False):
        return _left_out
    if hasattr(upper, "_fuse_below"):
        if hasattr(lower, "_fuse_above"):
            return _either
        return _below
    if hasattr(lower, "_fuse_above"):
        return _above
    return None


def _hand_over(parser: Any, decoder: Any) -> Chained | None:
    # The parser hands each frame over in the mode the decoder takes.
    mode: Handoff = type(decoder).takes
    if not (parser._can_hand(mode) and decoder._take(mode)):
        return None
    parser._hand(mode)
    return Chained(parser, decoder)


def _left_out(decoder: Any, below: Any) -> Any:
    # A decoder that gives deltas only, in front of a machine that passes them on
    # as they are (or a pair that begins with one): that machine is left out.
    if _passes_deltas(below):
        return decoder
    if type(below) is Chained:
        upper, lower = below.parts
        if _passes_deltas(upper):
            return fuse_pair(decoder, lower) or Chained(decoder, lower)
    return None


def _below(upper: Any, lower: Any) -> Any:
    return upper._fuse_below(lower)


def _above(upper: Any, lower: Any) -> Any:
    return lower._fuse_above(upper)


def _either(upper: Any, lower: Any) -> Any:
    merged = upper._fuse_below(lower)
    return merged if merged is not None else lower._fuse_above(upper)

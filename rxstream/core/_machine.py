"""What every core machine is: the `Machine` protocol, one lifecycle, one misuse message.

A machine takes its input one item at a time (`feed`) or many at once
(`feed_all`), and `close()` ends the input. Its lifecycle is one of three
states, the same for every machine:

- `open`: it takes input;
- `closed`: `close()` ran; it takes no more input;
- `failed`: a `feed` or `close` raised; what it holds is in an unknown state,
  so it takes no more input either.

In both end states `feed`, `feed_all` and `close` raise
`RuntimeError("this <Class> is closed; it takes no more input")` (or
`failed`). A machine may also end by itself, on its input's end marker (the
chunk decoder at `[DONE]`): `done` turns True and it takes no more input,
though `close()` is still allowed.

An item of the wrong kind is the caller's mistake, so it is a `TypeError`;
`wrong_input` words it by the operator the user wrote, and names the operator
that was probably forgotten in front of it (`rs.decode_chunks()` fed lines
-> "add rs.sse_frames() before it").
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, ClassVar, Final, NoReturn, Protocol, TypeVar, runtime_checkable

from ..errors import excerpt
from ..models import DELTA_CLASSES, ChatChunk, SSEFrame

__all__ = [
    "CLOSED",
    "FAILED",
    "OPEN",
    "Feeder",
    "Machine",
    "MachineBase",
    "Stage",
    "only_deltas",
    "wrong_input",
]

A_contra = TypeVar("A_contra", contravariant=True)
B = TypeVar("B")
B_co = TypeVar("B_co", covariant=True)

#: The three lifecycle states (compared by identity on the hot paths).
OPEN: Final = "open"
CLOSED: Final = "closed"
FAILED: Final = "failed"


@runtime_checkable
class Feeder(Protocol[A_contra, B_co]):
    """The least a machine is: `feed` and `close` (see `Machine` for the whole contract)."""

    def feed(self, item: A_contra, /) -> Sequence[B_co]: ...  # pragma: no cover

    def close(self) -> Sequence[B_co]: ...  # pragma: no cover


@runtime_checkable
class Machine(Protocol[A_contra, B]):
    """A sans-I/O machine: items in, items out, no clocks and no I/O.

    - `feed(item)` returns what the item completes (a list, possibly empty);
    - `feed_all(items, out)` is `out += feed(item)` for each item in turn, in
      one call (an error leaves in `out` what the items before it gave), and
      stops taking items once `done`;
    - `close()` flushes what is buffered and raises if the input stopped
      half-way;
    - `done` is True once the input's own end marker arrived.
    """

    @property
    def done(self) -> bool: ...  # pragma: no cover

    def feed(self, item: A_contra, /) -> Sequence[B]: ...  # pragma: no cover

    def feed_all(self, items: Iterable[A_contra], out: list[B], /) -> None: ...  # pragma: no cover

    def close(self) -> Sequence[B]: ...  # pragma: no cover


class MachineBase:
    """The shared lifecycle: a `_state` slot and the refusals that go with it.

    A machine checks `self._state is not OPEN` at the top of `feed` and
    `close` (one identity test) and calls `_refuse()` when it is; it sets
    `_state = FAILED` when it raises, and `close` goes through `_closing()`.
    Subclasses name the operator they serve in `operator`, for misuse messages.
    """

    __slots__ = ("_state",)

    #: How the user spells the operator over this machine, e.g. `"rs.lines()"`.
    operator: ClassVar[str] = ""

    def __init__(self) -> None:
        self._state: str = OPEN

    @property
    def done(self) -> bool:
        """True once the input's end marker arrived (never, for most machines)."""
        return False

    def _refuse(self) -> NoReturn:
        """Raise the `RuntimeError` of a machine that takes no more input."""
        raise RuntimeError(f"this {type(self).__name__} is {self._state}; it takes no more input")

    def _closing(self) -> None:
        """Start `close()`: refuse unless open, then mark the machine closed."""
        if self._state is not OPEN:
            self._refuse()
        self._state = CLOSED

    def _wrong_input(self, item: object, takes: int) -> NoReturn:
        """Fail the machine and raise `wrong_input(...)` for `item`."""
        self._state = FAILED
        raise wrong_input(item, self.operator or type(self).__name__, takes)


class Stage:
    """The stages of a chat pipeline, in order, and the operator between each two."""

    RAW: Final = 0  # str or bytes chunks, as read
    LINES: Final = 1  # str lines (what rs.lines() and the sources give)
    FRAMES: Final = 2  # SSEFrame
    CHUNKS: Final = 3  # ChatChunk
    DELTAS: Final = 4  # TextDelta, ToolCallDelta, ...

    #: What the items of each stage are called, in messages.
    NAMES: Final = (
        "str or bytes chunks",
        "str lines",
        "SSEFrame items",
        "ChatChunk or delta items",
        "delta items",
    )
    #: The operator that takes stage i to stage i + 1.
    STEPS: Final = ("rs.lines()", "rs.sse_frames()", "rs.decode_chunks()", "rs.deltas()")


def _stage_of(item: object) -> int | None:
    if isinstance(item, bytes | bytearray | memoryview):
        return Stage.RAW
    if isinstance(item, str):
        return Stage.LINES
    if isinstance(item, SSEFrame):
        return Stage.FRAMES
    if isinstance(item, ChatChunk):
        return Stage.CHUNKS
    if isinstance(item, DELTA_CLASSES):
        return Stage.DELTAS
    return None


def wrong_input(item: object, operator: str, takes: int) -> TypeError:
    """The `TypeError` for an item a machine cannot take, with a hint at the fix.

    Args:
        item: what arrived.
        operator: the operator the user wrote, e.g. `"rs.decode_chunks()"`.
        takes: the `Stage` the operator takes (for `Stage.CHUNKS`, deltas are
            welcome too).

    Returns:
        The error (the caller raises it), naming `operator`, what it takes,
        what arrived (a bounded excerpt) and, when the item belongs to an
        earlier stage of the pipeline, the operators missing in front of it.

    >>> str(wrong_input("data: {}", "rs.decode_chunks()", Stage.FRAMES))
    "rs.decode_chunks() takes SSEFrame items, got a str ('data: {}'): add rs.sse_frames() before it"
    """
    kind = type(item).__name__
    # "an SSEFrame", "an int", "a ChatChunk": an acronym is read letter by letter.
    vowel = kind[:1] in "AEFHILMNORSX" if kind[1:2].isupper() else kind[:1].lower() in "aeiou"
    article = "an" if vowel else "a"
    what = excerpt(repr(item), 80)
    head = f"{operator} takes {Stage.NAMES[takes]}, got {article} {kind} ({what})"
    stage = _stage_of(item)
    if stage is None:
        if isinstance(item, dict) and takes == Stage.CHUNKS:
            return TypeError(f"{head}: wrap a decoded chunk as rs.ChatChunk(raw)")
        return TypeError(head)
    if stage < takes:
        missing = list(Stage.STEPS[stage:takes])
        steps = missing[0] if len(missing) == 1 else ", ".join(missing[:-1]) + " and " + missing[-1]
        return TypeError(f"{head}: add {steps} before it")
    # A later stage: the operator comes too late in the pipe, or twice.
    maker = Stage.STEPS[stage - 1]
    if maker == operator:
        return TypeError(f"{head}, which {operator} gives: is it in the pipe twice?")
    return TypeError(f"{head}, which {maker} gives: {operator} belongs before {maker}")


def only_deltas(item: object, operator: str) -> list[Any]:
    """`[item]` when it is a delta; else the `TypeError` of `wrong_input`.

    The one input check of the machines that take deltas only (the message,
    think, tool-call and token machines): a `ChatChunk` is told to go through
    `rs.deltas()` first (the operators over these machines do that themselves).

    >>> only_deltas(ChatChunk({}), "rs.think_tags()")
    Traceback (most recent call last):
    ...
    TypeError: rs.think_tags() takes delta items, got a ChatChunk (...): add rs.deltas() before it
    """
    if isinstance(item, DELTA_CLASSES):
        return [item]
    raise wrong_input(item, operator, Stage.DELTAS)

"""Tool-call fragments to complete tool calls.

Input: `ToolCallDelta` and `Finish` deltas (other deltas are ignored); a
`ChatChunk` is a `TypeError` (`rs.accumulate_tool_calls()` decodes chunks first).
Output: one `ToolCall` (`complete=True`) per call when its choice finishes, or
at `close()` for choices that never finished; with `partial=True` also
snapshots (`complete=False`) as the arguments stream. A choice stopped on
purpose (`Finish("cancelled")`, from `rs.stop_on` or `Multicast.stop()`) may
have cut a call in its arguments: such a call is `complete=False`, and only a
call whose arguments are already a whole JSON object stays `complete=True`.

A `Reset` (a new answer replaces the one streamed so far) drops every call
not yet given out and is given out itself, in its place: calls (and
snapshots) already given out belonged to the dropped answer, and a consumer
that showed or ran them learns so from it.

How a fragment finds its call (per choice):

- an integer `index` names the call, unless the fragment brings an id that
  differs from the one that call already has: then it is a new call (two ids
  under one index), placed at the next free index;
- no usable `index` (missing, `null`, a string): the call with the same id, a
  new call for a new id, else the latest call continues;
- `id` and `name` are taken from the first fragment that carries them and never
  concatenated (some providers repeat them on every fragment, `id: ""` included);
- arguments are the concatenation of the fragments' pieces, joined once;
- a complete call the provider gave no id (Gemini and Ollama may not) gets
  one made from its place and content (`generated_call_id`), so a tool
  result can answer it by id as in every OpenAI-style loop; the request
  builders of providers that match results by name and order (Gemini,
  Ollama) recognise it (`is_generated_call_id`) and do not send it. A
  snapshot (`partial=True`) keeps `id=None` until its call is complete.

With `partial=True` each call's arguments go through an incremental JSON
reader (`rxstream.core.json_stream.JSONStreamParser`: each character read
once, no re-parsing, no extra needed), and a call's snapshots come at a
growing stride (every fragment while its arguments are short, then each time
they have grown by a fixed fraction; see `ToolCallAccumulator`), so copying
the snapshots stays linear in the length of the arguments too. A snapshot
never shows an incomplete number, literal or escape (`[1` shows `[]`); an open
string shows its text so far.

Follows the OpenAI chat streaming shape of `delta.tool_calls[]` and the
provider variations the recordings in tests/data show (whole calls in one
delta, Mistral's calls without `index`, ids repeated as `""` on every fragment).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .._deprecate import moved_names
from ..errors import JSONStreamError
from ..models import JSON, Delta, Finish, Reset, ToolCall, ToolCallDelta
from ._machine import FAILED, OPEN, MachineBase, only_deltas
from .json_stream import JSONStreamParser

__all__ = [
    "SNAPSHOT_EVERY_FRAGMENT_BELOW",
    "SNAPSHOT_GROWTH",
    "CallSlot",
    "ToolCallAccumulator",
    "ToolCallMatcher",
    "generated_call_id",
    "is_generated_call_id",
    "parse_partial_json",
    "partial_parser",
    "whole_object",
]


_PARTIAL_HINT = 'pip install "rxstream[partial]"'

#: What begins every call id rxstream makes for a call that came without one.
GENERATED_ID_PREFIX = "rxcall_"

# The characters every provider takes in a call id (Anthropic, Bedrock: [a-zA-Z0-9_-]).
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def generated_call_id(index: int, name: str | None, arguments: str, choice: int = 0) -> str:
    """The id of a call the provider sent without one: `rxcall_<index>_<name>_<digest>`.

    Made from the call's place (choice, index) and content (name, arguments),
    never at random: the same stream gives the same ids, so a replayed or
    re-decoded stream, a marble test and a run resumed in another process
    all name a call alike. The digest of the arguments keeps the calls of
    different steps apart (Anthropic and Bedrock want every id of a
    conversation unique). At most 64 characters of `[A-Za-z0-9_-]`, which
    every provider takes as an id.

    >>> generated_call_id(0, "get_weather", '{"city": "Paris"}')
    'rxcall_0_get_weather_c19071fa'
    >>> is_generated_call_id(generated_call_id(1, None, "{}"))
    True
    """
    # "surrogatepass": a name or arguments holding a lone surrogate (a provider that split
    # an escape pair) still gets an id; other text encodes as plain UTF-8 does.
    text = f"{choice}\0{name}\0{arguments}"
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    place = f"{index}" if choice == 0 else f"{index}c{choice}"
    label = _UNSAFE.sub("_", name or "")[:32]
    return "_".join(part for part in (f"{GENERATED_ID_PREFIX}{place}", label, digest) if part)


def is_generated_call_id(call_id: str | None) -> bool:
    """Whether `call_id` is one `generated_call_id` made (the provider gave the call none).

    >>> is_generated_call_id("call_abc"), is_generated_call_id(None)
    (False, False)
    """
    return call_id is not None and call_id.startswith(GENERATED_ID_PREFIX)


# The parser of the optional extra "partial", imported on first use (the core
# imports nothing outside the standard library when it loads).
_jiter_from_json: Callable[..., JSON] | None = None


def partial_parser() -> Callable[..., JSON]:
    """jiter's partial-JSON reader (the `partial` extra), imported on first use.

    Raises:
        ImportError: jiter is not installed, with the install hint.
    """
    global _jiter_from_json
    if _jiter_from_json is None:
        try:
            import jiter
        except ImportError as exc:
            raise ImportError(
                f"parsing incomplete JSON (partial=True) needs jiter: {_PARTIAL_HINT}"
            ) from exc
        _jiter_from_json = jiter.from_json
    return _jiter_from_json


if not TYPE_CHECKING:
    # `_partial_parser`, the name `partial_parser` had while it was private.
    __getattr__ = moved_names(__name__, {"_partial_parser": f"{__name__}:partial_parser"})


def parse_partial_json(text: str) -> JSON:
    """Best-effort parse of an incomplete JSON text; None when nothing usable is there yet.

    Uses jiter's partial mode (the `partial` extra): open strings are kept as
    they stand, an unfinished key, literal or number is left out, and open
    arrays and objects are closed. The cost is one pass over `text`.

    Raises:
        ImportError: jiter is not installed (`pip install "rxstream[partial]"`).

    >>> parse_partial_json('{"city": "Par')
    {'city': 'Par'}
    """
    parse = partial_parser()
    if not text.strip():
        return None
    try:
        return parse(text.encode("utf-8"), partial_mode="trailing-strings")
    except (ValueError, RecursionError):
        return None


class CallSlot:
    """One call of a choice as `ToolCallMatcher` knows it: where it goes and its id."""

    __slots__ = ("id", "index", "wire")

    def __init__(self, index: int, wire: int | None, id: str | None) -> None:
        self.index = index  # its place in the choice's tool calls (unique)
        self.wire = wire  # the index the provider sent for it, if any
        self.id = id


class ToolCallMatcher:
    """Which call of one choice a fragment belongs to (the rules in this module's docstring).

    The one place those rules live: `ToolCallAccumulator` and `TokenCounter`
    both ask it, so they always agree on where a call's fragments go.

    >>> m = ToolCallMatcher()
    >>> m.match(ToolCallDelta(None, id="a"))[0].index, m.match(ToolCallDelta(0))[0].index
    (0, 0)
    """

    __slots__ = ("_by_id", "_by_wire", "_top", "_used", "slots")

    def __init__(self) -> None:
        self.slots: list[CallSlot] = []
        # The latest call sent under each wire index; output indexes stay unique.
        self._by_wire: dict[int, CallSlot] = {}
        self._by_id: dict[str, CallSlot] = {}
        self._used: set[int] = set()
        self._top = -1  # the highest index given so far

    def match(self, delta: ToolCallDelta) -> tuple[CallSlot, bool]:
        """The fragment's call, and whether this fragment gave the call its id."""
        wire, id = delta.index, delta.id
        if wire is not None:
            slot = self._by_wire.get(wire)
            if slot is None or not _same_call(id, slot.id):
                slot = self._by_id.get(id) if id else None
                latest = self.slots[-1] if self.slots else None
                if slot is None and latest is not None and latest.wire is None:
                    # A call that began without an index may go on with one.
                    slot = latest if _same_call(id, latest.id) else None
                if slot is None:
                    slot = self._new(wire)
                elif slot.wire is None:
                    slot.wire = wire
                self._by_wire[wire] = slot
        elif id:
            slot = self._by_id.get(id) or self._new(None)
        else:
            slot = self.slots[-1] if self.slots else self._new(None)
        if id and slot.id is None:
            slot.id = id
            self._by_id[id] = slot
            return slot, True
        return slot, False

    def _new(self, wire: int | None) -> CallSlot:
        # A wire index not taken yet is kept; otherwise the call goes after the
        # highest index given so far (kept as a running maximum: constant time
        # per call however many calls a choice has).
        index = wire if wire is not None and wire not in self._used else self._top + 1
        self._used.add(index)
        if index > self._top:
            self._top = index
        slot = CallSlot(index, wire, None)
        self.slots.append(slot)
        return slot


def _same_call(id: str | None, other: str | None) -> bool:
    # A fragment may continue a call unless both carry ids and they differ.
    return not (id and other and id != other)


# Snapshot stride with partial=True (see `ToolCallAccumulator`): every
# fragment while a call's arguments are this short, ...
SNAPSHOT_EVERY_FRAGMENT_BELOW = 2048
# ... and past that, once they have grown by this fraction since the last one.
SNAPSHOT_GROWTH = 1 / 8


@dataclass(slots=True)
class _Call:
    slot: CallSlot
    name: str | None = None
    pieces: list[str] = field(default_factory=list)
    length: int = 0  # characters of arguments so far
    shown: int = -1  # characters of arguments in the latest snapshot (-1: none yet)
    # The incremental reader of the arguments (partial=True); None once they are not JSON.
    reader: JSONStreamParser | None = None

    def read(self, piece: str) -> None:
        """Give the reader the next piece of the arguments; a piece that is not JSON stops it."""
        if self.reader is not None:
            try:
                self.reader.feed(piece)
            except JSONStreamError:
                self.reader = None

    def partial(self) -> JSON:
        """The arguments read so far (None before any value, or once they are not JSON)."""
        return None if self.reader is None else self.reader.snapshot()

    def arguments(self) -> str:
        if len(self.pieces) > 1:
            self.pieces[:] = ["".join(self.pieces)]
        return self.pieces[0] if self.pieces else ""

    def due(self) -> bool:
        """Whether the arguments have grown enough since the last snapshot for a new one."""
        length = self.length
        return (
            length < SNAPSHOT_EVERY_FRAGMENT_BELOW
            or length - self.shown >= self.shown * SNAPSHOT_GROWTH
        )


@dataclass(slots=True)
class _Choice:
    matcher: ToolCallMatcher = field(default_factory=ToolCallMatcher)
    calls: dict[CallSlot, _Call] = field(default_factory=dict)


class ToolCallAccumulator(MachineBase):
    """Reassemble tool-call fragments into complete `ToolCall` items.

    Args:
        partial: also emit snapshots `ToolCall(complete=False, partial=...)`
            of a call as it streams, carrying its arguments so far and their
            reading by an incremental JSON reader (open containers, complete
            scalars, an open string so far; None once the arguments are not
            JSON). A snapshot comes when a call appears or gets
            its id or name, and as its arguments grow: after every fragment
            while they are under `SNAPSHOT_EVERY_FRAGMENT_BELOW` (2,048)
            characters, then whenever they have grown by `SNAPSHOT_GROWTH`
            (1/8) since the last snapshot. Each snapshot holds the whole
            arguments text and a copy of their open containers, so one per
            fragment would cost time quadratic in their length; this stride
            keeps the total work linear (at most about 9 times the final length past the first
            2,048 characters). The last snapshot may lag the arguments by up
            to that fraction: the complete `ToolCall` follows when the choice
            finishes.

    Returns (from `feed`): the calls of a choice when its `Finish` arrives (in
    index order), plus snapshots with `partial=True`; `close()` returns the
    calls of choices that never finished. When the `Finish` is a stop
    (`reason="cancelled"`), a call whose arguments are not yet a whole JSON
    object was cut by it and comes with `complete=False` (and, with
    `partial=True`, what was read of them in `partial`).

    Raises:
        TypeError: an item that is not a delta.
        RuntimeError: `feed` after `close()` or after an error.

    >>> acc = ToolCallAccumulator()
    >>> acc.feed(ToolCallDelta(0, '{"a":', id="c1", name="f"))
    []
    >>> [call] = acc.feed(ToolCallDelta(0, "1}")) + acc.feed(Finish("tool_calls"))
    >>> call.id, call.name, call.arguments
    ('c1', 'f', '{"a":1}')
    """

    __slots__ = ("_choices", "_partial")

    operator = "rs.accumulate_tool_calls()"

    def __init__(self, *, partial: bool = False) -> None:
        super().__init__()
        self._partial = partial
        self._choices: dict[int, _Choice] = {}

    def feed(self, item: Delta) -> list[ToolCall | Reset]:
        """Take one delta; return the calls it completes (and snapshots), or the `Reset` it is."""
        if self._state is not OPEN:
            self._refuse()
        out: list[ToolCall | Reset] = []
        try:
            if type(item) is ToolCallDelta:
                # The hot path: one fragment, nothing to match.
                self._add(item, out)
                return out
            for delta in only_deltas(item, self.operator):
                match delta:
                    case ToolCallDelta():
                        self._add(delta, out)
                    case Finish(choice=choice):
                        state = self._choices.pop(choice, None)
                        if state is not None:
                            out.extend(self._complete(state, choice, stopped=_is_stop(delta)))
                    case Reset():
                        self._choices.clear()
                        out.append(delta)
        except BaseException:
            self._state = FAILED
            raise
        return out

    def feed_all(self, items: Iterable[Delta], out: list[ToolCall | Reset]) -> None:
        """`out += feed(item)` for each item, in one call."""
        for item in items:
            out += self.feed(item)

    def close(self) -> list[ToolCall]:
        """End the input; return the calls of every choice that never finished."""
        self._closing()
        out: list[ToolCall] = []
        for choice in sorted(self._choices):
            out.extend(self._complete(self._choices[choice], choice))
        self._choices.clear()
        return out

    def _add(self, delta: ToolCallDelta, out: list[ToolCall | Reset]) -> None:
        state = self._choices.get(delta.choice)
        if state is None:
            state = self._choices[delta.choice] = _Choice()
        slot, changed = state.matcher.match(delta)
        call = state.calls.get(slot)
        if call is None:
            call = state.calls[slot] = _Call(slot)
            if self._partial:
                call.reader = JSONStreamParser(events=False)  # snapshots only
        if delta.name and call.name is None:
            call.name = delta.name
            changed = True
        grew = False
        if delta.arguments:
            call.pieces.append(delta.arguments)
            call.length += len(delta.arguments)
            call.read(delta.arguments)
            grew = True
        if self._partial and (changed or (grew and call.due())):
            arguments = call.arguments()
            call.shown = call.length
            out.append(
                ToolCall(
                    slot.index,
                    slot.id,
                    call.name,
                    arguments,
                    choice=delta.choice,
                    complete=False,
                    partial=call.partial(),
                )
            )

    def _complete(self, state: _Choice, choice: int, *, stopped: bool = False) -> list[ToolCall]:
        calls = sorted(state.calls.values(), key=lambda c: c.slot.index)
        out = []
        for c in calls:
            arguments = c.arguments()
            call_id = c.slot.id
            if call_id is None:
                call_id = generated_call_id(c.slot.index, c.name, arguments, choice)
            if stopped and not whole_object(arguments):
                partial = c.partial()
                out.append(
                    ToolCall(
                        c.slot.index,
                        call_id,
                        c.name,
                        arguments,
                        choice=choice,
                        complete=False,
                        partial=partial,
                    )
                )
            else:
                out.append(ToolCall(c.slot.index, call_id, c.name, arguments, choice=choice))
        return out


#: `Finish.reason` of a choice the client stopped on purpose (rxstream's own word; raw is None).
STOPPED = "cancelled"


def _is_stop(finish: Finish) -> bool:
    """Whether `finish` is rxstream's stop rather than the provider's end of the choice."""
    return finish.reason == STOPPED and finish.raw is None


def whole_object(arguments: str) -> bool:
    """Whether a call's arguments are whole: a JSON object, nothing missing.

    A tool's arguments are an object, so a prefix of them never parses as one:
    a call that arrived whole (Gemini, Ollama, a closed Anthropic block) before
    the stop is complete; one cut mid-arguments (or before any) is not.
    """
    try:
        return isinstance(json.loads(arguments), dict)
    except (ValueError, RecursionError):
        return False

"""Tool-call fragments to complete tool calls.

Input: `ToolCallDelta` and `Finish` deltas (other deltas are ignored), or
`ChatChunk` items, which go through an internal `DeltaDecoder` first.
Output: one `ToolCall` (`complete=True`) per call when its choice finishes, or
at `close()` for choices that never finished; with `partial=True` also
snapshots (`complete=False`) as the arguments stream.

How a fragment finds its call (per choice):

- an integer `index` names the call, unless the fragment brings an id that
  differs from the one that call already has: then it is a new call (two ids
  under one index), placed at the next free index;
- no usable `index` (missing, `null`, a string): the call with the same id, a
  new call for a new id, else the latest call continues;
- `id` and `name` are taken from the first fragment that carries them and never
  concatenated (some providers repeat them on every fragment, `id: ""` included);
- arguments are the concatenation of the fragments' pieces, joined once.

Follows the OpenAI chat streaming shape of `delta.tool_calls[]` and the
provider variations in the fixtures' QUIRKS.md section 5.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field

from ..models import JSON, ChatChunk, Delta, Finish, ToolCall, ToolCallDelta
from .deltas import DELTA_CLASSES, DeltaDecoder

__all__ = ["CallSlot", "ToolCallAccumulator", "ToolCallMatcher", "parse_partial_json"]


def _stdlib_partial(data: bytes) -> JSON:
    return _complete_and_parse(data.decode("utf-8", "replace"))


_partial_parser: Callable[[bytes], JSON]
try:  # jiter is the optional extra "partial"; the stdlib fallback is cruder but dependency-free.
    import jiter

    def _jiter_partial(data: bytes) -> JSON:
        return jiter.from_json(data, partial_mode="trailing-strings")

    _partial_parser = _jiter_partial
except ImportError:  # pragma: no cover - depends on the environment
    _partial_parser = _stdlib_partial


def parse_partial_json(text: str) -> JSON:
    """Best-effort parse of an incomplete JSON text; None when nothing usable is there yet.

    Uses jiter's partial mode when jiter is installed (the `partial` extra), else
    a small stdlib fallback that closes open strings and brackets.

    >>> parse_partial_json('{"city": "Par')
    {'city': 'Par'}
    """
    if not text.strip():
        return None
    try:
        return _partial_parser(text.encode("utf-8"))
    except ValueError:
        return None


def _complete_and_parse(text: str) -> JSON:
    """Close what `text` left open and parse it, cutting back to earlier safe points."""
    cuts = [len(text)]
    for pos in range(len(text) - 1, -1, -1):
        if len(cuts) >= 8:
            break
        if text[pos] in ",{[":
            cuts.append(pos + 1 if text[pos] in "{[" else pos)
    for cut in cuts:
        head = text[:cut].rstrip()
        stack: list[str] = []
        in_string = escaped = False
        for ch in head:
            if in_string:
                if escaped:
                    escaped = False
                elif ch == "\\":
                    escaped = True
                elif ch == '"':
                    in_string = False
            elif ch == '"':
                in_string = True
            elif ch in "{[":
                stack.append("}" if ch == "{" else "]")
            elif ch in "}]" and stack:
                stack.pop()
        if escaped:
            head = head[:-1]
        candidate = head + ('"' if in_string else "") + "".join(reversed(stack))
        try:
            return json.loads(candidate)
        except ValueError:
            continue
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

    __slots__ = ("_by_id", "_by_wire", "_used", "slots")

    def __init__(self) -> None:
        self.slots: list[CallSlot] = []
        # The latest call sent under each wire index; output indexes stay unique.
        self._by_wire: dict[int, CallSlot] = {}
        self._by_id: dict[str, CallSlot] = {}
        self._used: set[int] = set()

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
        used = self._used
        index = wire if wire is not None and wire not in used else max(used, default=-1) + 1
        used.add(index)
        slot = CallSlot(index, wire, None)
        self.slots.append(slot)
        return slot


def _same_call(id: str | None, other: str | None) -> bool:
    # A fragment may continue a call unless both carry ids and they differ.
    return not (id and other and id != other)


@dataclass(slots=True)
class _Call:
    slot: CallSlot
    name: str | None = None
    pieces: list[str] = field(default_factory=list)

    def arguments(self) -> str:
        if len(self.pieces) > 1:
            self.pieces[:] = ["".join(self.pieces)]
        return self.pieces[0] if self.pieces else ""


@dataclass(slots=True)
class _Choice:
    matcher: ToolCallMatcher = field(default_factory=ToolCallMatcher)
    calls: dict[CallSlot, _Call] = field(default_factory=dict)


class ToolCallAccumulator:
    """Reassemble tool-call fragments into complete `ToolCall` items.

    Args:
        partial: also emit a snapshot `ToolCall(complete=False, partial=...)`
            each time a call's arguments (or its id or name) grow, carrying the
            best-effort parse of the arguments so far.

    Returns (from `feed`): the calls of a choice when its `Finish` arrives (in
    index order), plus snapshots with `partial=True`; `close()` returns the
    calls of choices that never finished.

    Raises:
        TypeError: an item that is neither a `ChatChunk` nor a delta.
        RuntimeError: `feed` after `close()` or after an error.

    >>> acc = ToolCallAccumulator()
    >>> acc.feed(ToolCallDelta(0, '{"a":', id="c1", name="f"))
    []
    >>> [call] = acc.feed(ToolCallDelta(0, "1}")) + acc.feed(Finish("tool_calls"))
    >>> call.id, call.name, call.arguments
    ('c1', 'f', '{"a":1}')
    """

    __slots__ = ("_choices", "_closed", "_decoder", "_partial")

    def __init__(self, *, partial: bool = False) -> None:
        self._partial = partial
        self._decoder = DeltaDecoder()
        self._choices: dict[int, _Choice] = {}
        self._closed = False

    def feed(self, item: ChatChunk | Delta) -> list[ToolCall]:
        """Take one chunk or delta; return the calls it completes (and snapshots)."""
        if self._closed:
            raise RuntimeError("ToolCallAccumulator: feed() after close() or after an error")
        out: list[ToolCall] = []
        if type(item) is ToolCallDelta:
            # The hot path: one fragment, nothing to match.
            self._add(item, out)
            return out
        if isinstance(item, DELTA_CLASSES):
            deltas: list[Delta] = [item]
        elif isinstance(item, ChatChunk):
            deltas = self._decoder.feed(item)
        else:
            self._closed = True
            raise TypeError(f"ToolCallAccumulator expects ChatChunk or delta items, got {item!r}")
        for delta in deltas:
            match delta:
                case ToolCallDelta():
                    self._add(delta, out)
                case Finish(choice=choice):
                    state = self._choices.pop(choice, None)
                    if state is not None:
                        out.extend(self._complete(state, choice))
        return out

    def close(self) -> list[ToolCall]:
        """End the input; return the calls of every choice that never finished."""
        if self._closed:
            raise RuntimeError("ToolCallAccumulator: close() called twice or after an error")
        self._closed = True
        out: list[ToolCall] = []
        for choice in sorted(self._choices):
            out.extend(self._complete(self._choices[choice], choice))
        self._choices.clear()
        return out

    def _add(self, delta: ToolCallDelta, out: list[ToolCall]) -> None:
        state = self._choices.get(delta.choice)
        if state is None:
            state = self._choices[delta.choice] = _Choice()
        slot, changed = state.matcher.match(delta)
        call = state.calls.get(slot)
        if call is None:
            call = state.calls[slot] = _Call(slot)
        if delta.name and call.name is None:
            call.name = delta.name
            changed = True
        if delta.arguments:
            call.pieces.append(delta.arguments)
            changed = True
        if self._partial and changed:
            arguments = call.arguments()
            out.append(
                ToolCall(
                    slot.index,
                    slot.id,
                    call.name,
                    arguments,
                    choice=delta.choice,
                    complete=False,
                    partial=parse_partial_json(arguments),
                )
            )

    @staticmethod
    def _complete(state: _Choice, choice: int) -> list[ToolCall]:
        calls = sorted(state.calls.values(), key=lambda c: c.slot.index)
        return [
            ToolCall(c.slot.index, c.slot.id, c.name, c.arguments(), choice=choice) for c in calls
        ]

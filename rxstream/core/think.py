"""Move `<think>...</think>` text out of the content into reasoning.

Input: deltas (a `ChatChunk` is a `TypeError`: `rs.think_tags()` decodes chunks first).
Output: the same deltas, except that text between `<think>` and `</think>`
in a choice's `TextDelta` stream comes out as `ReasoningDelta`; the tags
themselves are dropped and nothing else is changed (whitespace around the
tags included).

Invariants:

- each choice has its own state (inside or outside a think block);
- a tag split across fragments (`"<th"`, `"ink>"`) is recognised: only a
  trailing piece that could still become a tag is held back, and it is
  released as soon as it cannot, before any other delta of that choice, or
  at `close()`;
- concatenating the output text and reasoning (per choice) gives back the
  input text minus the tags;
- a `Reset` passes on and starts every choice again outside a think block,
  dropping the text held back (it belonged to the dropped answer).

There is no spec; this follows what DeepSeek-R1 distills send on Groq and
Together (tests/data/groq/think-tags-in-content.sse).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..models import Delta, ReasoningDelta, Reset, TextDelta
from ._machine import FAILED, OPEN, MachineBase, only_deltas

__all__ = ["ThinkTagSplitter"]

OPEN_TAG = "<think>"
CLOSE_TAG = "</think>"


@dataclass(slots=True)
class _State:
    inside: bool = False
    held: str = ""


def _held_prefix(text: str, tag: str) -> int:
    """Length of the longest end of `text` that is a proper start of `tag`."""
    for size in range(min(len(text), len(tag) - 1), 0, -1):
        if text.endswith(tag[:size]):
            return size
    return 0


class ThinkTagSplitter(MachineBase):
    """Split `<think>...</think>` text from `TextDelta` into `ReasoningDelta`.

    Returns: from `feed`, the deltas the item gives (possibly fewer or more
    than one per input); from `close()`, any held-back text.

    Raises:
        TypeError: an item that is not a delta (the message names the
            operator missing in front of `rs.think_tags()`).
        RuntimeError: `feed` after `close()` or after an error.

    >>> s = ThinkTagSplitter()
    >>> s.feed(TextDelta("<th")) + s.feed(TextDelta("ink>hm</think>Hi"))
    [ReasoningDelta(text='hm', choice=0), TextDelta(text='Hi', choice=0)]
    """

    __slots__ = ("_states",)
    operator = "rs.think_tags()"

    def __init__(self) -> None:
        super().__init__()
        self._states: dict[int, _State] = {}

    def feed(self, item: Delta) -> list[Delta]:
        """Take one delta; return the deltas it gives."""
        out: list[Delta] = []
        self.feed_all((item,), out)
        return out

    def feed_all(self, items: Iterable[Delta], out: list[Delta]) -> None:
        """Feed many items at once: the same as `out += feed(item)` for each in turn."""
        if self._state is not OPEN:
            self._refuse()
        try:
            for item in items:
                for delta in only_deltas(item, self.operator):
                    if isinstance(delta, TextDelta):
                        self._split(delta.text, delta.choice, out)
                    elif type(delta) is Reset:
                        self._states.clear()
                        out.append(delta)
                    else:
                        self._flush(delta.choice, out)
                        out.append(delta)
        except BaseException:
            self._state = FAILED
            raise

    def close(self) -> list[Delta]:
        """End the input; return the text still held back, as it stands."""
        self._closing()
        out: list[Delta] = []
        for choice in sorted(self._states):
            self._flush(choice, out)
        return out

    def _split(self, text: str, choice: int, out: list[Delta]) -> None:
        state = self._states.get(choice)
        if state is None:
            state = self._states[choice] = _State()
        text, state.held = state.held + text, ""
        while text:
            tag = CLOSE_TAG if state.inside else OPEN_TAG
            at = text.find(tag)
            if at >= 0:
                piece, text = text[:at], text[at + len(tag) :]
                self._emit(piece, state.inside, choice, out)
                state.inside = not state.inside
                continue
            keep = _held_prefix(text, tag)
            self._emit(text[: len(text) - keep], state.inside, choice, out)
            state.held = text[len(text) - keep :]
            break

    def _flush(self, choice: int, out: list[Delta]) -> None:
        state = self._states.get(choice)
        if state is not None and state.held:
            self._emit(state.held, state.inside, choice, out)
            state.held = ""

    @staticmethod
    def _emit(text: str, reasoning: bool, choice: int, out: list[Delta]) -> None:
        if text:
            out.append(ReasoningDelta(text, choice) if reasoning else TextDelta(text, choice))

"""Move `<think>...</think>` text out of the content into reasoning.

Input: deltas, or `ChatChunk` items (decoded by an internal `DeltaDecoder`).
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
  input text minus the tags.

There is no spec; this follows what DeepSeek-R1 distills send on Groq and
Together (see the fixtures' QUIRKS.md 4.1).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..models import ChatChunk, Delta, ReasoningDelta, TextDelta
from .deltas import DELTA_CLASSES, DeltaDecoder

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


class ThinkTagSplitter:
    """Split `<think>...</think>` text from `TextDelta` into `ReasoningDelta`.

    Returns: from `feed`, the deltas the item gives (possibly fewer or more
    than one per input); from `close()`, any held-back text.

    Raises:
        TypeError: an item that is neither a `ChatChunk` nor a delta.
        RuntimeError: `feed` after `close()` or after an error.

    >>> s = ThinkTagSplitter()
    >>> s.feed(TextDelta("<th")) + s.feed(TextDelta("ink>hm</think>Hi"))
    [ReasoningDelta(text='hm', choice=0), TextDelta(text='Hi', choice=0)]
    """

    def __init__(self) -> None:
        self._decoder = DeltaDecoder()
        self._states: dict[int, _State] = {}
        self._closed = False

    def feed(self, item: ChatChunk | Delta) -> list[Delta]:
        """Take one chunk or delta; return the deltas it gives."""
        if self._closed:
            raise RuntimeError("ThinkTagSplitter: feed() after close() or after an error")
        if isinstance(item, DELTA_CLASSES):
            deltas: list[Delta] = [item]
        elif isinstance(item, ChatChunk):
            deltas = self._decoder.feed(item)
        else:
            self._closed = True
            raise TypeError(f"ThinkTagSplitter expects ChatChunk or delta items, got {item!r}")
        out: list[Delta] = []
        for delta in deltas:
            if isinstance(delta, TextDelta):
                self._split(delta.text, delta.choice, out)
            else:
                self._flush(delta.choice, out)
                out.append(delta)
        return out

    def close(self) -> list[Delta]:
        """End the input; return the text still held back, as it stands."""
        if self._closed:
            raise RuntimeError("ThinkTagSplitter: close() called twice or after an error")
        self._closed = True
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

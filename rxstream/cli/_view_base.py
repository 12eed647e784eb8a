"""The common state of the command's views, and the calls every view takes.

`View` takes `delta(d)` for each delta, `count(c)` for each running
`TokenCount`, then one `end(error=..., interrupted=...)`, from whichever thread
the stream runs on, and keeps the partial result (the text, reasoning and
refusal of each choice, the tool calls, the footer's `Stats`); a subclass
renders it in `show` and `finish`. A `Reset` (a retry that restarts the
answer) empties that partial result: what a terminal printed stays printed,
and each view says that the answer starts again (`restart_line`).
"""

from __future__ import annotations

import threading
import time
from typing import IO

from ..core.tools import CallSlot, ToolCallMatcher
from ..models import (
    Citation,
    Delta,
    Finish,
    ReasoningDelta,
    RefusalDelta,
    Reset,
    ServerToolCall,
    ServerToolResult,
    TextDelta,
    TokenCount,
    ToolCallDelta,
    Usage,
)
from ._view_calls import ShownCall
from ._view_stats import Clock, Stats

__all__ = ["View", "restart_line"]


def restart_line(reset: Reset) -> str:
    """The line a view prints where the answer starts again.

    >>> restart_line(Reset(2, "the connection closed"))
    '-- the answer starts again (attempt 2: the connection closed) --'
    """
    why = f": {reset.reason}" if reset.reason else ""
    return f"-- the answer starts again (attempt {reset.attempt}{why}) --"


class View:
    """The common state of the text views; subclasses render it."""

    def __init__(self, out: IO[str], *, counting: str, clock: Clock = time.monotonic) -> None:
        self.out = out
        self.lock = threading.RLock()
        self.stats = Stats(clock=clock, counting=counting)
        self.reasoning: dict[int, str] = {}
        self.text: dict[int, str] = {}
        self.refusal: dict[int, str] = {}
        self.calls: list[ShownCall] = []  # every call, in the order they began
        self._matchers: dict[int, ToolCallMatcher] = {}  # per unfinished choice
        self._open: dict[int, dict[CallSlot, ShownCall]] = {}  # the calls of each unfinished choice
        self.touched: list[ShownCall] = []  # the calls the latest delta changed
        self.server_tools: list[ServerToolCall | ServerToolResult] = []
        self.error: BaseException | None = None

    def start(self) -> None:
        """Called once before the request goes out."""

    def delta(self, delta: Delta) -> None:
        """Take one delta (from any thread)."""
        with self.lock:
            self.stats.deltas += 1
            self.touched = []
            match delta:
                case TextDelta(text=piece, choice=choice):
                    self.text[choice] = self.text.get(choice, "") + piece
                    self._content()
                case ReasoningDelta(text=piece, choice=choice):
                    self.reasoning[choice] = self.reasoning.get(choice, "") + piece
                    self._content()
                case RefusalDelta(text=piece, choice=choice):
                    self.refusal[choice] = self.refusal.get(choice, "") + piece
                    self._content()
                case ToolCallDelta(choice=choice):
                    self._tool_call(delta, choice)
                    self._content()
                case Finish(reason=reason, choice=choice, raw=raw):
                    self.stats.finish, self.stats.finish_raw = reason, raw
                    # As in the core: a finished choice's calls are complete, and a
                    # later fragment of that choice would begin a new call.
                    self._matchers.pop(choice, None)
                    self.touched = list(self._open.pop(choice, {}).values())
                    for call in self.touched:
                        call.finish()
                case Usage():
                    self.stats.usage = delta
                case Citation():
                    self.stats.citations += 1
                case ServerToolCall() | ServerToolResult():
                    self.server_tools.append(delta)
                case Reset():
                    self._forget_the_answer()
            self.show(delta)

    def _forget_the_answer(self) -> None:
        """A `Reset`: the partial result so far was the dropped answer's."""
        self.reasoning.clear()
        self.text.clear()
        self.refusal.clear()
        self.calls.clear()
        self._matchers.clear()
        self._open.clear()
        self.server_tools.clear()

    def _content(self) -> None:
        stats = self.stats
        now = stats.clock()
        if stats.first_token is None:
            stats.first_token = now
        stats.last_token = now
        stats.content += 1

    def _tool_call(self, delta: ToolCallDelta, choice: int) -> None:
        matcher = self._matchers.get(choice)
        if matcher is None:
            matcher = self._matchers[choice] = ToolCallMatcher()
        slot, _ = matcher.match(delta)
        calls = self._open.setdefault(choice, {})
        call = calls.get(slot)
        if call is None:
            call = calls[slot] = ShownCall(slot, choice)
            self.calls.append(call)
        call.add(delta)
        self.touched = [call]

    def count(self, count: TokenCount) -> None:
        """Take a running (or the final) token count."""
        with self.lock:
            self.stats.tokens[count.choice] = count

    def end(self, *, error: BaseException | None = None, interrupted: bool = False) -> None:
        """The stream ended (completed, failed or interrupted): render the final state."""
        with self.lock:
            self.stats.ended = self.stats.clock()
            self.error = error
        # Outside the lock: a live display's refresh thread renders under it.
        self.finish(interrupted)

    def show(self, delta: Delta) -> None:
        """Render after `delta` (called with the lock held)."""

    def finish(self, interrupted: bool) -> None:
        """Render the end."""

"""The live view: a rich terminal display that prints each line once and redraws only its tail.

`LiveView` keeps the stream as `_Section`s in arrival order; lines that can no
longer change (`_settled`) are printed above a small live region, which holds
the rest and the footer, cut to what fits the screen (`_Tail`).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from functools import partial
from typing import IO, Any

from ..models import (
    Delta,
    Finish,
    ReasoningDelta,
    RefusalDelta,
    Reset,
    ServerToolCall,
    ServerToolResult,
    TextDelta,
    ToolCallDelta,
)
from ._view_base import View, restart_line
from ._view_calls import ShownCall, server_tool_line
from ._view_stats import Clock

__all__ = ["LiveView"]


class _Section:
    """One stretch of the live view, in arrival order: a kind of content of one
    choice (thinking, answer, refusal), a tool call, or a server tool's line.

    `draw(over)` gives its text so far (`over`: the stream ended). A section is
    open while it may still change; once closed its text is frozen. `committed`
    is how many characters of it are already printed above the live region.
    """

    __slots__ = ("committed", "draw", "frozen")

    def __init__(self, draw: Callable[[bool], Any]) -> None:
        self.draw = draw
        self.frozen: Any = None  # the final text, once closed
        self.committed = 0

    @property
    def closed(self) -> bool:
        return self.frozen is not None

    def text(self) -> Any:
        """The section's text so far (a rich `Text`)."""
        return self.frozen if self.frozen is not None else self.draw(False)

    def close(self, over: bool = False) -> None:
        """Nothing more will change it: freeze its text."""
        if self.frozen is None:
            self.frozen = self.draw(over)


class LiveView(View):
    """A live rich view: reasoning dimmed, text streaming, tool calls as they complete.

    A terminal keeps what scrolls off its screen, and a region redrawn in place
    can only be redrawn while it fits on the screen. So each line is printed
    once: the lines that can no longer change (every wrapped line of the
    section being written but its last, and every section that is over) go
    above a small live region, and the region holds only the rest, the footer
    and the line the cursor rests on, cut to the newest lines that fit. When
    the stream ends (or Ctrl-C interrupts it), what is left is printed like any
    other finished line and the region is stopped, once.
    """

    def __init__(
        self, out: IO[str], *, counting: str, title: str = "", clock: Clock = time.monotonic
    ) -> None:
        super().__init__(out, counting=counting, clock=clock)
        from rich.console import Console, Group
        from rich.live import Live

        self.title = title
        self._interrupted = False
        self._live = False
        self._over = False
        self._sections: list[_Section] = []
        self._first = 0  # sections before it are printed whole
        self._writing: dict[int, tuple[str, _Section]] = {}  # each choice's open content section
        self._pieces: dict[tuple[str, int], list[str]] = {}  # of the open content sections
        self._call_sections: dict[ShownCall, _Section] = {}
        self._respoken: set[ShownCall] = set()
        self._ticks = threading.Event()
        self._ticker: threading.Thread | None = None
        self.console = Console(file=out)
        # What the live region shows: replaced on every tick, drawn by rich's Live.
        self._region = _Tail(Group())
        self.live = Live(
            console=self.console,
            get_renderable=lambda: self._region,
            auto_refresh=False,
            transient=False,
            redirect_stdout=False,
            redirect_stderr=False,
        )

    def start(self) -> None:
        if self.title:
            self.console.print(self.title, style="bold")

    # ----------------------------------------------------------------- sections

    def show(self, delta: Delta) -> None:
        match delta:
            case TextDelta(text=piece, choice=choice) if piece:
                self._write("text", choice, piece)
            case ReasoningDelta(text=piece, choice=choice) if piece:
                self._write("reasoning", choice, piece)
            case RefusalDelta(text=piece, choice=choice) if piece:
                self._write("refusal", choice, piece)
            case ToolCallDelta(choice=choice):
                self._stop_writing(choice)
                self._update_calls()
            case Finish(choice=choice):
                self._stop_writing(choice)
                self._update_calls()
            case ServerToolCall() | ServerToolResult():
                self._stop_writing(delta.choice)
                section = _Section(partial(_server_tool_text, delta))
                section.close()
                self._sections.append(section)
            case Reset():
                # Printed lines stay printed: the new answer follows a line that says so.
                for choice in list(self._writing):
                    self._stop_writing(choice)
                for section in self._call_sections.values():
                    section.close()
                self._call_sections.clear()
                section = _Section(partial(_restart_text, delta))
                section.close()
                self._sections.append(section)
        # Started on the first delta, so a request that fails shows no empty view.
        if not self._live:
            self._live = True
            self.live.start(refresh=False)
            self._ticker = threading.Thread(target=self._tick_on, name="rxstream-view", daemon=True)
            self._ticker.start()

    def _write(self, kind: str, choice: int, piece: str) -> None:
        writing = self._writing.get(choice)
        if writing is None or writing[0] != kind:
            self._stop_writing(choice)
            pieces: list[str] = []
            self._pieces[(kind, choice)] = pieces
            section = _Section(partial(_content_text, kind, choice, pieces))
            self._writing[choice] = (kind, section)
            self._sections.append(section)
        self._pieces[(kind, choice)].append(piece)

    def _stop_writing(self, choice: int) -> None:
        """The choice's content section is over (another kind of item followed, or the end)."""
        writing = self._writing.pop(choice, None)
        if writing is not None:
            writing[1].close()
            del self._pieces[(writing[0], choice)]

    def _update_calls(self) -> None:
        for call in self.touched:
            section = self._call_sections.get(call)
            if section is None or (section.closed and call.spoiled and call not in self._respoken):
                # A new call; or one shown whole whose arguments went on: a line of its own
                # says so, below.
                if section is not None:
                    self._respoken.add(call)
                section = self._call_sections[call] = _Section(partial(_call_text, call))
                self._sections.append(section)
            if (call.parsed is not None and not call.spoiled) or call.finished:
                section.close()

    # ----------------------------------------------------------------- drawing

    def _render(self) -> Any:
        """The live region as it stands: what is not printed yet, and the footer."""
        from rich.console import Group
        from rich.text import Text

        with self.lock:
            parts = [
                part
                for section in self._sections[self._first :]
                if (part := section.text()[section.committed :]).plain
            ]
            parts.append(Text(self.stats.footer(self._interrupted), style="dim"))
            return Group(*parts)

    def _settle(self) -> list[Any]:
        """Move the lines that can no longer change out of the region: what to print."""
        done: list[Any] = []
        width = self.console.width
        while self._first < len(self._sections):
            section = self._sections[self._first]
            rest = section.text()[section.committed :]
            if section.closed:
                rest.rstrip()
                if rest.plain:
                    done.append(rest)
                self._first += 1
                continue
            cut = _settled(rest, self.console, width)
            if cut:
                section.committed += cut
                piece = rest[:cut]
                if piece.plain.endswith("\n"):
                    piece.right_crop(1)  # the line break is the end of the printed line
                done.append(piece)
            break  # what follows an open section waits below it
        return done

    def _tick(self) -> None:
        """Print the settled lines above the region and redraw the region (one write)."""
        from rich.console import Group
        from rich.text import Text

        with self.lock:
            done = self._settle()
            if self._over:
                done.append(Text(self.stats.footer(self._interrupted), style="dim"))
                self._region = _Tail(Group())
            else:
                # An empty last line: the cursor rests at its start, so what the terminal
                # echoes there (the ^C of a Ctrl-C) wraps nothing and is erased by the next draw.
                self._region = _Tail(self._render(), keep=Text(""))
            if done:
                # Printed above the region, which rich redraws below in the same write.
                self.console.print(Group(*done))
            else:
                self.live.refresh()

    def _tick_on(self) -> None:
        """The refresh thread: a tick 15 times a second until the stream ends."""
        try:
            while not self._ticks.wait(1 / 15):
                self._tick()
        except OSError:
            return  # the terminal went away: the end says the rest, if it can

    def finish(self, interrupted: bool) -> None:
        if not self._live:
            return
        self._ticks.set()
        if self._ticker is not None:
            self._ticker.join()
        with self.lock:
            self._interrupted = interrupted
            self._over = True
            for choice in list(self._writing):
                self._stop_writing(choice)
            for section in self._sections[self._first :]:
                section.close(over=True)
            self._tick()
            # The region is empty now: stopping it draws nothing and prints nothing again.
            self.live.stop()


def _content_text(kind: str, choice: int, pieces: list[str], over: bool) -> Any:
    """A content section: thinking dimmed, the answer plain, a refusal red."""
    from rich.text import Text

    tag = f"[choice {choice}] " if choice else ""
    if len(pieces) > 1:
        pieces[:] = ["".join(pieces)]
    body = pieces[0].lstrip() if pieces else ""
    if kind == "reasoning":
        return Text(f"{tag}thinking: ", style="dim bold") + Text(body, style="dim italic")
    if kind == "refusal":
        return Text(f"{tag}refusal: {body}", style="red")
    return Text(tag) + Text(body)


def _server_tool_text(item: ServerToolCall | ServerToolResult, over: bool) -> Any:
    """A line for a tool the provider ran."""
    from rich.text import Text

    tag = f"[choice {item.choice}] " if item.choice else ""
    return Text(tag + server_tool_line(item), style="magenta")


def _restart_text(reset: Reset, over: bool) -> Any:
    """The line where the answer starts again."""
    from rich.text import Text

    return Text(restart_line(reset), style="yellow")


def _call_text(call: ShownCall, over: bool) -> Any:
    """A tool call's line: whole (✓), over but not one JSON object (✗), or in progress (…)."""
    from rich.text import Text

    tag = f"[choice {call.choice}] " if call.choice else ""
    if call.parsed is not None and not call.spoiled:
        line = Text(f"{tag}✓ tool call ", style="green bold") + Text(
            f"{call.name or '?'}", style="bold"
        )
        line += Text(f"({call.id}) " if call.id else " ", style="dim")
        line += Text(json.dumps(call.parsed, ensure_ascii=False), style="cyan")
    elif call.finished or call.spoiled or over:
        state = "not a JSON object" if call.finished or call.spoiled else "incomplete"
        line = Text(f"{tag}✗ tool call ({state}) ", style="red bold") + Text(
            f"{call.name or '?'}", style="bold"
        )
        line += Text(f"({call.id}) " if call.id else " ", style="dim")
        line += Text(call.arguments)
    else:
        line = Text(f"{tag}… tool call ", style="yellow") + Text(
            f"{call.name or '?'} ({call.size} chars of arguments)", style="dim"
        )
    return line


def _settled(text: Any, console: Any, width: int) -> int:
    """How many leading characters of `text` (a rich `Text`) are whole lines that
    more text cannot change: every line, as wrapped at `width`, but the last.

    Text only grows at its end, and wrapping is greedy, so a line followed by
    another is final: the word that began the next line did not fit, and
    growing it will not make it fit. (A word wider than a line, folded, may
    fold a little differently once printed when it holds wide characters; each
    character is still printed once: what is printed are consecutive pieces of
    the text.)
    """
    plain: str = text.plain
    paragraph = plain.rfind("\n") + 1  # where the last paragraph begins
    lines = text[paragraph:].wrap(console, width)
    if len(lines) <= 1:
        return paragraph
    # Each wrapped line is a piece of the paragraph, in order (what a break drops is
    # whitespace between them): find where the last one begins.
    at = paragraph
    for line in lines:
        shown: str = line.plain
        found = plain.find(shown, at)
        if found < 0:
            return paragraph  # not found as expected: keep the whole paragraph in the region
        last, at = found, found + len(shown)
    if not plain[paragraph:last].strip():
        # Only spaces before the last line: printed alone they would wrap into fewer
        # lines (a line's trailing spaces are dropped); they wait for a word.
        return paragraph
    return last


class _Tail:
    """While streaming, the last lines that fit the terminal: the newest text and
    the footer stay in view instead of freezing behind rich's overflow ellipsis.

    `keep` is drawn after them, always (the line the cursor rests on).
    """

    def __init__(self, renderable: Any, keep: Any = None) -> None:
        self.renderable = renderable
        self.keep = keep

    def __rich_console__(self, console: Any, options: Any) -> Any:
        from rich.segment import Segment

        lines = console.render_lines(self.renderable, options, pad=False)
        kept = [] if self.keep is None else console.render_lines(self.keep, options, pad=False)
        room = max(1, (options.height or console.size.height) - 1 - len(kept))
        shown = lines[-room:] + kept
        for number, line in enumerate(shown):
            yield from line
            if number < len(shown) - 1:
                yield Segment.line()

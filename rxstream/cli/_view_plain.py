"""The plain view: text as it arrives, no colours and no redraw (pipes, files, dumb terminals)."""

from __future__ import annotations

import time
from typing import IO

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
from ._view_calls import server_tool_line
from ._view_stats import Clock

__all__ = ["PlainView"]


class PlainView(View):
    """Plain text as it arrives: no colours, no redraw (for pipes, files, dumb terminals).

    Sections are labelled (`thinking:`, `answer:`, `tool call:`) and a tool call
    is printed, with its parsed arguments, as soon as its arguments are whole.

    A stream of several choices (n > 1) interleaves their pieces, which a plain
    writer cannot draw side by side: one choice at a time writes as it arrives
    (the first to appear), and the others are held; when the writing choice
    finishes, the choices that finished meanwhile are printed whole, and the
    next one in choice order takes over. So each choice's answer is one line.
    """

    def __init__(
        self, out: IO[str], *, counting: str, title: str = "", clock: Clock = time.monotonic
    ) -> None:
        super().__init__(out, counting=counting, clock=clock)
        self.title = title
        self._section: tuple[str, int] | None = None
        self._midline = False
        self._live: int | None = None  # the choice that writes as it arrives
        # What the other choices brought meanwhile: (kind, label, piece) for a
        # piece of a section, ("", "", text) for a whole line.
        self._held: dict[int, list[tuple[str, str, str]]] = {}
        self._finished: set[int] = set()

    def start(self) -> None:
        if self.title:
            self._line(self.title)

    def _line(self, text: str) -> None:
        if self._midline:
            self.out.write("\n")
            self._midline = False
        self.out.write(text + "\n")
        self.out.flush()

    def _writes(self, choice: int) -> bool:
        if self._live is None:
            self._live = choice
        return choice == self._live

    def _stream(self, kind: str, choice: int, label: str, piece: str) -> None:
        if self._writes(choice):
            self._write(kind, choice, label, piece)
        else:
            self._held.setdefault(choice, []).append((kind, label, piece))

    def _choice_line(self, choice: int, text: str) -> None:
        if self._writes(choice):
            self._section = None
            self._line(text)
        else:
            self._held.setdefault(choice, []).append(("", "", text))

    def _write(self, kind: str, choice: int, label: str, piece: str) -> None:
        if self._section != (kind, choice):
            if self._midline:
                self.out.write("\n")
            tag = f"[choice {choice}] " if choice else ""
            self.out.write(f"{tag}{label}: ")
            self._section = (kind, choice)
            piece = piece.lstrip()
        self.out.write(piece)
        self._midline = True
        self.out.flush()

    def _release(self, choice: int) -> None:
        """Print what `choice` brought while another choice was writing."""
        for kind, label, piece in self._held.pop(choice, []):
            if kind:
                self._write(kind, choice, label, piece)
            else:
                self._section = None
                self._line(piece)

    def _hand_over(self) -> None:
        """The writing choice finished: end its line, print the finished ones, pick the next."""
        if self._midline:
            self.out.write("\n")
            self._midline = False
            self.out.flush()
        self._section = None
        self._live = None
        for choice in sorted(self._held):
            if choice in self._finished:
                self._release(choice)
        if self._held:
            self._live = min(self._held)
            self._release(self._live)

    def show(self, delta: Delta) -> None:
        match delta:
            case TextDelta(text=piece, choice=choice) if piece:
                self._stream("text", choice, "answer", piece)
            case ReasoningDelta(text=piece, choice=choice) if piece:
                self._stream("reasoning", choice, "thinking", piece)
            case RefusalDelta(text=piece, choice=choice) if piece:
                self._stream("refusal", choice, "refusal", piece)
            case ToolCallDelta():
                self._show_calls()
            case Finish(choice=choice):
                self._show_calls()
                self._finished.add(choice)
                if choice == self._live:
                    self._hand_over()
            case ServerToolCall() | ServerToolResult():
                tag = f"[choice {delta.choice}] " if delta.choice else ""
                self._choice_line(delta.choice, tag + server_tool_line(delta))
            case Reset():
                # The choices held back belonged to the dropped answer.
                self._held.clear()
                self._finished.clear()
                self._live = None
                self._section = None
                self._line(restart_line(delta))

    def _show_calls(self) -> None:
        for call in self.touched:
            if call.parsed is not None and not call.shown:
                call.shown = True
                tag = f"[choice {call.choice}] " if call.choice else ""
                self._choice_line(call.choice, f"{tag}tool call: {call.summary()}")

    def finish(self, interrupted: bool) -> None:
        with self.lock:
            self._finish(interrupted)

    def _finish(self, interrupted: bool) -> None:
        if self.error is not None and not self.stats.deltas:
            return  # nothing arrived: the one error line says it all
        for choice in sorted(self._held):
            self._release(choice)
        for call in self.calls:
            tag = f"[choice {call.choice}] " if call.choice else ""
            if call.spoiled:
                self._line(f"{tag}tool call (arguments are not one JSON object): {call.summary()}")
            elif not call.shown:
                call.shown = True
                state = "not a JSON object" if call.finished else "incomplete"
                self._line(f"{tag}tool call ({state}): {call.summary()}")
        self._line(f"-- {self.stats.footer(interrupted)}")

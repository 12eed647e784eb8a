"""What the command shows of a stream: a live rich view, plain text, or JSON lines.

Every view takes the same calls, from whichever thread the stream runs on:
`delta(d)` for each delta, `count(c)` for each running `TokenCount`, then one
`end(error=..., interrupted=...)`. The views keep the partial result: an
interrupted or failed stream still shows what arrived, and the footer.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import IO, Any

from ..models import (
    Delta,
    Finish,
    ReasoningDelta,
    RefusalDelta,
    TextDelta,
    TokenCount,
    ToolCallDelta,
    Usage,
)

__all__ = ["JSONView", "LiveView", "PlainView", "Stats", "View", "delta_json"]


def delta_json(delta: Delta) -> dict[str, Any]:
    """A delta as a JSON object: `type` first, then its fields.

    >>> delta_json(TextDelta("Hi"))
    {'type': 'text', 'text': 'Hi', 'choice': 0}
    """
    return {"type": delta.type.value, **dataclasses.asdict(delta)}


@dataclass
class _Call:
    """One tool call as it streams; `parsed` is set once its arguments are a whole object."""

    index: int | None
    choice: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""
    parsed: dict[str, Any] | None = None
    shown: bool = False

    def add(self, delta: ToolCallDelta) -> None:
        self.id = self.id or delta.id
        self.name = self.name or delta.name
        self.arguments += delta.arguments
        if self.parsed is None and self.arguments.rstrip().endswith("}"):
            # A JSON object is complete exactly when it parses: nothing can follow
            # its closing brace, so the call can be shown before the choice ends.
            try:
                value = json.loads(self.arguments)
            except ValueError:
                return
            if isinstance(value, dict):
                self.parsed = value

    def summary(self) -> str:
        args = self.parsed if self.parsed is not None else self.arguments
        shown = json.dumps(args, ensure_ascii=False) if self.parsed is not None else str(args)
        ident = f" ({self.id})" if self.id else ""
        return f"{self.name or '?'}{ident} {shown}"


@dataclass
class Stats:
    """Timing and counts for the footer."""

    started: float = field(default_factory=time.monotonic)
    first_token: float | None = None
    ended: float | None = None
    deltas: int = 0
    tokens: TokenCount | None = None
    usage: Usage | None = None
    finish: str | None = None
    counting: str = ""

    def footer(self, interrupted: bool = False) -> str:
        """One line: time to first token, tokens per second, token counts, provider usage."""
        end = self.ended if self.ended is not None else time.monotonic()
        parts: list[str] = []
        if self.first_token is None:
            parts.append("no tokens yet")
        else:
            parts.append(f"time to first token {self.first_token - self.started:.2f} s")
        count, unit = self._count()
        if self.first_token is not None and count:
            span = end - self.first_token
            parts.append(f"{count / span:.1f} {unit}/s" if span > 0 else f"- {unit}/s")
        tokens = self.tokens
        if tokens is not None:
            parts.append(
                f"{tokens.total} tokens (reasoning {tokens.reasoning}, text {tokens.text}, "
                f"tool arguments {tokens.tool_arguments}; {self.counting})"
            )
        else:
            parts.append(f"{self.deltas} deltas ({self.counting})")
        if self.usage is not None:
            u = self.usage
            extra = f", reasoning {u.reasoning_tokens}" if u.reasoning_tokens is not None else ""
            parts.append(
                f"provider usage: prompt {u.prompt_tokens}, completion {u.completion_tokens}"
                f"{extra}, total {u.total_tokens}"
            )
        if self.finish:
            parts.append(f"finish: {self.finish}")
        if interrupted:
            parts.append("interrupted")
        return " · ".join(parts)

    def _count(self) -> tuple[int, str]:
        if self.tokens is not None:
            return self.tokens.total, "tokens"
        if self.usage is not None:
            return self.usage.completion_tokens, "tokens"
        return self.deltas, "deltas"


class View:
    """The common state of the text views; subclasses render it."""

    def __init__(self, out: IO[str], *, counting: str) -> None:
        self.out = out
        self.lock = threading.RLock()
        self.stats = Stats(counting=counting)
        self.reasoning: dict[int, str] = {}
        self.text: dict[int, str] = {}
        self.refusal: dict[int, str] = {}
        self.calls: dict[tuple[int, int | None], _Call] = {}
        self.error: BaseException | None = None

    def start(self) -> None:
        """Called once before the request goes out."""

    def delta(self, delta: Delta) -> None:
        """Take one delta (from any thread)."""
        with self.lock:
            stats = self.stats
            stats.deltas += 1
            match delta:
                case TextDelta() | ReasoningDelta() | RefusalDelta() | ToolCallDelta():
                    if stats.first_token is None:
                        stats.first_token = time.monotonic()
            match delta:
                case TextDelta(text=piece, choice=choice):
                    self.text[choice] = self.text.get(choice, "") + piece
                case ReasoningDelta(text=piece, choice=choice):
                    self.reasoning[choice] = self.reasoning.get(choice, "") + piece
                case RefusalDelta(text=piece, choice=choice):
                    self.refusal[choice] = self.refusal.get(choice, "") + piece
                case ToolCallDelta(choice=choice):
                    key = (choice, delta.index)
                    if delta.index is None and self.calls:
                        key = list(self.calls)[-1]
                    call = self.calls.setdefault(key, _Call(delta.index, choice))
                    call.add(delta)
                case Finish(reason=reason):
                    stats.finish = reason
                    for call in self.calls.values():
                        if call.parsed is None and call.arguments.strip() == "":
                            call.parsed = {}
                case Usage():
                    stats.usage = delta
            self.show(delta)

    def count(self, count: TokenCount) -> None:
        """Take a running (or the final) token count."""
        with self.lock:
            self.stats.tokens = count

    def end(self, *, error: BaseException | None = None, interrupted: bool = False) -> None:
        """The stream ended (completed, failed or interrupted): render the final state."""
        with self.lock:
            self.stats.ended = time.monotonic()
            self.error = error
        # Outside the lock: a live display's refresh thread renders under it.
        self.finish(interrupted)

    def show(self, delta: Delta) -> None:
        """Render after `delta` (called with the lock held)."""

    def finish(self, interrupted: bool) -> None:
        """Render the end."""


class PlainView(View):
    """Plain text as it arrives: no colours, no redraw (for pipes, files, dumb terminals).

    Sections are labelled (`thinking:`, `answer:`, `tool call:`) and a tool call
    is printed, with its parsed arguments, as soon as its arguments are whole.
    """

    def __init__(self, out: IO[str], *, counting: str, title: str = "") -> None:
        super().__init__(out, counting=counting)
        self.title = title
        self._section: tuple[str, int] | None = None
        self._midline = False

    def start(self) -> None:
        if self.title:
            self._line(self.title)

    def _line(self, text: str) -> None:
        if self._midline:
            self.out.write("\n")
            self._midline = False
        self.out.write(text + "\n")
        self.out.flush()

    def _stream(self, kind: str, choice: int, label: str, piece: str) -> None:
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

    def show(self, delta: Delta) -> None:
        match delta:
            case TextDelta(text=piece, choice=choice) if piece:
                self._stream("text", choice, "answer", piece)
            case ReasoningDelta(text=piece, choice=choice) if piece:
                self._stream("reasoning", choice, "thinking", piece)
            case RefusalDelta(text=piece, choice=choice) if piece:
                self._stream("refusal", choice, "refusal", piece)
            case ToolCallDelta() | Finish():
                self._show_calls()

    def _show_calls(self) -> None:
        for call in self.calls.values():
            if call.parsed is not None and not call.shown:
                call.shown = True
                self._section = None
                tag = f"[choice {call.choice}] " if call.choice else ""
                self._line(f"{tag}tool call: {call.summary()}")

    def finish(self, interrupted: bool) -> None:
        with self.lock:
            self._finish(interrupted)

    def _finish(self, interrupted: bool) -> None:
        if self.error is not None and not self.stats.deltas:
            return  # nothing arrived: the one error line says it all
        for call in self.calls.values():
            if not call.shown:
                call.shown = True
                self._line(f"tool call (incomplete): {call.summary()}")
        self._line(f"-- {self.stats.footer(interrupted)}")


class LiveView(View):
    """A live rich view: reasoning dimmed, text streaming, tool calls as they complete."""

    def __init__(self, out: IO[str], *, counting: str, title: str = "") -> None:
        super().__init__(out, counting=counting)
        from rich.console import Console
        from rich.live import Live

        self.title = title
        self._interrupted = False
        self._live = False
        self._whole = False
        self.console = Console(file=out)
        self.live = Live(
            console=self.console,
            get_renderable=self._render,
            refresh_per_second=15,
            transient=False,
            redirect_stdout=False,
            redirect_stderr=False,
        )

    def start(self) -> None:
        if self.title:
            self.console.print(self.title, style="bold")

    def show(self, delta: Delta) -> None:
        # Started on the first delta, so a request that fails shows no empty view.
        if not self._live:
            self._live = True
            self.live.start()

    def _render(self) -> Any:
        from rich.console import Group
        from rich.text import Text

        with self.lock:
            parts: list[Any] = []
            for choice in sorted({*self.reasoning, *self.text, *self.refusal}):
                tag = f"[choice {choice}] " if choice else ""
                if self.reasoning.get(choice):
                    parts.append(
                        Text(f"{tag}thinking: ", style="dim bold")
                        + Text(self.reasoning[choice].lstrip(), style="dim italic")
                    )
                if self.text.get(choice):
                    parts.append(Text(tag) + Text(self.text[choice].lstrip()))
                if self.refusal.get(choice):
                    parts.append(Text(f"{tag}refusal: {self.refusal[choice]}", style="red"))
            for call in self.calls.values():
                if call.parsed is not None:
                    line = Text("✓ tool call ", style="green bold") + Text(
                        f"{call.name or '?'}", style="bold"
                    )
                    line += Text(f"({call.id}) " if call.id else " ", style="dim")
                    line += Text(json.dumps(call.parsed, ensure_ascii=False), style="cyan")
                else:
                    line = Text("… tool call ", style="yellow") + Text(
                        f"{call.name or '?'} ({len(call.arguments)} chars of arguments)",
                        style="dim",
                    )
                parts.append(line)
            footer = self.stats.footer(self._interrupted)
            parts.append(Text(footer, style="dim"))
            return Group(*parts) if self._whole else _Tail(Group(*parts))

    def finish(self, interrupted: bool) -> None:
        self._interrupted = interrupted
        if self._live:
            # The last frame is printed whole, however tall, and stays on screen.
            self._whole = True
            self.live.vertical_overflow = "visible"
            self.live.refresh()
            self.live.stop()


class _Tail:
    """While streaming, the last lines that fit the terminal: the newest text and
    the footer stay in view instead of freezing behind rich's overflow ellipsis."""

    def __init__(self, renderable: Any) -> None:
        self.renderable = renderable

    def __rich_console__(self, console: Any, options: Any) -> Any:
        from rich.segment import Segment

        lines = console.render_lines(self.renderable, options, pad=False)
        room = max(1, (options.height or console.size.height) - 1)
        shown = lines[-room:]
        for number, line in enumerate(shown):
            yield from line
            if number < len(shown) - 1:
                yield Segment.line()


class JSONView(View):
    """One JSON object per delta and line (`replay --json`), for scripts and diffs."""

    def show(self, delta: Delta) -> None:
        self.out.write(json.dumps(delta_json(delta), ensure_ascii=False) + "\n")
        self.out.flush()


def make_view(kind: str, *, counting: str, title: str = "", out: IO[str] | None = None) -> View:
    """The view for `kind`: `"json"`, `"live"` (needs rich) or `"plain"`."""
    stream = out if out is not None else sys.stdout
    if kind == "json":
        return JSONView(stream, counting=counting)
    if kind == "live":
        return LiveView(stream, counting=counting, title=title)
    return PlainView(stream, counting=counting, title=title)

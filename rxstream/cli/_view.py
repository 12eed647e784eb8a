"""What the command shows of a stream: a live rich view, plain text, or JSON lines.

Every view takes the same calls, from whichever thread the stream runs on:
`delta(d)` for each delta, `count(c)` for each running `TokenCount`, then one
`end(error=..., interrupted=...)`. The views keep the partial result: an
interrupted or failed stream still shows what arrived, and the footer.
"""

from __future__ import annotations

import json
import re
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import IO, Any

from ..core import wire as codec
from ..core.tools import CallSlot, ToolCallMatcher
from ..models import (
    Citation,
    Delta,
    Finish,
    ReasoningDelta,
    RefusalDelta,
    ServerToolCall,
    ServerToolResult,
    TextDelta,
    TokenCount,
    ToolCallDelta,
    Usage,
)

__all__ = ["JSONView", "LiveView", "PlainView", "Stats", "View", "delta_json", "server_tool_line"]


def delta_json(delta: Delta) -> dict[str, Any]:
    """A delta as a JSON object: `type` first, then its fields (rxstream's encoding,
    `rxstream.core.wire`, so `wire.decode` gives the delta back, `raw` included).

    >>> delta_json(TextDelta("Hi"))
    {'type': 'text', 'text': 'Hi', 'choice': 0}
    """
    return codec.encode(delta)


def server_tool_line(item: ServerToolCall | ServerToolResult) -> str:
    """One line for a tool the provider ran: its name, id and (shortened) input.

    >>> server_tool_line(ServerToolCall("srv_1", "web_search", {"query": "weather"}))
    'server tool: web_search (srv_1) {"query": "weather"}'
    >>> server_tool_line(ServerToolResult("srv_1", "web_search_tool_result"))
    'server tool result: web_search_tool_result (srv_1)'
    """
    if isinstance(item, ServerToolCall):
        shown = json.dumps(item.input, ensure_ascii=False)
        if len(shown) > _SHOWN_INPUT:
            shown = shown[: _SHOWN_INPUT - 1] + "…"
        ident = f" ({item.id})" if item.id else ""
        return f"server tool: {item.name}{ident} {shown}"
    ident = f" ({item.call_id})" if item.call_id else ""
    return f"server tool result: {item.name}{ident}"


# How much of a server tool's input a line shows.
_SHOWN_INPUT = 200


_JSON_SIGNIFICANT = re.compile(r'[{}\[\]"\\]')


class _ObjectEnd:
    """Where the top-level JSON value of a call's arguments closes, found in linear time.

    Fed the arguments piece by piece; looks at each character once (brackets,
    quotes and escapes only), so a call is known to be whole the moment its
    last brace arrives, without re-parsing the text so far on every fragment.
    """

    __slots__ = ("_depth", "_escaped", "_in_string", "closed")

    def __init__(self) -> None:
        self._depth = 0
        self._in_string = False
        self._escaped = False  # the last piece ended inside a string, just after a backslash
        self.closed = False

    def feed(self, piece: str) -> bool:
        """Take the next piece; True when the top-level object or array closed in it."""
        if self.closed:
            return False
        skip = 0 if self._escaped else -1
        self._escaped = False
        for match in _JSON_SIGNIFICANT.finditer(piece):
            at = match.start()
            if at == skip:
                continue
            char = match.group()
            if self._in_string:
                if char == "\\":
                    skip = at + 1
                    self._escaped = skip == len(piece)
                elif char == '"':
                    self._in_string = False
            elif char == '"':
                self._in_string = True
            elif char in "{[":
                self._depth += 1
            elif char in "}]" and self._depth > 0:
                self._depth -= 1
                if self._depth == 0:
                    self.closed = True
                    return True
        return False


class _Call:
    """One tool call as the view shows it.

    Which call a fragment belongs to is the core's decision (`ToolCallMatcher`,
    the rule `accumulate_tool_calls` follows): two calls that share an index
    but not an id stay two calls here too. `parsed` is set once the arguments
    are a whole JSON object, so a call can be shown before its choice ends.
    """

    __slots__ = (
        "_end",
        "_pieces",
        "choice",
        "finished",
        "name",
        "parsed",
        "shown",
        "size",
        "slot",
        "spoiled",
    )

    def __init__(self, slot: CallSlot, choice: int) -> None:
        self.slot = slot
        self.choice = choice
        self.name: str | None = None
        self.parsed: dict[str, Any] | None = None
        self.shown = False
        self.finished = False  # its choice finished
        self.size = 0  # characters of arguments so far
        self.spoiled = False  # text followed the closed object: the arguments are not one object
        self._pieces: list[str] = []
        self._end = _ObjectEnd()

    @property
    def id(self) -> str | None:
        """The call's id (the matcher sets it from the first fragment that has one)."""
        return self.slot.id

    @property
    def arguments(self) -> str:
        """The arguments so far (joined once, then kept whole)."""
        if len(self._pieces) > 1:
            self._pieces[:] = ["".join(self._pieces)]
        return self._pieces[0] if self._pieces else ""

    def add(self, delta: ToolCallDelta) -> None:
        """Take one of the call's fragments."""
        if delta.name and self.name is None:
            self.name = delta.name
        piece = delta.arguments
        if not piece:
            return
        if self._end.closed and not self.spoiled and piece.strip():
            self.spoiled = True
            self.parsed = None
        self._pieces.append(piece)
        self.size += len(piece)
        if self._end.feed(piece):
            self._parse()

    def finish(self) -> None:
        """The choice finished: empty arguments are `{}`; otherwise try the whole text once."""
        self.finished = True
        if self.parsed is None and not self.spoiled:
            if not self.arguments.strip():
                self.parsed = {}
            elif not self._end.closed:
                self._parse()

    def _parse(self) -> None:
        try:
            value = json.loads(self.arguments)
        except ValueError:
            return
        if isinstance(value, dict):
            self.parsed = value

    def summary(self) -> str:
        """`name (id) arguments`: parsed arguments re-serialised, else the raw text."""
        if self.parsed is not None:
            shown = json.dumps(self.parsed, ensure_ascii=False)
        else:
            shown = self.arguments
        ident = f" ({self.id})" if self.id else ""
        return f"{self.name or '?'}{ident} {shown}"


Clock = Callable[[], float]


@dataclass
class Stats:
    """Timing and counts for the footer.

    Times come from `clock`: the wall clock (`time.monotonic`) for a live
    stream, the recorded `: t=` stamps for a replayed log, so a replay's
    footer shows the timings of the stream it recorded.
    """

    clock: Clock = time.monotonic
    started: float = 0.0
    first_token: float | None = None
    last_token: float | None = None
    ended: float | None = None
    deltas: int = 0
    content: int = 0  # deltas that carry text, reasoning, a refusal or tool-call arguments
    tokens: dict[int, TokenCount] = field(default_factory=dict)  # the latest count per choice
    usage: Usage | None = None
    finish: str | None = None
    finish_raw: str | None = None
    citations: int = 0
    counting: str = ""

    def __post_init__(self) -> None:
        self.started = self.clock()

    def footer(self, interrupted: bool = False) -> str:
        """One line: time to first token, the rate, token counts, provider usage, finish."""
        parts: list[str] = []
        if self.first_token is None:
            parts.append("no tokens yet")
        else:
            parts.append(f"time to first token {self.first_token - self.started:.2f} s")
            parts.append(self.rate())
        counted = self.counted()
        if counted is not None:
            refusal = f", refusal {counted.refusal}" if counted.refusal else ""
            parts.append(
                f"{counted.total} tokens (reasoning {counted.reasoning}, text {counted.text}, "
                f"tool arguments {counted.tool_arguments}{refusal}; {self.counting})"
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
        if self.citations:
            parts.append(f"{self.citations} citation{'s' if self.citations > 1 else ''}")
        if self.finish:
            raw = self.finish_raw
            # The provider's own word, where it is another ("end_turn", "STOP", "completed").
            said = f" ({raw})" if raw and raw != self.finish else ""
            parts.append(f"finish: {self.finish}{said}")
        if interrupted:
            parts.append("interrupted")
        return " · ".join(parts)

    def counted(self) -> TokenCount | None:
        """The local token counts, summed over the choices (None when not counting)."""
        counts = list(self.tokens.values())
        if not counts:
            return None
        if len(counts) == 1:
            return counts[0]
        return TokenCount(
            text=sum(c.text for c in counts),
            reasoning=sum(c.reasoning for c in counts),
            refusal=sum(c.refusal for c in counts),
            tool_arguments=sum(c.tool_arguments for c in counts),
            final=all(c.final for c in counts),
        )

    def rate(self) -> str:
        """Output per second, from the first content delta to the latest one.

        Counted tokens when an encoding counts them (exact for the text so far,
        "estimated" while a running count says it estimates a long tail); else
        the provider's `completion_tokens` once its usage arrived ("provider's
        count"); else content deltas, which are not tokens (one delta may carry
        several), and the label says so.
        """
        first, last = self.first_token, self.last_token
        span = last - first if first is not None and last is not None else 0.0
        counted = self.counted()
        if counted is not None:
            # A running count may estimate a long unbroken tail (`TokenCount.estimated`,
            # where the core has it); the final count is exact.
            estimated = any(getattr(c, "estimated", False) for c in self.tokens.values())
            amount, unit = counted.total, "tokens/s (estimated)" if estimated else "tokens/s"
        elif self.usage is not None:
            amount, unit = self.usage.completion_tokens, "tokens/s (provider's count)"
        else:
            amount, unit = self.content, "deltas/s (not tokens)"
        if span <= 0 or amount <= 0:
            return f"- {unit}"
        return f"{amount / span:.1f} {unit}"


class View:
    """The common state of the text views; subclasses render it."""

    def __init__(self, out: IO[str], *, counting: str, clock: Clock = time.monotonic) -> None:
        self.out = out
        self.lock = threading.RLock()
        self.stats = Stats(clock=clock, counting=counting)
        self.reasoning: dict[int, str] = {}
        self.text: dict[int, str] = {}
        self.refusal: dict[int, str] = {}
        self.calls: list[_Call] = []  # every call, in the order they began
        self._matchers: dict[int, ToolCallMatcher] = {}  # per unfinished choice
        self._open: dict[int, dict[CallSlot, _Call]] = {}  # the calls of each unfinished choice
        self.touched: list[_Call] = []  # the calls the latest delta changed
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
            self.show(delta)

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
            call = calls[slot] = _Call(slot, choice)
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
        self._call_sections: dict[_Call, _Section] = {}
        self._respoken: set[_Call] = set()
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


def _call_text(call: _Call, over: bool) -> Any:
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


class JSONView(View):
    """One JSON object per delta and line (`replay --json`), for scripts and diffs."""

    def show(self, delta: Delta) -> None:
        self.out.write(json.dumps(delta_json(delta), ensure_ascii=False) + "\n")
        self.out.flush()


def make_view(
    kind: str,
    *,
    counting: str,
    title: str = "",
    out: IO[str] | None = None,
    clock: Clock = time.monotonic,
) -> View:
    """The view for `kind`: `"json"`, `"live"` (needs rich) or `"plain"`.

    Args:
        kind: which view.
        counting: how tokens are counted, in words, for the footer.
        title: printed first (not by the JSON view).
        out: where to write (default `sys.stdout`).
        clock: the footer's clock (see `Stats`).
    """
    stream = out if out is not None else sys.stdout
    if kind == "json":
        return JSONView(stream, counting=counting, clock=clock)
    if kind == "live":
        return LiveView(stream, counting=counting, title=title, clock=clock)
    return PlainView(stream, counting=counting, title=title, clock=clock)

"""Tool calls as the command's views show them: the client's calls and the provider's.

`ShownCall` follows one tool call through its fragments (the core's
`ToolCallMatcher` decides which call a fragment belongs to) and knows, in
linear time (`_ObjectEnd`), the moment its arguments are one whole JSON
object; `server_tool_line` is the line for a tool the provider ran.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..core.tools import CallSlot
from ..models import ServerToolCall, ServerToolResult, ToolCallDelta

__all__ = ["ShownCall", "server_tool_line"]


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


class ShownCall:
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

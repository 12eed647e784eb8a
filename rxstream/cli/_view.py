"""What the command shows of a stream: a live rich view, plain text, or JSON lines.

Every view takes the same calls, from whichever thread the stream runs on:
`delta(d)` for each delta, `count(c)` for each running `TokenCount`, then one
`end(error=..., interrupted=...)`. The views keep the partial result: an
interrupted or failed stream still shows what arrived, and the footer.

`make_view` picks one. Each view has a module of its own: the common state
(`_view_base`), the plain view (`_view_plain`), the live view (`_view_live`),
the JSON view (`_view_json`), the footer (`_view_stats`) and the tool calls as
shown (`_view_calls`); their names are importable from here.
"""

from __future__ import annotations

import sys
import time
from typing import IO

from ._view_base import View
from ._view_calls import _ObjectEnd as _ObjectEnd
from ._view_calls import server_tool_line
from ._view_json import JSONView, delta_json
from ._view_live import LiveView
from ._view_live import _settled as _settled
from ._view_live import _Tail as _Tail
from ._view_plain import PlainView
from ._view_stats import Clock as Clock
from ._view_stats import Stats

__all__ = ["JSONView", "LiveView", "PlainView", "Stats", "View", "delta_json", "server_tool_line"]


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

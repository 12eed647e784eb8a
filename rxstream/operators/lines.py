"""`lines()`: raw `str`/`bytes` chunks -> lines, over `rxstream.core.lines.LineSplitter`."""

from __future__ import annotations

from collections.abc import Callable

from reactivex import Observable

from .._deprecate import deprecated_arguments
from ..core.lines import DEFAULT_LIMIT, LineSplitter
from ._machine import machine_operator

__all__ = ["lines"]


@deprecated_arguments(renamed={"limit": "line_limit"})
def lines(
    *, line_limit: int = DEFAULT_LIMIT
) -> Callable[[Observable[str | bytes]], Observable[str]]:
    """Cut a stream of `str` or `bytes` chunks into lines at CRLF, LF or CR.

    A line excludes its terminator (a blank line is `""`); the unterminated
    last line is emitted when the source completes; no other character (such
    as U+2028) ends a line. Bytes are decoded as UTF-8 after cutting, so a
    character split across chunks survives, and invalid bytes become U+FFFD.
    A UTF-8 BOM at the very start is removed once. Each subscription gets its
    own splitter.

    Marble sketch (chunks `a`=`"x\\ny"`, `b`=`"z\\r\\n"`)::

        -a----b-|   ->   -x----(yz)-|

    Args:
        line_limit: the longest line allowed, in bytes (characters for `str`
            chunks), as the sources' `line_limit=`. (Formerly `limit=`,
            deprecated.)

    Returns:
        An operator from chunks to lines.

    Raises:
        ValueError: `line_limit` is not positive (at once, not on subscribe).

    Errors sent downstream: `LineTooLongError` for a line past `line_limit`;
    `TypeError` for a chunk that is not `str`/`bytes` or mixes the two. The
    upstream is disposed in both cases.

    >>> import reactivex
    >>> _ = reactivex.of(b"data: 1\\r", b"\\ndata: 2").pipe(lines()).subscribe(print)
    data: 1
    data: 2
    """
    LineSplitter(line_limit=line_limit)  # Check the option now, where the caller can see it.
    return machine_operator(lambda: LineSplitter(line_limit=line_limit))

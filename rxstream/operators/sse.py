"""`sse_frames()`: lines -> `SSEFrame`, over `rxstream.core.sse.SSEParser`."""

from __future__ import annotations

from collections.abc import Callable

from reactivex import Observable

from ..core.sse import SSEParser
from ..models import SSEFrame
from ._machine import machine_operator

__all__ = ["sse_frames"]


def sse_frames() -> Callable[[Observable[str]], Observable[SSEFrame]]:
    """Interpret lines as server-sent events, by the WHATWG event-stream rules.

    A blank line dispatches the event; `data` fields join with `"\\n"`;
    comments (`: ping`) and unknown fields are dropped; `event` names the
    frame (default `"message"`); `id` and `retry` persist across frames. An
    event still open when the source completes is dispatched too, since real
    servers often omit the last blank line. Knows nothing of `[DONE]`: that
    rule belongs to `decode_chunks`. Each subscription gets its own parser.

    Marble sketch (`d`=`"data: hi"`, `c`=`": ping"`, `_`=`""`)::

        -c-_-d-_-d-|   ->   -------F---(F|)

    Returns:
        An operator from lines to `SSEFrame`s.

    >>> import reactivex
    >>> _ = reactivex.of("event: delta", "data: {}", "").pipe(sse_frames()).subscribe(print)
    SSEFrame(data='{}', event='delta', id=None, retry=None)
    """
    return machine_operator(SSEParser)

"""`sse_frames()`: lines -> `SSEFrame`, over `rxstream.core.sse.SSEParser`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from reactivex import Observable

from ..core.sse import SSEParser
from ..models import SSEFrame
from ._machine import machine_operator
from .wire import wire_of

__all__ = ["sse_frames"]


def sse_frames() -> Callable[[Observable[str]], Observable[SSEFrame]]:
    """Interpret lines as server-sent events, by the WHATWG event-stream rules.

    A blank line dispatches the event; `data` fields join with `"\\n"`;
    comments (`: ping`) and unknown fields are dropped; `event` names the
    frame (default `"message"`); `id` and `retry` persist across frames. An
    event still open when the source completes is dispatched too, since real
    servers often omit the last blank line. Knows nothing of `[DONE]`: that
    rule belongs to `decode_chunks`. Each subscription gets its own parser.

    A source that knows its wire is not SSE (`rs.from_request(client,
    request)` with an `rs.request` of Ollama, NDJSON lines, or of Bedrock,
    event-stream bytes) goes through unchanged, for `decode()` to read: the
    same pipeline then reads every dialect (see `rxstream.operators.wire`).

    Marble sketch (`d`=`"data: hi"`, `c`=`": ping"`, `_`=`""`)::

        -c-_-d-_-d-|   ->   -------F---(F|)

    Returns:
        An operator from lines to `SSEFrame`s.

    >>> import reactivex
    >>> _ = reactivex.of("event: delta", "data: {}", "").pipe(sse_frames()).subscribe(print)
    SSEFrame(data='{}', event='delta', id=None, retry=None)
    """
    frame = machine_operator(SSEParser)

    def operator(source: Observable[Any]) -> Observable[Any]:
        if wire_of(source) in ("ndjson", "eventstream"):
            return source
        return frame(source)

    return operator

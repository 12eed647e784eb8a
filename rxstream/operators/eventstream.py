"""`eventstream_frames()`: raw `bytes` chunks -> AWS event-stream messages, over
`rxstream.core.eventstream.EventStreamParser`."""

from __future__ import annotations

from collections.abc import Callable

from reactivex import Observable

from .._deprecate import deprecated_arguments
from ..core.eventstream import DEFAULT_LIMIT, EventStreamParser
from ..models import EventStreamMessage
from ._machine import machine_operator

__all__ = ["eventstream_frames"]


@deprecated_arguments(renamed={"limit": "frame_limit"})
def eventstream_frames(
    *, frame_limit: int = DEFAULT_LIMIT
) -> Callable[[Observable[bytes]], Observable[EventStreamMessage]]:
    """Cut a binary AWS event stream (`application/vnd.amazon.eventstream`) into messages.

    The input is the body's raw `bytes` blocks, cut anywhere (a source with
    `body="bytes"`); the output is one `EventStreamMessage(headers, payload)` per
    message, with both CRC32 checksums verified. AWS Bedrock's ConverseStream
    is read as `rs.eventstream_frames(), rs.decode("bedrock")`. Each
    subscription gets its own parser.

    Marble sketch (`a`, `b`: two blocks that cut message M1 in its prelude;
    `c` ends M2 and holds M3 whole)::

        -a-b-c-|   ->   ---M1-(M2,M3)-|
        -a-|       ->   ---#            (TruncatedStreamError: input ended inside M1)

    Args:
        frame_limit: the longest message accepted, in bytes (default 32
            MiB). (Formerly `limit=`, deprecated.)

    Returns:
        An operator from `bytes` chunks to `EventStreamMessage`s.

    Raises:
        TypeError, ValueError: `frame_limit` is not an int of at least 16 (at once,
            not on subscribe).

    Errors sent downstream (the upstream is disposed): `MalformedChunkError`
    for a bad checksum, a length that does not fit or is over `frame_limit`, a
    broken or unknown-typed header (after the messages before it);
    `TruncatedStreamError` when the input ends inside a message; `TypeError`
    for a chunk that is not bytes.

    >>> import reactivex
    >>> from rxstream.core.eventstream import encode_message
    >>> data = encode_message({":event-type": "messageStop"}, b'{"stopReason":"end_turn"}')
    >>> _ = reactivex.of(data[:5], data[5:]).pipe(eventstream_frames()).subscribe(print)
    EventStreamMessage(headers={':event-type': 'messageStop'}, payload=b'{"stopReason":"end_turn"}')
    """
    EventStreamParser(frame_limit=frame_limit)  # Check the option now, where the caller can see it.
    return machine_operator(lambda: EventStreamParser(frame_limit=frame_limit))

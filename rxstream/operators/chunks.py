"""`decode_chunks()`: `SSEFrame` -> `ChatChunk`, over `ChunkDecoder`
(`rxstream.core.dialects.openai_chat.chunks`)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from reactivex import Observable

from ..core import ChunkDecoder
from ..core.dialects import OnMalformed
from ..models import ChatChunk, SSEFrame
from ._machine import machine_operator

__all__ = ["decode_chunks"]


def decode_chunks(
    *, on_malformed: OnMalformed = "raise"
) -> Callable[[Observable[SSEFrame]], Observable[ChatChunk]]:
    """Decode the frames of an OpenAI-compatible chat stream into `ChatChunk`s.

    Each frame's data is decoded as JSON and kept whole in `ChatChunk.raw`.
    `data: [DONE]` completes the stream at once and disposes the upstream, so
    the connection is released without reading further. Blank data is
    dropped. A provider error (an `event: error` frame, or a chunk in an
    error shape such as `{"error": ...}`) ends the stream with
    `ProviderError`. Data that is not a chat chunk, or a chunk with a field of
    the wrong JSON type (`choices[0].delta.content is a JSON number, not a
    string, an array or null`), ends it with `MalformedChunkError` (or is
    dropped with `on_malformed="skip"`); nothing is skipped in silence. The
    source completing before `[DONE]` while a choice is unfinished ends it
    with `TruncatedStreamError`; a stream that brought no chat data at all
    (nothing, only `[DONE]`, only a usage chunk) with `EmptyStreamError`, at
    `[DONE]` or at completion. Each subscription gets its own decoder.

    Marble sketch (`a`, `b` = chunk frames, `D` = `[DONE]`, `e` = an error frame)::

        -a-b-D-x-|   ->   -A-B-|       (upstream disposed at D)
        -a-e-|       ->   -A-#         (ProviderError)
        -a-|         ->   -A-#         (TruncatedStreamError: no finish, no [DONE])
        -D-|         ->   -#           (EmptyStreamError: no answer came)

    Args:
        on_malformed: `"raise"` (the default) or `"skip"` frames whose data is
            not a valid chat chunk.

    Returns:
        An operator from `SSEFrame`s to `ChatChunk`s.

    Raises:
        ValueError: `on_malformed` is neither `"raise"` nor `"skip"`.

    Errors sent downstream, besides the above: `TypeError` for an item that
    is not an `SSEFrame`, naming what is missing in front (lines: "add
    rs.sse_frames() before it").

    >>> import reactivex
    >>> chunk = SSEFrame('{"choices": [{"delta": {"content": "Hi"}}]}')
    >>> frames = reactivex.of(chunk, SSEFrame("[DONE]"))
    >>> _ = frames.pipe(decode_chunks()).subscribe(print)
    ChatChunk(raw={'choices': [{'delta': {'content': 'Hi'}}]})
    """
    # Build one decoder now so a bad option fails at pipe-building time.
    ChunkDecoder(on_malformed=on_malformed)
    return machine_operator(partial(ChunkDecoder, on_malformed=on_malformed))

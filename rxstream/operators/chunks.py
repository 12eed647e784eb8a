"""`decode_chunks()`: `SSEFrame` -> `ChatChunk`, over `rxstream.core.chunks.ChunkDecoder`."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from reactivex import Observable

from ..core.chunks import ChunkDecoder, OnMalformed
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
    dropped. A provider error (an `event: error` frame, or a chunk with an
    `"error"` key) ends the stream with `ProviderError`; data that is not a
    chat chunk with `MalformedChunkError` (or is dropped with
    `on_malformed="skip"`); the source completing before `[DONE]` while a
    choice is unfinished with `TruncatedStreamError`. Each subscription gets
    its own decoder.

    Marble sketch (`a`, `b` = chunk frames, `D` = `[DONE]`, `e` = an error frame)::

        -a-b-D-x-|   ->   -A-B-|       (upstream disposed at D)
        -a-e-|       ->   -A-#         (ProviderError)
        -a-|         ->   -A-#         (TruncatedStreamError: no finish, no [DONE])

    Args:
        on_malformed: `"raise"` (the default) or `"skip"` frames whose data is
            not a valid chat chunk.

    Returns:
        An operator from `SSEFrame`s to `ChatChunk`s.

    Raises:
        ValueError: `on_malformed` is neither `"raise"` nor `"skip"`.

    >>> import reactivex
    >>> frames = reactivex.of(SSEFrame('{"choices": []}'), SSEFrame("[DONE]"))
    >>> _ = frames.pipe(decode_chunks()).subscribe(print)
    ChatChunk(raw={'choices': []})
    """
    # Build one decoder now so a bad option fails at pipe-building time.
    ChunkDecoder(on_malformed=on_malformed)
    return machine_operator(partial(ChunkDecoder, on_malformed=on_malformed))

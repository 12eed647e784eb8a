"""The `"openai-chat"` dialect: `/v1/chat/completions` streams, frames to deltas in one machine.

Input: `SSEFrame`s of a chat-completion stream (`stream: true`), as every
OpenAI-compatible server sends them. Output: the deltas `deltas()` gives.

`OpenAIChatDecoder` is `ChunkDecoder` followed by `DeltaDecoder`, fused: one
machine, one call per frame, the same items and the same errors as the long
spelling `decode_chunks(), deltas()` (which stays for chunk-level access).
It is done at `data: [DONE]`; a stream that stops before it with a choice
unfinished is `TruncatedStreamError`, one that brought no choice at all
`EmptyStreamError`.

Finish reasons are OpenAI's own words already (`stop`, `length`,
`tool_calls`, `content_filter`); the legacy `function_call` is normalised to
`tool_calls`. `Finish.raw` keeps what was sent.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar

from ...errors import MalformedChunkError
from ...models import Delta, SSEFrame
from ..chunks import ChunkDecoder, OnMalformed
from ..deltas import DeltaDecoder

__all__ = ["OpenAIChatDecoder"]


class OpenAIChatDecoder:
    """Decode an OpenAI-compatible chat stream's frames into deltas (see the module docstring).

    Args:
        on_malformed: `"raise"` (the default) or `"skip"` frames that are not
            valid chat chunks.

    >>> decoder = OpenAIChatDecoder()
    >>> decoder.feed(SSEFrame('{"choices": [{"index": 0, "delta": {"content": "Hi"}}]}'))
    [TextDelta(text='Hi', choice=0)]
    >>> decoder.feed(SSEFrame("[DONE]")), decoder.done
    ([], True)
    """

    dialect: ClassVar[str] = "openai-chat"

    __slots__ = ("_chunks", "_deltas")

    def __init__(self, *, on_malformed: OnMalformed = "raise") -> None:
        self._chunks = ChunkDecoder(on_malformed=on_malformed)
        self._deltas = DeltaDecoder()

    @property
    def done(self) -> bool:
        """True once `[DONE]` arrived."""
        return self._chunks.done

    def feed(self, frame: SSEFrame) -> list[Delta]:
        """Take one frame; return its deltas (see `ChunkDecoder.feed`)."""
        try:
            chunks = self._chunks.feed(frame)
        except MalformedChunkError as exc:
            raise _named(exc) from None
        if not chunks:
            return []
        return self._deltas.feed(chunks[0])

    def feed_all(self, frames: Iterable[SSEFrame], out: list[Delta]) -> None:
        """`out += feed(frame)` for each frame, stopping at `[DONE]`."""
        chunks = self._chunks
        deltas = self._deltas.feed
        for frame in frames:
            try:
                got = chunks.feed(frame)
            except MalformedChunkError as exc:
                raise _named(exc) from None
            if got:
                out += deltas(got[0])
            elif chunks.done:
                return

    def close(self) -> list[Delta]:
        """End the input (see `ChunkDecoder.close`)."""
        self._chunks.close()
        return self._deltas.close()


def _named(exc: MalformedChunkError) -> MalformedChunkError:
    if exc.dialect is not None:
        return exc
    return MalformedChunkError(exc.reason, exc.data, dialect=OpenAIChatDecoder.dialect)

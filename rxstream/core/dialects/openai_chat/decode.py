"""The `"openai-chat"` dialect: the decoder (wire events -> deltas).

See the package docstring for the wire format and the rules.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar

from ....models import (
    Delta,
    SSEFrame,
)
from .chunks import ChatFrameDecoder

__all__ = ["OpenAIChatDecoder"]


class OpenAIChatDecoder(ChatFrameDecoder):
    """Decode an OpenAI-compatible chat stream's frames into deltas (see the module docstring).

    The chunk decoder's machine giving the deltas of each chunk rather than
    the chunk: what `decode_chunks(), deltas()` gives, each chunk read once,
    with the dialect named in `MalformedChunkError`.

    Args:
        on_malformed: `"raise"` (the default) or `"skip"` frames that are not
            valid chat chunks.

    >>> decoder = OpenAIChatDecoder()
    >>> decoder.feed(SSEFrame('{"choices": [{"index": 0, "delta": {"content": "Hi"}}]}'))
    [TextDelta(text='Hi', choice=0)]
    >>> decoder.feed(SSEFrame("[DONE]")), decoder.done
    ([], True)
    """

    __slots__ = ()
    dialect: ClassVar[str] = "openai-chat"
    gives_deltas: ClassVar[bool] = True

    def feed(self, frame: SSEFrame) -> list[Delta]:
        """Take one frame; return its deltas (see `ChunkDecoder.feed`)."""
        out: list[Delta] = []
        self._decode((frame,), out)
        return out

    def feed_all(self, frames: Iterable[SSEFrame], out: list[Delta]) -> None:
        """`out += feed(frame)` for each frame, stopping at `[DONE]`."""
        self._decode(frames, out)

    def close(self) -> list[Delta]:
        """End the input (see `ChunkDecoder.close`)."""
        self._check_end()
        return []

"""The `"openai-chat"` dialect: chat chunks to flat delta events (`DeltaDecoder`).

Input: `ChatChunk` items (deltas fed in pass through unchanged, so the machine
composes in any order). Output: the deltas each chunk carries, in wire order,
read by a `ChunkReader` (see `reader` for the rules and the fields read).
"""

from __future__ import annotations

from collections.abc import Iterable

from ....errors import MalformedChunkError
from ....models import (
    DELTA_CLASSES,
    ChatChunk,
    Delta,
)
from ..._machine import FAILED, OPEN, MachineBase, Stage, wrong_input
from .._shared import ShapeError
from .reader import TOO_DEEP, ChunkReader, chunk_text

#: The delta classes themselves, passed on after one set lookup (subclasses take `isinstance`).
_PASSED = frozenset(DELTA_CLASSES)

__all__ = ["DeltaDecoder", "deltas_of"]


class DeltaDecoder(MachineBase):
    """Turn `ChatChunk` items into flat delta events, in wire order.

    Deltas fed in are passed through unchanged.

    Args:
        operator: the operator to name when an item is neither a chunk nor a
            delta (default `"rs.deltas()"`), for operators built over this one.

    Returns (from `feed`): the deltas the chunk carries; `close()` returns `[]`.

    Raises:
        MalformedChunkError: a field of the chunk has the wrong JSON type (the
            message names its path), or the chunk nests deeper than Python
            can follow.
        TypeError: an item that is neither a `ChatChunk` nor a delta.
        RuntimeError: `feed` after `close()` or after an error.

    >>> d = DeltaDecoder()
    >>> d.feed(ChatChunk({"choices": [{"index": 0, "delta": {"content": "Hi"}}]}))
    [TextDelta(text='Hi', choice=0)]
    """

    __slots__ = ("_name", "_reader")
    operator = "rs.deltas()"

    def __init__(self, *, operator: str | None = None) -> None:
        super().__init__()
        self._reader = ChunkReader()
        # The operator named in misuse messages, when it is not `rs.deltas()`.
        self._name = operator or self.operator

    @property
    def pristine(self) -> bool:
        """True while no chunk has been fed (nor the decoder closed)."""
        reader = self._reader
        return (
            self._state is OPEN and not reader.seen and reader.usage is None and not reader.finished
        )

    def _passes_deltas(self) -> bool:
        """Fusion hook (`rxstream.core.pipeline`): whether this decoder may be left out.

        True while nothing was fed (and it is this very class): it passes
        deltas on as they are, so behind a decoder that gives deltas only, or
        a source of deltas only, it has nothing to do.
        """
        return type(self) is DeltaDecoder and self.pristine

    @property
    def reader(self) -> ChunkReader:
        """The reader of the chunks fed so far (choices seen, roles, last usage)."""
        return self._reader

    def feed(self, chunk: ChatChunk | Delta) -> list[Delta]:
        """Decode one chunk (or pass one delta through)."""
        out: list[Delta] = []
        self.feed_all((chunk,), out)
        return out

    def feed_all(self, chunks: Iterable[ChatChunk | Delta], out: list[Delta]) -> None:
        """Feed many items at once: the same as `out += feed(item)` for each in turn."""
        if self._state is not OPEN:
            self._refuse()
        read = self._reader.read
        chunk: object = None
        mark = len(out)
        try:
            for chunk in chunks:
                if type(chunk) in _PASSED:
                    # A delta (what a dialect decoder in front gives): passed on, one test.
                    out.append(chunk)  # type: ignore[arg-type]
                elif type(chunk) is ChatChunk or isinstance(chunk, ChatChunk):
                    # A chunk that fails half-way must leave none of its deltas.
                    mark = len(out)
                    read(chunk.raw, out)
                elif isinstance(chunk, DELTA_CLASSES):
                    out.append(chunk)
                else:
                    raise wrong_input(chunk, self._name, Stage.CHUNKS)
        except ShapeError as exc:
            self._state = FAILED
            del out[mark:]
            raise MalformedChunkError(exc.reason, _text_of(chunk)) from None
        except RecursionError:
            self._state = FAILED
            del out[mark:]
            raise MalformedChunkError(TOO_DEEP, _text_of(chunk)) from None
        except BaseException:
            self._state = FAILED
            raise

    def close(self) -> list[Delta]:
        """End the input; nothing is buffered, so this returns `[]`."""
        self._closing()
        return []


def _text_of(chunk: object) -> str:
    return chunk_text(chunk.raw) if isinstance(chunk, ChatChunk) else repr(chunk)


def deltas_of(item: ChatChunk | Delta, decoder: DeltaDecoder, operator: str) -> list[Delta]:
    """The deltas one item of a machine taking "`ChatChunk` or delta" items stands for.

    For a machine of your own that takes both (the library's delta machines
    take deltas only; their operators put a `DeltaDecoder` in front): a delta
    stands for itself, a chunk for the deltas `decoder` reads in it, and
    anything else is the caller's mistake.

    Args:
        item: the item fed to the machine.
        decoder: the machine's own `DeltaDecoder` (it keeps the stream's state:
            finish reasons and usage already reported).
        operator: the operator the user wrote, e.g. `"rs.accumulate_tool_calls()"`.

    Returns:
        The deltas, in wire order.

    Raises:
        MalformedChunkError: a field of the chunk has the wrong JSON type.
        TypeError: the item is neither, worded by `wrong_input` (e.g. an
            `SSEFrame` -> "add rs.decode_chunks() before it").

    >>> from rxstream.models import TextDelta
    >>> deltas_of(TextDelta("a"), DeltaDecoder(), "rs.think_tags()")
    [TextDelta(text='a', choice=0)]
    """
    if isinstance(item, DELTA_CLASSES):
        return [item]
    if isinstance(item, ChatChunk):
        return decoder.feed(item)
    raise wrong_input(item, operator, Stage.CHUNKS)

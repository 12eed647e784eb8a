"""Per encoding, what its token counters share, and how each new text is counted.

Input: an encoding object (a tiktoken `Encoding`, or any callable
`str -> tokens`). Output: a factory of `_TextCount`s, one per growing text
of a stream.

Invariants: the counters of one tiktoken encoding share its compiled splits,
its piece counts and its remembered splits (all bounded, all functions of
the text alone), so a new stream starts warm and no count depends on what
was counted before. What is shared is held weakly, by the encoding object.
A callable, or an encoding whose single-piece encoder or pattern cannot be
used, is counted by re-encoding from the last boundary (`_BoundaryTextCount`).
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Callable, Sequence
from typing import Any

from ..._encodings import TiktokenEncoding
from ._count import _BoundaryTextCount, _PieceTextCount, _TextCount
from ._pieces import _boundaries, _splitters
from ._spec import _is_tiktoken
from ._splits import _PieceCounts, _Splits

# Per tiktoken encoding, what its counters share: the compiled splits and the
# piece counts seen so far (bounded), so a new stream starts warm.
_shared: weakref.WeakKeyDictionary[Any, Callable[[], _TextCount]] = weakref.WeakKeyDictionary()
# The remembered splits among what they share (`_forget_splits`).
_shared_splits: weakref.WeakKeyDictionary[Any, _Splits] = weakref.WeakKeyDictionary()


def _forget_splits() -> None:
    """Forget every remembered split (benchmarks measure a counter that meets text afresh)."""
    for splits in list(_shared_splits.values()):
        splits.clear()


def _text_count_factory(
    encoding: TiktokenEncoding | Callable[[str], Sequence[object]],
) -> Callable[[], _TextCount]:
    if not _is_tiktoken(encoding):
        encode: Callable[[str], Sequence[object]] = encoding  # type: ignore[assignment]
        return lambda: _BoundaryTextCount(encode)
    try:
        return _shared[encoding]
    except (KeyError, TypeError):  # TypeError: not weakly referable
        pass
    enc: TiktokenEncoding = encoding  # type: ignore[assignment]  # checked above
    # One piece's byte-pair encoding, without the regex split: what tiktoken
    # runs on each piece of a whole text.
    encode_piece = getattr(enc, "_encode_single_piece", None) or getattr(
        enc, "encode_single_piece", None
    )
    splitters = _splitters(enc._pat_str)
    if splitters is None or not callable(encode_piece):  # pragma: no cover
        return lambda: _BoundaryTextCount(enc.encode_ordinary)
    findall, ascii_findall = splitters
    counts = _PieceCounts(encode_piece)
    splits = _Splits(findall, ascii_findall, counts)
    boundaries = _boundaries(enc._pat_str)

    def factory() -> _TextCount:
        return _PieceTextCount(
            splits, findall, ascii_findall, counts, enc.encode_ordinary, boundaries
        )

    with contextlib.suppress(TypeError):
        _shared[encoding] = factory
        _shared_splits[encoding] = splits
    return factory

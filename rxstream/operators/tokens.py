"""`count_tokens`: running, exact token counts of a stream (over `TokenCounter`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from reactivex import Observable

from .._deprecate import deprecated_arguments
from ..core import DeltaDecoder, pipeline
from ..core.tokens import EncodingSpec, TokenCounter, resolve_encoding
from ..models import ChatChunk, Delta, TokenCount
from ._machine import machine_operator

__all__ = ["count_tokens"]


@deprecated_arguments(positional=("encoding",))
def count_tokens(
    *,
    encoding: EncodingSpec = None,
) -> Callable[[Observable[ChatChunk | Delta]], Observable[TokenCount]]:
    """Count tokens as the stream runs: a running `TokenCount` per content delta.

    After each delta that adds text, reasoning, refusal or tool-call arguments
    to a choice comes that choice's running `TokenCount`; when the source
    completes, one `TokenCount(final=True)` per choice seen (choice order).
    Every count is exact for the text received so far (a count may shrink when a
    fragment merges with the text before it), except while a text runs on for
    more than a few hundred characters without a break: then, to keep the
    cost linear, that running count is an estimate and says so
    (`estimated=True`). The final counts are always exact for the whole stream.
    These are local counts of the completion only: the provider's `Usage` (with
    the prompt's tokens) rides along in `.usage` once it arrives (OpenAI sends
    it with `stream_options={"include_usage": True}`).

    Args:
        encoding: a tiktoken `Encoding`, an encoding or model name, any
            callable `str -> list[int]`, or None for `"o200k_base"`. A name is
            resolved now, once, without the network: `o200k_base` and
            `cl100k_base` ship with the `tokens` extra; each subscription then
            counts with its own state.

    Returns:
        An operator from chunks or deltas to `TokenCount` items.

    Raises:
        ImportError: a name was given and the `tokens` extra
            (`pip install "rxstream[tokens]"`) is missing.
        ValueError: an unknown encoding or model name, or one that is neither
            shipped nor on disk.

    Marbles (`a` = `TextDelta("Hello")`, `b` = `TextDelta(" world")`, `u` a `Usage`)::

        -a--b--u--|
        -1--2-----(F|)      1: text=1, 2: text=2, F: text=2, usage=u, final=True

    >>> import reactivex
    >>> from rxstream.models import TextDelta
    >>> out = []
    >>> _ = reactivex.of(TextDelta("a b"), TextDelta(" c")).pipe(
    ...     count_tokens(encoding=str.split)).subscribe(out.append)
    >>> [(c.text, c.final) for c in out]
    [(2, False), (3, False), (3, True)]
    """
    resolved = resolve_encoding(encoding)

    def build() -> Any:
        # What `chunks_or_deltas` builds (a delta decoder in front, for chunk
        # input), with the two fused where the fast paths allow: then deltas,
        # nearly every item, go straight to the counter.
        decoder = DeltaDecoder(operator="rs.count_tokens()")
        return pipeline.chain([decoder, TokenCounter(resolved)])

    return machine_operator(build)

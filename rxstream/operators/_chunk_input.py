"""The one adapter that lets the delta operators take `ChatChunk`s too.

The core machines under `accumulate_message`, `accumulate_tool_calls`,
`count_tokens`, `think_tags` (and `split_by_delta_type`) take deltas only.
These operators take deltas or chunks (their docstrings and
docs/concepts/architecture.md say so): so each runs its
machine behind the openai-chat `DeltaDecoder`, which decodes a chunk and lets
a delta through unchanged, and names the operator when an item is neither.
A machine that learns from the chunks themselves (the message accumulator's
roles and choices, its `chunks=`) reads them through that decoder's reader.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..core import Chained, DeltaDecoder

__all__ = ["chunks_or_deltas"]


def chunks_or_deltas(
    make: Callable[..., Any], operator: str, *, reads_chunks: bool = False
) -> Callable[[], Chained]:
    """A machine factory: `make()`'s machine with a `DeltaDecoder` in front.

    Args:
        make: builds the machine that takes deltas.
        operator: the operator the user wrote (e.g. `"rs.think_tags()"`), named
            when an item is neither a chunk nor a delta.
        reads_chunks: call `make(chunks=reader)` with the decoder's reader of
            the chunks (the message accumulator's roles and choices).

    Returns:
        A factory of the pair, one per subscription (the chunk decoder above
        it fuses with the pair when the operators are piped one after another).
    """

    def build() -> Chained:
        decoder = DeltaDecoder(operator=operator)
        machine = make(chunks=decoder.reader) if reads_chunks else make()
        return Chained(decoder, machine)

    return build

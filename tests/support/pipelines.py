"""The pipelines a dialect's raw bytes run through (as docs/concepts/architecture.md lists them).

`framing(dialect)` is the front that turns bytes into the dialect's wire items
(Bedrock `eventstream_frames`, Ollama `lines`, the SSE dialects `lines, sse_frames`);
`pipelines(dialect)` names the whole pipelines a test runs a recording through,
each built anew per call (so under whatever fast-path switch is on at the time):

- `"named"`: the framing, then `decode(dialect)`;
- `"auto"`: the framing, then `decode()` (the dialect detected);
- `"named-message"`: `"named"` then `accumulate_message()` (unless `message=False`);
- openai-chat also `"long-spelling"` (`decode_chunks, deltas, accumulate_message`, unless
  `message=False`) and, with `chunks=True`, `"chunks-message"` (`decode_chunks,
  accumulate_message`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from reactivex import Observable

import rxstream as rs

__all__ = ["Operator", "Pipeline", "framing", "pipelines"]

Operator = Callable[[Observable[Any]], Observable[Any]]
#: A pipeline's operators, built anew for each run.
Pipeline = Callable[[], list[Operator]]


def framing(dialect: str) -> list[Operator]:
    """The operators that turn a dialect's bytes into its wire items."""
    if dialect == "bedrock":
        return [rs.eventstream_frames()]
    if dialect == "ollama":
        return [rs.lines()]
    return [rs.lines(), rs.sse_frames()]


def pipelines(dialect: str, *, message: bool = True, chunks: bool = False) -> dict[str, Pipeline]:
    """The pipelines from raw bytes a recording of `dialect` runs through, by name."""
    chosen: dict[str, Pipeline] = {
        "named": lambda: [*framing(dialect), rs.decode(dialect)],
        "auto": lambda: [*framing(dialect), rs.decode()],
    }
    if message:
        chosen["named-message"] = lambda: [
            *framing(dialect),
            rs.decode(dialect),
            rs.accumulate_message(),
        ]
    if dialect != "openai-chat":
        return chosen
    if message:
        chosen["long-spelling"] = lambda: [
            *framing(dialect),
            rs.decode_chunks(),
            rs.deltas(),
            rs.accumulate_message(),
        ]
    if chunks:
        chosen["chunks-message"] = lambda: [
            *framing(dialect),
            rs.decode_chunks(),
            rs.accumulate_message(),
        ]
    return chosen

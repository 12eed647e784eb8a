"""What the dialect tests share: raw bytes through the real operators, SSE frames and their bytes.

Every dialect's test module builds its pipelines and frames from these, so a
change to how the conformance pipeline runs is made once.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal

import reactivex

import rxstream as rs
from rxstream.models import Delta, Message, SSEFrame

__all__ = ["Wire", "deltas_runner", "frame", "outcome", "runner", "wire_bytes"]

#: How a dialect's bytes are cut into the items its decoder takes.
Wire = Literal["sse", "ndjson", "eventstream"]


def _framing(wire: Wire) -> list[Callable[[Any], Any]]:
    if wire == "sse":
        return [rs.lines(), rs.sse_frames()]
    if wire == "ndjson":
        return [rs.lines()]
    return [rs.eventstream_frames()]


def outcome(
    pieces: Iterable[bytes], dialect: str, *, wire: Wire = "sse", message: bool = True
) -> tuple[list[Any], list[Exception]]:
    """Raw bytes through the real operators (framing, `decode`, then `accumulate_message`).

    Returns:
        What came out, and the errors (the first error ends the stream).
    """
    out: list[Any] = []
    errors: list[Exception] = []
    stages = [*_framing(wire), rs.decode(dialect)]
    if message:
        stages.append(rs.accumulate_message())
    reactivex.from_iterable(pieces).pipe(*stages).subscribe(out.append, errors.append)
    return out, errors


def runner(default: str, *, wire: Wire = "sse") -> Callable[..., list[Message]]:
    """`run(pieces, dialect=default)`: the messages of raw bytes, or the error raised."""

    def run(pieces: Iterable[bytes], dialect: str = default) -> list[Message]:
        out, errors = outcome(pieces, dialect, wire=wire)
        if errors:
            raise errors[0]
        return out

    return run


def deltas_runner(default: str, *, wire: Wire = "sse") -> Callable[..., list[Delta]]:
    """`deltas_of(pieces, dialect=default)`: the deltas of raw bytes, or the error raised."""

    def deltas_of(pieces: Iterable[bytes], dialect: str = default) -> list[Delta]:
        out, errors = outcome(pieces, dialect, wire=wire, message=False)
        if errors:
            raise errors[0]
        return out

    return deltas_of


def wire_bytes(frames: Sequence[Any], newline: str = "\n") -> bytes:
    """SSE frames as the bytes a server sends, every line ended by `newline`."""
    out: list[str] = []
    for f in frames:
        if f.event != "message":
            out.append(f"event: {f.event}{newline}")
        out += [f"data: {line}{newline}" for line in f.data.split("\n")]
        out.append(newline)
    return "".join(out).encode("utf-8")


def frame(payload: Any, event: str | None = None, *, typed: bool = False) -> SSEFrame:
    """An SSE frame of `payload` (JSON-encoded unless a `str`).

    Args:
        payload: the data.
        event: the event name (default `"message"`).
        typed: without `event`, name the event after the payload's `"type"` (Cohere's way).
    """
    data = payload if isinstance(payload, str) else json.dumps(payload)
    if (
        event is None
        and typed
        and isinstance(payload, dict)
        and isinstance(payload.get("type"), str)
    ):
        event = payload["type"]
    return SSEFrame(data, event or "message")

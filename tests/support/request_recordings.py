"""Assistant turns decoded from the real recordings in tests/data, for the request tests."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import reactivex as rx

import rxstream as rs
from rxstream.models import Delta, Finish, Message, Metadata, Usage

DATA = Path(__file__).parent.parent / "data"


def deltas(path: str, dialect: str) -> list[Delta]:
    """The deltas of the recording at `tests/data/<path>`, decoded as `dialect`."""
    data = (DATA / path).read_bytes()
    out: list[Delta] = []
    if dialect == "bedrock":
        rx.of(data).pipe(rs.eventstream_frames(), rs.decode(dialect)).subscribe(out.append)
    elif dialect == "ollama":
        rx.of(data).pipe(rs.lines(), rs.decode(dialect)).subscribe(out.append)
    else:
        rx.of(data).pipe(rs.lines(), rs.sse_frames(), rs.decode(dialect)).subscribe(out.append)
    return out


def message(*recordings: tuple[str, str]) -> Message:
    """One assistant `Message` from the recordings' deltas, one after the other.

    Each recording but the last gives its content only (its finish, usage and
    metadata end nothing), so two real turns make one interleaved turn, as a
    model that thinks, answers and then calls a tool sends it.
    """
    items: list[Delta] = []
    for i, (path, dialect) in enumerate(recordings):
        part = deltas(path, dialect)
        if i < len(recordings) - 1:
            part = [d for d in part if not isinstance(d, Finish | Usage | Metadata)]
        items.extend(part)
    return _accumulate(items)


def _accumulate(items: Iterable[Delta]) -> Message:
    out: list[Message] = []
    rx.from_iterable(items).pipe(rs.accumulate_message()).subscribe(out.append)
    assert len(out) == 1
    return out[0]

"""Every recorded stream in tests/data, read by rxstream: what its `"ai-sdk"` rendering must carry.

`reading(path)` decodes a recording in its own dialect (auto-detected) and
returns the deltas and the error that ended it (None when it ended cleanly);
`expected(reading)` is what any reader of the rendering must find in it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import reactivex

import rxstream as rs
from rxstream.core.tools import is_generated_call_id
from rxstream.errors import ProviderError, StreamError
from rxstream.models import (
    Citation,
    Delta,
    Finish,
    Metadata,
    ReasoningDelta,
    RefusalDelta,
    ServerToolCall,
    ServerToolResult,
    TextDelta,
    Usage,
)

DATA = Path(__file__).parents[1] / "data"
#: Every recording, as a path relative to tests/data.
FIXTURES = sorted(
    str(path.relative_to(DATA)) for path in DATA.glob("*/*") if path.name != "PROVENANCE.md"
)

#: rxstream's finish reasons as the AI SDK writes them (anything else is "other").
WORDS = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool-calls",
    "content_filter": "content-filter",
}


def reading(name: str) -> tuple[list[Delta], StreamError | None]:
    """The deltas of recording `name` (decoded in its own dialect) and the error that ended it."""
    data = (DATA / name).read_bytes()
    source = reactivex.from_iterable([data])
    if name.endswith(".eventstream"):
        stream = source.pipe(rs.eventstream_frames(), rs.decode())
    elif name.endswith(".ndjson"):
        stream = source.pipe(rs.lines(), rs.decode())
    else:
        stream = source.pipe(rs.lines(), rs.sse_frames(), rs.decode())
    out: list[Delta] = []
    errors: list[Exception] = []
    stream.subscribe(out.append, errors.append)
    error = errors[0] if errors else None
    assert error is None or isinstance(error, StreamError), error
    return out, error


@dataclass
class Expected:
    """What the `"ai-sdk"` rendering of a reading carries (choice 0 only)."""

    text: str = ""  # text and refusals, in wire order (a refusal is a text part)
    refusal: str = ""
    reasoning: str = ""
    #: (name, parsed input or the arguments text when not JSON) per client call, in order.
    calls: list[tuple[str, Any]] = field(default_factory=list)
    ids: list[str | None] = field(default_factory=list)
    sources: int = 0
    server_calls: int = 0
    finish: str | None = None  # the AI SDK's word; None when the stream ended in an error
    usage: Usage | None = None
    error: str | None = None  # errorText


def expected(deltas: list[Delta], error: StreamError | None) -> Expected:
    """What the rendering of `deltas` (then `error`) must carry."""
    out = Expected()
    arguments: dict[int, list[str]] = {}
    names: dict[int, str] = {}
    ids: dict[int, str | None] = {}
    finish: Finish | None = None
    for call in rs.to_iterator(reactivex.from_iterable(deltas).pipe(rs.accumulate_tool_calls())):
        if call.choice != 0:
            continue
        names[call.index] = call.name or ""
        # A call the provider gave no id: the rendering names it (rxstream's id for it is
        # made from the whole call, after the UI stream has had to name it).
        ids[call.index] = None if is_generated_call_id(call.id) else call.id
        arguments[call.index] = [call.arguments]
    for delta in deltas:
        if delta.choice != 0:
            continue
        match delta:
            case TextDelta(text=text):
                out.text += text
            case RefusalDelta(text=text):
                out.text += text
                out.refusal += text
            case ReasoningDelta(text=text):
                out.reasoning += text
            case Citation():
                out.sources += 1
            case ServerToolCall() | ServerToolResult():
                out.server_calls += 1
            case Finish():
                finish = delta
            case Usage():
                out.usage = delta
            case Metadata():
                pass
    for index in sorted(names):
        text = "".join(arguments[index])
        try:
            value: Any = json.loads(text) if text.strip() else {}
        except ValueError:
            value = text
        out.calls.append((names[index], value))
        out.ids.append(ids[index])
    if error is not None:
        out.error = error.message if isinstance(error, ProviderError) else str(error)
    elif finish is None:
        out.finish = "tool-calls" if names else "stop"
    else:
        out.finish = WORDS.get(finish.reason, "other")
    return out

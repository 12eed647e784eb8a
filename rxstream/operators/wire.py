"""A source that knows its wire: the framing a dialect needs, decided when the pipe is built.

`rs.from_request(client, request)` with a request built by `rs.request` knows
the request's dialect, so it knows how the answer arrives: SSE lines, NDJSON
lines, or the bytes of an AWS event stream. It hands out a `WireSource`, and
the operators that frame read that once, at pipe-building time (nothing is
checked per item):

- `sse_frames()` passes a source whose wire is not SSE through unchanged
  (Ollama's NDJSON lines, Bedrock's bytes): there is nothing to frame as SSE;
- `decode()` adds the framing its source's wire needs in front of the
  decoder: `sse_frames()` for SSE lines not framed yet, `eventstream_frames()`
  for event-stream bytes.

So `from_request(client, request).pipe(rs.sse_frames(), rs.decode(dialect))`
reads every dialect, with the dialect named in `rs.request` and in
`rs.decode` only. A source of unknown wire (any other source) is framed by
the operators the pipeline names, as before.
"""

from __future__ import annotations

from typing import Literal, TypeAlias, TypeVar

from reactivex import Observable, abc

__all__ = ["SourceWire", "WireSource", "wire_of"]

T = TypeVar("T")

#: How a source's items arrive: SSE lines, NDJSON lines, or event-stream bytes.
SourceWire: TypeAlias = Literal["sse", "ndjson", "eventstream"]

_WIRES = ("sse", "ndjson", "eventstream")


class WireSource(Observable[T]):
    """`source` itself, labelled with the wire its items are (see the module docstring).

    Subscribing subscribes `source` directly: the label costs nothing per item.

    Args:
        source: the observable of lines (`"sse"`, `"ndjson"`) or of `bytes`
            blocks (`"eventstream"`).
        wire: what the items are.

    Raises:
        ValueError: `wire` is not one of `"sse"`, `"ndjson"`, `"eventstream"`.

    >>> import reactivex
    >>> wire_of(WireSource(reactivex.of('{"done": true}'), "ndjson"))
    'ndjson'
    """

    def __init__(self, source: Observable[T], wire: SourceWire) -> None:
        if wire not in _WIRES:
            raise ValueError(f"wire must be one of {', '.join(map(repr, _WIRES))}, not {wire!r}")
        super().__init__()
        self._source = source
        #: What the items are: `"sse"`, `"ndjson"` or `"eventstream"`.
        self.wire: SourceWire = wire

    def _subscribe_core(
        self, observer: abc.ObserverBase[T], scheduler: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        # The source's own core, with the observer `subscribe` already wrapped:
        # no second observer layer between the source and the operators.
        return self._source._subscribe_core(observer, scheduler)


def wire_of(source: object) -> SourceWire | None:
    """The wire `source`'s items are, when it is a `WireSource`; None when unknown."""
    return source.wire if isinstance(source, WireSource) else None

"""The `"rxstream"` format in the dialect registry: rxstream's own events to the items they carry.

The format itself (encoding, decoding, its rules) is `rxstream.core.wire`;
this module only makes `rxstream.core.wire.read_event` a decoder of the
registry (`rs.decode("rxstream")`, and `"auto"`).

Input: `SSEFrame`s of the event format `rs.to_sse(dialect="rxstream")` writes
(see `rxstream.core.dialects.sse_encoder`): one event per item, its name the
item's type and its data the item's JSON, then one `done` or one `error`
event. Output: the items, as `rxstream.core.wire.decode` gives them back,
equal to what the server sent. Unlike a provider's dialect this
format carries any item a pipeline holds, not only deltas: `Message`,
`ToolCall`, `TokenCount`, `ChatChunk`, `SSEFrame` come out as themselves.

- `done` (`{"type": "done", "version": 1}`) ends the stream; a stream that
  ends right there without an item (a client that resumed after the last
  item) is complete, not empty;
- `error` (`{"type": "error", "error": "<class>", ...}`) raises the error the
  server stored, as its own class with its attributes (`wire.decode_error`;
  a class this version does not know is a plain `StreamError`);
- with `ids=True` every item comes as `StreamEntry(id, item)`, the id being
  the event's (the SSE last event id, `""` before any), which is what a
  client sends back as `Last-Event-ID` to resume right after that item.

An event whose name disagrees with its data's `type` (a `message` item is
SSE's default event, `message`), data that is not a JSON object, and an
object `wire.decode` cannot read (an unknown type or field, another dialect's
chunk) are `MalformedChunkError` naming the dialect; input that ends before
`done` is `TruncatedStreamError` (`EmptyStreamError` when nothing came).
The `done` event's `version` is the writer's `wire.FORMAT_VERSION`; items
of a newer writer that this version cannot read fail on their own, so
`done` only checks that it is an integer.

There is no renderer: `SSEEncoder("rxstream")` (`rs.to_sse(dialect="rxstream")`)
writes the format.
"""

from __future__ import annotations

from typing import Any

from ...models import SSEFrame, StreamEntry
from .. import wire
from ._base import DialectDecoder, OnMalformed

__all__ = ["RxstreamDecoder"]


class RxstreamDecoder(DialectDecoder):
    """Decode rxstream's own SSE events into the items they carry (see the module docstring).

    Args:
        on_malformed: `"raise"` (the default) or `"skip"` events that are not
            of the format. A stored error is raised either way.
        ids: emit `StreamEntry(event id, item)` instead of the bare items.

    >>> decoder = RxstreamDecoder(ids=True)
    >>> decoder.feed(SSEFrame('{"type":"text","text":"Hi","choice":0}', event="text", id="7-0"))
    [StreamEntry(id='7-0', item=TextDelta(text='Hi', choice=0))]
    >>> decoder.feed(SSEFrame('{"type":"done","version":1}', event="done", id="7-0")), decoder.done
    ([], True)
    """

    dialect = "rxstream"
    end_marker = "the done event"
    answer_required = False  # it carries what a pipeline held, possibly nothing

    def __init__(self, *, on_malformed: OnMalformed = "raise", ids: bool = False) -> None:
        super().__init__(on_malformed=on_malformed)
        if not isinstance(ids, bool):
            raise TypeError(f"ids must be a bool, got {type(ids).__name__}")
        self._ids = ids

    def _decode(self, frame: SSEFrame) -> list[Any]:
        if type(frame) is not SSEFrame:
            raise TypeError(
                f"the rxstream decoder takes SSEFrame items, got {type(frame).__name__}"
            )
        obj = self._object(frame.data, frame)
        if obj is None:
            return []
        try:
            item = wire.read_event(frame.event, obj)
        except ValueError as exc:
            return self._malformed(str(exc), frame)
        if isinstance(item, wire.Done):
            self._done = True
            return []
        if isinstance(item, BaseException):
            raise item
        self._answered = True
        if self._ids:
            return [StreamEntry(frame.id or "", item)]
        return [item]

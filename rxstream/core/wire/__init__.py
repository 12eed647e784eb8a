"""rxstream's own event format in one place: items as JSON, as SSE events, as Redis entries.

The format (described in docs/concepts/wire-format.md) carries any item a
pipeline holds, not only deltas, so any operator can run on the far side of
a process or network boundary: `rs.to_sse(dialect="rxstream")` sends it to
browsers, `rs.decode("rxstream")` reads it back, `rs.to_redis_stream` stores
it and `rs.from_redis_stream` follows it.

- `encode` / `decode`: an item and its tagged JSON object (`encode_error` /
  `decode_error` for a `StreamError`);
- `item_event`, `done_event`, `error_event` / `read_event`: the name and
  data of the SSE events (the SSE text itself is written by
  `rxstream.core.sse`'s writer); `text_event`, a text delta's `item_event`
  through a template (what the SSE encoder writes per token);
- `entry_fields`, `item_data`, `error_data`, `start_data` / `entry_number`,
  `entry_kind`, `read_json`: the fields of a Redis Stream entry (the Redis
  commands themselves are in `rxstream.io`).

Pure (sans-I/O), standard library only.
"""

from .decoding import Done, decode, decode_error, entry_kind, entry_number, read_event, read_json
from .encoding import (
    DONE,
    ENTRY_KINDS,
    FORMAT_VERSION,
    RXSTREAM,
    TYPES,
    done_event,
    encodable,
    encode,
    encode_error,
    entry_fields,
    error_data,
    error_event,
    item_data,
    item_event,
    reported,
    start_data,
    text_event,
)

__all__ = [
    "DONE",
    "ENTRY_KINDS",
    "FORMAT_VERSION",
    "RXSTREAM",
    "TYPES",
    "Done",
    "decode",
    "decode_error",
    "done_event",
    "encodable",
    "encode",
    "encode_error",
    "entry_fields",
    "entry_kind",
    "entry_number",
    "error_data",
    "error_event",
    "item_data",
    "item_event",
    "read_event",
    "read_json",
    "reported",
    "start_data",
    "text_event",
]

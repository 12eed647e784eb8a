"""I/O at the edges: sources (HTTP responses and iterables in), bridges (iterators out), multicast.

- `sources`: the public entry points `from_request`, `from_response`, `from_lines`;
- `_http`: the one HTTP boundary (what is accepted, every error mapped in one place);
- `credentials`: a request's credentials, redacted wherever a server echoes them
  (`Credentials`, `shown_url`), public for whatever shows an answer to a person;
- `_body`, `_loops`: what is done with each block of a body, and the sync and async read loops
  (`Handle` and `sync_source` are public here, for a source of one's own that reads
  in steps and closes what it holds on dispose: the CLI's byte source);
- `bridges`: `to_iterator`, `to_async_iterator`, pulling at the consumer's pace;
- `multicast`: one upstream (one request) for several observers;
- `redis` (a package: entries, feed, steps, writing, following, cluster, client,
  producer, follower): `to_redis_stream`, `from_redis_stream`, a pipeline's items
  kept in Redis Streams for followers in other processes and for resuming (needs
  the `redis` extra only when used).
"""

from ._loops import Handle, sync_source
from .bridges import to_async_iterator, to_iterator
from .credentials import Credentials, shown_url
from .multicast import Multicast, multicast
from .redis import from_redis_stream, to_redis_stream
from .sources import from_lines, from_request, from_response

__all__ = [
    "Credentials",
    "Handle",
    "Multicast",
    "from_lines",
    "from_redis_stream",
    "from_request",
    "from_response",
    "multicast",
    "shown_url",
    "sync_source",
    "to_async_iterator",
    "to_iterator",
    "to_redis_stream",
]

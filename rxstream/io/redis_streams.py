"""Redis Streams, where they were first imported from: `rxstream.io.redis` holds them now.

`to_redis_stream`, `from_redis_stream` and the client protocols are
re-exported here unchanged (this path stays supported), with
`map_redis_error` and `gone_cause` for tools that read Redis's errors.
"""

from . import redis
from .redis import from_redis_stream as from_redis_stream
from .redis import to_redis_stream as to_redis_stream
from .redis.client import map_redis_error as map_redis_error
from .redis.feed import gone_cause as gone_cause

__all__ = redis.__all__

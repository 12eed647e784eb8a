"""Redis Streams: a pipeline's items kept in Redis, for followers elsewhere and for resuming.

    # the process that reads the provider:
    rs.from_request(aclient, "POST", url, json=payload).pipe(
        rs.sse_frames(), rs.decode(), rs.to_redis_stream(redis, "answer:42")
    ).subscribe(ui)

    # any process, any time (a browser that reconnects sends Last-Event-ID):
    rs.from_redis_stream(redis, "answer:42", after=last_event_id, ids=True).pipe(rs.to_sse())

Both work with `redis.Redis` and `redis.asyncio.Redis` (redis-py, the `redis`
extra; typed here against small protocols, so any client with the same
`execute_command` and `pipeline` fits). What is stored, entry by entry, is
described in `rxstream.io.redis.entries`: one entry per item in the
versioned encoding of `rxstream.core.wire` (its version beside each entry),
between a `start` entry and an `end` (completed) or `error` entry, each
numbered, so a gap can be seen and a retried write is read once.

Decisions, where Redis leaves a choice:

- One stream per key and subscription: the producer's first write creates
  the stream atomically (a Lua `EVAL`) and fails with `StoredStreamError` when
  the key already holds anything, so two producers never interleave.
- Heartbeat: the producer appends a `beat` entry when it has written nothing
  for `heartbeat` seconds (default 2). A follower counts any entry as a sign
  of life and measures its age by the entry id (Redis's clock), so a follower
  that joins a stream whose producer died long ago fails at once, and one
  that follows a live stream fails `heartbeat_timeout` seconds (default 10)
  after the last entry, with `StreamTimeoutError`.
- TTL: the key expires `ttl` seconds (default one hour) after the end; while
  the stream runs, the expiry is pushed back with every heartbeat, so a long
  stream never expires under its followers (and one whose producer died
  expires `ttl` after its last heartbeat).
- Trimming: `XADD ... MAXLEN ~ maxlen` (default 100,000 entries). A follower
  that falls behind the trimming, or resumes after an id already trimmed,
  fails with `StoredStreamError` naming the entries that are gone and why:
  the follower then asks Redis (`TYPE`, `XINFO STREAM`) whether the key is
  gone (deleted, expired, lost in a restart), the stream was reset (Redis 7
  counts fewer entries added to the key than the producer numbered: deleted
  or lost, then written again), or it was trimmed (all counted). Redis 6
  keeps no such count; the message then names both causes.
- A key that does not exist: a follower from the start (`after=None`) waits
  for it up to `heartbeat_timeout` (a follower may well subscribe before the
  producer's first write), then fails with `StreamTimeoutError`; a follower
  that resumes (`after=` an id) fails at once with `StoredStreamError`: the
  stream it saw has expired or was deleted.
- Redis restarted mid-stream: both sides go through the client's retry policy
  (redis-py 8 retries a failed command 10 times with backoff by default).
  When Redis comes back with the stream (persistence on), producer and
  followers go on where they were, every item once; when it comes back
  without it, a follower that had not read the lost entries fails with
  `StoredStreamError` naming them; when the client gives up, the follower
  (or the producer) fails with `TransportError`.
- A producer whose subscription is disposed before the end writes an `error`
  entry (`TruncatedStreamError`), so followers end at once instead of
  waiting for the heartbeat timeout.
- One read per key per process: the followers of a key with one client (and,
  for an async client, one event loop) share one reader, one `XREAD BLOCK`
  on one connection whose entries are decoded once (a thread per key for a
  sync client, a task for an async one). Each follower still opens (resumes)
  on its own; one that joins a reader that is further along reads its
  backlog with `XRANGE` while the reader holds what it reads meanwhile for
  it; one that is slower than the stream drops out, catches up from Redis
  and joins again. The rules are in `rxstream.io.redis.feed`.
- Redis Cluster (`redis.cluster.RedisCluster`, `redis.asyncio.cluster.
  RedisCluster`): every command names the stream's one key, so any slot
  does. A read that Redis unblocks because its master is failed over, and,
  with a cluster client, a command that meets a master failing over (a
  refused connection, `CLUSTERDOWN`, `TRYAGAIN`, `READONLY`), is sent again
  with backoff for up to `FAILOVER_WINDOW` seconds: redis-py retries those
  at once, which a failover of a second or two outlasts.

Backpressure on the producer's side: items are passed downstream at once and
written behind them, in batches (one pipeline per batch, in order), by a
writer of their own: a thread for a sync client, a task on the event loop for
an async one (the loop is never blocked). At most `maxsize` entries wait
to be written, besides the batch being written (itself at most that many);
memory is bounded by twice `maxsize` entries. Then a sync producer's
thread waits in `on_next` (so the
source waits too); an async producer pauses an rxstream async source through
the demand signal (`rxstream._flow`) until the writer has caught up, and a
source that cannot be paused and runs `maxsize` further entries ahead
fails the stream with `BufferOverflowError`. Completion (or the error) is
passed downstream only once the end marker is written.

Errors (via `on_error`): Redis unreachable or failing is `TransportError`
(the message says where and what redis-py reported; nothing of a password);
a key of another type, a foreign or newer entry, a malformed or unknown resume
id, entries gone before a follower read them is `StoredStreamError`; a stream
whose producer fell silent is `StreamTimeoutError`; the error the producer
stored reaches each follower as its own class.

The modules, one job each (every decision lives in a sans-I/O module: each
job is one step machine, a generator that yields what to do next and is sent
what came of it; the sync and async shells only perform the steps, see
`rxstream.io.redis.steps`):

- `entries`: the entry format, `EntryWriter` and `EntryReader` (no I/O);
- `feed`: how a key is followed, `FollowPlan`, `Feed`, `Member` (no I/O);
- `steps`: the steps a job yields, and `drive` / `adrive`, which run a job;
- `writing`: the producer's job, `Writing` (no I/O);
- `following`: the follower's jobs, `following` and `reading` (no I/O);
- `cluster`: failover, `Failover` (when to send again) and the sends;
- `client`: the client protocols, `map_redis_error`, what a client tells;
- `producer`: `to_redis_stream`, its thread (sync) and task (async) shells;
- `follower`: `from_redis_stream`, its thread and task shells.
"""

from .client import AsyncPipeline, AsyncRedis, SyncPipeline, SyncRedis
from .follower import from_redis_stream
from .producer import to_redis_stream

__all__ = [
    "AsyncPipeline",
    "AsyncRedis",
    "SyncPipeline",
    "SyncRedis",
    "from_redis_stream",
    "to_redis_stream",
]

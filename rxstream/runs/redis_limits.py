"""`rs.RedisLimiter`: the limits of `rs.Limiter`, shared by every process through Redis.

N workers that spend one provider budget each hold a `RedisLimiter` with
the same `name` on the same Redis: every admission is one Lua script, so
it is atomic whatever the number of processes. What Redis holds, under
`{name}:` (one hash tag: a Redis Cluster keeps the keys on one node):

- `requests`, `tokens`: the admissions of the last window (sorted sets by
  time, in Redis's own clock, `TIME`, so the workers' clocks do not matter),
  with each admission's tokens (`spent`, a hash, corrected by the answer's
  usage) and their sum (`sum`);
- `leases`: the running requests, each with an expiry (`lease`, renewed
  while it runs, every `lease / 3`): a worker that dies frees its slots when
  they expire, not never;
- `routes`: what the providers said of each route (a 429's hold, a
  `remaining-requests: 0` until its reset, the tokens left until theirs);
- `state`: present while the rest is intact (the time admissions are held
  until after Redis started, see below).

The state is made by the first admission that finds none: then Redis
either never held this limiter or lost it (restarted without its data, the
keys deleted), and whatever was admitted before Redis started may still be in
its window. So the first window after Redis started admits nothing (the
state holds admissions until the start, from its `uptime_in_seconds`, plus a
window): nothing admitted before a restart and nothing after ever shares a
window beyond the budget, and a limiter on a Redis up for longer than a window
starts at once (as does one with only a `concurrency` bound, which has no
window to remember). The workers put their running leases back as they renew them.
The scripts and commands are written once, as steps that yield each command
(`Steps`): a sync client (`redis.Redis`) runs them on the thread that asks,
an async one (`redis.asyncio.Redis`) as tasks on its event loop, which an
admission never blocks.
While Redis cannot be reached, each waiting request fails with `LimiterError`
naming Redis and what failed (the caller retries, or `rs.chat`'s retry does);
a release that cannot reach Redis is left to the lease's expiry.

Within one process requests wait in arrival order (as `rs.Limiter`); across
processes the order is the order their scripts reach Redis. A slot freed in
this process admits the next waiter at once; one freed in another process is
noticed at the next check, `recheck` seconds later at most (the only
periodic work, and only while this process has a request waiting for a slot).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import inspect
import itertools
import math
import os
import threading
import uuid
from collections import deque
from collections.abc import Callable, Coroutine, Generator, Mapping
from typing import Any, Protocol, TypeVar

from reactivex import abc
from reactivex.disposable import SerialDisposable
from reactivex.scheduler import TimeoutScheduler
from reactivex.scheduler.eventloop import AsyncIOThreadSafeScheduler

from ..core.rate_limits import rate_limits
from ..errors import LimiterError, excerpt
from ..io.limits import Ask, Ticket
from ..io.redis.client import where_of
from ..models import Usage
from .limits import HOLD_AFTER_429, WINDOW, LimiterTicket, _positive, never_admitted

__all__ = ["AsyncRedis", "RedisLimiter", "SyncRedis"]

T = TypeVar("T")


class SyncRedis(Protocol):
    """What a `RedisLimiter` uses of a sync Redis client (`redis.Redis`)."""

    def execute_command(self, *args: Any, **options: Any) -> Any: ...


class AsyncRedis(Protocol):
    """What a `RedisLimiter` uses of an async Redis client (`redis.asyncio.Redis`)."""

    async def execute_command(self, *args: Any, **options: Any) -> Any: ...


def _now(arg: int) -> str:
    """The Lua that sets `now` (ms): `ARGV[arg]`, or Redis's own clock where it is -1."""
    return f"""
local now = tonumber(ARGV[{arg}])
if now < 0 then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end"""


# KEYS: requests tokens spent sum leases routes state
# ARGV: id tokens rpm tpm concurrency window_ms lease_ms route (unused) now_ms (-1: Redis TIME)
# Returns {admitted (1/0), wait_ms, why}: why 1 = held after a restart, 2 = a slot,
# 3 = a route's hold, 4 = no state yet (see `_START`), 0 = a window.
_ADMIT = (
    _now(10)
    + """
local id, tokens = ARGV[1], tonumber(ARGV[2])
local rpm, tpm, conc = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local window, lease, route = tonumber(ARGV[6]), tonumber(ARGV[7]), ARGV[8]
local state = redis.call('GET', KEYS[7])
if not state then return {0, 0, 4} end
state = tonumber(state)
if now < state then return {0, state - now, 1} end
local horizon = now - window
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', horizon)
local gone = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', horizon)
for _, old in ipairs(gone) do
  redis.call('DECRBY', KEYS[4], tonumber(redis.call('HGET', KEYS[3], old) or '0'))
  redis.call('HDEL', KEYS[3], old)
end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', horizon)
redis.call('ZREMRANGEBYSCORE', KEYS[5], '-inf', now)
local r = redis.call('HMGET', KEYS[6], route .. '|hold', route .. '|left', route .. '|reset')
local hold, left, reset = tonumber(r[1] or '0'), tonumber(r[2]), tonumber(r[3] or '0')
if hold > now then return {0, hold - now, 3} end
if left and reset > now and tokens > left then return {0, reset - now, 3} end
if conc > 0 and redis.call('ZCARD', KEYS[5]) >= conc then
  local first = redis.call('ZRANGE', KEYS[5], 0, 0, 'WITHSCORES')
  return {0, tonumber(first[2]) - now, 2}
end
local wait = 0
if rpm > 0 then
  local count = redis.call('ZCARD', KEYS[1])
  if count >= rpm then
    local at = redis.call('ZRANGE', KEYS[1], count - rpm, count - rpm, 'WITHSCORES')
    wait = tonumber(at[2]) + window - now
  end
end
local sum = tonumber(redis.call('GET', KEYS[4]) or '0')
if tpm > 0 and sum + tokens > tpm then
  local all = redis.call('ZRANGE', KEYS[2], 0, -1, 'WITHSCORES')
  for i = 1, #all, 2 do
    sum = sum - tonumber(redis.call('HGET', KEYS[3], all[i]) or '0')
    if sum + tokens <= tpm then
      wait = math.max(wait, tonumber(all[i + 1]) + window - now)
      break
    end
  end
end
if wait > 0 then return {0, wait, 0} end
redis.call('ZADD', KEYS[1], now, id)
if tpm > 0 then
  redis.call('ZADD', KEYS[2], now, id)
  redis.call('HSET', KEYS[3], id, tokens)
  redis.call('INCRBY', KEYS[4], tokens)
end
redis.call('ZADD', KEYS[5], now + lease, id)
if left and reset > now then redis.call('HSET', KEYS[6], route .. '|left', left - tokens) end
return {1, 0, 0}
"""
)

# KEYS: state; ARGV: uptime_ms window_ms now_ms (-1: Redis TIME). No state: whatever was
# admitted before Redis started is gone from it, so hold until a window after the start.
_START = (
    _now(3)
    + """
local hold = 0
if tonumber(ARGV[2]) > 0 then hold = now - tonumber(ARGV[1]) + tonumber(ARGV[2]) end
redis.call('SET', KEYS[1], hold, 'NX')
return 1
"""
)

# KEYS: spent sum leases; ARGV: id actual (-1: no usage)
_RELEASE = """
redis.call('ZREM', KEYS[3], ARGV[1])
local actual = tonumber(ARGV[2])
local old = redis.call('HGET', KEYS[1], ARGV[1])
if actual >= 0 and old then
  redis.call('HSET', KEYS[1], ARGV[1], actual)
  redis.call('INCRBY', KEYS[2], actual - tonumber(old))
end
return 1
"""

# KEYS: routes; ARGV: route hold_s left reset_s (-1: not said) now_ms (-1: Redis TIME)
_ANSWERED = (
    _now(5)
    + """
local route, hold = ARGV[1], tonumber(ARGV[2])
if hold >= 0 then
  local old = tonumber(redis.call('HGET', KEYS[1], route .. '|hold') or '0')
  redis.call('HSET', KEYS[1], route .. '|hold', math.max(old, now + math.floor(hold * 1000)))
end
if tonumber(ARGV[3]) >= 0 then
  redis.call('HSET', KEYS[1], route .. '|left', ARGV[3],
             route .. '|reset', now + math.floor(tonumber(ARGV[4]) * 1000))
end
return 1
"""
)

# KEYS: leases; ARGV: lease_ms now_ms (-1: Redis TIME) id...
_RENEW = (
    _now(2)
    + """
for i = 3, #ARGV do redis.call('ZADD', KEYS[1], now + tonumber(ARGV[1]), ARGV[i]) end
return 1
"""
)

_WHY_RESTARTED, _WHY_SLOT, _WHY_ROUTE, _WHY_NO_STATE = 1, 2, 3, 4


#: One Redis command (`execute_command`'s arguments).
Command = tuple[Any, ...]
#: Work with Redis written once for both clients: a generator that yields each command
#: and receives its answer (or has its exception thrown in); `_run` drives it with a sync
#: client, `_run_async` with an async one.
Steps = Generator[Command, Any, T]


def _run(redis: SyncRedis, steps: Steps[T]) -> T:
    """Drive `steps` with a sync client, on this thread."""
    answer: Any = None
    error: Exception | None = None
    while True:
        try:
            command = steps.send(answer) if error is None else steps.throw(error)
        except StopIteration as stop:
            result: T = stop.value
            return result
        try:
            answer, error = redis.execute_command(*command), None
        except Exception as exc:
            answer, error = None, exc


async def _run_async(redis: AsyncRedis, steps: Steps[T]) -> T:
    """Drive `steps` with an async client: each command awaited, the loop free meanwhile."""
    answer: Any = None
    error: Exception | None = None
    while True:
        try:
            command = steps.send(answer) if error is None else steps.throw(error)
        except StopIteration as stop:
            result: T = stop.value
            return result
        try:
            answer, error = await redis.execute_command(*command), None
        except Exception as exc:
            answer, error = None, exc


class _Script:
    """One Lua script, sent by its digest (`EVALSHA`), loaded again when Redis forgot it."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.sha = hashlib.sha1(source.encode()).hexdigest()

    def __call__(self, keys: list[str], args: list[Any]) -> Steps[Any]:
        try:
            return (yield ("EVALSHA", self.sha, len(keys), *keys, *args))
        except Exception as exc:
            if type(exc).__name__ != "NoScriptError" and "NOSCRIPT" not in str(exc):
                raise
        return (yield ("EVAL", self.source, len(keys), *keys, *args))


_SCRIPTS = {
    name: _Script(text)
    for name, text in (
        ("admit", _ADMIT),
        ("start", _START),
        ("release", _RELEASE),
        ("answered", _ANSWERED),
        ("renew", _RENEW),
    )
}


class _Waiter:
    __slots__ = ("admitted", "ask", "cancelled", "failed")

    def __init__(
        self, ask: Ask, admitted: Callable[[Ticket], None], failed: Callable[[Exception], None]
    ) -> None:
        self.ask = ask
        self.admitted = admitted
        self.failed = failed
        self.cancelled = False


_Ready = list[tuple[_Waiter, Ticket]]
_Failed = list[tuple[_Waiter, LimiterError]]


class RedisLimiter:
    """`rs.Limiter`'s limits, shared by every process that names the same limiter in Redis.

    With a sync client (`redis.Redis`) an admission runs its script on the
    thread that asks (a subscriber's, or a timer's). With an async client
    (`redis.asyncio.Redis`) every script runs as a task on the event loop that
    was running at the first admission: `admit` returns at once and the loop
    stays free while Redis answers (the admission comes from that task);
    requests from other threads are handed to that loop.

    Args:
        redis: a Redis client, sync (`redis.Redis`) or async
            (`redis.asyncio.Redis`), of the `redis` extra. Give it a
            `socket_timeout`: an admission waits for Redis's answer.
        name: the limiter's name: its keys are `{name}:...`; every worker
            that spends the same budget uses the same name.
        requests_per_minute: as `rs.Limiter`.
        tokens_per_minute: as `rs.Limiter`.
        concurrency: as `rs.Limiter`, across all the processes.
        lease: seconds a running request holds its slot unless renewed; this
            process renews its leases every `lease / 3` while they run, so
            only a dead worker's slots expire.
        recheck: while a request here waits for a slot another process
            holds, seconds between checks (a slot freed here is seen at once).
        window: the budgets' window in seconds (a minute; shorter in tests).
        scheduler: where the timers run (default: reactivex's
            `TimeoutScheduler`; with an async client, the event loop).
        clock: seconds now, for every process alike (default: Redis's own
            clock, `TIME`, so the workers' clocks do not matter); a test
            gives its virtual scheduler's.

    Raises:
        TypeError: a bound of the wrong type.
        ValueError: a bound below 1, an empty name, a lease, recheck or
            window that is not positive.

    Errors (via `on_error` of the request's stream):
        LimiterError: Redis could not be reached or refused the script (the
            message names the limiter, the Redis address and what failed);
            a request estimated at more tokens than `tokens_per_minute`;
            with an async client, a first request admitted where no event
            loop runs.

    Example:
        >>> limiter = rs.RedisLimiter(redis.Redis(), "openai-prod",  # doctest: +SKIP
        ...                           requests_per_minute=5000, concurrency=50)
        >>> rs.chats(client, asks, limiter=limiter).subscribe(print)  # doctest: +SKIP
    """

    def __init__(
        self,
        redis: SyncRedis | AsyncRedis,
        name: str,
        *,
        requests_per_minute: int | None = None,
        tokens_per_minute: int | None = None,
        concurrency: int | None = None,
        lease: float = 60.0,
        recheck: float = 0.25,
        window: float = WINDOW,
        scheduler: abc.SchedulerBase | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError(f"name must be a non-empty str, got {name!r}")
        for what, value in (("lease", lease), ("recheck", recheck), ("window", window)):
            if not isinstance(value, int | float) or isinstance(value, bool) or not value > 0:
                raise ValueError(f"{what} must be a positive number of seconds, got {value!r}")
        self.redis = redis
        self.name = name
        self.requests_per_minute = _positive("requests_per_minute", requests_per_minute)
        self.tokens_per_minute = _positive("tokens_per_minute", tokens_per_minute)
        self.concurrency = _positive("concurrency", concurrency)
        self.lease = float(lease)
        self.recheck = float(recheck)
        self.window = float(window)
        self._scheduler = scheduler or TimeoutScheduler.singleton()
        self._own_scheduler = scheduler is None
        self._clock = clock
        tag = "{" + name + "}"
        self._keys = [f"{tag}:{part}" for part in ("requests", "tokens", "spent", "sum")]
        self._keys += [f"{tag}:leases", f"{tag}:routes", f"{tag}:state"]
        self._prefix = f"{os.getpid()}-{uuid.uuid4().hex[:12]}-"
        self._ids = itertools.count()
        self._lock = threading.RLock()
        self._queue: deque[_Waiter] = deque()
        self._leases: set[str] = set()
        self._timer = SerialDisposable()
        self._timer_due = math.inf
        self._renewal = SerialDisposable()
        self._async = inspect.iscoroutinefunction(getattr(redis, "execute_command", None))
        # With an async client: the loop every script runs on, its tasks, the pump's state.
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._pumping = False
        self._pump_again = False

    def __repr__(self) -> str:
        return f"RedisLimiter({self.name!r} at {where_of(self.redis)})"

    @property
    def waiting(self) -> int:
        """How many requests of this process are queued."""
        return len(self._queue)

    @property
    def running(self) -> int:
        """How many admitted requests of this process have not been released."""
        return len(self._leases)

    # ------------------------------------------------------------------ the protocol

    def admit(
        self,
        ask: Ask,
        admitted: Callable[[Ticket], None],
        failed: Callable[[Exception], None],
    ) -> Callable[[], None]:
        """Queue `ask` (`rxstream.io.limits.Admission`); see `rs.Limiter.admit`."""
        refusal = never_admitted(repr(self), self.tokens_per_minute, ask) or self._no_loop()
        if refusal is not None:
            failed(refusal)
            return _nothing
        waiter = _Waiter(ask, admitted, failed)

        def enqueue() -> None:
            with self._lock:
                self._queue.append(waiter)
            self._pump()

        self._later(enqueue)  # with an async client, on its loop, where every script runs

        def withdraw() -> None:
            waiter.cancelled = True

        return withdraw

    # ------------------------------------------------------------------ the async client's loop

    def _no_loop(self) -> LimiterError | None:
        """With an async client: take the running loop as the limiter's (the first time), or
        the error that none runs. None with a sync client, or once a loop is known."""
        if not self._async or self._loop is not None:
            return None
        try:
            self._loop = asyncio.get_running_loop()
        except RuntimeError:
            return LimiterError(
                repr(self),
                "an async Redis client runs on an event loop, and none runs here: "
                "admit the first request from code running on the loop the client belongs to",
            )
        if self._own_scheduler:
            self._scheduler = AsyncIOThreadSafeScheduler(self._loop)
        return None

    def _on_loop(self, action: Callable[[], Any]) -> None:
        """Run `action` on the limiter's loop: now when already there, else handed over."""
        assert self._loop is not None
        try:
            here = asyncio.get_running_loop()
        except RuntimeError:
            here = None
        if here is self._loop:
            action()
        else:
            self._loop.call_soon_threadsafe(action)

    def _spawn(self, work: Coroutine[Any, Any, Any]) -> None:
        """Run `work` as a task of the limiter's loop (kept until it ends)."""
        task = asyncio.ensure_future(work, loop=self._loop)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # ------------------------------------------------------------------ the rules

    def _now_ms(self) -> int:
        """The time the scripts go by: Redis's own (-1), or the given clock's."""
        return -1 if self._clock is None else int(self._clock() * 1000)

    def _failure(self, what: str, exc: Exception) -> LimiterError:
        return LimiterError(
            f"RedisLimiter {self.name!r}",
            f"Redis at {where_of(self.redis)} failed {what}: {type(exc).__name__}: "
            f"{excerpt(str(exc))}",
        )

    def _try(self, ask: Ask) -> Steps[tuple[str | None, float, int]]:
        """One admission script: (the lease id or None, seconds to wait, why)."""
        id = self._prefix + str(next(self._ids))
        args = [
            id,
            ask.tokens,
            self.requests_per_minute or 0,
            self.tokens_per_minute or 0,
            self.concurrency or 0,
            int(self.window * 1000),
            int(self.lease * 1000),
            ask.route,
            0,
            self._now_ms(),
        ]
        admitted, wait_ms, why = yield from _SCRIPTS["admit"](self._keys, args)
        if int(why) == _WHY_NO_STATE:
            yield from self._start()
            admitted, wait_ms, why = yield from _SCRIPTS["admit"](self._keys, args)
        if int(why) == _WHY_RESTARTED:
            yield from self._renew()  # Redis may have lost its data: our leases go back in
        return (id if int(admitted) else None), int(wait_ms) / 1000, int(why)

    def _start(self) -> Steps[None]:
        """Create the state: held until a window after Redis started (see the module docstring)."""
        info = yield ("INFO", "server")
        uptime = int(info["uptime_in_seconds"]) if isinstance(info, dict) else 0
        # Only a window's budget remembers the past; leases come back as they are renewed.
        windowed = self.requests_per_minute is not None or self.tokens_per_minute is not None
        args = [uptime * 1000, int(self.window * 1000) if windowed else 0, self._now_ms()]
        yield from _SCRIPTS["start"]([self._keys[6]], args)

    def _pump(self) -> None:
        """Admit what the budget allows now (see `_admissions`), then hand the answers out."""
        if not self._async:
            with self._lock:
                ready, failed = _run(self.redis, self._admissions())
            _hand_out(ready, failed)
        elif self._pumping:  # one pump at a time: the running one goes round once more
            self._pump_again = True
        else:
            self._pumping = True
            self._spawn(self._pump_async())

    async def _pump_async(self) -> None:
        try:
            again = True
            while again:
                self._pump_again = False
                steps = self._admissions()
                ready, failed = await _run_async(self.redis, steps)
                _hand_out(ready, failed)
                again = self._pump_again
        finally:
            self._pumping = False

    def _admissions(self) -> Steps[tuple[_Ready, _Failed]]:
        """Admit in arrival order until Redis says wait; a held route's requests step aside."""
        ready: _Ready = []
        failed: _Failed = []
        held: dict[str, float] = {}
        queue, at, wake = self._queue, 0, math.inf
        while at < len(queue):
            waiter = queue[at]
            if waiter.cancelled:
                del queue[at]
                continue
            if waiter.ask.route in held:
                at += 1
                continue
            try:
                id, wait, why = yield from self._try(waiter.ask)
            except Exception as exc:
                error = self._failure("while admitting a request", exc)
                failed = [(w, error) for w in queue if not w.cancelled]
                queue.clear()
                break
            if id is None:
                if why == _WHY_ROUTE:
                    held[waiter.ask.route] = wait
                    at += 1
                    continue
                wake = min(wait, self.recheck) if why == _WHY_SLOT else wait
                break
            del queue[at]
            self._leases.add(id)
            ready.append((waiter, LimiterTicket(self, waiter.ask.route, id)))
        self._arm(min(wake, *held.values()) if held else wake)
        if ready:
            self._arm_renewal()
        return ready, failed

    def _arm(self, wait: float) -> None:
        if wait == math.inf:
            return
        now = self._scheduler.now.timestamp()
        due = now + max(wait, 0.001)
        if due >= self._timer_due:
            return
        self._timer_due = due
        self._timer.disposable = self._scheduler.schedule_relative(due - now, self._on_timer)

    def _on_timer(self, _: abc.SchedulerBase, __: Any = None) -> None:
        with self._lock:
            self._timer_due = math.inf
        self._later(self._pump)

    def _later(self, action: Callable[[], None]) -> None:
        """A timer's or a ticket's work: here (sync client), or on the limiter's loop."""
        if self._async:
            self._on_loop(action)
        else:
            action()

    def _arm_renewal(self) -> None:
        if self._renewal.disposable is None:
            self._renewal.disposable = self._scheduler.schedule_relative(
                self.lease / 3, self._on_renewal
            )

    def _on_renewal(self, _: abc.SchedulerBase, __: Any = None) -> None:
        with self._lock:
            self._renewal.disposable = None
            if not self._leases:
                return
            self._arm_renewal()
        self._later(lambda: self._redis_work(self._renew()))

    def _redis_work(self, steps: Steps[None], then: Callable[[], None] | None = None) -> None:
        """Run `steps` (which ignore Redis being away): at once, or as a task on the loop."""
        if not self._async:
            _run(self.redis, steps)
            if then is not None:
                then()
            return

        async def work() -> None:
            await _run_async(self.redis, steps)
            if then is not None:
                then()

        self._spawn(work())

    def _renew(self) -> Steps[None]:
        leases = list(self._leases)
        if not leases:
            return
        # Redis away: the next renewal (or admission after a restart) tries again.
        with contextlib.suppress(Exception):
            yield from _SCRIPTS["renew"](
                [self._keys[4]], [int(self.lease * 1000), self._now_ms(), *leases]
            )

    def _answered(self, route: str, status: int, headers: Mapping[str, str]) -> None:
        limits = rate_limits(headers, self._scheduler.now.timestamp())
        hold = -1.0
        if status == 429:
            resets = [r for r in (limits.requests_reset, limits.tokens_reset) if r is not None]
            said = limits.retry_after
            hold = said if said is not None else max(resets) if resets else HOLD_AFTER_429
        if limits.remaining_requests == 0:
            hold = max(hold, limits.requests_reset or self.window)
        left = limits.remaining_tokens if limits.remaining_tokens is not None else -1
        args = [route, hold, left, limits.tokens_reset or self.window, self._now_ms()]
        if hold < 0 and left < 0:
            return
        self._later(lambda: self._redis_work(_quietly(_SCRIPTS["answered"]([self._keys[5]], args))))

    def _release(self, id: str, usage: Usage | None) -> None:
        actual = -1 if usage is None else usage.prompt_tokens + usage.completion_tokens
        with self._lock:
            self._leases.discard(id)
        # Redis away: the lease expires in Redis; the token estimate stands.
        steps = _quietly(
            _SCRIPTS["release"]([self._keys[2], self._keys[3], self._keys[4]], [id, actual])
        )
        self._later(lambda: self._redis_work(steps, then=self._pump))


def _quietly(steps: Steps[Any]) -> Steps[None]:
    """`steps` with Redis being away ignored (a hint lost, or left to a lease's expiry)."""
    with contextlib.suppress(Exception):
        yield from steps


def _hand_out(ready: _Ready, failed: _Failed) -> None:
    """Tell the waiters (outside the lock: an admitted request may start its stream here)."""
    for waiter, ticket in ready:
        waiter.admitted(ticket)
    for waiter, error in failed:
        waiter.failed(error)


def _nothing() -> None:
    return None

"""One worker of the multi-process RedisLimiter test: admits requests, prints what happened.

Run as `python -m tests.runs.redis_worker PORT NAME COUNT RPM CONCURRENCY WINDOW`. Each
request waits for its admission, is recorded (`admit`, the time), "runs" a few
milliseconds, is recorded again (`release`) and released. A `LimiterError` (Redis
away) is recorded (`error`, its message) and the same request asks again a little
later, as a caller's retry would. One JSON object per line on stdout.
"""

from __future__ import annotations

import json
import random
import sys
import threading
import time
from typing import Any

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

import rxstream as rs
from rxstream.io.limits import Ask, Ticket


def main(port: int, name: str, count: int, rpm: int, concurrency: int, window: float) -> None:
    # No retries of redis-py's own: the outage reaches the limiter (and this log).
    client = redis.Redis(host="127.0.0.1", port=port, socket_timeout=2, retry=Retry(NoBackoff(), 0))
    limiter = rs.RedisLimiter(
        client,
        name,
        requests_per_minute=rpm,
        concurrency=concurrency,
        window=window,
        lease=3.0,
        recheck=0.02,
    )

    def say(**fields: Any) -> None:
        print(json.dumps(fields), flush=True)

    done = 0
    while done < count:
        event = threading.Event()
        box: dict[str, Any] = {}

        def admitted(
            ticket: Ticket, box: dict[str, Any] = box, event: threading.Event = event
        ) -> None:
            box["ticket"] = ticket
            event.set()

        def failed(
            error: Exception, box: dict[str, Any] = box, event: threading.Event = event
        ) -> None:
            box["error"] = error
            event.set()

        limiter.admit(Ask("fake/route m", 1), admitted, failed)
        event.wait()
        if "error" in box:
            say(event="error", message=str(box["error"]), type=type(box["error"]).__name__)
            time.sleep(0.05)
            continue
        say(event="admit", at=time.time())
        time.sleep(random.uniform(0.0, 0.02))  # the request "runs"
        say(event="release", at=time.time())
        box["ticket"].release(None)
        done += 1


if __name__ == "__main__":
    port, name, count, rpm, concurrency, window = sys.argv[1:7]
    main(int(port), name, int(count), int(rpm), int(concurrency), float(window))

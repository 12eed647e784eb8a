"""`python -m examples.ai_sdk_chat`: Redis, the scripted model and the app, in one command.

    python -m examples.ai_sdk_chat [--host 127.0.0.1] [--port 8000] [--workers 2] [--pace 0.05]

Starts a `redis-server` on a free loopback port (`rxstream.testing.RedisServer`)
unless `REDIS_URL` is set, the scripted model (`FakeLLMServer`, speaking the
`CHAT_API` dialect) unless `CHAT_BASE_URL` is set, then the app under uvicorn
with `--workers` processes sharing one listening socket. Ctrl-C (or SIGTERM)
stops it all.
"""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Sequence
from types import FrameType

import uvicorn

# Redis and the scripted model start exactly as for the other example.
from examples.fastapi_chat.__main__ import services
from examples.fastapi_chat.provider import Provider


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m examples.ai_sdk_chat", description=(__doc__ or "").split("\n\n")[0]
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", type=int, default=8000, help="port to listen on")
    parser.add_argument("--workers", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument(
        "--pace", type=float, default=0.05, help="seconds between the scripted model's chunks"
    )
    parser.add_argument("--log-level", default="info", help="uvicorn's log level")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(argv)
    Provider.from_env()  # an unknown CHAT_API fails here, before anything starts

    def stop(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    try:
        with services(args.pace) as started:
            for line in started:
                print(f"started {line}", flush=True)
            print(
                f"useChat backend: http://{args.host}:{args.port}/api/chat "
                f"({args.workers} workers)",
                flush=True,
            )
            uvicorn.run(
                "examples.ai_sdk_chat.app:create_app",
                factory=True,
                host=args.host,
                port=args.port,
                workers=args.workers,
                log_level=args.log_level,
                # Open streams would hold a shutdown forever: cut them (clients resume).
                timeout_graceful_shutdown=2,
            )
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())

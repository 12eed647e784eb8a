"""`rxstream fake-server`: the demo's scripted answer, served on 127.0.0.1 until Ctrl-C.

A `FakeLLMServer` answers each provider's streaming path in that provider's wire
format (see `rxstream.testing.server`), every request with the answer `rxstream
demo` streams (reasoning, text, two parallel tool calls, usage). The command
prints the base URL, then the environment variables that point each official
SDK and `rs.request` at it (the variables `rxstream.io.requests.ENDPOINTS`
reads) and fake keys, so a docs block runs against it unchanged. It answers
the AI SDK's `useChat` too (`"ai-sdk"`, at `/api/chat`, which it shares with
Ollama: the body tells them apart); `--dialect ai-sdk` prints the URL to give
its `DefaultChatTransport`.
"""

from __future__ import annotations

import argparse
import time
from typing import IO

from ..core.dialects import AI_SDK
from ..io.requests import ENDPOINTS
from ..testing.server import FakeLLMServer
from ._demo import demo_scenario

__all__ = ["FAKE_KEY", "environment", "serve"]

#: The key the printed hint sets: the fake server accepts any.
FAKE_KEY = "fake-key"


def environment(origin: str, dialect: str | None = None) -> list[tuple[str, str]]:
    """The variables that point `dialect`'s SDK and `rs.request` (all when None) at `origin`.

    Base URLs first (OpenAI's carry `/v1`, as its SDK's do), then a fake key for
    each provider that needs one (Ollama needs none; Bedrock gets a Bedrock API
    key, so no AWS credentials or region are needed).

    >>> environment("http://127.0.0.1:8080", "anthropic")
    [('ANTHROPIC_BASE_URL', 'http://127.0.0.1:8080'), ('ANTHROPIC_API_KEY', 'fake-key')]
    """
    chosen = [e for e in ENDPOINTS.values() if dialect is None or e.dialect == dialect]
    bases: dict[str, str] = {}
    keys: dict[str, str] = {}
    for endpoint in chosen:
        root = f"{origin}/v1" if endpoint.dialect.startswith("openai") else origin
        bases.setdefault(endpoint.base_variables[0], root)
        if endpoint.key_required or endpoint.dialect == "bedrock":
            keys.setdefault(endpoint.key_variables[0], FAKE_KEY)
    return [*bases.items(), *keys.items()]


def banner(origin: str, dialect: str | None) -> str:
    """What the command prints once it listens: the URL line first (scripts wait for it)."""
    served = f"{dialect}'s streaming path" if dialect else "every dialect's streaming path"
    lines = [
        f"rxstream fake-server: listening on {origin}",
        f"answering {served} with a scripted answer (reasoning, text, two parallel tool "
        "calls, usage); any key is accepted",
    ]
    variables = environment(origin, dialect)
    if variables:
        lines.append("point the official SDKs and rs.request / rs.chat at it with:")
        lines += [f"  export {name}={value}" for name, value in variables]
    if dialect == AI_SDK:  # an application's own API: no SDK variable points at it
        lines += [
            "point the AI SDK's useChat at it with:",
            f'  new DefaultChatTransport({{ api: "{origin}/api/chat" }})',
        ]
    lines.append("Ctrl-C stops it.")
    return "\n".join(lines)


def serve(args: argparse.Namespace, out: IO[str]) -> int:
    """Serve until Ctrl-C (then exit status 0)."""
    with FakeLLMServer(demo_scenario(args.delay), port=args.port) as server:
        # Ctrl-C may come as soon as the banner is out: the try starts before it.
        try:
            print(banner(f"http://127.0.0.1:{server.port}", args.dialect), file=out, flush=True)
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
    print("rxstream fake-server: stopped", file=out, flush=True)
    return 0

"""`rxstream fake-server`: a fake LLM that listens to the request, on 127.0.0.1 until Ctrl-C.

A `FakeLLMServer.echoing()` answers each provider's streaming path in that
provider's wire format (see `rxstream.testing.server`), each request with an
answer made from it (`rxstream.testing.echo_answer`): the model it names (where
the dialect's stream reports one), a call of one of its own tools with arguments
valid for that tool's JSON schema, a final text when the conversation ends with
tool results, else a short quote of the last user message; then usage.

Faults (`--fault SPEC`, repeatable, or specs separated by commas) script the
failures a client must survive, in the asked dialect's own terms: the Nth
request gets the Nth fault, the last one repeating (`ok` is none), so
`--fault 429:retry-after=1 --fault cut:3 --fault ok` answers a 429, then a cut
stream, then every request normally. A request's `x-rxstream-fault: SPEC`
header scripts its own fault instead. The syntax (`rxstream.testing.parse_fault`):
`ok`, `cut:N` / `reset:N` (the connection closed / reset after N pieces of the
answer), `stall:SECONDS[@N]` / `stall:forever[@N]` (silence before the end marker,
or after N pieces), `error[:server|overloaded|rate-limit][@N]` (the dialect's
error event mid-stream), `STATUS[:retry-after=SECONDS]` (an HTTP error such as
`429`, `503`, `529` in the dialect's error shape; a 429 says `Retry-After: 1`
unless told), `overloaded` (529 for Anthropic, 503 elsewhere).

The command prints the base URL, then the environment variables that point each official
SDK and `rs.request` at it (the variables `rxstream.io.requests.ENDPOINTS`
reads) and fake keys, so a docs block runs against it unchanged. It answers
the AI SDK's `useChat` too (`"ai-sdk"`, at `/api/chat`, which it shares with
Ollama: the body tells them apart); `--dialect ai-sdk` prints the URL to give
its `DefaultChatTransport`.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from typing import IO

from ..core.dialects import AI_SDK
from ..io.requests import ENDPOINTS
from ..testing import FAULT_HEADER, FakeLLMServer, Fault, parse_faults

__all__ = ["FAKE_KEY", "environment", "fault_specs", "serve"]

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


def fault_specs(text: str) -> tuple[Fault, ...]:
    """`--fault`'s argument type: one spec or several separated by commas.

    Raises:
        argparse.ArgumentTypeError: a spec outside the syntax (saying which and the syntax).
    """
    try:
        return parse_faults(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def banner(origin: str, dialect: str | None, faults: Sequence[Fault] = ()) -> str:
    """What the command prints once it listens: the URL line first (scripts wait for it)."""
    served = f"{dialect}'s streaming path" if dialect else "every dialect's streaming path"
    lines = [
        f"rxstream fake-server: listening on {origin}",
        f"answering {served} with an answer that listens: the model asked for, a call of "
        "one of the request's tools (arguments from its schema), a text after tool results, "
        "else a quote of the user; any key is accepted",
    ]
    lines += _fault_lines(faults)
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


def _fault_lines(faults: Sequence[Fault]) -> list[str]:
    """The banner's lines on the faults: request by request, the last one repeating."""
    if not faults:
        return [f"faults: none (a request's {FAULT_HEADER}: SPEC header scripts its own)"]
    if len(faults) == 1:
        return [f"faults: every request: {faults[0].describe()}"]
    lines = ["faults:"]
    lines += [f"  request {i}: {fault.describe()}" for i, fault in enumerate(faults[:-1], 1)]
    lines.append(f"  request {len(faults)} and after: {faults[-1].describe()}")
    return lines


def serve(args: argparse.Namespace, out: IO[str]) -> int:
    """Serve until Ctrl-C (then exit status 0)."""
    faults = [fault.spec for group in args.fault or () for fault in group]
    server = FakeLLMServer.echoing(delay=args.delay, faults=faults, port=args.port)
    with server:
        # Ctrl-C may come as soon as the banner is out: the try starts before it.
        try:
            origin = f"http://127.0.0.1:{server.port}"
            print(banner(origin, args.dialect, server.faults), file=out, flush=True)
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
    print("rxstream fake-server: stopped", file=out, flush=True)
    return 0

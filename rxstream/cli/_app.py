"""The `rxstream` command: argument parsing, the pipeline, and how it ends.

One request per run. Its lines go through `sse_frames()` and are multicast
(`rxstream.multicast` + one `connect()`): to the view (via `decode_chunks()`,
`deltas()` and, when tiktoken has an encoding on disk, `count_tokens()`) and,
with `--log FILE`, to a log of every frame (written as SSE, so
`rxstream replay FILE` plays it back). The stream runs on a worker thread; the
main thread waits, so Ctrl-C disposes the connection (closing the response),
keeps what arrived on screen and exits with 130.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from typing import IO, Any

from reactivex import Observable
from reactivex import operators as ops
from reactivex.scheduler import NewThreadScheduler

from .. import __version__
from ..core.sse import event_text
from ..io import multicast
from ..io._http import Credentials, shown_url
from ..models import SSEFrame
from ..operators import count_tokens, decode_chunks, deltas, sse_frames
from ._tokens import offline_encoding
from ._view import View, make_view

__all__ = ["EXIT_ERROR", "EXIT_INTERRUPTED", "build_parser", "main"]

EXIT_ERROR = 1
EXIT_INTERRUPTED = 130

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_MODEL = "gpt-4o-mini"

# How long to let the frame log see the end of the body after `[DONE]`.
_LOG_GRACE = 0.5


class _Failure(Exception):
    """A problem to report in one line (no traceback without --debug)."""


# --------------------------------------------------------------------------- running


class _Run:
    """One request through the pipeline, multicast to the view and the frame log."""

    def __init__(self, view: View, *, log: IO[str] | None, encoding: Any) -> None:
        self.view = view
        self.log = log
        self.encoding = encoding
        self.ended = threading.Event()
        self.frames_ended = threading.Event()
        self.error: BaseException | None = None
        self._started = time.monotonic()

    def _log_frame(self, frame: SSEFrame) -> None:
        if self.log is None:
            return
        stamp = f": t={time.monotonic() - self._started:.3f}\n"
        self.log.write(stamp + event_text(frame.data, event=frame.event, id=frame.id))
        self.log.flush()

    def _failed(self, error: Exception) -> None:
        self.error = error
        self.ended.set()

    def run(self, lines: Observable[str]) -> int:
        """Stream `lines` into the view; return the exit code."""
        frames = multicast(lines.pipe(sse_frames()))
        frames.subscribe(
            self._log_frame,
            lambda _: self.frames_ended.set(),
            self.frames_ended.set,
        )
        items = frames.observe().pipe(decode_chunks(), deltas(), ops.share())
        if self.encoding is not None:
            # Its errors are the view's errors too: reported once, below.
            items.pipe(count_tokens(self.encoding)).subscribe(self.view.count, lambda _: None)
        items.subscribe(self.view.delta, self._failed, self.ended.set)
        self.view.start()
        connection = frames.connect()
        try:
            while not self.ended.wait(0.05):
                pass
            self.frames_ended.wait(_LOG_GRACE)
        except KeyboardInterrupt:
            connection.dispose()
            self.view.end(interrupted=True)
            print("rxstream: interrupted", file=sys.stderr)
            return EXIT_INTERRUPTED
        connection.dispose()
        self.view.end(error=self.error)
        if self.error is not None:
            raise _Failure(str(self.error)) from self.error
        return 0


def _view_kind(args: argparse.Namespace, out: IO[str]) -> str:
    if getattr(args, "json", False):
        return "json"
    if args.plain or not out.isatty() or os.environ.get("TERM") == "dumb":
        return "plain"
    try:
        import rich  # noqa: F401
    except ImportError:
        print(
            'rxstream: plain output (pip install "rxstream[cli]" for the live view)',
            file=sys.stderr,
        )
        return "plain"
    return "live"


def _stream(args: argparse.Namespace, lines: Observable[str], title: str) -> int:
    encoding, note = (None, "tokens not counted") if args.json else offline_encoding(args.encoding)
    counting = f"counted with {note}" if encoding is not None else f"{note}: counted deltas"
    view = make_view(_view_kind(args, sys.stdout), counting=counting, title=title)
    log = open(args.log, "w", encoding="utf-8") if getattr(args, "log", None) else None  # noqa: SIM115
    try:
        return _Run(view, log=log, encoding=encoding).run(lines)
    finally:
        if log is not None:
            log.close()


def _request_lines(
    url: str, *, headers: dict[str, str], payload: dict[str, Any], timeout: float
) -> tuple[Observable[str], Callable[[], None]]:
    import httpx

    from ..io import from_request

    client = httpx.Client(timeout=httpx.Timeout(timeout, connect=min(timeout, 10.0)))
    source = from_request(
        client, "POST", url, json=payload, headers=headers, scheduler=NewThreadScheduler()
    )
    return source, client.close


def _chat_payload(model: str, prompt: str, system: str | None, usage: bool) -> dict[str, Any]:
    messages = [{"role": "system", "content": system}] if system else []
    messages.append({"role": "user", "content": prompt})
    payload: dict[str, Any] = {"model": model, "messages": messages, "stream": True}
    if usage:
        payload["stream_options"] = {"include_usage": True}
    return payload


# --------------------------------------------------------------------------- commands


def _demo(args: argparse.Namespace) -> int:
    from ..testing.server import FakeLLMServer
    from ._demo import PROMPT, demo_scenario

    with FakeLLMServer(demo_scenario(args.delay)) as server:
        lines, close = _request_lines(
            server.url,
            headers={},
            payload=_chat_payload("fake-demo-model", PROMPT, None, True),
            timeout=30.0,
        )
        title = (
            "rxstream demo: a scripted answer from a local FakeLLMServer (no network, no key)\n"
            f"prompt: {PROMPT}"
        )
        try:
            return _stream(args, lines, title)
        finally:
            close()


def _file_lines(path: str) -> Iterator[bytes]:
    # Whole lines, as from_lines wants them: a binary file splits after each LF
    # (a CRLF stays together), and from_lines cuts any lone CR inside an item.
    with open(path, "rb") as file:
        yield from file


def _replay(args: argparse.Namespace) -> int:
    from ..io import from_lines

    if not os.path.isfile(args.file):
        raise _Failure(f"no such file: {args.file!r}")
    lines = from_lines(_file_lines(args.file), scheduler=NewThreadScheduler())
    return _stream(args, lines, "" if args.json else f"rxstream replay {args.file}")


def _chat(args: argparse.Namespace) -> int:
    base_url = (args.base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
    if not base_url.startswith(("http://", "https://")):
        raise _Failure(
            f"the base URL must start with http:// or https://, got {shown_url(base_url)!r}"
        )
    key = os.environ.get("OPENAI_API_KEY", "")
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    lines, close = _request_lines(
        f"{base_url}/chat/completions",
        headers=headers,
        payload=_chat_payload(args.model, args.prompt, args.system, not args.no_usage),
        timeout=args.timeout,
    )
    title = "" if args.json else f"rxstream chat: {args.model} via {shown_url(base_url)}"
    try:
        return _stream(args, lines, title)
    finally:
        close()


# --------------------------------------------------------------------------- parsing


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the `rxstream` command."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--debug", action="store_true", help="show tracebacks on failure")
    common.add_argument(
        "--plain", action="store_true", help="plain text even on a terminal (no live view)"
    )
    common.add_argument(
        "--encoding",
        metavar="NAME",
        help="tiktoken encoding for the token counts (used only if available offline)",
    )
    parser = argparse.ArgumentParser(
        prog="rxstream",
        description="Stream LLM chat completions through rxstream's Rx pipeline.",
    )
    parser.add_argument("--version", action="version", version=f"rxstream {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    demo = commands.add_parser(
        "demo", parents=[common], help="stream a scripted answer from a local fake server"
    )
    demo.add_argument("--log", metavar="FILE", help="also write every SSE frame to FILE")
    demo.add_argument(
        "--delay", type=float, default=0.03, metavar="SECONDS", help="pause between chunks"
    )
    demo.set_defaults(run=_demo, json=False)

    replay = commands.add_parser(
        "replay", parents=[common], help="play a recorded .sse file through the view"
    )
    replay.add_argument("file", metavar="FILE")
    replay.add_argument("--json", action="store_true", help="print one JSON object per delta")
    replay.set_defaults(run=_replay, log=None)

    chat = commands.add_parser(
        "chat",
        parents=[common],
        help="ask an OpenAI-compatible endpoint (OPENAI_BASE_URL, OPENAI_API_KEY)",
    )
    chat.add_argument("prompt")
    chat.add_argument("--model", "-m", default=os.environ.get("OPENAI_MODEL", DEFAULT_MODEL))
    chat.add_argument("--base-url", metavar="URL", help="default: $OPENAI_BASE_URL or OpenAI")
    chat.add_argument("--system", metavar="TEXT", help="a system message")
    chat.add_argument("--log", metavar="FILE", help="also write every SSE frame to FILE")
    chat.add_argument("--json", action="store_true", help="print one JSON object per delta")
    chat.add_argument(
        "--timeout", type=float, default=60.0, metavar="SECONDS", help="connect/read timeout"
    )
    chat.add_argument(
        "--no-usage", action="store_true", help="do not ask for stream_options.include_usage"
    )
    chat.set_defaults(run=_chat)
    return parser


def _redact(text: str) -> str:
    credentials = Credentials()
    credentials.add_headers({"Authorization": f"Bearer {os.environ.get('OPENAI_API_KEY', '')}"})
    return credentials.redact(text)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the `rxstream` command; returns the exit code (0, 1 on failure, 130 on Ctrl-C).

    Args:
        argv: the arguments (default: `sys.argv[1:]`).

    Example:
        $ rxstream demo
        $ rxstream replay recording.sse --json
        $ OPENAI_API_KEY=... rxstream chat "Hello" --model gpt-4o-mini
    """
    args = build_parser().parse_args(argv)
    try:
        code: int = args.run(args)
        return code
    except KeyboardInterrupt:
        print("rxstream: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:
        if args.debug:
            # The provider's message may quote the key back: redact the traceback too.
            print(_redact("".join(traceback.format_exception(exc))), end="", file=sys.stderr)
        message = str(exc) if isinstance(exc, _Failure) else f"{type(exc).__name__}: {exc}"
        print(f"rxstream: error: {_redact(message)}", file=sys.stderr)
        return EXIT_ERROR
    finally:
        sys.stdout.flush()

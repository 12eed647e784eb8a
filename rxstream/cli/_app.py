"""The `rxstream` command: argument parsing, the pipeline, and how it ends.

One request per run. Its lines go through `sse_frames()` and are multicast
(`rxstream.multicast` + one `connect()`): to the view (via `decode_chunks()`,
`deltas()` and, when tiktoken has an encoding on disk, `count_tokens()`) and,
with `--log FILE`, to a log of every frame (written as SSE, each frame after a
`: t=SECONDS` comment, so `rxstream replay FILE` plays it back at the recorded
pace). The stream runs on a worker thread; the main thread waits, so Ctrl-C
disposes the connection (closing the response), keeps what arrived on screen
and exits with 130.

Exit codes: 0 success; 1 a failure, said in one line on stderr (any
`StreamError` the stream ended with, a usage problem such as a missing file);
2 bad arguments (argparse); 130 Ctrl-C; 141 stdout was closed early (a pipe
into `head`): quietly, as a command killed by SIGPIPE would.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from typing import IO, Any
from urllib.parse import urlsplit, urlunsplit

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
from ._view import Clock, View, make_view

__all__ = [
    "EXIT_BROKEN_PIPE",
    "EXIT_ERROR",
    "EXIT_INTERRUPTED",
    "build_parser",
    "chat_url",
    "main",
]

EXIT_ERROR = 1
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 128 + 13  # as a shell reports a command killed by SIGPIPE

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

    def _log_frame(self, frame: SSEFrame) -> None:
        if self.log is None:
            return
        # The view's clock started with the request: the stamps and the footer agree.
        stamp = f": t={self.view.stats.clock() - self.view.stats.started:.3f}\n"
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
        if isinstance(self.error, BrokenPipeError):
            raise self.error  # stdout is gone: nothing more to show
        self.view.end(error=self.error)
        if self.error is not None:
            raise _Failure(str(self.error)) from self.error
        return 0


def _is_terminal(out: IO[str]) -> bool:
    return out.isatty()


def _view_kind(args: argparse.Namespace, out: IO[str]) -> str:
    if getattr(args, "json", False):
        return "json"
    if args.plain or not _is_terminal(out) or os.environ.get("TERM") == "dumb":
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


def _stream(
    args: argparse.Namespace, lines: Observable[str], title: str, clock: Clock = time.monotonic
) -> int:
    encoding, note = (None, "not counted") if args.json else offline_encoding(args.encoding)
    counting = f"counted with {note}" if encoding is not None else f"tokens not counted; {note}"
    view = make_view(_view_kind(args, sys.stdout), counting=counting, title=title, clock=clock)
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


_STAMP = re.compile(rb"^: t=(\d+(?:\.\d*)?)\r?\n?$")


class _Recording:
    """A recorded .sse file, line by line, and the clock its `: t=` stamps keep.

    `--log` writes `: t=SECONDS` (an SSE comment, ignored by the parser) before
    each frame: the time since the request went out. Played `paced`, each line
    after a stamp waits until that moment (measured from the start of the
    replay); either way `clock()` returns the latest stamp read, so the footer
    shows the recorded timings, not how fast the file was read.
    """

    def __init__(self, path: str, *, paced: bool) -> None:
        self.path = path
        self.paced = paced
        with open(path, "rb") as file:
            self.timed = any(_STAMP.match(line) for line in file)
        self._now = 0.0
        self._cancelled = threading.Event()
        self._monotonic: Callable[[], float] = time.monotonic
        self._wait: Callable[[float], bool] = self._cancelled.wait  # True: cancelled

    def clock(self) -> float:
        """The time of the latest stamp read (0 before the first)."""
        return self._now

    def cancel(self) -> None:
        """Stop waiting (the replay was interrupted or ended)."""
        self._cancelled.set()

    def lines(self) -> Iterator[bytes]:
        """The file's lines, as `from_lines` wants them (each with its terminator).

        A binary file splits after each LF (a CRLF stays together), and
        `from_lines` cuts any lone CR inside an item.
        """
        begun = self._monotonic()
        with open(self.path, "rb") as file:
            for line in file:
                stamp = _STAMP.match(line)
                if stamp is not None:
                    at = float(stamp.group(1))
                    if self.paced:
                        wait = begun + at - self._monotonic()
                        if wait > 0 and self._wait(wait):
                            return
                    self._now = max(self._now, at)
                yield line


def _replay(args: argparse.Namespace) -> int:
    from ..io import from_lines

    if not os.path.isfile(args.file):
        raise _Failure(f"no such file: {args.file!r}")
    recording = _Recording(args.file, paced=not args.fast)
    lines = from_lines(recording.lines(), scheduler=NewThreadScheduler())
    title = "" if args.json else f"rxstream replay {args.file}"
    clock = recording.clock if recording.timed else time.monotonic
    try:
        return _stream(args, lines, title, clock)
    finally:
        recording.cancel()


def chat_url(base_url: str) -> str:
    """The chat completions URL under `base_url`: the path goes before any query string.

    Args:
        base_url: an OpenAI-compatible API root, e.g. `https://api.openai.com/v1`,
            or Azure's deployment URL with `?api-version=...`.

    Returns:
        `base_url` with `/chat/completions` appended to its path.

    >>> chat_url("https://example.test/openai/deployments/d1?api-version=2024-10-21")
    'https://example.test/openai/deployments/d1/chat/completions?api-version=2024-10-21'
    """
    parts = urlsplit(base_url)
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/chat/completions"))


def _chat(args: argparse.Namespace) -> int:
    base_url = args.base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
    if not base_url.startswith(("http://", "https://")):
        raise _Failure(
            f"the base URL must start with http:// or https://, got {shown_url(base_url)!r}"
        )
    key = os.environ.get("OPENAI_API_KEY", "")
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    lines, close = _request_lines(
        chat_url(base_url),
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
        "replay",
        parents=[common],
        help="play a recorded .sse file through the view",
        description=(
            "Play a recorded event stream (e.g. one written by --log) through the same view. "
            "A log's ': t=' stamps are replayed at the recorded pace and give the footer "
            "its timings."
        ),
    )
    replay.add_argument("file", metavar="FILE", help="an event-stream file (.sse)")
    replay.add_argument("--json", action="store_true", help="print one JSON object per delta")
    replay.add_argument(
        "--fast",
        action="store_true",
        help="do not wait for the recorded timings (the footer still reports them)",
    )
    replay.set_defaults(run=_replay, log=None)

    chat = commands.add_parser(
        "chat",
        parents=[common],
        help="ask an OpenAI-compatible endpoint (OPENAI_BASE_URL, OPENAI_API_KEY)",
        description=(
            "Send one user message to an OpenAI-compatible /chat/completions endpoint and "
            "stream the answer. The key is read from $OPENAI_API_KEY and sent as "
            "'Authorization: Bearer'; it is never printed."
        ),
    )
    chat.add_argument("prompt", help="the user message to send")
    chat.add_argument(
        "--model",
        "-m",
        default=os.environ.get("OPENAI_MODEL", DEFAULT_MODEL),
        metavar="NAME",
        help=f"the model to ask (default: $OPENAI_MODEL, else {DEFAULT_MODEL}; now %(default)s)",
    )
    chat.add_argument(
        "--base-url",
        metavar="URL",
        help=(
            f"the API root; /chat/completions is appended to its path, before any query "
            f"string such as Azure's ?api-version= (default: $OPENAI_BASE_URL, else "
            f"{DEFAULT_BASE_URL})"
        ),
    )
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
        sys.stdout.flush()
        return code
    except KeyboardInterrupt:
        print("rxstream: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        _stdout_gone()
        return EXIT_BROKEN_PIPE
    except Exception as exc:
        if args.debug:
            # The provider's message may quote the key back: redact the traceback too.
            print(_redact("".join(traceback.format_exception(exc))), end="", file=sys.stderr)
        message = str(exc) if isinstance(exc, _Failure) else f"{type(exc).__name__}: {exc}"
        # One line, whatever the excerpt of a body holds.
        message = message.strip().replace("\r", "\\r").replace("\n", "\\n")
        print(f"rxstream: error: {_redact(message)}", file=sys.stderr)
        return EXIT_ERROR


def _stdout_gone() -> None:
    """The reader of stdout left (`rxstream replay x.sse | head -1`): end quietly.

    What is still buffered for stdout cannot be written; pointing stdout at
    /dev/null lets the interpreter's final flush succeed instead of printing
    "Exception ignored ... BrokenPipeError" (the recipe of Python's `signal`
    documentation; restoring SIGPIPE's default would also kill the command on
    a write to a closed socket).
    """
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        # A stdout without a file descriptor (a captured stream) has nothing to redirect.
        with contextlib.suppress(OSError, ValueError):
            os.dup2(devnull, sys.stdout.fileno())
    finally:
        os.close(devnull)

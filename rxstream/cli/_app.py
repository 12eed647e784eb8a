"""The `rxstream` command: argument parsing, the pipeline, and how it ends.

One request (or one recording) per run, in any dialect. The wire items
(`SSEFrame`s after `sse_frames()`, NDJSON lines, or `EventStreamMessage`s
after `eventstream_frames()`) are multicast (`rxstream.multicast` + one
`connect()`): to the view, through `rs.decode(dialect)` (`"auto"` for a
replay unless `--dialect` says) and, when tiktoken has an encoding on disk,
`count_tokens()`; and, with `--log FILE`, to a log of every item in its own
wire format with the time it arrived (see `_wire`), which `rxstream replay
FILE` plays back at the recorded pace. The stream runs on a worker thread;
the main thread waits, so Ctrl-C disposes the connection (closing the
response), keeps what arrived on screen and exits with 130.

Exit codes: 0 success; 1 a failure, said in one line on stderr (any
`StreamError` the stream ended with, a usage problem such as a missing file);
2 bad arguments (argparse); 130 Ctrl-C; 141 stdout was closed early (a pipe
into `head`): quietly, as a command killed by SIGPIPE would. No key of the
environment is ever printed (`_redact`).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import textwrap
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from typing import IO, Any

from reactivex import Observable
from reactivex import operators as ops
from reactivex.scheduler import NewThreadScheduler

from .. import __version__
from .._deprecate import deprecation_message
from ..core.dialects import AI_SDK, DIALECTS, WireKind
from ..io import Handle, multicast, sync_source
from ..io.credentials import Credentials, shown_url
from ..io.requests import ENDPOINTS
from ..models import EventStreamMessage
from ..operators import count_tokens, decode, eventstream_frames, sse_frames
from ._apis import APIS, KEY_VARIABLES, Ask, Request, build, build_ui_chat, join_url, missing_key
from ._errors import describe, recording_problem
from ._fault_help import FAULT_HELP
from ._hints import install_hint
from ._tokens import offline_encoding
from ._view import Clock, View, make_view
from ._wire import HEAD, KIND_NAMES, WIRE, Recording, StreamLog, first_dialect, open_log, sniff

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

#: The dialects `demo`, `fake-server` and `replay` take: the providers' and the AI SDK's
#: UI message stream (what `FakeLLMServer` serves, `rxstream.testing.server.SERVED`,
#: written out here so that parsing the arguments does not import the test kit).
SERVED = (*DIALECTS, AI_SDK)

# How long to let the log see the end of the body after the dialect's end marker.
_LOG_GRACE = 0.5


class _Failure(Exception):
    """A problem to report in one line (no traceback without --debug)."""


# --------------------------------------------------------------------------- running


def _framing(kind: WireKind) -> list[Callable[[Observable[Any]], Observable[Any]]]:
    """The operators from what a source gives (lines or bytes) to a dialect's wire items."""
    if kind == "sse":
        return [sse_frames()]
    if kind == "eventstream":
        return [eventstream_frames()]
    return []  # NDJSON lines are the items


def _redacting(credentials: Credentials) -> Callable[[Observable[Any]], Observable[Any]]:
    """Redact credentials a server echoes inside event-stream messages.

    Sources redact what they cut into lines; raw bytes they leave alone (a
    checksummed frame cannot be edited), so the payloads are redacted here,
    once framed, before the view or the log sees them.
    """

    def redact(message: EventStreamMessage) -> EventStreamMessage:
        if not credentials.found_in(message.payload):
            return message
        text = credentials.redact(message.payload.decode("utf-8", "replace"))
        return EventStreamMessage(message.headers, text.encode("utf-8"))

    return ops.map(redact)


class _Run:
    """One stream through the pipeline, multicast to the view and the log."""

    def __init__(self, view: View, *, log: StreamLog | None, encoding: Any) -> None:
        self.view = view
        self.log = log
        self.encoding = encoding
        self.ended = threading.Event()
        self.items_ended = threading.Event()
        self.error: BaseException | None = None

    def _log_item(self, item: Any) -> None:
        if self.log is None:
            return
        # The view's clock started with the request: the stamps and the footer agree.
        self.log.write(item, self.view.stats.clock() - self.view.stats.started)

    def _failed(self, error: Exception) -> None:
        self.error = error
        self.ended.set()

    def run(
        self,
        source: Observable[Any],
        kind: WireKind,
        dialect: str,
        credentials: Credentials | None = None,
    ) -> int:
        """Stream `source` (lines, or bytes for an event stream) into the view; the exit code."""
        steps = _framing(kind)
        if kind == "eventstream" and credentials:
            steps.append(_redacting(credentials))
        wire = multicast(source.pipe(*steps))
        wire.subscribe(
            self._log_item,
            lambda _: self.items_ended.set(),
            self.items_ended.set,
        )
        items = wire.observe().pipe(decode(dialect), ops.share())
        if self.encoding is not None:
            # Its errors are the view's errors too: reported once, below.
            items.pipe(count_tokens(encoding=self.encoding)).subscribe(
                self.view.count, lambda _: None
            )
        items.subscribe(self.view.delta, self._failed, self.ended.set)
        self.view.start()
        connection = wire.connect()
        try:
            while not self.ended.wait(0.05):
                pass
            self.items_ended.wait(_LOG_GRACE)
        except KeyboardInterrupt:
            connection.dispose()
            with _uninterrupted():
                self.view.end(interrupted=True)
            print("rxstream: interrupted", file=sys.stderr)
            return EXIT_INTERRUPTED
        connection.dispose()
        if isinstance(self.error, BrokenPipeError):
            raise self.error  # stdout is gone: nothing more to show
        with _uninterrupted():
            self.view.end(error=self.error)
        if self.error is not None:
            raise _Failure(describe(self.error)) from self.error
        return 0


@contextlib.contextmanager
def _uninterrupted() -> Iterator[None]:
    """Ctrl-C is ignored while the view draws its end.

    The end is drawn once, whole: a second Ctrl-C (or the first, as the stream
    ends) raised in the middle of it would leave a live region half-drawn and
    the cursor hidden. Outside the main thread signals cannot be set, and none
    arrive there.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


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
            f"rxstream: plain output (for the live view: {install_hint('cli')})",
            file=sys.stderr,
        )
        return "plain"
    return "live"


def _stream(
    args: argparse.Namespace,
    source: Observable[Any],
    *,
    kind: WireKind,
    dialect: str,
    title: str,
    clock: Clock = time.monotonic,
    credentials: Credentials | None = None,
) -> int:
    encoding, note = (None, "not counted") if args.json else offline_encoding(args.encoding)
    if encoding is None and args.encoding is not None and not args.json:
        # Asked for by name: counting deltas instead would hide the mistake.
        raise _Failure(f"--encoding {args.encoding}: {note}")
    counting = f"counted with {note}" if encoding is not None else f"tokens not counted; {note}"
    view = make_view(_view_kind(args, sys.stdout), counting=counting, title=title, clock=clock)
    log = open_log(getattr(args, "log", None), kind)
    try:
        return _Run(view, log=log, encoding=encoding).run(source, kind, dialect, credentials)
    finally:
        if log is not None:
            log.close()


def _send(request: Request, *, timeout: float) -> tuple[Observable[Any], Callable[[], None]]:
    """The request as a source (lines, or bytes for an event stream) and how to close its client."""
    import httpx

    from ..io import from_request

    client = httpx.Client(timeout=httpx.Timeout(timeout, connect=min(timeout, 10.0)))
    scheduler = NewThreadScheduler()
    source: Observable[Any]
    # The request as built: a SigV4 signature covers its exact bytes.
    if request.wire == "eventstream":
        source = from_request(client, request.http, scheduler=scheduler, body="bytes")
    else:
        source = from_request(client, request.http, scheduler=scheduler)
    return source, client.close


def _sent_credentials(request: Request) -> Credentials:
    credentials = Credentials()
    credentials.add_headers(request.headers)
    credentials.add_url(request.url)
    return credentials


def _request_stream(args: argparse.Namespace, request: Request, title: str, timeout: float) -> int:
    source, close = _send(request, timeout=timeout)
    try:
        return _stream(
            args,
            source,
            kind=request.wire,
            dialect=request.api,
            title=title,
            credentials=_sent_credentials(request),
        )
    finally:
        close()


# --------------------------------------------------------------------------- commands


def _demo(args: argparse.Namespace) -> int:
    from ..testing.server import FakeLLMServer
    from ._demo import PROMPT, demo_scenario

    api: str = args.dialect or "openai-chat"
    with FakeLLMServer(demo_scenario(args.delay)) as server:
        # The fake server answers each API at its real path: the base URL is its root
        # (with /v1 for OpenAI's APIs, whose base URLs carry it).
        root = f"http://127.0.0.1:{server.port}"
        base = f"{root}/v1" if api.startswith("openai") else root
        ask = Ask(PROMPT, model="fake-demo-model")
        if api == AI_SDK:  # asked as useChat asks the application's chat API
            request = build_ui_chat(ask, base_url=root)
        else:
            request = build(api, ask, base_url=base, env={})  # no key from the environment
        title = "rxstream demo: a scripted answer from a local FakeLLMServer (no network, no key)"
        if args.dialect is not None:  # asked for: say what is served where
            title += f"\n{api}: POST {request.url.removeprefix(root)}"
        title += f"\nprompt: {PROMPT}"
        return _request_stream(args, request, title, timeout=30.0)


def _fake_server(args: argparse.Namespace) -> int:
    from ._fake_server import serve

    return serve(args, sys.stdout)


def _fault_specs(text: str) -> Any:
    """`--fault`'s type: the specs read by the fake server's own parser (loaded when used)."""
    from ._fake_server import fault_specs

    return fault_specs(text)


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 0 (a free one) to 65535, got {port}")
    return port


def _bytes_source(pieces: Iterator[bytes]) -> Observable[bytes]:
    """Raw bytes from an iterator, on a thread of their own (closed on dispose)."""

    def read(handle: Handle) -> Iterator[list[bytes]]:
        handle.attach(pieces)
        for piece in pieces:
            yield [piece]

    return sync_source(read, NewThreadScheduler())


def _replay(args: argparse.Namespace) -> int:
    from ..io import from_lines

    path: str = args.file
    problem = recording_problem(path)
    if problem is not None:
        raise _Failure(problem)
    with open(path, "rb") as file:
        head = file.read(HEAD)
    try:
        kind = sniff(head)
        recording = Recording(path, kind, paced=not args.fast)
    except ValueError as exc:
        raise _Failure(f"{path}: {exc}") from None
    dialect: str = args.dialect
    if dialect == "auto":
        found = first_dialect(path, kind)
        said = f"{found} (detected)" if found else "dialect not told by its first items"
    else:
        if WIRE[dialect] != kind:
            raise _Failure(
                f"{path} holds {KIND_NAMES[kind]}, but --dialect {dialect} reads "
                f"{KIND_NAMES[WIRE[dialect]]}"
            )
        said = f"{dialect} (--dialect)"
    source: Observable[Any]
    if kind == "eventstream":
        source = _bytes_source(recording.pieces())
    else:
        source = from_lines(recording.pieces(), scheduler=NewThreadScheduler())
    title = "" if args.json else f"rxstream replay {path}: {said}, {KIND_NAMES[kind]}"
    clock = recording.clock if recording.timed else time.monotonic
    try:
        return _stream(args, source, kind=kind, dialect=dialect, title=title, clock=clock)
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
    return join_url(base_url, "/chat/completions")


def _chat(args: argparse.Namespace) -> int:
    prompt: str = args.prompt
    if prompt == "-":
        prompt = sys.stdin.read()
    ask = Ask(
        prompt,
        model=args.model,
        system=args.system,
        usage=not args.no_usage,
        thinking=args.thinking,
        max_tokens=args.max_tokens,
    )
    try:
        request = build(args.dialect, ask, base_url=args.base_url, env=os.environ)
    except ValueError as exc:
        raise _Failure(str(exc)) from None
    lacking = missing_key(args.dialect, os.environ)
    if lacking is not None and request.key is None:
        print(
            f"rxstream: warning: {lacking.replace(', or pass api_key=', '')}; sending without one",
            file=sys.stderr,
        )
    title = (
        ""
        if args.json
        else f"rxstream chat: {request.model} via {shown_url(request.base_url)} ({request.api})"
    )
    return _request_stream(args, request, title, timeout=args.timeout)


# --------------------------------------------------------------------------- parsing


def _positive(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive number of tokens, got {value}")
    return value


def _apis_help() -> str:
    """The chat help's list of APIs: path, key, base URL, model and what --thinking sends."""
    wrap = textwrap.TextWrapper(
        width=88,
        initial_indent=" " * 4,
        subsequent_indent=" " * 6,
        break_long_words=False,
        break_on_hyphens=False,
    )
    lines = ["APIs (--dialect NAME): what is sent where, and the variables read"]
    for api in APIS.values():
        keys = " or ".join(f"${name}" for name in api.key_variables)
        bases = " or ".join(f"${name}" for name in api.base_variables)
        models = "".join(f"${name}, else " for name in api.model_variables)
        lines.append(f"  {api.name}: POST {{base}}{api.path}")
        for part in (
            f"key: {keys} ({api.auth})",
            f"base: {bases}, else {api.default_base}",
            f"model: {models}{api.default_model}",
            f"--thinking: {api.thinking}",
        ):
            lines += wrap.wrap(part)
    lines.append("")
    lines += textwrap.wrap(
        "Bedrock: requests are signed with SigV4 from the AWS credential chain "
        "($AWS_ACCESS_KEY_ID and $AWS_SECRET_ACCESS_KEY, $AWS_PROFILE, ...; needs "
        "pip install 'rxstream[bedrock]'), or sent with a Bedrock API key "
        "($AWS_BEARER_TOKEN_BEDROCK); an endpoint that signs for you (--base-url or "
        "$AWS_ENDPOINT_URL_BEDROCK_RUNTIME) needs neither. The region comes from $AWS_REGION "
        "or $AWS_DEFAULT_REGION (or the AWS config), else us-east-1. Without a key the "
        "request is sent anyway (to a local server, say), with a warning.",
        width=88,
    )
    return "\n".join(lines)


_LOG_HELP = (
    "also write the stream to FILE in its own wire format, with the time each item "
    "arrived: SSE with ': t=' comments; NDJSON lines or AWS event-stream messages with "
    "the times in FILE.timing ('rxstream replay FILE' reads both)"
)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the `rxstream` command: one sub-command a function."""
    common = _common_options()
    parser = argparse.ArgumentParser(
        prog="rxstream",
        description=(
            "Stream LLM answers through rxstream's Rx pipeline, in any provider's dialect "
            f"({', '.join(DIALECTS)}) and the AI SDK's UI message stream ({AI_SDK})."
        ),
    )
    parser.add_argument("--version", action="version", version=f"rxstream {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    _add_demo(commands, common)
    _add_fake_server(commands)
    _add_replay(commands, common)
    _add_chat(commands, common)
    return parser


def _common_options() -> argparse.ArgumentParser:
    """The options every sub-command but `fake-server` takes (a parent parser)."""
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
    return common


def _add_demo(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    """`rxstream demo`: a scripted answer from a local fake server."""
    demo = commands.add_parser(
        "demo",
        parents=[common],
        help="stream a scripted answer from a local fake server, in any dialect",
        description=(
            "Stream a scripted answer (reasoning, text, two parallel tool calls) from a local "
            "FakeLLMServer: no network, no key. --dialect picks the dialect it is served in, at "
            "that API's real path; the answer is the same in each."
        ),
    )
    demo.add_argument(
        "--dialect",
        choices=SERVED,
        metavar="NAME",
        help=(
            f"the dialect to serve and read: {', '.join(SERVED)} (default: openai-chat; "
            f"{AI_SDK}: the AI SDK's UI message stream, asked as useChat asks); "
            "the title then says which path it is served at"
        ),
    )
    _deprecated_alias(demo, "--api", "--dialect", choices=SERVED)
    demo.add_argument("--log", metavar="FILE", help=_LOG_HELP)
    demo.add_argument(
        "--delay", type=float, default=0.03, metavar="SECONDS", help="pause between chunks"
    )
    demo.set_defaults(run=_demo, json=False)


def _add_fake_server(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`rxstream fake-server`: a fake LLM on 127.0.0.1, with faults."""
    fake = commands.add_parser(
        "fake-server",
        help="serve a fake LLM that answers the request on 127.0.0.1, with scriptable faults",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=(
            "Start a FakeLLMServer on 127.0.0.1 that answers every dialect's streaming path\n"
            "with an answer made from the request: the model it asks for, a call of one of its\n"
            "own tools (arguments valid for that tool's JSON schema), a final text when the\n"
            "conversation ends with tool results, else a quote of the last user message; print\n"
            "its base URL and the environment variables that point each official SDK and\n"
            "rs.request at it, and serve until Ctrl-C (exit status 0)."
        ),
        epilog=FAULT_HELP,
    )
    fake.add_argument(
        "--dialect",
        choices=(*ENDPOINTS, AI_SDK),
        metavar="NAME",
        help=(
            f"print only this dialect's variables: {', '.join(ENDPOINTS)}, or {AI_SDK} for the "
            "URL of useChat's chat API (default: every dialect's)"
        ),
    )
    fake.add_argument(
        "--port",
        type=_port,
        default=0,
        metavar="PORT",
        help="the port to listen on (default: a free one); a port in use is an error",
    )
    fake.add_argument(
        "--delay", type=float, default=0.03, metavar="SECONDS", help="pause between chunks"
    )
    fake.add_argument(
        "--fault",
        action="append",
        type=_fault_specs,
        metavar="SPEC",
        help=(
            "a fault for the next request (repeatable, or SPEC,SPEC,...): the Nth request gets "
            "the Nth fault, the last one repeating; see below"
        ),
    )
    fake.add_argument("--debug", action="store_true", help="show tracebacks on failure")
    fake.set_defaults(run=_fake_server)


def _add_replay(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    """`rxstream replay`: a recorded stream through the view."""
    replay = commands.add_parser(
        "replay",
        parents=[common],
        help="play a recorded stream (SSE, NDJSON or AWS event stream) through the view",
        description=(
            "Play a recorded stream (e.g. one written by --log) through the same view. What "
            "the file holds (a server-sent event stream, NDJSON lines, or a binary AWS event "
            "stream) is told from its first bytes, and the dialect from its first event "
            "(rs.decode() auto), unless --dialect says. A log's times (': t=' stamps, or a "
            "FILE.timing sidecar) are replayed at the recorded pace and give the footer its "
            "timings."
        ),
    )
    replay.add_argument(
        "file", metavar="FILE", help="an event-stream file (.sse), NDJSON (.ndjson) or .eventstream"
    )
    replay.add_argument(
        "--dialect",
        choices=("auto", *SERVED),
        default="auto",
        metavar="NAME",
        help=f"read the file as this dialect: auto, {', '.join(SERVED)} (default: %(default)s)",
    )
    replay.add_argument("--json", action="store_true", help="print one JSON object per delta")
    replay.add_argument(
        "--fast",
        action="store_true",
        help="do not wait for the recorded timings (the footer still reports them)",
    )
    replay.set_defaults(run=_replay, log=None)


def _add_chat(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    """`rxstream chat`: ask a provider's API."""
    chat = commands.add_parser(
        "chat",
        parents=[common],
        help="ask a provider's API (OpenAI, Anthropic, Gemini, Cohere, Ollama, Bedrock)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=(
            "Send one user message to a provider's streaming chat API and stream the answer.\n"
            "The key is read from the API's usual environment variable and sent in its own\n"
            "header; it is never printed."
        ),
        epilog=_apis_help(),
    )
    chat.add_argument("prompt", help="the user message to send ('-': read it from stdin)")
    chat.add_argument(
        "--dialect",
        choices=tuple(APIS),
        default="openai-chat",
        metavar="NAME",
        help=f"the API to ask, by its dialect: {', '.join(APIS)} (default: %(default)s)",
    )
    _deprecated_alias(chat, "--api", "--dialect", choices=tuple(APIS))
    chat.add_argument(
        "--model",
        "-m",
        metavar="NAME",
        help=(
            "the model to ask (default: the API's, listed below; for OpenAI's APIs "
            "$OPENAI_MODEL first)"
        ),
    )
    chat.add_argument(
        "--base-url",
        metavar="URL",
        help=(
            "the API root (default: the API's variable, else its default, listed below); the "
            "API's path is appended to its path, before any query string such as Azure's "
            "?api-version="
        ),
    )
    chat.add_argument("--system", metavar="TEXT", help="a system message")
    chat.add_argument(
        "--thinking",
        action="store_true",
        help="ask for reasoning (off by default: nothing about it is sent)",
    )
    chat.add_argument(
        "--max-tokens",
        type=_positive,
        metavar="N",
        help="the output limit (default: the API's; 4096 for Anthropic and Bedrock)",
    )
    chat.add_argument("--log", metavar="FILE", help=_LOG_HELP)
    chat.add_argument("--json", action="store_true", help="print one JSON object per delta")
    chat.add_argument(
        "--timeout", type=float, default=60.0, metavar="SECONDS", help="connect/read timeout"
    )
    chat.add_argument(
        "--no-usage",
        action="store_true",
        help=(
            "openai-chat: do not ask for stream_options.include_usage (the other APIs send "
            "usage unasked)"
        ),
    )
    chat.set_defaults(run=_chat)


def _redact(text: str) -> str:
    """`text` without any key of the environment the command may have sent."""
    credentials = Credentials()
    credentials.add_headers({name: os.environ.get(name, "") for name in KEY_VARIABLES})
    return credentials.redact(text)


class _DeprecatedAlias(argparse.Action):
    """An old spelling of an option: stores into the new one's place, with a warning on stderr."""

    def __init__(
        self, option_strings: Sequence[str], dest: str, *, new: str, **kwargs: Any
    ) -> None:
        super().__init__(option_strings, dest, **kwargs)
        self.new = new

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        # The command's users see no Python warnings: the same words go to stderr.
        old = option_string or self.option_strings[0]
        print(f"rxstream: warning: {deprecation_message(old, self.new)}", file=sys.stderr)
        setattr(namespace, self.dest, values)


def _deprecated_alias(
    parser: argparse.ArgumentParser, old: str, new: str, *, choices: Sequence[str]
) -> None:
    """Accept `old` as a hidden, deprecated spelling of the option `new`."""
    parser.add_argument(
        old,
        dest=new.removeprefix("--").replace("-", "_"),
        action=_DeprecatedAlias,
        new=new,
        choices=choices,
        metavar="NAME",
        help=argparse.SUPPRESS,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the `rxstream` command; returns the exit code (0, 1 on failure, 130 on Ctrl-C).

    Args:
        argv: the arguments (default: `sys.argv[1:]`).

    Example:
        $ rxstream demo --dialect anthropic
        $ rxstream replay recording.sse --json
        $ OPENAI_API_KEY=... rxstream chat "Hello" --model gpt-4o-mini
        $ ANTHROPIC_API_KEY=... rxstream chat "Hello" --dialect anthropic
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

"""Every spelling renamed for one name per idea still works for one release, and warns.

Each old spelling gives the same result as the new one, with a `DeprecationWarning`
that names both and points at the caller's line; giving both spellings is a
`TypeError`. The spellings go away in the next release (the CHANGELOG's migration list).
"""

from __future__ import annotations

import importlib
import re
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
import reactivex
from reactivex import operators as ops
from reactivex.testing import TestScheduler

import rxstream as rs
from rxstream._deprecate import deprecated_arguments
from rxstream.cli import main as cli_main
from rxstream.core import MessageAccumulator
from rxstream.core.dialects import ShapeError, json_kind
from rxstream.core.dialects import sse_encoder as sse_encoder_module
from rxstream.core.dialects.openai_chat import DeltaDecoder
from rxstream.core.dialects.sse_encoder import SSEEncoder
from rxstream.core.eventstream import EventStreamParser, EventStreamSplitter, encode_message
from rxstream.core.lines import LineSplitter
from rxstream.serve import SSEResponse, sse_response
from rxstream.testing.checks import minimal_body
from rxstream.testing.server import FakeLLMServer

TEXT = [rs.TextDelta("Hel"), rs.TextDelta("lo")]


def run(source: reactivex.Observable[Any]) -> list[Any]:
    result: list[Any] = source.pipe(ops.to_list()).run()
    return result


def test_the_warning_names_both_spellings_and_points_at_the_callers_line() -> None:
    with pytest.warns(
        DeprecationWarning, match=r"to_sse\(\): format= is deprecated, use dialect="
    ) as seen:
        rs.to_sse(format="rxstream")
    assert seen[0].filename == __file__
    assert "removed in the next release" in str(seen[0].message)


def test_new_spellings_do_not_warn() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rs.to_sse(dialect="rxstream", after="1-0", keepalive=None)
        rs.lines(line_limit=10)
        rs.eventstream_frames(frame_limit=64)
        rs.coalesce(0.1, scheduler=TestScheduler())
        rs.timeouts(first=1, idle=2, total=3, scheduler=TestScheduler())
        rs.count_tokens(encoding=str.split)
        sse_response(reactivex.empty(), dialect="rxstream", after="1-0")


# --------------------------------------------------------------------------- renamed keywords


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ({"format": "rxstream"}, {"dialect": "rxstream"}),
        ({"format": "rxstream", "last_event_id": "5-0"}, {"dialect": "rxstream", "after": "5-0"}),
    ],
    ids=["format", "last_event_id"],
)
def test_to_sse_old_keywords(old: dict[str, Any], new: dict[str, Any]) -> None:
    expected = run(reactivex.from_iterable(TEXT).pipe(rs.to_sse(keepalive=None, **new)))
    with pytest.warns(DeprecationWarning, match="is deprecated, use"):
        operator = rs.to_sse(keepalive=None, **old)
    assert run(reactivex.from_iterable(TEXT).pipe(operator)) == expected
    assert b"5-0" in b"".join(expected) or "last_event_id" not in old


@pytest.mark.parametrize("make", [sse_response, SSEResponse], ids=["sse_response", "SSEResponse"])
def test_sse_response_old_keywords(make: Callable[..., SSEResponse]) -> None:
    with pytest.warns(DeprecationWarning, match="is deprecated, use") as seen:
        response = make(reactivex.empty(), format="rxstream", last_event_id="7-0")
    messages = sorted(str(w.message) for w in seen)
    assert len(messages) == 2
    assert "format= is deprecated, use dialect=" in messages[0]
    assert "last_event_id= is deprecated, use after=" in messages[1]
    assert response._dialect == "rxstream"
    assert response._after == "7-0"


def test_lines_limit() -> None:
    with pytest.warns(
        DeprecationWarning, match=r"lines\(\): limit= is deprecated, use line_limit="
    ):
        operator = rs.lines(limit=4)  # type: ignore[call-arg]
    got = reactivex.of("ab\n", "abcdefgh\n").pipe(operator, ops.materialize())
    kinds = run(got)
    assert kinds[0].value == "ab"
    assert isinstance(kinds[1].exception, rs.LineTooLongError)


def test_eventstream_frames_limit() -> None:
    message = encode_message({":event-type": "x"}, b"y" * 100)
    with pytest.warns(DeprecationWarning, match="limit= is deprecated, use frame_limit="):
        operator = rs.eventstream_frames(limit=64)  # type: ignore[call-arg]
    got = run(reactivex.of(message).pipe(operator, ops.materialize()))
    assert isinstance(got[0].exception, rs.MalformedChunkError)


def test_to_redis_stream_max_pending() -> None:
    class Client:  # enough of a sync client to build the operator (nothing is written)
        def execute_command(self, *args: Any, **options: Any) -> Any:
            raise AssertionError("not called")

        def pipeline(self, transaction: bool = True, shard_hint: Any = None) -> Any:
            raise AssertionError("not called")

    with pytest.warns(DeprecationWarning, match="max_pending= is deprecated, use maxsize="):
        rs.to_redis_stream(Client(), "k", max_pending=8)  # type: ignore[call-arg]
    with (
        pytest.raises(ValueError, match="maxsize must be at least 1"),
        pytest.warns(DeprecationWarning, match="max_pending="),
    ):
        rs.to_redis_stream(Client(), "k", max_pending=0)  # type: ignore[call-arg]


@pytest.mark.parametrize(
    "call",
    [
        lambda: rs.to_sse(format="rxstream", dialect="rxstream"),
        lambda: rs.to_sse("rxstream", format="rxstream"),
        lambda: rs.to_sse(last_event_id="1-0", after="1-0"),
        lambda: rs.lines(limit=4, line_limit=4),  # type: ignore[call-arg]
        lambda: rs.eventstream_frames(limit=64, frame_limit=64),  # type: ignore[call-arg]
        lambda: sse_response(reactivex.empty(), format="rxstream", dialect="rxstream"),
        lambda: SSEResponse(reactivex.empty(), last_event_id="1-0", after="1-0"),
    ],
    ids=[
        "to_sse-format",
        "to_sse-format-and-positional",
        "to_sse-after",
        "lines",
        "eventstream_frames",
        "sse_response",
        "SSEResponse",
    ],
)
def test_both_spellings_at_once_is_a_type_error(call: Callable[[], Any]) -> None:
    with pytest.raises(TypeError, match="got both"):
        call()


# --------------------------------------------------------------------------- positional options


def test_coalesce_scheduler_positionally() -> None:
    scheduler = TestScheduler()
    with pytest.warns(DeprecationWarning, match=r"coalesce\(\): passing scheduler= positionally"):
        operator = rs.coalesce(0.05, scheduler)  # type: ignore[call-arg]
    assert run(reactivex.from_iterable(TEXT).pipe(operator)) == [rs.TextDelta("Hello")]


def test_timeouts_limits_positionally() -> None:
    with pytest.warns(DeprecationWarning, match="passing first=, idle=, total= positionally"):
        operator = rs.timeouts(None, None, 30)  # type: ignore[call-arg]
    assert run(reactivex.of(1, 2).pipe(operator)) == [1, 2]
    with pytest.raises(TypeError, match="multiple values for argument 'first'"):
        rs.timeouts(1, first=2)  # type: ignore[misc]
    with pytest.raises(TypeError, match="at most 4 positional arguments"):
        rs.timeouts(1, 2, 3, None, 5)  # type: ignore[call-arg]


def test_count_tokens_encoding_positionally() -> None:
    with pytest.warns(DeprecationWarning, match="passing encoding= positionally"):
        operator = rs.count_tokens(str.split)  # type: ignore[call-arg]
    counts = run(reactivex.of(rs.TextDelta("a b")).pipe(operator))
    assert [(c.text, c.final) for c in counts] == [(2, False), (2, True)]


# --------------------------------------------------------------------------- the helper


def test_the_helper_keeps_the_signature_and_maps_a_method() -> None:
    class Thing:
        @deprecated_arguments(renamed={"size": "maxsize"}, positional=("maxsize",))
        def __init__(self, name: str, *, maxsize: int = 1) -> None:
            self.name, self.maxsize = name, maxsize

    with pytest.warns(DeprecationWarning, match=r"Thing\(\): size= is deprecated"):
        assert Thing("a", size=3).maxsize == 3  # type: ignore[call-arg]
    with pytest.warns(DeprecationWarning, match=r"Thing\(\): passing maxsize= positionally"):
        assert Thing("a", 4).maxsize == 4  # type: ignore[call-arg]
    assert Thing("a", maxsize=5).maxsize == 5
    assert Thing.__init__.__doc__ is None
    assert "maxsize" in str(__import__("inspect").signature(Thing.__init__))


def test_redis_server_executable_positionally() -> None:
    from rxstream.testing.redis_server import RedisServer

    with pytest.warns(DeprecationWarning, match="passing executable= positionally"):
        server = RedisServer("/bin/redis-server-of-this-test")  # type: ignore[call-arg]
    assert server.executable == "/bin/redis-server-of-this-test"
    server.close()


@pytest.mark.parametrize(
    ("machine", "size", "new"),
    [
        pytest.param(LineSplitter, 8, "line_limit", id="LineSplitter"),
        pytest.param(EventStreamParser, 64, "frame_limit", id="EventStreamParser"),
        pytest.param(EventStreamSplitter, 64, "frame_limit", id="EventStreamSplitter"),
    ],
)
def test_the_core_machines_former_limit_warns_and_works(machine: Any, size: int, new: str) -> None:
    old: dict[str, int] = {"limit": size}
    with pytest.warns(DeprecationWarning, match=f"limit= is deprecated, use {new}="):
        made = machine(**old)
    assert made._limit == size


# --------------------------------------------------------------------------- the CHANGELOG's table
#
# Every row of the CHANGELOG's migration tables is exercised here: the old spelling works, gives
# what the new one gives, and warns in the one wording, at the caller's line. A row without a
# check, or a check without a row, fails `test_every_migration_row_has_a_check`.

CHANGELOG = Path(__file__).parent.parent / "CHANGELOG.md"

#: The one wording of every deprecation (rxstream._deprecate.deprecation_message).
WORDING = re.compile(
    r"^(?:\S.*?: )?\S.*? is deprecated, use \S.*? \(it will be removed in the next release\)$"
)


def migration_tables() -> tuple[list[tuple[str, str, str]], list[tuple[str, str]]]:
    """The rows of the Unreleased migration section: (where, old, new) and (old path, new path)."""
    text = CHANGELOG.read_text(encoding="utf-8")
    section = text.split("### Migration", 1)[1].split("\n### ", 1)[0]
    arguments: list[tuple[str, str, str]] = []
    paths: list[tuple[str, str]] = []
    header: list[str] = []
    for line in section.splitlines():
        if not line.startswith("|"):
            header = []
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if not header:
            header = cells
        elif set("".join(cells)) <= set("-: "):
            continue
        elif header == ["where", "old", "new"]:
            arguments.append((cells[0], cells[1], cells[2]))
        elif header == ["old path", "new path"]:
            paths.append((cells[0], cells[1]))
        else:
            raise AssertionError(f"a migration table the test cannot read: {header}")
    return arguments, paths


ARGUMENT_ROWS, PATH_ROWS = migration_tables()


def spans(cell: str) -> list[str]:
    """The code spans of a table cell (`rs.to_sse`, `format=`, ...)."""
    return re.findall(r"`([^`]+)`", cell)


def old_call(function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """`function(*args, **kwargs)`, and the deprecation warnings it issued (no other warning)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = function(*args, **kwargs)
    others = [w for w in caught if not issubclass(w.category, DeprecationWarning)]
    assert others == [], [str(w.message) for w in others]
    return value, caught


def assert_one_wording(caught: list[warnings.WarningMessage], *, old: str, new: str) -> None:
    """At least one warning; each in the one wording, naming both spellings, at the caller."""
    assert caught, f"no DeprecationWarning for {old!r}"
    for warning in caught:
        message = str(warning.message)
        assert WORDING.match(message), message
        assert old in message, (message, old)
        assert new in message, (message, new)
        assert warning.filename == __file__, (message, warning.filename)


# -- one check per row of the arguments table: use the old spelling, compare with the new.


def check_to_sse_format(_: pytest.FixtureRequest) -> None:
    operator, caught = old_call(rs.to_sse, format="anthropic", keepalive=None)
    assert_one_wording(caught, old="format=", new="dialect=")
    new = rs.to_sse(dialect="anthropic", keepalive=None)
    assert run(reactivex.from_iterable(TEXT).pipe(operator)) == run(
        reactivex.from_iterable(TEXT).pipe(new)
    )


def check_to_sse_last_event_id(_: pytest.FixtureRequest) -> None:
    operator, caught = old_call(rs.to_sse, dialect="rxstream", last_event_id="4-0", keepalive=None)
    assert_one_wording(caught, old="last_event_id=", new="after=")
    new = rs.to_sse(dialect="rxstream", after="4-0", keepalive=None)
    assert run(reactivex.empty().pipe(operator)) == run(reactivex.empty().pipe(new))


def check_sse_response(old: str, new: str, value: str) -> Callable[[pytest.FixtureRequest], None]:
    def check(_: pytest.FixtureRequest) -> None:
        for make in (sse_response, SSEResponse):
            response, caught = old_call(make, reactivex.empty(), **{old: value})
            assert_one_wording(caught, old=f"{old}=", new=f"{new}=")
            assert getattr(response, f"_{new}") == value

    return check


def check_lines_limit(_: pytest.FixtureRequest) -> None:
    operator, caught = old_call(rs.lines, limit=4)
    assert_one_wording(caught, old="limit=", new="line_limit=")
    got = run(reactivex.of("abcdefgh\n").pipe(operator, ops.materialize()))
    assert isinstance(got[0].exception, rs.LineTooLongError)


def check_eventstream_frames_limit(_: pytest.FixtureRequest) -> None:
    operator, caught = old_call(rs.eventstream_frames, limit=64)
    assert_one_wording(caught, old="limit=", new="frame_limit=")
    message = encode_message({":event-type": "x"}, b"y" * 100)
    got = run(reactivex.of(message).pipe(operator, ops.materialize()))
    assert isinstance(got[0].exception, rs.MalformedChunkError)


def check_to_redis_stream_max_pending(_: pytest.FixtureRequest) -> None:
    class Client:  # enough of a sync client to build the operator (nothing is written)
        def execute_command(self, *args: Any, **options: Any) -> Any:
            raise AssertionError("not called")

        def pipeline(self, transaction: bool = True, shard_hint: Any = None) -> Any:
            raise AssertionError("not called")

    _, caught = old_call(rs.to_redis_stream, Client(), "k", max_pending=8)
    assert_one_wording(caught, old="max_pending=", new="maxsize=")
    with pytest.raises(ValueError, match="maxsize must be at least 1"):
        old_call(rs.to_redis_stream, Client(), "k", max_pending=0)


def check_coalesce_positional(_: pytest.FixtureRequest) -> None:
    operator, caught = old_call(rs.coalesce, 0.05, TestScheduler())
    assert_one_wording(caught, old="scheduler=", new="scheduler= by keyword")
    assert run(reactivex.from_iterable(TEXT).pipe(operator)) == [rs.TextDelta("Hello")]


def check_timeouts_positional(_: pytest.FixtureRequest) -> None:
    operator, caught = old_call(rs.timeouts, None, None, 30, None)
    assert_one_wording(caught, old="first=, idle=, total=, scheduler=", new="by keyword")
    assert run(reactivex.of(1, 2).pipe(operator)) == [1, 2]


def check_count_tokens_positional(_: pytest.FixtureRequest) -> None:
    operator, caught = old_call(rs.count_tokens, str.split)
    assert_one_wording(caught, old="encoding=", new="encoding= by keyword")
    new = rs.count_tokens(encoding=str.split)
    item = rs.TextDelta("a b")
    assert run(reactivex.of(item).pipe(operator)) == run(reactivex.of(item).pipe(new))


def check_cli_api(request: pytest.FixtureRequest) -> None:
    # The command's users see no Python warnings: the same wording on stderr.
    capsys: pytest.CaptureFixture[str] = request.getfixturevalue("capsys")
    outputs = []
    for option in ("--api", "--dialect"):
        capsys.readouterr()
        assert cli_main(["demo", "--delay", "0", option, "anthropic"]) == 0
        outputs.append(capsys.readouterr())
    old, new = outputs
    assert old.out.splitlines()[1] == new.out.splitlines()[1] == "anthropic: POST /v1/messages"
    [line] = old.err.splitlines()
    assert WORDING.match(line.removeprefix("rxstream: warning: ")), line
    assert "--api is deprecated, use --dialect" in line
    assert new.err == ""
    with pytest.raises(SystemExit):  # `chat` has the alias too: argparse checks its choices
        cli_main(["chat", "hi", "--api", "no-such-dialect"])
    assert "argument --api" in capsys.readouterr().err


def check_source_raw(request: pytest.FixtureRequest) -> None:
    server: FakeLLMServer = request.getfixturevalue("fake_llm_server")
    body = minimal_body("openai-chat")
    with httpx.Client() as client:
        for raw, mode in ((True, '"bytes"'), (False, '"lines"')):
            source, caught = old_call(
                rs.from_request, client, "POST", server.url, json=body, raw=raw
            )
            assert_one_wording(caught, old=f"raw={raw}", new=f"body={mode}")
            new = old_call(rs.from_request, client, "POST", server.url, json=body, body=mode[1:-1])[
                0
            ]
            assert b"".join(map(to_bytes, run(source))) == b"".join(map(to_bytes, run(new)))
            with client.stream("POST", server.url, json=body) as response:
                source, caught = old_call(rs.from_response, response, raw=raw)
                assert_one_wording(caught, old=f"raw={raw}", new=f"body={mode}")
                assert b"data: [DONE]" in b"".join(map(to_bytes, run(source)))


def to_bytes(item: str | bytes) -> bytes:
    return item if isinstance(item, bytes) else item.encode() + b"\n"


def check_sse_encoder_format(_: pytest.FixtureRequest) -> None:
    encoder, caught = old_call(SSEEncoder, format="anthropic")
    assert_one_wording(caught, old="format=", new="dialect=")
    assert encoder.feed(rs.TextDelta("Hi")) == SSEEncoder("anthropic").feed(rs.TextDelta("Hi"))
    dialect, caught = old_call(getattr, encoder, "format")
    assert_one_wording(caught, old="SSEEncoder.format", new="SSEEncoder.dialect")
    assert dialect == "anthropic"
    dialects, caught = old_call(getattr, sse_encoder_module, "SSE_FORMATS")
    assert_one_wording(caught, old="SSE_FORMATS", new="SSE_DIALECTS")
    assert dialects is sse_encoder_module.SSE_DIALECTS


def check_sse_encoder_last_event_id(_: pytest.FixtureRequest) -> None:
    encoder, caught = old_call(SSEEncoder, "rxstream", last_event_id="3-0")
    assert_one_wording(caught, old="last_event_id=", new="after=")
    assert encoder.position == SSEEncoder("rxstream", after="3-0").position == "3-0"


def check_redis_server_positional(_: pytest.FixtureRequest) -> None:
    from rxstream.testing.redis_server import RedisServer

    server, caught = old_call(RedisServer, "/bin/redis-server-of-this-test")
    assert_one_wording(caught, old="executable=", new="executable= by keyword")
    assert server.executable == "/bin/redis-server-of-this-test"
    server.close()


def check_share_reader(_: pytest.FixtureRequest) -> None:
    chunk = rs.ChatChunk({"choices": [{"index": 0, "delta": {"role": "tool", "content": "a"}}]})
    decoder = DeltaDecoder()
    accumulator = MessageAccumulator()
    _, caught = old_call(accumulator.share_reader, decoder.reader)
    assert_one_wording(caught, old="share_reader(reader)", new="MessageAccumulator(chunks=reader)")
    for delta in decoder.feed(chunk):
        accumulator.feed(delta)
    assert [(m.role, m.content) for m in accumulator.close()] == [("tool", "a")]


def check_machine_limit(
    machines: list[Callable[..., Any]], new: str
) -> Callable[[pytest.FixtureRequest], None]:
    def check(_: pytest.FixtureRequest) -> None:
        for machine in machines:
            made, caught = old_call(machine, limit=64)
            assert_one_wording(caught, old="limit=", new=f"{new}=")
            assert made._limit == machine(**{new: 64})._limit == 64

    return check


ARGUMENT_CHECKS: dict[tuple[str, str], Callable[[pytest.FixtureRequest], None]] = {
    ("`rs.to_sse`", "`format=`"): check_to_sse_format,
    ("`rs.to_sse`", "`last_event_id=`"): check_to_sse_last_event_id,
    ("`rxstream.serve.sse_response`, `SSEResponse`", "`format=`"): check_sse_response(
        "format", "dialect", "rxstream"
    ),
    ("`rxstream.serve.sse_response`, `SSEResponse`", "`last_event_id=`"): check_sse_response(
        "last_event_id", "after", "7-0"
    ),
    ("`rs.lines`", "`limit=`"): check_lines_limit,
    ("`rs.eventstream_frames`", "`limit=`"): check_eventstream_frames_limit,
    ("`rs.to_redis_stream`", "`max_pending=`"): check_to_redis_stream_max_pending,
    ("`rs.coalesce`", "`scheduler` given by position"): check_coalesce_positional,
    (
        "`rs.timeouts`",
        "`first`, `idle`, `total`, `scheduler` given by position",
    ): check_timeouts_positional,
    ("`rs.count_tokens`", "`encoding` given by position"): check_count_tokens_positional,
    ("`rxstream demo`, `rxstream chat`", "`--api NAME`"): check_cli_api,
    ("`rs.from_request`, `rs.from_response`", "`raw=True` / `raw=False`"): check_source_raw,
    (
        "`rxstream.core.dialects.sse_encoder.SSEEncoder`",
        "`format=`, `.format`, `SSE_FORMATS`",
    ): check_sse_encoder_format,
    ("`SSEEncoder`", "`last_event_id=`"): check_sse_encoder_last_event_id,
    (
        "`rxstream.testing.redis_server.RedisServer`",
        "`executable` given by position",
    ): check_redis_server_positional,
    ("`rxstream.core.MessageAccumulator`", "`.share_reader(reader)`"): check_share_reader,
    ("`rxstream.core.LineSplitter`", "`limit=`"): check_machine_limit([LineSplitter], "line_limit"),
    ("`rxstream.core.EventStreamParser`, `EventStreamSplitter`", "`limit=`"): check_machine_limit(
        [EventStreamParser, EventStreamSplitter], "frame_limit"
    ),
}


def test_every_migration_row_has_a_check() -> None:
    rows = {(where, old) for where, old, _ in ARGUMENT_ROWS}
    assert len(rows) == len(ARGUMENT_ROWS) > 10
    assert rows == set(ARGUMENT_CHECKS), (
        f"rows without a check: {rows - set(ARGUMENT_CHECKS)}; "
        f"checks without a row: {set(ARGUMENT_CHECKS) - rows}"
    )
    assert len(PATH_ROWS) >= 7


@pytest.mark.parametrize(
    ("where", "old", "new"), ARGUMENT_ROWS, ids=[f"{w} {o}" for w, o, _ in ARGUMENT_ROWS]
)
def test_an_old_argument_spelling_works_and_warns(
    where: str, old: str, new: str, request: pytest.FixtureRequest
) -> None:
    ARGUMENT_CHECKS[(where, old)](request)


def resolve(path: str) -> tuple[Any, str | None]:
    """`rxstream.a.b` as a module, or as module `rxstream.a` and the name `b` in it."""
    try:
        return importlib.import_module(path), None
    except ModuleNotFoundError:
        module, _, name = path.rpartition(".")
        return importlib.import_module(module), name


def named_object(message: str) -> Any:
    """The object at the path a warning names after "use "."""
    path = message.split(" is deprecated, use ", 1)[1].split(" (", 1)[0]
    module, name = resolve(path)
    assert name is not None, message
    return getattr(module, name)


def check_moved_path(old: str) -> None:
    """Every name reached through an old path warns and is the object the warning names."""
    module, name = resolve(old)  # the old module itself imports (and does not warn)
    names = list(module.__all__) if name is None else [name]
    for each in names:
        value, caught = old_call(getattr, module, each)
        assert_one_wording(caught, old=f"{module.__name__}.{each}", new=" use ")
        named = named_object(str(caught[0].message))
        # The same object, or (FieldError) an adapter that keeps an old argument order.
        assert value is named or issubclass(value, named), (old, each)


#: Rows whose old spelling is not a plain path, or that change more than the path.
PATH_SPECIALS = {
    "`rxstream.core.deltas.FieldError` (`path`, `value`, `expected`)",
    "`json_kind` of the chat decoder",
}


@pytest.mark.parametrize(("old", "new"), PATH_ROWS, ids=[old for old, _ in PATH_ROWS])
def test_an_old_path_imports_and_each_name_warns(old: str, new: str) -> None:
    for path in spans(new):
        if path.startswith("rxstream"):
            resolve(path)  # the new spelling exists
    if old in PATH_SPECIALS:
        return  # checked by the next two tests
    for path in spans(old):
        check_moved_path(path)


def test_field_error_keeps_its_argument_order() -> None:
    from rxstream.core import deltas

    field_error, caught = old_call(getattr, deltas, "FieldError")
    assert_one_wording(
        caught, old="rxstream.core.deltas.FieldError", new="rxstream.core.dialects.ShapeError"
    )
    old = field_error("choices", 1, "an array or null")
    new = ShapeError("choices", "an array or null", 1)
    assert isinstance(old, ShapeError)
    assert (old.path, old.reason) == (new.path, new.reason)


def test_json_kind_of_the_chat_decoder_moved() -> None:
    from rxstream.core import deltas

    value, caught = old_call(getattr, deltas, "json_kind")
    assert_one_wording(caught, old="rxstream.core.deltas.json_kind", new="dialects.json_kind")
    assert value is json_kind


def test_the_specials_are_rows_of_the_table() -> None:
    assert {old for old, _ in PATH_ROWS} >= PATH_SPECIALS


def test_there_is_one_wording_and_one_helper() -> None:
    # No module but the helper writes a DeprecationWarning or a deprecation message itself.
    root = Path(rs.__file__).parent
    writers = sorted(
        str(path.relative_to(root))
        for path in root.rglob("*.py")
        if path.name != "_deprecate.py"
        and re.search(r"warnings\.warn\(|DeprecationWarning,|is deprecated[,;:]", path.read_text())
    )
    assert writers == []

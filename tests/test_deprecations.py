"""Every spelling renamed for one name per idea still works for one release, and warns.

Each old spelling gives the same result as the new one, with a `DeprecationWarning`
that names both and points at the caller's line; giving both spellings is a
`TypeError`. The spellings go away in the next release (the CHANGELOG's migration list).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import pytest
import reactivex
from reactivex import operators as ops
from reactivex.testing import TestScheduler

import rxstream as rs
from rxstream._deprecate import deprecated_arguments
from rxstream.core.eventstream import EventStreamParser, EventStreamSplitter, encode_message
from rxstream.core.lines import LineSplitter
from rxstream.serve import SSEResponse, sse_response

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

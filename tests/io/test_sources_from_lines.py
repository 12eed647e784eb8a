"""from_lines: lists, generators, async generators, bytes and open files."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import reactivex.operators as ops
from reactivex.scheduler import ThreadPoolScheduler

import rxstream as rs
from tests.support.sources import TIMEOUT, Outcome, arun, run


@pytest.mark.parametrize(
    ("items", "lines"),
    [
        (["data: x", ""], ["data: x", ""]),
        (["data: x\n", "\n"], ["data: x", ""]),
        (["data: a\n\ndata: b"], ["data: a", "", "data: b"]),
        (["a\r\nb\rc\nd"], ["a", "b", "c", "d"]),
        (["a\r", "\nb"], ["a", "", "b"]),
        (["a\n\n\n"], ["a", "", ""]),
        (["", ""], ["", ""]),
        (["\ufeffdata: x", "\ufeffkept"], ["data: x", "\ufeffkept"]),
        (["u\u2028v\x85w"], ["u\u2028v\x85w"]),
        ([b"data: caf\xc3\xa9\r\n", b""], ["data: caf\u00e9", ""]),
        ([b"\xef\xbb\xbfdata: x", b"bad \xff"], ["data: x", "bad \ufffd"]),
        ([bytearray(b"x\ny")], ["x", "y"]),
        ([], []),
    ],
    ids=[
        "bare-lines",
        "terminated-lines",
        "many-lines-per-item",
        "cr-lf-crlf",
        "item-ends-at-cr",
        "blank-lines",
        "empty-items-are-blank-lines",
        "bom-only-at-start",
        "unicode-separators-do-not-split",
        "bytes",
        "bytes-bom-and-invalid-utf8",
        "bytearray",
        "empty",
    ],
)
def test_items_are_cut_into_lines(items: list[str | bytes], lines: list[str]) -> None:
    outcome = run(rs.from_lines(items))
    assert outcome.items == lines
    assert outcome.completed


def test_list_is_iterated_afresh_per_subscription() -> None:
    source = rs.from_lines(["a", "b"])
    assert run(source).items == run(source).items == ["a", "b"]


def test_generator_is_closed_on_dispose() -> None:
    closed: list[str] = []

    def lines() -> Iterator[str]:
        try:
            for n in range(1_000):
                yield f"data: {n}"
        finally:
            closed.append("closed")

    outcome = run(rs.from_lines(lines()).pipe(ops.take(2)))
    assert outcome.items == ["data: 0", "data: 1"]
    assert closed == ["closed"]


def test_open_file_is_read_and_closed(tmp_path: Path) -> None:
    path = tmp_path / "stream.sse"
    path.write_bytes(b'data: {"a":1}\r\n\r\ndata: [DONE]\r\n\r\n')
    with path.open(encoding="utf-8", newline="") as file:
        outcome = run(rs.from_lines(file))
        assert file.closed
    assert outcome.items == ['data: {"a":1}', "", "data: [DONE]", ""]


def test_binary_file(tmp_path: Path) -> None:
    path = tmp_path / "stream.sse"
    path.write_bytes(b"data: \xe2\x82\xac\n\ndata: [DONE]")
    with path.open("rb") as file:
        outcome = run(rs.from_lines(file))
    assert outcome.items == ["data: \u20ac", "", "data: [DONE]"]


def test_iterator_error_reaches_on_error() -> None:
    def lines() -> Iterator[str]:
        yield "data: 1"
        raise OSError("disk gone")

    outcome = run(rs.from_lines(lines()))
    assert outcome.items == ["data: 1"]
    assert isinstance(outcome.error, OSError)


def test_line_over_the_limit_is_an_error() -> None:
    outcome = run(rs.from_lines(["ok", "x" * 1_048_577]))
    assert outcome.items == ["ok"]
    assert isinstance(outcome.error, rs.LineTooLongError)


@pytest.mark.parametrize(
    ("bad", "exception"),
    [("data: x", TypeError), (b"data: x", TypeError), (42, TypeError)],
    ids=["str", "bytes", "int"],
)
def test_not_an_iterable_of_lines_is_a_type_error(bad: object, exception: type) -> None:
    with pytest.raises(exception):
        rs.from_lines(bad)  # type: ignore[arg-type]


def test_item_of_the_wrong_type_reaches_on_error() -> None:
    outcome = run(rs.from_lines(["a", 3]))  # type: ignore[list-item]
    assert outcome.items == ["a"]
    assert isinstance(outcome.error, TypeError)


def test_full_pipeline_over_lines() -> None:
    lines = [
        'data: {"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}',
        "",
        'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}',
        "",
        "data: [DONE]",
        "",
    ]
    outcome = run(rs.from_lines(lines).pipe(rs.sse_frames(), rs.decode_chunks(), rs.deltas()))
    assert outcome.items == [rs.TextDelta("Hi"), rs.Finish("stop")]
    assert outcome.completed


def test_thread_pool_scheduler() -> None:
    outcome = Outcome()
    rs.from_lines(["a\nb", "c"], scheduler=ThreadPoolScheduler(1)).subscribe(
        outcome.on_next, outcome.on_error, outcome.on_completed
    )
    assert outcome.ended.wait(TIMEOUT)
    assert outcome.items == ["a", "b", "c"]


def test_async_generator() -> None:
    async def lines() -> AsyncIterator[bytes]:
        for piece in (b"data: a\n", b"", b"data: [DONE]\n\n"):
            await asyncio.sleep(0)
            yield piece

    outcome = asyncio.run(arun(rs.from_lines(lines())))
    assert outcome.items == ["data: a", "", "data: [DONE]", ""]
    assert outcome.completed


def test_async_generator_is_closed_on_dispose() -> None:
    closed = asyncio.Event()

    async def lines() -> AsyncIterator[str]:
        try:
            n = 0
            while True:
                await asyncio.sleep(0)
                yield f"data: {n}"
                n += 1
        finally:
            closed.set()

    async def main() -> Outcome:
        outcome = await arun(rs.from_lines(lines()).pipe(ops.take(3)))
        await asyncio.wait_for(closed.wait(), TIMEOUT)
        return outcome

    outcome = asyncio.run(main())
    assert outcome.items == ["data: 0", "data: 1", "data: 2"]
    assert outcome.completed


def test_async_generator_dispose_while_it_waits() -> None:
    closed = asyncio.Event()
    started = asyncio.Event()

    async def lines() -> AsyncIterator[str]:
        try:
            yield "first"
            started.set()
            await asyncio.sleep(TIMEOUT * 10)
            yield "never"
        finally:
            closed.set()

    async def main() -> Outcome:
        outcome = Outcome()
        subscription = rs.from_lines(lines()).subscribe(
            outcome.on_next, outcome.on_error, outcome.on_completed
        )
        await asyncio.wait_for(started.wait(), TIMEOUT)
        subscription.dispose()
        await asyncio.wait_for(closed.wait(), TIMEOUT)
        return outcome

    outcome = asyncio.run(main())
    assert outcome.items == ["first"]
    assert not outcome.completed
    assert outcome.error is None


def test_async_generator_cut_off_by_the_loop_ending_is_an_error_not_silence() -> None:
    closed = threading.Event()

    async def lines() -> AsyncIterator[str]:
        try:
            yield "first"
            await asyncio.sleep(TIMEOUT * 10)
            yield "never"
        finally:
            closed.set()

    outcome = Outcome()

    async def main() -> None:
        rs.from_lines(lines()).subscribe(outcome.on_next, outcome.on_error, outcome.on_completed)
        await asyncio.sleep(0.01)
        # main returns with the stream still running: asyncio.run cancels its task.

    asyncio.run(main())
    assert closed.is_set()
    assert outcome.items == ["first"]
    assert isinstance(outcome.error, rs.StreamError)
    assert "cancelled before the stream ended" in str(outcome.error)

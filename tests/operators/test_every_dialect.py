"""Every operator on a stream of every dialect: the deltas are one vocabulary."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from reactivex import Observable
from reactivex import operators as ops
from reactivex.scheduler import ThreadPoolScheduler

import rxstream as rs
from tests.support.narrowing import only
from tests.support.scripted_streams import AVAILABLE, deltas_of


def collect(observable: Observable[Any]) -> list[Any]:
    out: list[Any] = []
    errors: list[Exception] = []
    observable.subscribe(out.append, errors.append)
    assert not errors, errors
    return out


@pytest.fixture(params=AVAILABLE)
def dialect(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


def test_accumulate_message(dialect: str) -> None:
    [message] = collect(deltas_of(dialect).pipe(rs.accumulate_message()))
    assert message.content == "<think>hidden</think>Let me check."
    assert message.reasoning == "Weather: call the tool."
    [call] = message.tool_calls
    assert (call.name, call.parse_arguments()) == ("weather", {"city": "Paris"})
    assert message.finish_reason == "tool_calls"
    assert message.usage is not None
    assert (message.usage.prompt_tokens, message.usage.completion_tokens) == (20, 30)


def test_accumulate_tool_calls_with_snapshots(dialect: str) -> None:
    calls = collect(deltas_of(dialect).pipe(rs.accumulate_tool_calls(partial=True)))
    complete = [c for c in calls if c.complete]
    assert [c.parse_arguments() for c in complete] == [{"city": "Paris"}]
    assert calls[-1].complete
    assert any(not c.complete for c in calls)


def test_split_by_delta_type(dialect: str) -> None:
    groups: dict[rs.DeltaType, list[rs.Delta]] = {}

    def on_group(group: Any) -> None:
        group.subscribe(groups.setdefault(group.key, []).append)

    deltas_of(dialect).pipe(rs.split_by_delta_type()).subscribe(on_group)
    assert "".join(d.text for d in only(rs.TextDelta, groups[rs.DeltaType.TEXT])) == (
        "<think>hidden</think>Let me check."
    )
    assert rs.DeltaType.TOOL_CALL in groups
    assert [d.reason for d in only(rs.Finish, groups[rs.DeltaType.FINISH])] == ["tool_calls"]


def test_count_tokens(dialect: str) -> None:
    # str.split stands in for an encoding: only the length of what it gives is counted.
    counts = collect(deltas_of(dialect).pipe(rs.count_tokens(encoding=str.split)))
    final = counts[-1]
    assert final.final
    assert final.text == 3  # "<think>hidden</think>Let", "me", "check."
    assert final.reasoning == 4
    assert final.usage is not None


def test_think_tags(dialect: str) -> None:
    [message] = collect(deltas_of(dialect).pipe(rs.think_tags(), rs.accumulate_message()))
    assert message.content == "Let me check."
    assert message.reasoning == "Weather: call the tool.hidden"


def test_coalesce_is_lossless(dialect: str) -> None:
    merged = collect(deltas_of(dialect).pipe(rs.coalesce(60.0), rs.accumulate_message()))
    plain = collect(deltas_of(dialect).pipe(rs.accumulate_message()))
    assert merged == plain


def test_timeouts_pass_a_healthy_stream(dialect: str) -> None:
    [message] = collect(deltas_of(dialect).pipe(rs.timeouts(total=30), rs.accumulate_message()))
    assert message.finish_reason == "tool_calls"


def test_multicast_to_two_observers(dialect: str) -> None:
    hub = rs.multicast(deltas_of(dialect))
    texts: list[rs.Delta] = []
    messages: list[rs.Message] = []
    hub.observe().pipe(ops.filter(lambda d: isinstance(d, rs.TextDelta))).subscribe(texts.append)
    hub.observe().pipe(rs.accumulate_message()).subscribe(messages.append)
    hub.connect()
    assert "".join(t.text for t in only(rs.TextDelta, texts)) == messages[0].content


def test_to_iterator(dialect: str) -> None:
    items = list(rs.to_iterator(deltas_of(dialect), maxsize=2))
    assert rs.Finish("tool_calls") in items


def test_to_async_iterator(dialect: str) -> None:
    async def main() -> list[rs.Delta]:
        source = deltas_of(dialect).pipe(ops.subscribe_on(ThreadPoolScheduler(1)))
        return [d async for d in rs.to_async_iterator(source, maxsize=2)]

    items = asyncio.run(main())
    assert rs.Finish("tool_calls") in items

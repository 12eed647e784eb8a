"""`rs.run` on virtual time: each step's answer and each tool's timing as a marble diagram
(`StreamMarbles.answers`, `StreamMarbles.tool`), checked tick by tick."""

from __future__ import annotations

from typing import Any

import pytest
import reactivex
from hypothesis import given
from hypothesis import strategies as st
from reactivex import operators as ops
from reactivex.notification import OnCompleted, OnError, OnNext
from reactivex.testing.recorded import Recorded

import rxstream as rs
from rxstream.testing.marbles import DONE, MarbleTool, StreamMarbles, finish, text, tool, usage

ASK = [{"role": "user", "content": "Go"}]
V: dict[str, Any] = {
    "c": tool(0, id="c1", name="slow", arguments="{}"),
    "d": tool(1, id="c2", name="slower", arguments="{}"),
    "t": finish("tool_calls"),
    "a": text("done"),
    "f": finish(),
    "u": usage(3, 2),
    "r": "R",
    "s": "S",
    "D": DONE,
}
CALLS = "--c-d-(t,u,D)"  # step 1: two calls, finished at tick 6
ANSWER = "------a-(f,u,D)"  # step 2: the answer, 8 ticks after it starts


def fn(made: rs.FunctionTool) -> MarbleTool:
    """The function of a marble tool (its diagram and its calls)."""
    assert isinstance(made.fn, MarbleTool)
    return made.fn


def values(records: list[Recorded[Any]]) -> list[tuple[int, Any]]:
    """(tick from the subscription, item) of each OnNext; the end as ("|" or the error)."""
    out: list[tuple[int, Any]] = []
    for record in records:
        tick = int(record.time) - 200
        match record.value:
            case OnNext(value=value):
                out.append((tick, value))
            case OnCompleted():
                out.append((tick, "|"))
            case OnError(exception=error):
                out.append((tick, error))
    return out


def run_items(out: list[Recorded[Any]], *kinds: type) -> list[tuple[int, Any]]:
    return [(t, v) for t, v in values(out) if isinstance(v, kinds) or v == "|"]


def test_a_run_as_a_diagram() -> None:
    m = StreamMarbles()
    answers = m.answers(CALLS, ANSWER, values=V)
    slow, slower = m.tool("slow", "---------r|", V), m.tool("slower", "-----------s|", V)
    out = m.start(
        rs.run(answers, "d", model="m", messages=ASK, tools=[slow, slower], scheduler=m.scheduler)
    )

    first = rs.Message(
        tool_calls=(rs.ToolCall(0, "c1", "slow", "{}"), rs.ToolCall(1, "c2", "slower", "{}")),
        finish_reason="tool_calls",
        usage=rs.Usage(3, 2, 5),
    )
    second = rs.Message(content="done", finish_reason="stop", usage=rs.Usage(3, 2, 5))
    results = [
        {"role": "tool", "tool_call_id": "c1", "name": "slow", "content": "R"},
        {"role": "tool", "tool_call_id": "c2", "name": "slower", "content": "S"},
    ]
    expected = {
        **V,
        "A": rs.StepStart(1, "d", "m"),
        "e": rs.StepEnd(1, "tool_calls", rs.Usage(3, 2, 5)),
        "R": rs.ToolResult("c1", "slow", "R"),
        "S": rs.ToolResult("c2", "slower", "S"),
        "B": rs.StepStart(2, "d", "m"),
        "E": rs.StepEnd(2, "stop", rs.Usage(3, 2, 5)),
        "Z": rs.RunEnd((*ASK, first, *results, second), rs.Usage(6, 4, 10), 2),
    }
    # The calls start together at tick 6; a tool's output is its diagram's last item, given
    # when the diagram completes: R at 6 + 10, S at 6 + 12, and step 2 at once. (A group
    # takes as many ticks as it has characters.)
    assert out == m.expected("A-c-d-(t,u,e)---R-(S,B)-a-(f,u,E,Z,|)", expected)
    assert fn(slow).calls == [{}]
    assert [len(r.messages) for r in answers.requests] == [1, 4]
    assert answers.requests[1].tools == (slow.spec, slower.spec)


@pytest.mark.parametrize(("max_parallel", "last"), [(2, 1.0), (1, 2.0)])
def test_two_one_second_tools_overlap(max_parallel: int, last: float) -> None:
    """Two tools of 1 s each take 1 s of virtual time together (2 s one at a time)."""
    m = StreamMarbles()

    def wait(**_: Any) -> reactivex.Observable[str]:
        return reactivex.timer(1.0, scheduler=m.scheduler).pipe(ops.map(lambda _: "ok"))

    tools = [
        rs.tool(wait, rs.Tool("slow", "", {"type": "object"}), blocking=False),
        rs.tool(wait, rs.Tool("slower", "", {"type": "object"}), blocking=False),
    ]
    answers = m.answers("(c,d,t,D)", "(a,f,D)", values=V)
    run = rs.run(
        answers,
        "d",
        model="m",
        messages=ASK,
        tools=tools,
        max_parallel=max_parallel,
        scheduler=m.scheduler,
    )
    out = values(m.start(run))
    step_end = next(t for t, v in out if isinstance(v, rs.StepEnd))
    done = [t for t, v in out if isinstance(v, rs.ToolResult)]
    assert [t - step_end for t in done] == pytest.approx(
        [1.0, last], abs=0.01 + (max_parallel == 1)
    )
    assert done[-1] - step_end == pytest.approx(last, abs=1.01)
    assert (done[1] == done[0]) is (max_parallel == 2)


def test_a_slow_tool_times_out_and_is_unsubscribed() -> None:
    m = StreamMarbles()
    forever = m.tool("slow", "-", V, timeout=5)
    answers = m.answers("(c,t,D)", "(a,f,D)", values=V)
    out = m.start(
        rs.run(answers, "d", model="m", messages=ASK, tools=[forever], scheduler=m.scheduler)
    )
    result = next((t, v) for t, v in values(out) if isinstance(v, rs.ToolResult))
    assert result == (
        5,
        rs.ToolResult("c1", "slow", error="the tool 'slow' did not finish within 5 s"),
    )
    assert fn(forever).source.subscriptions == [m.subscription("^----!")]


def test_a_failing_tool_goes_back_as_an_error_or_ends_the_run() -> None:
    m = StreamMarbles()
    failing = m.tool("slow", "--#", V, error=OSError("disk full"))
    answers = m.answers("(c,t,D)", "(a,f,D)", values=V)
    out = m.start(
        rs.run(answers, "d", model="m", messages=ASK, tools=[failing], scheduler=m.scheduler)
    )
    assert (2, rs.ToolResult("c1", "slow", error="OSError: disk full")) in values(out)
    assert values(out)[-1] == (2, "|")

    m = StreamMarbles()
    failing = m.tool("slow", "--#", V, error=OSError("disk full"))
    answers = m.answers("(c,t,D)", values=V)
    run = rs.run(
        answers,
        "d",
        model="m",
        messages=ASK,
        tools=[failing],
        tool_errors="raise",
        scheduler=m.scheduler,
    )
    tick, error = values(m.start(run))[-1]
    assert tick == 2
    assert isinstance(error, rs.ToolError)
    assert str(error) == "tool 'slow' (call 'c1') failed: OSError: disk full"


def test_an_approval_that_arrives_later() -> None:
    m = StreamMarbles()
    slow = m.tool("slow", "--r|", V, needs_approval=True)
    answers = m.answers("(c,t,D)", "(a,f,D)", values=V)
    decision = rs.ApprovalResponse("c1", approved=True)
    approvals = m.cold("----------y|", {"y": decision})
    run = rs.run(
        answers,
        "d",
        model="m",
        messages=ASK,
        tools=[slow],
        approvals=approvals,
        scheduler=m.scheduler,
    )
    items = run_items(
        m.start(run), rs.ApprovalRequest, rs.ApprovalResponse, rs.ToolResult, rs.StepStart
    )
    assert items == [
        (0, rs.StepStart(1, "d", "m")),
        (0, rs.ApprovalRequest("c1", "slow", {})),
        (10, decision),
        (13, rs.ToolResult("c1", "slow", "R")),
        (13, rs.StepStart(2, "d", "m")),
        (13, "|"),
    ]
    assert approvals.subscriptions == [m.subscription("^---------!")]


def test_approvals_that_end_undecided_leave_the_run_waiting() -> None:
    m = StreamMarbles()
    slow = m.tool("slow", "--r|", V, needs_approval=True)
    answers = m.answers("(c,d,t,D)", values=V)
    slower = m.tool("slower", "r|", V, needs_approval=True)
    approvals = m.cold("---y|", {"y": rs.ApprovalResponse("c1", approved=False)})
    run = rs.run(
        answers,
        "d",
        model="m",
        messages=ASK,
        tools=[slow, slower],
        approvals=approvals,
        scheduler=m.scheduler,
    )
    end = values(m.start(run))[-2][1]
    both = (rs.ApprovalRequest("c1", "slow", {}), rs.ApprovalRequest("c2", "slower", {}))
    assert end.pending == both  # the decision so far is given again on resume
    assert fn(slow).calls == fn(slower).calls == []


def test_an_approval_for_no_waiting_call_is_an_error() -> None:
    m = StreamMarbles()
    slow = m.tool("slow", "--r|", V, needs_approval=True)
    approvals = m.cold("---y|", {"y": rs.ApprovalResponse("c9", approved=True)})
    run = rs.run(
        m.answers("(c,t,D)", values=V),
        "d",
        model="m",
        messages=ASK,
        tools=[slow],
        approvals=approvals,
        scheduler=m.scheduler,
    )
    tick, error = values(m.start(run))[-1]
    assert tick == 3
    assert isinstance(error, ValueError)
    assert "decides no waiting call (waiting: ['c1'])" in str(error)


def test_disposing_the_run_unsubscribes_its_running_tools() -> None:
    m = StreamMarbles()
    slow = m.tool("slow", "---------r|", V)
    answers = m.answers("(c,t,D)", values=V)
    m.start(
        rs.run(answers, "d", model="m", messages=ASK, tools=[slow], scheduler=m.scheduler),
        disposed=204,
    )
    assert fn(slow).source.subscriptions == [m.subscription("^---!")]


@pytest.mark.parametrize(
    "stop_when",
    [1, rs.tool_called("slow"), [5, lambda step: step.results[0].output == "R"]],
    ids=["count", "tool_called", "any-of-a-list"],
)
def test_stop_when_ends_after_the_step_with_its_results(stop_when: Any) -> None:
    m = StreamMarbles()
    answers = m.answers("(c,t,D)", "(a,f,D)", values=V)
    run = rs.run(
        answers,
        "d",
        model="m",
        messages=ASK,
        tools=[m.tool("slow", "r|", V)],
        stop_when=stop_when,
        scheduler=m.scheduler,
    )
    end = values(m.start(run))[-2][1]
    assert end.steps == 1
    assert end.messages[-1] == {
        "role": "tool",
        "tool_call_id": "c1",
        "name": "slow",
        "content": "R",
    }
    assert len(answers.requests) == 1


def test_the_default_step_limit_stops_a_model_that_keeps_calling() -> None:
    m = StreamMarbles()
    answers = m.answers(*["(c,t,D)"] * 25, values=V)
    run = rs.run(
        answers,
        "d",
        model="m",
        messages=ASK,
        tools=[m.tool("slow", "r|", V)],
        scheduler=m.scheduler,
    )
    assert values(m.start(run))[-2][1].steps == rs.runs.run.DEFAULT_MAX_STEPS


def test_prepare_step_changes_the_model_tools_and_options_of_a_step() -> None:
    m = StreamMarbles()
    answers = m.answers("(c,t,D)", "(a,f,D)", values=V)
    slow, other = m.tool("slow", "r|", V), m.tool("other", "r|", V)
    seen: list[tuple[int, int]] = []

    def prepare(step: int, messages: tuple[Any, ...]) -> dict[str, Any] | None:
        seen.append((step, len(messages)))
        return None if step == 1 else {"model": "big", "tools": [other], "temperature": 0}

    run = rs.run(
        answers,
        "d",
        model="m",
        messages=ASK,
        tools=[slow],
        prepare_step=prepare,
        scheduler=m.scheduler,
    )
    starts = [v for _, v in values(m.start(run)) if isinstance(v, rs.StepStart)]
    assert starts == [rs.StepStart(1, "d", "m"), rs.StepStart(2, "d", "big")]
    assert seen == [(1, 1), (2, 3)]
    assert answers.requests[1].tools == (other.spec,)
    assert answers.requests[1].options["temperature"] == 0


def test_prepare_step_must_return_a_dict_or_none() -> None:
    m = StreamMarbles()
    run = rs.run(
        m.answers("(a,f,D)", values=V),
        "d",
        model="m",
        messages=ASK,
        prepare_step=lambda *_: "big",  # type: ignore[arg-type]
        scheduler=m.scheduler,
    )
    error = values(m.start(run))[-1][1]
    assert isinstance(error, TypeError)
    assert "prepare_step returns a dict of changes or None, got 'big'" in str(error)


def tools_of(m: StreamMarbles) -> list[rs.FunctionTool]:
    """`slow` (waits for approval) and `slower` (does not), on `m`'s clock."""
    return [m.tool("slow", "r|", V, needs_approval=True), m.tool("slower", "s|", V)]


def waiting(m: StreamMarbles) -> tuple[rs.RunEnd, list[rs.FunctionTool]]:
    """A run whose step called `slow` and `slower`, waiting for the approval of `slow`."""
    tools = tools_of(m)
    answers = m.answers("(c,d,t,u,D)", values=V)
    out = values(
        m.start(rs.run(answers, "d", model="m", messages=ASK, tools=tools, scheduler=m.scheduler))
    )
    end = out[-2][1]
    assert isinstance(end, rs.RunEnd)
    assert fn(tools[1]).calls == []  # the step's other calls wait with the waiting one
    return end, tools


@pytest.mark.parametrize("approved", [True, False])
def test_a_resumed_run_emits_the_decisions_and_answers_every_call_in_order(approved: bool) -> None:
    end, _ = waiting(StreamMarbles())
    assert end.pending == (rs.ApprovalRequest("c1", "slow", {}),)
    state = rs.RunState.from_json(rs.RunState.of(end).to_json())
    m = StreamMarbles()
    tools = tools_of(m)
    decision = rs.ApprovalResponse("c1", approved=approved, reason=None if approved else "not now")
    answers = m.answers("(a,f,u,D)", values=V)
    run = rs.run(
        answers,
        "d",
        model="m",
        tools=tools,
        resume=state,
        decisions=[decision],
        scheduler=m.scheduler,
    )
    out = values(m.start(run))
    assert out[0] == (0, decision)
    final = out[-2][1]
    assert final.steps == 2
    assert final.usage == rs.Usage(6, 4, 10)
    contents = [x["content"] for x in final.messages if isinstance(x, dict) and x["role"] == "tool"]
    assert contents == (["R", "S"] if approved else ["Denied: not now", "S"])
    assert answers.requests[0].step == 2


def test_a_resume_without_a_decision_keeps_waiting() -> None:
    end, _ = waiting(StreamMarbles())
    m = StreamMarbles()
    tools = tools_of(m)
    out = values(
        m.start(
            rs.run(
                m.answers(values=V), "d", model="m", tools=tools, resume=end, scheduler=m.scheduler
            )
        )
    )
    assert out == [(0, rs.ApprovalRequest("c1", "slow", {})), (0, end), (0, "|")]


def test_the_run_s_approve_predicate_decides_per_call() -> None:
    m = StreamMarbles()
    tools = [m.tool("slow", "r|", V), m.tool("slower", "s|", V)]
    answers = m.answers("(c,d,t,D)", values=V)
    run = rs.run(
        answers,
        "d",
        model="m",
        messages=ASK,
        tools=tools,
        approve=lambda call: call.name == "slower",
        scheduler=m.scheduler,
    )
    assert values(m.start(run))[-2][1].pending == (rs.ApprovalRequest("c2", "slower", {}),)


def test_bad_resume_arguments_are_refused() -> None:
    end, tools = waiting(StreamMarbles())
    with pytest.raises(
        ValueError, match=r"a decision for call 'c9', which does not wait \(waiting: \['c1'\]\)"
    ):
        rs.run(
            lambda _: reactivex.empty(),
            "d",
            model="m",
            tools=tools,
            resume=end,
            decisions=[rs.ApprovalResponse("c9", True)],
        )
    with pytest.raises(TypeError, match="messages= or resume=, not both"):
        rs.run(lambda _: reactivex.empty(), "d", model="m", messages=ASK, resume=end)
    with pytest.raises(TypeError, match="decisions= goes with resume="):
        rs.run(
            lambda _: reactivex.empty(),
            "d",
            model="m",
            messages=ASK,
            decisions=[rs.ApprovalResponse("c1", True)],
        )
    with pytest.raises(TypeError, match="needs messages="):
        rs.run(lambda _: reactivex.empty(), "d", model="m")
    with pytest.raises(TypeError, match=r"takes an rs\.RunState or rs\.RunEnd"):
        rs.run(lambda _: reactivex.empty(), "d", model="m", resume="state")  # type: ignore[arg-type]
    finished = rs.RunState((*ASK, rs.Message(content="hi")))
    m = StreamMarbles()
    error = values(
        m.start(rs.run(m.answers(values=V), "d", model="m", resume=finished, scheduler=m.scheduler))
    )[-1][1]
    assert isinstance(error, ValueError)
    assert "does not end with a turn whose tool calls wait" in str(error)


@pytest.mark.parametrize(
    ("given", "error", "words"),
    [
        ({"max_parallel": 0}, ValueError, "max_parallel must be a positive int"),
        ({"tool_errors": "log"}, ValueError, "tool_errors must be 'return' or 'raise'"),
        ({"stop_when": "never"}, TypeError, "stop_when takes a positive step count"),
        ({"stop_when": [0]}, TypeError, "stop_when takes a positive step count"),
        ({"tools": [rs.Tool("t")]}, TypeError, "'t' is a description without a function"),
        ({"tools": ["t"]}, TypeError, "a tool is a function or rs.tool"),
        (
            {"tools": [rs.tool(len, rs.Tool("t")), rs.tool(len, rs.Tool("t"))]},
            ValueError,
            "two tools have the same name",
        ),
    ],
)
def test_bad_arguments_are_refused_at_once(given: dict[str, Any], error: type, words: str) -> None:
    with pytest.raises(error, match=words):
        rs.run(lambda _: reactivex.empty(), "d", model="m", messages=ASK, **given)


def test_a_step_without_an_answer_is_an_error() -> None:
    m = StreamMarbles()
    out = values(
        m.start(
            rs.run(m.answers("--D", values=V), "d", model="m", messages=ASK, scheduler=m.scheduler)
        )
    )
    assert isinstance(out[-1][1], rs.EmptyStreamError)
    assert "step 1 of the run completed without an answer" in str(out[-1][1])


def test_a_step_past_the_scripted_ones_is_an_assertion() -> None:
    m = StreamMarbles()
    answers = m.answers("(c,t,D)", values=V)
    out = values(
        m.start(
            rs.run(
                answers,
                "d",
                model="m",
                messages=ASK,
                tools=[m.tool("slow", "r|", V)],
                scheduler=m.scheduler,
            )
        )
    )
    assert isinstance(out[-1][1], AssertionError)
    assert "the run asked for step 2, its request number 2; the test scripted 1" in str(out[-1][1])


def test_usage_sums_the_optional_counts_where_a_step_has_them() -> None:
    m = StreamMarbles()
    steps = {"x": rs.Usage(1, 2, 3, reasoning_tokens=1), "y": rs.Usage(1, 1, 2, cached_tokens=4)}
    answers = m.answers("(c,t,x,D)", "(a,f,y,D)", values={**V, **steps})
    run = rs.run(
        answers,
        "d",
        model="m",
        messages=ASK,
        tools=[m.tool("slow", "r|", V)],
        scheduler=m.scheduler,
    )
    assert values(m.start(run))[-2][1].usage == rs.Usage(
        2, 3, 5, reasoning_tokens=1, cached_tokens=4
    )


@pytest.mark.parametrize(
    "text",
    [
        "",
        "[]",
        '{"version": 2}',
        '{"version": 1, "steps": 0, "usage": null, "pending": [], "messages": [{"neither": 1}]}',
    ],
)
def test_a_broken_run_state_says_so(text: str) -> None:
    with pytest.raises(ValueError, match=r"not a run state written by RunState\.to_json"):
        rs.RunState.from_json(text)


JSON_TEXT = st.text(max_size=20)
JSON_VALUE = (
    st.none() | st.integers() | JSON_TEXT | st.dictionaries(JSON_TEXT, JSON_TEXT, max_size=2)
)
CALL = st.builds(
    rs.ToolCall,
    index=st.integers(0, 5),
    id=JSON_TEXT,
    name=JSON_TEXT,
    arguments=JSON_TEXT,
)
TURN = st.builds(
    rs.Message,
    content=JSON_TEXT,
    reasoning=JSON_TEXT,
    tool_calls=st.lists(CALL, max_size=3).map(tuple),
    finish_reason=st.sampled_from([None, "stop", "tool_calls"]),
)
ENTRY = TURN | st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "tool"]), "content": JSON_TEXT}
)
USAGE = st.none() | st.builds(rs.Usage, st.integers(0, 99), st.integers(0, 99), st.integers(0, 99))


@given(
    messages=st.lists(ENTRY, max_size=5).map(tuple),
    pending=st.lists(st.builds(rs.ApprovalRequest, JSON_TEXT, JSON_TEXT, JSON_VALUE), max_size=3),
    steps=st.integers(0, 50),
    usage=USAGE,
)
def test_a_run_state_reads_back_as_it_was_written(
    messages: tuple[Any, ...], pending: list[rs.ApprovalRequest], steps: int, usage: rs.Usage | None
) -> None:
    state = rs.RunState(messages, tuple(pending), steps, usage)
    assert rs.RunState.from_json(state.to_json()) == state


def test_plain_functions_on_the_run_s_thread() -> None:
    def slow(**_: Any) -> str:
        return "R"

    def slower(**_: Any) -> str:
        raise KeyError("gone")

    m = StreamMarbles()
    tools = [
        rs.tool(slow, rs.Tool("slow"), blocking=False),
        rs.tool(slower, rs.Tool("slower"), blocking=False),
    ]
    answers = m.answers("(c,d,t,D)", "(a,f,D)", values=V)
    out = values(
        m.start(rs.run(answers, "d", model="m", messages=ASK, tools=tools, scheduler=m.scheduler))
    )
    results = [v for _, v in out if isinstance(v, rs.ToolResult)]
    assert results == [
        rs.ToolResult("c1", "slow", "R"),
        rs.ToolResult("c2", "slower", error="KeyError: 'gone'"),
    ]


@pytest.mark.parametrize(
    ("call", "words"),
    [
        (lambda: rs.tool_called(), "tool_called takes one or more tool names"),
        (lambda: rs.tool_called(3), "tool_called takes one or more tool names"),  # type: ignore[arg-type]
    ],
)
def test_tool_called_needs_names(call: Any, words: str) -> None:
    with pytest.raises(TypeError, match=words):
        call()


def test_decisions_must_be_approval_responses() -> None:
    end, _ = waiting(StreamMarbles())
    with pytest.raises(TypeError, match=r"decisions= takes rs\.ApprovalResponse items"):
        rs.run(lambda _: reactivex.empty(), "d", model="m", resume=end, decisions=[("c1", True)])  # type: ignore[list-item]


def test_a_state_that_ends_with_a_user_turn_does_not_wait() -> None:
    turn = rs.Message(tool_calls=(rs.ToolCall(0, "c1", "slow", "{}"),), finish_reason="tool_calls")
    state = rs.RunState((*ASK, turn, {"role": "user", "content": "and?"}))
    m = StreamMarbles()
    error = values(
        m.start(rs.run(m.answers(values=V), "d", model="m", resume=state, scheduler=m.scheduler))
    )[-1][1]
    assert isinstance(error, ValueError)
    assert "does not end with a turn whose tool calls wait" in str(error)


def test_a_parameter_pydantic_cannot_describe_is_a_type_error() -> None:
    def f(lock: reactivex.Observable[int]) -> None:
        """F."""

    with pytest.raises(TypeError, match="its parameters have no JSON schema"):
        rs.tool(f)


def test_a_step_that_dies_after_output_ends_with_its_estimated_usage() -> None:
    """Its StepEnd says "error" and carries an estimate of what was billed; the error follows."""
    m = StreamMarbles()
    answers = m.answers("(c,d,t,u,D)", "-a-a-#", values=V)
    quick = m.tool("slow", "(r,|)", V)
    quicker = m.tool("slower", "(s,|)", V)
    out = m.start(
        rs.run(answers, "d", model="m", messages=ASK, tools=[quick, quicker], scheduler=m.scheduler)
    )
    ends = [v for _, v in values(out) if isinstance(v, rs.StepEnd)]
    assert ends[0] == rs.StepEnd(1, "tool_calls", rs.Usage(3, 2, 5))
    died = ends[1]
    assert (died.step, died.finish_reason) == (2, "error")
    assert died.usage is not None
    assert died.usage.estimated
    assert died.usage.completion_tokens
    assert died.usage.completion_tokens > 0
    assert isinstance(values(out)[-1][1], Exception)
    # Before any output, nothing was billed: no estimate.
    m = StreamMarbles()
    out = m.start(rs.run(m.answers("--#"), "d", model="m", messages=ASK, scheduler=m.scheduler))
    assert [v for _, v in values(out) if isinstance(v, rs.StepEnd)] == [rs.StepEnd(1, "error")]

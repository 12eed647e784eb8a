"""What `rs.run` costs over the hand-written tool loop making the same requests.

    python benchmarks/bench_run.py            # 20 steps, 21 rounds; exits 1 on a miss
    python benchmarks/bench_run.py --quick    # 20 steps, 3 rounds, for CI: never fails

A 20-step run against a `FakeLLMServer` (OpenAI chat; 19 steps that each call one
instant tool, then the answer), in a process of its own so that the CPU time measured
is the client's alone. Two loops make the very same 20 requests (the same messages:
each step's `Message` and an OpenAI chat-style tool result), taking turns round
after round:

- hand: `rs.chat(...).pipe(rs.accumulate_message())` per step, the tool called inline,
  the loop written out (the recipe's loop);
- run: `rs.run(client, "openai-chat", ..., tools=[tool])` to a list (every delta
  and run item), its tool on the run's worker thread (`rs.tool`'s default);
- run inline: the same with `rs.tool(fn, blocking=False)` (called on the run's thread).

Times are the process's CPU time (`time.process_time`: the run's steps after the
first go on in its worker thread), per step. Each result is checked (the answer, the
request count). The ratio is the median over the rounds of a contender's time
against hand's in the same round.

Target (issue 31): run <= 1.1x hand per step.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

# The rxstream of this checkout, whatever else is installed.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import rxstream as rs

TARGET = 1.1
STEPS = 20
ASK = [{"role": "user", "content": "Count to twenty with the tool."}]
TOOL = rs.Tool(
    "count", "Count one more.", {"type": "object", "properties": {"n": {"type": "integer"}}}
)


def count(n: int) -> dict[str, int]:
    """Count one more."""
    return {"next": n + 1}


def serve() -> None:
    """The server process: answers with a call of `count` until 19 results came, then text."""
    from rxstream.testing import FakeLLMServer, Scenario

    def answer(request: Any) -> Scenario:
        results = [m for m in request.json["messages"] if m.get("role") == "tool"]
        if len(results) < STEPS - 1:
            arguments = json.dumps({"n": len(results)})
            call = rs.ToolCallDelta(0, arguments, id=f"call_{len(results)}", name="count")
            return Scenario.answer(call, rs.Finish("tool_calls"), rs.Usage(10, 1, 11))
        return Scenario.answer(rs.TextDelta("twenty"), rs.Finish("stop"), rs.Usage(10, 1, 11))

    with FakeLLMServer(answer) as server:
        print(server.port, flush=True)
        sys.stdin.read()  # until the benchmark closes it


def hand(client: httpx.Client, options: dict[str, Any]) -> str:
    messages: list[Any] = list(ASK)
    for _ in range(STEPS):
        chat = rs.chat(client, "openai-chat", messages=messages, tools=[TOOL], **options)
        message: rs.Message = chat.pipe(rs.accumulate_message()).run()
        messages.append(message)
        if message.finish_reason != "tool_calls":
            break
        for call in message.tool_calls:
            output = json.dumps(count(**call.parse_arguments()), ensure_ascii=False)
            messages.append(
                {"role": "tool", "tool_call_id": call.id, "name": call.name, "content": output}
            )
    return message.content


def with_run(tool: rs.FunctionTool) -> Callable[[httpx.Client, dict[str, Any]], str]:
    def run(client: httpx.Client, options: dict[str, Any]) -> str:
        items = list(
            rs.to_iterator(
                rs.run(
                    client, "openai-chat", messages=ASK, tools=[tool], stop_when=STEPS, **options
                )
            )
        )
        end = items[-1]
        assert isinstance(end, rs.RunEnd), end
        assert end.steps == STEPS, end.steps
        last = end.messages[-1]
        assert isinstance(last, rs.Message)
        return last.content

    return run


def measure(port: int, rounds: int) -> dict[str, list[float]]:
    options = {"model": "m", "api_key": "k", "base_url": f"http://127.0.0.1:{port}/v1"}
    contenders = {
        "hand": hand,
        "run": with_run(rs.tool(count, TOOL)),
        "run inline": with_run(rs.tool(count, TOOL, blocking=False)),
    }
    times: dict[str, list[float]] = {}
    with httpx.Client() as client:
        for name, loop in contenders.items():  # warm up, and check each once
            assert loop(client, options) == "twenty", name
        for _ in range(rounds):
            for name, loop in contenders.items():
                gc.collect()
                start = time.process_time()
                loop(client, options)
                times.setdefault(name, []).append(time.process_time() - start)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="3 rounds; never fails")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve()
        return 0
    rounds = 3 if args.quick else 21
    server = subprocess.Popen(
        [sys.executable, __file__, "--serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        times = measure(int(server.stdout.readline()), rounds)
    finally:
        assert server.stdin is not None
        server.stdin.close()
        server.wait(10)
    print(f"{STEPS} steps, {rounds} rounds, CPU time of the client process")
    worst = 0.0
    for name, values in times.items():
        ratio = statistics.median(v / h for v, h in zip(values, times["hand"], strict=True))
        per_step = statistics.median(values) / STEPS * 1e3
        print(f"  {name:12} {per_step:6.3f} ms/step   {ratio:5.3f}x hand")
        if name != "hand":
            worst = max(worst, ratio)
    verdict = "ok" if worst <= TARGET else "MISS"
    print(f"target: run <= {TARGET}x hand: {verdict} ({worst:.3f}x)")
    return 0 if args.quick or worst <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())

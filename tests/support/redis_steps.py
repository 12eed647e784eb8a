"""The Redis jobs' step machines played by hand: each step spelled short, each outcome scripted.

A script is a list of moves `(step, outcome)`: the step the machine must yield
next, as `said` spells it, and what comes of it: a reply (sent in), an
exception (thrown in), or a function of no arguments (called then, as a shell
would act meanwhile; what it returns is sent in). `play` runs a script and
returns the batches the machine emitted and what it raised at its end; the
machine must end right after the last move.

Also the stream entries and replies the Redis tests write by hand (`entry`,
`xread`) and the commands a writer sends, in short (`kinds`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import rxstream as rs
from rxstream.core import wire
from rxstream.io.redis.entries import Entry
from rxstream.io.redis.steps import (
    Command,
    Diagnose,
    Emit,
    Fail,
    Idle,
    Join,
    Next,
    Open,
    Settle,
    Step,
    Steps,
    Turn,
    Wait,
    Write,
)

__all__ = ["Clock", "Move", "entry", "kinds", "later", "play", "said", "texts", "xread"]

#: A step as `said` spells it, and what comes of it.
Move = tuple[str, Any]


class Clock:
    """A monotonic clock the test sets by hand."""

    def __init__(self, now: float = 0.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def kinds(commands: list[tuple[Any, ...]]) -> list[str]:
    """Each command as `kind#number` (for an XADD) or its name."""
    out = []
    for command in commands:
        if command[0] == "XADD":
            kind, number = command[command.index(b"kind") + 1], command[command.index(b"n") + 1]
            out.append(f"{kind.decode()}#{number}")
        else:
            out.append(str(command[0]))
    return out


def said(step: Step) -> str:
    """A step in a few words: `XREAD COUNT 512 BLOCK 250 STREAMS k 0-0`, `write item#1 end#2
    PEXPIRE`, `idle 2`, `fail TransportError ended`, `emit a b`, ..."""
    match step:
        case Command(command=command, failover=failover):
            words = f"EVAL {command[3]}" if command[0] == "EVAL" else " ".join(map(str, command))
            return words if failover else f"{words} (once)"
        case Write(commands=commands):
            return " ".join(["write", *kinds(commands)])
        case Idle(seconds=seconds):
            return f"idle {seconds:g}"
        case Fail(error=error, ended=ended):
            return f"fail {type(error).__name__}" + (" ended" if ended else "")
        case Emit(batch=batch):
            return "emit " + " ".join(texts(batch))
        case Diagnose(commands=commands):
            return "diagnose " + ", ".join(" ".join(map(str, c)) for c in commands)
        case Turn():
            return "turn"
        case Wait():
            return "wait"
        case Open():
            return "open"
        case Join():
            return "join"
        case Settle():
            return "settle"
        case Next():
            return "next"
    raise AssertionError(f"not a step: {step!r}")


def texts(items: list[Any]) -> list[str]:
    """The text of each `TextDelta` (or `StreamEntry` of one)."""
    return [getattr(item, "item", item).text for item in items]


def play(steps: Steps, moves: list[Move]) -> tuple[list[str], Exception | None]:
    """Run `steps` through `moves`: the batches it emitted (as `said` spells them), and
    what it raised at its end (None: it returned). It must end right after the last move."""
    emitted: list[str] = []
    reply: Any = None
    error: BaseException | None = None
    for number, (expected, outcome) in enumerate(moves):
        step = steps.send(reply) if error is None else steps.throw(error)
        assert said(step) == expected, f"move {number}"
        if isinstance(step, Emit):
            emitted.append(said(step))
        reply, error = None, None
        if isinstance(outcome, BaseException):
            error = outcome
        elif callable(outcome):
            reply = outcome()
        else:
            reply = outcome
    try:
        step = steps.send(reply) if error is None else steps.throw(error)
    except StopIteration:
        return emitted, None
    except Exception as exc:
        return emitted, exc
    raise AssertionError(f"the machine went on after the script: {said(step)}")


def entry(n: int, kind: str = "item", data: Any = None, *, ms: int = 1000) -> Entry:
    """Entry number `n` of a stream (an item's text is its number), id `<ms + n>-0`."""
    fields: dict[str, bytes | str] = {"v": "1", "n": str(n), "kind": kind}
    if kind == "item":
        fields["data"] = json.dumps(wire.encode(rs.TextDelta(str(n) if data is None else data)))
    elif data is not None:
        fields["data"] = data if isinstance(data, str) else json.dumps(data)
    return Entry(f"{ms + n}-0", fields)


def xread(key: str, *entries: Entry) -> Any:
    """An `XREAD` reply (RESP2, as redis-py gives it) holding `entries` of `key`."""
    return [[key.encode(), [(e.id.encode(), dict(e.fields)) for e in entries]]]


def later(*actions: Callable[[], Any]) -> Callable[[], Any]:
    """One outcome that runs `actions` in turn (what the shell's world did meanwhile); the
    last one's result is the reply."""

    def run() -> Any:
        result = None
        for action in actions:
            result = action()
        return result

    return run

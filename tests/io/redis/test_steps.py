"""The two drivers of the Redis jobs (`drive`, `adrive`): the same job, the same outcome.

Each case is a small job and a `perform` written here; both drivers run it and
must give the same batches, and the same error at the end.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

import pytest

from rxstream.io.redis.steps import (
    Command,
    Emit,
    Step,
    Steps,
    Wait,
    adrive,
    arun,
    drive,
    run,
)


def replies(step: Step) -> Any:
    """A perform: a command's reply is its name lower-cased; `FAIL` raises."""
    match step:
        case Command(command=("FAIL", *_)):
            raise ConnectionError("the socket broke")
        case Command(command=command):
            return str(command[0]).lower()
    return None


def echoes() -> Steps:
    first = yield Command(("GET", "a"))
    second = yield Command(("SET", "a"))
    yield Emit([first, second])
    yield Wait()
    yield Emit(["last"])


def catches() -> Steps:
    try:
        yield Command(("FAIL",))
    except ConnectionError as exc:
        yield Emit([f"caught {exc}"])
    yield Emit([(yield Command(("PING",)))])


def raises() -> Steps:
    yield Emit(["before"])
    yield Command(("FAIL",))


def gives_up() -> Steps:
    yield Emit(["before"])
    raise ValueError("the reply made no sense")


#: (the job, the batches it emits, the error it ends with)
CASES: dict[str, tuple[Callable[[], Steps], list[list[Any]], type[Exception] | None]] = {
    "replies-are-sent-in": (echoes, [["get", "set"], ["last"]], None),
    "a-steps-error-is-thrown-in": (catches, [["caught the socket broke"], ["ping"]], None),
    "an-error-not-caught-leaves": (raises, [["before"]], ConnectionError),
    "the-jobs-own-error-leaves": (gives_up, [["before"]], ValueError),
}


def collect(world: str, steps: Steps) -> tuple[list[list[Any]], Exception | None]:
    got: list[list[Any]] = []
    if world == "sync":
        try:
            got.extend(drive(steps, replies))
        except Exception as exc:
            return got, exc
        return got, None

    async def perform(step: Step) -> Any:
        await asyncio.sleep(0)
        return replies(step)

    async def main() -> Exception | None:
        try:
            async for batch in adrive(steps, perform):
                got.append(batch)
        except Exception as exc:
            return exc
        return None

    return got, asyncio.run(main())


@pytest.mark.parametrize("world", ["sync", "async"])
@pytest.mark.parametrize("case", CASES)
def test_both_drivers_run_a_job_alike(case: str, world: str) -> None:
    job, batches, error = CASES[case]
    got, raised = collect(world, job())
    assert got == batches
    if error is None:
        assert raised is None
    else:
        assert isinstance(raised, error), raised


def test_the_lock_is_held_while_the_job_decides_never_while_a_step_is_performed() -> None:
    lock = threading.Lock()
    seen: list[str] = []

    def job() -> Steps:
        seen.append(f"job {lock.locked()}")
        yield Command(("GET",))
        seen.append(f"job {lock.locked()}")

    def perform(step: Step) -> None:
        seen.append(f"perform {lock.locked()}")

    run(job(), perform, lock)
    assert seen == ["job True", "perform False", "job True"]


@pytest.mark.parametrize("world", ["sync", "async"])
def test_a_consumer_that_stops_closes_the_job(world: str) -> None:
    closed: list[bool] = []

    def job() -> Steps:
        try:
            while True:
                yield Emit(["x"])
        finally:
            closed.append(True)

    if world == "sync":
        batches = drive(job(), replies)
        assert next(batches) == ["x"]
        batches.close()  # type: ignore[attr-defined]
    else:

        async def main() -> None:
            batches = adrive(job(), _nothing)
            assert await anext(batches) == ["x"]
            await batches.aclose()  # type: ignore[attr-defined]

        asyncio.run(main())
    assert closed == [True]


async def _nothing(step: Step) -> None:
    return None


@pytest.mark.parametrize("world", ["sync", "async"])
def test_run_refuses_a_job_that_emits(world: str) -> None:
    def job() -> Steps:
        yield Emit(["x", "y"])

    def sync() -> None:
        run(job(), replies)

    def in_loop() -> None:
        asyncio.run(arun(job(), _nothing))

    with pytest.raises(RuntimeError, match=r"a job that emits nothing emitted 2 item\(s\)"):
        (sync if world == "sync" else in_loop)()

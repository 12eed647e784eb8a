"""Thread pools for tests: one single-thread pool per observer, shut down after the test.

`single_thread_pools()` yields a maker: each call gives a new `ThreadPoolScheduler(1)`
(one per observer, since a thread shared by two observers could wait on itself); every
pool made is shut down, waiting for its thread, when the block ends. The `pool`
fixture (registered by `tests/io/conftest.py`) is that maker for one test.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest
from reactivex.scheduler import ThreadPoolScheduler

__all__ = ["pool", "single_thread_pools"]


@contextmanager
def single_thread_pools() -> Iterator[Callable[[], ThreadPoolScheduler]]:
    """A maker of single-thread pools; each one made is shut down at the end."""
    made: list[ThreadPoolScheduler] = []

    def make() -> ThreadPoolScheduler:
        made.append(ThreadPoolScheduler(1))
        return made[-1]

    try:
        yield make
    finally:
        for scheduler in made:
            scheduler.executor.shutdown(wait=True)


@pytest.fixture
def pool() -> Iterator[Callable[[], ThreadPoolScheduler]]:
    """One single-thread pool per call, for one test (see `single_thread_pools`)."""
    with single_thread_pools() as make:
        yield make

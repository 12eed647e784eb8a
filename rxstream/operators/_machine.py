"""The one piece of plumbing every operator shares: a core machine under Rx.

An operator is a core machine plus subscription, disposal and error plumbing:

- the machine is built inside `subscribe`, so two subscribers never share state;
- `on_next` feeds it and emits what comes out; anything it raises goes to
  `observer.on_error` (and the upstream is disposed), never up the stack;
- `on_completed` calls `close()` first, emitting what it flushes (or its error);
- a machine that reports `done` (as the chunk decoder does at `[DONE]`) ends
  the stream at once and disposes the upstream, releasing the connection.

Machine operators applied one after another (`lines()`, `sse_frames()`,
`decode_chunks()`, ...) fuse: the result subscribes once to the first
operator's source and hands each item from machine to machine with a plain
call, instead of one Rx subscription (and observer wrapper) per stage. What an
observer sees is exactly what the unfused chain gives, errors, `done` and
disposal included; each operator still works alone, and any non-machine
operator in between simply ends a fused run. Where a machine knows a shortcut
through the one below it (`fuse`: the chunk decoder and the delta decoder or
message accumulator it feeds read each chunk once between them), the chain
takes it, with the same items out.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from reactivex import Observable, abc
from reactivex.disposable import Disposable, SingleAssignmentDisposable

from ..core._machine import Feeder, Machine

__all__ = ["Feeder", "Machine", "machine_operator"]

A = TypeVar("A")
B = TypeVar("B")

# Every machine is asked for `done`, `feed_all` and `fuse` once, when the
# chain is subscribed, and used through them when it has them (a `Feeder`
# that is not a whole `Machine` is run through `feed` alone).
Factory = Callable[[], Feeder[Any, Any]]


def _fuse(machines: list[Feeder[Any, Any]]) -> list[Feeder[Any, Any]]:
    """Let each machine merge with the one below it where it knows a shortcut (`fuse`)."""
    k = 0
    while k < len(machines) - 1:
        fuse = getattr(machines[k], "fuse", None)
        merged = fuse(machines[k + 1]) if fuse is not None else None
        if merged is None:
            k += 1
        else:
            machines[k : k + 2] = [merged]
    return machines


class _MachineChain(Observable[B]):
    """A run of machines stacked over one source, subscribed as one stage."""

    def __init__(self, source: Observable[Any], factories: tuple[Factory, ...]) -> None:
        super().__init__()
        self._source = source
        self._factories = factories

    def _subscribe_core(
        self, observer: abc.ObserverBase[B], scheduler: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        machines = _fuse([factory() for factory in self._factories])
        n = len(machines)
        upstream = SingleAssignmentDisposable()
        # Stages below `cut` take no more input: the stopped ones always form a
        # prefix (a done machine stops itself and everything above it; an
        # error, a completion or a disposal stops them all), so one int is
        # the whole of the state. Stage n is the observer.
        cut = 0

        def fail(error: Exception) -> None:
            nonlocal cut
            cut = n + 1
            upstream.dispose()
            observer.on_error(error)

        def complete_from(i: int) -> None:
            # What `on_completed` does down an unfused chain: each machine is
            # closed and what it flushes runs through the machines below it.
            nonlocal cut
            while i < n:
                if cut > i:
                    return
                out: list[Any] = []
                error: Exception | None = None
                try:
                    close_into = getattr(machines[i], "close_into", None)
                    if close_into is not None:
                        close_into(out)  # a fused pair: what came before an error goes on
                    else:
                        out += machines[i].close()
                except Exception as exc:
                    error = exc
                if error is not None and not out:
                    fail(error)
                    return
                cut = i + 1
                if out:
                    stages[i + 1](out)
                if error is not None:
                    if cut <= i + 1:
                        fail(error)
                    return
                if cut > i + 1:
                    return  # a machine below finished the stream meanwhile
                i += 1
            if cut <= n:
                cut = n + 1
                upstream.dispose()
                observer.on_completed()

        def finish(k: int) -> None:
            nonlocal cut
            cut = k + 1
            upstream.dispose()
            complete_from(k + 1)

        def stage(k: int) -> Callable[[list[Any]], None]:
            # Items travel between machines in batches (what one feed gave),
            # which the observer cannot tell apart from one at a time: the
            # outputs arrive in the same order, a machine's error still comes
            # after the outputs of the items before it, and a batch is never
            # held past the source's item that produced it.
            machine = machines[k]
            feed = machine.feed
            below = stages[k + 1]
            # The machine again, typed loosely, when it reports `done` (the
            # chunk decoder at [DONE]); None when it never does.
            watch_done: Any = machine if hasattr(machine, "done") else None
            feed_all = getattr(machine, "feed_all", None)

            def on_batch(items: list[Any]) -> None:
                if cut > k:
                    return
                out: list[Any] = []
                error: Exception | None = None
                try:
                    if feed_all is not None:
                        feed_all(items, out)
                    elif watch_done is not None:
                        for item in items:
                            out += feed(item)
                            if watch_done.done:
                                break
                    else:
                        for item in items:
                            out += feed(item)
                except Exception as exc:
                    error = exc
                if out:
                    below(out)
                if cut > k:
                    return  # a machine below, or the observer, ended the stream
                if error is not None:
                    fail(error)
                elif watch_done is not None and watch_done.done:
                    finish(k)

            return on_batch

        on_next = observer.on_next

        def emit(items: list[Any]) -> None:
            for item in items:
                on_next(item)

        stages: list[Callable[[list[Any]], None]] = [emit] * (n + 1)
        for k in range(n - 1, -1, -1):
            stages[k] = stage(k)
        first = stages[0]

        def on_item(item: Any) -> None:
            first([item])

        def on_error(error: Exception) -> None:
            if cut == 0:
                fail(error)

        def on_completed() -> None:
            complete_from(0)

        upstream.disposable = self._source.subscribe(
            on_item, on_error, on_completed, scheduler=scheduler
        )

        def dispose() -> None:
            nonlocal cut
            cut = n + 1
            upstream.dispose()

        return Disposable(dispose)


def machine_operator(
    factory: Callable[[], Feeder[A, B]],
) -> Callable[[Observable[A]], Observable[B]]:
    """Turn a machine factory into an Rx operator (see the module docstring).

    Applied to the output of another machine operator, the two fuse into one
    subscription; the items observed are the same.
    """

    def operator(source: Observable[A]) -> Observable[B]:
        if isinstance(source, _MachineChain):
            return _MachineChain(source._source, (*source._factories, factory))
        return _MachineChain(source, (factory,))

    return operator

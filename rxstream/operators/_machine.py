"""The one piece of plumbing every operator shares: a core machine under Rx.

An operator is a core machine plus subscription, disposal and error plumbing:

- the machine is built inside `subscribe`, so two subscribers never share state;
- `on_next` feeds it and emits what comes out; anything it raises goes to
  `observer.on_error` (and the upstream is disposed), never up the stack;
- `on_completed` calls `close()` first, emitting what it flushes (or its error);
- a machine that reports `done` (as the chunk decoder does at `[DONE]`) ends
  the stream at once and disposes the upstream, releasing the connection.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, TypeVar

from reactivex import Observable, abc
from reactivex.disposable import SingleAssignmentDisposable

__all__ = ["Machine", "machine_operator"]

A = TypeVar("A")
B = TypeVar("B")
A_contra = TypeVar("A_contra", contravariant=True)
B_co = TypeVar("B_co", covariant=True)


class Machine(Protocol[A_contra, B_co]):
    """What `machine_operator` needs of a core machine."""

    def feed(self, item: A_contra, /) -> Sequence[B_co]: ...  # pragma: no cover

    def close(self) -> Sequence[B_co]: ...  # pragma: no cover


def machine_operator(
    factory: Callable[[], Machine[A, B]],
) -> Callable[[Observable[A]], Observable[B]]:
    """Turn a machine factory into an Rx operator (see the module docstring)."""

    def operator(source: Observable[A]) -> Observable[B]:
        def subscribe(
            observer: abc.ObserverBase[B], scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            machine = factory()
            upstream = SingleAssignmentDisposable()
            stopped = False

            def stop() -> None:
                nonlocal stopped
                stopped = True
                upstream.dispose()

            def on_next(item: A) -> None:
                if stopped:
                    return
                try:
                    out = machine.feed(item)
                except Exception as exc:
                    stop()
                    observer.on_error(exc)
                    return
                for value in out:
                    observer.on_next(value)
                if getattr(machine, "done", False) and not stopped:
                    stop()
                    observer.on_completed()

            def on_error(error: Exception) -> None:
                if not stopped:
                    stop()
                    observer.on_error(error)

            def on_completed() -> None:
                if stopped:
                    return
                try:
                    out = machine.close()
                except Exception as exc:
                    stop()
                    observer.on_error(exc)
                    return
                for value in out:
                    observer.on_next(value)
                stop()
                observer.on_completed()

            upstream.disposable = source.subscribe(
                on_next, on_error, on_completed, scheduler=scheduler
            )
            return upstream

        return Observable(subscribe)

    return operator

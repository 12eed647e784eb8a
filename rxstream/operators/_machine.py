"""The one piece of plumbing every operator shares: a core machine under Rx.

An operator is a core machine plus subscription, disposal and error plumbing:

- the machine is built inside `subscribe`, so two subscribers never share state;
- `on_next` feeds it and emits what comes out; anything it raises goes to
  `observer.on_error` (and the upstream is disposed), never up the stack;
- `on_completed` calls `close()` first, emitting what it flushes (or its error);
- a machine that reports `done` (as the chunk decoder does at `[DONE]`) ends
  the stream at once and disposes the upstream, releasing the connection.

Machine operators applied one after another (`lines()`, `sse_frames()`,
`decode_chunks()`, ...) form one run: the result subscribes once to the first
operator's source and hands each item from machine to machine with a plain
call (`Chained`), instead of one Rx subscription (and observer wrapper) per
stage. What an observer sees is exactly what separate operators give, errors,
`done` and disposal included; each operator still works alone, and any
non-machine operator in between simply ends a run. Which machines of a run
may merge further (the speed shortcuts) is `rxstream._fast`'s business alone.

A run that holds a machine giving deltas (`rs.decode`'s decoder, marked
`gives_deltas`) keeps what that machine gave, so that an error ending the
run, whether raised by a machine of the run or arriving from the source,
carries the partial answer (`StreamError.partial`, built only then). Where
the decoder stands in the fused run, `rxstream._fast.record` finds.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from reactivex import Observable, abc
from reactivex.disposable import Disposable, SingleAssignmentDisposable

from .. import _fast
from ..core import Feeder, Machine
from ..core.message import MessageAccumulator, keep_partial, keep_partial_of

__all__ = ["Feeder", "Machine", "machine_operator"]

A = TypeVar("A")
B = TypeVar("B")

Factory = Callable[[], Feeder[Any, Any]]


class _MachineChain(Observable[B]):
    """A run of machines stacked over one source, subscribed as one stage."""

    def __init__(
        self, source: Observable[Any], factories: tuple[Factory, ...], tap: int | None
    ) -> None:
        super().__init__()
        self._source = source
        self._factories = factories
        # The index of the (last) factory whose machine gives deltas, or None.
        self._tap = tap

    def _subscribe_core(
        self, observer: abc.ObserverBase[B], scheduler: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        machines = [factory() for factory in self._factories]
        whole = _fast.chain(machines)
        if self._tap is None:
            run = _Run(whole, observer)
        else:
            run = self._recorded(whole, machines, observer)
        run.upstream.disposable = self._source.subscribe(
            run.on_next, run.on_error, run.on_completed, scheduler=scheduler
        )
        return Disposable(run.stop)

    def _recorded(self, whole: Any, machines: list[Any], observer: abc.ObserverBase[B]) -> _Run:
        """A run that keeps what the machine at the tap gives (see `_fast.record`)."""
        assert self._tap is not None
        last = _fast.last_machine(whole)
        if type(last) is MessageAccumulator and self._tap == len(machines) - 2:
            # `accumulate_message()` right after the decoder holds what arrived
            # already: the partial is read from it, and nothing else is kept.
            return _Run(whole, observer, message=last)
        seen: list[Any] = []
        # The tapped machine, or, when a shortcut merged it into the one above
        # (`deltas()` after `decode_chunks()`), that one, which now gives the deltas.
        for machine in machines[self._tap :: -1][:2]:
            found = _fast.record(whole, machine, seen)
            if found is not None:
                whole, at_end = found
                return _Run(whole, observer, seen=seen, output=at_end)
        return _Run(whole, observer)


class _Run:
    """One subscription of a run: its machines (chained as one) between a source and an observer.

    Items go through in batches (what one source item gave), which the
    observer cannot tell apart from one at a time: the outputs arrive in the
    same order, a machine's error still comes after the outputs of the items
    before it, and nothing is held past the source item that produced it.
    """

    __slots__ = (
        "_closing",
        "_kept",
        "_machine",
        "_message",
        "_observer",
        "_seen",
        "_stopped",
        "upstream",
    )

    def __init__(
        self,
        machine: Any,
        observer: abc.ObserverBase[Any],
        *,
        seen: list[Any] | None = None,
        output: bool = False,
        message: MessageAccumulator | None = None,
    ) -> None:
        self._machine = machine
        self._observer = observer
        # The deltas the run gave so far (for an error's partial), or None; the
        # run keeps its own output there when the decoder is its last machine.
        self._seen = seen
        self._kept = seen if output else None
        # Or the accumulator that takes the decoder's deltas, which holds them.
        self._message = message
        # `close_into` for a `Chained`: what came before an error still goes on.
        close_into = machine.close_into if isinstance(machine, _fast.Chained) else None
        self._closing: Callable[[list[Any]], None] | None = close_into
        self._stopped = False  # no more input: ended, failed or disposed
        self.upstream = SingleAssignmentDisposable()

    def on_next(self, item: Any) -> None:
        if self._stopped:
            return
        out: list[Any] = []
        machine = self._machine
        try:
            machine.feed_all((item,), out)
        except Exception as exc:
            if self._kept is not None:
                self._kept += out
            self._emit(out)
            if not self._stopped:  # else the observer disposed meanwhile
                self._fail(exc)
            return
        kept = self._kept
        if kept is not None:
            kept += out
        # `_emit`, inline: this runs for every item of every operator.
        on_next = self._observer.on_next
        for value in out:
            if self._stopped:
                return  # the observer disposed meanwhile
            on_next(value)
        if not self._stopped and machine.done:
            # The input's end marker (the chunk decoder at [DONE]): the
            # machines below it were closed by the chain; release the source.
            self.stop()
            self._observer.on_completed()

    def on_error(self, error: Exception) -> None:
        if not self._stopped:
            self._fail(error)

    def on_completed(self) -> None:
        if self._stopped:
            return
        out: list[Any] = []
        error: Exception | None = None
        try:
            if self._closing is not None:
                self._closing(out)
            else:
                out += self._machine.close()
        except Exception as exc:
            error = exc
        if self._kept is not None:
            self._kept += out
        self._emit(out)
        if self._stopped:
            return
        if error is not None:
            self._fail(error)
        else:
            self.stop()
            self._observer.on_completed()

    def stop(self) -> None:
        """Take no more input and release the source (also the subscription's disposal)."""
        self._stopped = True
        self.upstream.dispose()
        if self._seen is not None:
            self._seen.clear()  # no error can come any more: what was kept is let go

    def _emit(self, items: list[Any]) -> None:
        on_next = self._observer.on_next
        for item in items:
            if self._stopped:
                return
            on_next(item)

    def _fail(self, error: Exception) -> None:
        if self._seen is not None:
            keep_partial(error, self._seen)
        elif self._message is not None:
            keep_partial_of(error, self._message)
        self.stop()
        self._observer.on_error(error)


def machine_operator(
    factory: Callable[[], Feeder[A, B]], *, gives_deltas: bool = False
) -> Callable[[Observable[A]], Observable[B]]:
    """Turn a machine factory into an Rx operator (see the module docstring).

    Applied to the output of another machine operator, the two fuse into one
    subscription; the items observed are the same.

    Args:
        factory: builds one machine per subscription.
        gives_deltas: the machine gives deltas (a decoder): the run keeps what
            it gave, and a `StreamError` that ends the run carries the
            partial `Message` of it.
    """

    def operator(source: Observable[A]) -> Observable[B]:
        if isinstance(source, _MachineChain):
            factories = (*source._factories, factory)
            tap = len(factories) - 1 if gives_deltas else source._tap
            return _MachineChain(source._source, factories, tap)
        return _MachineChain(source, (factory,), 0 if gives_deltas else None)

    return operator

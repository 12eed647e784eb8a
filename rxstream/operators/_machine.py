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
may merge further (the speed shortcuts) the machines themselves declare, and
`rxstream.core.pipeline` (`chain`) reads those declarations.

A run that holds a machine giving deltas (`rs.decode`'s decoder, marked
`gives_deltas`) remembers what arrived, so that an error ending the run,
whether raised by a machine of the run or arriving from the source, carries
the partial answer (`StreamError.partial`), built only then:

- the run keeps its source's items (one list append per item: lines or byte
  blocks, which the garbage collector never traverses), and when an error
  comes, fresh machines up to the decoder decode them again: the machines are
  pure, so they give the very deltas the run gave (`_Replay`);
- when `accumulate_message()` follows the decoder directly, its accumulator
  holds those deltas already, and the partial is read from it: nothing is
  kept at all.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar, cast

from reactivex import Observable, abc
from reactivex.disposable import Disposable, SingleAssignmentDisposable

from ..core import Feeder, Machine, pipeline
from ..core.message import MessageAccumulator, keep_partial, keep_partial_of
from ..errors import StreamError
from .delta_source import BatchSource, DeltaSource, Observing
from .wire import WireSource

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
        return self.subscribe_observer(observer, scheduler)

    def subscribe_observer(
        self,
        observer: Observing,
        scheduler: abc.SchedulerBase | None = None,
        *,
        partial: bool = True,
    ) -> abc.DisposableBase:
        """Subscribe `observer` as it is (the run sends nothing after its end); with
        `partial=False` the run keeps nothing for an error's partial (the observer gives
        errors theirs)."""
        machines = [factory() for factory in self._factories]
        source = self._source
        if isinstance(source, DeltaSource):  # deltas only, handed to the run directly
            machines = pipeline.behind_deltas(machines)
        whole = pipeline.chain(machines)
        arrival = self._arrival(whole, len(machines)) if partial else None
        run = _Run(whole, cast(abc.ObserverBase[Any], observer), arrival)
        batches = _batches_of(source)
        if isinstance(source, DeltaSource):
            run.upstream.disposable = source.subscribe_observer(run, scheduler)
        elif batches is not None:  # a read's worth of lines in one call
            run.upstream.disposable = batches.subscribe_batches(run, scheduler)
        else:
            run.upstream.disposable = source.subscribe(
                run.on_next, run.on_error, run.on_completed, scheduler=scheduler
            )
        return Disposable(run.stop)

    def _arrival(self, whole: Any, count: int) -> _Replay | MessageAccumulator | None:
        """How this run knows what arrived, for an error's partial (see the module docstring)."""
        if self._tap is None:
            return None
        last = pipeline.last_machine(whole)
        if type(last) is MessageAccumulator and self._tap == count - 2:
            return last
        return _Replay(self._factories[: self._tap + 1])


def _batches_of(source: Observable[Any]) -> BatchSource | None:
    """The `BatchSource` that `source` is (under its wire label), or None."""
    while isinstance(source, WireSource):
        source = source._source
    return source if isinstance(source, BatchSource) else None


class _Replay:
    """What a run's source gave, kept to decode again when an error comes.

    `items` grows by one per source item; `deltas(closing)` feeds fresh
    machines (those of the run up to the decoder) the same items, and
    `close()` too if the error came at the end of the input: they give what
    the run's gave, up to the same error.
    """

    __slots__ = ("_factories", "items")

    def __init__(self, factories: tuple[Factory, ...]) -> None:
        self._factories = factories
        self.items: list[Any] = []

    def deltas(self, closing: bool) -> list[Any]:
        """What the machines gave for the items kept (and their close), before any error."""
        machine = pipeline.chain([factory() for factory in self._factories])
        out: list[Any] = []
        try:
            machine.feed_all(self.items, out)
            if closing and not machine.done:
                if isinstance(machine, pipeline.Chained):
                    machine.close_into(out)
                else:
                    out += machine.close()
        except Exception:  # the run's own error is the one that counts: this one repeats it
            pass
        return out


class _Run:
    """One subscription of a run: its machines (chained as one) between a source and an observer.

    Items go through in batches (what one source item gave), which the
    observer cannot tell apart from one at a time: the outputs arrive in the
    same order, a machine's error still comes after the outputs of the items
    before it, and nothing is held past the source item that produced it.
    """

    __slots__ = (
        "_arrival",
        "_closing",
        "_kept",
        "_machine",
        "_observer",
        "_stopped",
        "_whole",
        "upstream",
    )

    def __init__(
        self,
        machine: Any,
        observer: abc.ObserverBase[Any],
        arrival: _Replay | MessageAccumulator | None = None,
    ) -> None:
        self._machine = machine
        self._observer = observer
        # What tells an error's partial (see the module docstring), and the
        # list of the source's items to keep (a `_Replay`'s), or None.
        self._arrival = arrival
        self._kept = arrival.items if isinstance(arrival, _Replay) else None
        # `close_into` for a `Chained`: what came before an error still goes on.
        close_into = machine.close_into if isinstance(machine, pipeline.Chained) else None
        self._closing: Callable[[list[Any]], None] | None = close_into
        self._stopped = False  # no more input: ended, failed or disposed
        # An observer that takes many items in one call (a retry run, another run of
        # machines) is handed each input's outputs so.
        self._whole: Callable[[list[Any]], None] | None = getattr(observer, "on_batch", None)
        self.upstream = SingleAssignmentDisposable()

    def on_next(self, item: Any) -> None:
        if self._stopped:
            return
        kept = self._kept
        if kept is not None:
            # A bytearray may be the source's buffer, filled again for the next item.
            kept.append(bytes(item) if type(item) is bytearray else item)
        self._feed((item,))

    def on_batch(self, items: list[Any]) -> None:
        """Many source items in one call (a `BatchSource`'s read): as `on_next` for each."""
        if self._stopped:
            return
        kept = self._kept
        if kept is not None:
            kept += [bytes(item) if type(item) is bytearray else item for item in items]
        self._feed(items)

    def _feed(self, items: Iterable[Any]) -> None:
        out: list[Any] = []
        machine = self._machine
        try:
            machine.feed_all(items, out)
        except Exception as exc:
            self._emit(out)
            if not self._stopped:  # else the observer disposed meanwhile
                self._fail(exc)
            return
        whole = self._whole
        if whole is not None and len(out) > 1:
            whole(out)
        else:
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
        self._emit(out)
        if self._stopped:
            return
        if error is not None:
            self._fail(error, closing=True)
        else:
            self.stop()
            self._observer.on_completed()

    def stop(self) -> None:
        """Take no more input and release the source (also the subscription's disposal)."""
        self._stopped = True
        self.upstream.dispose()
        if self._kept is not None:
            self._kept.clear()  # no error can come any more: what was kept is let go

    def _emit(self, items: list[Any]) -> None:
        on_next = self._observer.on_next
        for item in items:
            if self._stopped:
                return
            on_next(item)

    def _fail(self, error: Exception, *, closing: bool = False) -> None:
        arrival = self._arrival
        if isinstance(arrival, _Replay):
            if isinstance(error, StreamError) and error.partial is None:
                keep_partial(error, arrival.deltas(closing))
        elif arrival is not None:
            keep_partial_of(error, arrival)
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
        gives_deltas: the machine gives deltas (a decoder): a `StreamError`
            that ends the run carries the partial `Message` of what it gave.
    """

    def operator(source: Observable[A]) -> Observable[B]:
        if isinstance(source, _MachineChain):
            factories = (*source._factories, factory)
            tap = len(factories) - 1 if gives_deltas else source._tap
            return _MachineChain(source._source, factories, tap)
        return _MachineChain(source, (factory,), 0 if gives_deltas else None)

    return operator

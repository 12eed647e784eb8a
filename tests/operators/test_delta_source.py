"""DeltaSource: machine operators piped after a source of deltas only take its observer as it
is, the delta decoder in front of their machines left out (a fast path), with the same outcome.

Virtual time (StreamMarbles): subscribed at 200, one tick is one second.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from reactivex import Observable, abc
from reactivex import operators as ops
from reactivex.disposable import Disposable

import rxstream as rs
from rxstream.core import Chained, DeltaDecoder, pipeline
from rxstream.core.message import MessageAccumulator
from rxstream.operators.delta_source import Batching, BatchSource, DeltaSource, Observing
from rxstream.testing.marbles import StreamMarbles, finish, text, tool, usage
from tests.support.fast import way


class Wrapped(DeltaSource):
    """A DeltaSource over any observable, counting the observers it was handed directly."""

    def __init__(self, source: Observable[Any]) -> None:
        super().__init__()
        self.source = source
        self.direct = 0

    def subscribe_observer(
        self, observer: Observing, scheduler: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        self.direct += 1
        return super().subscribe_observer(observer, scheduler)

    def _subscribe_core(
        self, observer: abc.ObserverBase[Any], scheduler: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        return self.source.subscribe(observer, scheduler=scheduler)


VALUES: dict[str, Any] = {
    "a": text("Hel"),
    "b": text("lo"),
    "t": tool(0, '{"q":', id="c1", name="f"),
    "u": tool(0, "1}"),
    "r": rs.Reset(2, "cut"),
    "f": finish("tool_calls"),
    "g": usage(3, 4),
    "x": rs.TruncatedStreamError("cut"),
}
OPERATORS: dict[str, Callable[[], Any]] = {
    "accumulate_message": rs.accumulate_message,
    "accumulate_tool_calls": rs.accumulate_tool_calls,
    "count_tokens": lambda: rs.count_tokens(encoding="o200k_base"),
    "think_tags": rs.think_tags,
}
DIAGRAMS = ["-a-b-t-u-f-g-|", "-a-r-b-t-u-f-|", "-a-b-t-x", "-a-b-t-u-f-g-"]


@pytest.mark.parametrize("name", OPERATORS)
@pytest.mark.parametrize("diagram", DIAGRAMS)
@pytest.mark.parametrize("ways", ["plain", "stdlib"])
def test_after_a_delta_source_an_operator_gives_what_it_gives_after_any_source(
    name: str, diagram: str, ways: str
) -> None:
    if name == "count_tokens":
        pytest.importorskip("tiktoken")
    got: list[Any] = []
    for wrapped in (False, True):
        m = StreamMarbles()
        source = m.deltas(diagram, VALUES)
        with way(ways):
            wrapper = Wrapped(source) if wrapped else None
            observable = (wrapper or source).pipe(OPERATORS[name]())
            got.append((m.start(observable, disposed=230), source.subscriptions))
        if wrapper is not None:
            assert wrapper.direct == 1  # handed the operator's observer, no wrapper
    assert got[0] == got[1]


def test_disposing_the_operator_disposes_the_delta_source() -> None:
    m = StreamMarbles()
    source = m.deltas("-a-b-a-b-a-b-|", VALUES)
    m.start(Wrapped(source).pipe(rs.accumulate_message()), disposed=205)
    assert source.subscriptions == [m.subscription("^----!")]


def test_the_delta_decoder_is_left_out_behind_a_delta_source_when_the_fast_paths_are_on() -> None:
    def machines() -> list[Any]:
        decoder = DeltaDecoder(operator="rs.accumulate_message()")
        return [Chained(decoder, MessageAccumulator(chunks=decoder.reader))]

    with way("stdlib"):
        [alone] = pipeline.behind_deltas(machines())
        assert type(alone) is MessageAccumulator
        lone: list[Any] = [DeltaDecoder()]
        assert pipeline.behind_deltas(lone) == lone  # nothing else to run: it stays
    with way("plain"):
        [kept] = pipeline.behind_deltas(machines())
        assert type(kept) is Chained


def test_accumulate_message_after_a_retried_chat_takes_the_run_directly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`rs.chat(..., retry=)` is a DeltaSource: the accumulator after it gets the run's
    deltas without a delta decoder in front (the retry benchmark's message shape)."""
    import httpx

    from rxstream.testing.builders import ChatStream

    body = ChatStream().role().text("Hi", " there").finish("stop").usage(2, 2).done().sse()
    transport = httpx.MockTransport(
        lambda request: httpx.Response(
            200, headers={"content-type": "text/event-stream"}, content=body
        )
    )
    fed: list[object] = []
    original = DeltaDecoder.feed_all

    def feed_all(self: DeltaDecoder, items: Any, out: Any) -> None:
        fed.extend(items)
        original(self, items, out)

    monkeypatch.setattr(DeltaDecoder, "feed_all", feed_all)
    with httpx.Client(transport=transport) as client:
        answer = rs.chat(
            client,
            "openai-chat",
            model="m",
            messages=[{"role": "user", "content": "Hi"}],
            api_key="k",
            base_url="http://bench.test/v1",
            retry=rs.Retry(),
        )
        assert isinstance(answer, DeltaSource)
        message = answer.pipe(rs.accumulate_message()).run()
    assert message.content == "Hi there"
    assert message.metadata["attempts"][0]["error"] is None
    assert fed == []


# --------------------------------------------------------------------------- BatchSource


class Reads(BatchSource):
    """The lines of `reads`, one batch per read; counts the subscriptions taken whole."""

    def __init__(self, reads: list[list[str]], *, error: Exception | None = None) -> None:
        super().__init__()
        self.reads = reads
        self.error = error
        self.whole = 0

    def _run(self, emit: Callable[[list[str]], None], observer: Any) -> abc.DisposableBase:
        disposed: list[bool] = []
        for batch in self.reads:
            if disposed:
                break
            emit(batch)
        if not disposed:
            if self.error is not None:
                observer.on_error(self.error)
            else:
                observer.on_completed()
        return Disposable(lambda: disposed.append(True))

    def _subscribe_core(
        self, observer: abc.ObserverBase[Any], scheduler: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        def each(batch: list[str]) -> None:
            for line in batch:
                observer.on_next(line)

        return self._run(each, observer)

    def subscribe_batches(
        self, observer: Batching, scheduler: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        self.whole += 1
        return self._run(observer.on_batch, observer)


def chunk(text: str) -> str:
    return "data: " + json.dumps({"choices": [{"index": 0, "delta": {"content": text}}]})


READS: dict[str, tuple[list[list[str]], Exception | None]] = {
    "whole": ([[chunk("Hel"), "", chunk("lo")], ["", "data: [DONE]", ""]], None),
    # [DONE] mid-read: what follows it in the same read is never decoded.
    "done mid-read": ([[chunk("Hel"), "", "data: [DONE]", "", "data: {broken", ""]], None),
    # A malformed chunk mid-read: what came before it goes out, then the error, with it.
    "broken mid-read": ([[chunk("Hel"), "", "data: {broken", "", chunk("lo"), ""]], None),
    "source error": ([[chunk("Hel"), ""]], rs.TruncatedStreamError("cut")),
}


def events_of(source: Observable[Any]) -> list[Any]:
    events: list[Any] = []
    source.subscribe(
        events.append,
        lambda e: events.append((type(e).__name__, getattr(e, "partial", None))),
        lambda: events.append("completed"),
    )
    return events


@pytest.mark.parametrize("case", READS)
@pytest.mark.parametrize("ways", ["plain", "stdlib"])
def test_a_run_after_a_batch_source_takes_each_read_whole_with_the_same_outcome(
    case: str, ways: str
) -> None:
    reads, error = READS[case]
    with way(ways):
        batched = Reads(reads, error=error)
        whole = events_of(batched.pipe(rs.sse_frames(), rs.decode("openai-chat")))
        # The same source behind an operator of another kind: one line at a time.
        each = events_of(
            Reads(reads, error=error).pipe(ops.map(lambda line: line), rs.sse_frames(),
                                           rs.decode("openai-chat"))
        )  # fmt: skip
    assert batched.whole == 1
    assert whole == each
    assert whole[0] == rs.TextDelta("Hel")


class Held(BatchSource):
    """A batch source whose reads the test hands in itself (`observer.on_batch`)."""

    def __init__(self) -> None:
        super().__init__()
        self.observer: Batching | None = None
        self.disposed = False

    def subscribe_batches(
        self, observer: Batching, scheduler: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        self.observer = observer
        return Disposable(lambda: setattr(self, "disposed", True))


def test_a_run_after_a_batch_source_stops_where_its_observer_disposes() -> None:
    held = Held()
    seen: list[Any] = []
    subscription: list[abc.DisposableBase] = []

    def on_next(delta: Any) -> None:
        seen.append(delta)
        subscription[0].dispose()

    subscription.append(held.pipe(rs.sse_frames(), rs.decode("openai-chat")).subscribe(on_next))
    assert held.observer is not None
    # The disposal lands while the read's first delta goes out: the rest are dropped.
    held.observer.on_batch([chunk("a"), "", chunk("b"), ""])
    held.observer.on_batch([chunk("c"), ""])
    assert seen == [rs.TextDelta("a")]
    assert held.disposed

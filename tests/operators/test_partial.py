"""`StreamError.partial` through the operators: marbles on the virtual clock.

Whatever ends a stream (the decoder's own error, one from the source, a
timeout, a stop signal that fails), the subscriber's error carries the
`Message` of the deltas that arrived before it, or None when none did.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import reactivex
from reactivex import Observable
from reactivex.subject import Subject

import rxstream as rs
from rxstream.models import Message, TextDelta
from rxstream.testing.marbles import (
    DONE,
    StreamMarbles,
    finish,
    malformed,
    reasoning,
    text,
    tool,
)
from tests.support.fast import fast_switch  # noqa: F401  (the `fast` fixture: on, then off)
from tests.support.operators import error_of

V: dict[str, Any] = {
    "r": reasoning("Hmm."),
    "a": text("Hel"),
    "b": text("lo"),
    "c": tool(0, '{"city": ', id="call_1", name="weather"),
    "d": tool(0, '"Paris"}'),
    "f": finish("tool_calls"),
    "x": malformed(),
    "D": DONE,
}


def cut() -> rs.TransportError:
    """A new transport error (a stage gives an error its partial once: no sharing)."""
    return rs.TransportError("the connection was closed mid-body")


def failing(m: StreamMarbles, marbles: str, error: Exception) -> Observable[str]:
    """`m.lines(marbles, V)` (ending in `|`), then `error` at the tick of the `|`."""
    return reactivex.concat(m.lines(marbles, V), reactivex.throw(error))


def partial_of(records: list[Any]) -> Message | None:
    error = error_of(records[-1])
    assert isinstance(error, rs.StreamError)
    return error.partial


def test_the_decoders_own_error_carries_what_it_decoded(
    stream_marbles: StreamMarbles, fast: bool
) -> None:
    m = stream_marbles
    source = m.lines("-r-a-b-x-a-D", V)
    out = m.start(source.pipe(rs.sse_frames(), rs.decode("openai-chat")))
    assert out == m.expected("-r-a-b-E", V | {"E": rs.MalformedChunkError})
    assert source.subscriptions == [m.subscription("^------!")]
    partial = partial_of(out)
    assert partial is not None
    assert (partial.reasoning, partial.content, partial.finish_reason) == ("Hmm.", "Hello", None)


def test_an_error_from_the_source_passes_the_decoder_with_the_partial(
    stream_marbles: StreamMarbles, fast: bool
) -> None:
    m = stream_marbles
    error = rs.TransportError("reset by peer")
    source = failing(m, "-a-c-|", error)
    out = m.start(source.pipe(rs.sse_frames(), rs.decode("openai-chat")))
    assert out == m.expected("-a-c-E", V | {"E": rs.TransportError})
    assert error_of(out[-1]) is error  # the very exception, given its partial
    partial = partial_of(out)
    assert partial is not None
    assert partial.content == "Hel"
    # A call cut in its arguments is kept as a stop keeps it: not complete.
    (call,) = partial.tool_calls
    assert (call.id, call.name, call.arguments, call.complete) == (
        "call_1",
        "weather",
        '{"city": ',
        False,
    )


def test_no_delta_before_the_error_is_no_partial(stream_marbles: StreamMarbles) -> None:
    m = stream_marbles
    out = m.start(failing(m, "--|", cut()).pipe(rs.sse_frames(), rs.decode("openai-chat")))
    assert out == m.expected("--E", {"E": rs.TransportError})
    assert partial_of(out) is None


def test_a_partial_an_earlier_stage_gave_is_kept(stream_marbles: StreamMarbles) -> None:
    m = stream_marbles
    error = rs.TransportError("cut")
    earlier = Message(choice=0, role="assistant", content="known")
    error.partial = earlier
    out = m.start(failing(m, "-a-|", error).pipe(rs.sse_frames(), rs.decode()))
    assert out == m.expected("-a-E", V | {"E": rs.TransportError})
    assert partial_of(out) is earlier


TAILS: dict[str, Callable[[], Callable[[Observable[Any]], Observable[Any]]]] = {
    "accumulate_message": rs.accumulate_message,
    "accumulate_tool_calls": rs.accumulate_tool_calls,
    "count_tokens": rs.count_tokens,
    "think_tags": rs.think_tags,
}


@pytest.mark.parametrize("tail", TAILS, ids=list(TAILS))
def test_the_machines_after_the_decoder_pass_the_partial_on(
    stream_marbles: StreamMarbles, fast: bool, tail: str
) -> None:
    m = stream_marbles
    source = m.lines("-a-b-c-x", V)
    out = m.start(source.pipe(rs.sse_frames(), rs.decode("openai-chat"), TAILS[tail]()))
    assert isinstance(error_of(out[-1]), rs.MalformedChunkError)
    assert out[-1].time == 207
    partial = partial_of(out)
    assert partial is not None
    assert partial.content == "Hello"
    assert [call.arguments for call in partial.tool_calls] == ['{"city": ']


def test_a_finished_choice_keeps_its_finish(stream_marbles: StreamMarbles) -> None:
    m = stream_marbles
    out = m.start(failing(m, "-a-c-d-f-|", cut()).pipe(rs.sse_frames(), rs.decode()))
    partial = partial_of(out)
    assert partial is not None
    assert partial.finish_reason == "tool_calls"
    assert [call.complete for call in partial.tool_calls] == [True]


def test_a_timeout_after_the_decoder_carries_what_passed(stream_marbles: StreamMarbles) -> None:
    m = stream_marbles
    source = m.lines("-a-b--------b-D", V)
    pipeline = source.pipe(rs.sse_frames(), rs.decode(), rs.timeouts(idle=4, scheduler=m.scheduler))
    out = m.start(pipeline)
    assert out == m.expected("-a-b---E", V | {"E": rs.StreamTimeoutError})
    assert source.subscriptions == [m.subscription("^------!")]
    partial = partial_of(out)
    assert partial is not None
    assert partial.content == "Hello"


def test_a_timeout_before_the_decoder_gets_the_partial_from_it(
    stream_marbles: StreamMarbles,
) -> None:
    m = stream_marbles
    source = m.lines("-a-b--------b-D", V)
    pipeline = source.pipe(rs.timeouts(idle=4, scheduler=m.scheduler), rs.sse_frames(), rs.decode())
    out = m.start(pipeline)
    assert out == m.expected("-a-b---E", V | {"E": rs.StreamTimeoutError})
    partial = partial_of(out)
    assert partial is not None
    assert partial.content == "Hello"


def test_a_failing_stop_signal_ends_with_the_partial(stream_marbles: StreamMarbles) -> None:
    m = stream_marbles
    source = m.deltas("-a-b-c-d-f-D", V)
    signal = m.hot("-----e", {"e": rs.StreamError("the stop button broke")})
    out = m.start(source.pipe(rs.stop_on(signal)))
    assert out == m.expected("-a-b-E", V | {"E": rs.StreamError})
    assert source.subscriptions == [m.subscription("^----!")]
    partial = partial_of(out)
    assert partial is not None
    assert partial.content == "Hello"


def test_stop_on_gives_an_error_from_upstream_the_partial(stream_marbles: StreamMarbles) -> None:
    m = stream_marbles
    out = m.start(m.cold("-a-b-e", V | {"e": cut()}).pipe(rs.stop_on(reactivex.never())))
    assert out == m.expected("-a-b-E", V | {"E": rs.TransportError})
    partial = partial_of(out)
    assert partial is not None
    assert partial.content == "Hello"


def test_an_error_that_is_no_stream_error_is_left_alone(stream_marbles: StreamMarbles) -> None:
    m = stream_marbles
    bug = ValueError("a bug in a map")
    out = m.start(m.cold("-a-e", V | {"e": bug}).pipe(rs.timeouts(idle=50)))
    assert error_of(out[-1]) is bug
    assert not hasattr(bug, "partial")


def test_decode_of_rxstreams_own_format_with_ids_keeps_the_items_under_their_ids() -> None:
    events = rs.from_lines(
        [
            "id: 1",
            "event: text",
            'data: {"type": "text", "text": "Hi"}',
            "",
            "id: 2",
            "event: text",
            'data: {"type": "text", "te',
            "",
        ]
    )
    errors: list[Exception] = []
    events.pipe(rs.sse_frames(), rs.decode("rxstream", ids=True)).subscribe(on_error=errors.append)
    (error,) = errors
    assert isinstance(error, rs.StreamError)
    assert error.partial is not None
    assert error.partial.content == "Hi"


def test_a_source_without_a_decoder_gives_no_partial() -> None:
    errors: list[Exception] = []
    reactivex.concat(reactivex.of(TextDelta("Hi")), reactivex.throw(rs.StreamError("x"))).pipe(
        rs.accumulate_message()
    ).subscribe(on_error=errors.append)
    (error,) = errors
    assert isinstance(error, rs.StreamError)
    assert error.partial is None


@pytest.mark.parametrize("tail", ["none", *TAILS])
def test_the_long_spelling_decode_chunks_then_deltas_fills_it_too(
    stream_marbles: StreamMarbles, fast: bool, tail: str
) -> None:
    m = stream_marbles
    operators = [] if tail == "none" else [TAILS[tail]()]
    source = m.lines("-a-c-x", V)
    out = m.start(source.pipe(rs.sse_frames(), rs.decode_chunks(), rs.deltas(), *operators))
    assert isinstance(error_of(out[-1]), rs.MalformedChunkError)
    assert source.subscriptions == [m.subscription("^----!")]
    partial = partial_of(out)
    assert partial is not None
    assert partial.content == "Hel"
    assert [call.complete for call in partial.tool_calls] == [False]


def test_deltas_after_a_chunk_source_fills_it(stream_marbles: StreamMarbles) -> None:
    m = stream_marbles
    source = reactivex.concat(m.chunks("-a-b-|", V), reactivex.throw(cut()))
    out = m.start(source.pipe(rs.deltas(), rs.count_tokens()))
    partial = partial_of(out)
    assert partial is not None
    assert partial.content == "Hello"


def test_a_client_of_an_rxstream_server_gets_the_partial_of_what_it_read() -> None:
    sent = reactivex.concat(
        reactivex.of(text("Hel"), text("lo"), tool(0, '{"ci', id="c", name="f")),
        reactivex.throw(rs.ProviderError("Overloaded", type="overloaded_error")),
    )
    body: list[bytes] = []
    sent.pipe(rs.to_sse(dialect="rxstream", keepalive=None)).subscribe(body.append)
    errors: list[Exception] = []
    rs.from_lines([b"".join(body)]).pipe(rs.sse_frames(), rs.decode("rxstream")).subscribe(
        on_error=errors.append
    )
    (error,) = errors
    assert isinstance(error, rs.ProviderError)  # the server's error, as its own class
    assert error.partial is not None
    assert error.partial.content == "Hello"
    assert [(c.arguments, c.complete) for c in error.partial.tool_calls] == [('{"ci', False)]


def test_a_source_that_reuses_its_buffer_does_not_change_what_arrived() -> None:
    # The line splitter copies a bytearray as it takes it; what the run keeps must too.
    buffer = bytearray(b'data: {"choices": [{"delta": {"content": "Hel"}}]}\n\n')
    errors: list[Exception] = []
    source: Subject[Any] = Subject()  # bytearray items: rs.lines() takes them
    source.pipe(rs.lines(), rs.sse_frames(), rs.decode("openai-chat")).subscribe(
        on_error=errors.append
    )
    source.on_next(buffer)
    buffer[:] = b'data: {"choices": [{"delta": {"content": "lo"}}]}\n\n'
    source.on_next(buffer)
    buffer[:] = b"XXXX"
    source.on_error(cut())
    (error,) = errors
    assert isinstance(error, rs.TransportError)
    assert error.partial is not None
    assert error.partial.content == "Hello"

"""`decode(dialect)`: any provider's wire items -> deltas, over `rxstream.core.dialects`."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, Literal, overload

from reactivex import Observable

from ..core.dialects import OnMalformed, decoder
from ..core.eventstream import EventStreamParser
from ..core.sse import SSEParser
from ..models import Delta, RunItem
from ._machine import machine_operator
from .wire import wire_of

__all__ = ["decode"]


#: The arguments of `decode` that built a decoder once (they are good).
_CHECKED: set[tuple[str, str, bool, bool]] = set()


@overload
def decode(
    dialect: Literal["rxstream"], *, on_malformed: OnMalformed = "raise", ids: bool = False
) -> Callable[[Observable[Any]], Observable[Any]]: ...


@overload
def decode(
    dialect: Literal["ai-sdk"], *, on_malformed: OnMalformed = "raise", runs: Literal[True]
) -> Callable[[Observable[Any]], Observable[Delta | RunItem]]: ...


@overload
def decode(
    dialect: str = "auto", *, on_malformed: OnMalformed = "raise"
) -> Callable[[Observable[Any]], Observable[Delta]]: ...


def decode(
    dialect: str = "auto",
    *,
    on_malformed: OnMalformed = "raise",
    ids: bool = False,
    runs: bool = False,
) -> Callable[[Observable[Any]], Observable[Any]]:
    """Decode a provider's stream into deltas, whatever its wire format.

    The input is what the dialect's wire is made of: `SSEFrame`s (after
    `rs.lines(), rs.sse_frames()`) for `"openai-chat"`, `"openai-responses"`,
    `"anthropic"`, `"gemini"` and `"cohere"`; NDJSON lines (after
    `rs.lines()`) for `"ollama"`; `EventStreamMessage`s (after
    `rs.eventstream_frames()`) for `"bedrock"`. The output is the same
    vocabulary of deltas for all of them, so every operator downstream
    (`accumulate_message`, `accumulate_tool_calls`, `count_tokens`,
    `split_by_delta_type`, `coalesce`, `think_tags`, `timeouts`, `multicast`)
    works unchanged on any provider. A source that knows its wire
    (`rs.from_request(client, request)` with an `rs.request`) gets the framing
    it needs added in front: `from_request(client, request).pipe(
    rs.sse_frames(), rs.decode(dialect))` reads every dialect, Ollama's NDJSON
    and Bedrock's event stream too (`rxstream.operators.wire`).

    The stream completes at the dialect's end marker (disposing the upstream,
    which releases the connection). A provider's error event is
    `ProviderError`; input that ends before the end marker is
    `TruncatedStreamError` (`EmptyStreamError` when nothing of an answer
    came); an item of another dialect or of the wrong shape is
    `MalformedChunkError` naming the dialect (or is dropped with
    `on_malformed="skip"`). Every `StreamError` that ends the stream here,
    the decoder's own or one from the source (a transport error, a
    timeout), carries what arrived as `error.partial`: the `Message` of the
    deltas given before it (None when none were). `"auto"` picks the dialect
    from the first item that tells, and says so when none does. `decode("openai-chat")` is
    `decode_chunks()` followed by `deltas()`, fused.

    `decode("rxstream")` reads rxstream's own event format back (what
    `rs.to_sse(dialect="rxstream")` and `rxstream.serve.sse_response` send),
    so a Python client of an rxstream server runs the same pipeline as a
    provider's: `rs.from_request(client, "GET", url).pipe(rs.sse_frames(),
    rs.decode("rxstream"))`. That format carries any item (messages, tool
    calls, ... as well as deltas), each equal to what the server sent; it
    completes at the `done` event and raises the error the server sent as
    its own class. With `ids=True` each item comes as `StreamEntry(id,
    item)`: the id is the event's, which a client that reconnects sends as
    `Last-Event-ID` to resume right after that item.

    `decode("ai-sdk", runs=True)` reads a run's UI message stream (`rs.run`
    rendered by `rs.to_sse(dialect="ai-sdk")`, or an AI SDK backend's
    multi-step answer) as the run's items between its deltas: `StepStart`
    and `StepEnd` where its steps begin and their answers end, `ToolResult`
    for a tool's output, error or denial, `ApprovalRequest` for a call that
    waits (the "AI SDK UI stream" page says what each comes from). Without
    it, deltas only, which every accumulator takes.

    Marble sketch (Anthropic: `s` message_start, `t` a text delta, `e` message_stop)::

        -s-t-t-e-x-|   ->   ---A-B-|        (A, B: TextDelta; upstream disposed at e)
        -s-t-|         ->   ---A-#          (TruncatedStreamError: no message_stop)

    Args:
        dialect: one of `"openai-chat"`, `"openai-responses"`, `"anthropic"`,
            `"gemini"`, `"cohere"`, `"ollama"`, `"bedrock"`, `"auto"`, or
            `"rxstream"` (rxstream's own event format).
        on_malformed: `"raise"` (the default) or `"skip"` malformed items.
        ids: `"rxstream"` only: emit `StreamEntry(event id, item)`.
        runs: `"ai-sdk"` only: a run's items too (see above).

    Returns:
        An operator from wire items to deltas (any item for `"rxstream"`).

    Raises:
        ValueError: an unknown dialect or `on_malformed` value, `ids` with
            another dialect than `"rxstream"`, `runs` with another than `"ai-sdk"`.

    >>> import reactivex
    >>> from rxstream.models import SSEFrame
    >>> frames = reactivex.of(SSEFrame('{"choices": [{"delta": {"content": "Hi"}}]}'),
    ...                       SSEFrame("[DONE]"))
    >>> _ = frames.pipe(decode("openai-chat")).subscribe(print)
    TextDelta(text='Hi', choice=0)
    """
    # Build one decoder now so a bad name or option fails at pipe-building time
    # (once per set of arguments: a server builds this pipe for every request).
    key = (dialect, on_malformed, ids, runs)
    if key not in _CHECKED:
        decoder(dialect, on_malformed=on_malformed, ids=ids, runs=runs)
        _CHECKED.add(key)
    decode_items = machine_operator(
        partial(decoder, dialect, on_malformed=on_malformed, ids=ids, runs=runs),
        gives_deltas=True,
    )
    frame_sse, frame_eventstream = machine_operator(SSEParser), machine_operator(EventStreamParser)

    def operator(source: Observable[Any]) -> Observable[Any]:
        # A source of known wire, not framed yet: its framing first (fused with the decoder).
        wire = wire_of(source)
        if wire == "sse":
            source = frame_sse(source)
        elif wire == "eventstream":
            source = frame_eventstream(source)
        return decode_items(source)

    return operator

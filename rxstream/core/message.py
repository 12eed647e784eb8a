"""Deltas (or chunks) to the final assistant message of each choice.

Input: deltas (`rs.accumulate_message()` decodes chunks first). Output:
nothing while the stream runs;
`close()` returns one `Message` per choice, in choice order.

Invariants:

- choices stay apart (`n > 1`); a choice exists once any delta names it (or
  any chunk, read by the reader given as `chunks`);
- text, reasoning and refusal are the concatenation of their deltas, joined once;
- tool calls are reassembled by `ToolCallAccumulator` and listed in index order;
- `finish_reason` is the choice's last `Finish` (None if it never finished),
  `finish_raw` that finish's provider word;
- citations, server-side tools and reasoning state are kept in wire order;
  `Metadata` items merge into `metadata` (a list extends the list there,
  anything else replaces it);
- `blocks` keeps each choice's text, reasoning, tool calls, server tools and
  reasoning state in arrival order: adjacent text (or reasoning) deltas make
  one block; a `"thinking"` or `"reasoning_item"` state closes the latest
  reasoning run no state closed yet (its `ReasoningBlock.state`), other
  states stand alone; a
  tool call takes the place of its first fragment; a whole-block citation
  (`Citation.whole_block`) that spans the tail of the open text run splits
  that span off as a text block of its own carrying it (and the citations
  of the same span that follow it), so the text after it starts a new one;
  an `EmptyCitations` splits its span off the same way, a block whose
  `citations` is `()` (other text blocks have None); a `TextBlockStart`
  ends the open text run, so the text after it is a block of its own (the
  text itself is unchanged: `content` joins both);
- `usage` is the stream's last `Usage`, shared by every choice;
- a `Reset` drops everything before it (every choice, their tool calls, the
  usage): the messages are the new answer's alone (the choices and roles a
  reader given as `chunks` has seen stay, as chunks carry no reset);
- `role` is read from the chunks' `delta.role` (the first non-empty one) by
  the reader given as `chunks`, as deltas carry no role; it is
  `"assistant"` without one or when none came;
- an item that is not a delta is a `TypeError` that says which operator is
  missing in front.

Follows the OpenAI chat streaming format (a `chat.completion` assembled from
its `chat.completion.chunk` stream).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Protocol

from .._deprecate import warn_deprecated
from ..errors import StreamError
from ..models import (
    DELTA_CLASSES,
    Citation,
    Delta,
    EmptyCitations,
    Finish,
    JSONObject,
    Message,
    MessageBlock,
    Metadata,
    ReasoningBlock,
    ReasoningDelta,
    ReasoningState,
    RefusalDelta,
    Reset,
    ServerToolCall,
    ServerToolResult,
    StreamEntry,
    TextBlock,
    TextBlockStart,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    Usage,
)
from ._machine import FAILED, OPEN, MachineBase, only_deltas
from .tools import ToolCallAccumulator

__all__ = [
    "Arrived",
    "ChunkFacts",
    "MessageAccumulator",
    "keep_partial",
    "keep_partial_of",
    "partial_message",
]


class ChunkFacts(Protocol):
    """What a reader of the stream's chunks knows that deltas do not carry.

    The openai-chat `ChunkReader` is one; `MessageAccumulator(chunks=...)` takes it.
    """

    @property
    def seen(self) -> Collection[int]:
        """The indexes of every choice any chunk named."""
        ...  # pragma: no cover

    @property
    def roles(self) -> Mapping[int, str]:
        """Each choice's first non-empty role."""
        ...  # pragma: no cover

    @property
    def usage(self) -> Usage | None:
        """The last `Usage` read."""
        ...  # pragma: no cover


class _NoChunks:
    """The facts of a stream fed as deltas: no chunk was read."""

    __slots__ = ()
    seen: Collection[int] = frozenset()
    roles: Mapping[int, str] = MappingProxyType({})
    usage: Usage | None = None


_NO_CHUNKS = _NoChunks()


# The kinds of a block still being filled.
_TEXT, _REASONING = "text", "reasoning"

# The reasoning states that close the reasoning run they follow.
_CLOSING_STATES = frozenset({"thinking", "reasoning_item"})


@dataclass(slots=True)
class _Run:
    """A text or reasoning block: where its pieces start in the choice's `content` or
    `reasoning` list (it ends where the next run of its kind starts), joined once at the
    end; `state` is the reasoning state that closed it, if one did."""

    kind: str
    start: int
    state: ReasoningState | None = None
    # A text block's whole-block citations, and the span of the answer's text they cite.
    citations: list[Citation] | None = None
    span: tuple[int, int] | None = None


@dataclass(slots=True)
class _CallSlot:
    """Where a tool call's first fragment arrived: by its index, else by its id."""

    index: int | None
    id: str | None


_Slot = _Run | _CallSlot | ReasoningBlock | ServerToolCall | ServerToolResult | ReasoningState


@dataclass(slots=True)
class _Choice:
    content: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    refusal: list[str] = field(default_factory=list)
    tool_calls: list[ToolCall] = field(default_factory=list)
    finish_reason: str | None = None
    finish_raw: str | None = None
    citations: list[Citation] = field(default_factory=list)
    server_tools: list[ServerToolCall | ServerToolResult] = field(default_factory=list)
    reasoning_state: list[ReasoningState] = field(default_factory=list)
    metadata: JSONObject = field(default_factory=dict)
    blocks: list[_Slot] = field(default_factory=list)
    call_keys: set[tuple[str, int | str]] = field(default_factory=set)
    # Where the latest reasoning run that no state closed yet is in `blocks`.
    open_reasoning: int | None = None
    # The kind of the run the last block is (a text piece goes on in it), or None.
    open_kind: str | None = None
    # How many of `content`'s pieces `chars` counts, and their characters.
    counted: int = 0
    chars: int = 0

    def open_run(self, kind: str) -> None:
        """Start a run of `kind` at the end of `blocks` (its pieces follow in its list)."""
        blocks = self.blocks
        if kind is _REASONING:
            self.open_reasoning = len(blocks)
            blocks.append(_Run(kind, len(self.reasoning)))
        else:
            blocks.append(_Run(kind, len(self.content)))
        self.open_kind = kind

    def push(self, block: _Slot) -> None:
        """Add a block that is not a run (it ends the open run)."""
        self.blocks.append(block)
        self.open_kind = None

    def add_state(self, state: ReasoningState) -> None:
        """Close the open reasoning run `state` belongs to, or keep it as a block of its own."""
        if state.kind not in _CLOSING_STATES:
            self.push(state)
            return
        # The run it closes is the latest open one (a Responses reasoning item
        # is done after the text that followed its summary began).
        at = self.open_reasoning
        run = self.blocks[at] if at is not None else None
        if type(run) is _Run:
            run.state = state
            self.open_reasoning = None
            if at == len(self.blocks) - 1:
                self.open_kind = None  # closed: the next reasoning piece starts a run
        else:
            self.push(ReasoningBlock(state.text, state))

    def end_text(self) -> None:
        """End the open text run: the next text piece starts a run (a block) of its own."""
        if self.open_kind is _TEXT:
            self.open_kind = None

    def cite(self, citation: Citation) -> None:
        """Keep `citation`; a whole-block one makes its span a cited block."""
        self.citations.append(citation)
        if citation.whole_block:
            self.cite_block(citation.start, citation.end, citation)

    def cite_block(self, start: int | None, end: int | None, citation: Citation | None) -> None:
        """Make the text from `start` to `end`, the tail of the open text run, a cited block.

        `citation` is a whole-block citation of that text; None: the block's
        citations list came empty (`EmptyCitations`). The span's start splits
        the run there (a piece across it is cut in two, the text unchanged); a
        citation of the same span as the block just cited joins it. A span
        that is no such tail is left alone (a citation stays on
        `Message.citations` only).
        """
        last = self.blocks[-1] if self.blocks else None
        if start is None or end is None or type(last) is not _Run or last.kind is not _TEXT:
            return
        if self.open_kind is not _TEXT:
            if last.citations is not None and last.span == (start, end) and citation is not None:
                last.citations.append(citation)
            return
        content = self.content
        self.chars += sum(map(len, content[self.counted :]))
        self.counted = len(content)
        if end != self.chars or start > end:
            return
        at, chars = len(content), self.chars
        while at > last.start and chars > start:
            at -= 1
            chars -= len(content[at])
        if chars < start:  # the span starts inside piece `at`
            piece, cut = content[at], start - chars
            content[at : at + 1] = [piece[:cut], piece[cut:]]
            at += 1
            self.counted += 1
        run = last
        if at > last.start:
            run = _Run(_TEXT, at)
            self.blocks.append(run)
        run.citations, run.span = [] if citation is None else [citation], (start, end)
        self.open_kind = None  # the text that follows is a block of its own

    def _run_texts(self) -> dict[int, str]:
        """Each run's text, by its place in `blocks` (it ends where the next of its kind starts)."""
        ends = {_TEXT: len(self.content), _REASONING: len(self.reasoning)}
        texts: dict[int, str] = {}
        for at in range(len(self.blocks) - 1, -1, -1):
            run = self.blocks[at]
            if type(run) is _Run:
                source = self.content if run.kind is _TEXT else self.reasoning
                texts[at] = "".join(source[run.start : ends[run.kind]])
                ends[run.kind] = run.start
        return texts

    def final_blocks(self, calls: list[ToolCall]) -> tuple[MessageBlock, ...]:
        """The blocks, each tool call in the place of its first fragment."""
        by_index = {call.index: call for call in calls}
        by_id = {call.id: call for call in calls if call.id is not None}
        placed: set[int] = set()
        out: list[MessageBlock] = []
        texts = self._run_texts()
        for at, block in enumerate(self.blocks):
            if type(block) is _Run:
                text = texts[at]
                if block.kind is _TEXT:
                    cited = block.citations
                    out.append(TextBlock(text) if cited is None else TextBlock(text, tuple(cited)))
                else:
                    out.append(ReasoningBlock(text, block.state))
            elif type(block) is _CallSlot:
                call = (
                    by_index.get(block.index)
                    if block.index is not None
                    else by_id.get(block.id)
                    if block.id is not None
                    else None
                )
                if call is not None and call.index not in placed:
                    placed.add(call.index)
                    out.append(call)
            else:
                out.append(block)  # type: ignore[arg-type]
        out.extend(call for call in calls if call.index not in placed)
        return tuple(out)


class MessageAccumulator(MachineBase):
    """Accumulate a stream into one final `Message` per choice.

    Args:
        chunks: the reader of this stream's chunks (e.g. the `reader` of the
            `DeltaDecoder` that decodes them): the messages then have the
            chunks' roles and every choice they named. None: deltas only.

    Returns: `feed` always returns `[]`; `close()` returns the messages, in
    choice order.

    Raises:
        TypeError: an item that is not a delta.
        RuntimeError: `feed` after `close()` or after an error.

    >>> acc = MessageAccumulator()
    >>> acc.feed(TextDelta("Hi")) + acc.feed(Finish("stop"))
    []
    >>> acc.close()[0].content
    'Hi'
    """

    __slots__ = ("_choices", "_pieces", "_reader", "_run", "_tools", "_usage")
    operator = "rs.accumulate_message()"

    def __init__(self, *, chunks: ChunkFacts | None = None) -> None:
        super().__init__()
        self._tools = ToolCallAccumulator()
        self._choices: dict[int, _Choice] = {}
        self._usage: Usage | None = None
        # The reader of the chunks this stream brought: the choices they name
        # and their roles. None read, unless `chunks` says otherwise.
        self._reader: ChunkFacts = _NO_CHUNKS if chunks is None else chunks
        # A run of fragments that go on one tool call (same choice, same
        # index, no id or name of their own): by the accumulator's own rule
        # ("by index, else by id, else the latest call") they all land on
        # the call of the run's first fragment, so they reach it as one
        # fragment, their arguments joined, when the run ends.
        self._run: ToolCallDelta | None = None
        self._pieces: list[str] = []

    @property
    def pristine(self) -> bool:
        """True while nothing has been fed (nor closed)."""
        reader = self._reader
        return (
            self._state is OPEN
            and not self._choices
            and self._usage is None
            and not reader.seen
            and reader.usage is None
        )

    def share_reader(self, reader: ChunkFacts) -> None:
        """Deprecated: pass the reader as `MessageAccumulator(chunks=reader)`.

        Takes the choices and roles from `reader`, as `chunks=` does; warns.
        """
        warn_deprecated(
            "MessageAccumulator.share_reader(reader)", "MessageAccumulator(chunks=reader)"
        )
        self._reader = reader

    def _read_chunks_with(self, reader: ChunkFacts) -> None:
        """Fusion hook (`rxstream.core.pipeline`): take roles and choices from `reader`.

        For a chunk decoder fused in front that feeds the chunks' deltas here,
        reading the chunks with `reader`: as `chunks=reader` would have.
        """
        self._reader = reader

    def feed(self, item: Delta) -> list[Message]:
        """Take one delta; return `[]` (messages come at `close()`)."""
        self.feed_all((item,), [])
        return []

    def feed_all(self, items: Iterable[Delta], out: list[Message]) -> None:
        """Feed many items at once: the same as `feed` for each in turn (and `out` stays empty)."""
        if self._state is not OPEN:
            self._refuse()
        choices = self._choices
        try:
            for item in items:
                # Text, reasoning and tool-call deltas are nearly all a stream
                # holds: `_apply`'s hot cases, inline.
                if type(item) is TextDelta:
                    n = item.choice
                    state = choices.get(n) or self._choice(n)
                    if state.open_kind is not _TEXT:
                        state.open_run(_TEXT)
                    state.content.append(item.text)
                elif type(item) is ReasoningDelta:
                    n = item.choice
                    state = choices.get(n) or self._choice(n)
                    if state.open_kind is not _REASONING:
                        state.open_run(_REASONING)
                    state.reasoning.append(item.text)
                elif type(item) is ToolCallDelta:
                    run = self._run
                    if (
                        run is not None
                        and item.id is None
                        and item.name is None
                        and item.index == run.index
                        and item.choice == run.choice
                    ):
                        self._pieces.append(item.arguments)
                    else:
                        if run is not None:
                            self._end_run()
                        self._note_call(item)
                        self._run = item
                else:
                    for delta in only_deltas(item, self.operator):
                        self._apply(delta)
        except BaseException:
            self._state = FAILED
            raise

    def close(self) -> list[Message]:
        """End the input; return one `Message` per choice, in choice order."""
        self._closing()
        try:
            self._end_run()
            for call in self._tools.close():
                self._choice(call.choice).tool_calls.append(call)
            for n in self._reader.seen:
                self._choice(n)
            roles = self._reader.roles
            for state in self._choices.values():
                state.tool_calls.sort(key=lambda c: c.index)
            return [
                Message(
                    choice=n,
                    role=roles.get(n) or "assistant",
                    content="".join(state.content),
                    reasoning="".join(state.reasoning),
                    refusal="".join(state.refusal),
                    tool_calls=tuple(state.tool_calls),
                    finish_reason=state.finish_reason,
                    usage=self._usage,
                    finish_raw=state.finish_raw,
                    citations=tuple(state.citations),
                    server_tools=tuple(state.server_tools),
                    reasoning_state=tuple(state.reasoning_state),
                    metadata=state.metadata,
                    blocks=state.final_blocks(state.tool_calls),
                )
                for n, state in sorted(self._choices.items())
            ]
        except BaseException:
            self._state = FAILED
            raise

    def partial(self) -> Message | None:
        """What arrived so far as one `Message`, for an error that ends the stream.

        What `partial_message` gives for the deltas fed: the first choice a
        delta named, a tool call cut in its arguments kept with
        `complete=False`, `finish_reason` None for a choice that never
        finished. It ends the input (the accumulator is closed): the stream
        is over. None when no delta named a choice, or when the accumulator
        was closed or failed already.
        """
        if self._state is not OPEN or not self._choices:
            return None
        first = min(self._choices)
        cut = sorted(n for n, state in self._choices.items() if state.finish_reason is None)
        # A stop's finish closes the cut calls as a stop would; it is taken back below.
        self.feed_all([Finish(_STOPPED, choice=n) for n in cut], [])
        message = next(m for m in self.close() if m.choice == first)
        if first in cut:
            message = replace(message, finish_reason=None, finish_raw=None)
        return message

    def _end_run(self) -> None:
        """Hand the pending run of tool-call fragments to the tool-call accumulator."""
        run = self._run
        if run is None:
            return
        self._run = None
        pieces = self._pieces
        if pieces:
            run = ToolCallDelta(
                run.index, "".join([run.arguments, *pieces]), run.id, run.name, run.choice
            )
            pieces.clear()
        self._tools.feed(run)

    def _note_call(self, delta: ToolCallDelta) -> None:
        """Keep the place of a tool call whose first fragment this is."""
        state = self._choice(delta.choice)
        key: tuple[str, int | str]
        if delta.index is not None:
            key = ("index", delta.index)
        elif delta.id is not None:
            key = ("id", delta.id)
        else:
            return  # a continuation of the latest call
        if key not in state.call_keys:
            state.call_keys.add(key)
            state.push(_CallSlot(delta.index, delta.id))

    def _choice(self, n: int) -> _Choice:
        state = self._choices.get(n)
        if state is None:
            state = self._choices[n] = _Choice()
        return state

    def _apply(self, delta: Delta) -> None:
        match delta:
            case Usage():
                # Shared by all choices, so it names none.
                self._usage = delta
            case TextDelta(text=text):
                state = self._choice(delta.choice)
                if state.open_kind is not _TEXT:
                    state.open_run(_TEXT)
                state.content.append(text)
            case ReasoningDelta(text=text):
                state = self._choice(delta.choice)
                if state.open_kind is not _REASONING:
                    state.open_run(_REASONING)
                state.reasoning.append(text)
            case RefusalDelta(text=text):
                self._choice(delta.choice).refusal.append(text)
            case ToolCallDelta():
                self._end_run()
                self._note_call(delta)
                self._tools.feed(delta)
            case Finish(reason=reason, raw=raw):
                self._end_run()
                state = self._choice(delta.choice)
                state.finish_reason = reason
                state.finish_raw = raw
                state.tool_calls.extend(
                    call for call in self._tools.feed(delta) if type(call) is ToolCall
                )
            case Citation():
                self._choice(delta.choice).cite(delta)
            case EmptyCitations(start=start, end=end):
                self._choice(delta.choice).cite_block(start, end, None)
            case TextBlockStart():
                self._choice(delta.choice).end_text()
            case ServerToolCall() | ServerToolResult():
                state = self._choice(delta.choice)
                state.server_tools.append(delta)
                state.push(delta)
            case ReasoningState():
                state = self._choice(delta.choice)
                state.reasoning_state.append(delta)
                state.add_state(delta)
            case Reset():
                # A new answer follows: nothing of the dropped one stays.
                self._run = None
                self._pieces.clear()
                self._tools = ToolCallAccumulator()
                self._choices.clear()
                self._usage = None
            case Metadata(data=data):
                merged = self._choice(delta.choice).metadata
                for key, value in data.items():
                    old = merged.get(key)
                    if not isinstance(value, list):
                        merged[key] = value
                    elif isinstance(old, list):
                        # A list here is this accumulator's own copy: extended in place, so
                        # logprobs arriving one entry a chunk cost no copy of all before them.
                        old.extend(value)
                    else:
                        merged[key] = list(value)


# --------------------------------------------------------------------------- partial answers

#: `Finish.reason` of a stop (`rs.stop_on`): what cuts a choice short without its provider's end.
_STOPPED = "cancelled"


def partial_message(items: Iterable[object]) -> Message | None:
    """The `Message` of what arrived before a stream failed, or None when no delta did.

    What a `StreamError` carries as `partial`. `items` are what a stage of
    the pipeline saw, in order; what is not a delta is left out. The deltas
    are accumulated as `MessageAccumulator` does, and a choice that began and
    never finished ends as a stop ends it (`rs.stop_on`): a tool call cut in
    its arguments is kept with `complete=False`, one whose arguments are
    already a whole JSON object stays complete; its `finish_reason` stays
    None, as nothing finished it. With several choices it is the first
    choice's message.

    >>> from rxstream.models import TextDelta, ToolCallDelta
    >>> partial_message([TextDelta("Hel"), ToolCallDelta(0, '{"q": ', id="c1", name="f")])
    Message(choice=0, role='assistant', content='Hel', ...)
    >>> partial_message(["a line"]) is None
    True
    """
    deltas: list[Delta] = []
    for item in items:
        if type(item) is StreamEntry:  # `decode("rxstream", ids=True)`: the item under its id
            item = item.item
        if isinstance(item, DELTA_CLASSES):
            deltas.append(item)
    accumulator = MessageAccumulator()
    accumulator.feed_all(deltas, [])
    return accumulator.partial()


def keep_partial(error: BaseException, items: Iterable[object]) -> None:
    """Give `error` the partial `Message` of `items`, unless it has one or is no `StreamError`.

    An error that already carries a partial keeps it: the stage that set it
    stood nearer the decoder and saw at least as much.
    """
    if isinstance(error, StreamError) and error.partial is None:
        error.partial = partial_message(items)


def keep_partial_of(error: BaseException, accumulator: MessageAccumulator) -> None:
    """`keep_partial` with what `accumulator` holds (`MessageAccumulator.partial`; it ends it)."""
    if isinstance(error, StreamError) and error.partial is None:
        error.partial = accumulator.partial()


#: What `Arrived` keeps: the deltas, and items stored under an id (which may be deltas).
_KEPT = frozenset((*DELTA_CLASSES, StreamEntry))


class Arrived:
    """The deltas that passed a stage which makes errors of its own (a timeout, an overflow).

    `see(item)` keeps an item when it is a delta (one set lookup and an
    append; other items, lines or frames, are not kept); `keep_partial(error)`
    gives an error the partial `Message` of them, built then.

    >>> arrived = Arrived()
    >>> arrived.see("a line"); arrived.see(TextDelta("Hi"))
    >>> error = StreamError("cut")
    >>> arrived.keep_partial(error).partial.content
    'Hi'
    """

    __slots__ = ("items",)

    def __init__(self) -> None:
        self.items: list[object] = []

    def see(self, item: object) -> None:
        """Keep `item` if it is a delta."""
        if type(item) in _KEPT:
            self.items.append(item)

    def keep_partial(self, error: BaseException) -> BaseException:
        """`keep_partial(error, what arrived)`; returns `error`."""
        keep_partial(error, self.items)
        return error

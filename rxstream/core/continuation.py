"""Continue an answer that broke off after its output began: the partial, the request, the overlap.

Input: the partial `Message` of an answer that broke off (what the consumer
was shown), the conversation it answered, and then the deltas of a new
attempt asked to continue it. Output: the partial trimmed to what can be sent
back (`trim_partial`), the messages of the continuation request for a dialect
(`continuation_messages`), and the new attempt's deltas with what repeats the
partial left out (`OverlapTrimmer` for one text, `ContinuationTrimmer` for a
delta stream), so that the partial followed by the output is one answer.

Rules (written once here; docs/concepts/continuation.md shows them):

- a tool call cut inside its arguments (arguments that are not yet one whole
  JSON object, or a call marked `complete=False`) is dropped: arguments are
  never spliced; text, reasoning and finished calls are kept;
- signed reasoning (`ReasoningState`: Anthropic and Bedrock thinking
  signatures, Gemini thought signatures, Responses reasoning items) is kept
  when the continuation goes to the dialect the partial came from, and
  dropped for another, where the signature cannot be checked; the reasoning
  text stays (each request renderer sends it where its API takes unsigned
  reasoning, and leaves it out where it does not);
- a server-side tool call whose result never came is dropped (no API takes
  one back without it);
- the continuation request: where the provider continues a final assistant
  message (`"anthropic"`, `"ollama"`), the partial's text is that message
  (Anthropic's without trailing whitespace, which its API refuses there);
  elsewhere, and whenever the partial holds reasoning or finished tool calls
  (which a prefill cannot carry), the partial is the assistant's turn and a
  user turn asks to continue (finished calls are named in that instruction,
  not sent as calls: every API wants a call's result right after it);
- the overlap: a model asked to continue often repeats the end of what it
  wrote, or starts again. The longest suffix of the partial text (within a
  bounded window) that the new text starts with is left out, decided as soon
  as the new text rules out every longer suffix (or the window is passed);
  the rest passes through unchanged.

Pure: no I/O, no clocks.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from ..models import (
    Delta,
    EmptyCitations,
    Finish,
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
    TextBlock,
    TextBlockStart,
    TextDelta,
    ToolCall,
    ToolCallDelta,
)
from ._machine import FAILED, OPEN, MachineBase, only_deltas
from .tools import whole_object

__all__ = [
    "CONTINUE_INSTRUCTION",
    "DEFAULT_WINDOW",
    "PREFILL_DIALECTS",
    "ContinuationTrimmer",
    "OverlapTrimmer",
    "continuation_messages",
    "replay",
    "trim_partial",
]

#: How many characters at the end of the partial text a repeat is looked for in.
DEFAULT_WINDOW = 2048

#: The dialects whose API continues a final assistant message (a prefill).
PREFILL_DIALECTS = frozenset({"anthropic", "ollama"})

#: The user turn that asks a model without a prefill to go on.
CONTINUE_INSTRUCTION = (
    "Your previous answer was cut off. Continue it from exactly where it stopped, "
    "without repeating what you already wrote and without any preamble."
)


def _whole_arguments(call: ToolCall) -> bool:
    """Whether a call's arguments are finished: one whole JSON object."""
    return call.complete and whole_object(call.arguments)


def trim_partial(
    message: Message, *, source: str | None = None, target: str | None = None
) -> Message:
    """The partial answer made safe to send back (see the module's rules).

    Args:
        message: the partial `Message` (e.g. a `StreamError`'s `partial`).
        source: the dialect it came from; `target`: the dialect it goes to.
            Signed reasoning is kept when they are the same (or either is
            None), dropped otherwise.

    Returns:
        A `Message` with the cut tool calls (and unanswered server-side
        calls) left out, everywhere they appear (`tool_calls`, `blocks`), no
        `finish_reason` (the answer has not ended) and, for another dialect,
        no reasoning state.

    >>> cut = Message(content="Let me look.", tool_calls=(
    ...     ToolCall(0, "a", "f", '{"q": 1}'), ToolCall(1, "b", "f", '{"q"')))
    >>> [c.id for c in trim_partial(cut).tool_calls]
    ['a']
    """
    keep_state = source is None or target is None or source == target
    cut = {call.index for call in message.tool_calls if not _whole_arguments(call)}
    calls = tuple(call for call in message.tool_calls if call.index not in cut)
    answered = {r.call_id for r in message.server_tools if isinstance(r, ServerToolResult)}
    server = tuple(
        t for t in message.server_tools if isinstance(t, ServerToolResult) or t.id in answered
    )
    blocks = tuple(
        b
        for b in (_block(b, keep_state) for b in message.blocks)
        if b is not None
        and not (isinstance(b, ToolCall) and b.index in cut)
        and not (isinstance(b, ServerToolCall) and b.id not in answered)
    )
    return replace(
        message,
        tool_calls=calls,
        finish_reason=None,
        finish_raw=None,
        server_tools=server,
        reasoning_state=message.reasoning_state if keep_state else (),
        blocks=blocks,
    )


def _block(block: MessageBlock, keep_state: bool) -> MessageBlock | None:
    if keep_state:
        return block
    if isinstance(block, ReasoningState):
        return None
    if isinstance(block, ReasoningBlock) and block.state is not None:
        return ReasoningBlock(block.text)
    return block


def continuation_messages(
    dialect: str,
    messages: Sequence[Mapping[str, Any] | Message],
    partial: Message,
    *,
    source: str | None = None,
    instruction: str = CONTINUE_INSTRUCTION,
) -> list[Mapping[str, Any] | Message]:
    """The messages that ask `dialect`'s provider to continue `partial` (for `rs.request`).

    Args:
        dialect: the dialect the continuation request is sent in.
        messages: the conversation the partial answered.
        partial: the partial answer (trimmed here by `trim_partial`).
        source: the dialect the partial came from (default: `dialect`).
        instruction: the user turn that asks to go on, where one is needed.

    Returns:
        `messages` followed by the partial as the assistant's turn: alone
        where the provider continues it (see `PREFILL_DIALECTS`), else with
        `instruction` as a user turn after it. A partial with nothing to send
        back gives `messages` as they are (the request is asked again).

    >>> continuation_messages("anthropic", [{"role": "user", "content": "Hi"}],
    ...                       Message(content="Hello! How "))[-1]
    {'role': 'assistant', 'content': 'Hello! How'}
    >>> continuation_messages("openai-chat", [], Message(content="Hello"))[-1]["role"]
    'user'
    """
    trimmed = trim_partial(partial, source=source or dialect, target=dialect)
    out: list[Mapping[str, Any] | Message] = list(messages)
    text = trimmed.content
    plain = not trimmed.tool_calls and not trimmed.reasoning and not trimmed.reasoning_state
    if dialect in PREFILL_DIALECTS and plain and not trimmed.refusal:
        if dialect == "anthropic":
            text = text.rstrip()  # the API refuses a final assistant turn ending in whitespace
        if text.strip():
            out.append({"role": "assistant", "content": text})
        return out
    if not text and not trimmed.tool_calls and not trimmed.reasoning_state:
        return out  # nothing a provider could take back: ask again
    turn = replace(
        trimmed,
        tool_calls=(),
        blocks=tuple(b for b in trimmed.blocks if not isinstance(b, ToolCall)),
    )
    if text or turn.reasoning_state:
        out.append(turn)
    out.append({"role": "user", "content": _instruction(instruction, trimmed.tool_calls)})
    return out


def _instruction(instruction: str, calls: Iterable[ToolCall]) -> str:
    made = [f"{call.name}({call.arguments})" for call in calls]
    if not made:
        return instruction
    return (
        f"{instruction} You had already requested these tool calls; do not request them "
        f"again: {'; '.join(made)}."
    )


def replay(message: Message) -> list[Delta]:
    """The deltas that rebuild `message` (its blocks in order, then citations and metadata).

    A text block of its own with a citations list (Anthropic's) is followed
    by its citations (or an `EmptyCitations` when the list is empty), so it
    stays a block of its own; a text block right after one without such a
    list starts with a `TextBlockStart`, so the two stay apart; the other
    citations come after the blocks.

    What a consumer is sent after a `Reset` to be shown the trimmed partial
    again (when the partial it saw held a call cut in its arguments, which no
    continuation can take back). `rs.accumulate_message()` over them gives
    `message` back (its `finish_reason` and `usage` only if it has them).

    >>> replay(Message(content="Hi"))
    [TextDelta(text='Hi', choice=0)]
    """
    n = message.choice
    out: list[Delta] = []
    blocks = message.blocks or _blocks_of(message)
    rest = list(message.citations)  # those no text block carries: after the blocks
    chars = 0
    after_text = False  # the block before was text that the next text would run into
    for block in blocks:
        match block:
            case TextBlock(text=text, citations=cited):
                start, chars = chars, chars + len(text)
                if after_text:
                    out.append(TextBlockStart(n))
                after_text = cited is None and bool(text)
                if text:
                    out.append(TextDelta(text, n))
                if cited:  # a block of its own: its citations right after it, as they came
                    out.extend(cited)
                    for citation in cited:
                        if citation in rest:
                            rest.remove(citation)
                elif cited is not None and text:
                    out.append(EmptyCitations(start, chars, n))
            case ReasoningBlock(text=text, state=state):
                after_text = False
                if text:
                    out.append(ReasoningDelta(text, n))
                if state is not None:
                    out.append(state)
            case ToolCall():
                after_text = False
                out.append(ToolCallDelta(block.index, block.arguments, block.id, block.name, n))
            case ServerToolCall() | ServerToolResult() | ReasoningState():
                after_text = False
                out.append(block)
    if message.refusal:
        out.append(RefusalDelta(message.refusal, n))
    out.extend(rest)
    if message.metadata:
        out.append(Metadata(message.metadata, n))
    if message.finish_reason is not None:
        out.append(Finish(message.finish_reason, n, message.finish_raw))
    if message.usage is not None:
        out.append(message.usage)
    return out


def _blocks_of(message: Message) -> tuple[MessageBlock, ...]:
    """A hand-built message's blocks: reasoning, text, calls (as `rs.request` sends it)."""
    blocks: list[MessageBlock] = []
    if message.reasoning:
        blocks.append(ReasoningBlock(message.reasoning))
    blocks.extend(message.reasoning_state)
    if message.content:
        blocks.append(TextBlock(message.content))
    blocks.extend(message.tool_calls)
    return tuple(blocks)


class OverlapTrimmer(MachineBase):
    """Leave out of a new text the start that repeats the end of a partial text.

    Fed the new attempt's text piece by piece, it holds the start back while
    it could still be a repeat of a suffix of `partial` (the last `window`
    characters), then gives the new text without the longest such suffix,
    and passes everything after that through as it comes.

    The held text is still a possible repeat while it occurs in the tail with
    room after it (a longer suffix could still begin with it); once it does
    not, no longer repeat can come, and the longest suffix of the tail that
    the held text begins with is the overlap. Each piece costs one substring
    search of the tail, so the work is bounded by the window per piece, and at
    most `window` characters are ever held back.

    Args:
        partial: the text the consumer was already shown.
        window: how many characters at the end of `partial` a repeat may
            start in (a longer repeat is kept).
        min_overlap: the shortest repeat left out (a shorter match is taken
            as the new text's own start).

    Returns: from `feed`, the pieces that are sure to be new (possibly none);
    from `close()`, what was still held back once the new text ended.

    Raises:
        TypeError: a piece that is not a `str`.
        ValueError: `window` or `min_overlap` below 1.
        RuntimeError: `feed` after `close()` or after an error.

    >>> t = OverlapTrimmer("The cat sat on")
    >>> t.feed(" sat o") + t.feed("n the mat.") + t.close()
    [' the mat.']
    """

    __slots__ = ("_decided", "_held", "_min", "_tail", "overlap")

    operator = "OverlapTrimmer"

    def __init__(self, partial: str, *, window: int = DEFAULT_WINDOW, min_overlap: int = 1) -> None:
        super().__init__()
        if not isinstance(partial, str):
            raise TypeError(f"partial must be a str, got {type(partial).__name__}")
        if window < 1 or min_overlap < 1:
            raise ValueError(f"window and min_overlap must be >= 1, got {window}, {min_overlap}")
        self._tail = partial[-window:]
        self._min = min_overlap
        self._held = ""  # the new text so far, while undecided
        self._decided = False
        #: The number of characters left out (known once decided).
        self.overlap = 0

    @property
    def decided(self) -> bool:
        """True once the overlap is known (everything fed since passes through)."""
        return self._decided

    @property
    def holding(self) -> bool:
        """True while some new text is held back, undecided."""
        return bool(self._held)

    def feed(self, piece: str) -> list[str]:
        """Take a piece of the new text; return what is sure to be new."""
        if self._state is not OPEN:
            self._refuse()
        if not isinstance(piece, str):
            self._state = FAILED
            raise TypeError(f"OverlapTrimmer takes str pieces, got {type(piece).__name__}")
        if self._decided:
            return [piece] if piece else []
        if not piece:
            return []
        held = self._held = self._held + piece
        tail = self._tail
        # A longer suffix may still begin with the held text: wait for more.
        if tail.find(held, 0, len(tail) - 1) >= 0:
            return []
        return self.settle()

    def close(self) -> list[str]:
        """End the new text: what was held back, without the overlap found."""
        self._closing()
        return self.settle()

    def settle(self) -> list[str]:
        """Decide now, on the text held so far: return it without the overlap found.

        For a caller that knows the new text stopped repeating (another kind
        of delta came); what is fed afterwards passes through.
        """
        if self._decided:
            return []
        self._decided = True
        held, tail = self._held, self._tail
        self._held = ""
        longest = next(
            (n for n in range(min(len(held), len(tail)), 0, -1) if held.startswith(tail[-n:])),
            0,
        )
        self.overlap = longest if longest >= self._min else 0
        rest = held[self.overlap :]
        return [rest] if rest else []


class ContinuationTrimmer(MachineBase):
    """The deltas of a continuing attempt, made to follow `partial` as one answer.

    Text and reasoning of choice 0 go through an `OverlapTrimmer` seeded with
    the partial's text and reasoning; the new attempt's tool calls are
    numbered after the partial's (so `rs.accumulate_message()` over the
    partial's deltas and these keeps both); everything else passes. Text held
    back while the overlap is open is released before any other delta of
    choice 0.

    If the partial holds a tool call cut in its arguments, the consumer has
    seen fragments no continuation can take back: the output then opens with
    `Reset(attempt, reason)` and the `replay` of the trimmed partial, and
    the continuation follows it.

    Args:
        partial: the partial answer the consumer was shown (untrimmed).
        attempt: the attempt number this continuation is (for the `Reset`).
        reason: why the previous attempt ended (for the `Reset`).
        window: see `OverlapTrimmer`.

    >>> t = ContinuationTrimmer(Message(content="Hello wor"))
    >>> t.feed(TextDelta("world!")) + t.close()
    [TextDelta(text='ld!', choice=0)]
    """

    __slots__ = ("_calls", "_head", "_reasoning", "_text")

    operator = "rs.continue_from()"

    def __init__(
        self,
        partial: Message,
        *,
        attempt: int = 2,
        reason: str = "",
        window: int = DEFAULT_WINDOW,
    ) -> None:
        super().__init__()
        if not isinstance(partial, Message):
            raise TypeError(f"partial must be an rs.Message, got {type(partial).__name__}")
        trimmed = trim_partial(partial)
        self._head: list[Delta] = []
        if len(trimmed.tool_calls) != len(partial.tool_calls):
            self._head = [Reset(attempt, reason), *replay(replace(trimmed, usage=None))]
            partial = trimmed
        self._text = OverlapTrimmer(partial.content, window=window)
        self._reasoning = OverlapTrimmer(partial.reasoning, window=window)
        self._calls = 1 + max((c.index for c in partial.tool_calls), default=-1)

    def feed(self, item: Delta) -> list[Delta]:
        """Take one delta of the new attempt; return the deltas to emit."""
        if self._state is not OPEN:
            self._refuse()
        out, self._head = self._head, []
        try:
            for delta in only_deltas(item, self.operator):
                self._take(delta, out)
        except BaseException:
            self._state = FAILED
            raise
        return out

    def close(self) -> list[Delta]:
        """End the new attempt: the text still held back."""
        self._closing()
        out, self._head = self._head, []
        self._release(self._reasoning, ReasoningDelta, out)
        self._release(self._text, TextDelta, out)
        return out

    def _take(self, delta: Delta, out: list[Delta]) -> None:
        if delta.choice != 0:
            out.append(delta)
            return
        if type(delta) is TextDelta:
            self._release(self._reasoning, ReasoningDelta, out)
            out.extend(TextDelta(t) for t in self._text.feed(delta.text))
            return
        if type(delta) is ReasoningDelta:
            self._release(self._text, TextDelta, out)
            out.extend(ReasoningDelta(t) for t in self._reasoning.feed(delta.text))
            return
        self._release(self._reasoning, ReasoningDelta, out)
        self._release(self._text, TextDelta, out)
        if type(delta) is ToolCallDelta and delta.index is not None and self._calls:
            delta = replace(delta, index=delta.index + self._calls)
        out.append(delta)

    @staticmethod
    def _release(
        trimmer: OverlapTrimmer, kind: type[TextDelta] | type[ReasoningDelta], out: list[Delta]
    ) -> None:
        """Another delta came: the text `trimmer` holds stopped repeating; it goes out.

        A trimmer that holds nothing yet stays open (metadata, a usage or a
        reasoning state before the text does not end a repeat not begun).
        """
        if trimmer.holding:
            out.extend(kind(t) for t in trimmer.settle())

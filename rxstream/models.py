"""The items that flow through a pipeline: frozen, slotted dataclasses.

Stages and their items:

- lines: plain `str`
- `sse_frames`: `SSEFrame`
- `decode_chunks`: `ChatChunk` (the decoded JSON kept whole as `.raw`)
- `deltas` / `decode`: `Delta` = `TextDelta | ReasoningDelta | RefusalDelta |
  ToolCallDelta | Finish | Usage`, and the items some providers add:
  `Citation`, `ServerToolCall`, `ServerToolResult`, `ReasoningState`, `Metadata`,
  and `Reset` (a new answer replaces the one shown so far)
- `eventstream_frames`: `EventStreamMessage` (AWS binary event stream)
- accumulators: `ToolCall`, `Message`, `TokenCount`
- runs (`rs.run`): `RunItem` = `StepStart | StepEnd | ToolResult |
  ApprovalRequest | ApprovalResponse | RunEnd`, between the steps' deltas
- pricing (`rs.cost`): `Cost`

A delta carries only the new piece; accumulators keep the totals. Every item
compares by value, so plain asserts and marble comparisons work.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from decimal import Decimal
from enum import StrEnum
from typing import Any, Generic, Literal, TypeAlias, TypeVar

from .errors import ToolArgumentsError

__all__ = [
    "DELTA_CLASSES",
    "JSON",
    "RUN_ITEM_CLASSES",
    "ApprovalRequest",
    "ApprovalResponse",
    "ChatChunk",
    "Citation",
    "Cost",
    "Delta",
    "DeltaType",
    "EmptyCitations",
    "EventStreamMessage",
    "Finish",
    "JSONObject",
    "JSONPatch",
    "Message",
    "MessageBlock",
    "Metadata",
    "Output",
    "Partial",
    "ReasoningBlock",
    "ReasoningDelta",
    "ReasoningState",
    "RefusalDelta",
    "Reset",
    "RunEnd",
    "RunItem",
    "SSEFrame",
    "ServerToolCall",
    "ServerToolResult",
    "StepEnd",
    "StepStart",
    "StreamEntry",
    "TextBlock",
    "TextBlockStart",
    "TextDelta",
    "TokenCount",
    "Tool",
    "ToolCall",
    "ToolCallDelta",
    "ToolResult",
    "Usage",
]

#: A decoded JSON value. `Any` appears in rxstream only behind these aliases.
JSON: TypeAlias = Any
#: A decoded JSON object.
JSONObject: TypeAlias = dict[str, Any]


@dataclass(frozen=True, slots=True)
class SSEFrame:
    """One dispatched server-sent event.

    Attributes:
        data: the event's data lines joined with "\\n".
        event: the event type (`"message"` when the stream gave none).
        id: the last event id seen so far in the stream (it persists), or None.
        retry: the reconnection time in milliseconds last set by the stream, or None.
    """

    data: str
    event: str = "message"
    id: str | None = None
    retry: int | None = None


@dataclass(frozen=True, slots=True)
class EventStreamMessage:
    """One message of an AWS event stream (`application/vnd.amazon.eventstream`).

    Attributes:
        headers: the message's headers by name, with their typed values:
            strings as `str`, byte arrays and UUIDs as `bytes`, booleans as
            `bool`, integers and timestamps (milliseconds) as `int`. Bedrock
            says what a message is in `:message-type` (`"event"` or
            `"exception"`), `:event-type` / `:exception-type` and
            `:content-type`.
        payload: the message's payload (for Bedrock, a JSON object).
    """

    headers: dict[str, str | bytes | int | bool]
    payload: bytes


@dataclass(frozen=True, slots=True)
class StreamEntry:
    """An item with the id it has in a durable log (a Redis Stream entry id).

    `rs.from_redis_stream(..., ids=True)` emits these, and `rs.to_sse` writes
    `id` as the SSE event id, so a browser that reconnects with
    `Last-Event-ID` resumes right after the last item it saw.

    Attributes:
        id: the entry id (Redis: `"<milliseconds>-<sequence>"`).
        item: the pipeline item stored under it.
    """

    id: str
    item: JSON


@dataclass(frozen=True, slots=True)
class ChatChunk:
    """One `chat.completion.chunk` object, decoded.

    The whole decoded JSON stays in `.raw`, so provider extras (`x_groq`,
    `obfuscation`, `prompt_filter_results`, ...) are never lost; the properties
    read the common fields from it.
    """

    raw: JSONObject

    @property
    def id(self) -> str | None:
        """The completion id (providers may send `""`)."""
        value = self.raw.get("id")
        return value if isinstance(value, str) else None

    @property
    def model(self) -> str | None:
        """The model name, if the chunk carries one."""
        value = self.raw.get("model")
        return value if isinstance(value, str) else None

    @property
    def choices(self) -> list[JSONObject]:
        """The chunk's choice objects (possibly empty, e.g. a usage chunk)."""
        value = self.raw.get("choices")
        return [c for c in value if isinstance(c, dict)] if isinstance(value, list) else []

    @property
    def usage(self) -> JSONObject | None:
        """The raw `usage` object, if present and not null."""
        value = self.raw.get("usage")
        return value if isinstance(value, dict) else None


class DeltaType(StrEnum):
    """The kind of a delta; the values are the lower-case names."""

    TEXT = "text"
    REASONING = "reasoning"
    REFUSAL = "refusal"
    TOOL_CALL = "tool_call"
    FINISH = "finish"
    USAGE = "usage"
    CITATION = "citation"
    EMPTY_CITATIONS = "empty_citations"
    TEXT_BLOCK_START = "text_block_start"
    SERVER_TOOL_CALL = "server_tool_call"
    SERVER_TOOL_RESULT = "server_tool_result"
    REASONING_STATE = "reasoning_state"
    METADATA = "metadata"
    RESET = "reset"


@dataclass(frozen=True, slots=True)
class TextDelta:
    """A new piece of the assistant's visible text."""

    text: str
    choice: int = 0

    @property
    def type(self) -> DeltaType:
        return DeltaType.TEXT


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    """A new piece of the model's reasoning (thinking) text."""

    text: str
    choice: int = 0

    @property
    def type(self) -> DeltaType:
        return DeltaType.REASONING


@dataclass(frozen=True, slots=True)
class RefusalDelta:
    """A new piece of a refusal message."""

    text: str
    choice: int = 0

    @property
    def type(self) -> DeltaType:
        return DeltaType.REFUSAL


@dataclass(frozen=True, slots=True)
class ToolCallDelta:
    """A fragment of a tool call, as it arrived.

    `id` and `name` are set on the fragments that carry them (usually the
    first); `arguments` is the new piece of the arguments text. `index` is the
    call's position in the choice's `tool_calls` (None when the provider sent
    none, as Mistral does).
    """

    index: int | None
    arguments: str = ""
    id: str | None = None
    name: str | None = None
    choice: int = 0

    @property
    def type(self) -> DeltaType:
        return DeltaType.TOOL_CALL


@dataclass(frozen=True, slots=True)
class Finish:
    """A choice finished.

    Attributes:
        reason: the normalised reason: `"stop"`, `"length"`, `"tool_calls"`,
            `"content_filter"`, or the provider's own word when none of these
            fits (Anthropic's `"pause_turn"`, ...). A stream that
            ends by asking for client tool calls says `"tool_calls"` in every
            dialect. `"cancelled"` is rxstream's own: the client stopped the
            stream on purpose (`rs.stop_on`, `Multicast.stop()`) before this
            choice finished; `raw` is then None.
        choice: the choice that finished.
        raw: what the provider sent (`"end_turn"`, `"MAX_TOKENS"`, `"stop"`,
            ...), or None. Not part of equality: `Finish("stop")` equals the
            finish of any stream that stopped normally.
    """

    reason: str
    choice: int = 0
    raw: str | None = field(default=None, compare=False)

    @property
    def type(self) -> DeltaType:
        return DeltaType.FINISH


@dataclass(frozen=True, slots=True)
class Usage:
    """The provider's token usage for the request (shared by all choices).

    The counts mean the same in every dialect (the rule each decoder follows,
    spelled out on the Dialects page):

    Attributes:
        prompt_tokens: every input token, cached ones and cache writes included
            (Anthropic: input + cache creation + cache read; Bedrock: input +
            cache read + cache write).
        completion_tokens: every output token, reasoning included (Gemini:
            candidates + thoughts).
        total_tokens: as the provider says, else prompt + completion.
        reasoning_tokens: output tokens spent on reasoning, where the provider says.
        cached_tokens: input tokens read from a cache, where the provider says.
        choice: always 0 (usage belongs to the whole request).
        raw: the provider's own usage object, or None. Not part of equality.
        cache_write_tokens: input tokens written to a cache (Anthropic's cache
            creation), where the provider says.
        estimated: True when the counts are rxstream's estimate (an attempt or a
            step that died before its provider reported usage), not the provider's.

    Usages add up field by field (`a + b`, and `sum(usages)`): a count that
    neither side knows stays None, `estimated` holds if either side is, and
    the sum has no `raw`.

    >>> total = Usage(10, 2, 12, cached_tokens=4) + Usage(5, 1, 6, estimated=True)
    >>> total.prompt_tokens, total.cached_tokens, total.reasoning_tokens, total.estimated
    (15, 4, None, True)
    """

    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    reasoning_tokens: int | None = None
    cached_tokens: int | None = None
    choice: int = 0
    raw: JSONObject | None = field(default=None, compare=False)
    cache_write_tokens: int | None = None
    estimated: bool = False

    @property
    def type(self) -> DeltaType:
        return DeltaType.USAGE

    def __add__(self, other: Usage) -> Usage:
        if not isinstance(other, Usage):
            return NotImplemented
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.total_tokens + other.total_tokens,
            _add_known(self.reasoning_tokens, other.reasoning_tokens),
            _add_known(self.cached_tokens, other.cached_tokens),
            cache_write_tokens=_add_known(self.cache_write_tokens, other.cache_write_tokens),
            estimated=self.estimated or other.estimated,
        )

    def __radd__(self, other: object) -> Usage:
        # `sum(usages)` starts from 0.
        if other == 0:
            return self
        return NotImplemented


def _add_known(a: int | None, b: int | None) -> int | None:
    """The sum of two counts, None only when neither is known."""
    if a is None:
        return b
    return a if b is None else a + b


@dataclass(frozen=True, slots=True)
class Cost:
    """What a usage cost, in the price list's currency, as exact decimals.

    Attributes:
        total: everything (input, output, and any fee per request).
        input: every input token: uncached, cache reads and cache writes.
        output: every output token, reasoning included.
        cache_read: the part of `input` spent on tokens read from a cache.
        cache_write: the part of `input` spent on tokens written to a cache.
        currency: `"USD"` (genai-prices' only currency).
        estimated: True when a usage priced was rxstream's estimate (`Usage.estimated`).
        model: the price list's id of the model priced; None for a sum over several.
        provider: the price list's id of the provider; None for a sum over several.

    Costs add up (`a + b`, `sum(costs)`), part by part.
    """

    total: Decimal
    input: Decimal
    output: Decimal
    cache_read: Decimal = Decimal(0)
    cache_write: Decimal = Decimal(0)
    currency: str = "USD"
    estimated: bool = False
    model: str | None = None
    provider: str | None = None

    def __add__(self, other: Cost) -> Cost:
        if not isinstance(other, Cost):
            return NotImplemented
        if other.currency != self.currency:
            raise ValueError(f"cannot add a cost in {other.currency} to one in {self.currency}")
        return Cost(
            self.total + other.total,
            self.input + other.input,
            self.output + other.output,
            self.cache_read + other.cache_read,
            self.cache_write + other.cache_write,
            self.currency,
            self.estimated or other.estimated,
            self.model if self.model == other.model else None,
            self.provider if self.provider == other.provider else None,
        )

    def __radd__(self, other: object) -> Cost:
        # `sum(costs)` starts from 0.
        if other == 0:
            return self
        return NotImplemented


@dataclass(frozen=True, slots=True)
class Citation:
    """A source the answer cites: a citation, an annotation, or grounding.

    OpenAI `url_citation` annotations (chat and Responses), Anthropic
    `citations_delta`, Gemini `groundingMetadata` / `citationMetadata`, Cohere
    `citation-start`, Bedrock `citation` deltas. The common fields are read
    where the provider has them; `raw` keeps the provider's whole object.

    Attributes:
        kind: the provider's type for it (`"url_citation"`,
            `"web_search_result_location"`, `"grounding"`, ...).
        url: the cited address, if any.
        title: the cited document's title, if any.
        text: the cited text (or the answer text it supports), if any.
        start, end: character offsets into the answer's text, if the
            provider gives them.
        choice: the choice it belongs to.
        raw: the provider's object, as sent.
        whole_block: True when the provider attached it to a block of text of
            its own, the answer's text from `start` to `end` (Anthropic's text
            blocks with `citations`, Bedrock's text content blocks with
            `citation` deltas): `Message.blocks` then keeps that text as
            a `TextBlock` of its own carrying it, so the turn goes back block
            by block. Not part of equality.
    """

    kind: str
    url: str | None = None
    title: str | None = None
    text: str | None = None
    start: int | None = None
    end: int | None = None
    choice: int = 0
    raw: JSONObject | None = field(default=None, compare=False)
    whole_block: bool = field(default=False, compare=False)

    @property
    def type(self) -> DeltaType:
        return DeltaType.CITATION


@dataclass(frozen=True, slots=True)
class EmptyCitations:
    """A text block that came with a `citations` list which stayed empty.

    Anthropic starts a text block it may cite with `"citations": []`; a block
    whose list received no `citations_delta` says so only by that key. This
    delta, given when such a block ends, keeps it what it was: the answer's
    text from `start` to `end` is a block of its own (`TextBlock` whose
    `citations` is `()`), and goes back with `"citations": []` as the
    anthropic SDK sends its final message. A block whose list got citations
    needs none: its `Citation`s (`whole_block`) say the same.

    Attributes:
        start, end: the block's character offsets into the answer's text.
        choice: the choice it belongs to.
        raw: the block's start as the provider sent it.
    """

    start: int
    end: int
    choice: int = 0
    raw: JSONObject | None = field(default=None, compare=False)

    @property
    def type(self) -> DeltaType:
        return DeltaType.EMPTY_CITATIONS


@dataclass(frozen=True, slots=True)
class TextBlockStart:
    """The text that follows starts a text block of its own: it does not join the text before it.

    Adjacent `TextDelta`s are one run of text; a provider that sends two text
    blocks one after the other (two Anthropic `text` content blocks, two
    Bedrock text content blocks, two Responses `message` items) means two. A
    decoder gives this delta where such a block starts right after a text
    block whose text would otherwise run into it (only there: a block after
    a tool call, reasoning, or a cited block is apart already). It carries
    no text: a consumer of the text alone (a UI, `count_tokens`) sees the
    same characters. `accumulate_message` starts a new `TextBlock` at it, so
    the turn goes back block by block as the provider's SDK sends it;
    renderers close the open text block (part, item) at it.

    Attributes:
        choice: the choice it belongs to.
        raw: the block's start as the provider sent it, when it sent one.

    >>> TextBlockStart().type
    <DeltaType.TEXT_BLOCK_START: 'text_block_start'>
    """

    choice: int = 0
    raw: JSONObject | None = field(default=None, compare=False)

    @property
    def type(self) -> DeltaType:
        return DeltaType.TEXT_BLOCK_START


@dataclass(frozen=True, slots=True)
class ServerToolCall:
    """A tool the provider ran on its own side (never the client's to answer).

    Anthropic `server_tool_use` (web search, code execution, ...), OpenAI
    Responses `web_search_call` / `file_search_call` / `code_interpreter_call`
    and the like, Gemini `executableCode`. Arrives whole, once the provider
    has sent all of it.

    Attributes:
        id: the provider's id for the call, if any.
        name: the tool (`"web_search"`, `"code_execution"`, ...).
        input: its input as the provider sent it (decoded JSON).
        choice: the choice it belongs to.
        raw: the provider's object, as sent.
    """

    id: str | None
    name: str
    input: JSON = None
    choice: int = 0
    raw: JSONObject | None = field(default=None, compare=False)

    @property
    def type(self) -> DeltaType:
        return DeltaType.SERVER_TOOL_CALL


@dataclass(frozen=True, slots=True)
class ServerToolResult:
    """The result of a tool the provider ran (Anthropic `web_search_tool_result`,
    Gemini `codeExecutionResult`, ...).

    Attributes:
        call_id: the id of the `ServerToolCall` it answers, if known.
        name: the tool or result kind.
        content: the result as the provider sent it (decoded JSON).
        choice: the choice it belongs to.
        raw: the provider's object, as sent.
    """

    call_id: str | None
    name: str
    content: JSON = None
    choice: int = 0
    raw: JSONObject | None = field(default=None, compare=False)

    @property
    def type(self) -> DeltaType:
        return DeltaType.SERVER_TOOL_RESULT


@dataclass(frozen=True, slots=True)
class ReasoningState:
    """Opaque reasoning state the provider needs sent back on the next turn.

    Kinds (`kind`), by dialect:

    - `"thinking"` (Anthropic, Bedrock): a thinking block's `signature` in
      `data`, with the block's whole thinking text in `text`;
    - `"redacted_thinking"` (Anthropic, Bedrock): the encrypted block in `data`;
    - `"compaction"` (Anthropic, OpenAI Responses): the provider's summary of
      the earlier turns in `data` (Anthropic's text, Responses' encrypted
      content), sent back in place of those turns;
    - `"thought_signature"` (Gemini): a part's `thoughtSignature` in `data`;
      `index` is the tool call it rode on (None for a text or thought part);
    - `"reasoning_item"` (OpenAI Responses): a reasoning output item, its id in
      `id` and its `encrypted_content` (when requested) in `data`.

    `raw` is the provider's object to send back as it is (the Anthropic
    content block, the Responses output item, the Gemini part).

    Attributes:
        kind: see above.
        data: the opaque value ("" when the provider sent none).
        text: the reasoning text it covers, where that matters ("" otherwise).
        id: the provider's id for it, if any.
        index: the tool call it belongs to, if any.
        choice: the choice it belongs to.
        raw: the provider's object, as sent.
    """

    kind: str
    data: str = ""
    text: str = ""
    id: str | None = None
    index: int | None = None
    choice: int = 0
    raw: JSONObject | None = field(default=None, compare=False)

    @property
    def type(self) -> DeltaType:
        return DeltaType.REASONING_STATE


@dataclass(frozen=True, slots=True)
class Metadata:
    """What the provider said beyond the content: response id and model, stop
    sequence, logprobs, safety ratings, prompt feedback, vendor extras, and
    events of types rxstream does not know (under `"events"`).

    `MessageAccumulator` merges every `Metadata` of a choice into
    `Message.metadata`: a list value extends the list already there (logprobs
    arrive piece by piece), any other value replaces it.

    Attributes:
        data: the keys and values, as JSON.
        choice: the choice it belongs to.
    """

    data: JSONObject
    choice: int = 0

    @property
    def type(self) -> DeltaType:
        return DeltaType.METADATA


@dataclass(frozen=True, slots=True)
class Reset:
    """Drop what was shown of this answer: a new answer follows.

    A stream that failed after its output began and was asked again from the
    start (a retry's `after_output="restart"`) says so with this item, between
    the dropped answer's last delta and the new answer's first. It concerns the
    whole answer (every choice). The accumulators start again at it
    (`rs.accumulate_message()` gives the new answer's `Message` alone), and the
    renderers send it where their format can (the `"rxstream"` format's
    `reset` event, a `data-rxstream-reset` part in the AI SDK's stream), or by
    the rule their docstring writes where it cannot.

    Attributes:
        attempt: the number of the attempt whose answer follows (the first
            request is attempt 1, so a first reset says 2).
        reason: why the answer was dropped (the failure, in a few words).
        choice: always 0 (a reset concerns the whole answer).

    >>> Reset(2, "the connection closed after 12 events").type
    <DeltaType.RESET: 'reset'>
    """

    attempt: int
    reason: str = ""
    choice: int = 0

    @property
    def type(self) -> DeltaType:
        return DeltaType.RESET


Delta: TypeAlias = (
    TextDelta
    | ReasoningDelta
    | RefusalDelta
    | ToolCallDelta
    | Finish
    | Usage
    | Citation
    | EmptyCitations
    | TextBlockStart
    | ServerToolCall
    | ServerToolResult
    | ReasoningState
    | Metadata
    | Reset
)
"""Any delta a decoder emits: the union `match` dispatches on (`case TextDelta(text=t): ...`).

Each carries only the new piece of its choice; the accumulators keep the totals.
"""

#: Every class a `Delta` may be (for `isinstance` checks).
DELTA_CLASSES = (
    TextDelta,
    ReasoningDelta,
    RefusalDelta,
    ToolCallDelta,
    Finish,
    Usage,
    Citation,
    EmptyCitations,
    TextBlockStart,
    ServerToolCall,
    ServerToolResult,
    ReasoningState,
    Metadata,
    Reset,
)


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A complete tool call (or, with `complete=False`, a snapshot of one still streaming).

    Attributes:
        index: the call's position in its choice's tool calls.
        id: the provider's call id (None if it sent none).
        name: the function name.
        arguments: the arguments as the JSON text the model produced.
        choice: the choice the call belongs to.
        complete: False for a progressive snapshot from
            `accumulate_tool_calls(partial=True)`, and for a call cut by a
            stop (its choice ended in `Finish("cancelled")` before its
            arguments were a whole JSON object).
        partial: for a snapshot or a cut call, the best-effort parse of the
            incomplete arguments (when `partial=True` was asked for).
    """

    index: int
    id: str | None
    name: str | None
    arguments: str
    choice: int = 0
    complete: bool = True
    partial: JSON = field(default=None, compare=False)

    def parse_arguments(self) -> JSONObject:
        """Decode `arguments` as a JSON object; empty arguments give `{}`.

        Raises:
            ToolArgumentsError: the text is not valid JSON (or nests deeper
                than the decoder can follow), or not an object.

        >>> ToolCall(0, "call_1", "f", '{"a": 1}').parse_arguments()
        {'a': 1}
        """
        text = self.arguments
        if not text.strip():
            return {}
        try:
            value = json.loads(text)
        except ValueError as exc:
            raise ToolArgumentsError(
                name=self.name, id=self.id, arguments=text, reason=f"invalid JSON: {exc}"
            ) from exc
        except RecursionError:
            raise ToolArgumentsError(
                name=self.name,
                id=self.id,
                arguments=text,
                reason="JSON nested deeper than the decoder allows",
            ) from None
        if not isinstance(value, dict):
            raise ToolArgumentsError(
                name=self.name,
                id=self.id,
                arguments=text,
                reason=f"a JSON {type(value).__name__}, not an object",
            )
        return value


@dataclass(frozen=True, slots=True)
class TextBlock:
    """A run of visible text in a `Message`, between its other blocks (see `Message.blocks`).

    Attributes:
        text: the text of the run.
        citations: the citations the provider attached to this text as a block
            of its own (`Citation.whole_block`: Anthropic's text blocks with
            `citations`, Bedrock's cited text content blocks), in arrival
            order; `()` for such a block whose list came empty
            (`EmptyCitations`); None for other text. A block with a
            list, empty or not, stays apart from the text around it, as it came.
    """

    text: str
    citations: tuple[Citation, ...] | None = None


@dataclass(frozen=True, slots=True)
class ReasoningBlock:
    """A run of reasoning in a `Message`, with the state that closed it (see `Message.blocks`).

    Attributes:
        text: the reasoning text of the run.
        state: the `ReasoningState` the provider sent for it (an Anthropic or
            Bedrock thinking signature, a Responses reasoning item), or None.
    """

    text: str
    state: ReasoningState | None = None


MessageBlock: TypeAlias = (
    TextBlock | ReasoningBlock | ToolCall | ServerToolCall | ServerToolResult | ReasoningState
)
"""One block of a `Message` (`Message.blocks`), in arrival order.

Text, reasoning, a client tool call, a server-side tool call or result, or
reasoning state that belongs to no reasoning run (redacted thinking,
compaction, a Gemini thought signature).
"""


@dataclass(frozen=True, slots=True)
class Tool:
    """A function the model may call, for `rs.request(..., tools=[...])`.

    Attributes:
        name: the function's name.
        description: what it does, for the model.
        parameters: its arguments as a JSON Schema object.

    >>> Tool("get_weather", "The weather in a city",
    ...      {"type": "object", "properties": {"city": {"type": "string"}}}).name
    'get_weather'
    """

    name: str
    description: str = ""
    parameters: JSONObject = field(default_factory=lambda: {"type": "object", "properties": {}})


@dataclass(frozen=True, slots=True)
class Output:
    """The typed answer a request asks for: `rs.request(..., output=rs.Output(Model))`.

    `output=` also takes the type or the schema alone (`output=Model`), which is
    `Output(Model)`. How each provider is asked is on the Structured output page.

    Attributes:
        target: a pydantic model, a msgspec `Struct`, a dataclass, a
            `TypedDict`, or a JSON Schema (a dict) of an object.
        name: the schema's name where a provider wants one (OpenAI's
            `json_schema.name`, the forced tool's name); default: the type's
            name, else the schema's `title`, else `"output"`.
        strict: ask for the provider's strict mode where it has one (OpenAI:
            `strict: true`, with the schema rewritten as strict mode needs).
        via: `"native"` (the provider's own structured output) or `"tool"` (a
            tool the model is made to call, whose arguments are the answer:
            for a model without the native form).
        openapi: send the schema in the OpenAPI 3.0 subset where a provider
            takes it instead of JSON Schema: Gemini's older `responseSchema`
            (and a forced tool's `parameters`), for models before Gemini 2.5
            and Vertex endpoints without `responseJsonSchema`
            (`rxstream.core.schema.openapi_schema`). The other providers take
            JSON Schema only and send it as ever.

    >>> Output({"type": "object", "properties": {}}, name="empty").via
    'native'
    """

    target: object
    name: str | None = None
    strict: bool = True
    via: Literal["native", "tool"] = "native"
    openapi: bool = False


@dataclass(frozen=True, slots=True)
class Message:
    """The final assistant message of one choice.

    Absent text is `""`; `tool_calls` (the client's tools only) is in index
    order; `usage` is the stream's last `Usage` (shared by all choices) or None.

    Attributes:
        choice: the choice this message is (0 unless the request asked for `n > 1`).
        role: the role the stream named (`"assistant"` when it named none).
        content: the visible text, all of it.
        reasoning: the reasoning (thinking) text, all of it.
        refusal: the refusal text, all of it.
        tool_calls: the complete client tool calls, in index order.
        finish_reason: the normalised finish reason (see `Finish`), or None
            when the stream ended without one.
        usage: the stream's last `Usage`, or None.
        finish_raw: the provider's own finish reason, or None.
        citations: the `Citation`s, in wire order.
        server_tools: the `ServerToolCall`s and `ServerToolResult`s, in wire order.
        reasoning_state: what the provider needs sent back on the next turn
            (`ReasoningState`: thinking signatures, redacted thinking, thought
            signatures, reasoning items), in wire order.
        metadata: every `Metadata` merged (see `Metadata`).
        blocks: the message's blocks in arrival order (`MessageBlock`: text,
            reasoning with its state, tool calls, server tools, standalone
            reasoning state), so an interleaved turn (thinking, tool call,
            thinking, tool call) is sent back as it came (`rs.request`).
            Empty for a `Message` built by hand; `rs.request` then sends its
            fields in the order reasoning, text, tool calls.

    Equality compares the fields up to `usage`; the provider extras after it
    (like `Finish.raw`) ride along without being part of it, so the same
    answer from two providers compares equal.
    """

    choice: int = 0
    role: str = "assistant"
    content: str = ""
    reasoning: str = ""
    refusal: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    finish_reason: str | None = None
    usage: Usage | None = None
    finish_raw: str | None = field(default=None, compare=False)
    citations: tuple[Citation, ...] = field(default=(), compare=False)
    server_tools: tuple[ServerToolCall | ServerToolResult, ...] = field(default=(), compare=False)
    reasoning_state: tuple[ReasoningState, ...] = field(default=(), compare=False)
    metadata: JSONObject = field(default_factory=dict, compare=False)
    blocks: tuple[MessageBlock, ...] = field(default=(), compare=False)


@dataclass(frozen=True, slots=True)
class TokenCount:
    """Running local token counts of one choice.

    The counts are exact for the text received so far, unless `estimated`
    says otherwise; the one with `final=True` is exact for the whole stream.
    `usage` is the provider's `Usage` when one arrived (the prompt is not in
    the stream, so only the provider knows `prompt_tokens`).

    `estimated` is True when a running count includes an estimate: a text that
    has run on for more than a few hundred characters without a break (Chinese
    or Japanese without punctuation, base64, a long blob in tool arguments)
    is not re-counted on every fragment, which would cost time quadratic in
    its length; its unsettled tail is estimated from its length until a break
    settles it. A final count is never estimated.

    After a `Reset` the counts start again from zero for the new answer;
    `dropped` keeps the local count of the output the dropped answers had
    streamed (text, reasoning, refusal and tool arguments): tokens the
    provider generated, and most likely billed, that the final answer does
    not hold.
    """

    text: int
    reasoning: int
    refusal: int
    tool_arguments: int
    usage: Usage | None = None
    final: bool = False
    choice: int = 0
    estimated: bool = False
    dropped: int = 0

    @property
    def total(self) -> int:
        """The sum of the four local counts (the output dropped by a `Reset` is not in it)."""
        return self.text + self.reasoning + self.refusal + self.tool_arguments


@dataclass(frozen=True, slots=True)
class StepStart:
    """A step of a run begins: one request to the model (`rs.run`).

    The step's deltas follow, as `rs.chat` gives them, then its `StepEnd`.

    Attributes:
        step: the step's number (the first is 1; it goes on counting across a resume).
        dialect: the wire format the step's request speaks.
        model: the model it asks.

    >>> StepStart(1, "openai-chat", "gpt-4o-mini").step
    1
    """

    step: int
    dialect: str
    model: str


@dataclass(frozen=True, slots=True)
class StepEnd:
    """A step's answer has ended (its tools, if any, run after it).

    Attributes:
        step: the step's number.
        finish_reason: the answer's normalised finish reason (see `Finish`);
            `"tool_calls"` when the model asked for tools; `"error"` when the
            step's request failed (the run's error follows).
        usage: the step's `Usage`, or None when the provider sent none; for a
            step that failed after output without one, an estimate
            (`Usage.estimated`: it was billed).
    """

    step: int
    finish_reason: str | None
    usage: Usage | None = None


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What one tool call gave, as it goes back to the model.

    Attributes:
        call_id: the id of the `ToolCall` it answers.
        name: the tool's name.
        output: the tool's return value (JSON when it can be: it is sent as
            JSON text, a `str` as it is); None for an error or a denial.
        error: what went wrong, in words the model can act on (the tool
            raised, ran out of time, the arguments failed its schema, no tool
            has that name), or None.
        denied: True when a person (or the `approve=` callable) refused the call.
    """

    call_id: str
    name: str
    output: JSON = None
    error: str | None = None
    denied: bool = False


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """A tool call that waits for a decision before it runs.

    The run stops after the step that asked for it; its `RunEnd.pending`
    lists every such call, and a later run resumes with the decisions
    (`ApprovalResponse`).

    Attributes:
        call_id: the id of the waiting `ToolCall`.
        name: the tool's name.
        arguments: the call's decoded arguments (JSON).
    """

    call_id: str
    name: str
    arguments: JSON = None


@dataclass(frozen=True, slots=True)
class ApprovalResponse:
    """A decision on an `ApprovalRequest`.

    Attributes:
        call_id: the id of the call decided on.
        approved: True to run it; False to send it back to the model as denied.
        reason: why, for the model (a denial's reason is in its `ToolResult.error`).
    """

    call_id: str
    approved: bool
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class RunEnd:
    """A run has ended: finished, stopped by its `stop_when`, or waiting for approval.

    Attributes:
        messages: the whole conversation, the messages to send next time: the
            ones the run began with, then each step's `Message` and its tool
            results (OpenAI chat-style `{"role": "tool", ...}` dicts, as
            `rs.request` takes them).
        usage: the usage summed over the steps (None when no step had any).
        steps: how many steps the run made (counted across a resume).
        pending: the calls waiting for approval (empty unless the run waits).
    """

    messages: tuple[Message | JSONObject, ...]
    usage: Usage | None
    steps: int
    pending: tuple[ApprovalRequest, ...] = ()


RunItem: TypeAlias = StepStart | StepEnd | ToolResult | ApprovalRequest | ApprovalResponse | RunEnd
"""An item `rs.run` adds between the steps' deltas."""

#: Every class a `RunItem` may be (for `isinstance` checks).
RUN_ITEM_CLASSES = (StepStart, StepEnd, ToolResult, ApprovalRequest, ApprovalResponse, RunEnd)
T = TypeVar("T")


# Not slotted: a generic frozen dataclass with slots breaks `Partial[Model](...)`
# (typing sets `__orig_class__` through the frozen `__setattr__`, whose `super()`
# names the class that `slots=True` replaced).
@dataclass(frozen=True)
class Partial(Generic[T]):
    """A snapshot of a typed object still streaming (from `rs.partial_object`).

    The snapshot is plain JSON, not a half-built model: a model built from
    part of its fields would either fail validation or lie about its types (a
    required field missing, a nested model still a dict), so the validated
    object comes once, whole, after the last snapshot; `Partial[T]` says what
    it will be.

    Attributes:
        value: dicts and lists holding the completed scalars (never a number
            or `true`/`false`/`null` before it is whole; a key appears once its
            value has begun, so `null` and a missing key stay different), and
            the open string with its text so far. The open containers (the
            way from the top to the value being written) are copies made for
            this snapshot, so it never changes after it was given; closed
            values are shared with later snapshots and the final object (not
            copied again), so do not mutate them.
        growing: the path (keys and indexes) of the string still growing in
            `value`, or None when none is.

    >>> Partial({"city": "Par"}, growing=("city",)).value
    {'city': 'Par'}
    """

    value: JSON
    growing: tuple[str | int, ...] | None = None


@dataclass(frozen=True, slots=True)
class JSONPatch:
    """JSON Patch (RFC 6902) operations from one snapshot of a streaming object to the next.

    Applied in order with a standard applier to `null`, the patches give each
    snapshot `rs.partial_object()` shows: `add` for a value that appears (a
    container or string as it opens, a scalar once whole, at its key or array
    index), `replace` for a string that grew (its whole text so far).

    Attributes:
        ops: the operations, each a dict `{"op", "path", "value"}`.

    >>> JSONPatch(({"op": "add", "path": "", "value": {}},)).ops[0]["op"]
    'add'
    """

    ops: tuple[JSONObject, ...]

"""Each provider's official Python SDK reading a stream, and rxstream reading the same bytes.

`sdk_read(dialect, base_url)` asks the server at `base_url` for a streamed
answer with the dialect's official client, used as its documentation shows
(openai's `chat.completions.stream()` and `responses.stream()`, anthropic's
`messages.stream()`, google-genai's `generate_content_stream`, cohere's
`chat_stream`, ollama's `chat(stream=True)`, boto3's `converse_stream`), and
returns what it got as an `Answer`, with the exception it raised if any
(`SDKFailure` holds both). `rxstream_read(dialect, body)` is rxstream's own
reading of the same bytes, in the same shape, so a test compares the two.

An `Answer` holds what a user takes from a stream: the text, the reasoning,
the client tool calls (id, name, parsed arguments), the usage in rxstream's
sense (`prompt` counts every input token, `completion` every output token,
reasoning included) and the finish in the provider's own word.
"""

from __future__ import annotations

import gc
import json
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import reactivex

import rxstream as rs

#: The seven provider dialects, each with its official Python client.
DIALECTS = (
    "openai-chat",
    "openai-responses",
    "anthropic",
    "gemini",
    "cohere",
    "ollama",
    "bedrock",
)

MODEL = "fake-model"
MESSAGES: list[dict[str, Any]] = [{"role": "user", "content": "Hi"}]


@dataclass
class Answer:
    """What a user takes from one streamed answer (choice 0)."""

    text: str = ""
    reasoning: str = ""
    calls: list[tuple[str | None, str | None, Any]] = field(default_factory=list)
    usage: tuple[int, int] | None = None
    finish: str | None = None


@dataclass
class Read:
    """An `Answer` and the exception that ended the reading (None: it ended cleanly)."""

    answer: Answer
    error: BaseException | None = None


def arguments(text: str) -> Any:
    """Arguments as a user parses them: the JSON value, or the text when it is no JSON."""
    try:
        return json.loads(text) if text.strip() else {}
    except ValueError:
        return text


# ------------------------------------------------------------------------ rxstream's reading


def rxstream_read(dialect: str, body: bytes) -> Read:
    """rxstream's own reading of `body` in `dialect` (decoded, then accumulated)."""
    match dialect:
        case "bedrock":
            frames: list[Any] = [rs.eventstream_frames()]
        case "ollama":
            frames = [rs.lines()]
        case _:
            frames = [rs.lines(), rs.sse_frames()]
    deltas: list[Any] = []
    failure: list[BaseException] = []
    source: reactivex.Observable[Any] = reactivex.of(body)
    for operator in frames:
        source = operator(source)
    rs.decode(dialect)(source).subscribe(on_next=deltas.append, on_error=failure.append)
    messages: list[rs.Message] = []
    reactivex.from_iterable(deltas).pipe(rs.accumulate_message()).subscribe(on_next=messages.append)
    answer = Answer()
    for message in messages:
        if message.choice != 0:
            continue
        answer.text, answer.reasoning = message.content, message.reasoning
        answer.calls = [(c.id, c.name, arguments(c.arguments)) for c in message.tool_calls]
        if message.usage is not None:
            answer.usage = (message.usage.prompt_tokens, message.usage.completion_tokens)
        answer.finish = message.finish_raw
    return Read(answer, failure[0] if failure else None)


# ------------------------------------------------------------------------ the SDKs' readings


def sdk_read(dialect: str, base_url: str) -> Read:
    """The dialect's official SDK asking `base_url` for a streamed answer."""
    answer = Answer()
    error: Exception | None = None
    with warnings.catch_warnings():
        # google-genai warns (and keeps the value) for a toolType outside its
        # enum: another dialect's server-tool name, which it still reads.
        warnings.filterwarnings("ignore", ".* is not a valid ToolType", UserWarning)
        # An SDK that raises mid-stream leaves its connection to the garbage
        # collector: collect it here, so its warning lands in no later test.
        warnings.simplefilter("ignore", ResourceWarning)
        try:
            _READERS[dialect](base_url, answer)
        except Exception as exc:  # what the SDK raised is the finding
            error = _without_tracebacks(exc)
        gc.collect()
    return Read(answer, error)


def _without_tracebacks(error: Exception) -> Exception:
    """`error` (and what it chains) without the frames that hold the SDK's connection."""
    seen: BaseException | None = error
    while seen is not None:
        seen.__traceback__ = None
        seen = seen.__cause__ or seen.__context__
    return error


def _openai_chat(base_url: str, answer: Answer) -> None:
    import openai

    with (
        openai.OpenAI(api_key="sk-test", base_url=f"{base_url}/v1", max_retries=0) as client,
        client.chat.completions.stream(model=MODEL, messages=MESSAGES) as stream,  # type: ignore[arg-type]
    ):
        for event in stream:
            if event.type != "chunk":
                continue
            for choice in event.chunk.choices:
                piece = getattr(choice.delta, "reasoning_content", None)
                if choice.index == 0 and isinstance(piece, str):
                    answer.reasoning += piece
            if event.chunk.usage is not None:
                usage = event.chunk.usage
                answer.usage = (usage.prompt_tokens, usage.completion_tokens)
        # The helper's accumulated completion (`get_final_completion` would
        # also parse it, and refuses a `length` finish).
        final = stream.current_completion_snapshot
    first = next((c for c in final.choices if c.index == 0), None)
    if first is None:
        return
    answer.text = first.message.content or ""
    answer.calls = [
        (call.id, call.function.name, arguments(call.function.arguments))
        for call in first.message.tool_calls or []
        if call.type == "function"
    ]
    answer.finish = first.finish_reason


def _openai_responses(base_url: str, answer: Answer) -> None:
    import openai

    final = None
    with (
        openai.OpenAI(api_key="sk-test", base_url=f"{base_url}/v1", max_retries=0) as client,
        client.responses.stream(model=MODEL, input="Hi") as stream,
    ):
        for event in stream:
            if event.type == "error":
                raise RuntimeError(f"error event: {event.message}")
            if event.type == "response.output_text.delta":
                answer.text += event.delta  # what arrives before any final response
            elif event.type in ("response.completed", "response.incomplete", "response.failed"):
                final = event.response
    if final is None:
        return  # cut: the text that arrived is the answer
    answer.text = ""
    for item in final.output:
        if item.type == "message":
            for part in item.content:
                if part.type == "output_text":
                    answer.text += part.text
        elif item.type == "reasoning":
            answer.reasoning += "".join(s.text for s in item.summary)
            answer.reasoning += "".join(c.text for c in item.content or [])
        elif item.type == "function_call":
            answer.calls.append((item.call_id, item.name, arguments(item.arguments)))
    if final.usage is not None:
        answer.usage = (final.usage.input_tokens, final.usage.output_tokens)
    if final.status == "incomplete" and final.incomplete_details is not None:
        answer.finish = final.incomplete_details.reason
    else:
        answer.finish = final.status


def _anthropic(base_url: str, answer: Answer) -> None:
    import anthropic

    with (
        anthropic.Anthropic(api_key="sk-ant-test", base_url=base_url, max_retries=0) as client,
        client.messages.stream(model=MODEL, max_tokens=64, messages=MESSAGES) as stream,  # type: ignore[arg-type]
    ):
        for _ in stream:
            pass
        final = stream.get_final_message()
    for block in final.content:
        if block.type == "text":
            answer.text += block.text
        elif block.type == "thinking":
            answer.reasoning += block.thinking
        elif block.type == "tool_use":
            answer.calls.append((block.id, block.name, block.input))
    usage = final.usage  # input_tokens is None while no event named it
    prompt = (
        (usage.input_tokens or 0)
        + (usage.cache_creation_input_tokens or 0)
        + (usage.cache_read_input_tokens or 0)
    )
    answer.usage = (prompt, usage.output_tokens)
    answer.finish = final.stop_reason


def _gemini(base_url: str, answer: Answer) -> None:
    from google import genai
    from google.genai import types

    options = types.HttpOptions(base_url=base_url, api_version="v1beta")
    with genai.Client(api_key="test-key", http_options=options) as client:
        for chunk in client.models.generate_content_stream(model=MODEL, contents="Hi"):
            _gemini_chunk(chunk, answer)


def _gemini_chunk(chunk: Any, answer: Answer) -> None:
    for candidate in chunk.candidates or []:
        if (candidate.index or 0) != 0:
            continue
        for part in candidate.content.parts or [] if candidate.content else []:
            if part.function_call is not None and part.function_call.name is not None:
                call = part.function_call
                answer.calls.append((call.id, call.name, call.args or {}))
            elif part.text is not None:
                if part.thought:
                    answer.reasoning += part.text
                else:
                    answer.text += part.text
        if candidate.finish_reason is not None:
            answer.finish = candidate.finish_reason.value
    meta = chunk.usage_metadata
    if meta is not None and meta.prompt_token_count is not None:
        completion = (meta.candidates_token_count or 0) + (meta.thoughts_token_count or 0)
        answer.usage = (meta.prompt_token_count, completion)


def _cohere(base_url: str, answer: Answer) -> None:
    import cohere

    calls: dict[int, list[Any]] = {}
    with (
        cohere.ClientV2(api_key="test-key", base_url=base_url, max_retries=0) as client,
        warnings.catch_warnings(record=True) as seen,
    ):
        warnings.simplefilter("always")
        for event in client.chat_stream(model=MODEL, messages=MESSAGES):
            _cohere_event(event, answer, calls)
    # The SDK skips an event it cannot read with only a warning: a silent loss here.
    skipped = [str(w.message) for w in seen if "Skipping" in str(w.message)]
    if skipped:
        raise RuntimeError(f"the cohere SDK skipped events: {skipped}")
    answer.calls = [(c[0], c[1], arguments(c[2])) for _, c in sorted(calls.items())]


def _cohere_event(event: Any, answer: Answer, calls: dict[int, list[Any]]) -> None:
    kind = event.type
    if kind == "content-delta":
        content = event.delta.message.content
        if content.thinking is not None:
            answer.reasoning += content.thinking
        if content.text is not None:
            answer.text += content.text
    elif kind == "tool-plan-delta":
        answer.reasoning += event.delta.message.tool_plan or ""
    elif kind == "tool-call-start":
        call = event.delta.message.tool_calls
        calls[event.index] = [call.id, call.function.name, call.function.arguments or ""]
    elif kind == "tool-call-delta":
        piece = event.delta.message.tool_calls.function.arguments or ""
        calls[event.index][2] += piece
    elif kind == "message-end":
        delta = event.delta
        answer.finish = delta.finish_reason
        if delta.error:
            raise RuntimeError(f"message-end error: {delta.error}")
        tokens = delta.usage.tokens if delta.usage is not None else None
        if tokens is not None and tokens.input_tokens is not None:
            answer.usage = (int(tokens.input_tokens), int(tokens.output_tokens or 0))


def _ollama(base_url: str, answer: Answer) -> None:
    import ollama

    with ollama.Client(host=base_url) as client:
        for chunk in client.chat(model=MODEL, messages=MESSAGES, stream=True):
            _ollama_chunk(chunk, answer)


def _ollama_chunk(chunk: Any, answer: Answer) -> None:
    message = chunk.message
    answer.text += message.content or ""
    answer.reasoning += message.thinking or ""
    for call in message.tool_calls or []:
        arguments_ = dict(call.function.arguments)
        answer.calls.append((getattr(call, "id", None), call.function.name, arguments_))
    if chunk.done:
        answer.finish = chunk.done_reason
        if chunk.prompt_eval_count is not None or chunk.eval_count is not None:
            answer.usage = (chunk.prompt_eval_count or 0, chunk.eval_count or 0)


def _bedrock(base_url: str, answer: Answer) -> None:
    import boto3  # type: ignore[import-untyped]
    from botocore.config import Config  # type: ignore[import-untyped]

    client = boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        endpoint_url=base_url,
        aws_access_key_id="AKIDTEST",
        aws_secret_access_key="secret",
        config=Config(retries={"total_max_attempts": 1}),
    )
    calls: dict[int, list[Any]] = {}
    try:
        response = client.converse_stream(
            modelId=MODEL, messages=[{"role": "user", "content": [{"text": "Hi"}]}]
        )
        for event in response["stream"]:
            _bedrock_event(event, answer, calls)
    finally:
        answer.calls = [(c[0] or None, c[1], arguments(c[2])) for _, c in sorted(calls.items())]
        client.close()


def _bedrock_event(event: Any, answer: Answer, calls: dict[int, list[Any]]) -> None:
    if "contentBlockStart" in event:
        start = event["contentBlockStart"]
        use = start["start"].get("toolUse")
        if use is not None and use.get("type") is None:
            calls[start["contentBlockIndex"]] = [use["toolUseId"], use["name"], ""]
    elif "contentBlockDelta" in event:
        block = event["contentBlockDelta"]
        delta = block["delta"]
        if "text" in delta:
            answer.text += delta["text"]
        elif "reasoningContent" in delta:
            answer.reasoning += delta["reasoningContent"].get("text", "")
        elif "toolUse" in delta and block["contentBlockIndex"] in calls:
            calls[block["contentBlockIndex"]][2] += delta["toolUse"]["input"]
    elif "messageStop" in event:
        answer.finish = event["messageStop"]["stopReason"]
    elif "metadata" in event:
        usage = event["metadata"].get("usage")
        if usage is not None:
            prompt = (
                usage["inputTokens"]
                + usage.get("cacheReadInputTokens", 0)
                + usage.get("cacheWriteInputTokens", 0)
            )
            answer.usage = (prompt, usage["outputTokens"])


_READERS: dict[str, Callable[[str, Answer], None]] = {
    "openai-chat": _openai_chat,
    "openai-responses": _openai_responses,
    "anthropic": _anthropic,
    "gemini": _gemini,
    "cohere": _cohere,
    "ollama": _ollama,
    "bedrock": _bedrock,
}


def chunks(body: bytes, size: int = 97) -> Iterator[bytes]:
    """`body` in pieces, so the SDKs meet events split across reads."""
    for start in range(0, len(body), size):
        yield body[start : start + size]

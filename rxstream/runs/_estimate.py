"""The usage of an attempt that died without reporting one: estimated, and marked so.

A stream cut after output has cost tokens (the prompt was read, part of the answer
generated), but its provider sent no `Usage`: that comes at the end. The estimate counts
the attempt's output (text, reasoning, refusal, tool arguments as it arrived) and the
strings of the messages it asked with, with the project's counter
(`rxstream.io.limits.estimate_tokens`: o200k_base through `rs.count_tokens`'s machine,
or, without the `tokens` extra, a quarter of the characters, rounded up).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from ..io.limits import estimate_tokens
from ..models import (
    JSONObject,
    Message,
    ReasoningDelta,
    RefusalDelta,
    TextDelta,
    ToolCallDelta,
    Usage,
)

__all__ = [
    "estimated_usage",
    "estimated_usage_of",
    "estimator",
    "usage_of_record",
    "usage_record",
]


def estimator() -> str:
    """How tokens are estimated here: `"o200k_base"`, or `"characters/4"` without tiktoken."""
    from ..core.tokens import TokenCounter

    try:
        TokenCounter()
    except ImportError:
        return "characters/4"
    return "o200k_base"


def estimated_usage(
    output: Sequence[object], asked: Sequence[Mapping[str, Any] | Message]
) -> JSONObject:
    """An attempt's usage record, estimated from its `output` and the messages it `asked` with.

    The record has the keys of a reported one (`usage_record`: `prompt_tokens`,
    `completion_tokens`, `total_tokens`, `reasoning_tokens`, `cached_tokens`,
    `cache_write_tokens`), plus `"estimated": True` and `"estimator"` (see `estimator`).
    Nothing is known of reasoning or cache tokens: None. `usage_of_record` makes it a
    `Usage` marked `estimated`.

    >>> record = estimated_usage([TextDelta("abcdefgh")], [])
    >>> record["completion_tokens"] > 0, record["prompt_tokens"], record["estimated"]
    (True, 0, True)
    """
    completion = estimate_tokens("".join(_output_texts(output)))
    prompt = estimate_tokens("\n".join(_strings(list(asked))))
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "reasoning_tokens": None,
        "cached_tokens": None,
        "cache_write_tokens": None,
        "estimated": True,
        "estimator": estimator(),
    }


def estimated_usage_of(answer: Message, asked: Sequence[Mapping[str, Any] | Message]) -> Usage:
    """The usage of an answer cut before its provider reported one, estimated (a run's
    step that failed after output: it was billed).

    >>> usage = estimated_usage_of(Message(content="abcdefgh"), [])
    >>> usage.completion_tokens > 0, usage.estimated
    (True, True)
    """
    output: list[object] = [
        TextDelta(answer.content),
        ReasoningDelta(answer.reasoning),
        RefusalDelta(answer.refusal),
        *(ToolCallDelta(call.index, call.arguments) for call in answer.tool_calls),
    ]
    return usage_of_record(estimated_usage(output, asked))


def usage_record(usage: Usage) -> JSONObject:
    """A reported `Usage` as an attempt's record (its counts, as JSON).

    >>> usage_record(Usage(3, 1, 4))["total_tokens"]
    4
    """
    return {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.total_tokens,
        "reasoning_tokens": usage.reasoning_tokens,
        "cached_tokens": usage.cached_tokens,
        "cache_write_tokens": usage.cache_write_tokens,
    }


def usage_of_record(record: Mapping[str, Any]) -> Usage:
    """The `Usage` a record stands for (`usage_record`'s or `estimated_usage`'s).

    A record marked `"estimated"` gives a usage marked `estimated`; a count the
    record lacks is None (0 for the three totals).

    >>> usage_of_record(estimated_usage([TextDelta("abcdefgh")], [])).estimated
    True
    """
    return Usage(
        record.get("prompt_tokens") or 0,
        record.get("completion_tokens") or 0,
        record.get("total_tokens") or 0,
        record.get("reasoning_tokens"),
        record.get("cached_tokens"),
        cache_write_tokens=record.get("cache_write_tokens"),
        estimated=bool(record.get("estimated")),
    )


def _output_texts(output: Sequence[object]) -> Iterator[str]:
    for item in output:
        match item:
            case TextDelta(text=text) | ReasoningDelta(text=text) | RefusalDelta(text=text):
                yield text
            case ToolCallDelta(arguments=arguments):
                yield arguments


def _strings(value: object) -> Iterator[str]:
    """Every string of a request's messages (a `Message`'s content, reasoning and calls)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Message):
        yield from (value.content, value.reasoning, value.refusal)
        for call in value.tool_calls:
            yield from (call.name or "", call.arguments)
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)

"""`Usage` means the same in every dialect: the recordings' counts, cache writes, and sums.

The table of the Dialects page ("Usage, field by field"), checked: each recording's usage
object read into the same six counts, every renderer's usage read back by its decoder with
what the wire can carry, and usages added up field by field.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import rxstream as rs
from rxstream.core.dialects import decoder, renderer
from rxstream.runs._estimate import estimated_usage, usage_of_record, usage_record
from tests.support.dialects import Wire, outcome

DATA = Path(__file__).parents[2] / "data"

Counts = tuple[int, int, int, int | None, int | None, int | None]


def counts(usage: rs.Usage) -> Counts:
    """(prompt, completion, total, reasoning, cached, cache write)."""
    return (
        usage.prompt_tokens,
        usage.completion_tokens,
        usage.total_tokens,
        usage.reasoning_tokens,
        usage.cached_tokens,
        usage.cache_write_tokens,
    )


# (recording, dialect, wire, counts): every count as the provider's own object says it.
RECORDINGS: list[tuple[str, str, Wire, Counts]] = [
    # prompt_tokens_details.cache_write_tokens: 0, completion_tokens_details.reasoning_tokens: 0
    ("openrouter/usage-empty-choices.sse", "openai-chat", "sse", (254, 5, 259, 0, 0, 0)),
    # completion_tokens (212) already holds the 198 reasoning tokens
    ("deepseek/reasoning-content.sse", "openai-chat", "sse", (6, 212, 218, 198, 0, None)),
    (
        "openai-responses/reasoning-summary-and-text.sse",
        "openai-responses",
        "sse",
        (13, 1680, 1693, 1408, 0, None),
    ),
    # input_tokens_details.cache_write_tokens: 0
    (
        "bedrock-mantle/responses-function-call.sse",
        "openai-responses",
        "sse",
        (88, 14, 102, 0, 0, 0),
    ),
    # cache_creation_input_tokens and cache_read_input_tokens: 0; no thinking count sent
    (
        "anthropic/web-search-server-tool-citations.sse",
        "anthropic",
        "sse",
        (31772, 644, 32416, None, 0, 0),
    ),
    # candidatesTokenCount 469 leaves out thoughtsTokenCount 787: completion is both
    ("google/thinking-thought-parts.sse", "gemini", "sse", (34, 469 + 787, 1290, 787, None, None)),
    # tokens (what the model read), not billed_units (12 / 7: what rs.cost prices)
    ("cohere/v2-text.sse", "cohere", "sse", (507, 10, 517, None, 448, None)),
    (
        "ollama/chat-tool-call-llama3.1.ndjson",
        "ollama",
        "ndjson",
        (169, 22, 191, None, None, None),
    ),
    (
        "bedrock/converse-stream-text.eventstream",
        "bedrock",
        "eventstream",
        (37, 15, 52, None, None, None),
    ),
]


@pytest.mark.parametrize(
    ("recording", "dialect", "wire", "expected"),
    RECORDINGS,
    ids=[f"{case[1]}-{case[0]}" for case in RECORDINGS],
)
def test_recorded_usage(recording: str, dialect: str, wire: Wire, expected: Counts) -> None:
    out, errors = outcome([(DATA / recording).read_bytes()], dialect, wire=wire, message=False)
    assert errors == []
    *_, usage = [item for item in out if isinstance(item, rs.Usage)]
    assert counts(usage) == expected
    assert usage.estimated is False
    assert usage.raw is not None


GIVEN = rs.Usage(30, 12, 42, reasoning_tokens=5, cached_tokens=6, cache_write_tokens=4)

# What each dialect's wire carries back of GIVEN (a count it has no field for is None).
CARRIED: dict[str, Counts] = {
    "openai-chat": (30, 12, 42, 5, 6, 4),
    "openai-responses": (30, 12, 42, 5, 6, 4),
    "anthropic": (30, 12, 42, 5, 6, 4),
    "gemini": (30, 12, 42, 5, 6, None),
    "cohere": (30, 12, 42, None, 6, None),
    "ollama": (30, 12, 42, None, 6, None),
    "bedrock": (30, 12, 42, None, 6, 4),
    "ai-sdk": (30, 12, 42, 5, 6, 4),
}


@pytest.mark.parametrize("dialect", sorted(CARRIED))
def test_each_renderer_writes_the_usage_its_decoder_reads_back(dialect: str) -> None:
    render = renderer(dialect)
    wire = [
        *render.feed(rs.TextDelta("Hi")),
        *render.feed(rs.Finish("stop")),
        *render.feed(GIVEN),
        *render.close(),
    ]
    decode = decoder(dialect)
    out = [delta for item in wire for delta in decode.feed(item)] + decode.close()
    (usage,) = [item for item in out if isinstance(item, rs.Usage)]
    assert counts(usage) == CARRIED[dialect]


@pytest.mark.parametrize(
    ("usages", "expected", "estimated"),
    [
        ([rs.Usage(1, 2, 3)], (1, 2, 3, None, None, None), False),
        ([rs.Usage(1, 2, 3), rs.Usage(4, 5, 9)], (5, 7, 12, None, None, None), False),
        (
            [rs.Usage(10, 2, 12, 1, 4), rs.Usage(5, 1, 6, None, 2, cache_write_tokens=3)],
            (15, 3, 18, 1, 6, 3),
            False,
        ),
        ([rs.Usage(1, 1, 2), rs.Usage(1, 1, 2, estimated=True)], (2, 2, 4, None, None, None), True),
    ],
    ids=["one", "two", "a count one side lacks", "an estimate in it"],
)
def test_usages_add_field_by_field(
    usages: list[rs.Usage], expected: Counts, estimated: bool
) -> None:
    total = sum(usages)
    assert isinstance(total, rs.Usage)
    assert counts(total) == expected
    assert total.estimated is estimated
    assert total.raw is None or len(usages) == 1


def test_a_usage_adds_only_to_a_usage() -> None:
    with pytest.raises(TypeError):
        rs.Usage(1, 1, 2) + 1  # type: ignore[operator]


def test_records_give_the_usage_back_and_an_estimate_is_marked() -> None:
    usage = rs.Usage(9, 3, 12, 1, 2, cache_write_tokens=4)
    assert usage_of_record(usage_record(usage)) == usage
    guess = usage_of_record(estimated_usage([rs.TextDelta("abcdefgh")], []))
    assert guess.estimated
    assert guess.completion_tokens > 0

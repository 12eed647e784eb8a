"""`rs.cost` and `rs.run_cost`: a usage priced from genai-prices' shipped data, no request made.

The prices asserted are the published per-million rates the installed genai-prices holds
(`at=` pins the date, so a later price change in the data cannot move them).
"""

from __future__ import annotations

import socket
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest

import rxstream as rs
from rxstream.runs.pricing import PROVIDERS

pytest.importorskip("genai_prices")

AT = datetime(2025, 9, 1, 12, tzinfo=UTC)  # noon: outside any off-peak discount
M = Decimal(1_000_000)


def price(usage: rs.Usage, model: str, **where: Any) -> rs.Cost:
    spent = rs.cost(usage, model=model, at=AT, **where)
    assert spent is not None
    return spent


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pricing reads the shipped data: any connection attempt fails the test."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"pricing tried to connect: {args!r}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


# (id, usage, model, dialect, total, input, output, cache_read, cache_write, provider)
CASES = [
    (
        "openai-chat: input and output at gpt-4o's rates ($2.50 / $10)",
        rs.Usage(1000, 200, 1200),
        "gpt-4o",
        "openai-chat",
        Decimal("0.0045"),
        Decimal("0.0025"),
        Decimal("0.002"),
        Decimal(0),
        Decimal(0),
        "openai",
    ),
    (
        "openai-responses: cached input at its own rate ($1.25)",
        rs.Usage(1000, 200, 1200, cached_tokens=400),
        "gpt-4o",
        "openai-responses",
        (600 * Decimal("2.5") + 400 * Decimal("1.25") + 200 * 10) / M,
        (600 * Decimal("2.5") + 400 * Decimal("1.25")) / M,
        Decimal("0.002"),
        400 * Decimal("1.25") / M,
        Decimal(0),
        "openai",
    ),
    (
        "anthropic: cache reads ($0.30) and writes ($3.75) apart from input ($3)",
        rs.Usage(1000, 200, 1200, cached_tokens=300, cache_write_tokens=500),
        "claude-sonnet-4-20250514",
        "anthropic",
        (200 * 3 + 300 * Decimal("0.3") + 500 * Decimal("3.75") + 200 * 15) / M,
        (200 * 3 + 300 * Decimal("0.3") + 500 * Decimal("3.75")) / M,
        200 * Decimal(15) / M,
        300 * Decimal("0.3") / M,
        500 * Decimal("3.75") / M,
        "anthropic",
    ),
    (
        "gemini: thoughts are output",
        rs.Usage(1000, 300, 1300, reasoning_tokens=100),
        "gemini-2.5-flash",
        "gemini",
        (1000 * Decimal("0.3") + 300 * Decimal("2.5")) / M,
        1000 * Decimal("0.3") / M,
        300 * Decimal("2.5") / M,
        Decimal(0),
        Decimal(0),
        "google",
    ),
    (
        "bedrock: a regional model id",
        rs.Usage(1000, 200, 1200),
        "us.anthropic.claude-sonnet-4-20250514-v1:0",
        "bedrock",
        Decimal("0.006"),
        Decimal("0.003"),
        Decimal("0.003"),
        Decimal(0),
        Decimal(0),
        "aws",
    ),
    (
        "openai-chat: a model OpenAI does not list is looked for by name",
        rs.Usage(1000, 200, 1200),
        "deepseek-chat",
        "openai-chat",
        (1000 * Decimal("0.27") + 200 * Decimal("1.1")) / M,
        1000 * Decimal("0.27") / M,
        200 * Decimal("1.1") / M,
        Decimal(0),
        Decimal(0),
        "deepseek",
    ),
]


@pytest.mark.parametrize(
    ("usage", "model", "dialect", "total", "input", "output", "read", "write", "provider"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_cost_per_dialect(
    usage: rs.Usage,
    model: str,
    dialect: str,
    total: Decimal,
    input: Decimal,
    output: Decimal,
    read: Decimal,
    write: Decimal,
    provider: str,
) -> None:
    spent = price(usage, model, dialect=dialect)
    assert (spent.total, spent.input, spent.output) == (total, input, output)
    assert (spent.cache_read, spent.cache_write) == (read, write)
    assert (spent.provider, spent.currency, spent.estimated) == (provider, "USD", False)


def test_anthropic_one_hour_cache_writes_cost_twice_the_input() -> None:
    raw = {"cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 500}}
    usage = rs.Usage(500, 0, 500, None, 0, raw=raw, cache_write_tokens=500)
    spent = price(usage, "claude-sonnet-4-20250514", dialect="anthropic")
    assert spent.cache_write == spent.input == 500 * Decimal(6) / M


def test_cohere_is_priced_by_its_billed_units() -> None:
    # From the recorded stream: 507 tokens read, 12 billed (the system template is free).
    raw = {
        "billed_units": {"input_tokens": 12, "output_tokens": 10},
        "tokens": {"input_tokens": 507, "output_tokens": 10},
    }
    usage = rs.Usage(507, 10, 517, raw=raw)
    billed = price(usage, "command-r-plus-08-2024", dialect="cohere")
    read = price(rs.Usage(507, 10, 517), "command-r-plus-08-2024", dialect="cohere")
    assert billed.input == 12 * Decimal("2.5") / M
    assert read.input == 507 * Decimal("2.5") / M


def test_an_estimated_usage_gives_an_estimated_cost() -> None:
    spent = price(rs.Usage(100, 10, 110, estimated=True), "gpt-4o", dialect="openai-chat")
    assert spent.estimated


def test_provider_wins_over_the_dialect() -> None:
    spent = price(rs.Usage(1000, 0, 1000), "llama-3.3-70b-versatile", provider="groq")
    assert spent.provider == "groq"
    assert rs.cost(rs.Usage(1, 1, 2), model="llama3.2", dialect="ollama", provider="groq") is None


@pytest.mark.parametrize(
    ("model", "where", "reason"),
    [
        ("no-such-model", {"dialect": "anthropic"}, "no price for model 'no-such-model'"),
        ("no-such-model", {"dialect": "openai-chat"}, "with any provider"),
        ("llama3.2", {"dialect": "ollama"}, "the 'ollama' dialect names no provider"),
        ("gpt-4o", {"provider": "no-such-provider"}, "no-such-provider"),
    ],
)
def test_an_unknown_price_is_none_or_with_strict_a_lookup_error(
    model: str, where: dict[str, Any], reason: str
) -> None:
    usage = rs.Usage(10, 1, 11)
    assert rs.cost(usage, model=model, **where) is None
    with pytest.raises(LookupError, match=reason):
        rs.cost(usage, model=model, strict=True, **where)


def test_bad_counts_are_a_value_error() -> None:
    with pytest.raises(ValueError, match="cache_read_tokens"):
        rs.cost(rs.Usage(10, 1, 11, cached_tokens=20), model="gpt-4o", dialect="openai-chat")


def test_every_dialect_with_a_provider_names_one_the_price_list_holds() -> None:
    from genai_prices.data import providers

    known = {p.id for p in providers}
    assert set(PROVIDERS.values()) <= known


def test_run_cost_sums_each_step_with_its_own_model() -> None:
    first, second = rs.Usage(1000, 100, 1100), rs.Usage(2000, 50, 2050, estimated=True)
    steps: list[tuple[str, rs.Usage | None] | tuple[str, rs.Usage | None, str]] = [
        ("gpt-4o", first),
        ("gpt-4o-mini", None),  # refused before any output: cost nothing
        ("claude-sonnet-4-20250514", second, "anthropic"),
    ]
    spent = rs.run_cost(steps, dialect="openai-chat", at=AT)
    one = price(first, "gpt-4o", dialect="openai-chat")
    two = price(second, "claude-sonnet-4-20250514", dialect="anthropic")
    assert spent == one + two
    assert spent is not None
    assert spent.total == one.total + two.total
    assert spent.estimated  # the second step's usage was estimated
    assert (spent.model, spent.provider) == (None, None)


def test_run_cost_of_one_model_keeps_its_ids_and_of_no_steps_is_zero() -> None:
    usage = rs.Usage(10, 1, 11)
    spent = rs.run_cost([("gpt-4o", usage), ("gpt-4o", usage)], dialect="openai-chat", at=AT)
    assert spent is not None
    assert (spent.model, spent.provider) == ("gpt-4o", "openai")
    assert rs.run_cost([]) == rs.Cost(Decimal(0), Decimal(0), Decimal(0))


def test_run_cost_with_a_step_of_unknown_price_is_none() -> None:
    steps: list[tuple[str, rs.Usage | None]] = [
        ("gpt-4o", rs.Usage(1, 1, 2)),
        ("no-such-model", rs.Usage(1, 1, 2)),
    ]
    assert rs.run_cost(steps, dialect="anthropic") is None


def test_costs_add_up_only_in_one_currency() -> None:
    usd = rs.Cost(Decimal(1), Decimal(1), Decimal(0))
    assert sum([usd, usd]) == rs.Cost(Decimal(2), Decimal(2), Decimal(0))
    with pytest.raises(ValueError, match="cannot add a cost in EUR"):
        usd + rs.Cost(Decimal(1), Decimal(1), Decimal(0), currency="EUR")


def test_without_genai_prices_the_error_says_which_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "genai_prices", None)
    with pytest.raises(ImportError, match=r"rxstream\[prices\]"):
        rs.cost(rs.Usage(1, 1, 2), model="gpt-4o", dialect="openai-chat")


def test_the_price_is_the_one_in_force_at_the_time_given() -> None:
    usage = rs.Usage(1000, 200, 1200)
    peak = price(usage, "deepseek-chat", dialect="openai-chat")
    off_peak = rs.cost(
        usage, model="deepseek-chat", dialect="openai-chat", at=AT.replace(hour=0)
    )  # DeepSeek's off-peak hours halved this model's price
    assert off_peak is not None
    assert off_peak.total == peak.total / 2


def test_a_cost_adds_only_to_a_cost() -> None:
    usd = rs.Cost(Decimal(1), Decimal(1), Decimal(0))
    with pytest.raises(TypeError):
        usd + 1  # type: ignore[operator]
    with pytest.raises(TypeError):
        1 + usd


def test_cohere_billed_units_sent_as_whole_floats_count() -> None:
    raw = {"billed_units": {"input_tokens": 12.0, "output_tokens": 7.0}}
    spent = price(rs.Usage(507, 10, 517, raw=raw), "command-r-plus-08-2024", dialect="cohere")
    assert spent.input == 12 * Decimal("2.5") / M
    assert spent.output == 7 * Decimal(10) / M

"""What a usage costs: `rs.cost` for one request, `rs.run_cost` for the steps of a run.

Prices come from pydantic's genai-prices (the `prices` extra), a maintained price list
of every major provider, with its history (a price has the dates it holds for) and its
tiers. Its data ships inside the package: rxstream reads that snapshot and never starts
genai-prices' updater (`UpdatePrices`), so pricing makes no request; an application that
starts one gets the updated prices.

The `Usage` is priced as the dialect's provider bills it:

- `prompt_tokens` are the input tokens (every dialect counts cache reads and writes in
  them, as genai-prices does), `cached_tokens` the cache reads, `cache_write_tokens` the
  cache writes, `completion_tokens` the output tokens (reasoning included) and
  `reasoning_tokens` the reasoning part of them, for a model with a reasoning price;
- Cohere bills `billed_units`, not the `tokens` the model read (its system template is
  free): when the usage's `raw` has them, they are priced;
- Anthropic's cache writes of one hour cost more than those of five minutes: when
  `raw.cache_creation` splits them, the split is priced.

A dialect picks its provider in the price list (`PROVIDERS`); `"openai-chat"` is every
OpenAI-compatible server, so a model the OpenAI list does not hold is looked for by its
name in every provider's list (`deepseek-chat`, `llama-3.3-70b-versatile`). Ollama runs
models locally: it has no provider, and its usage has no price unless `provider=` names
the service that ran it.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Iterable
from datetime import datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from ..models import Cost, StepEnd, StepStart, Usage

if TYPE_CHECKING:
    from genai_prices.types import PriceCalculation

__all__ = ["PROVIDERS", "cost", "run_cost"]

#: The provider id in genai-prices of each dialect that has one.
PROVIDERS: dict[str, str] = {
    "openai-chat": "openai",
    "openai-responses": "openai",
    "anthropic": "anthropic",
    "gemini": "google",
    "cohere": "cohere",
    "bedrock": "aws",
}

# The dialects of every OpenAI-compatible server: an unknown model is looked up by name.
_ANY_PROVIDER = frozenset({"openai-chat"})
_ZERO = Decimal(0)
_PER_TOKENS = 1_000_000  # genai-prices' token prices are per million (`*_mtok`)


def cost(
    usage: Usage,
    *,
    model: str,
    dialect: str | None = None,
    provider: str | None = None,
    at: datetime | None = None,
    strict: bool = False,
) -> Cost | None:
    """What `usage` cost with `model`, from the price list genai-prices ships.

    Args:
        usage: the request's `Usage` (`message.usage`), reported or estimated.
        model: the model as the request named it (or as the provider answered).
        dialect: the wire format it was asked in; picks the provider (`PROVIDERS`).
        provider: the price list's provider id (`"openai"`, `"groq"`, `"aws"`, ...);
            wins over `dialect`. With neither, the model is looked for by its name.
        at: when the request was made (prices change; default: now).
        strict: raise `LookupError` instead of returning None for a model or
            provider the price list does not hold.

    Returns:
        The `Cost`, or None when the price list holds no price for the model (a local
        model, a new one, a name it does not know): a cost of 0 would be a wrong answer.

    Raises:
        ImportError: genai-prices is not installed (`pip install "rxstream[prices]"`).
        LookupError: with `strict`, the model or provider is not in the price list.
        ValueError: the usage cannot be priced (more cached tokens than prompt tokens).

    >>> import rxstream as rs
    >>> spent = rs.cost(rs.Usage(1000, 200, 1200), model="gpt-4o", dialect="openai-chat")
    >>> spent.input, spent.output, spent.total, spent.currency
    (Decimal('0.0025'), Decimal('0.002'), Decimal('0.0045'), 'USD')
    """
    if provider is None and dialect is not None and dialect not in PROVIDERS:
        _unknown(strict, f"the {dialect!r} dialect names no provider: pass provider=")
        return None
    provider_id = provider or (PROVIDERS[dialect] if dialect is not None else None)
    calculation = _calculate(usage, model, provider_id, dialect in _ANY_PROVIDER, at)
    if isinstance(calculation, str):
        _unknown(strict, calculation)
        return None
    return _cost_of(usage, calculation, provider_id)


def run_cost(
    steps: Iterable[tuple[str, Usage | None] | tuple[str, Usage | None, str] | object],
    *,
    dialect: str | None = None,
    provider: str | None = None,
    at: datetime | None = None,
) -> Cost | None:
    """What the steps of a run cost together, each priced with its own model.

    Args:
        steps: `(model, usage)` per step, or `(model, usage, dialect)` where a step
            went elsewhere (a fallback route); an estimated usage (a step that died
            before its provider reported one) is priced and makes the sum `estimated`;
            a usage of None is a step that cost nothing (refused before any output).
            Or what an `rs.run` emitted, as it is (also of a run that failed or was
            disposed: the steps that ended): each `rs.StepStart` names its step's
            model and dialect, its `rs.StepEnd` carries the usage; other items
            (deltas, tool results, the `rs.RunEnd`) are passed over.
        dialect: as for `cost`, for the steps that name no dialect of their own.
        provider: as for `cost`, for every step.
        at: as for `cost`.

    Returns:
        The sum, or None when any step's model has no price (a partial sum would
        understate the run). No steps cost zero.

    >>> import rxstream as rs
    >>> steps = [("gpt-4o", rs.Usage(1000, 100, 1100)), ("gpt-4o-mini", rs.Usage(2000, 50, 2050))]
    >>> rs.run_cost(steps, dialect="openai-chat").total
    Decimal('0.00383')
    """
    costs: list[Cost] = []
    for step in _priced_steps(steps):
        model, usage = step[0], step[1]
        if usage is None:
            continue
        step_dialect = step[2] if len(step) == 3 else dialect
        spent = cost(usage, model=model, dialect=step_dialect, provider=provider, at=at)
        if spent is None:
            return None
        costs.append(spent)
    return functools.reduce(operator.add, costs) if costs else Cost(_ZERO, _ZERO, _ZERO)


# --------------------------------------------------------------------------- internals


def _priced_steps(
    steps: Iterable[object],
) -> Iterable[tuple[str, Usage | None] | tuple[str, Usage | None, str]]:
    """`(model, usage[, dialect])` per step: given so, or read from a run's items."""
    started: StepStart | None = None
    for step in steps:
        if isinstance(step, tuple):
            yield step
        elif isinstance(step, StepStart):
            started = step
        elif isinstance(step, StepEnd) and started is not None and started.step == step.step:
            yield (started.model, step.usage, started.dialect)


def _unknown(strict: bool, why: str) -> None:
    """Raise the reason a price is unknown, when `strict`."""
    if strict:
        raise LookupError(why)


def _prices() -> Any:
    try:
        import genai_prices
    except ImportError as exc:
        raise ImportError('pricing needs genai-prices: pip install "rxstream[prices]"') from exc
    return genai_prices


def _calculate(
    usage: Usage, model: str, provider_id: str | None, any_provider: bool, at: datetime | None
) -> PriceCalculation | str:
    """genai-prices' calculation, or why there is none (a model or provider it lacks)."""
    prices = _prices()
    counts = prices.Usage(**_counts(usage, provider_id))
    try:
        result: PriceCalculation = prices.calc_price(
            counts, model, provider_id=provider_id, genai_request_timestamp=at
        )
    except LookupError as exc:
        if not any_provider:
            return f"no price for model {model!r} (provider {provider_id!r}): {exc}"
        try:
            result = prices.calc_price(counts, model, genai_request_timestamp=at)
        except LookupError as again:
            return f"no price for model {model!r} with any provider: {again}"
    return result


def _counts(usage: Usage, provider_id: str | None) -> dict[str, int]:
    """The usage in genai-prices' names (what each provider bills; see the module docstring)."""
    raw = usage.raw or {}
    billed = raw.get("billed_units")
    if provider_id == "cohere" and isinstance(billed, dict):
        return {
            "input_tokens": _count(billed.get("input_tokens")),
            "output_tokens": _count(billed.get("output_tokens")),
        }
    counts = {"input_tokens": usage.prompt_tokens, "output_tokens": usage.completion_tokens}
    optional = {
        "cache_read_tokens": usage.cached_tokens,
        "cache_write_tokens": usage.cache_write_tokens,
        "output_reasoning_tokens": usage.reasoning_tokens,
    }
    counts.update({key: value for key, value in optional.items() if value})
    split = raw.get("cache_creation")
    if usage.cache_write_tokens and isinstance(split, dict):
        for ttl in ("5m", "1h"):
            written = split.get(f"ephemeral_{ttl}_input_tokens")
            if type(written) is int and written:
                counts[f"cache_write_{ttl}_tokens"] = written
    return counts


def _count(value: object) -> int:
    """A billed count: Cohere's types say number, so a whole float is one too."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value if type(value) is int else 0


def _cost_of(usage: Usage, calculation: PriceCalculation, provider_id: str | None) -> Cost:
    """The `Cost` of a calculation, its input split into uncached, cache reads and writes."""
    from genai_prices.types import calc_unit_price

    prices = calculation.model_price
    prompt = usage.prompt_tokens
    read = usage.cached_tokens or 0
    written = usage.cache_write_tokens or 0
    if provider_id == "cohere" and isinstance((usage.raw or {}).get("billed_units"), dict):
        read = written = 0  # Cohere bills no cache apart
    input_rate = prices.input_mtok
    # Cache reads without a price of their own are priced as input (genai-prices' rule).
    read_rate = prices.cache_read_mtok if prices.cache_read_mtok is not None else input_rate
    cache_read = calc_unit_price(read_rate, read, prompt, _PER_TOKENS)
    uncached = calc_unit_price(input_rate, max(prompt - read - written, 0), prompt, _PER_TOKENS)
    return Cost(
        total=calculation.total_price,
        input=calculation.input_price,
        output=calculation.output_price,
        cache_read=cache_read if read else _ZERO,
        # What is left of the input: the writes, at whatever rate (5m, 1h, input) priced them.
        cache_write=calculation.input_price - uncached - cache_read if written else _ZERO,
        estimated=usage.estimated,
        model=calculation.model.id,
        provider=calculation.provider.id,
    )

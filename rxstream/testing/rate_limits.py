"""Providers' rate-limit headers for a fake answer: `Scenario(headers=rate_limit_headers(...))`.

    >>> rate_limit_headers("openai-chat", requests=0, reset=20.5)
    {'x-ratelimit-remaining-requests': '0', 'x-ratelimit-reset-requests': '20.5s'}

OpenAI's shape (`x-ratelimit-remaining-*`, resets as Go durations) for the
OpenAI dialects, Anthropic's (`anthropic-ratelimit-*-remaining`, resets as RFC
3339 times) for `"anthropic"`; the other providers send none of their own, so
they get OpenAI's, which the compatible servers in front of them send. What a
client reads of them is `rxstream.core.rate_limits.rate_limits`.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

__all__ = ["rate_limit_headers"]


def _go_duration(seconds: float) -> str:
    if seconds < 1:
        return f"{round(seconds * 1000)}ms"
    minutes, rest = divmod(seconds, 60)
    return (f"{int(minutes)}m" if minutes else "") + f"{rest:g}s"


def rate_limit_headers(
    dialect: str,
    *,
    requests: int | None = None,
    tokens: int | None = None,
    reset: float = 60.0,
    retry_after: float | None = None,
    now: float | None = None,
) -> dict[str, str]:
    """The headers a provider of `dialect` sends to say what is left of its budget.

    Args:
        dialect: the dialect whose provider's shape to use.
        requests: requests left (None: not said).
        tokens: tokens left (None: not said).
        reset: seconds until what is said refills.
        retry_after: a `Retry-After` (seconds) to add, as with a 429.
        now: the time the resets count from, for Anthropic's times
            (default: the wall clock).

    Example:
        >>> sorted(rate_limit_headers("anthropic", tokens=10, now=0.0))
        ['anthropic-ratelimit-tokens-remaining', 'anthropic-ratelimit-tokens-reset']
    """
    headers: dict[str, str] = {}
    for what, left in (("requests", requests), ("tokens", tokens)):
        if left is None:
            continue
        if dialect == "anthropic":
            at = (time.time() if now is None else now) + reset
            when = datetime.fromtimestamp(at, UTC).isoformat().replace("+00:00", "Z")
            headers[f"anthropic-ratelimit-{what}-remaining"] = str(left)
            headers[f"anthropic-ratelimit-{what}-reset"] = when
        else:
            headers[f"x-ratelimit-remaining-{what}"] = str(left)
            headers[f"x-ratelimit-reset-{what}"] = _go_duration(reset)
    if retry_after is not None:
        headers["retry-after"] = f"{retry_after:g}"
    return headers

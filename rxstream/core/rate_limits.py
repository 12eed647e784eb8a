"""Read a provider's rate-limit headers: what is left of its budget and when it refills.

Input: an HTTP answer's headers (any mapping, any case) and the time of the
answer (`now`, seconds since the epoch, on the caller's clock). Output: one
`RateLimits`, every wait in seconds from `now`. Nothing here reads a clock:
the same headers and `now` always give the same result.

The headers, as providers send them:

- OpenAI (and the servers that copy it: Groq, Azure, OpenRouter):
  `x-ratelimit-remaining-requests`, `x-ratelimit-remaining-tokens`,
  `x-ratelimit-reset-requests`, `x-ratelimit-reset-tokens`, the resets as Go
  durations (`"1s"`, `"6m0s"`, `"20ms"`, `"1h2m3.5s"`);
- Anthropic: `anthropic-ratelimit-requests-remaining`,
  `anthropic-ratelimit-tokens-remaining` (the most restrictive token limit;
  else `-input-tokens-` and `-output-tokens-`, whichever is lower), each with a
  `-reset` as an RFC 3339 time;
- every provider: `retry-after-ms` (milliseconds), `Retry-After` (seconds or
  an HTTP date).

Invariants: nothing here raises on any header value; a value that cannot be
read is left out (None), so a strange header never stops a stream.
"""

from __future__ import annotations

import email.utils
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

__all__ = ["RateLimits", "duration_seconds", "rate_limits", "retry_after_seconds"]


@dataclass(frozen=True, slots=True)
class RateLimits:
    """What a provider's answer said of its rate limits (None: it did not say).

    Attributes:
        remaining_requests: requests left in the provider's current window.
        remaining_tokens: tokens left in it.
        requests_reset: seconds until the request budget is full again.
        tokens_reset: seconds until the token budget is full again.
        retry_after: seconds the provider asks to wait before the next request.
    """

    remaining_requests: int | None = None
    remaining_tokens: int | None = None
    requests_reset: float | None = None
    tokens_reset: float | None = None
    retry_after: float | None = None


_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ms|[smhd])", re.ASCII)
_NUMBER = re.compile(r"\d+(?:\.\d*)?|\.\d+", re.ASCII)


def duration_seconds(text: str) -> float | None:
    """A Go-style duration (`"6m0s"`, `"20ms"`, `"1h2m3.5s"`) or a bare number of seconds.

    >>> duration_seconds("6m0s"), duration_seconds("20ms"), duration_seconds("1.5")
    (360.0, 0.02, 1.5)
    >>> duration_seconds("soon") is None
    True
    """
    text = text.strip()
    if _NUMBER.fullmatch(text):
        total, at = float(text), len(text)
    else:
        total, at = 0.0, 0
        for match in _PART.finditer(text):
            if match.start() != at:
                return None
            total += float(match.group(1)) * _UNITS[match.group(2)]
            at = match.end()
    return total if at == len(text) and at and math.isfinite(total) else None


def _instant(text: str, now: float) -> float | None:
    """Seconds from `now` to an RFC 3339 time (never negative), or None."""
    try:
        when = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        return max(0.0, when.timestamp() - now)
    except (ValueError, OverflowError):  # not a time, or one out of range
        return None


def _reset(text: str | None, now: float) -> float | None:
    if text is None:
        return None
    seconds = duration_seconds(text)
    return seconds if seconds is not None else _instant(text, now)


def _count(text: str | None) -> int | None:
    if text is None:
        return None
    text = text.strip()
    return int(text) if text.isascii() and text.isdigit() else None


def retry_after_seconds(headers: Mapping[str, str], now: float) -> float | None:
    """Seconds to wait from `retry-after-ms`, else `Retry-After` (seconds or an HTTP date).

    >>> retry_after_seconds({"Retry-After": "2"}, 0.0), retry_after_seconds({}, 0.0)
    (2.0, None)
    """
    lower = _lower(headers)
    millis = lower.get("retry-after-ms")
    if millis is not None:
        try:
            value = float(millis)
        except ValueError:
            value = math.nan
        if 0 <= value < math.inf:
            return value / 1000
    text = lower.get("retry-after")
    if text is None:
        return None
    text = text.strip()
    if re.fullmatch(r"\d+(\.\d+)?", text, re.ASCII):
        return float(text)
    try:
        when = email.utils.parsedate_to_datetime(text)
        return max(0.0, when.timestamp() - now)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


def _lower(headers: Mapping[str, str]) -> dict[str, str]:
    return {key.lower(): value for key, value in headers.items()}


def _least(*values: int | None) -> int | None:
    known = [v for v in values if v is not None]
    return min(known) if known else None


def _latest(*values: float | None) -> float | None:
    known = [v for v in values if v is not None]
    return max(known) if known else None


def rate_limits(headers: Mapping[str, str], now: float) -> RateLimits:
    """Read the rate-limit headers of one answer (see the module docstring).

    Args:
        headers: the answer's headers.
        now: when the answer arrived (seconds since the epoch), for the
            resets given as times.

    >>> rate_limits({"x-ratelimit-remaining-requests": "0",
    ...              "x-ratelimit-reset-requests": "6m0s"}, 0.0).requests_reset
    360.0
    """
    h = _lower(headers)
    ant = "anthropic-ratelimit-"
    tokens = _count(h.get(ant + "tokens-remaining"))
    tokens_reset = _reset(h.get(ant + "tokens-reset"), now)
    if tokens is None:
        tokens = _least(
            _count(h.get(ant + "input-tokens-remaining")),
            _count(h.get(ant + "output-tokens-remaining")),
        )
        tokens_reset = _latest(
            _reset(h.get(ant + "input-tokens-reset"), now),
            _reset(h.get(ant + "output-tokens-reset"), now),
        )
    return RateLimits(
        remaining_requests=_least(
            _count(h.get("x-ratelimit-remaining-requests")),
            _count(h.get(ant + "requests-remaining")),
        ),
        remaining_tokens=_least(_count(h.get("x-ratelimit-remaining-tokens")), tokens),
        requests_reset=_latest(
            _reset(h.get("x-ratelimit-reset-requests"), now),
            _reset(h.get(ant + "requests-reset"), now),
        ),
        tokens_reset=_latest(_reset(h.get("x-ratelimit-reset-tokens"), now), tokens_reset),
        retry_after=retry_after_seconds(h, now),
    )

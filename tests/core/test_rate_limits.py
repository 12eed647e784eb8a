"""rxstream.core.rate_limits: every provider's rate-limit headers, read the same way."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rxstream.core.rate_limits import (
    RateLimits,
    duration_seconds,
    rate_limits,
    retry_after_seconds,
)

NOW = 1_700_000_000.0  # 2023-11-14T22:13:20Z


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("1s", 1.0),
        ("6m0s", 360.0),
        ("20ms", 0.02),
        ("1h2m3.5s", 3723.5),
        ("2d", 172800.0),
        ("0.5s", 0.5),
        (".5s", 0.5),
        ("17", 17.0),
        (" 3s ", 3.0),
        ("7m12.5s", 432.5),
        ("", None),
        ("soon", None),
        ("1x", None),
        ("s", None),
        ("1s garbage", None),
        ("-1s", None),
    ],
)
def test_durations(text: str, seconds: float | None) -> None:
    assert duration_seconds(text) == seconds


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        pytest.param({}, RateLimits(), id="none"),
        pytest.param(
            {
                "x-ratelimit-limit-requests": "60",
                "x-ratelimit-remaining-requests": "59",
                "x-ratelimit-reset-requests": "1s",
                "x-ratelimit-limit-tokens": "150000",
                "x-ratelimit-remaining-tokens": "149984",
                "x-ratelimit-reset-tokens": "6m0s",
            },
            RateLimits(59, 149984, 1.0, 360.0),
            id="openai",
        ),
        pytest.param(
            {
                "X-RateLimit-Remaining-Requests": "0",
                "X-RateLimit-Reset-Requests": "20ms",
            },
            RateLimits(remaining_requests=0, requests_reset=0.02),
            id="openai-any-case",
        ),
        pytest.param(
            {
                "anthropic-ratelimit-requests-remaining": "49",
                "anthropic-ratelimit-requests-reset": "2023-11-14T22:13:50Z",
                "anthropic-ratelimit-tokens-remaining": "7000",
                "anthropic-ratelimit-tokens-reset": "2023-11-14T22:14:20Z",
                "anthropic-ratelimit-input-tokens-remaining": "5000",
                "retry-after": "4",
            },
            RateLimits(49, 7000, 30.0, 60.0, 4.0),
            id="anthropic",
        ),
        pytest.param(
            {
                "anthropic-ratelimit-input-tokens-remaining": "5000",
                "anthropic-ratelimit-input-tokens-reset": "2023-11-14T22:13:30+00:00",
                "anthropic-ratelimit-output-tokens-remaining": "800",
                "anthropic-ratelimit-output-tokens-reset": "2023-11-14T22:13:25Z",
            },
            RateLimits(remaining_tokens=800, tokens_reset=10.0),
            id="anthropic-input-and-output",
        ),
        pytest.param(
            {"anthropic-ratelimit-requests-reset": "2023-11-14T22:00:00Z"},
            RateLimits(requests_reset=0.0),
            id="reset-in-the-past",
        ),
        pytest.param(
            {"retry-after-ms": "1500", "retry-after": "9"},
            RateLimits(retry_after=1.5),
            id="retry-after-ms-first",
        ),
        pytest.param(
            {"retry-after": "Tue, 14 Nov 2023 22:13:25 GMT"},
            RateLimits(retry_after=5.0),
            id="retry-after-date",
        ),
        pytest.param(
            {
                "x-ratelimit-remaining-requests": "many",
                "x-ratelimit-reset-tokens": "later",
                "anthropic-ratelimit-requests-reset": "not a time",
                "retry-after": "soon",
                "retry-after-ms": "nan",
            },
            RateLimits(),
            id="unreadable-values-are-left-out",
        ),
        pytest.param(
            {"x-ratelimit-remaining-requests": "3", "anthropic-ratelimit-requests-remaining": "1"},
            RateLimits(remaining_requests=1),
            id="the-least-left-wins",
        ),
    ],
)
def test_headers(headers: dict[str, str], expected: RateLimits) -> None:
    assert rate_limits(headers, NOW) == expected


def test_retry_after_alone() -> None:
    assert retry_after_seconds({"Retry-After": "2.5"}, NOW) == 2.5
    assert retry_after_seconds({"retry-after-ms": "-1", "retry-after": "3"}, NOW) == 3.0
    assert retry_after_seconds({"retry-after": "Tue, 14 Nov 2023 22:00:00 GMT"}, NOW) == 0.0


_NAMES = st.sampled_from(
    [
        "x-ratelimit-remaining-requests",
        "x-ratelimit-remaining-tokens",
        "x-ratelimit-reset-requests",
        "x-ratelimit-reset-tokens",
        "anthropic-ratelimit-requests-remaining",
        "anthropic-ratelimit-requests-reset",
        "anthropic-ratelimit-tokens-remaining",
        "anthropic-ratelimit-tokens-reset",
        "anthropic-ratelimit-input-tokens-reset",
        "retry-after",
        "retry-after-ms",
    ]
)


@given(st.dictionaries(_NAMES, st.text(max_size=30)), st.floats(0, 4e9))
def test_any_header_value_is_read_or_left_out(headers: dict[str, str], now: float) -> None:
    limits = rate_limits(headers, now)
    for wait in (limits.requests_reset, limits.tokens_reset, limits.retry_after):
        assert wait is None or wait >= 0
    for left in (limits.remaining_requests, limits.remaining_tokens):
        assert left is None or left >= 0


@pytest.mark.parametrize(
    "value",
    ["²", "٣s", "0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-23:59", "1" * 400 + "s"],
)
def test_strange_values_never_raise(value: str) -> None:
    names = ("x-ratelimit-remaining-requests", "x-ratelimit-reset-tokens", "retry-after")
    headers = dict.fromkeys(names, value) | {"anthropic-ratelimit-tokens-reset": value}
    limits = rate_limits(headers, NOW)
    assert limits.remaining_requests is None


def test_a_duration_too_long_to_hold_is_left_out() -> None:
    assert duration_seconds("9" * 400) is None
    assert duration_seconds("9" * 400 + "h") is None

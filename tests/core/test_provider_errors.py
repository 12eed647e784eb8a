"""provider_errors: one reading of every error shape, in chunks, events and HTTP bodies."""

from __future__ import annotations

import json
from typing import Any

import pytest

from rxstream.core.provider_errors import (
    ErrorFields,
    error_fields,
    event_error,
    provider_error,
    provider_message,
    reported_error,
    retry_delay,
)
from rxstream.errors import EXCERPT_LIMIT, ProviderError

ANTHROPIC = {
    "type": "error",
    "error": {"details": None, "type": "overloaded_error", "message": "Overloaded"},
    "request_id": "req_1",
}
GOOGLE = [
    {
        "error": {
            "code": 429,
            "message": "Resource has been exhausted",
            "status": "RESOURCE_EXHAUSTED",
        }
    }
]

# (id, payload, what error_fields reads, or None for "no error")
SHAPES: list[tuple[str, Any, ErrorFields | None]] = [
    (
        "openai",
        {"error": {"message": "Rate limit", "type": "requests", "code": "rate_limit_exceeded"}},
        ErrorFields("Rate limit", "requests", "rate_limit_exceeded"),
    ),
    ("anthropic", ANTHROPIC, ErrorFields("Overloaded", "overloaded_error", None)),
    (
        "google, in a list",
        GOOGLE,
        ErrorFields("Resource has been exhausted", "RESOURCE_EXHAUSTED", 429),
    ),
    (
        "openai responses, flat",
        {"type": "error", "code": "insufficient_quota", "message": "You exceeded"},
        ErrorFields("You exceeded", None, "insufficient_quota"),
    ),
    ("error text", {"error": "boom"}, ErrorFields("boom", None, None)),
    (
        "tgi error text and type",
        {"error": "Input validation error", "error_type": "validation"},
        ErrorFields("Input validation error", "validation", None),
    ),
    ("error empty text", {"error": ""}, ErrorFields(None, None, None)),
    ("error a number", {"error": 5}, ErrorFields(None, None, None)),
    (
        "odd field types are left out",
        {"error": {"message": 1, "type": 2, "code": True}},
        ErrorFields(None, None, None),
    ),
    ("error null is no error", {"error": None, "choices": []}, None),
    ("a chunk", {"choices": []}, None),
    ("not an object", "text", None),
    ("an empty list", [], None),
    ("a list of numbers", [1], None),
]


@pytest.mark.parametrize(("payload", "fields"), [c[1:] for c in SHAPES], ids=[c[0] for c in SHAPES])
def test_error_fields(payload: Any, fields: ErrorFields | None) -> None:
    assert error_fields(payload) == fields


def test_provider_error_keeps_the_payload_and_falls_back_to_the_data() -> None:
    data = json.dumps({"error": {"code": 500}})
    error = provider_error(json.loads(data), data=data, event="message")
    assert isinstance(error, ProviderError)
    assert (error.message, error.type, error.code, error.event) == (data, None, 500, "message")
    assert error.payload == {"error": {"code": 500}}
    assert reported_error({"choices": []}, data="{}") is None
    assert provider_error({"choices": []}, data="{}").message == "{}"


def test_provider_error_of_a_big_payload_is_bounded() -> None:
    data = json.dumps({"error": {"code": 500, "pad": "x" * 5000}})
    error = provider_error(json.loads(data), data=data)
    assert error is not None
    assert len(error.message) < EXCERPT_LIMIT + 50


# (id, data of an `event: error` frame, message, type, code)
EVENTS: list[tuple[str, str, str, str | None, str | int | None]] = [
    ("anthropic", json.dumps(ANTHROPIC), "Overloaded", "overloaded_error", None),
    (
        "message and type",
        '{"message": "slow down", "type": "rate_limit"}',
        "slow down",
        "rate_limit",
        None,
    ),
    ("not json", "upstream exploded", "upstream exploded", None, None),
    ("empty", "", "(no data)", None, None),
    ("json without a message", '{"foo": 1}', '{"foo": 1}', None, None),
    ("too deep", "[" * 100_000, "[" * EXCERPT_LIMIT + "… (100000 chars)", None, None),
]


@pytest.mark.parametrize(
    ("data", "message", "type_", "code"), [c[1:] for c in EVENTS], ids=[c[0] for c in EVENTS]
)
def test_event_error(data: str, message: str, type_: str | None, code: str | int | None) -> None:
    error = event_error(data)
    assert (error.message, error.type, error.code, error.event) == (message, type_, code, "error")


# (id, HTTP body, the provider's message)
BODIES: list[tuple[str, bytes, str | None]] = [
    (
        "openai",
        b'{"error": {"message": "Incorrect API key provided", "type": "x"}}',
        "Incorrect API key provided",
    ),
    ("anthropic", json.dumps(ANTHROPIC).encode(), "Overloaded"),
    ("google", json.dumps(GOOGLE).encode(), "Resource has been exhausted"),
    ("error text", b'{"error": "model not found"}', "model not found"),
    ("top-level message", b'{"message": "Unauthorized"}', "Unauthorized"),
    ("fastapi detail", b'{"detail": "Not Found"}', "Not Found"),
    ("google list with a message", b'[{"message": "x"}]', "x"),
    ("html", b"<html><body>502 Bad Gateway</body></html>", None),
    ("empty", b"", None),
    ("json without a message", b'{"ok": false}', None),
    ("invalid utf-8", b"\xff\xfe", None),
    ("too deep", b"[" * 100_000, None),
]


@pytest.mark.parametrize(("body", "message"), [c[1:] for c in BODIES], ids=[c[0] for c in BODIES])
def test_provider_message(body: bytes, message: str | None) -> None:
    assert provider_message(body) == message
    if message is not None:
        assert provider_message(body.decode()) == message


def test_provider_message_is_bounded() -> None:
    body = json.dumps({"error": {"message": "m" * 5000}})
    message = provider_message(body)
    assert message is not None
    assert len(message) < EXCERPT_LIMIT + 50


RETRY_INFO = "type.googleapis.com/google.rpc.RetryInfo"

DELAYS: dict[str, tuple[Any, float | None]] = {
    "listed": ([{"error": {"details": [{"@type": RETRY_INFO, "retryDelay": "37s"}]}}], 37.0),
    "object": ({"error": {"details": [{"@type": RETRY_INFO, "retryDelay": "1.5s"}]}}, 1.5),
    "after-other-details": (
        {
            "error": {
                "details": [3, {"@type": "x.ErrorInfo"}, {"@type": RETRY_INFO, "retryDelay": "2s"}]
            }
        },
        2.0,
    ),
    "no-details": ({"error": {"message": "Quota"}}, None),
    "details-not-a-list": ({"error": {"details": "x"}}, None),
    "delay-not-a-duration": (
        {"error": {"details": [{"@type": RETRY_INFO, "retryDelay": "soon"}]}},
        None,
    ),
    "delay-not-a-string": ({"error": {"details": [{"@type": RETRY_INFO, "retryDelay": 5}]}}, None),
    "negative": ({"error": {"details": [{"@type": RETRY_INFO, "retryDelay": "-1s"}]}}, None),
    "error-not-an-object": ({"error": "busy"}, None),
    "not-json": ("<html>", None),
}


@pytest.mark.parametrize(("body", "seconds"), list(DELAYS.values()), ids=list(DELAYS))
def test_retry_delay_reads_googles_retry_info(body: Any, seconds: float | None) -> None:
    text = body if isinstance(body, str) else json.dumps(body)
    assert retry_delay(text) == seconds
    assert retry_delay(text.encode()) == seconds

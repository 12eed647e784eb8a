"""What an official SDK sends, caught by a loopback server that records it and refuses it.

`sdk_request(send)` runs `send(root URL)` against a `FakeLLMServer` that answers every request
with a 400 no SDK retries, and returns the one request it recorded. `KEY` is the credential the
oracle tests send; `aws_env` (a fixture, shared through `tests/request_oracle/conftest.py`) gives
botocore fixed credentials, region and clock (`FROZEN`) and nothing from the machine.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Callable
from typing import Any

import pytest

from rxstream.testing.server import FakeLLMServer, RecordedRequest, WireAnswer

KEY = "sk-oracle-0123456789"


def _refuse(request: RecordedRequest) -> WireAnswer:
    # A 400 no SDK retries: the request is recorded, the SDK raises, nothing more.
    body = json.dumps({"error": {"message": "recorded", "type": "invalid_request_error"}})
    return WireAnswer(
        400, "Bad Request", headers=(("Content-Type", "application/json"),), body=(body.encode(),)
    )


def sdk_request(send: Callable[[str], Any]) -> RecordedRequest:
    """What the SDK sent when `send(root URL)` ran against a recording server."""

    def run(root: str) -> None:
        result = send(root)
        for _ in result if hasattr(result, "__iter__") else ():
            pass

    with FakeLLMServer.scripted(_refuse) as server:
        root = f"http://127.0.0.1:{server.port}"
        with pytest.raises(Exception) as raised:  # noqa: PT011 - each SDK its own error
            run(root)
        assert server.wait_for_requests(1, timeout=30.0), raised.value
        (recorded,) = server.requests
    return recorded


AWS_KEY_ID = "AKIDEXAMPLEORACLE"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
AWS_REGION = "us-west-2"
FROZEN = datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("botocore")
    for name in (
        "AWS_BEARER_TOKEN_BEDROCK",
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "AWS_ENDPOINT_URL",
        "AWS_ENDPOINT_URL_BEDROCK_RUNTIME",
        "AWS_DEFAULT_REGION",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", AWS_KEY_ID)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", AWS_SECRET)
    monkeypatch.setenv("AWS_REGION", AWS_REGION)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/aws-config")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/aws-credentials")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    import botocore.auth  # type: ignore[import-untyped]

    monkeypatch.setattr(botocore.auth, "get_current_datetime", lambda: FROZEN.replace(tzinfo=None))

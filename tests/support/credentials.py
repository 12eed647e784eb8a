"""Credentials a test sends to a server that echoes them back, and every form they must not leak in.

`PLACES` is where a credential travels (headers, the query string, HTTP Basic auth) as a
request's keyword arguments; `secrets()` every form of it that must not appear in an error
(whole, URL-encoded, any ten characters in a row); `echoed` and `credentials_of` what a careless
server quotes back from a recorded request.
"""

from __future__ import annotations

import base64
from typing import Any
from urllib.parse import quote

import httpx

from rxstream.testing.server import RecordedRequest

KEY = "sk-proj-Zq81XkPw0aT7+mYb3/RcLd5uVe=="
PASSWORD = "hunter2-Basic-Pw9qLx"
BASIC = "Basic " + base64.b64encode(f"alice:{PASSWORD}".encode()).decode()

#: Where the credential travels: the request's keyword arguments for it.
PLACES: dict[str, dict[str, Any]] = {
    "authorization": {"headers": {"Authorization": f"Bearer {KEY}"}},
    "api-key": {"headers": {"api-key": KEY}},
    "x-api-key": {"headers": {"x-api-key": KEY}},
    "x-goog-api-key": {"headers": {"x-goog-api-key": KEY}},
    "query-key": {"params": {"key": KEY}},
    "basic-auth": {"auth": httpx.BasicAuth("alice", PASSWORD)},
}


def secrets() -> list[str]:
    """Every form of a credential that must not appear: whole, URL-encoded, and long pieces."""
    forms = [KEY, quote(KEY, safe=""), KEY.replace("+", " "), PASSWORD, BASIC.split(" ", 1)[1]]
    # Any 10 characters in a row of the key: a half-redacted key is a leaked key.
    pieces = [KEY[i : i + 10] for i in range(len(KEY) - 9)]
    return [*forms, *pieces, PASSWORD[:10], PASSWORD[-10:]]


def echoed(request: RecordedRequest) -> str:
    """Every credential the request carried, as a careless server would quote them."""
    values = [f"{name}: {value}" for name, value in request.headers.items()]
    values += [f"target: {request.path}", f"query: {request.query}"]
    auth = request.headers.get("authorization", "")
    if auth.startswith("Basic "):
        values.append("password: " + base64.b64decode(auth[6:]).decode().partition(":")[2])
    return "; ".join(values)


def credentials_of(request: RecordedRequest) -> str:
    """Only the credentials the request carried, one after the other."""
    echo = echoed(request)
    values = [v for v in (KEY, BASIC, PASSWORD) if v in echo or quote(v, safe="") in echo]
    return " ".join(values)

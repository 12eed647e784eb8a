"""Faults for the fake server, in a small syntax: `cut:3`, `stall:2.5`, `429:retry-after=2`, ...

A fault turns the answer a `FakeLLMServer` was going to send into a failing
one, in the asked dialect's own terms, by the scenario steps the server
already has (`Disconnect`, `Stall`, `Fail`, `Scenario.error`). Faults come
from `FakeLLMServer(faults=...)` / `rxstream fake-server --fault SPEC` (the
Nth request answered gets the Nth fault, the last one repeating) or from one
request's `x-rxstream-fault: SPEC` header (which wins for that request).

The syntax (`FAULT_SYNTAX`); a "piece" is one write of the answer (one delta:
one event in most dialects; Anthropic and the Responses API send a block's
opening events with its first piece):

| spec | the answer |
|---|---|
| `ok` (or `none`) | as it is, no fault |
| `cut:N` | the first N pieces, then the connection closes mid-body |
| `reset:N` | the first N pieces, then a TCP reset |
| `stall:S` | everything but the end marker, then S seconds of silence (S <= 30), then the end |
| `stall:forever` | everything but the end marker, then silence until the client leaves |
| `stall:S@N` | S seconds (or `forever`) of silence after N pieces |
| `error[:KIND][@N]` | the dialect's own error event after N pieces (default: half) |
| `429[:retry-after=S]` | HTTP 429 in the dialect's error shape, `Retry-After: S` (default 1) |
| `529`, `503`, any 4xx/5xx `[:retry-after=S]` | that HTTP error in the dialect's shape |
| `overloaded[:retry-after=S]` | 529 for Anthropic, 503 for every other dialect |
| `STATUS:retry-after-ms=MS` | the wait in `retry-after-ms` (OpenAI's header) instead |
| `STATUS:should-retry=true` (or `false`) | with `x-should-retry` (the official SDKs obey it) |

A status fault's options go one after another (`503:retry-after=2:should-retry=false`).
For Gemini, which sends no `Retry-After`, the wait goes in the error body's
`google.rpc.RetryInfo` detail (`"retryDelay": "2s"`), as Google's API sends it.

An error's KIND is `server` (the default), `overloaded` or `rate-limit`; a 529
is Anthropic's `overloaded_error` in its shape. A cut, stall or error never goes
past the end marker (N larger than the
answer counts up to it); on an answer that is an HTTP error already only the
status faults change anything.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from ..core.dialects import http_error
from ._routes import FAULT_HEADER
from ._scenario import MAX_WAIT, Disconnect, Done, End, Fail, Scenario, Stall, Step

__all__ = ["FAULT_HEADER", "FAULT_SYNTAX", "Fault", "parse_fault", "parse_faults"]

#: The syntax in one line each (for `--help` and error messages).
FAULT_SYNTAX = (
    "ok | cut:N | reset:N | stall:SECONDS[@N] | stall:forever[@N] | error[:KIND][@N] "
    "(KIND: server, overloaded, rate-limit) | STATUS[:retry-after=SECONDS] (400-599, e.g. "
    "429, 503, 529) | overloaded[:retry-after=SECONDS] (529 for anthropic, else 503); "
    "a status also takes :retry-after-ms=MS and :should-retry=true|false"
)

FaultKind = Literal["ok", "cut", "reset", "stall", "error", "status"]

#: Mid-stream error kinds: (message, HTTP-like code, type per dialect, type elsewhere).
_ERRORS: dict[str, tuple[str, int, dict[str, str], str]] = {
    "server": (
        "Internal server error",
        500,
        {"anthropic": "api_error", "gemini": "INTERNAL", "bedrock": "internalServerException"},
        "server_error",
    ),
    "overloaded": (
        "Overloaded",
        529,
        {
            "anthropic": "overloaded_error",
            "gemini": "UNAVAILABLE",
            "bedrock": "serviceUnavailableException",
        },
        "server_error",
    ),
    "rate-limit": (
        "Rate limit exceeded",
        429,
        {
            "anthropic": "rate_limit_error",
            "gemini": "RESOURCE_EXHAUSTED",
            "bedrock": "throttlingException",
        },
        "rate_limit_exceeded",
    ),
}
_STATUS_MESSAGES = {429: "Rate limit exceeded", 503: "Service unavailable", 529: "Overloaded"}
_CODES = {"overloaded": 503, "rate-limit": 429}  # Gemini's in-stream code for a kind

_NUMBER = r"\d+(?:\.\d*)?|\.\d+"
_STATUS = re.compile(
    rf"(\d{{3}}|overloaded)(?::retry-after=({_NUMBER}))?(?::retry-after-ms=({_NUMBER}))?"
    r"(?::should-retry=(true|false))?"
)
_PIECES = re.compile(r"(cut|reset):(\d+)")
_STALL = re.compile(rf"stall:({_NUMBER}|forever|inf)(?:@(\d+))?")
_ERROR = re.compile(r"error(?::([a-z-]+))?(?:@(\d+))?")


@dataclass(frozen=True, slots=True)
class Fault:
    """One fault, as `parse_fault` reads it (see the module docstring for the syntax).

    Attributes:
        kind: `"ok"`, `"cut"`, `"reset"`, `"stall"`, `"error"` or `"status"`.
        after: the pieces sent before the fault (None: its default place).
        seconds: a stall's length (`math.inf`: until the client leaves).
        status: a status fault's HTTP status (0: `overloaded`, by dialect).
        retry_after: the `Retry-After` header's value (None: no header).
        retry_after_ms: the `retry-after-ms` header's value (None: no header).
        should_retry: the `x-should-retry` header's value (None: no header).
        error: a mid-stream error's kind (`server`, `overloaded`, `rate-limit`).
        spec: the spec as written.
    """

    kind: FaultKind
    after: int | None = None
    seconds: float = 0.0
    status: int = 0
    retry_after: str | None = None
    error: str = "server"
    spec: str = "ok"
    retry_after_ms: str | None = None
    should_retry: str | None = None

    def apply(self, scenario: Scenario, dialect: str) -> Scenario:
        """`scenario` with this fault, for a request in `dialect`.

        Example:
            >>> cut = parse_fault("cut:1").apply(Scenario.text("a", "b"), "openai-chat")
            >>> [type(step).__name__ for step in cut.steps]
            ['Chunk', 'Disconnect']
        """
        if self.kind == "ok":
            return scenario
        if self.kind == "status":
            return self._status(dialect)
        if scenario.http_error is not None or scenario.body is not None:
            return scenario  # nothing streams: nothing to cut, stall or interrupt
        steps = scenario.steps
        content = next((i for i, s in enumerate(steps) if isinstance(s, End | Done)), len(steps))
        if self.kind == "error":
            at = min(self.after, content) if self.after is not None else (content + 1) // 2
            return Scenario(steps=(*steps[:at], self._fail(dialect)), model=scenario.model)
        at = content if self.after is None else min(self.after, content)
        tail: tuple[Step, ...]
        if self.kind == "stall":
            tail = (Stall(self.seconds), *steps[at:])
        else:
            tail = (Disconnect(reset=self.kind == "reset"),)
        return Scenario(
            steps=(*steps[:at], *tail),
            status=scenario.status,
            headers=scenario.headers,
            content_type=scenario.content_type,
            framing=scenario.framing,
            model=scenario.model,
        )

    def describe(self) -> str:
        """What the fault does, in a few words (for the command's banner).

        >>> parse_fault("429").describe(), parse_fault("stall:forever").describe()
        ('HTTP 429 (Retry-After: 1)', 'a stall before the end marker, until the client leaves')
        """
        where = "before the end marker" if self.after is None else f"after {self.after} pieces"
        match self.kind:
            case "ok":
                return "no fault"
            case "cut" | "reset":
                how = "closed" if self.kind == "cut" else "reset"
                return f"the connection {how} after {self.after} pieces"
            case "stall":
                length = (
                    "until the client leaves" if math.isinf(self.seconds) else f"{self.seconds:g} s"
                )
                return f"a stall {where}, {length}"
            case "error":
                at = "halfway" if self.after is None else f"after {self.after} pieces"
                return f"a {self.error} error event {at}"
        status = str(self.status) if self.status else "529 (anthropic) / 503"
        said = [
            f"{name}: {value}"
            for name, value in (
                ("Retry-After", self.retry_after),
                ("retry-after-ms", self.retry_after_ms),
                ("x-should-retry", self.should_retry),
            )
            if value is not None
        ]
        retry = f" ({', '.join(said)})" if said else ""
        return f"HTTP {status}{retry}"

    def _status(self, dialect: str) -> Scenario:
        status = self.status or (529 if dialect == "anthropic" else 503)
        message = _STATUS_MESSAGES.get(status, f"Fake error {status}")
        headers = {}
        if self.retry_after_ms is not None:
            headers["retry-after-ms"] = self.retry_after_ms
        if self.should_retry is not None:
            headers["x-should-retry"] = self.should_retry
        if self.retry_after is None:
            return Scenario.error(status, message, headers=headers)
        if dialect != "gemini":
            return Scenario.error(
                status, message, headers={"Retry-After": self.retry_after, **headers}
            )
        # Google says how long to wait in the body, in a RetryInfo detail.
        body = json.loads(http_error("gemini", status, message)[1])
        body[0]["error"]["details"] = [
            {
                "@type": "type.googleapis.com/google.rpc.RetryInfo",
                "retryDelay": f"{self.retry_after}s",
            }
        ]
        return Scenario.error(status, headers=headers, body=body)

    def _fail(self, dialect: str) -> Fail:
        message, code, types, other = _ERRORS[self.error]
        if dialect == "gemini":
            return Fail(message, types["gemini"], _CODES.get(self.error, code))
        if dialect == "bedrock":
            return Fail(message, types["bedrock"], code)
        return Fail(message, types.get(dialect, other))


def parse_fault(spec: str) -> Fault:
    """The `Fault` a spec says (see the module docstring).

    Raises:
        ValueError: a spec outside the syntax (the message quotes it and gives the syntax).

    Example:
        >>> parse_fault("429:retry-after=2")
        Fault(kind='status', after=None, seconds=0.0, status=429, retry_after='2', \
error='server', spec='429:retry-after=2', retry_after_ms=None, should_retry=None)
        >>> parse_fault("stall:2.5@3").seconds
        2.5
    """
    if not isinstance(spec, str):
        raise TypeError(f"a fault spec is a str, got {type(spec).__name__}")
    text = spec.strip().lower()
    fault = _read(text)
    if fault is None:
        raise ValueError(f"not a fault: {spec[:80]!r}; the syntax: {FAULT_SYNTAX}")
    return fault


def parse_faults(specs: str | Iterable[str]) -> tuple[Fault, ...]:
    """Faults for successive requests: specs separated by commas, in one string or several.

    Raises:
        ValueError: an empty spec or one outside the syntax.

    >>> [f.kind for f in parse_faults(["429, cut:3", "ok"])]
    ['status', 'cut', 'ok']
    """
    texts = [specs] if isinstance(specs, str) else list(specs)
    return tuple(parse_fault(part) for text in texts for part in text.split(","))


def _read(text: str) -> Fault | None:
    if text in ("ok", "none"):
        return Fault("ok", spec=text)
    if found := _PIECES.fullmatch(text):
        kind: FaultKind = "cut" if found.group(1) == "cut" else "reset"
        return Fault(kind, after=int(found.group(2)), spec=text)
    if found := _STALL.fullmatch(text):
        length = found.group(1)
        seconds = math.inf if length in ("forever", "inf") else float(length)
        if not 0 < seconds <= MAX_WAIT and not math.isinf(seconds):
            raise ValueError(
                f"a stall lasts more than 0 and at most {MAX_WAIT:g} seconds, got {text!r} "
                "(stall:forever waits until the client leaves)"
            )
        return Fault("stall", after=_int(found.group(2)), seconds=seconds, spec=text)
    if found := _ERROR.fullmatch(text):
        kind_name = found.group(1) or "server"
        if kind_name not in _ERRORS:
            raise ValueError(
                f"unknown error kind {kind_name!r} in {text!r}; one of {', '.join(_ERRORS)}"
            )
        return Fault("error", after=_int(found.group(2)), error=kind_name, spec=text)
    if found := _STATUS.fullmatch(text):
        status = 0 if found.group(1) == "overloaded" else int(found.group(1))
        if status and not 400 <= status <= 599:
            raise ValueError(f"a status fault is an HTTP error, 400 to 599, got {text!r}")
        millis, should = found.group(3), found.group(4)
        retry = found.group(2) or ("1" if status == 429 and millis is None else None)
        return Fault(
            "status",
            status=status,
            retry_after=retry,
            spec=text,
            retry_after_ms=millis,
            should_retry=should,
        )
    return None


def _int(text: str | None) -> int | None:
    return int(text) if text is not None else None

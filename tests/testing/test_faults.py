"""Faults for `FakeLLMServer`: the spec syntax, `faults=` and the `x-rxstream-fault` header."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

import rxstream as rs
from rxstream.testing import FAULT_HEADER, FakeLLMServer, Fault, Scenario, parse_fault
from rxstream.testing._faults import parse_faults
from rxstream.testing.server import Disconnect, End, Fail, Say, Stall

ASK = [{"role": "user", "content": "Tell me a story about a cat"}]
TEXT = 'You said: "Tell me a story about a cat"'

# --------------------------------------------------------------------------- the syntax

PARSED: dict[str, tuple[str, Fault]] = {
    "ok": ("ok", Fault("ok", spec="ok")),
    "none": (" None ", Fault("ok", spec="none")),
    "cut": ("cut:3", Fault("cut", after=3, spec="cut:3")),
    "reset": ("reset:0", Fault("reset", after=0, spec="reset:0")),
    "stall": ("stall:2.5", Fault("stall", seconds=2.5, spec="stall:2.5")),
    "stall-after": ("stall:1@2", Fault("stall", after=2, seconds=1.0, spec="stall:1@2")),
    "stall-forever": ("stall:forever", Fault("stall", seconds=math.inf, spec="stall:forever")),
    "error": ("error", Fault("error", spec="error")),
    "error-kind-at": (
        "error:overloaded@2",
        Fault("error", after=2, error="overloaded", spec="error:overloaded@2"),
    ),
    "429-default-retry": ("429", Fault("status", status=429, retry_after="1", spec="429")),
    "429-retry": (
        "429:retry-after=2.5",
        Fault("status", status=429, retry_after="2.5", spec="429:retry-after=2.5"),
    ),
    "529": ("529", Fault("status", status=529, spec="529")),
    "overloaded": ("OVERLOADED", Fault("status", status=0, spec="overloaded")),
    "retry-after-ms": (
        "429:retry-after-ms=1500",
        Fault("status", status=429, spec="429:retry-after-ms=1500", retry_after_ms="1500"),
    ),
    "should-retry": (
        "503:retry-after=2:should-retry=false",
        Fault(
            "status",
            status=503,
            retry_after="2",
            spec="503:retry-after=2:should-retry=false",
            should_retry="false",
        ),
    ),
}


@pytest.mark.parametrize(("spec", "fault"), list(PARSED.values()), ids=list(PARSED))
def test_a_spec_is_read(spec: str, fault: Fault) -> None:
    assert parse_fault(spec) == fault


BAD: dict[str, tuple[str, str]] = {
    "empty": ("", "not a fault: ''"),
    "word": ("explode", "not a fault: 'explode'"),
    "cut-without-count": ("cut", "not a fault: 'cut'"),
    "cut-negative": ("cut:-1", "not a fault: 'cut:-1'"),
    "stall-zero": ("stall:0", "more than 0 and at most 30"),
    "stall-too-long": ("stall:31", "stall:forever waits"),
    "error-kind": ("error:boom", "unknown error kind 'boom'"),
    "status-2xx": ("200", "400 to 599"),
    "retry-not-a-number": ("429:retry-after=soon", "not a fault: '429:retry-after=soon'"),
    "should-retry-word": ("503:should-retry=maybe", "not a fault: '503:should-retry=maybe'"),
}


@pytest.mark.parametrize(("spec", "message"), list(BAD.values()), ids=list(BAD))
def test_a_bad_spec_is_a_clear_value_error(spec: str, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        parse_fault(spec)


def test_specs_separated_by_commas_and_not_a_str() -> None:
    assert [f.spec for f in parse_faults(["429,cut:3", " ok "])] == ["429", "cut:3", "ok"]
    with pytest.raises(ValueError, match="not a fault: ''"):
        parse_faults("429,,ok")
    with pytest.raises(TypeError, match="int"):
        parse_fault(3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="not a fault"):
        FakeLLMServer(faults=["cut:x"])


ANSWER = Scenario.answer(rs.TextDelta("a"), rs.TextDelta("b"), rs.TextDelta("c"), rs.Finish("stop"))


def kinds(scenario: Scenario) -> list[str]:
    return [type(step).__name__ for step in scenario.steps]


APPLIED: dict[str, tuple[str, list[str]]] = {
    "cut": ("cut:2", ["Say", "Say", "Disconnect"]),
    "cut-never-past-the-end": ("cut:99", ["Say", "Say", "Say", "Say", "Disconnect"]),
    "stall-before-the-end": ("stall:1", ["Say", "Say", "Say", "Say", "Stall", "End"]),
    "stall-after": ("stall:1@1", ["Say", "Stall", "Say", "Say", "Say", "End"]),
    "error-halfway": ("error", ["Say", "Say", "Fail"]),
    "error-after": ("error@3", ["Say", "Say", "Say", "Fail"]),
}


@pytest.mark.parametrize(("spec", "steps"), list(APPLIED.values()), ids=list(APPLIED))
def test_a_stream_fault_goes_in_among_the_steps(spec: str, steps: list[str]) -> None:
    assert kinds(parse_fault(spec).apply(ANSWER, "openai-chat")) == steps


def test_the_steps_faults_are_made_of_are_the_servers_own() -> None:
    assert parse_fault("reset:1").apply(ANSWER, "x").steps[-1] == Disconnect(reset=True)
    assert parse_fault("stall:forever").apply(ANSWER, "x").steps[-2] == Stall(math.inf)
    assert isinstance(ANSWER.steps[0], Say)
    assert isinstance(ANSWER.steps[-1], End)
    failed = parse_fault("error:rate-limit").apply(ANSWER, "gemini").steps[-1]
    assert failed == Fail("Rate limit exceeded", "RESOURCE_EXHAUSTED", 429)
    error = Scenario.error(500)
    assert parse_fault("cut:1").apply(error, "anthropic") is error  # nothing streams


# --------------------------------------------------------------------------- against a server


@pytest.fixture(scope="module")
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer.echoing() as fake:
        yield fake


def chat(
    server: FakeLLMServer, dialect: str, fault: str | None = None, timeout: float = 30.0
) -> rs.Message:
    root = f"http://127.0.0.1:{server.port}"

    def script(request: httpx.Request) -> None:
        # rs.chat builds its request itself: the header goes on as it is sent.
        if fault is not None:
            request.headers[FAULT_HEADER] = fault

    with httpx.Client(timeout=timeout, event_hooks={"request": [script]}) as client:
        deltas = rs.chat(
            client,
            dialect,
            model="m",
            messages=ASK,
            base_url=f"{root}/v1" if dialect.startswith("openai") else root,
            api_key="k",
            max_tokens=50,
        )
        message: rs.Message = deltas.pipe(rs.accumulate_message()).run()
    return message


DIALECTS = ["openai-chat", "anthropic", "gemini", "bedrock", "ollama"]


def fails(server: FakeLLMServer, dialect: str, fault: str, **options: Any) -> Exception:
    with pytest.raises(rs.StreamError) as caught:
        chat(server, dialect, fault, **options)
    return caught.value


@pytest.mark.parametrize("dialect", DIALECTS)
def test_429_by_header_in_every_dialects_shape(server: FakeLLMServer, dialect: str) -> None:
    error = fails(server, dialect, "429:retry-after=2")
    assert isinstance(error, rs.HTTPStatusError)
    assert (error.status_code, error.retry_after) == (429, 2.0)
    assert error.provider_message == "Rate limit exceeded"


@pytest.mark.parametrize(
    ("dialect", "status", "message"),
    [
        ("anthropic", 529, "Overloaded"),
        ("openai-chat", 503, "Service unavailable"),
        ("gemini", 503, "Service unavailable"),
    ],
)
def test_overloaded_is_529_for_anthropic_and_503_elsewhere(
    server: FakeLLMServer, dialect: str, status: int, message: str
) -> None:
    error = fails(server, dialect, "overloaded")
    assert isinstance(error, rs.HTTPStatusError)
    assert (error.status_code, error.provider_message) == (status, message)


def test_529_names_anthropics_overloaded_error(server: FakeLLMServer) -> None:
    response = httpx.post(
        server.url_for("anthropic"),
        json={"model": "m", "max_tokens": 5, "stream": True, "messages": ASK},
        headers={FAULT_HEADER: "529"},
    )
    assert response.status_code == 529
    assert response.json() == {
        "type": "error",
        "error": {"type": "overloaded_error", "message": "Overloaded"},
    }


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_cut_stream_is_an_error_for_the_client(server: FakeLLMServer, dialect: str) -> None:
    error = fails(server, dialect, "cut:2")
    assert isinstance(error, rs.TransportError), repr(error)
    assert "closed the connection" in str(error)


@pytest.mark.parametrize(
    ("dialect", "type_"),
    [
        ("anthropic", "overloaded_error"),
        ("openai-chat", "server_error"),
        ("gemini", "UNAVAILABLE"),
        ("bedrock", "serviceUnavailableException"),
    ],
)
def test_an_error_mid_stream_is_the_dialects_own(
    server: FakeLLMServer, dialect: str, type_: str
) -> None:
    error = fails(server, dialect, "error:overloaded@2")
    assert isinstance(error, rs.ProviderError), repr(error)
    assert error.message == "Overloaded"
    assert error.type == type_


def test_a_stall_forever_holds_until_the_client_gives_up(server: FakeLLMServer) -> None:
    gone = server.disconnects
    error = fails(server, "anthropic", "stall:forever@1", timeout=0.5)
    assert isinstance(error, rs.StreamTimeoutError | rs.TransportError), repr(error)
    assert server.wait_for_disconnect(timeout=30, count=gone + 1)


def test_a_short_stall_ends_with_the_whole_answer(server: FakeLLMServer) -> None:
    assert chat(server, "openai-chat", "stall:0.2").content == TEXT


def test_a_bad_header_is_a_400_saying_why(server: FakeLLMServer) -> None:
    error = fails(server, "anthropic", "cut:soon")
    assert isinstance(error, rs.HTTPStatusError)
    assert error.status_code == 400
    assert error.provider_message is not None
    assert "x-rxstream-fault: not a fault: 'cut:soon'" in error.provider_message


@pytest.mark.parametrize("dialect", ["openai-chat", "anthropic", "gemini"])
def test_a_sequence_429_cut_success_seen_by_a_client(dialect: str) -> None:
    """`faults=` scripts successive requests; a client retrying sees each in turn."""
    with FakeLLMServer.echoing(faults=["429:retry-after=1", "cut:1", "ok"]) as server:
        outcomes: list[str] = []
        for _ in range(4):
            try:
                outcomes.append(chat(server, dialect).content)
            except rs.HTTPStatusError as exc:
                outcomes.append(f"HTTP {exc.status_code} retry after {exc.retry_after:g}")
            except (rs.TransportError, rs.TruncatedStreamError):
                outcomes.append("cut")
    assert outcomes == ["HTTP 429 retry after 1", "cut", TEXT, TEXT]


def test_the_header_wins_over_the_sequence_which_goes_on() -> None:
    with FakeLLMServer.echoing(faults="503,ok") as server:
        assert chat(server, "ollama", "ok").content == TEXT  # request 1: the header's
        assert chat(server, "ollama").content == TEXT  # request 2: the sequence's `ok`
    with FakeLLMServer(Scenario.text("Hi"), faults=["cut:1"]) as server:
        with pytest.raises(rs.StreamError):
            chat(server, "openai-chat")  # faults work with any scenario, the last repeating
        with pytest.raises(rs.StreamError):
            chat(server, "openai-chat")


@pytest.mark.parametrize("dialect", ["openai-chat", "anthropic", "gemini"])
def test_the_retry_headers_a_status_fault_says(server: FakeLLMServer, dialect: str) -> None:
    error = fails(server, dialect, "503:retry-after-ms=1500:should-retry=false")
    assert isinstance(error, rs.HTTPStatusError)
    assert (error.status_code, error.retry_after, error.should_retry) == (503, 1.5, False)
    error = fails(server, dialect, "429:should-retry=true")
    assert isinstance(error, rs.HTTPStatusError)
    assert (error.retry_after, error.should_retry) == (1.0, True)


def test_gemini_says_its_wait_in_the_body_as_google_does() -> None:
    scenario = parse_fault("429:retry-after=37").apply(ANSWER, "gemini")
    assert scenario.headers == {}
    assert scenario.body == [
        {
            "error": {
                "code": 429,
                "message": "Rate limit exceeded",
                "status": "RESOURCE_EXHAUSTED",
                "details": [
                    {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "37s"}
                ],
            }
        }
    ]
    assert parse_fault("429:retry-after=37").apply(ANSWER, "anthropic").headers == {
        "Retry-After": "37"
    }


def test_a_status_faults_description_names_its_headers() -> None:
    fault = parse_fault("503:retry-after=2:retry-after-ms=2500:should-retry=false")
    assert fault.describe() == (
        "HTTP 503 (Retry-After: 2, retry-after-ms: 2500, x-should-retry: false)"
    )

"""Two ways a key used to get out (issue 18, items 3 and 4), each over a real socket.

- A server echoes the key `\\u`-escaped inside a JSON error body: the provider's
  message is what is shown, so redaction runs on the decoded text too, whatever
  the escaping (every character, some of them, `\\/`).
- A key holding a character that is not ASCII cannot travel in a header: httpx
  raised a bare `UnicodeEncodeError` whose `args` held the whole header value.
  Now `from_request` refuses it at once with a `ValueError`, and a header the
  client only builds while sending (`auth=`) ends the stream in a
  `TransportError`; neither holds any of the key.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Generator, Iterator

import httpx
import pytest
import reactivex.operators as ops

import rxstream as rs
from rxstream.io.credentials import Credentials
from rxstream.testing.checks import minimal_body
from rxstream.testing.server import FakeLLMServer, RecordedRequest, WireAnswer
from tests.support.leaks import places
from tests.support.sources import MODES, drive

KEY = "sk-live-Qx7/Lm2+Wd9vRt4Yp8=="


def every_char(text: str) -> str:
    return "".join(f"\\u{ord(char):04x}" for char in text)


def upper_hex(text: str) -> str:
    return "".join(f"\\u{ord(char):04X}" for char in text)


def some_chars(text: str) -> str:
    return "".join(f"\\u{ord(char):04x}" if i % 3 == 0 else char for i, char in enumerate(text))


def slashes(text: str) -> str:
    return text.replace("/", "\\/")


def slashes_and_letters(text: str) -> str:
    return "".join(
        "\\/" if char == "/" else f"\\u{ord(char):04x}" if char.isalpha() else char for char in text
    )


#: How a server may write the key inside a JSON string: each is valid JSON for it.
ESCAPINGS: dict[str, Callable[[str], str]] = {
    "every-char": every_char,
    "every-char-upper-hex": upper_hex,
    "some-chars": some_chars,
    "slashes": slashes,
    "slashes-and-letters": slashes_and_letters,
}


def secrets(key: str) -> list[str]:
    """The key, and any 8 characters of it in a row (a half-shown key is a shown key)."""
    return [key, *(key[i : i + 8] for i in range(len(key) - 7))]


def test_every_escaping_is_valid_json_for_the_key() -> None:
    for name, escape in ESCAPINGS.items():
        assert json.loads(f'"{escape(KEY)}"') == KEY, name
        assert KEY not in escape(KEY), name


@pytest.mark.parametrize("escaping", list(ESCAPINGS))
def test_credentials_redact_an_escaped_key_in_a_json_body(escaping: str) -> None:
    credentials = Credentials()
    credentials.add_headers({"Authorization": f"Bearer {KEY}"})
    body = json.dumps({"error": {"message": "x"}}).replace(
        '"x"', f'"bad key {ESCAPINGS[escaping](KEY)}"'
    )
    shown = credentials.redact(body)
    assert json.loads(shown) == {"error": {"message": "bad key [redacted]"}}


@pytest.fixture(scope="module")
def echo_server() -> Iterator[FakeLLMServer]:
    """401 with a JSON body quoting the key the way `?escaping=` says."""

    def answer(request: RecordedRequest) -> WireAnswer:
        key = request.headers.get("authorization", "").removeprefix("Bearer ")
        message = f"Incorrect API key provided: {ESCAPINGS[request.query['escaping']](key)}."
        body = '{"error": {"message": "' + message + '", "type": "invalid_request_error"}}'
        return WireAnswer(
            401,
            "Unauthorized",
            headers=(("Content-Type", "application/json"),),
            body=(body.encode(),),
            framing="length",
        )

    with FakeLLMServer.scripted(answer) as server:
        yield server


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("escaping", list(ESCAPINGS))
def test_a_key_echoed_escaped_in_a_json_error_is_redacted(
    echo_server: FakeLLMServer, mode: str, escaping: str
) -> None:
    url = f"{echo_server.url}?escaping={escaping}"
    outcome = drive(mode, url, request={"headers": {"Authorization": f"Bearer {KEY}"}})
    error = outcome.error
    assert isinstance(error, rs.HTTPStatusError), repr(error)
    assert error.status_code == 401
    # What is shown is the decoded message, with the key redacted and the rest kept.
    assert error.provider_message == "Incorrect API key provided: [redacted]."
    assert "Incorrect API key provided: [redacted]." in str(error)
    # And the raw excerpt, which a reader would decode, holds no escaped key either.
    assert ESCAPINGS[escaping](KEY) not in error.body
    leaks = places(error, [*secrets(KEY), ESCAPINGS[escaping](KEY)])
    assert leaks == [], "\n".join(leaks[:10])


# --------------------------------------------------------------------------- non-ASCII keys

#: A key with a typographic character pasted into it (a non-breaking space, an "é").
FOREIGN_KEYS = {"e-acute": "sk-proj-caf\u00e9Key0123456789", "nbsp": "sk-proj-\u00a0Key0123456789"}


@pytest.mark.parametrize("key", list(FOREIGN_KEYS))
@pytest.mark.parametrize("header", ["Authorization", "x-api-key"])
def test_a_non_ascii_key_is_a_value_error_before_any_request(key: str, header: str) -> None:
    value = f"Bearer {FOREIGN_KEYS[key]}" if header == "Authorization" else FOREIGN_KEYS[key]
    with FakeLLMServer() as server, httpx.Client() as client:
        for headers in ({header: value}, [(header, value)]):
            with pytest.raises(ValueError, match="not ASCII") as caught:
                rs.from_request(client, "POST", server.url, headers=headers)
            assert header in str(caught.value)
            assert places(caught.value, secrets(FOREIGN_KEYS[key])) == []
            assert caught.value.__context__ is None
            assert caught.value.__cause__ is None
        assert server.requests == []


class ForeignAuth(httpx.Auth):
    """An auth flow that sets a header the client can only encode while sending."""

    def __init__(self, key: str) -> None:
        self.key = key

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.headers["x-api-key"] = self.key
        yield request


@pytest.mark.parametrize("mode", ["request", "arequest"])
@pytest.mark.parametrize("key", list(FOREIGN_KEYS))
def test_a_non_ascii_key_added_while_sending_is_a_transport_error(mode: str, key: str) -> None:
    with FakeLLMServer() as server:
        outcome = drive(mode, server.url, request={"auth": ForeignAuth(FOREIGN_KEYS[key])})
        assert server.requests == []
    error = outcome.error
    assert isinstance(error, rs.TransportError), repr(error)
    assert "not ASCII" in str(error)
    assert "POST http://127.0.0.1:" in str(error)
    assert not isinstance(error.__cause__, UnicodeError)
    leaks = places(error, secrets(FOREIGN_KEYS[key]))
    assert leaks == [], "\n".join(leaks[:10])


def test_a_non_ascii_value_that_is_not_a_header_is_left_to_httpx() -> None:
    # Only header values must be ASCII: a JSON body and query parameters encode anything.
    with FakeLLMServer() as server, httpx.Client() as client:
        deltas = (
            rs.from_request(
                client,
                "POST",
                server.url,
                json={**minimal_body("openai-chat"), "x": "caf\u00e9"},
                params={"q": "\u00e9"},
            )
            .pipe(rs.sse_frames(), rs.decode("openai-chat"), ops.to_list())
            .run()
        )
    assert rs.TextDelta("Hello") in deltas
    [request] = server.requests
    assert request.json == {**minimal_body("openai-chat"), "x": "caf\u00e9"}
    assert request.query == {"q": "\u00e9"}

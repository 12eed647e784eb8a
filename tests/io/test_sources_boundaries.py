"""Chunk boundaries anywhere: inside CRLF, inside a UTF-8 character, inside "data:"."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rxstream as rs
from rxstream.testing.checks import minimal_body
from rxstream.testing.server import FakeLLMServer, Raw, Scenario
from tests.support.sources import run

PAYLOAD = minimal_body("openai-chat")
BODY = (
    'data: {"content":"caf\u00e9 \u20ac \U0001f600"}\r\n\r\n: ping\r\ndata: [DONE]\r\n\r\n'.encode()
)
LINES = ['data: {"content":"caf\u00e9 \u20ac \U0001f600"}', "", ": ping", "data: [DONE]", ""]


def mock_client(pieces: list[bytes]) -> httpx.Client:
    """A client whose server sends exactly `pieces`, one `iter_bytes` chunk each."""

    def handler(request: httpx.Request) -> httpx.Response:
        def body() -> Iterator[bytes]:
            yield from pieces

        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body())

    return httpx.Client(transport=httpx.MockTransport(handler))


@pytest.mark.parametrize("cut", range(1, len(BODY)), ids=lambda cut: f"cut-{cut}")
def test_any_single_cut_gives_the_same_lines(cut: int) -> None:
    with mock_client([BODY[:cut], BODY[cut:]]) as client:
        outcome = run(rs.from_request(client, "POST", "http://test/v1/chat/completions"))
    assert outcome.items == LINES
    assert outcome.completed


def test_one_byte_at_a_time_gives_the_same_lines() -> None:
    with mock_client([BODY[i : i + 1] for i in range(len(BODY))]) as client:
        outcome = run(rs.from_request(client, "POST", "http://test/v1/chat/completions"))
    assert outcome.items == LINES


@pytest.mark.parametrize(
    "cuts",
    [
        [BODY.index(b"\r\n") + 1],  # between CR and LF
        [BODY.index("\u20ac".encode()) + 1, BODY.index("\u20ac".encode()) + 2],  # inside a char
        [BODY.index("\U0001f600".encode()) + 3],  # inside a 4-byte char
        [2, 3, 4],  # inside "data:"
    ],
    ids=["inside-crlf", "inside-euro", "inside-emoji", "inside-data-field"],
)
def test_boundaries_over_a_real_socket(fake_llm_server: FakeLLMServer, cuts: list[int]) -> None:
    # framing="close" puts each Raw on the wire byte for byte; the delays keep
    # the pieces in separate reads on the client.
    edges = [0, *cuts, len(BODY)]
    pieces = [BODY[a:b] for a, b in itertools.pairwise(edges)]
    fake_llm_server.serve(
        Scenario(steps=tuple(Raw(piece, delay=0.02) for piece in pieces), framing="close")
    )
    with httpx.Client() as client:
        outcome = run(rs.from_request(client, "POST", fake_llm_server.url, json=PAYLOAD))
    assert outcome.items == LINES
    assert outcome.completed


def test_bom_at_the_start_of_the_body_is_dropped() -> None:
    with mock_client([b"\xef\xbb", b"\xbfdata: x\n\n"]) as client:
        outcome = run(rs.from_request(client, "POST", "http://test/"))
    assert outcome.items == ["data: x", ""]


def test_unterminated_last_line_is_emitted_at_the_end() -> None:
    with mock_client([b"data: a\n\ndata: [DONE]"]) as client:
        outcome = run(rs.from_request(client, "POST", "http://test/"))
    assert outcome.items == ["data: a", "", "data: [DONE]"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    body=st.one_of(
        st.binary(max_size=300),
        st.lists(
            st.sampled_from(
                [b"data: ", b"{", b'"choices"', b":[", b"]", b"}", b"\n", b"\r", b"[DONE]", b"\xc3"]
            ),
            max_size=40,
        ).map(b"".join),
    ),
    cuts=st.lists(st.integers(min_value=0, max_value=300), max_size=5),
)
def test_random_bodies_end_in_a_stream_error_or_complete(body: bytes, cuts: list[int]) -> None:
    edges = sorted({0, len(body), *(c for c in cuts if c < len(body))})
    pieces = [body[a:b] for a, b in itertools.pairwise(edges)]
    with mock_client(pieces) as client:
        outcome = run(
            rs.from_request(client, "POST", "http://test/").pipe(
                rs.sse_frames(), rs.decode_chunks(), rs.deltas()
            )
        )
    assert outcome.completed or isinstance(outcome.error, rs.StreamError), outcome.error

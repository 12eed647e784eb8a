"""`body="lines" | "bytes"` on the HTTP sources, and `raw=`, its deprecated spelling.

`raw=True` collided with `.raw` on items (what the provider sent); it keeps
working for one release with a `DeprecationWarning` that names the new spelling.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator

import httpx
import pytest
import reactivex.operators as ops

import rxstream as rs
from rxstream.testing.checks import minimal_body
from rxstream.testing.server import FakeLLMServer, Scenario
from tests.support.sources import MODES, drive


@pytest.fixture(scope="module")
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(Scenario.text("Hel", "lo")) as fake:
        yield fake


@pytest.mark.parametrize("mode", MODES)
def test_body_bytes_hands_out_the_blocks(server: FakeLLMServer, mode: str) -> None:
    outcome = drive(mode, server.url, source={"body": "bytes"})
    assert outcome.completed, outcome.error
    assert all(isinstance(block, bytes) for block in outcome.items)
    assert b"data: [DONE]" in b"".join(outcome.items)


@pytest.mark.parametrize("mode", MODES)
def test_body_lines_is_the_default(server: FakeLLMServer, mode: str) -> None:
    default = drive(mode, server.url)
    lines = drive(mode, server.url, source={"body": "lines"})
    assert default.items == lines.items
    assert "data: [DONE]" in lines.items


@pytest.mark.parametrize("mode", MODES)
def test_raw_true_still_works_and_warns(server: FakeLLMServer, mode: str) -> None:
    with pytest.warns(DeprecationWarning, match=r'raw=True is deprecated, use body="bytes"'):
        outcome = drive(mode, server.url, source={"raw": True})
    assert outcome.completed, outcome.error
    expected = drive(mode, server.url, source={"body": "bytes"}).items
    assert b"".join(outcome.items) == b"".join(expected)


def test_the_warning_points_at_the_caller(server: FakeLLMServer) -> None:
    with httpx.Client() as client, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rs.from_request(client, "POST", server.url, json=minimal_body("openai-chat"), raw=True)
    [warning] = caught
    assert warning.category is DeprecationWarning
    assert warning.filename == __file__


def test_raw_false_warns_and_reads_lines(server: FakeLLMServer) -> None:
    with httpx.Client() as client:
        with pytest.warns(DeprecationWarning, match='use body="lines"'):
            source = rs.from_request(
                client, "POST", server.url, json=minimal_body("openai-chat"), raw=False
            )
        lines = source.pipe(ops.to_list()).run()
    assert "data: [DONE]" in lines


def test_a_body_of_bytes_reads_bedrock_end_to_end(server: FakeLLMServer) -> None:
    with httpx.Client() as client:
        deltas = (
            rs.from_request(
                client,
                "POST",
                server.url_for("bedrock"),
                json=minimal_body("bedrock"),
                body="bytes",
            )
            .pipe(rs.eventstream_frames(), rs.decode("bedrock"), ops.to_list())
            .run()
        )
    texts = [d for d in deltas if isinstance(d, rs.TextDelta)]
    assert texts == [rs.TextDelta("Hel"), rs.TextDelta("lo")]


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"body": "text"}, 'body must be "lines" or "bytes", got \'text\''),
        ({"body": b"bytes"}, 'body must be "lines" or "bytes"'),
        ({"body": "bytes", "raw": False}, 'raw=False contradicts body="bytes"'),
    ],
)
def test_a_wrong_body_is_a_value_error(
    server: FakeLLMServer, options: dict[str, object], match: str
) -> None:
    with httpx.Client() as client, warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        with pytest.raises(ValueError, match=match):
            rs.from_request(client, "POST", server.url, **options)  # type: ignore[call-overload]
        request = client.build_request("POST", server.url, json=minimal_body("openai-chat"))
        response = client.send(request, stream=True)
        try:
            with pytest.raises(ValueError, match=match):
                rs.from_response(response, **options)  # type: ignore[call-overload]
        finally:
            response.close()

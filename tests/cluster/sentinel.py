"""Redis with Sentinel (Debian's `redis-server` and `redis-sentinel`), private to a test.

A primary, by default one replica and three Sentinels (quorum 2), on free ports of
127.0.0.1, nothing persisted. The Sentinels judge a primary down after `DOWN_AFTER_MS`
without an answer and then promote the replica. `kill_primary()` kills the primary with
SIGKILL, as in a crash.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import redis

from tests.cluster.processes import Daemon
from tests.contract.server import free_port
from tests.services import require_binary

SERVICE = "campaign"
DOWN_AFTER_MS = 1000
HOST = "127.0.0.1"
SENTINEL_CONFIG = """\
port {port}
bind {host}
daemonize no
dir {directory}
sentinel monitor {service} {host} {primary_port} {quorum}
sentinel down-after-milliseconds {service} {down_after_ms}
sentinel failover-timeout {service} 10000
sentinel parallel-syncs {service} 1
"""


def _answers_ping(port: int) -> bool:
    try:
        with redis.Redis(host=HOST, port=port, socket_timeout=0.5, socket_connect_timeout=0.5) as client:
            return bool(client.ping())
    except redis.RedisError:
        return False


def _redis_server(workdir: Path, port: int, *extra: str) -> Daemon:
    return Daemon(
        name=f"redis-server {port}",
        # --dir: a replica writes the primary's snapshot to disk when it syncs.
        command=[require_binary("redis-server"), "--port", str(port), "--bind", HOST, "--save", "",
                 "--appendonly", "no", "--dir", str(workdir), *extra],
        log_path=workdir / f"redis-{port}.log",
        ready=lambda: _answers_ping(port),
    )


@dataclass(slots=True)
class SentinelGroup:
    servers: dict[int, Daemon]  # by port: the primary, then the replica
    sentinel_ports: list[int]

    @property
    def url(self) -> str:
        """REDIS_URL in the notation of the `limits` library."""
        return f"redis+sentinel://{','.join(f'{HOST}:{port}' for port in self.sentinel_ports)}/{SERVICE}"

    def _ask(self, port: int, *command: str) -> object:
        with redis.Redis(host=HOST, port=port, socket_timeout=2, decode_responses=True) as client:
            return client.execute_command(*command)

    def primary_port(self) -> int:
        """The primary's port as the first Sentinel names it."""
        _host, port = self._ask(self.sentinel_ports[0], "SENTINEL", "GET-MASTER-ADDR-BY-NAME", SERVICE)  # type: ignore[misc]
        return int(port)

    def wait_until_watched(self, *, timeout: float = 30.0) -> None:
        """Until every Sentinel knows the replica and the other Sentinels: only then can they
        agree on a failover."""
        deadline = time.monotonic() + timeout
        while True:
            states = [self._ask(port, "SENTINEL", "MASTER", SERVICE) for port in self.sentinel_ports]
            ready = all(
                int(state["num-slaves"]) == len(self.servers) - 1  # type: ignore[index]
                and int(state["num-other-sentinels"]) == len(self.sentinel_ports) - 1  # type: ignore[index]
                for state in states
            )
            if ready:
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"Sentinels not ready: {states}")
            time.sleep(0.2)

    def kill_primary(self) -> int:
        """SIGKILL the primary; its port."""
        port = self.primary_port()
        self.servers[port].kill()
        return port

    def wait_for_new_primary(self, old_port: int, *, timeout: float = 30.0) -> int:
        deadline = time.monotonic() + timeout
        while (port := self.primary_port()) == old_port:
            if time.monotonic() > deadline:
                raise AssertionError("no failover: the Sentinels still name the killed primary")
            time.sleep(0.1)
        return port


@contextmanager
def sentinel_group(workdir: Path, *, replicas: int = 1, sentinels: int = 3, quorum: int = 2) -> Iterator[SentinelGroup]:
    """A primary, its replicas and the Sentinels, all stopped (by PID) after the block."""
    sentinel_binary = require_binary("redis-sentinel")
    with ExitStack() as stack:
        primary_port = free_port(HOST)
        servers = {primary_port: _redis_server(workdir, primary_port)}
        for _ in range(replicas):
            port = free_port(HOST)
            servers[port] = _redis_server(workdir, port, "--replicaof", HOST, str(primary_port))
        for daemon in servers.values():
            daemon.start()
            stack.callback(daemon.stop)
        sentinel_ports = []
        for _ in range(sentinels):
            port = free_port(HOST)
            config = workdir / f"sentinel-{port}.conf"  # Sentinel rewrites it as it learns
            config.write_text(
                SENTINEL_CONFIG.format(
                    port=port, host=HOST, directory=workdir, service=SERVICE, primary_port=primary_port,
                    quorum=quorum, down_after_ms=DOWN_AFTER_MS,
                )
            )
            daemon = Daemon(
                name=f"redis-sentinel {port}",
                command=[sentinel_binary, str(config)],
                log_path=workdir / f"sentinel-{port}.log",
                ready=lambda port=port: _answers_ping(port),  # type: ignore[misc]
            )
            daemon.start()
            stack.callback(daemon.stop)
            sentinel_ports.append(port)
        group = SentinelGroup(servers=servers, sentinel_ports=sentinel_ports)
        group.wait_until_watched()
        yield group

"""Redis for the contract tests, never disturbing anyone else's.

- `own_redis()`: a private `redis-server` subprocess on a free port (no persistence), which
  a test may stop and start again on the same port to take the limiter storage away.
- `leased_redis_database()`: one empty logical database of the shared Redis, held by a
  lease key for this test session; on exit only the keys created during the session are
  deleted (never FLUSHALL / FLUSHDB, never the server itself).
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import redis
from redis.exceptions import ResponseError

from tests.contract.server import free_port
from tests.services import require_binary, require_service

STARTUP_TIMEOUT_S = 10.0
LEASE_KEY = "campaign-api:contract-tests:lease"
LEASE_TTL_S = 3600
# Database 0 is everyone's default; the contract tests look for a free one from the top.
CANDIDATE_DATABASES = range(15, 0, -1)


def _answers_ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as connection:
            connection.sendall(b"PING\r\n")
            return connection.recv(16).startswith(b"+PONG")
    except OSError:
        return False


@dataclass(slots=True)
class RedisProcess:
    """A private redis-server; `stop()` and `start()` keep its port."""

    port: int
    workdir: Path
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        assert self.process is None, "already running"
        binary = shutil.which("redis-server")
        assert binary is not None
        log_path = self.workdir / f"redis-{self.port}.log"
        with log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
                cwd=self.workdir,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while not _answers_ping(self.port):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"redis-server did not start:\n{log_path.read_text(errors='replace')}")
            time.sleep(0.05)

    def stop(self) -> None:
        """Kill it outright: clients see the connection drop, as in an outage."""
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        self.process = None


def require_redis_server() -> None:
    """Skip (or fail under CI=true) when the redis-server binary is not installed."""
    require_binary("redis-server")


@contextmanager
def own_redis(workdir: Path) -> Iterator[RedisProcess]:
    require_redis_server()
    server = RedisProcess(port=free_port(), workdir=workdir)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def _all_keys(client: redis.Redis) -> set[bytes]:
    return set(client.scan_iter(count=1000))


def database_url(shared_url: str, number: int) -> str:
    """`shared_url` pointing at database `number` (the URL's own path would win over a
    `db=` argument of redis.Redis.from_url)."""
    return urlunsplit(urlsplit(shared_url)._replace(path=f"/{number}"))


@contextmanager
def leased_redis_database(shared_url: str) -> Iterator[str]:
    """The URL of a database of the shared Redis that no other test session holds."""
    parts = urlsplit(shared_url)
    require_service("Redis", parts.hostname or "127.0.0.1", parts.port or 6379)
    lease = uuid.uuid4().hex
    for number in CANDIDATE_DATABASES:
        url = database_url(shared_url, number)
        client = redis.Redis.from_url(url)
        assert client.connection_pool.connection_kwargs["db"] == number
        try:
            # Only an empty database: another suite may use one without taking a lease.
            if client.set(LEASE_KEY, lease, nx=True, ex=LEASE_TTL_S):
                if client.dbsize() == 1:
                    break
                client.delete(LEASE_KEY)
        except ResponseError:  # fewer databases configured than the candidates
            pass
        client.close()
    else:
        raise RuntimeError("no free database on the shared Redis for the contract tests")
    before = _all_keys(client)
    try:
        yield url
    finally:
        created = _all_keys(client) - before - {LEASE_KEY.encode()}
        if created:
            client.delete(*created)
        if client.get(LEASE_KEY) == lease.encode():
            client.delete(LEASE_KEY)
        client.close()

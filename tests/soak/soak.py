"""Soak test: two workers, Redis limits, steady concurrency for a long time (`make soak`).

Not part of `make test`. It starts its own redis-server, a fresh database on the shared
PostgreSQL and `campaign-api serve --workers 2` on a free loopback port, then keeps
SOAK_CONCURRENCY requests in flight for SOAK_SECONDS (default 600) with a mix of

- valid reads (lists with limits and cursors, single records, GraphQL): 200,
- not-found reads (hidden, private, other campaign's ids): 404,
- invalid keys (malformed, unknown, forged secret, wrong scheme): 401,
- one "hot" key read far faster than its minute limit allows: 200 or 429 (with Retry-After).

Valid keys are many, each used below its limit (a client-side sliding window), so a 429
on them is a real miscount. While it runs it samples each worker's RSS and open file
descriptors; at the end it reports the RSS slope per worker (KB/min, least squares,
after a warm-up), fd counts, PostgreSQL connections of its database and Redis clients
before and after, and exits non-zero on any unexpected status, a worker restart, or
no 429 at all for the hot key. Everything stays on loopback.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import re
import shutil
import sys
import tempfile
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psycopg
import redis
from sqlalchemy.engine import make_url

from engine.db import Database
from engine.keys import create_api_key
from engine.settings import Settings
from tests.contract.campaign import CAMPAIGN_A, EXPORT, HIDDEN_IDS, OWNER_A, VISIBLE_ID
from tests.contract.redis_process import RedisProcess
from tests.contract.server import TEST_PEPPER, ApiServer, Cli, ServiceEnv, free_port, running_server
from tests.databases import postgres_database

SECONDS = float(os.environ.get("SOAK_SECONDS", "600"))
CONCURRENCY = int(os.environ.get("SOAK_CONCURRENCY", "8"))
WORKERS = 2
VALID_KEYS = int(os.environ.get("SOAK_KEYS", "100"))
SAMPLE_EVERY_S = float(os.environ.get("SOAK_SAMPLE_S", "10"))
KEY_LIMIT = 120  # per minute, the default of RATE_LIMIT_KEY
# A valid key is used at most this often in any 62 s (fixed windows are 60 s).
PER_KEY_BUDGET = 100
NO_LIMIT = "10000000 per minute"
REQUEST_TIMEOUT_S = 30.0
ARTIFACT = Path("artifacts/soak.json")

# Share of each kind of request.
MIX = {"valid": 0.55, "not_found": 0.15, "invalid_key": 0.15, "hot_key": 0.15}
EXPECTED = {"valid": {200}, "not_found": {404}, "invalid_key": {401}, "hot_key": {200, 429}}


# --- processes and their resources ----------------------------------------------------


def _children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(child) for child in path.read_text().split()] if path.exists() else []


def worker_pids(server: ApiServer) -> list[int]:
    """uvicorn's worker processes: spawned children of the supervisor."""
    workers = []
    for child in _children(server.process.pid):
        try:
            cmdline = Path(f"/proc/{child}/cmdline").read_bytes()
        except FileNotFoundError:
            continue
        if b"spawn_main" in cmdline:
            workers.append(child)
    return sorted(workers)


def rss_kb(pid: int) -> int:
    match = re.search(r"^VmRSS:\s+(\d+) kB", Path(f"/proc/{pid}/status").read_text(), re.MULTILINE)
    return int(match.group(1)) if match else 0


def fd_count(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def postgres_connections(conninfo: str) -> int:
    """Connections to the soak's database, the measuring one excluded."""
    with psycopg.connect(conninfo, autocommit=True, connect_timeout=5) as connection:
        row = connection.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchone()
    return int(row[0]) if row else -1


def redis_clients(url: str) -> int:
    """Connected clients of the soak's Redis, the measuring one excluded."""
    client = redis.Redis.from_url(url, socket_timeout=5)
    try:
        return int(client.info("clients")["connected_clients"]) - 1
    finally:
        client.close()


def slope_kb_per_min(samples: list[tuple[float, int]]) -> float:
    """Least-squares slope of (seconds, KB) samples, in KB per minute."""
    if len(samples) < 2:
        return 0.0
    mean_t = sum(t for t, _ in samples) / len(samples)
    mean_v = sum(v for _, v in samples) / len(samples)
    variance = sum((t - mean_t) ** 2 for t, _ in samples)
    if variance == 0:
        return 0.0
    covariance = sum((t - mean_t) * (v - mean_v) for t, v in samples)
    return covariance / variance * 60


# --- load -----------------------------------------------------------------------------


@dataclass
class KeyPool:
    """Valid keys, each handed out only while it has budget left in the last 62 s."""

    tokens: list[str]
    sent: dict[str, deque[float]] = field(default_factory=dict)
    next_index: int = 0

    def take(self) -> str | None:
        now = time.monotonic()
        for _ in range(len(self.tokens)):
            token = self.tokens[self.next_index]
            self.next_index = (self.next_index + 1) % len(self.tokens)
            history = self.sent.setdefault(token, deque())
            while history and now - history[0] > 62:
                history.popleft()
            if len(history) < PER_KEY_BUDGET:
                history.append(now)
                return token
        return None


@dataclass
class Tally:
    statuses: Counter[tuple[str, int]] = field(default_factory=Counter)
    unexpected: list[str] = field(default_factory=list)
    transport_errors: int = 0
    throttled: int = 0
    missing_retry_after: int = 0

    def record(self, kind: str, response: httpx.Response) -> None:
        self.statuses[(kind, response.status_code)] += 1
        if response.status_code not in EXPECTED[kind]:
            if len(self.unexpected) < 20:
                self.unexpected.append(f"{kind}: {response.status_code} {response.request.url} {response.text[:200]}")
            else:
                self.unexpected.append("...")
        if response.status_code == 429 and "retry-after" not in response.headers:
            self.missing_retry_after += 1

    def count_unexpected(self) -> int:
        return sum(count for (kind, status), count in self.statuses.items() if status not in EXPECTED[kind])


LIST_PATHS = list(VISIBLE_ID)
GRAPHQL_QUERY = (
    "{ sessions(limit: 5) { data { id title summaryText } } locations(limit: 5) { data { name parent { id } } } }"
)
INVALID_HEADERS: list[Callable[[str], dict[str, str]]] = [
    lambda token: {},
    lambda token: {"Authorization": "Bearer not-a-key"},
    lambda token: {"Authorization": f"Basic {token}"},
    lambda token: {"Authorization": f"Bearer cpk_{'a' * 12}_{'B' * 43}"},
    lambda token: {"Authorization": f"Bearer {token[:-3]}xyz"},
]


async def one_request(
    client: httpx.AsyncClient, kind: str, pool: KeyPool, hot: str, rng: random.Random
) -> httpx.Response | None:
    if kind == "invalid_key":
        return await client.get(f"/api/public/v1/{rng.choice(LIST_PATHS)}", headers=rng.choice(INVALID_HEADERS)(hot))
    if kind == "hot_key":
        return await client.get("/api/public/v1/sessions", headers={"Authorization": f"Bearer {hot}"})
    token = pool.take()
    if token is None:
        return None  # every valid key is at its budget: the client waits rather than miscount
    auth = {"Authorization": f"Bearer {token}"}
    path = rng.choice(LIST_PATHS)
    if kind == "not_found":
        return await client.get(f"/api/public/v1/{path}/{rng.choice(HIDDEN_IDS[path])}", headers=auth)
    choice = rng.random()
    if choice < 0.4:
        return await client.get(f"/api/public/v1/{path}", params={"limit": str(rng.randint(1, 120))}, headers=auth)
    if choice < 0.55:
        first = await client.get(f"/api/public/v1/{path}", params={"limit": "3"}, headers=auth)
        cursor = first.json()["pagination"]["next_cursor"] if first.status_code == 200 else None
        if cursor is None or pool.take() is None:
            return first
        return await client.get(f"/api/public/v1/{path}", params={"limit": "3", "cursor": cursor}, headers=auth)
    if choice < 0.9:
        return await client.get(f"/api/public/v1/{path}/{VISIBLE_ID[path]}", headers=auth)
    return await client.post("/graphql", json={"query": GRAPHQL_QUERY}, headers=auth)


async def load(base_url: str, pool: KeyPool, hot: str, until: float, tally: Tally, seed: int) -> None:
    rng = random.Random(seed)
    kinds, weights = list(MIX), list(MIX.values())
    limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
    async with httpx.AsyncClient(base_url=base_url, timeout=REQUEST_TIMEOUT_S, limits=limits) as client:
        while time.monotonic() < until:
            kind = rng.choices(kinds, weights)[0]
            try:
                response = await one_request(client, kind, pool, hot, rng)
            except httpx.TransportError as exc:
                tally.transport_errors += 1
                tally.unexpected.append(f"{kind}: transport error {exc!r}")
                continue
            if response is None:
                tally.throttled += 1
                await asyncio.sleep(0.05)
                continue
            tally.record(kind, response)


async def sample(server: ApiServer, workers: list[int], until: float, started: float,
                 samples: dict[int, list[tuple[float, int]]], fds: dict[int, list[int]]) -> None:
    while time.monotonic() < until:
        now = time.monotonic() - started
        for pid in workers:
            try:
                samples[pid].append((now, rss_kb(pid)))
                fds[pid].append(fd_count(pid))
            except FileNotFoundError:
                pass
        await asyncio.sleep(SAMPLE_EVERY_S)


# --- setup and report -----------------------------------------------------------------


async def issue_keys(database_url: str, count: int) -> list[str]:
    database = Database(Settings(_env_file=None, database_url=database_url))  # type: ignore[call-arg]
    try:
        async with database.session() as db:
            return [
                (await create_api_key(db, campaign_id=CAMPAIGN_A, owner_id=OWNER_A, label=f"soak {n}",
                                      pepper=TEST_PEPPER.encode())).token
                for n in range(count)
            ]
    finally:
        await database.dispose()


def run() -> int:
    if shutil.which("redis-server") is None:
        print("soak: redis-server is not installed", file=sys.stderr)
        return 2
    workdir = Path(tempfile.mkdtemp(prefix="campaign-soak-"))
    redis_server = RedisProcess(port=free_port(), workdir=workdir)
    redis_server.start()
    try:
        with postgres_database("campaign_soak") as url:
            conninfo = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
            env = ServiceEnv(
                database_url=url,
                redis_url=redis_server.url,
                rate_limit_ip=NO_LIMIT,
                rate_limit_failed_auth=NO_LIMIT,
                rate_limit_key=f"{KEY_LIMIT} per minute",
                rate_limit_owner=NO_LIMIT,
                log_level="WARNING",
            )
            Cli(env=env, workdir=workdir).import_export(EXPORT)
            tokens = asyncio.run(issue_keys(url, VALID_KEYS + 1))
            hot, valid = tokens[0], tokens[1:]
            with running_server(env, workdir=workdir, workers=WORKERS) as server:
                workers = wait_for_workers(server)
                report, problems = asyncio.run(soak(server, workers, conninfo, redis_server.url, KeyPool(valid), hot))
    finally:
        redis_server.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    print(json.dumps(report, indent=2))
    ARTIFACT.parent.mkdir(exist_ok=True)
    ARTIFACT.write_text(json.dumps(report, indent=2) + "\n")
    for problem in problems:
        print(f"soak: FAILED: {problem}", file=sys.stderr)
    return 1 if problems else 0


def wait_for_workers(server: ApiServer) -> list[int]:
    deadline = time.monotonic() + 30
    while len(workers := worker_pids(server)) < WORKERS:
        if time.monotonic() > deadline:
            raise RuntimeError(f"expected {WORKERS} workers, found {workers}")
        time.sleep(0.2)
    return workers


async def soak(
    server: ApiServer, workers: list[int], conninfo: str, redis_url: str, pool: KeyPool, hot: str
) -> tuple[dict[str, Any], list[str]]:
    warm_up = min(60.0, SECONDS / 10)
    tally = Tally()
    samples: dict[int, list[tuple[float, int]]] = {pid: [] for pid in workers}
    fds: dict[int, list[int]] = {pid: [] for pid in workers}
    started = time.monotonic()
    until = started + SECONDS

    # Warm-up under the same load, then the "before" figures with pools filled.
    loaders = [asyncio.create_task(load(server.base_url, pool, hot, until, tally, seed)) for seed in range(CONCURRENCY)]
    sampler = asyncio.create_task(sample(server, workers, until, started, samples, fds))
    await asyncio.sleep(warm_up)
    before = {
        "fds": {pid: fd_count(pid) for pid in workers},
        "rss_kb": {pid: rss_kb(pid) for pid in workers},
        "postgres_connections": await asyncio.to_thread(postgres_connections, conninfo),
        "redis_clients": await asyncio.to_thread(redis_clients, redis_url),
    }
    await asyncio.gather(*loaders)
    await sampler
    elapsed = time.monotonic() - started
    await asyncio.sleep(1)  # let the last responses' connections settle
    after = {
        "fds": {pid: fd_count(pid) for pid in workers},
        "rss_kb": {pid: rss_kb(pid) for pid in workers},
        "postgres_connections": await asyncio.to_thread(postgres_connections, conninfo),
        "redis_clients": await asyncio.to_thread(redis_clients, redis_url),
    }
    workers_after = worker_pids(server)

    total = sum(tally.statuses.values())
    report: dict[str, Any] = {
        "seconds": round(elapsed, 1),
        "concurrency": CONCURRENCY,
        "workers": workers,
        "workers_after": workers_after,
        "requests": total,
        "requests_per_s": round(total / elapsed, 1),
        "statuses": {f"{kind} {status}": count for (kind, status), count in sorted(tally.statuses.items())},
        "unexpected": tally.count_unexpected(),
        "unexpected_examples": tally.unexpected[:10],
        "transport_errors": tally.transport_errors,
        "client_waits_for_key_budget": tally.throttled,
        "429_without_retry_after": tally.missing_retry_after,
        "rss_slope_kb_per_min": {
            pid: round(slope_kb_per_min([(t, v) for t, v in samples[pid] if t >= warm_up]), 1) for pid in workers
        },
        "rss_kb_first_last": {pid: (samples[pid][0][1], samples[pid][-1][1]) for pid in workers if samples[pid]},
        "fd_min_max_during": {pid: (min(fds[pid]), max(fds[pid])) for pid in workers if fds[pid]},
        "before": before,
        "after": after,
        "warm_up_s": warm_up,
    }
    problems = []
    if tally.count_unexpected() or tally.transport_errors:
        problems.append(f"{tally.count_unexpected()} unexpected statuses, {tally.transport_errors} transport errors")
    if workers_after != workers:
        problems.append(f"workers changed: {workers} -> {workers_after}")
    if not tally.statuses[("hot_key", 429)]:
        problems.append("the hot key was never limited")
    if tally.missing_retry_after:
        problems.append(f"{tally.missing_retry_after} 429s without Retry-After")
    return report, problems


if __name__ == "__main__":
    sys.exit(run())

"""`make bench`: import a generated export, then load-test the service, the peer and the floor.

    python tests/benchmarks/run.py --export artifacts/bench/export.json [--report artifacts/bench.md]

1. Creates a fresh PostgreSQL database (dropped at the end, even on failure), runs
   `campaign-api db upgrade`, then `/usr/bin/time -v campaign-api import FILE` (import
   wall time, CPU time and peak RSS of its processes together: the import renders every
   summary on every core), `VACUUM ANALYZE` (so autovacuum does not wake up mid-run) and
   `campaign-api keys create`.
2. For each worker profile (BENCH_WORKER_PROFILES, "2,1": with two workers on two cores
   the machine caps the floor, so one worker shows the server's own cost), starts the three
   servers with that many uvicorn workers each: the service (`campaign-api serve`, Redis
   limits raised to 100,000,000 per minute), the peer (`peer_app.py`: FastAPI + SQLModel ORM
   + slowapi on Redis, same limits, Markdown rendered per request) and the floor
   (`floor_app.py`: raw ASGI + psycopg pool + orjson, no limits, the stored Markdown).
3. In the crawl's profile (BENCH_CRAWL_WORKERS, 1), before anything else reaches the fresh
   servers: the service and the floor each answer every public session once by id, 8
   clients at a time, while a bystander fetches one location (crawl wall time; the
   bystander's latency).
4. First profile only: resolves each server's page-1000 cursor (its own format) by
   following next_cursor, checks that the peer and the floor answer every benchmarked
   request with the service's JSON (equal after parsing, same key order; cursors only
   compared for presence; any difference stops the run), and reads the service's ETags
   for the conditional requests (answered 304).
5. Warms up, then drives them with wrk in alternating short rounds (per round: each
   endpoint, each server, server order rotated), waiting after each run until the server is
   idle; in the two-worker profile, one run per server at 256 connections for the error
   count; reads the workers' RSS.
6. Prints the tables and writes them to the report (raw numbers as JSON beside it).

Time: with `--deadline EPOCH` (the Makefile passes make's start + 9.5 min; the first
import's own time is added to it, being a figure of its own) the profiles share what is
left equally, and each wrk run lasts what fits, 2 to 5 s (estimated after the warm-up; 2
rounds if even 2 s runs do not fit 3); without a deadline, 3 rounds x 5 s.

Environment knobs: BENCH_ROUNDS (3), BENCH_DURATION_S (fixed run length), BENCH_CONNECTIONS
(64), BENCH_THREADS (2), BENCH_REDIS_DB (13), BENCH_DEEP_PAGE (1000), BENCH_FOLLOW_BUDGET_S
(60), BENCH_WORKER_PROFILES ("2,1"), BENCH_CRAWL_WORKERS (1), BENCH_CRAWL_SESSIONS (0: all),
BENCH_PROFILE=1 (py-spy on a service worker during one extra run per endpoint; raw
collapsed stacks in artifacts/bench/profile-*.txt), BENCH_POSTGRES_URL, BENCH_REDIS_URL.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import os
import re
import secrets
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import orjson
import psycopg
import redis

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
CLI = BIN / "campaign-api"
ADMIN_URL = os.environ.get("BENCH_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
REDIS_BASE = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379")
HIGH_LIMIT = "100000000 per minute"
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))
DURATION_S = int(os.environ.get("BENCH_DURATION_S", "0"))  # 0: fit the deadline, 2..5 s
MAX_DURATION_S, MIN_DURATION_S = 5, 2
CONNECTIONS = int(os.environ.get("BENCH_CONNECTIONS", "64"))
THREADS = int(os.environ.get("BENCH_THREADS", "2"))
DEEP_PAGE = int(os.environ.get("BENCH_DEEP_PAGE", "1000"))
FOLLOW_BUDGET_S = float(os.environ.get("BENCH_FOLLOW_BUDGET_S", "60"))
STRESS_CONNECTIONS = 256
WRK_TIMEOUT = "10s"
PROFILE = os.environ.get("BENCH_PROFILE", "") == "1"
# The servers' worker counts, one profile each: with two workers on this 2-core machine the
# machine, not the server, caps the floor, so one worker shows the server's own cost.
WORKER_PROFILES = tuple(int(n) for n in os.environ.get("BENCH_WORKER_PROFILES", "2,1").split(","))
# The crawl runs in the profile with this many workers (none if absent), on fresh servers.
CRAWL_WORKERS = int(os.environ.get("BENCH_CRAWL_WORKERS", "1"))
CRAWL_CLIENTS = 8
CRAWL_SESSIONS = int(os.environ.get("BENCH_CRAWL_SESSIONS", "0"))  # 0: every public session
CRAWL_SERVERS = ("service", "floor")
_INHERITED = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR")
V1 = "/api/public/v1"
GRAPHQL_QUERY = "query Bench($id: ID!) { location(id: $id) { id name parentId children { id name type } } }"


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


class BenchError(Exception):
    """A check failed: the run stops and says why."""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# -- resources that must be cleaned up ---------------------------------------------------


@contextlib.contextmanager
def postgres_database() -> Iterator[str]:
    name = f"campaign_bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(ADMIN_URL, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    log(f"database {name} created")
    try:
        yield ADMIN_URL.rsplit("/", 1)[0] + "/" + name
    finally:
        with psycopg.connect(ADMIN_URL, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        log(f"database {name} dropped")


@contextlib.contextmanager
def redis_database() -> Iterator[str]:
    """An empty Redis DB number of our own; our limiter keys are deleted afterwards."""
    preferred = int(os.environ.get("BENCH_REDIS_DB", "13"))
    for number in [preferred, *[n for n in range(15, 7, -1) if n != preferred]]:
        client = redis.Redis.from_url(f"{REDIS_BASE}/{number}")
        if client.dbsize() == 0:
            break
        client.close()
    else:
        raise BenchError("no empty Redis database among 8..15")
    url = f"{REDIS_BASE}/{number}"
    log(f"redis {url}")
    try:
        yield url
    finally:
        deleted = 0
        for pattern in ("LIMITS*", "LIMITER*", "peer*"):
            keys = list(client.scan_iter(match=pattern, count=1000))
            for start in range(0, len(keys), 1000):
                deleted += client.delete(*keys[start : start + 1000])
        client.close()
        log(f"redis: {deleted} limiter keys deleted")


@dataclass
class Server:
    name: str
    command: list[str]
    env: dict[str, str]
    cwd: Path
    log_path: Path
    workers: int = 2
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.started_at = time.monotonic()
        command = [part.replace("{port}", str(self.port)) for part in self.command]
        log(f"start {self.name}: {' '.join(command)}")
        with self.log_path.open("ab") as output:
            self.process = subprocess.Popen(
                command, env=self.env, cwd=self.cwd, stdout=output, stderr=subprocess.STDOUT, start_new_session=True
            )

    def wait_ready(self, token: str, timeout_s: float = 60.0) -> float:
        """Seconds from start until every worker answers an authenticated request."""
        deadline = time.monotonic() + timeout_s
        url = f"{self.base}{V1}/sessions?limit=1"
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                raise BenchError(f"{self.name} exited with {self.process.returncode}; see {self.log_path}")
            with contextlib.suppress(httpx.HTTPError):
                answered = httpx.get(url, headers={"Authorization": f"Bearer {token}"}, timeout=5).status_code == 200
                # Every worker must be up: uvicorn starts them one after the other.
                if answered and len(self.worker_pids()) >= self.workers:
                    return time.monotonic() - self.started_at
            time.sleep(0.3)
        raise BenchError(f"{self.name} did not become ready in {timeout_s:.0f} s; see {self.log_path}")

    def worker_pids(self) -> list[int]:
        """The uvicorn worker processes: spawned children of the server, else the server itself."""
        if self.process is None:
            return []
        descendants = _descendants(self.process.pid)
        workers = [
            pid for pid in descendants if "spawn_main" in (line := _cmdline(pid)) and "resource_tracker" not in line
        ]
        return workers or [self.process.pid]

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        # The server is the leader of its own session: its group is exactly what we started.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=5)
        log(f"stopped {self.name}")


def _children(pid: int) -> list[int]:
    children: list[int] = []
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(OSError):
                children += [int(child) for child in (task / "children").read_text().split()]
    return children


def _descendants(pid: int) -> list[int]:
    found, queue = [], _children(pid)
    while queue:
        child = queue.pop()
        found.append(child)
        queue += _children(child)
    return found


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _status_kb(pid: int, field_name: str) -> int | None:
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field_name + ":"):
                return int(line.split()[1])
    return None


def _cpu_ticks(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError, IndexError, ValueError):
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
    return total


def settle(
    server: Server, *, interval_s: float = 0.1, window: int = 4, quiet_ticks: int = 1, timeout_s: float = 90.0
) -> float:
    """Wait until the server's workers stop using CPU, so requests wrk left queued drain.

    Idle means at most `quiet_ticks` clock ticks (10 ms) over `window` consecutive samples;
    a worker draining a backlog is CPU-bound and never looks like that.
    """
    pids = server.worker_pids()
    started = time.monotonic()
    previous = _cpu_ticks(pids)
    deltas: list[int] = []
    while time.monotonic() - started < timeout_s:
        time.sleep(interval_s)
        current = _cpu_ticks(pids)
        deltas.append(current - previous)
        previous = current
        if len(deltas) >= window and sum(deltas[-window:]) <= quiet_ticks:
            break
    return time.monotonic() - started


def measured(server: Server, url: str, script: Path, *, connections: int, duration_s: int) -> dict[str, Any]:
    """One wrk run, then wait for the server to drain; adds the workers' CPU per request.

    Requests still in flight when wrk stops are served afterwards: they are counted as
    `connections` extra requests (every connection has one outstanding under load).
    """
    pids = server.worker_pids()
    before = _cpu_ticks(pids)
    result = wrk(url, script, connections=connections, duration_s=duration_s)
    result["settle_s"] = settle(server)
    ticks = _cpu_ticks(pids) - before
    result["cpu_ms_per_req"] = ticks * 1000 / os.sysconf("SC_CLK_TCK") / (result["requests"] + connections)
    result["loadavg_1m"] = float(Path("/proc/loadavg").read_text().split()[0])
    return result


# -- the CLI ------------------------------------------------------------------------------


def base_env(database_url: str, redis_url: str, pepper: str) -> dict[str, str]:
    env = {name: value for name in _INHERITED if (value := os.environ.get(name)) is not None}
    env.update(
        {
            "DATABASE_URL": database_url,
            "REDIS_URL": redis_url,
            "API_KEY_PEPPER": pepper,
            "RATE_LIMIT_IP": HIGH_LIMIT,
            "RATE_LIMIT_FAILED_AUTH": HIGH_LIMIT,
            "RATE_LIMIT_KEY": HIGH_LIMIT,
            "RATE_LIMIT_OWNER": HIGH_LIMIT,
            "PYTHONUNBUFFERED": "1",
        }
    )
    return env


def cli(env: dict[str, str], cwd: Path, *args: str) -> str:
    completed = subprocess.run([str(CLI), *args], env=env, cwd=cwd, capture_output=True, text=True, check=False)
    if completed.returncode != 0:
        raise BenchError(f"campaign-api {' '.join(args)} exited {completed.returncode}:\n{completed.stderr[-3000:]}")
    return completed.stdout


def timed_import(
    env: dict[str, str], cwd: Path, export: Path, log_path: Path, *, importer: list[str] | None = None
) -> dict[str, float]:
    """`campaign-api import` (or `importer`): its wall time, CPU time of it and its rendering
    processes, and peak RSS: of its processes together, sampled every 0.2 s, and of the largest."""
    command = [*(importer or [str(CLI), "import"]), str(export.resolve())]
    time_binary = Path("/usr/bin/time")
    if time_binary.exists():
        command = [str(time_binary), "-v", *command]
    started = time.perf_counter()
    peak_tree_kb = 0
    with log_path.open("wb") as output:
        process = subprocess.Popen(command, env=env, cwd=cwd, stdout=output, stderr=subprocess.STDOUT)
        while process.poll() is None:
            tree = [process.pid, *_descendants(process.pid)]
            peak_tree_kb = max(peak_tree_kb, sum(_status_kb(pid, "VmRSS") or 0 for pid in tree))
            time.sleep(0.2)
    wall = time.perf_counter() - started
    text = log_path.read_text(errors="replace")
    if process.returncode != 0:
        raise BenchError(f"import failed ({process.returncode}):\n{text[-3000:]}")
    peak = re.search(r"Maximum resident set size \(kbytes\): (\d+)", text)
    user = re.search(r"User time \(seconds\): ([\d.]+)", text)
    system = re.search(r"System time \(seconds\): ([\d.]+)", text)
    return {
        "wall_s": wall,
        "cpu_s": float(user.group(1)) + float(system.group(1)) if user and system else float("nan"),
        "peak_rss_mb": peak_tree_kb / 1024,
        "largest_process_rss_mb": int(peak.group(1)) / 1024 if peak else float("nan"),
    }


# -- the benchmarked requests -------------------------------------------------------------


NAMES = ("service", "peer", "floor")


@dataclass(frozen=True)
class Endpoint:
    key: str
    label: str
    servers: tuple[str, ...] = ("service", "peer", "floor")
    method: str = "GET"
    # Sent with If-None-Match naming the current ETag: every answer is a 304.
    conditional_on: str | None = None


ENDPOINTS = (
    Endpoint("sessions", "sessions list (limit 50)"),
    Endpoint("sessions_p1", "sessions page 1 (limit 100)"),
    Endpoint("sessions_p1000", f"sessions page {DEEP_PAGE:,} (limit 100)"),
    Endpoint("session_20kb", "session, 20 KB summary"),
    Endpoint("session_200b", "session, 200 B summary"),
    Endpoint("locations", "locations list (limit 100)"),
    Endpoint("location", "location"),
    Endpoint("graphql", "GraphQL location + children (POST)", servers=("service",), method="POST"),
    Endpoint("location_304", "location, If-None-Match: 304", servers=("service",), conditional_on="location"),
    Endpoint(
        "session_20kb_304", "session 20 KB, If-None-Match: 304", servers=("service",), conditional_on="session_20kb"
    ),
)


def follow_cursor(client: httpx.Client, base: str, pages: int) -> str:
    """The cursor of page `pages + 1` of the sessions at limit 100, by following next_cursor."""
    cursor = None
    for page in range(pages):
        params = {"limit": "100", **({"cursor": cursor} if cursor else {})}
        response = client.get(f"{base}{V1}/sessions", params=params)
        if response.status_code != 200:
            raise BenchError(f"{base}: page {page + 1} answered {response.status_code}: {response.text[:300]}")
        cursor = response.json()["pagination"]["next_cursor"]
        if cursor is None:
            raise BenchError(f"{base}: the sessions end after page {page + 1}; page {pages + 1} does not exist")
    assert cursor is not None
    return cursor


def next_cursor_at(client: httpx.Client, base: str, cursor: str) -> str:
    response = client.get(f"{base}{V1}/sessions", params={"limit": "100", "cursor": cursor})
    if response.status_code != 200:
        raise BenchError(f"{base}: cursor {cursor} answered {response.status_code}: {response.text[:300]}")
    next_cursor: str | None = response.json()["pagination"]["next_cursor"]
    if next_cursor is None:
        raise BenchError(f"{base}: no page after cursor {cursor}")
    return next_cursor


def service_deep_cursor(client: httpx.Client, base: str, timings: dict[str, Any]) -> str:
    """The service's own cursor of page DEEP_PAGE, by following next_cursor from page 1.

    Following costs the sum of every page's seek. If that takes longer than
    FOLLOW_BUDGET_S (a seek that scans from the start made 999 pages take ~245 s in a
    trial run), the walk stops there and the service serves page DEEP_PAGE - 1 from a
    bare-offset cursor, which it accepts: its next_cursor is what following would have
    produced (the same rows, the same encoder). Both ways are checked to agree on the page
    the walk reached.
    """
    from engine.cursor import Cursor, encode_cursor

    started = time.perf_counter()
    cursor: str | None = None
    pages = 0
    while pages < DEEP_PAGE - 1 and time.perf_counter() - started < FOLLOW_BUDGET_S:
        params = {"limit": "100", **({"cursor": cursor} if cursor else {})}
        response = client.get(f"{base}{V1}/sessions", params=params)
        if response.status_code != 200:
            raise BenchError(f"service: page {pages + 1} answered {response.status_code}: {response.text[:300]}")
        cursor = response.json()["pagination"]["next_cursor"]
        pages += 1
        if cursor is None:
            raise BenchError(f"service: the sessions end after page {pages}; page {DEEP_PAGE} does not exist")
    timings["service"] = {"followed_pages": pages, "s": time.perf_counter() - started}
    assert cursor is not None
    if pages == DEEP_PAGE - 1:
        return cursor
    log(f"service: following stopped after {pages} pages ({FOLLOW_BUDGET_S:.0f} s); jumping with an offset cursor")
    jumped = next_cursor_at(client, base, encode_cursor(Cursor(offset=(pages - 1) * 100)))
    if jumped != cursor:
        raise BenchError(
            f"service: the page-{pages + 1} cursor by following ({cursor}) differs from the one after an "
            f"offset cursor ({jumped})"
        )
    timings["service"]["jumped"] = True
    return next_cursor_at(client, base, encode_cursor(Cursor(offset=(DEEP_PAGE - 2) * 100)))


def request_paths(
    server: str, client: httpx.Client, base: str, manifest: dict[str, Any], timings: dict[str, Any]
) -> dict[str, str]:
    started = time.perf_counter()
    if server == "peer":
        # The peer's cursor is base64 of the offset: following 999 pages (each loading
        # 100 summaries through the ORM) only costs time; the data check verifies it.
        import base64

        deep = base64.urlsafe_b64encode(str((DEEP_PAGE - 1) * 100).encode()).decode()
        timings[server] = {"followed_pages": 0, "s": 0.0}
    elif server == "service":
        deep = service_deep_cursor(client, base, timings)
    else:
        deep = follow_cursor(client, base, DEEP_PAGE - 1)
        timings[server] = {"followed_pages": DEEP_PAGE - 1, "s": time.perf_counter() - started}
    return {
        "sessions": f"{V1}/sessions?limit=50",
        "sessions_p1": f"{V1}/sessions?limit=100",
        "sessions_p1000": f"{V1}/sessions?limit=100&cursor={deep}",
        "session_20kb": f"{V1}/sessions/{manifest['session_20kb_id']}",
        "session_200b": f"{V1}/sessions/{manifest['session_200b_id']}",
        "locations": f"{V1}/locations?limit=100",
        "location": f"{V1}/locations/{manifest['location_id']}",
        "location_304": f"{V1}/locations/{manifest['location_id']}",
        "session_20kb_304": f"{V1}/sessions/{manifest['session_20kb_id']}",
        "location_id": manifest["location_id"],
        "graphql": "/graphql",
    }


def _without_cursor(body: Any) -> Any:
    if isinstance(body, dict) and "pagination" in body:
        pagination = dict(body["pagination"])
        pagination["next_cursor"] = pagination["next_cursor"] is not None
        return {**body, "pagination": pagination}
    return body


def _first_difference(left: Any, right: Any, path: str = "$") -> str:
    if type(left) is not type(right):
        return f"{path}: {type(left).__name__} {str(left)[:200]!r} != {type(right).__name__} {str(right)[:200]!r}"
    if isinstance(left, dict):
        if list(left) != list(right):
            return f"{path}: keys {list(left)} != {list(right)}"
        for key in left:
            if left[key] != right[key]:
                return _first_difference(left[key], right[key], f"{path}.{key}")
    if isinstance(left, list):
        if len(left) != len(right):
            return f"{path}: {len(left)} items != {len(right)}"
        for index, (a, b) in enumerate(zip(left, right, strict=True)):
            if a != b:
                return _first_difference(a, b, f"{path}[{index}]")
    return f"{path}: {str(left)[:300]!r} != {str(right)[:300]!r}"


def check_same_json(servers: dict[str, Server], paths: dict[str, dict[str, str]], token: str) -> dict[str, str]:
    """Every benchmarked GET answers the service's JSON on the peer and the floor."""
    verdicts: dict[str, str] = {}
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(headers=headers, timeout=60) as client:
        for endpoint in ENDPOINTS:
            if endpoint.method != "GET" or endpoint.conditional_on is not None:
                continue
            reference = client.get(servers["service"].base + paths["service"][endpoint.key])
            if reference.status_code != 200:
                raise BenchError(f"service {endpoint.key}: {reference.status_code} {reference.text[:300]}")
            expected = orjson.loads(reference.content)
            if isinstance(expected, dict) and isinstance(expected.get("data"), list) and not expected["data"]:
                raise BenchError(f"service {endpoint.key}: empty page")
            for name in ("peer", "floor"):
                response = client.get(servers[name].base + paths[name][endpoint.key])
                if response.status_code != 200:
                    raise BenchError(f"{name} {endpoint.key}: {response.status_code} {response.text[:300]}")
                if response.content == reference.content:
                    verdicts[f"{name}/{endpoint.key}"] = "identical bytes"
                    continue
                actual = orjson.loads(response.content)
                left, right = _without_cursor(expected), _without_cursor(actual)
                # orjson keeps key order, so equal dumps mean equal values in the same order.
                if orjson.dumps(left) != orjson.dumps(right):
                    raise BenchError(
                        f"{name} differs from the service on {endpoint.key} "
                        f"({paths[name][endpoint.key]}): {_first_difference(left, right)}"
                    )
                verdicts[f"{name}/{endpoint.key}"] = "same JSON (own cursor)" if left != expected else "same JSON"
        graphql = client.post(
            servers["service"].base + "/graphql",
            json={"query": GRAPHQL_QUERY, "variables": {"id": paths["service"]["location_id"]}},
        )
        body = graphql.json()
        if graphql.status_code != 200 or body.get("errors") or not body["data"]["location"]["children"]:
            raise BenchError(f"service graphql: {graphql.status_code} {graphql.text[:300]}")
    return verdicts


# -- wrk ----------------------------------------------------------------------------------

LUA_DONE = """
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    "BENCHJSON {\\"requests\\":%d,\\"duration_us\\":%d,\\"connect\\":%d,\\"read\\":%d,\\"write\\":%d,"
    .. "\\"status\\":%d,\\"timeout\\":%d,\\"p50_us\\":%d,\\"p90_us\\":%d,\\"p99_us\\":%d,\\"max_us\\":%d}\\n",
    summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max))
end
"""


def lua_script(
    directory: Path, name: str, token: str, body: bytes | None, *, if_none_match: str | None = None, code: str = ""
) -> Path:
    lines = [f'wrk.headers["Authorization"] = "Bearer {token}"']
    if if_none_match is not None:
        lines.append(f"wrk.headers[\"If-None-Match\"] = [==[{if_none_match}]==]")
    if body is not None:
        lines += [
            'wrk.method = "POST"',
            'wrk.headers["Content-Type"] = "application/json"',
            f"wrk.body = [==[{body.decode()}]==]",
        ]
    path = directory / f"{name}.lua"
    path.write_text("\n".join(lines) + "\n" + code + LUA_DONE)
    return path


def wrk_command(
    url: str,
    script: Path,
    *,
    connections: int,
    duration_s: int,
    threads: int = THREADS,
    arguments: tuple[str, ...] = (),
) -> list[str]:
    command = [
        "wrk",
        f"-t{threads}",
        f"-c{connections}",
        f"-d{duration_s}s",
        "--latency",
        "--timeout",
        WRK_TIMEOUT,
        "-s",
        str(script),
        url,
    ]
    return [*command, "--", *arguments] if arguments else command


def wrk(url: str, script: Path, *, connections: int, duration_s: int, threads: int = THREADS) -> dict[str, Any]:
    command = wrk_command(url, script, connections=connections, duration_s=duration_s, threads=threads)
    completed = subprocess.run(command, capture_output=True, text=True, check=False)
    return wrk_result(completed.returncode, completed.stdout, completed.stderr)


def wrk_result(returncode: int, stdout: str, stderr: str) -> dict[str, Any]:
    match = re.search(r"^BENCHJSON (.*)$", stdout, re.MULTILINE)
    if returncode != 0 or match is None:
        raise BenchError(f"wrk failed ({returncode}): {stdout[-1000:]} {stderr[-1000:]}")
    result: dict[str, Any] = orjson.loads(match.group(1))
    result["errors"] = sum(result[k] for k in ("connect", "read", "write", "status", "timeout"))
    result["rps"] = result["requests"] / (result["duration_us"] / 1e6)
    return result


@dataclass
class Cell:
    runs: list[dict[str, Any]] = field(default_factory=list)

    @property
    def rps(self) -> float:
        requests = sum(run["requests"] for run in self.runs)
        seconds = sum(run["duration_us"] for run in self.runs) / 1e6
        return requests / seconds if seconds else 0.0

    def latency_ms(self, key: str) -> float:
        values = [run[key] for run in self.runs if run["requests"]]
        return statistics.median(values) / 1000 if values else float("nan")

    @property
    def cpu_ms(self) -> float:
        return statistics.median(run["cpu_ms_per_req"] for run in self.runs)

    @property
    def errors(self) -> int:
        return sum(run["errors"] for run in self.runs)


# -- the run ------------------------------------------------------------------------------


def profile_service(
    service: Server, urls: dict[str, str], scripts: dict[str, Path], out_dir: Path, duration_s: int
) -> list[Path]:
    """py-spy (raw, collapsed stacks) on one service worker while wrk loads each endpoint."""
    py_spy = BIN / "py-spy"
    if not py_spy.exists():
        log("BENCH_PROFILE=1 but py-spy is not installed; skipped")
        return []
    written = []
    for endpoint in ENDPOINTS:
        if "service" not in endpoint.servers:
            continue
        target = out_dir / f"profile-{endpoint.key}.txt"
        worker = service.worker_pids()[0]
        spy = subprocess.Popen(
            [
                str(py_spy),
                "record",
                "--pid",
                str(worker),
                "--duration",
                str(duration_s + 1),
                "--rate",
                "200",
                "--format",
                "raw",
                "--output",
                str(target),
                "--nonblocking",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(0.5)
        wrk(urls[endpoint.key], scripts[endpoint.key], connections=CONNECTIONS, duration_s=duration_s)
        spy.wait(timeout=60)
        settle(service)
        written.append(target)
    return written


def warm_up(
    servers: dict[str, Server],
    urls: dict[str, dict[str, str]],
    token: str,
    graphql_body: bytes,
    etags: dict[str, str],
    requests: int = 8,
) -> dict[tuple[str, str], float]:
    """A few requests per endpoint per server, each on a new connection so both workers see
    some (caches are per process); returns the median latency of each (server, endpoint)."""
    latencies: dict[tuple[str, str], float] = {}
    for endpoint in ENDPOINTS:
        body = graphql_body if endpoint.method == "POST" else None
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        expected = 200
        if endpoint.conditional_on is not None:
            headers["If-None-Match"], expected = etags[endpoint.key], 304
        for name in endpoint.servers:
            url = httpx.URL(urls[name][endpoint.key])
            target = url.raw_path.decode("ascii")
            times = []
            for _ in range(requests):
                started = time.perf_counter()
                connection = http.client.HTTPConnection(url.host, url.port, timeout=60)
                try:
                    connection.request(endpoint.method, target, body=body, headers=headers)
                    response = connection.getresponse()
                    response.read()
                finally:
                    connection.close()
                times.append(time.perf_counter() - started)
                if response.status != expected:
                    raise BenchError(f"{name} {endpoint.key}: {response.status} during warm-up")
            latencies[(name, endpoint.key)] = statistics.median(times)
    return latencies


def fit_schedule(
    deadline: float | None, latencies: dict[tuple[str, str], float], *, stress_runs: int
) -> tuple[int, int]:
    """(rounds, seconds per wrk run) so that the rounds and the stress runs end before `deadline`.

    After each run the server drains the requests wrk left in flight (one per connection,
    about one sequential latency each) before the next run starts; two workers would halve
    that, but on a busy 2-CPU machine they rarely get a CPU each (measured: about 1x).
    """
    if DURATION_S or deadline is None:
        return ROUNDS, DURATION_S or MAX_DURATION_S
    drain = sum(0.5 + CONNECTIONS * latency for latency in latencies.values())
    stress_drain = stress_runs * 2.0
    remaining = deadline - time.time() - 25  # stop the servers, drop the database, write the report
    for rounds in (ROUNDS, 2):
        per_run = (remaining - rounds * drain - stress_drain) / (rounds * len(latencies) + stress_runs)
        if per_run >= MIN_DURATION_S:
            return rounds, int(min(MAX_DURATION_S, per_run))
    return 2, MIN_DURATION_S


def load_database(
    env: dict[str, str], workdir: Path, export: Path, manifest: dict[str, Any], out_dir: Path, results: dict[str, Any]
) -> str:
    """Migrate, import (timed), vacuum; returns a new key's token."""
    log("campaign-api db upgrade")
    cli(env, workdir, "db", "upgrade")
    log(f"campaign-api import {export} ({manifest['bytes'] / 1e6:.0f} MB)")
    results["import"] = timed_import(env, workdir, export, out_dir / "import.log")
    log(f"import: {results['import']['wall_s']:.1f} s, peak RSS {results['import']['peak_rss_mb']:.0f} MB")
    started = time.perf_counter()
    with psycopg.connect(env["DATABASE_URL"], autocommit=True) as connection:
        connection.execute("VACUUM ANALYZE")
    results["vacuum_s"] = time.perf_counter() - started
    log(f"VACUUM ANALYZE: {results['vacuum_s']:.1f} s")
    key = ["keys", "create", "--campaign", manifest["campaign_id"], "--owner", manifest["user_id"], "--label", "bench"]
    token = cli(env, workdir, *key).strip()
    if not re.fullmatch(r"cpk_[a-z2-7]{12}_[A-Za-z0-9_-]{43}", token):
        raise BenchError(f"keys create printed {token!r}, not a token alone")

    return token


def build_servers(env: dict[str, str], workdir: Path, out_dir: Path, *, workers: int) -> dict[str, Server]:
    # uvicorn as `uvicorn app --workers N` runs it with uvicorn[standard] installed (uvloop,
    # httptools); the peer keeps uvicorn's access log as a deployed app would, and the
    # service logs at its default LOG_LEVEL (INFO: one JSON access line per request).
    address = ["--host", "127.0.0.1", "--port", "{port}", "--workers", str(workers)]
    uvicorn = [str(BIN / "uvicorn"), "--app-dir", str(ROOT), *address, "--loop", "uvloop", "--http", "httptools"]
    commands = {
        "service": [str(CLI), "serve", *address],
        "peer": [*uvicorn, "tests.benchmarks.peer_app:app"],
        "floor": [*uvicorn, "--no-access-log", "tests.benchmarks.floor_app:app"],
    }
    servers = {
        name: Server(name, command, env, workdir, out_dir / f"{name}-{workers}w.log", workers=workers)
        for name, command in commands.items()
    }
    for server in servers.values():
        server.log_path.unlink(missing_ok=True)
    return servers


def worker_memory(servers: dict[str, Server]) -> dict[str, list[dict[str, float]]]:
    return {
        name: [
            {
                "pid": pid,
                "rss_mb": (_status_kb(pid, "VmRSS") or 0) / 1024,
                "hwm_mb": (_status_kb(pid, "VmHWM") or 0) / 1024,
            }
            for pid in server.worker_pids()
        ]
        for name, server in servers.items()
    }


def rounds_of_runs(
    servers: dict[str, Server], urls: dict[str, dict[str, str]], scripts: dict[str, Path], rounds: int, duration_s: int
) -> dict[tuple[str, str], Cell]:
    """Each round: every endpoint on every server, the server order rotated per round."""
    cells: dict[tuple[str, str], Cell] = {}
    for round_number in range(rounds):
        log(f"round {round_number + 1}/{rounds}")
        rotation = NAMES[round_number % 3 :] + NAMES[: round_number % 3]
        for endpoint in ENDPOINTS:
            for name in (name for name in rotation if name in endpoint.servers):
                result = measured(
                    servers[name],
                    urls[name][endpoint.key],
                    scripts[endpoint.key],
                    connections=CONNECTIONS,
                    duration_s=duration_s,
                )
                cells.setdefault((name, endpoint.key), Cell()).runs.append(result)
    return cells


def run(export: Path, report: Path, deadline: float | None) -> int:
    manifest_file = export.with_name(export.name + ".manifest.json")
    if not export.exists() or not manifest_file.exists():
        raise BenchError(f"{export} or its manifest is missing: run tests/benchmarks/generate.py first")
    if shutil.which("wrk") is None:
        raise BenchError("wrk is not installed (apt-get install -y wrk)")
    manifest = orjson.loads(manifest_file.read_bytes())
    out_dir = report.parent / "bench"
    out_dir.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    results: dict[str, Any] = {
        "manifest": manifest,
        "settings": {
            "connections": CONNECTIONS,
            "threads": THREADS,
            "worker_profiles": list(WORKER_PROFILES),
            "wrk_timeout": WRK_TIMEOUT,
            "cpus": os.cpu_count(),
        },
        "loadavg_before": Path("/proc/loadavg").read_text().split()[:3],
        "profiles": {},
    }
    with contextlib.ExitStack() as stack:
        database_url = stack.enter_context(postgres_database())
        redis_url = stack.enter_context(redis_database())
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="campaign-bench-")))
        env = base_env(database_url, redis_url, pepper="bench-" + secrets.token_urlsafe(32))
        token = load_database(env, workdir, export, manifest, out_dir, results)
        if deadline is not None:
            # The first import (rendering every summary) is a figure of its own, not part of
            # the load test's budget.
            deadline += results["import"]["wall_s"]
        bench = _Bench(env=env, workdir=workdir, out_dir=out_dir, token=token, manifest=manifest, results=results)
        for index, workers in enumerate(WORKER_PROFILES):
            # Each profile gets an equal share of the time left.
            left = None if deadline is None else (deadline - time.time()) / (len(WORKER_PROFILES) - index)
            results["profiles"][str(workers)] = bench.profile(workers, None if left is None else time.time() + left)
        results["bench_s"] = time.perf_counter() - started
        table = render_report(results)
        print(table)
        report.parent.mkdir(parents=True, exist_ok=True)
        report.write_text(table)
        report.with_suffix(".json").write_bytes(orjson.dumps(results, option=orjson.OPT_INDENT_2))
        log(f"report written to {report}")
    return 0


@dataclass
class _Bench:
    """What the profiles share: the database, the key, the requests resolved once."""

    env: dict[str, str]
    workdir: Path
    out_dir: Path
    token: str
    manifest: dict[str, Any]
    results: dict[str, Any]
    paths: dict[str, dict[str, str]] = field(default_factory=dict)
    etags: dict[str, str] = field(default_factory=dict)

    def profile(self, workers: int, deadline: float | None) -> dict[str, Any]:
        """Every endpoint on the three servers, `workers` workers each (plus the crawl on
        fresh servers, in the crawl's profile), ending before `deadline`."""
        log(f"profile: {workers} worker(s) per server")
        servers = build_servers(self.env, self.workdir, self.out_dir, workers=workers)
        figures: dict[str, Any] = {"workers": workers, "startup_s": {}}
        with contextlib.ExitStack() as running:
            running.callback(lambda: [server.stop() for server in servers.values()])
            for name, server in servers.items():
                server.start()
                figures["startup_s"][name] = server.wait_ready(self.token)
            if workers == CRAWL_WORKERS:
                figures["crawl"] = {name: self.crawl(servers[name]) for name in CRAWL_SERVERS}
            if not self.paths:
                self.resolve_requests(servers)
            figures.update(self.load(servers, deadline, stress=workers == max(WORKER_PROFILES)))
            figures["rss"] = worker_memory(servers)
        return figures

    def resolve_requests(self, servers: dict[str, Server]) -> None:
        log(f"resolving page-{DEEP_PAGE} cursors")
        timings: dict[str, Any] = {}
        with httpx.Client(headers={"Authorization": f"Bearer {self.token}"}, timeout=60) as client:
            for name, server in servers.items():
                self.paths[name] = request_paths(name, client, server.base, self.manifest, timings)
                followed = timings[name]
                log(f"{name}: after following {followed['followed_pages']} pages in {followed['s']:.1f} s")
            for endpoint in ENDPOINTS:
                if endpoint.conditional_on is not None:
                    response = client.get(servers["service"].base + self.paths["service"][endpoint.key])
                    self.etags[endpoint.key] = response.headers["etag"]
        self.results["cursor_following"] = timings
        self.results["equality"] = check_same_json(servers, self.paths, self.token)
        log("peer and floor return the service's JSON: " + ", ".join(sorted(set(self.results["equality"].values()))))

    def load(self, servers: dict[str, Server], deadline: float | None, *, stress: bool) -> dict[str, Any]:
        """Warm-up, the rounds, and (`stress`) one run per server at 256 connections."""
        graphql_body = orjson.dumps({"query": GRAPHQL_QUERY, "variables": {"id": self.manifest["location_id"]}})
        scripts = {
            endpoint.key: lua_script(
                self.workdir,
                endpoint.key,
                self.token,
                graphql_body if endpoint.method == "POST" else None,
                if_none_match=self.etags.get(endpoint.key),
            )
            for endpoint in ENDPOINTS
        }
        urls = {name: {key: servers[name].base + path for key, path in self.paths[name].items()} for name in servers}
        log("warm-up")
        warmup = warm_up(servers, urls, self.token, graphql_body, self.etags)
        rounds, duration_s = fit_schedule(deadline, warmup, stress_runs=len(NAMES) if stress else 0)
        if deadline is not None:
            log(f"{rounds} rounds x {duration_s} s per wrk run fit the deadline ({deadline - time.time():.0f} s left)")
        cells = rounds_of_runs(servers, urls, scripts, rounds, duration_s)
        figures: dict[str, Any] = {
            "rounds": rounds,
            "duration_s": duration_s,
            "warmup_latency_ms": {f"{name}/{key}": 1000 * value for (name, key), value in warmup.items()},
            "cells": {f"{name}/{key}": cell.runs for (name, key), cell in cells.items()},
        }
        if stress:
            log(f"stress: {STRESS_CONNECTIONS} connections")
            figures["stress"] = {
                name: measured(
                    servers[name],
                    urls[name]["sessions"],
                    scripts["sessions"],
                    connections=STRESS_CONNECTIONS,
                    duration_s=duration_s,
                )
                for name in NAMES
            }
            if PROFILE:
                log("profiling the service with py-spy")
                profiles = profile_service(servers["service"], urls["service"], scripts, self.out_dir, duration_s)
                figures["py_spy"] = [str(path) for path in profiles]
        return figures

    def crawl(self, server: Server) -> dict[str, Any]:
        """Every public session once by id, CRAWL_CLIENTS at a time, on a server that has
        answered nothing else yet, while a bystander fetches one location, one request at a
        time, for as long as the crawl lasts."""
        paths_file, count = crawl_paths(self.env, self.manifest, self.workdir)
        log(f"crawl of {server.name}: {count:,} sessions, {CRAWL_CLIENTS} clients, and a bystander")
        script = lua_script(self.workdir, "crawl", self.token, None, code=CRAWL_LUA)
        bystander_script = lua_script(self.workdir, "bystander", self.token, None)
        location = f"{V1}/locations/{self.manifest['location_id']}"
        done = self.workdir / f"crawl-{server.name}.done"
        pids = server.worker_pids()
        before = _cpu_ticks(pids)
        bystander = _start_wrk(
            wrk_command(server.base + location, bystander_script, connections=1, duration_s=3600, threads=1)
        )
        try:
            arguments = (str(THREADS), str(paths_file), str(done))
            command = wrk_command(
                server.base + "/", script, connections=CRAWL_CLIENTS, duration_s=3600, arguments=arguments
            )
            started = time.perf_counter()
            crawler = _start_wrk(command)
            # wrk runs for its whole duration whatever its threads do: each thread notes when
            # its share is answered, and the crawl ends when every one has.
            while crawler.poll() is None and _lines(done) < THREADS:
                time.sleep(0.005)
            wall_s = time.perf_counter() - started
            crawled = _stop_wrk(crawler)
        finally:
            bystanding = _stop_wrk(bystander)
        settle(server)
        crawled.update(
            wall_s=wall_s,
            sessions=count,
            cpu_ms_per_req=(_cpu_ticks(pids) - before) * 1000 / os.sysconf("SC_CLK_TCK") / count,
            bystander=bystanding,
        )
        log(f"crawl of {server.name}: {wall_s:.1f} s, bystander p99 {bystanding['p99_us'] / 1000:.1f} ms")
        return crawled


# Each of wrk's threads takes every THREADS-th path of the file (its arguments: THREADS,
# the paths' file, the file to note its end in), sends each once, and when all are answered
# notes it and stops.
CRAWL_LUA = """
local threads = 0
function setup(thread)
  thread:set("part", threads)
  threads = threads + 1
end
function init(args)
  local parts = tonumber(args[1])
  done_file = args[3]
  paths = {}
  local index = 0
  for line in io.lines(args[2]) do
    if index % parts == part then paths[#paths + 1] = line end
    index = index + 1
  end
  sent, answered = 0, 0
end
function request()
  sent = sent + 1
  return wrk.format(nil, paths[math.min(sent, #paths)])
end
function response(status, headers, body)
  answered = answered + 1
  if answered == #paths then
    local done = io.open(done_file, "a")
    done:write("done\\n")
    done:close()
    wrk.thread:stop()
  end
end
"""


def _start_wrk(command: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _stop_wrk(process: subprocess.Popen[str]) -> dict[str, Any]:
    """Interrupt a wrk run: it reports what it measured so far, then exits."""
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    return wrk_result(process.returncode, out, err)


def _lines(path: Path) -> int:
    try:
        return path.read_text().count("\n")
    except FileNotFoundError:
        return 0


def crawl_paths(env: dict[str, str], manifest: dict[str, Any], directory: Path) -> tuple[Path, int]:
    """A file of the public sessions' paths, in an order unrelated to the list order."""
    with psycopg.connect(env["DATABASE_URL"]) as connection:
        rows = connection.execute(
            "SELECT id FROM sessions WHERE campaign_id = %s AND visibility = 'public' ORDER BY md5(id)",
            (manifest["campaign_id"],),
        ).fetchall()
    ids = [row[0] for row in rows][: CRAWL_SESSIONS or None]
    path = directory / "crawl-paths.txt"
    path.write_text("".join(f"{V1}/sessions/{session_id}\n" for session_id in ids))
    return path, len(ids)


def _ratio(numerator: float, denominator: float) -> str:
    return f"{numerator / denominator:.2f}" if denominator else "n/a"


def _row(*cells: object) -> str:
    return "| " + " | ".join(str(cell) for cell in cells) + " |"


def render_report(results: dict[str, Any]) -> str:
    settings, manifest, imported = results["settings"], results["manifest"], results["import"]
    others = manifest["counts"]["sessions"] - manifest["public_sessions"]
    lines = [
        "# Benchmark: service vs peer vs floor",
        "",
        f"{settings['cpus']} CPUs; PostgreSQL 15 and Redis on the same machine. wrk -t{settings['threads']} "
        f"-c{settings['connections']} (timeout {settings['wrk_timeout']}), alternating rounds per endpoint per "
        "server; req/s over all rounds, latency = median over rounds of wrk's per-round percentile.",
        f"Data: {manifest['public_sessions']:,} public sessions (+{others:,} private/other), "
        f"{manifest['counts']['locations']:,} locations, export {manifest['bytes'] / 1e6:.0f} MB.",
        "",
    ]
    for figures in results["profiles"].values():
        lines += render_profile(figures)
    loads = [
        run["loadavg_1m"]
        for figures in results["profiles"].values()
        for runs in figures["cells"].values()
        for run in runs
    ]
    following = ", ".join(
        f"{name} followed {timing['followed_pages']} pages in {timing['s']:.1f} s"
        for name, timing in results["cursor_following"].items()
    )
    equality = "; ".join(f"{key}: {verdict}" for key, verdict in sorted(results["equality"].items()))
    lines += [
        "",
        "Machine load (1-min loadavg; the benchmark itself accounts for ~3-4 of it): before the run "
        f"{' '.join(results['loadavg_before'])}, during the rounds {min(loads):.1f}-{max(loads):.1f}. "
        "Other jobs on a shared machine show up here: compare ratios, not absolute numbers.",
        "",
        f"Import (`campaign-api import`, {manifest['bytes'] / 1e6:.0f} MB, every summary rendered on every core): "
        f"{imported['wall_s']:.1f} s, CPU {imported['cpu_s']:.0f} s, peak RSS {imported['peak_rss_mb']:.0f} MB "
        f"(its processes together; largest one {imported['largest_process_rss_mb']:.0f} MB). "
        f"VACUUM ANALYZE: {results['vacuum_s']:.1f} s. "
        f"Generation (when the export was written): {manifest.get('generate_s', 'n/a')} s. "
        f"run.py wall time: {results['bench_s']:.0f} s.",
        f"Page-{DEEP_PAGE} cursors: {following}"
        + (
            f" (service: then the next_cursor of page {DEEP_PAGE - 1} served from an offset cursor)"
            if results["cursor_following"]["service"].get("jumped")
            else ""
        )
        + " (peer: its offset cursor, computed).",
        f"Equality with the service before timing: {equality}.",
        "",
    ]
    return "\n".join(lines)


def render_profile(figures: dict[str, Any]) -> list[str]:
    """The tables of one worker profile."""
    cells = {tuple(key.split("/")): Cell(runs) for key, runs in figures["cells"].items()}
    workers = figures["workers"]
    lines = [
        f"## {workers} worker(s) per server ({figures['rounds']} rounds x {figures['duration_s']} s per run)",
        "",
        _row(
            "endpoint",
            "service req/s",
            "p50 ms",
            "p99 ms",
            "peer req/s",
            "p50 ms",
            "p99 ms",
            "floor req/s",
            "p50 ms",
            "p99 ms",
            "service/peer",
            "service/floor",
            "errors s/p/f",
        ),
        "|---|" + "--:|" * 12,
    ]
    for endpoint in ENDPOINTS:
        found = {name: cells[(name, endpoint.key)] for name in NAMES if (name, endpoint.key) in cells}
        figures_row: list[str] = []
        for name in NAMES:
            cell = found.get(name)
            figures_row += (
                [f"{cell.rps:,.0f}", f"{cell.latency_ms('p50_us'):.1f}", f"{cell.latency_ms('p99_us'):.1f}"]
                if cell
                else ["-", "-", "-"]
            )
        ratios = [_ratio(found["service"].rps, found[n].rps) if n in found else "-" for n in ("peer", "floor")]
        errors = "/".join(str(found[n].errors) if n in found else "-" for n in NAMES)
        lines.append(_row(endpoint.label, *figures_row, *ratios, errors))

    warmup = figures["warmup_latency_ms"]
    lines += [
        "",
        "CPU ms/req: CPU time of the uvicorn workers only (not PostgreSQL or Redis) from wrk's start until the "
        "server is idle again, divided by completed + in-flight requests; much less sensitive to other load on "
        "the machine than req/s. Sequential ms: median of the 8 warm-up requests, one at a time on a new "
        "connection (no queueing).",
        "",
        _row(
            "endpoint",
            "CPU ms/req service",
            "peer",
            "floor",
            "service/peer",
            "service/floor",
            "sequential ms service",
            "peer",
            "floor",
        ),
        "|---|" + "--:|" * 8,
    ]
    for endpoint in ENDPOINTS:
        cpu = {name: cells[(name, endpoint.key)].cpu_ms for name in NAMES if (name, endpoint.key) in cells}
        sequential = [f"{warmup[f'{n}/{endpoint.key}']:.1f}" if f"{n}/{endpoint.key}" in warmup else "-" for n in NAMES]
        lines.append(
            _row(
                endpoint.label,
                *(f"{cpu[n]:.2f}" if n in cpu else "-" for n in NAMES),
                *(_ratio(cpu["service"], cpu[n]) if n in cpu else "-" for n in ("peer", "floor")),
                *sequential,
            )
        )

    def p50(name: str, key: str) -> float:
        cell = cells.get((name, key))
        return cell.latency_ms("p50_us") if cell else float("nan")

    rss, stress = figures["rss"], figures.get("stress")
    lines += [
        "",
        _row("", *NAMES),
        "|---|--:|--:|--:|",
        _row(
            f"p50 page {DEEP_PAGE:,} / p50 page 1 (sessions, limit 100)",
            *(_ratio(p50(n, "sessions_p1000"), p50(n, "sessions_p1")) for n in NAMES),
        ),
        _row(
            "p50 20 KB / p50 200 B session (warm)",
            *(_ratio(p50(n, "session_20kb"), p50(n, "session_200b")) for n in NAMES),
        ),
        _row(
            "RSS per worker after the run, MB (peak)",
            *(", ".join(f"{w['rss_mb']:.0f} ({w['hwm_mb']:.0f})" for w in rss[n]) for n in NAMES),
        ),
        _row(
            "start-up until every worker answers, s",
            *(f"{figures['startup_s'][n]:.1f}" for n in NAMES),
        ),
    ]
    if stress is not None:
        lines += [
            _row(
                f"errors at {STRESS_CONNECTIONS} connections, sessions list (non-2xx + socket)",
                *(f"{stress[n]['errors']} of {stress[n]['requests']:,}" for n in NAMES),
            ),
            _row(
                f"req/s and p99 ms at {STRESS_CONNECTIONS} connections",
                *(f"{stress[n]['rps']:,.0f} / {stress[n]['p99_us'] / 1000:.0f}" for n in NAMES),
            ),
        ]
    if "crawl" in figures:
        lines += render_crawl(figures["crawl"])
    lines.append("")
    return lines


def render_crawl(crawl: dict[str, dict[str, Any]]) -> list[str]:
    service, floor = crawl["service"], crawl["floor"]
    lines = [
        "",
        f"Crawl: each of {service['sessions']:,} public sessions once by id, {CRAWL_CLIENTS} clients, on a freshly "
        "started server, while a bystander fetches one location (1 connection, one request at a time). "
        "Targets: crawl wall time <= 2x the floor's, bystander p99 <= 20 ms.",
        "",
        _row("server", "crawl s", "req/s", "CPU ms/req", "errors", "bystander p50 ms", "p99 ms", "max ms"),
        "|---|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for name, figures in crawl.items():
        bystander = figures["bystander"]
        lines.append(
            _row(
                name,
                f"{figures['wall_s']:.1f}",
                f"{figures['rps']:,.0f}",
                f"{figures['cpu_ms_per_req']:.2f}",
                figures["errors"],
                f"{bystander['p50_us'] / 1000:.1f}",
                f"{bystander['p99_us'] / 1000:.1f}",
                f"{bystander['max_us'] / 1000:.1f}",
            )
        )
    lines.append(f"Crawl wall time service / floor: {_ratio(service['wall_s'], floor['wall_s'])}.")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--export", type=Path, required=True)
    parser.add_argument("--report", type=Path, default=ROOT / "artifacts" / "bench.md")
    parser.add_argument("--deadline", type=float, help="Unix time by which the run should be over")
    args = parser.parse_args(argv)

    def stop(signum: int, _frame: Any) -> None:
        raise SystemExit(128 + signum)  # unwinds the ExitStack: servers, Redis keys, database

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGHUP, stop)
    try:
        return run(args.export, args.report, args.deadline)
    except BenchError as exc:
        log(f"FAILED: {exc}")
        return 1


if __name__ == "__main__":
    sys.exit(main())

"""What one request costs each tier: the measured figures of docs/deployment.md's capacity model.

    python tests/benchmarks/capacity.py --database-url postgresql://postgres@127.0.0.1:5432/DB \\
        --manifest artifacts/bench/export.json.manifest.json [--seconds 4] [--connections 32]

DB holds an export of tests/benchmarks/generate.py (imported with `campaign-api import`;
the manifest names its campaign and records). The script starts a private redis-server,
issues a key, then serves DB with `campaign-api serve --workers 2`, straight to PostgreSQL
and then through a private PgBouncer (transaction mode), and drives each endpoint with wrk.
Per request it reports, from the processes' own counters (not from req/s, which this
shared machine makes noisy):

- worker CPU (both workers' /proc ticks);
- PostgreSQL statements (the database's committed transactions: every read is one) and the
  CPU of the server processes serving the database (/proc ticks);
- Redis scripts (EVALSHA) and Redis's time inside them, Redis socket reads (round trips:
  concurrent requests' scripts travel together) and Redis CPU (INFO of the private server:
  nothing else talks to it);
- PgBouncer CPU, on the pooled run;
- the connections each worker holds to PostgreSQL and Redis at the end of the run.

Read-only against DB (SELECTs and a key).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import orjson
import psycopg
import redis
from sqlalchemy.engine import make_url

from tests.benchmarks.run import (
    CLI,
    V1,
    Server,
    _cpu_ticks,
    base_env,
    cli,
    log,
    lua_script,
    settle,
    wrk,
)
from tests.cluster.pgbouncer import running_pgbouncer
from tests.contract.redis_process import RedisProcess
from tests.contract.server import free_port

PEPPER = "capacity-pepper-0123456789-abcdefghijklmnop"
TICK_S = 1 / os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True, slots=True)
class Endpoint:
    label: str
    path: str


def endpoints(manifest: dict[str, object]) -> list[Endpoint]:
    return [
        Endpoint("location", f"{V1}/locations/{manifest['location_id']}"),
        Endpoint("session, 200 B summary", f"{V1}/sessions/{manifest['session_200b_id']}"),
        Endpoint("session, 20 KB summary", f"{V1}/sessions/{manifest['session_20kb_id']}"),
        Endpoint("sessions list (limit 50)", f"{V1}/sessions"),
        Endpoint("locations list (limit 100)", f"{V1}/locations?limit=100"),
    ]


@dataclass(frozen=True, slots=True)
class Snapshot:
    worker_ticks: int
    backend_ticks: int
    statements: int
    redis_scripts: int
    redis_script_us: float  # Redis's time inside those scripts, in total
    redis_reads: int
    redis_cpu_s: float
    pooler_ticks: int


class Meters:
    """Reads every tier's counters; `conninfo` is the database, straight."""

    def __init__(self, *, conninfo: str, redis_port: int, server: Server, pooler_pid: int | None) -> None:
        self._conninfo = conninfo
        self._redis = redis.Redis(host="127.0.0.1", port=redis_port)
        self._server = server
        self._pooler_pid = pooler_pid

    def backends(self) -> list[int]:
        with psycopg.connect(self._conninfo, autocommit=True) as admin:
            rows = admin.execute(
                "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
            ).fetchall()
        return [pid for (pid,) in rows]

    def snapshot(self, backends: list[int]) -> Snapshot:
        with psycopg.connect(self._conninfo, autocommit=True) as admin:
            row = admin.execute(
                "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"
            ).fetchone()
        assert row is not None
        stats, cpu = self._redis.info("stats"), self._redis.info("cpu")
        evalsha = self._redis.info("commandstats").get("cmdstat_evalsha", {})
        return Snapshot(
            worker_ticks=_cpu_ticks(self._server.worker_pids()),
            backend_ticks=_cpu_ticks(backends),
            statements=int(row[0]),
            redis_scripts=int(evalsha.get("calls", 0)),
            redis_script_us=float(evalsha.get("usec", 0)),
            # Reads of client sockets: the round trips Redis served (a batch of scripts is one).
            redis_reads=int(stats["total_reads_processed"]),
            redis_cpu_s=float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"]),
            pooler_ticks=_cpu_ticks([self._pooler_pid]) if self._pooler_pid else 0,
        )

    def connections(self) -> tuple[int, int]:
        """(PostgreSQL server connections of the database, Redis clients), ours excluded."""
        return len(self.backends()), int(self._redis.info("clients")["connected_clients"]) - 1

    def close(self) -> None:
        self._redis.close()


def measure(
    server: Server, meters: Meters, endpoint: Endpoint, script: Path, *, seconds: int, connections: int
) -> dict[str, float]:
    url = f"{server.base}{endpoint.path}"
    wrk(url, script, connections=connections, duration_s=1)  # warm: connections, caches
    settle(server)
    backends = meters.backends()
    before = meters.snapshot(backends)
    result = wrk(url, script, connections=connections, duration_s=seconds)
    settle(server)
    after = meters.snapshot(backends)
    if result["errors"]:
        raise SystemExit(f"{endpoint.label}: {result['errors']} errors under load")
    requests = result["requests"] + connections  # those in flight when wrk stopped were served after
    per_request = 1e6 / requests  # µs per request, per second of CPU
    return {
        "rps": result["rps"],
        "worker_ms": (after.worker_ticks - before.worker_ticks) * TICK_S * 1000 / requests,
        # Each snapshot commits one statement of its own (the one reading the counter).
        "statements": (after.statements - before.statements - 1) / requests,
        "postgres_us": (after.backend_ticks - before.backend_ticks) * TICK_S * per_request,
        "redis_scripts": (after.redis_scripts - before.redis_scripts) / requests,
        "redis_script_us": (after.redis_script_us - before.redis_script_us) / requests,
        # The snapshot's own three INFO reads are not the service's.
        "redis_reads": (after.redis_reads - before.redis_reads - 3) / requests,
        "redis_us": (after.redis_cpu_s - before.redis_cpu_s) * per_request,
        "pgbouncer_us": (after.pooler_ticks - before.pooler_ticks) * TICK_S * per_request,
    }


@contextlib.contextmanager
def served(env: dict[str, str], workdir: Path, name: str, token: str) -> Iterator[Server]:
    server = Server(
        name=name,
        command=[str(CLI), "serve", "--host", "127.0.0.1", "--port", "{port}", "--workers", "2"],
        env=env,
        cwd=workdir,
        log_path=workdir / f"{name}.log",
    )
    server.start()
    try:
        server.wait_ready(token)
        yield server
    finally:
        server.stop()


def run(arguments: argparse.Namespace) -> None:
    manifest = orjson.loads(Path(arguments.manifest).read_bytes())
    database_url = arguments.database_url
    conninfo = make_url(database_url).set(drivername="postgresql").render_as_string(hide_password=False)
    workdir = Path(tempfile.mkdtemp(prefix="campaign-capacity-"))
    redis_server = RedisProcess(port=free_port(), workdir=workdir)
    redis_server.start()
    try:
        env = base_env(database_url, redis_server.url, PEPPER)
        env["LOG_LEVEL"] = "WARNING"
        token = cli(env, workdir, "keys", "create", "--campaign", manifest["campaign_id"],
                    "--owner", manifest["user_id"], "--label", "capacity").strip()
        script = lua_script(workdir, "capacity", token, None)
        rows: dict[str, dict[str, dict[str, float]]] = {}
        with running_pgbouncer(address="127.0.0.1", server_url=database_url) as bouncer:
            routes = {"direct": (env, None), "pgbouncer": ({**env, "DATABASE_URL": bouncer.url_for(database_url)},
                                                          bouncer.daemon.pid)}
            for route, (route_env, pooler_pid) in routes.items():
                with served(route_env, workdir, f"service-{route}", token) as server:
                    meters = Meters(conninfo=conninfo, redis_port=redis_server.port, server=server,
                                    pooler_pid=pooler_pid)
                    try:
                        for endpoint in endpoints(manifest):
                            runs = [measure(server, meters, endpoint, script, seconds=arguments.seconds,
                                            connections=arguments.connections) for _ in range(arguments.rounds)]
                            rows.setdefault(endpoint.label, {})[route] = {
                                key: statistics.median(run[key] for run in runs) for key in runs[0]
                            }
                            log(f"{route} {endpoint.label}: {rows[endpoint.label][route]}")
                        postgres, redis_clients = meters.connections()
                        log(f"{route}: {postgres} PostgreSQL connections of the database, "
                            f"{redis_clients} Redis clients, for 2 workers")
                    finally:
                        meters.close()
        print_table(rows, arguments)
    finally:
        redis_server.stop()


def print_table(rows: dict[str, dict[str, dict[str, float]]], arguments: argparse.Namespace) -> None:
    print(f"\nPer request, wrk -c{arguments.connections}, median of {arguments.rounds} runs of {arguments.seconds} s")
    print("| endpoint | route | req/s | worker CPU ms | PG statements | PG CPU µs | Redis scripts | in scripts µs "
          "| Redis reads | Redis CPU µs | PgBouncer CPU µs |")
    print("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    columns = (("rps", ",.0f"), ("worker_ms", ".2f"), ("statements", ".2f"), ("postgres_us", ".0f"),
               ("redis_scripts", ".2f"), ("redis_script_us", ".1f"), ("redis_reads", ".2f"), ("redis_us", ".0f"),
               ("pgbouncer_us", ".0f"))
    for label, routes in rows.items():
        for route, cells in routes.items():
            print(f"| {label} | {route} | " + " | ".join(format(cells[key], spec) for key, spec in columns) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--manifest", required=True)
    parser.add_argument("--seconds", type=int, default=4)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=2)
    run(parser.parse_args())


if __name__ == "__main__":
    main()

"""Worker time of the costliest GraphQL requests the cost limit admits, on generated data.

    python -m tests.benchmarks.graphql_cost [--export artifacts/bench/small-export.json]

Generates a small campaign with tests/benchmarks/generate.py unless an export is given
(the same shape as `make bench`'s: summaries of 200 B to 20 KB, a location hierarchy),
imports it into a throwaway PostgreSQL database with the real CLI, and for each query
starts a fresh `campaign-api serve` (one worker, so its Markdown cache is empty: the worst
case) and sends the query twice: cold, then warm. It prints the estimated cost, the worker's
CPU time (all its threads, from /proc/<pid>/task/*/schedstat), the wall time and the size
of each answer, and the time the worker takes to refuse the query of issue 12.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import orjson
from graphql import parse

from engine.cursor import Cursor, encode_cursor
from graphql_schema.cost import MAX_COST, operation_costs
from graphql_schema.schema import build_schema
from tests.contract.server import Cli, ServiceEnv, running_server
from tests.databases import postgres_database

GENERATOR = Path(__file__).with_name("generate.py")
DEFAULT_EXPORT = Path("artifacts/bench/small-export.json")
SMALL = ("--public-sessions", "6000", "--private-sessions", "600", "--locations", "4000", "--entities", "2000")
SESSION_FIELDS = "id title status recordingDate createdAt updatedAt sessionType visibility summaryMarkdown summaryText"
LOCATION_FIELDS = (
    "id name icon hiddenFromWiki createdAt updatedAt type imageUrl parentId descriptionMarkdown descriptionText"
)


def _pages_of_sessions(aliases: int, size: int) -> str:
    """`aliases` pages of `size` sessions with every field, each at its own offset."""
    pages = " ".join(
        f'p{n}: sessions(limit: {size}, cursor: "{encode_cursor(Cursor(offset=(n + 1) * 200))}") '
        f"{{ data {{ {SESSION_FIELDS} }} }}"
        for n in range(aliases)
    )
    return f"{{ {pages} }}"


QUERIES = {
    "100 sessions, every field": f"{{ sessions(limit: 100) {{ data {{ {SESSION_FIELDS} }} }} }}",
    "30 aliases x 3 sessions, every field, 30 pages": _pages_of_sessions(30, 3),
    "100 locations, every field, parent": (
        f"{{ locations(limit: 100) {{ data {{ {LOCATION_FIELDS} parent {{ id name }} }} }} }}"
    ),
    "100 locations with 100 children each": "{ locations(limit: 100) { data { id children { id name type } } } }",
    "10 x 10 x 10 x 10 nested children": (
        "{ locations(limit: 10) { data { id children(limit: 10) { id children(limit: 10) { id "
        "children(limit: 10) { id name } } } } } }"
    ),
}
# The query of issue 12 (refused): 30 aliases of 100 sessions with summaries, 30 cursors.
REFUSED = _pages_of_sessions(30, 100)


@dataclass(frozen=True, slots=True)
class Measure:
    cpu_ms: float
    wall_ms: float
    size: int
    status: int
    errors: int


def worker_cpu_ns(pid: int) -> int:
    return sum(int((task / "schedstat").read_text().split()[0]) for task in Path(f"/proc/{pid}/task").iterdir())


def send(client: httpx.Client, pid: int, query: str) -> Measure:
    before_cpu, before = worker_cpu_ns(pid), time.perf_counter()
    response = client.post("/graphql", json={"query": query})
    wall_ms = (time.perf_counter() - before) * 1000
    time.sleep(0.05)  # let the worker finish writing (the access log) before reading its CPU
    cpu_ms = (worker_cpu_ns(pid) - before_cpu) / 1e6
    body = orjson.loads(response.content)
    return Measure(cpu_ms, wall_ms, len(response.content), response.status_code, len(body.get("errors", [])))


def ensure_export(export: Path) -> Path:
    if not export.exists():
        export.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, str(GENERATOR), "--out", str(export), *SMALL], check=True)
    return export


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--export", type=Path, default=DEFAULT_EXPORT)
    arguments = parser.parse_args()
    export = ensure_export(arguments.export)
    manifest = orjson.loads(export.with_name(export.name + ".manifest.json").read_bytes())
    schema = build_schema()._schema
    with tempfile.TemporaryDirectory() as workdir, postgres_database("campaign_cost") as url:
        env = ServiceEnv(database_url=url, rate_limit_key="100000 per minute", rate_limit_ip="100000 per minute")
        cli = Cli(env=env, workdir=Path(workdir))
        cli.run("import", str(export.resolve()))
        token = cli.create_key(campaign=manifest["campaign_id"], owner=manifest["user_id"])
        print(f"budget {MAX_COST:,}; export {export} ({manifest['counts']})")
        print(f"{'query':<48} {'cost':>7} {'cold CPU ms':>12} {'cold wall ms':>13} {'warm CPU ms':>12} {'bytes':>10}")
        for name, query in [*QUERIES.items(), ("refused: the 30 x 100 sessions of issue 12", REFUSED)]:
            auth = {"Authorization": f"Bearer {token}"}
            with (
                running_server(env, workdir=Path(workdir)) as server,
                httpx.Client(base_url=server.base_url, headers=auth, timeout=120) as client,
            ):
                cold = send(client, server.process.pid, query)
                warm = send(client, server.process.pid, query)
            assert cold.status == 200 and (cold.errors == 0) == (name in QUERIES), (name, cold)
            cost = sum(operation_costs(schema, parse(query)).values())
            print(
                f"{name:<48} {cost:>7,} {cold.cpu_ms:>12.1f} {cold.wall_ms:>13.1f} {warm.cpu_ms:>12.1f}"
                f" {cold.size:>10,}"
            )


if __name__ == "__main__":
    main()

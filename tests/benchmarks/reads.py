"""In-process cost of the request path's reads: sequential `RequestReader.fetch` of a
location by id, min over batches of `time.process_time()` (CPU, not wall: the benchmark
machine is shared) and of the wall time (the latency of one read, the server's work
included).

    python tests/benchmarks/reads.py postgresql://postgres@127.0.0.1:5432/benchdev \\
        CAMPAIGN_ID LOCATION_ID [--statements 2000] [--batches 15] [--unnamed]

Give a URL through PgBouncer to measure the pooled path (engine/pg_sessions.py). With
`--unnamed`, a direct connection runs unnamed statements as a pooled one does (planned per
execution): what that path would cost without a pooler.

Read-only: it runs SELECTs of one record and nothing else.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from dataclasses import dataclass

from engine import records
from engine.db import Database
from engine.read_pool import ReadPool
from engine.records import EntityKind
from engine.settings import Settings


@dataclass(frozen=True, slots=True)
class Batch:
    cpu_us: float
    wall_us: float


async def _measure(url: str, campaign_id: str, location_id: str, arguments: argparse.Namespace) -> list[Batch]:
    database = Database(Settings(_env_file=None, database_url=url))  # type: ignore[call-arg]
    statement = records._entity_by_id(EntityKind.LOCATION, True)
    parameters = {"campaign_id": campaign_id, "record_id": location_id}
    batches = []
    try:
        reader = database.reader
        assert len(await reader.fetch(statement, parameters)) == 1  # warm: connection, compiled SQL
        pool = database.read_connections
        if arguments.unnamed:
            assert isinstance(pool, ReadPool)
            (lent,) = pool._idle  # the one connection the warm-up opened
            lent.cursor.connection.prepare_threshold = None
        for _ in range(arguments.batches):
            cpu, wall = time.process_time(), time.perf_counter()
            for _ in range(arguments.statements):
                await reader.fetch(statement, parameters)
            batches.append(
                Batch(
                    cpu_us=(time.process_time() - cpu) / arguments.statements * 1e6,
                    wall_us=(time.perf_counter() - wall) / arguments.statements * 1e6,
                )
            )
    finally:
        await database.dispose()
    return batches


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("database_url")
    parser.add_argument("campaign_id")
    parser.add_argument("location_id")
    parser.add_argument("--statements", type=int, default=2000)
    parser.add_argument("--batches", type=int, default=15)
    parser.add_argument("--unnamed", action="store_true", help="unnamed statements on a direct connection")
    arguments = parser.parse_args()
    batches = asyncio.run(_measure(arguments.database_url, arguments.campaign_id, arguments.location_id, arguments))
    cpu = sorted(batch.cpu_us for batch in batches)
    wall = sorted(batch.wall_us for batch in batches)
    print(
        f"per fetch, {arguments.batches} batches of {arguments.statements}:"
        f" CPU min {cpu[0]:.1f} µs, median {cpu[len(cpu) // 2]:.1f} µs;"
        f" wall min {wall[0]:.1f} µs, median {wall[len(wall) // 2]:.1f} µs"
    )


if __name__ == "__main__":
    main()

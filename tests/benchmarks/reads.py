"""In-process CPU cost of the request path's reads: sequential `RequestReader.fetch` of a
location by id, min over batches of `time.process_time()` (CPU, not wall: the benchmark
machine is shared).

    python tests/benchmarks/reads.py postgresql://postgres@127.0.0.1:5432/benchdev \\
        CAMPAIGN_ID LOCATION_ID [--statements 2000] [--batches 15]

Read-only: it runs SELECTs of one record and nothing else.
"""

from __future__ import annotations

import argparse
import asyncio
import time

from engine import records
from engine.db import Database
from engine.records import EntityKind
from engine.settings import Settings


async def _measure(url: str, campaign_id: str, location_id: str, statements: int, batches: int) -> list[float]:
    database = Database(Settings(_env_file=None, database_url=url))  # type: ignore[call-arg]
    statement = records._entity_by_id(EntityKind.LOCATION, True)
    parameters = {"campaign_id": campaign_id, "record_id": location_id}
    per_statement_us = []
    try:
        async with database.reader() as reader:
            assert len(await reader.fetch(statement, parameters)) == 1  # warm: connection, compiled SQL
            for _ in range(batches):
                started = time.process_time()
                for _ in range(statements):
                    await reader.fetch(statement, parameters)
                per_statement_us.append((time.process_time() - started) / statements * 1e6)
    finally:
        await database.dispose()
    return per_statement_us


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("database_url")
    parser.add_argument("campaign_id")
    parser.add_argument("location_id")
    parser.add_argument("--statements", type=int, default=2000)
    parser.add_argument("--batches", type=int, default=15)
    arguments = parser.parse_args()
    batches = asyncio.run(
        _measure(
            arguments.database_url, arguments.campaign_id, arguments.location_id, arguments.statements,
            arguments.batches,
        )
    )
    print(
        f"CPU per fetch, {arguments.batches} batches of {arguments.statements}: min {min(batches):.1f} µs,"
        f" median {sorted(batches)[len(batches) // 2]:.1f} µs"
    )


if __name__ == "__main__":
    main()

"""CPU cost of gzip on the benchmark's 100-row list responses, per level, in-process.

    python -m tests.benchmarks.gzip_cost [--batches 15] [--requests 200]

Generates a campaign of the benchmark's shape at a small size (tests/benchmarks/generate.py),
imports it into a throwaway SQLite database, and calls the ASGI app directly (no HTTP
client in the way) for the 100-row pages of sessions, locations and characters:

- the request's CPU without Accept-Encoding (identity, the baseline of this run) and with
  `Accept-Encoding: gzip` at the level the service uses (rest/compression.py);
- `gzip.compress` alone on each body at levels 1, 6 and 9: CPU per body, compressed size.

Figures are the minimum over batches of `time.process_time()` per call: CPU, not wall,
since the machine is shared.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import orjson

from engine.db import Database
from engine.importer import import_campaign_export
from engine.keys import create_api_key
from engine.settings import Settings
from rest.app import create_app
from rest.compression import GZIP_LEVEL
from tests.databases import sqlite_database
from tests.factories import unlimited_settings

GENERATOR = Path(__file__).with_name("generate.py")
SIZE = ("--public-sessions", "400", "--private-sessions", "40", "--locations", "300", "--entities", "200")
PAGES = ("sessions", "locations", "characters")
LEVELS = (1, 6, 9)
PEPPER = "gzip-cost-pepper-0123456789-abcdefghijkl"


def _scope(path: str, token: str, *, accept_gzip: bool) -> dict[str, Any]:
    headers = [(b"host", b"bench"), (b"authorization", f"Bearer {token}".encode())]
    if accept_gzip:
        headers.append((b"accept-encoding", b"gzip"))
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"limit=100",
        "root_path": "",
        "headers": headers,
        "client": ("127.0.0.1", 40000),
        "server": ("bench", 80),
    }


async def _call(app: Any, scope: dict[str, Any]) -> tuple[dict[str, Any], bytes]:
    messages: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        messages.append(message)

    await app(dict(scope), receive, send)
    return messages[0], b"".join(message.get("body", b"") for message in messages[1:])


async def _min_cpu_us(call: Callable[[], Awaitable[Any]], *, batches: int, calls: int) -> float:
    best = float("inf")
    for _ in range(batches):
        started = time.process_time()
        for _ in range(calls):
            await call()
        best = min(best, (time.process_time() - started) / calls)
    return best * 1e6


async def _seed(settings: Settings, export: Path) -> str:
    database = Database(settings)
    try:
        async with database.session() as db:
            await import_campaign_export(db, source=export)
        manifest = orjson.loads(export.with_name(export.name + ".manifest.json").read_bytes())
        async with database.session() as db:
            issued = await create_api_key(
                db,
                campaign_id=manifest["campaign_id"],
                owner_id=manifest["user_id"],
                label="gzip",
                pepper=settings.pepper,
            )
    finally:
        await database.dispose()
    return issued.token


async def _measure(url: str, export: Path, *, batches: int, requests: int) -> None:
    settings = unlimited_settings(url, pepper=PEPPER)
    token = await _seed(settings, export)
    app = create_app(settings)
    print(f"gzip level of the service: {GZIP_LEVEL}; CPU per call, min of {batches} batches")
    print(f"{'page (limit 100)':<18} {'bytes':>8} {'identity µs':>12} {'gzip µs':>9} {'+%':>6}", end="")
    print("".join(f" {'L' + str(level) + ' µs':>8} {'L' + str(level) + ' bytes':>9}" for level in LEVELS))
    for page in PAGES:
        path = f"/api/public/v1/{page}"
        identity, gzipped = _scope(path, token, accept_gzip=False), _scope(path, token, accept_gzip=True)
        start, body = await _call(app, identity)
        assert start["status"] == 200 and len(orjson.loads(body)["data"]) == 100, (start, body[:200])
        gzip_start, compressed = await _call(app, gzipped)
        assert (b"content-encoding", b"gzip") in gzip_start["headers"] and gzip.decompress(compressed) == body
        plain_us = await _min_cpu_us(lambda scope=identity: _call(app, scope), batches=batches, calls=requests)
        gzip_us = await _min_cpu_us(lambda scope=gzipped: _call(app, scope), batches=batches, calls=requests)
        levels = []
        for level in LEVELS:

            async def compress(level: int = level, body: bytes = body) -> bytes:
                return gzip.compress(body, compresslevel=level, mtime=0)

            cost = await _min_cpu_us(compress, batches=batches, calls=requests)
            levels.append(f" {cost:>8.1f} {len(gzip.compress(body, compresslevel=level, mtime=0)):>9,}")
        overhead = (gzip_us - plain_us) / plain_us * 100
        print(f"{page:<18} {len(body):>8,} {plain_us:>12.1f} {gzip_us:>9.1f} {overhead:>5.0f}%" + "".join(levels))
    await app.state.runtime.database.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batches", type=int, default=15)
    parser.add_argument("--requests", type=int, default=200)
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        export = Path(workdir) / "export.json"
        subprocess.run([sys.executable, str(GENERATOR), "--out", str(export), *SIZE], check=True, capture_output=True)
        with sqlite_database(Path(workdir)) as url:
            asyncio.run(_measure(url, export, batches=arguments.batches, requests=arguments.requests))


if __name__ == "__main__":
    main()

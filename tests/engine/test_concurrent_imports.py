"""Two `campaign-api import` processes at once on PostgreSQL, while a client polls the feed.

The test holds the writers' advisory lock while both imports start, so both are in flight
together (each seen waiting for the lock), then lets them go. A client that follows the
feed from its cursor while they commit must see every entry the feed ends with: an entry
committed behind a cursor the client has already passed would never reach it.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest
from sqlalchemy.engine import make_url

from engine.changes import list_changes
from engine.db import Database
from engine.records import CampaignScope
from engine.settings import Settings
from engine.write_lock import WRITERS_LOCK_KEY
from tests.contract.server import CLI, Cli, ServiceEnv
from tests.databases import postgres_database

pytestmark = pytest.mark.postgres

SESSIONS = 300
SUMMARY = "## Recap\n\nThe party crossed the marsh and **argued** about the map.\n"


def export(tag: str, *, new: range) -> dict[str, Any]:
    """Campaign c: every shared session retitled and re-summarized by `tag`, plus `new` ones."""
    sessions = [
        {
            "id": f"s{n:04d}",
            "campaign_id": "c",
            "title": f"{tag} {n}",
            "status": "completed",
            "session_type": "audio",
            "visibility": "public",
            "summary": f"{tag}\n\n{SUMMARY}",
        }
        for n in [*range(SESSIONS), *new]
    ]
    return {"users": [{"id": "u"}], "campaigns": [{"id": "c", "name": "C", "owner_id": "u"}], "sessions": sessions}


def conninfo(database_url: str) -> str:
    return make_url(database_url).set(drivername="postgresql").render_as_string(hide_password=False)


def lock_waiters(connection: psycopg.Connection[Any]) -> int:
    row = connection.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
        "AND wait_event_type = 'Lock' AND wait_event = 'advisory'"
    ).fetchone()
    assert row is not None
    return int(row[0])


class FeedClient:
    """Follows campaign c's feed from a cursor, as a sync client would."""

    def __init__(self, database_url: str) -> None:
        self.database = Database(Settings(_env_file=None, database_url=database_url))  # type: ignore[call-arg]
        self.cursor: str | None = None
        self.seen: list[tuple[str, int]] = []  # (id, seq) in the order read

    async def poll(self) -> None:
        reader = self.database.reader
        while True:
            page = await list_changes(reader, scope=CampaignScope(campaign_id="c"), limit=100, cursor=self.cursor)
            self.seen += [(entry.id, entry.seq) for entry in page.items]
            self.cursor = page.next_cursor
            if not page.has_more:
                return

    async def everything(self) -> list[Any]:
        entries: list[Any] = []
        cursor = None
        reader = self.database.reader
        while True:
            page = await list_changes(reader, scope=CampaignScope(campaign_id="c"), limit=100, cursor=cursor)
            entries += page.items
            cursor = page.next_cursor
            if not page.has_more:
                return entries


def start_import(cli: Cli, path: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [str(CLI), "import", str(path)],
        env=cli.env.variables(),
        cwd=cli.workdir,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


async def follow_while(client: FeedClient, imports: list[subprocess.Popen[str]], lock: psycopg.Connection[Any]) -> int:
    """Poll the feed until both imports end; the most writers seen waiting for the lock."""
    waiting = 0
    released = False
    deadline = time.monotonic() + 120
    while any(process.poll() is None for process in imports):
        assert time.monotonic() < deadline, "the imports did not finish"
        waiting = max(waiting, lock_waiters(lock))
        if not released and waiting == len(imports):
            lock.execute("SELECT pg_advisory_unlock(%s)", (WRITERS_LOCK_KEY,))
            released = True
        await client.poll()
        await asyncio.sleep(0.01)
    await client.poll()
    return waiting


def test_concurrent_imports_keep_the_feed_in_commit_order(tmp_path: Path) -> None:
    with postgres_database() as url:
        cli = Cli(env=ServiceEnv(database_url=url), workdir=tmp_path)
        cli.import_export(export("seed", new=range(0)))
        client = FeedClient(url)
        paths = []
        for tag, new in (("first", range(SESSIONS, SESSIONS + 100)), ("second", range(SESSIONS + 100, SESSIONS + 200))):
            paths.append(tmp_path / f"{tag}.json")
            paths[-1].write_text(json.dumps(export(tag, new=new)), encoding="utf-8")

        async def run() -> tuple[int, list[Any]]:
            try:
                await client.poll()
                with psycopg.connect(conninfo(url), autocommit=True) as lock:
                    lock.execute("SELECT pg_advisory_lock(%s)", (WRITERS_LOCK_KEY,))
                    imports = [start_import(cli, path) for path in paths]
                    waiting = await follow_while(client, imports, lock)
                for process in imports:
                    _, err = process.communicate()
                    assert process.returncode == 0, err
                return waiting, await client.everything()
            finally:
                await client.database.dispose()

        waiting, final = asyncio.run(run())

    # Both imports were in flight together: both waited for the lock.
    assert waiting == 2
    # The client never read a sequence number lower than one it had read before, and it saw
    # every entry the feed ends with, at that entry's sequence number.
    sequences = [seq for _, seq in client.seen]
    assert sequences == sorted(sequences) and len(set(sequences)) == len(sequences)
    assert {(entry.id, entry.seq) for entry in final} <= set(client.seen)
    # One entry per record: the seed's, the two imports' new sessions.
    assert len(final) == SESSIONS + 200

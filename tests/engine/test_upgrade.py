"""`campaign-api db upgrade` on a database the previous version imported, on SQLite and
PostgreSQL: it must serve exactly the bytes that version served.

The database is migrated to revision 0001 and loaded the way version 1.0.0's importer
loaded it (the validated records, upserted into the tables of that schema), then upgraded
with the real command; every body the ten endpoints serve for the contract and demo
campaigns is compared with what 1.0.0 served (tests/engine/bodies_before_sync.json).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import MetaData
from sqlalchemy.ext.asyncio import create_async_engine

from engine.changes import list_changes
from engine.db import Database
from engine.export_format import RECORD_MODELS
from engine.records import CampaignScope
from rest.cli import main
from tests.contract.campaign import CAMPAIGN_A, HIDDEN_IDS, expected_list
from tests.databases import BACKENDS, migrated_database
from tests.engine.served_bodies import GOLDEN, campaign_exports, issue_tokens, served_bodies, settings_for


async def load_as_version_1_0(database_url: str) -> None:
    """What 1.0.0's importer wrote: each export's validated records, by array in write
    order, into the tables as schema 0001 has them."""
    engine = create_async_engine(database_url)
    try:
        async with engine.begin() as connection:
            schema = MetaData()
            await connection.run_sync(schema.reflect)
            for export in campaign_exports():
                for array, model in RECORD_MODELS.items():
                    rows = [model.model_validate(raw).model_dump() for raw in export.get(array, [])]
                    if rows:
                        await connection.execute(schema.tables[array].insert(), rows)
    finally:
        await engine.dispose()


@pytest.fixture(params=BACKENDS)
def version_1_0_database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    with migrated_database(request.param, tmp_path, revision="0001") as url:
        asyncio.run(load_as_version_1_0(url))
        yield url


async def feed_of(database_url: str, campaign_id: str) -> list[tuple[str, str, str]]:
    """The campaign's feed from its start, every page."""
    database = Database(settings_for(database_url))
    entries: list[tuple[str, str, str]] = []
    cursor = None
    try:
        reader = database.reader
        while True:
            scope = CampaignScope(campaign_id=campaign_id)
            page = await list_changes(reader, scope=scope, limit=100, cursor=cursor)
            entries += [(entry.type, entry.id, entry.change) for entry in page.items]
            cursor = page.next_cursor
            if not page.has_more:
                return entries
    finally:
        await database.dispose()


def test_an_upgraded_database_serves_the_bytes_1_0_served(
    version_1_0_database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = settings_for(version_1_0_database)
    assert main(["db", "upgrade"], settings=settings) == 0
    out = capsys.readouterr().out
    records = sum(len(export.get(array, [])) for export in campaign_exports() for array in list(RECORD_MODELS)[2:])
    assert f"rendered {records:,} records again" in out

    served = asyncio.run(served_bodies(version_1_0_database, asyncio.run(issue_tokens(version_1_0_database))))
    assert served == json.loads(GOLDEN.read_text(encoding="utf-8"))

    # Every visible record entered the feed, once, as new to it.
    feed = asyncio.run(feed_of(version_1_0_database, CAMPAIGN_A))
    expected = {("session", item["id"]) for item in expected_list("sessions")}
    for kind in ("location", "character", "faction", "item"):
        expected |= {(kind, item["id"]) for item in expected_list(f"{kind}s")}
    assert sorted((record_type, record_id) for record_type, record_id, _ in feed) == sorted(expected)
    assert {change for _, _, change in feed} == {"upsert"}
    never_visible = {record_id for ids in HIDDEN_IDS.values() for record_id in ids}
    assert never_visible and not never_visible & {record_id for _, record_id, _ in feed}

    # Running it again finds nothing left to render.
    assert main(["db", "upgrade"], settings=settings) == 0
    assert "again" not in capsys.readouterr().out

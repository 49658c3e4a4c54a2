"""The request path's reads (engine/db.py, engine/statements.py) on the real databases.

Statements run on the driver connection must return what SQLAlchemy returns for the same
Core select (values processed by the column types: timezone-aware UTC datetimes, bools),
for every statement shape the record reads use; a connection the database dropped is
replaced without an error; an unreachable database is a ReadFailed, not a driver error.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest
from sqlalchemy.engine import make_url

from engine import records
from engine.db import Database, fetch
from engine.read_pool import ReadFailed
from engine.records import EntityKind, Shape
from engine.settings import Settings
from engine.statements import ReadStatement
from tests.conftest import TEST_PEPPER
from tests.databases import postgres_database
from tests.factories import add_campaign, add_entity, add_session, at
from tests.metrics import database_errors


@pytest.fixture
async def campaign_id(database: Database) -> AsyncIterator[str]:
    """A committed campaign with dated, undated and hidden records (the driver path reads
    through its own connections, so the rows must be committed)."""
    campaign = f"reads_{uuid.uuid4().hex[:12]}"
    async with database.session() as session:
        await add_campaign(session, campaign_id=campaign)
        for index in range(6):
            await add_session(
                session,
                campaign_id=campaign,
                session_id=f"{campaign}_s{index}",
                recording_date=at(2020 + index % 3, hour=index) if index % 2 else None,
                created_at=datetime(2024, 1, 1, 12, 30, 15, 123456, tzinfo=UTC),
                summary=f"Summary {index}",
            )
        for index in range(6):
            await add_entity(
                session,
                campaign_id=campaign,
                entity_id=f"{campaign}_l{index}",
                name=f"Place {index % 3}",
                sort_order=index if index % 2 else None,
                hidden_from_wiki=index == 5,
                parent_id=f"{campaign}_l0" if index else None,
            )
    yield campaign


def _statements(campaign: str) -> list[tuple[str, ReadStatement, dict[str, Any]]]:
    page = {"campaign_id": campaign, "size": 4}
    session_seek = {"after_date": at(2021, hour=3), "after_id": f"{campaign}_s3"}
    entity_seek = {"after_name": "Place 1", "after_id": f"{campaign}_l1"}
    cases: list[tuple[str, ReadStatement, dict[str, Any]]] = [
        ("session by id", records._session_by_id(True, True), {"campaign_id": campaign, "record_id": f"{campaign}_s1"}),
        ("sessions first", records._session_page(False, False, Shape.FIRST), page),
        ("sessions offset", records._session_page(True, False, Shape.OFFSET), {**page, "offset": 2}),
        ("sessions seek", records._session_page(False, False, Shape.SEEK), {**page, **session_seek}),
        ("sessions seek undated", records._session_page(False, False, Shape.SEEK_NULL), {**page, "after_id": ""}),
        ("location by id", records._entity_by_id(EntityKind.LOCATION, True, True),
         {"campaign_id": campaign, "record_id": f"{campaign}_l1"}),
        ("locations seek", records._entity_page(EntityKind.LOCATION, False, False, Shape.SEEK),
         {**page, **entity_seek, "after_sort": 1}),
        ("locations seek unordered", records._entity_page(EntityKind.LOCATION, True, False, Shape.SEEK_NULL),
         {**page, **entity_seek}),
        ("children", records._VISIBLE_CHILDREN,
         {"campaign_id": campaign, "ids": [f"{campaign}_l0", "absent"], "size": 100}),
        ("by ids", records._VISIBLE_LOCATIONS_BY_ID, {"campaign_id": campaign, "ids": [f"{campaign}_l2"]}),
    ]
    return cases


async def test_driver_rows_equal_sqlalchemy_rows_for_every_shape(database: Database, campaign_id: str) -> None:
    for name, statement, parameters in _statements(campaign_id):
        async with database.session() as session:
            expected = [tuple(row) for row in await fetch(session, statement, parameters)]
            expected_keys = list((await session.execute(statement.statement, parameters)).keys())
        reader = database.reader
        rows = await reader.fetch(statement, parameters)
        assert expected, name  # every case reads something, so equality means something
        assert [tuple(row) for row in rows] == expected, name
        assert list(rows[0]._fields) == expected_keys, name
        for row in rows:
            for value in row:
                if isinstance(value, datetime):
                    assert value.tzinfo is UTC, (name, value)


async def test_seek_rows_follow_the_list_order(database: Database, campaign_id: str) -> None:
    """The seek shape returns the rows after the key in list order, as the offset shape does."""
    page = {"campaign_id": campaign_id, "size": 100}
    reader = database.reader
    everything = await reader.fetch(records._session_page(False, False, Shape.FIRST), page)
    third = everything[2]
    after = await reader.fetch(
        records._session_page(False, False, Shape.SEEK if third.recording_date else Shape.SEEK_NULL),
        {**page, "after_date": third.recording_date, "after_id": third.id},
    )
    assert [row.id for row in after] == [row.id for row in everything[3:]]


@pytest.fixture(scope="module")
def postgres_url() -> Iterator[str]:
    """PostgreSQL only: SQLite has no server process to drop a connection."""
    with postgres_database() as url:
        yield url


async def test_a_connection_the_database_dropped_is_replaced_without_an_error(postgres_url: str) -> None:
    settings = Settings(_env_file=None, database_url=postgres_url, api_key_pepper=TEST_PEPPER)  # type: ignore[call-arg]
    database = Database(settings)
    try:
        reader = database.reader
        await reader.fetch(records._session_page(False, False, Shape.FIRST), {"campaign_id": "none", "size": 1})
        # The pooled connection's server process is ended, as a database restart would.
        url = make_url(settings.database_url).set(drivername="postgresql")
        with psycopg.connect(url.render_as_string(hide_password=False), autocommit=True) as admin:
            ended = admin.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            ).fetchone()
        assert ended is not None and ended[0] >= 1
        errors_before = database_errors()
        reader = database.reader
        first_page = records._session_page(False, False, Shape.FIRST)
        rows = await reader.fetch(first_page, {"campaign_id": "none", "size": 1})
        assert rows == []
        # The dropped connection's error was counted, then the read ran on a new one.
        assert database_errors() == errors_before + 1
    finally:
        await database.dispose()


async def test_an_unreachable_database_is_a_read_failure() -> None:
    settings = Settings(  # type: ignore[call-arg]
        _env_file=None,
        database_url="postgresql+psycopg://nobody@127.0.0.1:1/none",
        api_key_pepper=TEST_PEPPER,
        db_pool_timeout_s=1,
    )
    database = Database(settings)
    try:
        reader = database.reader
        with pytest.raises(ReadFailed):
            await reader.fetch(records._session_by_id(True, True), {"record_id": "s", "campaign_id": "c"})
        with pytest.raises(ReadFailed):
            await database.ping()
    finally:
        await database.dispose()


def test_each_statement_shape_is_built_once() -> None:
    assert records._entity_page(EntityKind.LOCATION, False, False, Shape.FIRST) is records._entity_page(
        EntityKind.LOCATION, False, False, Shape.FIRST
    )
    assert records._session_page(True, False, Shape.SEEK) is records._session_page(True, False, Shape.SEEK)

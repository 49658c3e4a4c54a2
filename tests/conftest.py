"""Shared fixtures: every database test body runs on SQLite and on PostgreSQL."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from engine.db import Database
from engine.settings import Settings
from tests.databases import BACKENDS, migrated_database

TEST_PEPPER = "test-pepper-0123456789-abcdefghijklmnop"


@pytest.fixture(scope="session", params=BACKENDS)
def database_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One migrated database per backend per test session (and per xdist worker)."""
    directory: Path = tmp_path_factory.mktemp("sqlite")
    with migrated_database(request.param, directory) as url:
        yield url


@pytest.fixture
def settings(database_url: str) -> Settings:
    return Settings(_env_file=None, database_url=database_url, api_key_pepper=TEST_PEPPER)  # type: ignore[call-arg]


@pytest.fixture
async def database(settings: Settings) -> AsyncIterator[Database]:
    database = Database(settings)
    yield database
    await database.dispose()


@pytest.fixture
async def db(database: Database) -> AsyncIterator[AsyncSession]:
    """A session inside a transaction that is rolled back after the test.

    Code under test may commit: with "create_savepoint" its commits become savepoints of
    the outer transaction, so nothing a test writes outlives it.
    """
    async with database.engine.connect() as connection:
        transaction = await connection.begin()
        session = AsyncSession(bind=connection, join_transaction_mode="create_savepoint", expire_on_commit=False)
        try:
            yield session
        finally:
            await session.close()
            await transaction.rollback()

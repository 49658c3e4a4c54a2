"""The hand-written migrations build exactly the tables the code declares.

Alembic's autogenerate comparison, run between a database migrated to head and the
metadata of engine/tables.py, reports no difference (tables, columns and their types,
nullability, server defaults, indexes, unique and foreign-key constraints).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import create_async_engine
from sqlmodel import SQLModel

import engine.tables  # noqa: F401  (registers the tables on SQLModel.metadata)
from tests.databases import BACKENDS, migrated_database

pytestmark = pytest.mark.xdist_group("migrations-match")


def _unquoted(default: str) -> str:
    return default.strip("()").strip("'")


def _server_defaults_differ(
    context: MigrationContext,
    inspected_column: Any,
    metadata_column: Any,
    inspected_default: str | None,
    metadata_default: Any,
    rendered_metadata_default: str | None,
) -> bool | None:
    """SQLite: compare the default texts themselves. Alembic's own comparison reads the
    empty string (`DEFAULT ''`) there as no default and reports a difference that is not
    one. None: Alembic's comparison decides."""
    if context.dialect.name != "sqlite" or inspected_default is None or rendered_metadata_default is None:
        return None
    return _unquoted(inspected_default) != _unquoted(rendered_metadata_default)


def _differences(connection: Connection) -> list[Any]:
    context = MigrationContext.configure(
        connection, opts={"compare_type": True, "compare_server_default": _server_defaults_differ}
    )
    return compare_metadata(context, SQLModel.metadata)


async def _compare(url: str) -> list[Any]:
    database = create_async_engine(url)
    try:
        async with database.connect() as connection:
            return await connection.run_sync(_differences)
    finally:
        await database.dispose()


@pytest.mark.parametrize("backend", BACKENDS)
def test_migrated_database_equals_the_declared_tables(backend: str, tmp_path: Path) -> None:
    with migrated_database(backend, tmp_path) as url:
        differences = asyncio.run(_compare(url))
    assert differences == []

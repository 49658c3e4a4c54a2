"""`INSERT ... ON CONFLICT (primary key) DO UPDATE` in the dialect of a session's database."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from sqlalchemy import Table
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.dml import Insert

_INSERTS: Mapping[str, Callable[[Table], Any]] = {"postgresql": postgresql.insert, "sqlite": sqlite.insert}

# Given the row that was refused (`excluded`), the new values of the stored row.
Updates = Callable[[Any], Mapping[str, Any]]


def upsert(db: AsyncSession, table: Table, *, updates: Updates | None = None) -> Insert:
    """Insert rows into `table`; a row whose primary key is taken updates the stored row
    instead: with `updates(excluded)` when given, else with every inserted column."""
    statement = _INSERTS[db.get_bind().dialect.name](table)
    excluded = statement.excluded
    values = (
        updates(excluded)
        if updates is not None
        else {column.name: excluded[column.name] for column in table.columns if not column.primary_key}
    )
    key = [column for column in table.columns if column.primary_key]
    return statement.on_conflict_do_update(index_elements=key, set_=values)  # type: ignore[no-any-return]

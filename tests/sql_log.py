"""What a request sends to its database, recorded at the driver (tests/perf, tests/security)."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from unittest.mock import patch

import aiosqlite
import httpx
import psycopg
from fastapi import FastAPI
from sqlalchemy import event

# Transaction control and per-connection set-up, should a driver send them as statements.
SQL_NOISE = ("PRAGMA", "BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE")


@dataclass(frozen=True, slots=True)
class SqlCount:
    selects: list[str]
    others: list[str]  # neither a SELECT nor noise: must stay empty for a read-only API
    checkouts: int  # connections the request path borrowed from its pool
    pings: int  # SQLAlchemy pool pre-ping round trips, which bypass the cursor events

    def shapes(self) -> list[str]:
        """What each SELECT reads, e.g. `api_keys`, `locations`, `locations by parent_id IN`."""
        return [_shape(statement) for statement in self.selects]


def _verb(statement: str) -> str:
    return statement.lstrip().split(None, 1)[0].upper()


def _shape(statement: str) -> str:
    table = re.search(r"\bFROM (\w+)", statement)
    assert table is not None, statement
    batch = re.search(r"\b\w+\.(\w+) IN \(", statement)
    return f"{table.group(1)} by {batch.group(1)} IN" if batch else table.group(1)


@dataclass(slots=True)
class _SqlLog:
    statements: list[str]
    checkouts: int = 0
    pings: int = 0


@contextmanager
def _logging_sql(app: FastAPI) -> Iterator[_SqlLog]:
    """Records what reaches the database: statements the request path hands its driver
    connection (engine/read_pool.py on PostgreSQL, engine/db.py on SQLite), statements
    SQLAlchemy's cursors send, connections the request path borrows, and pings.

    The PostgreSQL pool has no ping of its own: anything it sent on a connection would be
    a statement at the driver, counted here. On SQLite the request path borrows from the
    engine's pool, whose pre-pings (off) would be counted."""
    log = _SqlLog(statements=[])
    database = app.state.runtime.database
    engine = database.engine.sync_engine
    # What runs a statement at the driver: the pool's cursors, or aiosqlite's connection.
    driver_connection = psycopg.AsyncCursor if database.backend == "postgresql" else aiosqlite.Connection
    execute = driver_connection.execute
    lender = database.read_connections
    borrow = lender.borrow
    ping = engine.dialect.do_ping

    def recorded_execute(connection: Any, sql: str, *args: Any, **kwargs: Any) -> Any:
        log.statements.append(sql)
        return execute(connection, sql, *args, **kwargs)

    def record(_connection: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        log.statements.append(statement)

    async def counted_borrow() -> Any:
        log.checkouts += 1
        return await borrow()

    def counted_ping(dbapi_connection: Any) -> bool:
        log.pings += 1
        return bool(ping(dbapi_connection))

    with (
        patch.object(driver_connection, "execute", recorded_execute),
        patch.object(lender, "borrow", counted_borrow),
        patch.object(engine.dialect, "do_ping", counted_ping),
    ):
        event.listen(engine, "before_cursor_execute", record)
        try:
            yield log
        finally:
            event.remove(engine, "before_cursor_execute", record)


async def sql_of(app: FastAPI, request: Awaitable[httpx.Response]) -> tuple[httpx.Response, SqlCount]:
    """The response to `request` and the statements the app sent to its database for it."""
    with _logging_sql(app) as log:
        response = await request
    selects = [statement for statement in log.statements if _verb(statement) == "SELECT"]
    others = [statement for statement in log.statements if _verb(statement) not in ("SELECT", *SQL_NOISE)]
    return response, SqlCount(selects=selects, others=others, checkouts=log.checkouts, pings=log.pings)

"""A read connection's session, straight to PostgreSQL and through a real PgBouncer in
transaction mode (engine/pg_sessions.py).

Straight: the statement timeout and UTC are set for the session, psycopg prepares as
usual. Through PgBouncer: nothing is set on the shared server connections, statements are
unnamed, the pool bounds each statement itself. Several pools sharing PgBouncer's server
connections (as several workers do) then always get their own statements' rows.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import Any

import psycopg
import pytest
from sqlalchemy.engine import make_url

from engine.db import Database
from engine.pg_sessions import set_up_session
from engine.read_pool import ReadPool
from engine.settings import Settings
from tests.cluster.loopback import Subnet
from tests.cluster.pgbouncer import PgBouncer, running_pgbouncer
from tests.conftest import TEST_PEPPER
from tests.databases import postgres_database

TIMEOUT_MS = 1234
# Statements of different shapes, each checked against the rows it must give.
SHAPES = (
    ("SELECT %s::int * 2", lambda n: [(n * 2,)]),
    ("SELECT %s::text || '-text'", lambda n: [(f"{n}-text",)]),
    ("SELECT 'pair'::text, %s::int", lambda n: [("pair", n)]),
)


@pytest.fixture(scope="module")
def database_url() -> Iterator[str]:
    with postgres_database() as url:
        yield url


@pytest.fixture(scope="module")
def pgbouncer(database_url: str) -> Iterator[PgBouncer]:
    # Two server connections for every client: each client's next statement may run on
    # a server connection another client used last.
    with running_pgbouncer(address=Subnet.pick().pooler, server_url=database_url, pool_size=2) as bouncer:
        yield bouncer


def _conninfo(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


@pytest.fixture
async def connect() -> AsyncIterator[Any]:
    opened: list[psycopg.AsyncConnection[Any]] = []

    async def open_connection(url: str) -> psycopg.AsyncConnection[Any]:
        connection = await psycopg.AsyncConnection.connect(_conninfo(url), autocommit=True)
        opened.append(connection)
        return connection

    yield open_connection
    for connection in opened:
        await connection.close()


async def _settings_seen(connection: psycopg.AsyncConnection[Any]) -> tuple[str, str]:
    cursor = await connection.execute("SELECT current_setting('statement_timeout'), current_setting('TimeZone')")
    row = await cursor.fetchone()
    assert row is not None
    return row[0], row[1]


async def test_a_direct_connection_gets_its_own_session_settings(database_url: str, connect: Any) -> None:
    connection = await connect(database_url)
    threshold = connection.prepare_threshold
    opened = await set_up_session(connection, statement_timeout_ms=TIMEOUT_MS)
    assert opened.connection is connection
    assert opened.statement_deadline_s is None
    assert await _settings_seen(connection) == (f"{TIMEOUT_MS}ms", "UTC")
    assert connection.prepare_threshold == threshold is not None


async def test_through_pgbouncer_nothing_is_set_on_the_shared_server_connections(
    pgbouncer: PgBouncer, database_url: str, connect: Any
) -> None:
    through = pgbouncer.url_for(database_url)
    defaults = await _settings_seen(await connect(through))
    connection = await connect(through)
    opened = await set_up_session(connection, statement_timeout_ms=TIMEOUT_MS)
    assert opened.statement_deadline_s == TIMEOUT_MS / 1000
    assert connection.prepare_threshold is None
    # Whichever server connection each statement meets, it has the server's own settings.
    for _ in range(4):
        assert await _settings_seen(await connect(through)) == defaults
        assert await _settings_seen(connection) == defaults
    assert defaults[0] != f"{TIMEOUT_MS}ms"


def _settings(url: str) -> Settings:
    return Settings(_env_file=None, database_url=url, api_key_pepper=TEST_PEPPER, db_pool_size=4)  # type: ignore[call-arg]


async def test_pools_sharing_pgbouncer_always_get_their_own_statements_rows(
    pgbouncer: PgBouncer, database_url: str
) -> None:
    """Each connection runs each shape far more often than psycopg's prepare threshold:
    prepared statements would now live on server connections the other pools use too."""
    databases = [Database(_settings(pgbouncer.url_for(database_url))) for _ in range(3)]
    try:
        pools = [database.read_connections for database in databases]
        assert all(isinstance(pool, ReadPool) for pool in pools)

        async def check(pool: Any, shape: int, n: int) -> None:
            sql, expected = SHAPES[shape]
            assert await pool.rows(sql, (n,)) == expected(n), (sql, n)

        for _ in range(3):
            await asyncio.gather(
                *(check(pool, n % len(SHAPES), n) for pool in pools for n in range(120))
            )
    finally:
        for database in databases:
            await database.dispose()

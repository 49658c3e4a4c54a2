"""Async database access: a reader per request, sessions for the CLI.

PostgreSQL goes through psycopg 3, the embedded default SQLite through aiosqlite. The
request boundary opens what it needs and passes it down; engine functions never open
their own: REST and GraphQL requests read through `Database.reader` (prepared Core
selects on a pooled driver connection per statement, no ORM unit of work), CLI commands
write through `Database.session()` (committed on success, rolled back on error).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import psycopg
from sqlalchemy import event, literal, select
from sqlalchemy.engine import Dialect, make_url
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine
from sqlalchemy.pool import PoolProxiedConnection
from sqlalchemy.util import greenlet_spawn

from engine.metrics import DATABASE_ERRORS
from engine.pg_sessions import set_up_session
from engine.read_pool import Opened, ReadFailed, ReadPool
from engine.settings import Settings
from engine.statements import ReadStatement

_PING = ReadStatement(select(literal(1).label("up")))


class RequestReader:
    """A request's reads, each on a connection lent for that statement alone.

    A request the guard turns away, or whose key is verified from the cache, takes no
    connection before its query; an unreachable database or an exhausted pool fails that
    statement, where the read paths turn it into their documented errors (503 while the
    key cannot be verified, the endpoint's 500 with the key's rate headers after), rather
    than the start of the request, before authentication.

    A connection goes back to the pool as soon as its rows are read, not when the request
    ends: while the request executes its GraphQL document and sends its response, the
    connection serves another. On PostgreSQL, statements waiting for one take turns in
    arrival order (engine/read_pool.py): in SQLAlchemy's pool, which waits on an asyncio
    queue, a newcomer could take a returned connection before a statement that had been
    waiting, so under load a few requests waited over a second (p99 1.2 s at 64
    connections, against 0.1 s with no waiting).

    Statements go to the driver connection directly (see engine/statements.py).
    """

    def __init__(self, dialect: Dialect, connections: ReadPool | SqliteReads) -> None:
        self._dialect = dialect
        self._connections = connections

    async def fetch(self, statement: ReadStatement, parameters: Mapping[str, Any] | None = None) -> list[Any]:
        compiled = statement.compiled(self._dialect)
        sql, arguments = compiled.bind(parameters)
        return compiled.rows(await self._connections.rows(sql, arguments))


class SqliteReads:
    """The embedded default's reads: a connection from the engine's own pool (SQLAlchemy's
    default for SQLite files) per statement, its aiosqlite connection running the statement.
    As on PostgreSQL, a connection found dropped is discarded and the statement runs once
    more, without a ping before each."""

    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine
        self._dialect = engine.dialect

    async def rows(self, sql: str, arguments: Any) -> list[Any]:
        """The raw rows of one statement; ReadFailed when the database cannot answer."""
        for attempt in range(2):
            pooled = await self.borrow()
            try:
                # A pooled connection checked out is never detached from its driver connection.
                async with pooled.driver_connection.execute(sql, arguments) as cursor:  # type: ignore[union-attr]
                    raw_rows = list(await cursor.fetchall())
            except self._dialect.loaded_dbapi.Error as exc:
                DATABASE_ERRORS.inc()
                disconnected = self._dialect.is_disconnect(exc, pooled.dbapi_connection, None)
                if disconnected:
                    await greenlet_spawn(pooled.invalidate, exc)
                else:
                    await greenlet_spawn(pooled.close)
                if disconnected and attempt == 0:
                    continue
                raise ReadFailed(str(type(exc).__name__)) from exc
            except BaseException as exc:
                # Cancelled mid-statement (the client went away): the connection may still
                # be busy with it, so it is closed rather than lent again.
                await asyncio.shield(greenlet_spawn(pooled.invalidate, exc))
                raise
            await greenlet_spawn(pooled.close)
            return raw_rows
        raise AssertionError("unreachable: the second attempt returns or raises")

    async def borrow(self) -> PoolProxiedConnection:
        try:
            return await self._engine.raw_connection()
        except self._dialect.loaded_dbapi.Error as exc:  # the file cannot be opened
            DATABASE_ERRORS.inc()
            raise ReadFailed(str(type(exc).__name__)) from exc
        except SQLAlchemyError as exc:  # the pool stayed exhausted for pool_timeout
            raise ReadFailed(str(type(exc).__name__)) from exc


# What the read paths take: the request's reader, or a session where one is already
# open (the CLI, tests), which runs the same statements through SQLAlchemy.
Reader = RequestReader | AsyncConnection | AsyncSession


async def fetch(db: Reader, statement: ReadStatement, parameters: Mapping[str, Any] | None = None) -> list[Any]:
    """The rows of `statement`; ReadFailed when the database cannot answer."""
    if isinstance(db, RequestReader):
        return await db.fetch(statement, parameters)
    try:
        return list((await db.execute(statement.statement, parameters)).all())
    except SQLAlchemyError as exc:
        raise ReadFailed(str(type(exc).__name__)) from exc


def _enable_sqlite_foreign_keys(dbapi_connection: Any, _record: Any) -> None:
    # SQLite ignores foreign keys unless every connection asks for them.
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def _connect_args(settings: Settings) -> dict[str, Any]:
    """What every PostgreSQL connection is opened with, on top of the URL's own arguments.

    Nothing in the startup packet beyond the URL's: a transaction pooler (PgBouncer) refuses
    an `options` parameter. The request path's connections set their session up once open
    (engine/pg_sessions.py); the CLI's sessions need neither the request path's timeout nor
    UTC (the column type converts timestamps)."""
    return {"connect_timeout": max(1, int(settings.db_pool_timeout_s))}


def create_engine(settings: Settings) -> AsyncEngine:
    """The engine of the CLI's sessions (and of the request path's reads on SQLite)."""
    url = make_url(settings.database_url)
    if url.get_backend_name() == "sqlite":
        engine = create_async_engine(url)
        event.listen(engine.sync_engine, "connect", _enable_sqlite_foreign_keys)
        return engine
    return create_async_engine(
        url,
        pool_size=settings.db_pool_size,
        max_overflow=0,
        pool_timeout=settings.db_pool_timeout_s,
        # Unnamed statements only: a statement psycopg prepared on one server connection of
        # a transaction pooler could be missing, or another one, on the next. The CLI's
        # statements are few and large (an import sends batches), so planning each costs
        # nothing that shows.
        connect_args={**_connect_args(settings), "prepare_threshold": None},
        # The CLI's sessions may find a connection dropped since its last use.
        pool_pre_ping=True,
    )


def _read_pool(settings: Settings, dialect: Dialect) -> ReadPool:
    """The request path's PostgreSQL pool. Its connections are opened as the engine's would
    be: the arguments SQLAlchemy's dialect derives from the URL (host, port, password,
    query options such as sslmode; the adapters context), then ours. They are in
    autocommit: each SELECT stands alone, so no BEGIN before it and no ROLLBACK after it."""
    positional, keywords = dialect.create_connect_args(make_url(settings.database_url))
    keywords.update(_connect_args(settings), autocommit=True)

    async def connect() -> Opened:
        connection = await psycopg.AsyncConnection.connect(*positional, **keywords)
        try:
            return await set_up_session(connection, statement_timeout_ms=settings.statement_timeout_ms)
        except BaseException:
            await connection.close()
            raise

    return ReadPool(
        connect, settings.db_pool_size, settings.db_pool_timeout_s, max_lifetime_s=settings.db_pool_max_lifetime_s
    )


class Database:
    """The process's connections: sessions for the CLI, a reader per request.

    Every pool opens connections only when first used, so a server process holds read
    connections only, and a CLI command session connections only.
    """

    def __init__(self, settings: Settings) -> None:
        self.engine = create_engine(settings)
        # What lends the request path's connections. SQLite: the embedded default, one
        # file, one worker; the engine's pool (an in-memory database must stay one
        # engine's, and sqlite3 opens no transaction for a SELECT).
        self.read_connections: ReadPool | SqliteReads = (
            SqliteReads(self.engine)
            if self.engine.dialect.name == "sqlite"
            else _read_pool(settings, self.engine.dialect)
        )
        self._sessions = async_sessionmaker(self.engine, expire_on_commit=False)
        # Requests' reads; it holds no state of its own, each statement borrows a connection.
        self.reader = RequestReader(self.engine.dialect, self.read_connections)

    @property
    def backend(self) -> str:
        return self.engine.dialect.name

    @asynccontextmanager
    async def session(self) -> AsyncIterator[AsyncSession]:
        """A session for one request or command: committed on success, rolled back on error."""
        async with self._sessions() as session:
            try:
                yield session
                await session.commit()
            except BaseException:
                await session.rollback()
                raise

    async def ping(self) -> None:
        """ReadFailed unless the database answers a statement on the request path's pool."""
        await self.reader.fetch(_PING)

    async def dispose(self) -> None:
        if isinstance(self.read_connections, ReadPool):
            await self.read_connections.dispose()
        await self.engine.dispose()

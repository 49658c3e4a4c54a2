"""Async database access: the process's engines, a reader per request, sessions for the CLI.

PostgreSQL goes through psycopg 3, the embedded default SQLite through aiosqlite. The
request boundary opens what it needs and passes it down; engine functions never open
their own: REST and GraphQL requests read through `Database.reader()` (prepared Core
selects on a pooled driver connection per statement, no ORM unit of work), CLI commands
write through `Database.session()` (committed on success, rolled back on error).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager, nullcontext
from typing import Any

from sqlalchemy import event, literal, select
from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine
from sqlalchemy.pool import PoolProxiedConnection
from sqlalchemy.util import greenlet_spawn

from engine.metrics import DATABASE_ERRORS
from engine.settings import Settings
from engine.statements import ReadStatement

_PING = ReadStatement(select(literal(1).label("up")))


class ReadFailed(Exception):
    """A read could not be completed: no connection, a driver error, a statement timeout."""


async def _psycopg_rows(connection: Any, sql: str, arguments: Any) -> list[Any]:
    cursor = await connection.execute(sql, arguments)
    return await cursor.fetchall()


async def _aiosqlite_rows(connection: Any, sql: str, arguments: Any) -> list[Any]:
    async with connection.execute(sql, arguments) as cursor:
        return list(await cursor.fetchall())


_DRIVER_ROWS = {"postgresql": _psycopg_rows, "sqlite": _aiosqlite_rows}


class Turns:
    """First come, first served access to a pool of `size` connections, waiting at most
    `timeout_s` (then the read fails, as an exhausted pool's would)."""

    def __init__(self, size: int, timeout_s: float) -> None:
        self._free = asyncio.Semaphore(size)  # hands a released turn to the longest waiter
        self._timeout_s = timeout_s

    @asynccontextmanager
    async def turn(self) -> AsyncIterator[None]:
        try:
            async with asyncio.timeout(self._timeout_s):
                await self._free.acquire()
        except TimeoutError as exc:
            raise ReadFailed("no pooled connection within the pool timeout") from exc
        try:
            yield
        finally:
            self._free.release()


class RequestReader:
    """A request's reads, each on a connection lent by the pool for that statement alone.

    A request the guard turns away, or whose key is verified from the cache, takes no
    connection before its query; an unreachable database or an exhausted pool fails that
    statement, where the read paths turn it into their documented errors (503 while the
    key cannot be verified, the endpoint's 500 with the key's rate headers after), rather
    than the start of the request, before authentication.

    A connection goes back to the pool as soon as its rows are read, not when the request
    ends: while the request executes its GraphQL document and sends its response, the
    connection serves another. When more statements are ready than the pool has
    connections, they take turns in arrival order at a gate in front of the pool (`turns`):
    the pool's own wait is an asyncio queue, where a newcomer can take a returned
    connection before a statement that has been waiting, so under load a few requests
    waited over a second (p99 1.2 s at 64 connections, against 0.1 s with no waiting).

    Statements go to the driver directly (see engine/statements.py). The pool does not
    ping a connection before lending it (a round trip per statement); instead a read that
    finds its connection dropped (the database restarted since) discards it and runs once
    more on a new one: reads are idempotent, so clients see no error for a stale pool.
    """

    def __init__(self, engine: AsyncEngine, turns: Turns | None) -> None:
        self._engine = engine
        self._dialect = engine.dialect
        self._driver_rows = _DRIVER_ROWS[engine.dialect.name]
        self._turns = turns

    async def fetch(self, statement: ReadStatement, parameters: Mapping[str, Any] | None = None) -> list[Any]:
        compiled = statement.compiled(self._dialect)
        sql, arguments = compiled.bind(parameters)
        async with self._turns.turn() if self._turns is not None else nullcontext():
            return compiled.rows(await self._run(sql, arguments))

    async def _run(self, sql: str, arguments: Any) -> list[Any]:
        for attempt in range(2):
            pooled = await self._borrow()
            try:
                raw_rows = await self._driver_rows(pooled.driver_connection, sql, arguments)
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

    async def _borrow(self) -> PoolProxiedConnection:
        try:
            return await self._engine.raw_connection()
        except self._dialect.loaded_dbapi.Error as exc:  # refused, timed out, auth
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


def create_engine(settings: Settings, *, reads: bool = False) -> AsyncEngine:
    """The engine of the CLI's sessions, or with `reads`, of the request path's reads.

    The read engine's PostgreSQL connections are in autocommit: each SELECT stands alone,
    so no BEGIN before it and no ROLLBACK when the connection returns to the pool. SQLite
    needs no second engine (sqlite3 opens no transaction for a SELECT), and an in-memory
    database must stay one engine's.
    """
    url = make_url(settings.database_url)
    if url.get_backend_name() == "sqlite":
        engine = create_async_engine(url)
        event.listen(engine.sync_engine, "connect", _enable_sqlite_foreign_keys)
        return engine
    options: dict[str, Any] = (
        {"isolation_level": "AUTOCOMMIT", "pool_reset_on_return": None}
        if reads
        # The CLI's sessions may find a connection dropped since its last use.
        else {"pool_pre_ping": True}
    )
    return create_async_engine(
        url,
        pool_size=settings.db_pool_size,
        max_overflow=0,
        # An exhausted pool waits this long, then the read fails with the 500 body.
        pool_timeout=settings.db_pool_timeout_s,
        connect_args={
            # UTC sessions: timestamps arrive as datetime.UTC-aware values, which the
            # column type then passes through without converting each one.
            "options": f"-c statement_timeout={settings.statement_timeout_ms} -c TimeZone=UTC",
            "connect_timeout": max(1, int(settings.db_pool_timeout_s)),
        },
        **options,
    )


class Database:
    """The process's engines: sessions for the CLI, a reader per request.

    Each engine's pool opens connections only when first used, so a server process holds
    read connections only, and a CLI command session connections only.
    """

    def __init__(self, settings: Settings) -> None:
        self.engine = create_engine(settings)
        if self.engine.dialect.name == "sqlite":
            # The embedded default: one file, one worker; its pool (SQLAlchemy's default
            # for SQLite files) is left to itself.
            self.read_engine, self._turns = self.engine, None
        else:
            self.read_engine = create_engine(settings, reads=True)
            self._turns = Turns(settings.db_pool_size, settings.db_pool_timeout_s)
        self._sessions = async_sessionmaker(self.engine, expire_on_commit=False)

    @property
    def backend(self) -> str:
        return self.engine.dialect.name

    @property
    def engines(self) -> tuple[AsyncEngine, ...]:
        return (self.engine,) if self.read_engine is self.engine else (self.engine, self.read_engine)

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

    @asynccontextmanager
    async def reader(self) -> AsyncIterator[RequestReader]:
        """The reads of one request (each statement borrows a pooled connection)."""
        yield RequestReader(self.read_engine, self._turns)

    async def ping(self) -> None:
        """ReadFailed unless the database answers a statement on the request path's pool."""
        async with self.reader() as connection:
            await connection.fetch(_PING)

    async def dispose(self) -> None:
        for engine in self.engines:
            await engine.dispose()

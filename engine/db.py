"""Async database access: one engine per process, one connection or session per request.

PostgreSQL goes through psycopg 3, the embedded default SQLite through aiosqlite. The
request boundary opens what it needs and passes it down; engine functions never open
their own: REST and GraphQL requests read through `Database.reader()` (a connection:
Core selects of the needed columns, no ORM unit of work), CLI commands write through
`Database.session()` (committed on success, rolled back on error).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from sqlalchemy import CursorResult, Executable, event, text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine

from engine.settings import Settings


class RequestConnection:
    """A request's bare connection, taken from the pool at its first statement.

    A request the guard turns away, or whose key is verified from the cache, holds no
    connection before its query; an unreachable database or an exhausted pool fails that
    statement, where the read paths turn it into their documented errors (503 while the
    key cannot be verified, the endpoint's 500 with the key's rate headers after), rather
    than the start of the request, before authentication.
    """

    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine
        self._connection: AsyncConnection | None = None

    async def execute(self, statement: Executable, parameters: Any = None) -> CursorResult[Any]:
        if self._connection is None:
            connection = await self._engine.connect()
            # Reads only: each statement stands alone, so no BEGIN before it and no
            # ROLLBACK when the connection returns to the pool (two round trips saved).
            self._connection = await connection.execution_options(isolation_level="AUTOCOMMIT")
        return await self._connection.execute(statement, parameters)

    async def close(self) -> None:
        if self._connection is not None:
            await self._connection.close()
            self._connection = None


# What the read paths take: a bare connection on the request path (Core selects need no
# ORM session), or a session where one is already open (the CLI, tests).
Reader = RequestConnection | AsyncConnection | AsyncSession


def _enable_sqlite_foreign_keys(dbapi_connection: Any, _record: Any) -> None:
    # SQLite ignores foreign keys unless every connection asks for them.
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def create_engine(settings: Settings) -> AsyncEngine:
    url = make_url(settings.database_url)
    if url.get_backend_name() == "sqlite":
        engine = create_async_engine(url)
        event.listen(engine.sync_engine, "connect", _enable_sqlite_foreign_keys)
        return engine
    return create_async_engine(
        url,
        pool_size=settings.db_pool_size,
        max_overflow=0,
        # An exhausted pool waits this long, then the read fails with the 500 body.
        pool_timeout=settings.db_pool_timeout_s,
        pool_pre_ping=True,
        connect_args={
            "options": f"-c statement_timeout={settings.statement_timeout_ms}",
            "connect_timeout": max(1, int(settings.db_pool_timeout_s)),
        },
    )


class Database:
    """The process's engine and session factory."""

    def __init__(self, settings: Settings) -> None:
        self.engine = create_engine(settings)
        self._sessions = async_sessionmaker(self.engine, expire_on_commit=False)

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

    @asynccontextmanager
    async def reader(self) -> AsyncIterator[RequestConnection]:
        """A connection for one request's reads; its transaction ends with the request."""
        connection = RequestConnection(self.engine)
        try:
            yield connection
        finally:
            await connection.close()

    async def ping(self) -> None:
        async with self.engine.connect() as connection:
            await connection.execute(text("SELECT 1"))

    async def dispose(self) -> None:
        await self.engine.dispose()

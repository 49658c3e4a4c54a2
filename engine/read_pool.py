"""The request path's PostgreSQL connections: a small pool of psycopg connections, no SQLAlchemy.

Borrowing a connection from SQLAlchemy's pool for each statement (checkout, checkin and the
greenlet hops around them) cost about 4-5 % of a worker's CPU per request. This pool is a
list of idle connections behind `Turns`, which already decides who may hold a connection:
at most `size` statements hold a turn, each holds at most one connection, so no more than
`size` connections are ever open, and one is opened only when a turn finds none idle.

psycopg_pool's AsyncConnectionPool is not used: when the server refuses connections, its
`getconn` waits for the whole pool timeout while background workers retry, and a read must
fail at once then (the documented 500 and 503 within seconds of an outage).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import psycopg
from psycopg.pq import TransactionStatus

from engine.metrics import DATABASE_ERRORS


class ReadFailed(Exception):
    """A read could not be completed: no connection, a driver error, a statement timeout."""


class Turns:
    """First come, first served access to a pool of `size` connections, waiting at most
    `timeout_s` (then the read fails, as an exhausted pool's would)."""

    def __init__(self, size: int, timeout_s: float) -> None:
        self._free = asyncio.Semaphore(size)  # hands a released turn to the longest waiter
        self._timeout_s = timeout_s

    @asynccontextmanager
    async def turn(self) -> AsyncIterator[None]:
        free = self._free
        # `locked()` is true while anyone waits too, even one already handed a released
        # turn, so taking a free turn at once keeps arrival order. It needs no timer: an
        # asyncio.timeout costs several µs a statement.
        if free.locked():
            try:
                async with asyncio.timeout(self._timeout_s):
                    await free.acquire()
            except TimeoutError as exc:
                raise ReadFailed("no pooled connection within the pool timeout") from exc
        else:
            await free.acquire()  # returns without suspending
        try:
            yield
        finally:
            free.release()


Connect = Callable[[], Awaitable[psycopg.AsyncConnection[Any]]]


class ReadPool:
    """At most `size` autocommit connections, opened by `connect` when first needed, lent
    for one statement at a time in arrival order (waiting at most `timeout_s`).

    No connection is pinged before it is lent (a round trip per statement). A statement
    whose connection turns out closed or broken (the database restarted since) discards it
    and runs once more on a new one: reads are idempotent, so clients see no error for a
    stale pool. After any other driver error the connection goes back only if it is idle
    and usable; a statement cancelled midway (the client went away) closes its connection,
    which may still be busy with it.
    """

    def __init__(self, connect: Connect, size: int, timeout_s: float) -> None:
        self._connect = connect
        self._turns = Turns(size, timeout_s)
        # Idle connections, each as the one cursor all its statements run on (a new cursor per
        # statement also meant a new adaptation context, its dumpers and loaders looked up
        # again: about 14 µs of CPU per statement). Most recently returned last.
        self._idle: list[psycopg.AsyncCursor[Any]] = []
        # Bumped by dispose(): a connection lent before then is closed when it comes back.
        self._generation = 0

    async def rows(self, sql: str, arguments: Any) -> list[Any]:
        """The raw rows of one statement; ReadFailed when the database cannot answer."""
        async with self._turns.turn():
            for attempt in range(2):
                generation = self._generation
                cursor = await self.borrow()
                connection = cursor.connection
                try:
                    await cursor.execute(sql, arguments)
                    rows = await cursor.fetchall()
                except psycopg.Error as exc:
                    DATABASE_ERRORS.inc()
                    disconnected = connection.closed  # a broken connection is closed too
                    if disconnected or connection.info.transaction_status != TransactionStatus.IDLE:
                        await connection.close()
                    else:
                        await self._give_back(cursor, generation)
                    if disconnected and attempt == 0:
                        continue
                    raise ReadFailed(type(exc).__name__) from exc
                except BaseException:
                    # Cancelled mid-statement: the connection may still be busy with it.
                    await asyncio.shield(connection.close())
                    raise
                await self._give_back(cursor, generation)
                return rows
        raise AssertionError("unreachable: the second attempt returns or raises")

    async def borrow(self) -> psycopg.AsyncCursor[Any]:
        """The cursor of the most recently returned idle connection, else of a new one (the
        caller holds a turn)."""
        if self._idle:
            return self._idle.pop()
        try:
            connection = await self._connect()
        except psycopg.Error as exc:  # refused, timed out, authentication failed
            DATABASE_ERRORS.inc()
            raise ReadFailed(type(exc).__name__) from exc
        return connection.cursor()

    async def _give_back(self, cursor: psycopg.AsyncCursor[Any], generation: int) -> None:
        if generation == self._generation:
            self._idle.append(cursor)
        else:
            await cursor.connection.close()

    async def dispose(self) -> None:
        """Close the idle connections, and each lent one when it comes back."""
        self._generation += 1
        idle, self._idle = self._idle, []
        for cursor in idle:
            await cursor.connection.close()

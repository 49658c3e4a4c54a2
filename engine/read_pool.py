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
import math
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
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


@dataclass(frozen=True, slots=True)
class Opened:
    """A new connection, ready for reads (engine/pg_sessions.py sets it up)."""

    connection: psycopg.AsyncConnection[Any]
    # Set when the server's statement timeout could not be set for the session (a
    # transaction pooler in between): the pool bounds each statement itself.
    statement_deadline_s: float | None = None


Connect = Callable[[], Awaitable[Opened]]


@dataclass(slots=True)
class Lent:
    """A pooled connection, as the one cursor all its statements run on (a new cursor per
    statement also meant a new adaptation context, its dumpers and loaders looked up
    again: about 14 µs of CPU per statement)."""

    cursor: psycopg.AsyncCursor[Any]
    statement_deadline_s: float | None
    # The pool's generation when it was opened: a dropped connection ends its generation.
    generation: int
    # Monotonic time after which it is closed when it comes back rather than lent again.
    retire_at: float


class ReadPool:
    """At most `size` autocommit connections, opened by `connect` when first needed, lent
    for one statement at a time in arrival order (waiting at most `timeout_s`), each kept
    for about `max_lifetime_s` at most (0: until it fails).

    No connection is pinged before it is lent (a round trip per statement). A statement
    whose connection turns out closed or broken (the database restarted, or failed over,
    since) runs once more on a new connection: reads are idempotent, so clients see no
    error for a stale pool. The idle connections opened before that one went with it (a
    restart ends every session), so they are closed too rather than tried one by one, and
    any lent then is closed when it comes back. After any other driver error the
    connection goes back only if it is idle and usable; a statement cancelled midway (the
    client went away) closes its connection, which may still be busy with it.
    """

    def __init__(self, connect: Connect, size: int, timeout_s: float, *, max_lifetime_s: float = 0) -> None:
        self._connect = connect
        self._turns = Turns(size, timeout_s)
        self._max_lifetime_s = max_lifetime_s
        self._idle: list[Lent] = []  # most recently returned last
        # Bumped when a connection is found dropped, and by dispose().
        self._generation = 0

    async def rows(self, sql: str, arguments: Any) -> list[Any]:
        """The raw rows of one statement; ReadFailed when the database cannot answer."""
        async with self._turns.turn():
            lent = await self.borrow()
            for attempt in range(2):
                try:
                    return await self._run(lent, sql, arguments)
                except _Dropped:
                    await self._end_generation(lent.generation)
                    if attempt:
                        raise
                lent = await self._open()  # not an idle one: those went with the dropped one
        raise AssertionError("unreachable: the second attempt returns or raises")

    async def _run(self, lent: Lent, sql: str, arguments: Any) -> list[Any]:
        cursor = lent.cursor
        connection = cursor.connection
        try:
            if lent.statement_deadline_s is None:
                rows = await _fetch(cursor, sql, arguments)
            else:
                async with asyncio.timeout(lent.statement_deadline_s):
                    rows = await _fetch(cursor, sql, arguments)
        except (psycopg.Error, TimeoutError) as exc:
            # TimeoutError: past the deadline, psycopg has cancelled the statement on the
            # server (as on any interruption) and read its end: the connection is idle.
            DATABASE_ERRORS.inc()
            dropped = connection.closed  # a broken connection is closed too
            if dropped or connection.info.transaction_status != TransactionStatus.IDLE:
                await connection.close()
            else:
                await self._give_back(lent)
            failure = "QueryCanceled" if isinstance(exc, TimeoutError) else type(exc).__name__
            raise (_Dropped if dropped else ReadFailed)(failure) from exc
        except BaseException:
            # Cancelled mid-statement: the connection may still be busy with it.
            await asyncio.shield(connection.close())
            raise
        await self._give_back(lent)
        return rows

    async def borrow(self) -> Lent:
        """The most recently returned idle connection, else a new one (the caller holds a
        turn)."""
        if self._idle:
            return self._idle.pop()
        return await self._open()

    async def _open(self) -> Lent:
        try:
            opened = await self._connect()
        except psycopg.Error as exc:  # refused, timed out, authentication failed
            DATABASE_ERRORS.inc()
            raise ReadFailed(type(exc).__name__) from exc
        lifetime = self._max_lifetime_s
        # Up to a tenth sooner, at random: connections opened together are not all
        # replaced in the same moment.
        jitter = random.random() / 10  # noqa: S311 (spreads replacements; not a secret)
        retire_at = time.monotonic() + lifetime * (1 - jitter) if lifetime else math.inf
        return Lent(opened.connection.cursor(), opened.statement_deadline_s, self._generation, retire_at)

    async def _give_back(self, lent: Lent) -> None:
        if lent.generation == self._generation and time.monotonic() < lent.retire_at:
            self._idle.append(lent)
        else:
            await lent.cursor.connection.close()

    async def _end_generation(self, generation: int) -> None:
        """A connection of `generation` was found dropped: close every idle connection of
        it (once: a later generation has begun when another statement got there first)."""
        if generation == self._generation:
            await self.dispose()

    async def dispose(self) -> None:
        """Close the idle connections, and each lent one when it comes back."""
        self._generation += 1
        idle, self._idle = self._idle, []
        for lent in idle:
            await lent.cursor.connection.close()


class _Dropped(ReadFailed):
    """The statement's connection was closed under it: the server went away."""


async def _fetch(cursor: psycopg.AsyncCursor[Any], sql: str, arguments: Any) -> list[Any]:
    await cursor.execute(sql, arguments)
    return await cursor.fetchall()

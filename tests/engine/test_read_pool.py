"""The request path's PostgreSQL pool (engine/read_pool.py) on the real server.

Connections are opened on demand and reused, never more than the pool's size, lent in
arrival order; a dropped one is replaced within the statement, a cancelled statement's
is closed, one left unusable by an error is not lent again, and dispose() closes them.
The pool's connections are opened here by a `connect` that records each one, so a test
sees which connection served a statement and whether it was closed.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any

import psycopg
import pytest
from sqlalchemy.engine import make_url

from engine.db import Database
from engine.read_pool import Opened, ReadFailed, ReadPool, Turns
from engine.settings import Settings
from tests.conftest import TEST_PEPPER
from tests.databases import postgres_database
from tests.metrics import database_errors

BACKEND_PID = "SELECT pg_backend_pid()"


@pytest.fixture(scope="module")
def database_url() -> Iterator[str]:
    with postgres_database() as url:
        yield url


@pytest.fixture(scope="module")
def conninfo(database_url: str) -> str:
    return make_url(database_url).set(drivername="postgresql").render_as_string(hide_password=False)


async def _terminate(conninfo: str, pid: int) -> None:
    """End a server process as a database restart would, and wait until it is gone."""
    async with await psycopg.AsyncConnection.connect(conninfo, autocommit=True) as admin:
        await admin.execute("SELECT pg_terminate_backend(%s, 5000)", (pid,))


async def _nothing(_pid: int) -> None:
    return None


@dataclass(frozen=True, slots=True)
class PoolOptions:
    size: int = 2
    timeout_s: float = 5.0
    max_lifetime_s: float = 0
    server_options: str = ""  # the startup packet's `options`: settings of the server session
    statement_deadline_s: float | None = None  # the pool's own bound, as through a pooler
    opened_hook: Callable[[int], Awaitable[None]] = _nothing


class Pool:
    """A ReadPool whose connections the test sees: `opened` (and their server processes,
    `pids`), in the order opened."""

    def __init__(self, conninfo: str, *, options: PoolOptions) -> None:
        self._conninfo = conninfo
        self._options = options
        self.opened: list[psycopg.AsyncConnection[Any]] = []
        self.pids: list[int] = []
        self.reads = ReadPool(
            self._connect, options.size, options.timeout_s, max_lifetime_s=options.max_lifetime_s
        )

    async def _connect(self) -> Opened:
        connection = await psycopg.AsyncConnection.connect(
            self._conninfo, autocommit=True, options=self._options.server_options
        )
        self.opened.append(connection)
        self.pids.append(connection.info.backend_pid)
        await self._options.opened_hook(connection.info.backend_pid)
        return Opened(connection, statement_deadline_s=self._options.statement_deadline_s)

    async def pid(self) -> int:
        """The server process of the connection that ran a statement."""
        ((pid,),) = await self.reads.rows(BACKEND_PID, ())
        return int(pid)


@pytest.fixture
async def make_pool(conninfo: str) -> AsyncIterator[Callable[..., Pool]]:
    pools: list[Pool] = []

    def make(**options: Any) -> Pool:
        pool = Pool(conninfo, options=PoolOptions(**options))
        pools.append(pool)
        return pool

    yield make
    for pool in pools:
        await pool.reads.dispose()
        for connection in pool.opened:  # any a failing test left lent
            await connection.close()


async def test_connections_are_opened_on_demand_and_the_last_returned_is_lent_first(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool(size=2)
    assert pool.opened == []
    first = await pool.pid()
    assert await pool.pid() == first
    assert len(pool.opened) == 1
    # Two at once need two connections; the one that came back last is lent next.
    sleeps = "SELECT pg_backend_pid(), pg_sleep(%s)"
    short = asyncio.create_task(pool.reads.rows(sleeps, (0.05,)))
    long = asyncio.create_task(pool.reads.rows(sleeps, (0.3,)))
    (((short_pid, _),), ((long_pid, _),)) = await asyncio.gather(short, long)
    assert short_pid != long_pid
    assert len(pool.opened) == 2
    assert await pool.pid() == long_pid


async def test_no_more_connections_than_the_pool_size(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(size=2)
    statements = [pool.reads.rows("SELECT pg_backend_pid(), pg_sleep(0.05)", ()) for _ in range(6)]
    pids = {pid for ((pid, _),) in await asyncio.gather(*statements)}
    assert len(pids) == 2
    assert len(pool.opened) == 2


async def test_waiting_statements_get_the_connection_in_arrival_order(make_pool: Callable[..., Pool]) -> None:
    """With one connection, statements run one after the other. One that arrives just as
    the connection comes back waits behind those already waiting, even when the task that
    gave it back sends it in the same step (as a request's next statement is)."""
    pool = make_pool(size=1)
    named = "SELECT %s::text, statement_timestamp(), pg_sleep(0.05)"

    async def statements(*names: str) -> list[Any]:
        return [row for name in names for row in await pool.reads.rows(named, (name,))]

    first = asyncio.create_task(statements("first", "first again"))
    await asyncio.sleep(0)  # it holds the connection
    waiting = [asyncio.create_task(statements(name)) for name in ("second", "third")]
    rows = [row for task in (first, *waiting) for row in await task]
    assert [name for name, _, _ in sorted(rows, key=lambda row: row[1])] == ["first", "second", "third", "first again"]
    assert len(pool.opened) == 1


async def test_a_statement_that_cannot_get_a_connection_in_time_fails(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(size=1, timeout_s=0.1)
    holder = asyncio.create_task(pool.reads.rows("SELECT pg_sleep(0.5)", ()))
    await asyncio.sleep(0)
    with pytest.raises(ReadFailed):
        await pool.pid()
    await holder
    assert len(pool.opened) == 1


async def test_a_dropped_connection_is_replaced_within_the_statement(
    make_pool: Callable[..., Pool], conninfo: str
) -> None:
    pool = make_pool(size=2)
    dropped = await pool.pid()
    await _terminate(conninfo, dropped)
    errors = database_errors()
    replacement = await pool.pid()
    assert replacement != dropped
    assert database_errors() == errors + 1  # the dropped connection's error, once
    assert [connection.closed for connection in pool.opened] == [True, False]
    assert await pool.pid() == replacement  # and the new one is pooled


async def test_a_dropped_connection_retires_every_idle_one_opened_before_it(
    make_pool: Callable[..., Pool], conninfo: str
) -> None:
    """A restart ends every session: after the first dropped connection the statement runs
    on a new one, and so does each next statement, instead of meeting the other dead idle
    connections one by one (each would have cost a request its one retry)."""
    pool = make_pool(size=4)
    await asyncio.gather(*(pool.reads.rows("SELECT pg_sleep(0.05)", ()) for _ in range(4)))
    assert len(pool.opened) == 4
    for pid in pool.pids:
        await _terminate(conninfo, pid)
    errors = database_errors()
    after = [await pool.pid() for _ in range(4)]
    assert database_errors() == errors + 1  # the first statement's dropped connection, only
    assert len(pool.opened) == 5 and set(after) == {pool.pids[4]}
    assert [connection.closed for connection in pool.opened] == [True] * 4 + [False]


async def test_a_connection_lent_when_its_generation_ended_is_closed_when_it_comes_back(
    make_pool: Callable[..., Pool], conninfo: str
) -> None:
    pool = make_pool(size=2)
    sleeps = "SELECT pg_backend_pid(), pg_sleep(%s)"
    (((short_pid, _),), ((long_pid, _),)) = await asyncio.gather(
        pool.reads.rows(sleeps, (0.05,)), pool.reads.rows(sleeps, (0.2,))
    )
    running = asyncio.create_task(pool.reads.rows(sleeps, (0.3,)))  # on the last returned: long_pid's
    await asyncio.sleep(0.1)
    await _terminate(conninfo, short_pid)
    replacement = await pool.pid()  # the idle one was dropped: a new generation begins
    ((lent_pid, _),) = await running
    assert lent_pid == long_pid
    assert pool.opened[pool.pids.index(long_pid)].closed  # back from an ended generation: not lent again
    assert await pool.pid() == replacement and len(pool.opened) == 3


async def test_a_connection_past_its_lifetime_is_closed_when_it_comes_back(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(size=1, max_lifetime_s=1.0)
    first = await pool.pid()
    assert await pool.pid() == first  # young: reused
    await asyncio.sleep(1.05)
    assert await pool.pid() == first  # lent once more, then closed as it comes back
    assert pool.opened[0].closed
    second = await pool.pid()
    assert second != first and len(pool.opened) == 2
    assert await pool.pid() == second


async def test_the_pools_own_statement_deadline_cancels_the_statement_on_the_server(
    make_pool: Callable[..., Pool], conninfo: str
) -> None:
    """Through a transaction pooler the server's statement_timeout cannot be set for the
    session: the pool bounds the statement and cancels it where it runs."""
    pool = make_pool(size=1, statement_deadline_s=0.3)
    used = await pool.pid()
    errors = database_errors()
    started = asyncio.get_running_loop().time()
    with pytest.raises(ReadFailed, match="QueryCanceled"):
        await pool.reads.rows("SELECT pg_sleep(5)", ())
    assert asyncio.get_running_loop().time() - started < 3
    assert database_errors() == errors + 1
    async with await psycopg.AsyncConnection.connect(conninfo, autocommit=True) as admin:
        cursor = await admin.execute("SELECT state FROM pg_stat_activity WHERE pid = %s", (used,))
        assert await cursor.fetchall() == [("idle",)]  # not still sleeping
    assert await pool.pid() == used  # and the connection serves the next statement
    assert len(pool.opened) == 1


async def test_a_statement_is_retried_once_only(make_pool: Callable[..., Pool], conninfo: str) -> None:
    """Every connection is dropped as soon as it is opened: the statement fails after two."""

    async def drop(pid: int) -> None:
        await _terminate(conninfo, pid)

    pool = make_pool(size=1, opened_hook=drop)
    errors = database_errors()
    with pytest.raises(ReadFailed):
        await pool.pid()
    assert len(pool.opened) == 2
    assert database_errors() == errors + 2
    assert all(connection.closed for connection in pool.opened)


async def test_a_cancelled_statement_closes_its_connection(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(size=1)
    statement = asyncio.create_task(pool.reads.rows("SELECT pg_sleep(10)", ()))
    await asyncio.sleep(0.2)  # connected, the query running on the server
    assert len(pool.opened) == 1
    statement.cancel()
    with pytest.raises(asyncio.CancelledError):
        await statement
    assert pool.opened[0].closed
    # Its turn was given back: the next statement runs, on a new connection.
    await pool.pid()
    assert len(pool.opened) == 2


async def test_a_connection_runs_its_statements_on_one_cursor_even_after_an_error(
    make_pool: Callable[..., Pool], monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[psycopg.AsyncCursor[Any]] = []
    cursor = psycopg.AsyncConnection.cursor

    def counted(connection: psycopg.AsyncConnection[Any], *args: Any, **kwargs: Any) -> Any:
        made.append(cursor(connection, *args, **kwargs))
        return made[-1]

    monkeypatch.setattr(psycopg.AsyncConnection, "cursor", counted)
    pool = make_pool(size=1, server_options="-c statement_timeout=50")
    pids = {await pool.pid() for _ in range(3)}
    with pytest.raises(ReadFailed, match="QueryCanceled"):
        await pool.reads.rows("SELECT pg_sleep(1)", ())
    assert await pool.reads.rows("SELECT 1 + 1", ()) == [(2,)]
    assert len(pids) == 1 and len(made) == 1


async def test_after_a_statement_error_a_usable_connection_is_lent_again(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(size=1, server_options="-c statement_timeout=50")
    used = await pool.pid()
    errors = database_errors()
    with pytest.raises(ReadFailed, match="QueryCanceled"):
        await pool.reads.rows("SELECT pg_sleep(1)", ())
    assert database_errors() == errors + 1
    assert await pool.pid() == used
    assert len(pool.opened) == 1


async def test_a_connection_an_error_left_inside_a_transaction_is_closed(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(size=1)
    # BEGIN succeeds on the server, then reading its rows is a driver error: the
    # connection is left in a transaction, which the next statement must not inherit.
    with pytest.raises(ReadFailed, match="ProgrammingError"):
        await pool.reads.rows("BEGIN", ())
    assert pool.opened[0].closed
    await pool.pid()
    assert len(pool.opened) == 2


async def test_dispose_closes_idle_connections_and_lent_ones_when_they_come_back(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool(size=2)
    two = [pool.reads.rows("SELECT pg_sleep(0.05)", ()) for _ in range(2)]
    await asyncio.gather(*two)
    running = asyncio.create_task(pool.reads.rows("SELECT pg_backend_pid(), pg_sleep(0.2)", ()))
    await asyncio.sleep(0)  # it has taken one of the two idle connections
    await pool.reads.dispose()
    assert sorted(connection.closed for connection in pool.opened) == [False, True]
    ((lent_pid, _),) = await running  # its statement was not disturbed
    assert all(connection.closed for connection in pool.opened)
    assert lent_pid in pool.pids
    # The pool is still usable: it opens a new connection and keeps it.
    after = await pool.pid()
    assert await pool.pid() == after
    assert len(pool.opened) == 3


def _settings(database_url: str, **overrides: Any) -> Settings:
    return Settings(_env_file=None, database_url=database_url, api_key_pepper=TEST_PEPPER, **overrides)  # type: ignore[call-arg]


async def test_connections_are_opened_as_the_url_and_the_settings_say(database_url: str) -> None:
    url = make_url(database_url).update_query_dict({"application_name": "read_pool_test"})
    database = Database(_settings(url.render_as_string(hide_password=False), statement_timeout_ms=4321))
    pool = database.read_connections
    assert isinstance(pool, ReadPool)
    try:
        ((application, timeout, zone),) = await pool.rows(
            "SELECT current_setting('application_name'), current_setting('statement_timeout'),"
            " current_setting('TimeZone')",
            (),
        )
        assert (application, timeout, zone) == ("read_pool_test", "4321ms", "UTC")
        connection = (await pool.borrow()).cursor.connection  # the idle one, outside a turn: closed below
        assert connection.autocommit
        await connection.close()
    finally:
        await database.dispose()


@pytest.mark.parametrize("refusal", ["refused", "rejected"])
async def test_a_connection_the_server_refuses_fails_the_read_at_once(database_url: str, refusal: str) -> None:
    unreachable = (
        "postgresql+psycopg://nobody@127.0.0.1:1/none"  # nothing listens
        if refusal == "refused"
        else make_url(database_url).set(username="no_such_role_for_read_pool").render_as_string(hide_password=False)
    )
    database = Database(_settings(unreachable, db_pool_timeout_s=5))
    loop = asyncio.get_running_loop()
    try:
        errors = database_errors()
        started = loop.time()
        with pytest.raises(ReadFailed, match="OperationalError"):
            await database.ping()
        assert loop.time() - started < 1  # not the pool timeout: nothing retries behind it
        assert database_errors() == errors + 1
    finally:
        await database.dispose()


async def test_turns_are_taken_in_arrival_order() -> None:
    """A released turn goes to the statement that has waited longest, never to one that
    arrives just as it is released (asyncio's queue, the pool's own wait, lets it jump in),
    nor to the releasing task asking again in the same step."""
    turns = Turns(size=1, timeout_s=5)
    order: list[str] = []
    release_first = asyncio.Event()

    async def first() -> None:
        async with turns.turn():
            order.append("first")
            await release_first.wait()
        async with turns.turn():
            order.append("first again")

    async def waiting(name: str) -> None:
        async with turns.turn():
            order.append(name)

    holder = asyncio.create_task(first())
    await asyncio.sleep(0)
    early = asyncio.create_task(waiting("waited"))
    await asyncio.sleep(0)
    release_first.set()
    await asyncio.sleep(0)  # the holder releases its turn here and asks for another
    late = asyncio.create_task(waiting("arrived after the release"))
    await asyncio.gather(holder, early, late)
    assert order == ["first", "waited", "first again", "arrived after the release"]


async def test_a_turn_not_given_within_the_pool_timeout_is_a_read_failure() -> None:
    turns = Turns(size=1, timeout_s=0.05)
    async with turns.turn():
        started = asyncio.get_running_loop().time()
        with pytest.raises(ReadFailed):
            async with turns.turn():
                pass
        assert 0.04 <= asyncio.get_running_loop().time() - started < 1


async def test_only_a_statement_that_waits_for_its_turn_arms_a_timer(monkeypatch: pytest.MonkeyPatch) -> None:
    armed: list[float | None] = []
    timeout = asyncio.timeout

    def spy(delay: float | None) -> asyncio.Timeout:
        armed.append(delay)
        return timeout(delay)

    async def take(turns: Turns) -> None:
        async with turns.turn():
            pass

    monkeypatch.setattr(asyncio, "timeout", spy)
    turns = Turns(size=2, timeout_s=5)
    async with turns.turn(), turns.turn():
        assert armed == []  # both were free
        waiting = asyncio.create_task(take(turns))
        await asyncio.sleep(0)
        assert not waiting.done()
    await waiting
    assert armed == [5]

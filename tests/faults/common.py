"""What every fault scenario shares: the ten endpoints with their exact 500 bodies, a seeded
database behind the real CLI, and checks of the answers a client gets during an outage."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import psycopg
import pytest

from engine.db import Database
from engine.keys import create_api_key, revoke_api_key
from engine.migrations import upgrade_database
from engine.settings import Settings, normalize_database_url
from tests.contract.campaign import (
    CAMPAIGN_A,
    EXPORT,
    LIST_FAILED_BODY,
    LIST_PATHS,
    OWNER_A,
    RECORD_FAILED_BODY,
    RESOURCE_PATHS,
    VISIBLE_ID,
)
from tests.contract.client import ApiClient
from tests.contract.server import Cli, ServiceEnv
from tests.databases import postgres_database, sqlite_database

HIGH_LIMITS = {
    "rate_limit_ip": "1000000 per minute",
    "rate_limit_failed_auth": "1000000 per 10 minutes",
    "rate_limit_key": "100000 per minute",
    "rate_limit_owner": "1000000 per minute",
}
KEY_LIMIT = 100_000
# (v1 path, exact body of its 500) for the ten endpoints and the feed.
ENDPOINTS = [
    *((path, LIST_FAILED_BODY[path]) for path in LIST_PATHS),
    *((f"{path}/{VISIBLE_ID[path]}", RECORD_FAILED_BODY[path]) for path in RESOURCE_PATHS),
]
UNAVAILABLE_BODY = b'{"error":"Public API temporarily unavailable"}'
UNAVAILABLE_GRAPHQL = (
    b'{"errors":[{"message":"Public API temporarily unavailable","extensions":{"code":"UNAVAILABLE"}}]}'
)
RATE_HEADERS = ("x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset")
GRAPHQL_SESSIONS = {"query": "{ sessions(limit: 2) { data { id } } }"}


@dataclass(frozen=True, slots=True)
class Seeded:
    env: ServiceEnv
    cli: Cli
    workdir: Path
    token: str  # campaign A, used before the fault
    spare_token: str  # campaign A, never used before the fault (not in any key cache)


def seed(env: ServiceEnv, workdir: Path, *, migrate: bool = True) -> Seeded:
    """Migrate (optionally), import the contract campaign and issue two keys.

    The import and the main key go through the real CLI, as an operator would do it; the
    migration and the spare key run in-process (the same engine code, without one more
    interpreter start each)."""
    if migrate:
        upgrade_database(normalize_database_url(env.database_url))
    cli = Cli(env=env, workdir=workdir)
    cli.import_export(EXPORT)
    token = cli.create_key(campaign=CAMPAIGN_A, owner=OWNER_A, label="faults")
    [spare_token] = issue_keys(env, campaign=CAMPAIGN_A, owner=OWNER_A, count=1)
    return Seeded(env=env, cli=cli, workdir=workdir, token=token, spare_token=spare_token)


def issue_keys(env: ServiceEnv, *, campaign: str, owner: str, count: int, revoked: bool = False) -> list[str]:
    """Tokens of `count` new keys (revoked at once if asked), written in-process."""
    assert env.api_key_pepper is not None

    async def issue() -> list[str]:
        database = Database(Settings(_env_file=None, database_url=env.database_url))  # type: ignore[call-arg]
        try:
            async with database.session() as db:
                issued = [
                    await create_api_key(
                        db, campaign_id=campaign, owner_id=owner, label="faults", pepper=env.api_key_pepper.encode()
                    )
                    for _ in range(count)
                ]
                if revoked:
                    for key in issued:
                        await revoke_api_key(db, key_id=key.key_id)
                return [key.token for key in issued]
        finally:
            await database.dispose()

    return asyncio.run(issue())


@pytest.fixture(scope="session")
def seeded_postgres(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Seeded]:
    """A fresh database on the shared PostgreSQL with the contract campaign and two keys,
    for the scenarios that lock its tables or read its logs; they run one at a time
    (one xdist group), so a lock taken by one never meets another's requests."""
    workdir: Path = tmp_path_factory.mktemp("seeded-postgres")
    with postgres_database("campaign_faults") as url:
        yield seed(ServiceEnv(database_url=url, **HIGH_LIMITS), workdir, migrate=False)


@pytest.fixture(scope="session")
def seeded_sqlite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Seeded]:
    """One SQLite database with the contract campaign and two keys, for every server of a
    session that only reads it (each server brings its own limiter storage)."""
    workdir: Path = tmp_path_factory.mktemp("seeded-sqlite")
    with sqlite_database(workdir) as url:
        yield seed(ServiceEnv(database_url=url, **HIGH_LIMITS), workdir, migrate=False)


def timed(call: Callable[[], httpx.Response]) -> tuple[httpx.Response, float]:
    started = time.monotonic()
    response = call()
    return response, time.monotonic() - started


def assert_fetch_failed(response: httpx.Response, body: str, *, key_limit: int = KEY_LIMIT) -> None:
    """The endpoint's exact 500, with the key's minute window (spec: Errors, rule 3)."""
    assert (response.status_code, response.json()) == (500, {"error": body}), response.text
    assert response.content == f'{{"error":"{body}"}}'.encode()
    assert int(response.headers["x-ratelimit-limit"]) == key_limit
    assert 0 <= int(response.headers["x-ratelimit-remaining"]) < key_limit
    assert int(response.headers["x-ratelimit-reset"]) > time.time()
    assert "retry-after" not in response.headers


def assert_unavailable(response: httpx.Response) -> None:
    """The exact 503: no rate headers, no Retry-After, no challenge."""
    assert (response.status_code, response.content) == (503, UNAVAILABLE_BODY), response.text
    assert not set(RATE_HEADERS) & set(response.headers)
    assert "retry-after" not in response.headers
    assert "www-authenticate" not in response.headers


def all_ok(client: ApiClient, token: str) -> bool:
    """Whether every endpoint answers 200 again."""
    try:
        return all(client.api(path, token=token).status_code == 200 for path, _ in ENDPOINTS)
    except httpx.TransportError:
        return False


def wait_until(
    predicate: Callable[[], bool], *, timeout: float, interval: float = 0.1, what: str = "condition"
) -> None:
    """Poll `predicate()` until true; fail the test after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)


@contextmanager
def sessions_locked(conninfo: str) -> Iterator[None]:
    """Hold an ACCESS EXCLUSIVE lock on `sessions` until the block ends (then roll back):
    every read of that table waits meanwhile."""
    with psycopg.connect(conninfo, connect_timeout=5) as connection:
        connection.execute("LOCK TABLE sessions IN ACCESS EXCLUSIVE MODE")
        try:
            yield
        finally:
            connection.rollback()


def lock_waiters(conninfo: str) -> int:
    """Statements of the database's sessions waiting for a lock now."""
    with psycopg.connect(conninfo, autocommit=True, connect_timeout=5) as connection:
        row = connection.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
        ).fetchone()
    assert row is not None
    return int(row[0])

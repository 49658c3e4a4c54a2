"""Slow queries and an exhausted pool end in a bounded time with the 500 body, never a hang.

The slowness is real: another connection holds an ACCESS EXCLUSIVE lock on `sessions`
inside an open transaction, so every read of that table waits. The server runs with a
small STATEMENT_TIMEOUT_MS (PostgreSQL cancels the waiting query) and a pool of one
connection with a short DB_POOL_TIMEOUT_S (a second request gives up waiting for it).
The database is a fresh one on the shared PostgreSQL (`seeded_postgres`): locking a
table of one's own database breaks nothing for anyone else.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest
from sqlalchemy.engine import make_url

from tests.contract.client import ApiClient
from tests.contract.server import ApiServer, running_server
from tests.faults.common import (
    ENDPOINTS,
    Seeded,
    all_ok,
    assert_fetch_failed,
    lock_waiters,
    sessions_locked,
    timed,
    wait_until,
)

pytestmark = pytest.mark.xdist_group("faults")

STATEMENT_TIMEOUT_S = 2.0
POOL_TIMEOUT_S = 0.5
# Slack for a loaded CI machine on top of the configured timeouts.
SLACK_S = 3.0


@dataclass(slots=True)
class SlowDatabase:
    conninfo: str  # plain libpq URL of the service's database
    seeded: Seeded
    server: ApiServer

    def lock_waiters(self) -> int:
        return lock_waiters(self.conninfo)


@pytest.fixture(scope="module")
def slow(seeded_postgres: Seeded) -> Iterator[SlowDatabase]:
    env = seeded_postgres.env.with_changes(
        extra={
            "STATEMENT_TIMEOUT_MS": str(int(STATEMENT_TIMEOUT_S * 1000)),
            "DB_POOL_SIZE": "1",
            "DB_POOL_TIMEOUT_S": str(POOL_TIMEOUT_S),
        }
    )
    conninfo = make_url(env.database_url).set(drivername="postgresql").render_as_string(hide_password=False)
    with running_server(env, workdir=seeded_postgres.workdir) as server:
        yield SlowDatabase(conninfo=conninfo, seeded=seeded_postgres, server=server)


def test_statement_timeout_ends_a_query_stuck_behind_a_lock(slow: SlowDatabase) -> None:
    token = slow.seeded.token
    with ApiClient(slow.server.base_url, timeout=STATEMENT_TIMEOUT_S + 10) as client:
        assert client.api("sessions", token=token).status_code == 200
        with sessions_locked(slow.conninfo):
            for path, body in ENDPOINTS:
                if not path.startswith("sessions"):
                    continue
                response, elapsed = timed(lambda path=path: client.api(path, token=token))
                assert_fetch_failed(response, body)
                # It did wait for the lock, and PostgreSQL ended the wait at the timeout.
                assert STATEMENT_TIMEOUT_S * 0.9 <= elapsed < STATEMENT_TIMEOUT_S + SLACK_S, (path, elapsed)
            # Tables nobody locked are read as usual meanwhile.
            assert client.api("locations", token=token).status_code == 200
        assert client.api("sessions", token=token).status_code == 200


def test_exhausted_pool_waits_a_bounded_time_then_answers(slow: SlowDatabase) -> None:
    token = slow.seeded.token
    stuck: list[httpx.Response] = []
    with ApiClient(slow.server.base_url, timeout=STATEMENT_TIMEOUT_S + 10) as client:
        assert client.api("locations", token=token).status_code == 200
        with sessions_locked(slow.conninfo):

            def hold_the_only_connection() -> None:
                with ApiClient(slow.server.base_url, timeout=STATEMENT_TIMEOUT_S + 10) as other:
                    stuck.append(other.api("sessions", token=token))

            holder = threading.Thread(target=hold_the_only_connection, daemon=True)
            holder.start()
            try:
                wait_until(lambda: slow.lock_waiters() == 1, timeout=STATEMENT_TIMEOUT_S,
                           interval=0.05, what="the first request to wait on the lock")
                # The pool's one connection is taken: this request waits for it, then fails.
                response, elapsed = timed(lambda: client.api("locations", token=token))
                assert_fetch_failed(response, "Failed to fetch locations")
                assert POOL_TIMEOUT_S * 0.9 <= elapsed < POOL_TIMEOUT_S * 2 + SLACK_S, elapsed
            finally:
                holder.join(STATEMENT_TIMEOUT_S + SLACK_S + 10)
        assert not holder.is_alive()
        assert len(stuck) == 1
        assert_fetch_failed(stuck[0], "Failed to fetch sessions")
        wait_until(lambda: all_ok(client, token), timeout=10, what="every endpoint to answer 200 again")

"""SIGTERM while requests are in flight: a graceful stop.

Requests are made slow for real (they wait behind an ACCESS EXCLUSIVE lock on `sessions`
held by another connection). After SIGTERM the server stops accepting connections at
once, lets the requests it already has finish with their real answers (200 once the
lock is released), and the process exits 0, as a supervisor expects of a clean stop.
"""

from __future__ import annotations

import signal
import socket
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import psycopg
import pytest
from sqlalchemy.engine import make_url

from tests.contract.client import ApiClient
from tests.contract.server import ApiServer, running_server
from tests.faults.common import Seeded, lock_waiters, wait_until

pytestmark = pytest.mark.xdist_group("faults")

IN_FLIGHT = 3
STATEMENT_TIMEOUT_S = 20.0
EXIT_WITHIN_S = 15.0


@dataclass(slots=True)
class Stoppable:
    conninfo: str
    seeded: Seeded
    server: ApiServer


@pytest.fixture
def stoppable(seeded_postgres: Seeded) -> Iterator[Stoppable]:
    env = seeded_postgres.env.with_changes(extra={"STATEMENT_TIMEOUT_MS": str(int(STATEMENT_TIMEOUT_S * 1000))})
    conninfo = make_url(env.database_url).set(drivername="postgresql").render_as_string(hide_password=False)
    with running_server(env, workdir=seeded_postgres.workdir) as server:
        yield Stoppable(conninfo=conninfo, seeded=seeded_postgres, server=server)


def _refuses_connections(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return False
    except ConnectionRefusedError:
        return True


def test_in_flight_requests_finish_new_connections_are_refused_exit_0(stoppable: Stoppable) -> None:
    server, token = stoppable.server, stoppable.seeded.token
    with ApiClient(server.base_url) as client:
        assert client.api("sessions", token=token).status_code == 200

    answers: list[httpx.Response | BaseException] = []

    def slow_request() -> None:
        try:
            with ApiClient(server.base_url, timeout=STATEMENT_TIMEOUT_S + 10) as own:
                answers.append(own.api("sessions", token=token))
        except BaseException as exc:  # recorded, asserted below
            answers.append(exc)

    with psycopg.connect(stoppable.conninfo, connect_timeout=5) as locker:
        locker.execute("LOCK TABLE sessions IN ACCESS EXCLUSIVE MODE")
        threads = [threading.Thread(target=slow_request, daemon=True) for _ in range(IN_FLIGHT)]
        try:
            for thread in threads:
                thread.start()
            wait_until(lambda: lock_waiters(stoppable.conninfo) == IN_FLIGHT, timeout=10,
                       what=f"{IN_FLIGHT} requests waiting on the lock")

            server.process.send_signal(signal.SIGTERM)

            wait_until(lambda: _refuses_connections(server.port), timeout=5, interval=0.05,
                       what="the listening socket to close after SIGTERM")
            # Still waiting on the lock: the server did not cut them.
            assert all(thread.is_alive() for thread in threads)
            assert server.is_running()
        finally:
            locker.rollback()
        for thread in threads:
            thread.join(STATEMENT_TIMEOUT_S + 10)

    assert len(answers) == IN_FLIGHT
    for answer in answers:
        assert isinstance(answer, httpx.Response), answer
        assert answer.status_code == 200, answer.text
        assert len(answer.json()["data"]) > 0
    try:
        returncode = server.process.wait(EXIT_WITHIN_S)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the server did not exit within {EXIT_WITHIN_S}s of SIGTERM:\n{server.log_text()}")
    assert returncode == 0, server.log_text()

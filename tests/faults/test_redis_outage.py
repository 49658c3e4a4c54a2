"""The limiter storage (Redis) stops, restarts and stalls under a running server.

Limits fail closed: while they cannot be enforced every API request is the exact 503
without Retry-After (and without rate headers); once Redis answers again the same server
process serves 200s. The Redis is a private redis-server on its own port; "answering
slowly" is that process stopped with SIGSTOP, which holds every command unanswered
until SIGCONT.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from tests.contract.client import ApiClient
from tests.contract.redis_process import RedisProcess, own_redis
from tests.contract.server import ApiServer, running_server
from tests.faults.common import (
    ENDPOINTS,
    GRAPHQL_SESSIONS,
    UNAVAILABLE_GRAPHQL,
    Seeded,
    all_ok,
    assert_unavailable,
    timed,
    wait_until,
)

pytestmark = pytest.mark.xdist_group("faults")

REDIS_TIMEOUT_S = 0.5
# A request makes a few storage calls; each gives up after REDIS_TIMEOUT_S.
ANSWER_WITHIN_S = 4.0
RECOVERY_WITHIN_S = 15.0


@dataclass(slots=True)
class Limited:
    redis: RedisProcess
    seeded: Seeded
    server: ApiServer


@pytest.fixture(scope="module")
def limited(seeded_sqlite: Seeded) -> Iterator[Limited]:
    with own_redis(seeded_sqlite.workdir) as redis_server:
        env = seeded_sqlite.env.with_changes(
            redis_url=redis_server.url, extra={"REDIS_TIMEOUT_S": str(REDIS_TIMEOUT_S)}
        )
        with running_server(env, workdir=seeded_sqlite.workdir) as server:
            yield Limited(redis=redis_server, seeded=seeded_sqlite, server=server)


def _assert_every_request_unavailable(client: ApiClient, token: str) -> None:
    for path, _ in ENDPOINTS:
        response, elapsed = timed(lambda path=path: client.api(path, token=token))
        assert_unavailable(response)
        assert elapsed < ANSWER_WITHIN_S, (path, elapsed)
    graphql = client.post("/graphql", json=GRAPHQL_SESSIONS, headers={"Authorization": f"Bearer {token}"})
    assert (graphql.status_code, graphql.content) == (503, UNAVAILABLE_GRAPHQL)
    assert "retry-after" not in graphql.headers
    # Without a key too: the IP limit comes first and cannot be enforced either.
    assert_unavailable(client.api("sessions"))


def test_redis_stopped_then_restarted(limited: Limited) -> None:
    token = limited.seeded.token
    pid = limited.server.process.pid
    with ApiClient(limited.server.base_url) as client:
        assert client.api("sessions", token=token).status_code == 200

        limited.redis.stop()
        _assert_every_request_unavailable(client, token)
        ready = client.get("/readyz")
        assert ready.status_code == 503
        assert ready.json()["checks"] == {"database": "up", "rate_limit_storage": "down", "api_key_pepper": "up"}
        assert ready.json()["error"] == "rate_limit_storage unavailable"

        limited.redis.start()  # same port, empty
        wait_until(lambda: all_ok(client, token), timeout=RECOVERY_WITHIN_S, interval=0.2,
                   what="200s once Redis is back")
        assert client.get("/readyz").status_code == 200
    assert limited.server.is_running() and limited.server.process.pid == pid


def test_redis_answering_slowly(limited: Limited) -> None:
    token = limited.seeded.token
    assert limited.redis.process is not None
    redis_pid = limited.redis.process.pid
    with ApiClient(limited.server.base_url) as client:
        assert client.api("sessions", token=token).status_code == 200
        os.kill(redis_pid, signal.SIGSTOP)
        try:
            _assert_every_request_unavailable(client, token)
            ready, elapsed = timed(lambda: client.get("/readyz"))
            assert ready.status_code == 503
            assert elapsed < ANSWER_WITHIN_S
        finally:
            os.kill(redis_pid, signal.SIGCONT)
        wait_until(lambda: all_ok(client, token), timeout=RECOVERY_WITHIN_S, interval=0.2,
                   what="200s once Redis answers again")
    assert limited.server.is_running()

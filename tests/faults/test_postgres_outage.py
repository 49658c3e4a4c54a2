"""PostgreSQL stops under a running server, then comes back.

A throwaway cluster (never the shared one) is migrated, imported and given keys through the
CLI; the server reads it; `pg_ctl stop -m fast` cuts every session. While it is down, each
of the ten endpoints answers its own exact 500 with the key's rate headers (the key was
verified before the outage), a never-seen key gets the 503 (it cannot be verified),
/readyz names the database. Started again, the service resumes by itself.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import httpx
import psycopg
import pytest

from tests.contract.client import ApiClient
from tests.contract.server import ApiServer, ServiceEnv, running_server
from tests.faults.common import (
    ENDPOINTS,
    GRAPHQL_SESSIONS,
    HIGH_LIMITS,
    UNAVAILABLE_GRAPHQL,
    Seeded,
    all_ok,
    assert_fetch_failed,
    assert_unavailable,
    seed,
    timed,
    wait_until,
)
from tests.faults.postgres_cluster import DATABASE, PostgresCluster, throwaway_cluster

pytestmark = pytest.mark.xdist_group("faults")

# Connection refused is immediate; this bounds anything that would hang instead.
ANSWER_WITHIN_S = 5.0
RECOVERY_WITHIN_S = 30.0


@dataclass(slots=True)
class Outage:
    cluster: PostgresCluster
    seeded: Seeded
    server: ApiServer


@pytest.fixture(scope="module")
def outage(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Outage]:
    workdir: Path = tmp_path_factory.mktemp("faults-postgres")
    with throwaway_cluster() as cluster:
        env = ServiceEnv(database_url=cluster.url, **HIGH_LIMITS)
        seeded = seed(env, workdir)
        with running_server(env, workdir=workdir) as server:
            yield Outage(cluster=cluster, seeded=seeded, server=server)


def test_database_stop_and_restart(outage: Outage) -> None:
    token = outage.seeded.token
    with ApiClient(outage.server.base_url) as client:
        # The key is used once, so the server has verified it before the outage.
        assert client.api("sessions", token=token).status_code == 200
        assert client.get("/readyz").status_code == 200

        outage.cluster.stop("fast")

        for path, body in ENDPOINTS:
            response, elapsed = timed(lambda path=path: client.api(path, token=token))
            assert_fetch_failed(response, body)
            assert elapsed < ANSWER_WITHIN_S, (path, elapsed)

        graphql = client.post("/graphql", json=GRAPHQL_SESSIONS, headers={"Authorization": f"Bearer {token}"})
        assert graphql.status_code == 200
        assert graphql.json()["data"] is None
        assert [(e["message"], e["extensions"]["code"]) for e in graphql.json()["errors"]] == [
            ("Failed to fetch sessions", "FETCH_FAILED")
        ]

        # A key the server never verified cannot be verified now.
        assert_unavailable(client.api("sessions", token=outage.seeded.spare_token))
        spare_graphql = client.post(
            "/graphql", json=GRAPHQL_SESSIONS, headers={"Authorization": f"Bearer {outage.seeded.spare_token}"}
        )
        assert (spare_graphql.status_code, spare_graphql.content) == (503, UNAVAILABLE_GRAPHQL)

        ready, elapsed = timed(lambda: client.get("/readyz"))
        assert ready.status_code == 503
        assert ready.json() == {
            "status": "unavailable",
            "error": "database unavailable",
            "checks": {"database": "down", "rate_limit_storage": "up", "api_key_pepper": "up"},
        }
        assert elapsed < ANSWER_WITHIN_S
        assert client.get("/healthz").status_code == 200

        outage.cluster.start()

        # No restart of the service: its pool reconnects on its own.
        wait_until(lambda: all_ok(client, token), timeout=RECOVERY_WITHIN_S, interval=0.25,
                   what="every endpoint to answer 200 after PostgreSQL restarted")
        assert client.api("sessions", token=outage.seeded.spare_token).status_code == 200
        assert client.get("/readyz").status_code == 200
    assert outage.server.is_running()


def _pooled_sessions(cluster: PostgresCluster) -> set[int]:
    """Server processes of the service's connections (the tests' own are not in it)."""
    with psycopg.connect(cluster.admin_url, autocommit=True, connect_timeout=5) as admin:
        rows = admin.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()", (DATABASE,)
        ).fetchall()
    return {pid for (pid,) in rows}


def _concurrently(base_url: str, token: str, *, clients: int, rounds: int) -> list[httpx.Response]:
    """Every endpoint `rounds` times from each of `clients` clients at once."""

    def one_client(_: int) -> list[httpx.Response]:
        with ApiClient(base_url) as client:
            return [client.api(path, token=token) for _ in range(rounds) for path, _body in ENDPOINTS]

    with ThreadPoolExecutor(clients) as pool:
        return [response for responses in pool.map(one_client, range(clients)) for response in responses]


def test_a_restart_costs_clients_no_error(outage: Outage) -> None:
    """Several idle pooled connections, all ended by a real restart: once PostgreSQL is back,
    every request is answered as before. The first read to meet a dead connection retires
    all of them and runs on a new one; no request meets a second dead one."""
    token = outage.seeded.token
    server = outage.server
    # 16 clients at once: the pool opens several connections, which then stay idle.
    assert {response.status_code for response in _concurrently(server.base_url, token, clients=16, rounds=2)} == {200}
    before = _pooled_sessions(outage.cluster)
    assert len(before) >= 4, before

    outage.cluster.stop("fast")
    outage.cluster.start()

    with ApiClient(server.base_url) as client:
        sequential = [client.api(path, token=token) for _ in range(3) for path, _body in ENDPOINTS]
    concurrent = _concurrently(server.base_url, token, clients=16, rounds=2)
    failed = [(r.status_code, r.content) for r in (*sequential, *concurrent) if r.status_code != 200]
    assert failed == []
    assert not _pooled_sessions(outage.cluster) & before
    assert server.is_running()

"""The service through stock PgBouncer in transaction mode (issue 14, item 3).

PgBouncer (Debian's 1.18) with nothing set for the service: transaction mode, five server
connections for everyone. A server with two workers (ten read connections each) reads
through it; a reference server reads the same database directly. Under concurrent load
every endpoint's every answer through PgBouncer is the reference's, byte for byte (a
statement prepared by one worker and met by another would give another endpoint's rows,
or an error). The statement timeout holds through PgBouncer, and the statement it ends is
cancelled on the server, not merely abandoned.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from sqlalchemy.engine import make_url

from tests.cluster.load import Load, Probe, failures, reference_probes
from tests.cluster.loopback import Subnet
from tests.cluster.pgbouncer import running_pgbouncer
from tests.contract.client import ApiClient
from tests.contract.redis_process import own_redis
from tests.contract.server import ApiServer, ServerSpec, running_servers
from tests.faults.common import Seeded, all_ok, assert_fetch_failed, lock_waiters, sessions_locked, timed, wait_until

pytestmark = pytest.mark.xdist_group("cluster-pgbouncer")

SERVER_CONNECTIONS = 5
STATEMENT_TIMEOUT_S = 2.0
SLACK_S = 3.0
LOAD_S = 8.0


@dataclass(slots=True)
class Pooled:
    server: ApiServer  # through PgBouncer
    reference: ApiServer  # straight to PostgreSQL
    seeded: Seeded
    conninfo: str  # the database, straight

    @property
    def token(self) -> str:
        return self.seeded.token


@pytest.fixture(scope="module")
def pooled(cluster_db: Seeded, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pooled]:
    workdir = tmp_path_factory.mktemp("pgbouncer")
    direct = cluster_db.env.database_url
    with (
        running_pgbouncer(address=Subnet.pick().pooler, server_url=direct, pool_size=SERVER_CONNECTIONS) as bouncer,
        own_redis(workdir) as redis_server,
    ):
        through = cluster_db.env.with_changes(
            database_url=bouncer.url_for(direct),
            redis_url=redis_server.url,
            extra={"STATEMENT_TIMEOUT_MS": str(int(STATEMENT_TIMEOUT_S * 1000))},
        )
        specs = [ServerSpec(env=through, workdir=workdir, workers=2), ServerSpec(env=cluster_db.env, workdir=workdir)]
        with running_servers(specs) as (server, reference):
            conninfo = make_url(direct).set(drivername="postgresql").render_as_string(hide_password=False)
            yield Pooled(server, reference, cluster_db, conninfo)


def test_every_endpoint_under_load_gets_its_own_answer(pooled: Pooled) -> None:
    probes: list[Probe] = reference_probes(pooled.reference.base_url, pooled.token)
    outcomes = Load(pooled.server.base_url, pooled.token, probes, clients=8).run_for(LOAD_S)
    hits = Counter(outcome.probe.label() for outcome in outcomes)
    print(f"{len(outcomes)} requests through PgBouncer over {len(probes)} probes, {len(failures(outcomes))} wrong")
    assert [outcome.describe() for outcome in failures(outcomes)] == []
    # Each probe ran on many connections, far past psycopg's prepare threshold (5).
    assert set(hits) == {probe.label() for probe in probes}
    assert min(hits.values()) >= 20, hits


def test_the_statement_timeout_holds_and_cancels_the_statement_on_the_server(pooled: Pooled) -> None:
    with ApiClient(pooled.server.base_url, timeout=STATEMENT_TIMEOUT_S + 10) as client:
        assert all_ok(client, pooled.token)
        with sessions_locked(pooled.conninfo):
            response, elapsed = timed(lambda: client.api("sessions", token=pooled.token))
            assert_fetch_failed(response, "Failed to fetch sessions")
            assert STATEMENT_TIMEOUT_S * 0.9 <= elapsed < STATEMENT_TIMEOUT_S + SLACK_S, elapsed
            # Still locked: had the statement only been abandoned, it would still wait.
            wait_until(lambda: lock_waiters(pooled.conninfo) == 0, timeout=2, interval=0.05,
                       what="the timed-out statement to be cancelled on the server")
            assert client.api("locations", token=pooled.token).status_code == 200
        started = time.monotonic()
        assert client.api("sessions", token=pooled.token).status_code == 200
        assert time.monotonic() - started < SLACK_S

"""Three hosts behind a real HAProxy (issue 14, item 1).

Each host is a `campaign-api serve` with two workers on an address of its own; all share
one PostgreSQL database and one Redis; HAProxy checks `/readyz` and appends the client's
address to X-Forwarded-For; TRUSTED_PROXIES names the proxy's source address.

With small limits: the key limit and the IP limit stay exact across hosts and workers.
With limits out of reach, under a steady load whose every answer is checked: a host
killed with SIGKILL costs at most the requests it had in flight, and a rolling restart
(SIGTERM, drain, start, one host after the other) costs nothing.
"""

from __future__ import annotations

import itertools
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import httpx
import pytest

from tests.cluster.hosts import Hosts, hosts_behind_haproxy
from tests.cluster.load import Load, Probe, failures, reference_probes
from tests.contract.campaign import CAMPAIGN_A, RATE_OWNERS
from tests.contract.client import ApiClient
from tests.faults.common import Seeded, issue_keys

pytestmark = pytest.mark.xdist_group("cluster-hosts")

KEY_LIMIT, IP_LIMIT = 120, 60
SMALL_LIMITS = {"rate_limit_key": f"{KEY_LIMIT} per minute", "rate_limit_ip": f"{IP_LIMIT} per minute"}
BURST = 200
LOAD_CLIENTS = 8
# Client addresses the load comes from: enough that no IP limit is ever near.
LOAD_SOURCES = 16


def _statuses(responses: list[httpx.Response]) -> Counter[int]:
    return Counter(response.status_code for response in responses)


def _concurrently(base_url: str, requests: list[tuple[str, dict[str, str]]], *, threads: int) -> list[httpx.Response]:
    """GET the sessions list once per (source address, headers), from `threads` threads."""

    def one(request: tuple[str, dict[str, str]]) -> httpx.Response:
        source, headers = request
        with ApiClient(base_url, source_ip=source) as client:
            return client.api("sessions", headers=headers)

    with ThreadPoolExecutor(threads) as pool:
        return list(pool.map(one, requests))


@dataclass(slots=True)
class Limited:
    hosts: Hosts
    seeded: Seeded
    clients: Iterator[int]  # client address numbers no earlier test used


@pytest.fixture(scope="module")
def limited(cluster_db: Seeded, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Limited]:
    env = cluster_db.env.with_changes(**SMALL_LIMITS)
    with hosts_behind_haproxy(env, tmp_path_factory.mktemp("hosts-limited")) as hosts:
        yield Limited(hosts, cluster_db, itertools.count())


def test_a_burst_through_the_proxy_gets_exactly_the_key_limit(limited: Limited) -> None:
    [token] = issue_keys(limited.seeded.env, campaign=CAMPAIGN_A, owner=RATE_OWNERS[3], count=1)
    # Spread over addresses enough that the IP limit never rejects first.
    sources = [limited.hosts.subnet.client(next(limited.clients)) for _ in range(10)]
    before = limited.hosts.served()
    requests = [(sources[n % len(sources)], {"Authorization": f"Bearer {token}"}) for n in range(BURST)]
    responses = _concurrently(limited.hosts.proxy.url, requests, threads=40)
    assert _statuses(responses) == {200: KEY_LIMIT, 429: BURST - KEY_LIMIT}
    served = limited.hosts.served()
    assert all(served[host] > before[host] for host in served), (before, served)  # every host had its part


def test_the_ip_limit_follows_the_real_client_across_hosts(limited: Limited) -> None:
    # A key per client: each client's requests stay under the key limit.
    tokens = issue_keys(limited.seeded.env, campaign=CAMPAIGN_A, owner=RATE_OWNERS[4], count=3)
    auth = [{"Authorization": f"Bearer {token}"} for token in tokens]
    subnet = limited.hosts.subnet
    client, direct, victim = (subnet.client(next(limited.clients)) for _ in range(3))
    proxy, straight = limited.hosts.proxy.url, limited.hosts.servers[1].base_url
    # A fresh forged address on every request, spread over the hosts: still one client.
    forged = [(client, {**auth[0], "X-Forwarded-For": f"198.51.100.{n}"}) for n in range(IP_LIMIT + 20)]
    assert _statuses(_concurrently(proxy, forged, threads=10)) == {200: IP_LIMIT, 429: 20}
    # Straight to a host, naming the victim: the header is ignored, the peer counted.
    naming = [(direct, {**auth[1], "X-Forwarded-For": victim}) for _ in range(IP_LIMIT + 5)]
    assert _statuses(_concurrently(straight, naming, threads=10)) == {200: IP_LIMIT, 429: 5}
    own = [(victim, auth[2]) for _ in range(IP_LIMIT)]
    assert _statuses(_concurrently(proxy, own, threads=10)) == {200: IP_LIMIT}


@dataclass(slots=True)
class Loaded:
    hosts: Hosts
    seeded: Seeded
    probes: list[Probe]

    def load(self) -> Load:
        sources = [self.hosts.subnet.client(100 + n) for n in range(LOAD_SOURCES)]
        return Load(self.hosts.proxy.url, self.seeded.token, self.probes, clients=LOAD_CLIENTS, source_ips=sources)


@pytest.fixture(scope="module")
def loaded(cluster_db: Seeded, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Loaded]:
    with hosts_behind_haproxy(cluster_db.env, tmp_path_factory.mktemp("hosts-loaded")) as hosts:
        # The reference: one host, straight, one request at a time, before any load.
        probes = reference_probes(hosts.servers[0].base_url, cluster_db.token)
        yield Loaded(hosts, cluster_db, probes)


def test_a_host_killed_under_load_costs_at_most_its_requests_in_flight(loaded: Loaded) -> None:
    load = loaded.load()
    load.start()
    try:
        time.sleep(2.0)
        loaded.hosts.kill(1)
        killed_at = time.monotonic()
        loaded.hosts.proxy.wait_for({**loaded.hosts.all_up(), "h2": "DOWN"})
        time.sleep(2.0)
    finally:
        outcomes = load.stop()
    failed = failures(outcomes)
    in_flight = [o for o in outcomes if o.started < killed_at < o.finished]
    after = [o for o in outcomes if o.started > killed_at]
    print(f"{len(outcomes)} requests, {len(in_flight)} in flight at the kill, {len(failed)} failed")
    # Only a request the host had when it died may fail; the proxy sends the rest elsewhere.
    assert all(o.started < killed_at for o in failed), [o.describe() for o in failed]
    assert len(failed) <= len(in_flight) <= LOAD_CLIENTS, [o.describe() for o in failed]
    assert len(after) > 100 and not failures(after)
    loaded.hosts.restart(1)


def test_a_rolling_restart_under_load_costs_nothing(loaded: Loaded) -> None:
    load = loaded.load()
    load.start()
    try:
        time.sleep(1.0)
        for index in range(len(loaded.hosts.servers)):
            loaded.hosts.restart(index)
        time.sleep(1.0)
    finally:
        outcomes = load.stop()
    print(f"{len(outcomes)} requests during the rolling restart, {len(failures(outcomes))} failed")
    assert len(outcomes) > 200
    assert [o.describe() for o in failures(outcomes)] == []



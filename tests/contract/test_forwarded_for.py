"""Behind a real HAProxy, the IP limits follow the real client (contract §5, issue 12 item 0).

One host (127.a.b.11) behind HAProxy (`option forwardfor`, connecting from 127.a.b.2, the
host's only TRUSTED_PROXIES entry); clients come from addresses of their own in the same
/24. HAProxy appends the client's address as a field line of its own after any
X-Forwarded-For the client sent, so whatever a client writes there is to the left of the
entry the proxy vouches for.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.cluster.haproxy import Backend, HAProxy, running_haproxy
from tests.cluster.loopback import Subnet
from tests.contract.client import ApiClient, assert_rejected, assert_unauthorized
from tests.contract.conftest import HIGH_LIMITS, SeededDatabase
from tests.contract.server import ApiServer, ServerSpec, running_servers

pytestmark = pytest.mark.xdist_group("contract")

IP_LIMIT, FAILED_AUTH_LIMIT = 4, 2
BAD_TOKEN = "cpk_" + "b" * 12 + "_" + "B" * 43
MINUTE, TEN_MINUTES = 60, 600


@dataclass(frozen=True, slots=True)
class Proxied:
    subnet: Subnet
    host: ApiServer
    proxy: HAProxy
    token: str
    clients: Iterator[int]  # each test's clients come from addresses no other test used

    def through_proxy(self, client: int) -> ApiClient:
        return ApiClient(self.proxy.url, source_ip=self.subnet.client(client))

    def straight(self, client: int) -> ApiClient:
        return ApiClient(self.host.base_url, source_ip=self.subnet.client(client))


@pytest.fixture(scope="module")
def proxied(dedicated_db: SeededDatabase, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proxied]:
    subnet = Subnet.pick()
    workdir: Path = tmp_path_factory.mktemp("forwarded-for")
    env = dedicated_db.env.with_changes(
        **{
            **HIGH_LIMITS,
            "rate_limit_ip": f"{IP_LIMIT} per minute",
            "rate_limit_failed_auth": f"{FAILED_AUTH_LIMIT} per 10 minutes",
        },
        extra={"TRUSTED_PROXIES": subnet.proxy_source},
    )
    with running_servers([ServerSpec(env=env, workdir=workdir, host=subnet.host(0))]) as (host,):
        backend = Backend("h1", subnet.host(0), host.port)
        with running_haproxy(workdir, subnet=subnet, backends=[backend]) as proxy:
            proxy.wait_for({"h1": "UP"})
            yield Proxied(subnet, host, proxy, dedicated_db.token_a, itertools.count())


def _forged(n: int) -> dict[str, str]:
    return {"X-Forwarded-For": f"198.51.100.{n}"}


def test_a_spoofed_header_through_the_proxy_changes_nothing(proxied: Proxied) -> None:
    client = next(proxied.clients)
    with proxied.through_proxy(client) as http:
        statuses = [http.api("sessions", token=proxied.token, headers=_forged(n)).status_code for n in range(IP_LIMIT)]
        assert statuses == [200] * IP_LIMIT
        assert_rejected(http.api("sessions", token=proxied.token, headers=_forged(99)), limit=IP_LIMIT, window_s=MINUTE)


def test_the_failed_auth_block_cannot_be_dodged_with_a_spoofed_header(proxied: Proxied) -> None:
    client = next(proxied.clients)
    with proxied.through_proxy(client) as http:
        for n in range(FAILED_AUTH_LIMIT):
            assert_unauthorized(http.api("sessions", token=BAD_TOKEN, headers=_forged(n)))
        # Blocked, even with a good key and yet another forged address.
        blocked = http.api("sessions", token=proxied.token, headers=_forged(50))
        assert_rejected(blocked, limit=FAILED_AUTH_LIMIT, window_s=TEN_MINUTES)


def test_the_real_client_address_is_the_one_limited(proxied: Proxied) -> None:
    exhausted, neighbour = next(proxied.clients), next(proxied.clients)
    neighbour_address = proxied.subnet.client(neighbour)
    with proxied.through_proxy(exhausted) as http:
        for _ in range(IP_LIMIT):
            assert http.api("sessions", token=proxied.token).status_code == 200
        assert_rejected(http.api("sessions", token=proxied.token), limit=IP_LIMIT, window_s=MINUTE)
        # Naming another client's address does not borrow its budget.
        spoofed = http.api("sessions", token=proxied.token, headers={"X-Forwarded-For": neighbour_address})
        assert_rejected(spoofed, limit=IP_LIMIT, window_s=MINUTE)
    with proxied.through_proxy(neighbour) as http:
        assert [http.api("sessions", token=proxied.token).status_code for _ in range(IP_LIMIT)] == [200] * IP_LIMIT


def test_a_request_straight_to_the_host_ignores_the_header(proxied: Proxied) -> None:
    direct, victim = next(proxied.clients), next(proxied.clients)
    victim_address = proxied.subnet.client(victim)
    with proxied.straight(direct) as http:
        # Each request names the victim, and a fresh address too: the peer is counted.
        for n in range(IP_LIMIT):
            headers = {"X-Forwarded-For": f"{victim_address}, 198.51.100.{n}"}
            assert http.api("sessions", token=proxied.token, headers=headers).status_code == 200
        assert_rejected(http.api("sessions", token=proxied.token, headers=_forged(77)), limit=IP_LIMIT, window_s=MINUTE)
    # The victim's own budget is untouched.
    with proxied.through_proxy(victim) as http:
        assert [http.api("sessions", token=proxied.token).status_code for _ in range(IP_LIMIT)] == [200] * IP_LIMIT

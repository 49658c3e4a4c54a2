"""The four rate limits (contract §5), each tripped on a server with tiny limits.

One tiny-limit server per limiter storage serves every scenario: each scenario comes from
client IPs of its own (127.0.0.0/8 is all loopback) and uses keys and owners of its own,
so the scenarios cannot spend each other's budgets. (The failed-auth scenario borrows the
IP scenario's key: a request that scenario blocks never reaches the key limit, and the
one it lets through is that key's fourth and last of the window.)
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import httpx
import pytest
import redis

from tests.contract.campaign import CAMPAIGN_A, RATE_OWNERS
from tests.contract.client import ApiClient, assert_key_window, assert_rejected, assert_unauthorized, rate_headers
from tests.contract.conftest import HIGH_LIMITS, SeededDatabase
from tests.contract.redis_process import own_redis
from tests.contract.server import ApiServer, KeySpec, ServerSpec, running_server, running_servers

pytestmark = pytest.mark.xdist_group("contract")

# The IP limit is the smallest, so one key can trip it; the other scenarios spread their
# requests over several client IPs to stay under it.
IP_LIMIT, FAILED_AUTH_LIMIT, KEY_LIMIT, OWNER_LIMIT = 3, 2, 4, 6
TINY_LIMITS = {
    "rate_limit_ip": f"{IP_LIMIT} per minute",
    "rate_limit_failed_auth": f"{FAILED_AUTH_LIMIT} per 10 minutes",
    "rate_limit_key": f"{KEY_LIMIT} per minute",
    "rate_limit_owner": f"{OWNER_LIMIT} per minute",
}
MINUTE, TEN_MINUTES = 60, 600
BAD_TOKEN = "cpk_" + "a" * 12 + "_" + "A" * 43
RATE_LIMITED_GRAPHQL = b'{"errors":[{"message":"Rate limit exceeded","extensions":{"code":"RATE_LIMITED"}}]}'


@dataclass(frozen=True, slots=True)
class ScenarioKeys:
    ip: str  # also the good key of the failed-auth scenario
    key: str
    owner: tuple[str, str]  # two keys of one owner


@pytest.fixture(scope="module")
def keys(dedicated_db: SeededDatabase) -> ScenarioKeys:
    ip, key, *owner = dedicated_db.cli.create_keys(
        [KeySpec(campaign=CAMPAIGN_A, owner=owner) for owner in (*RATE_OWNERS[:2], RATE_OWNERS[2], RATE_OWNERS[2])]
    )
    return ScenarioKeys(ip=ip, key=key, owner=(owner[0], owner[1]))


@pytest.fixture(scope="module")
def tiny_servers(dedicated_db: SeededDatabase) -> Iterator[dict[str, ApiServer]]:
    """Tiny-limit servers by limiter storage: process memory, and a private, empty Redis
    (failed-auth counters of an earlier run would live on for ten minutes)."""
    env = dedicated_db.env.with_changes(**TINY_LIMITS)
    with own_redis(dedicated_db.workdir) as redis_server:
        specs = [
            ServerSpec(env=env, workdir=dedicated_db.workdir),
            ServerSpec(env=env.with_changes(redis_url=redis_server.url), workdir=dedicated_db.workdir),
        ]
        with running_servers(specs) as (memory, redis):
            yield {"memory": memory, "redis": redis}


@pytest.fixture(scope="module", params=["memory", "redis"])
def tiny(request: pytest.FixtureRequest, tiny_servers: dict[str, ApiServer]) -> ApiServer:
    return tiny_servers[request.param]


def from_ip(server: ApiServer, last_octet: int) -> ApiClient:
    """A client whose requests come from 127.0.0.<last_octet>: a client IP of its own."""
    return ApiClient(server.base_url, source_ip=f"127.0.0.{last_octet}")


class TestEachLimit:
    def test_ip_limit(self, tiny: ApiServer, keys: ScenarioKeys) -> None:
        with from_ip(tiny, 11) as client:
            for _ in range(IP_LIMIT):
                assert_key_window(client.api("sessions", token=keys.ip), limit=KEY_LIMIT)
            assert_rejected(client.api("sessions", token=keys.ip), limit=IP_LIMIT, window_s=MINUTE)
            # The IP limit comes first: a request without a key gets the 429 too.
            assert_rejected(client.api("sessions"), limit=IP_LIMIT, window_s=MINUTE)

    def test_failed_auth_limit_blocks_even_a_good_key(self, tiny: ApiServer, keys: ScenarioKeys) -> None:
        with from_ip(tiny, 12) as client:
            for _ in range(FAILED_AUTH_LIMIT):
                assert_unauthorized(client.api("sessions", token=BAD_TOKEN))
            assert_rejected(client.api("sessions", token=keys.ip), limit=FAILED_AUTH_LIMIT, window_s=TEN_MINUTES)
        # Only that IP is blocked (the key's 4th request of its window).
        with from_ip(tiny, 19) as other_ip:
            assert_key_window(other_ip.api("sessions", token=keys.ip), limit=KEY_LIMIT)

    def test_key_limit(self, tiny: ApiServer, keys: ScenarioKeys) -> None:
        remaining = []
        for last_octet in (13, 13, 14, 14):
            with from_ip(tiny, last_octet) as client:
                response = client.api("sessions", token=keys.key)
                remaining.append(assert_key_window(response, limit=KEY_LIMIT).remaining)
        assert remaining == [3, 2, 1, 0]
        with from_ip(tiny, 15) as client:
            assert_rejected(client.api("sessions/sess-a-01", token=keys.key), limit=KEY_LIMIT, window_s=MINUTE)
            response = client.post(
                "/graphql",
                json={"query": "{ sessions { data { id } } }"},
                headers={"Authorization": f"Bearer {keys.key}"},
            )
            assert (response.status_code, response.content) == (429, RATE_LIMITED_GRAPHQL)
            assert rate_headers(response).limit == KEY_LIMIT
            assert int(response.headers["retry-after"]) >= 1

    def test_owner_limit_spans_the_owner_keys(self, tiny: ApiServer, keys: ScenarioKeys) -> None:
        first_key, second_key = keys.owner
        with from_ip(tiny, 16) as first, from_ip(tiny, 17) as second:
            for _ in range(3):
                assert_key_window(first.api("sessions", token=first_key), limit=KEY_LIMIT)
                assert_key_window(second.api("sessions", token=second_key), limit=KEY_LIMIT)
        with from_ip(tiny, 18) as third:
            # Each key is within its own limit (its 4th request); the owner's 7th and 8th are not.
            assert_rejected(third.api("sessions", token=first_key), limit=OWNER_LIMIT, window_s=MINUTE)
            assert_rejected(third.api("sessions", token=second_key), limit=OWNER_LIMIT, window_s=MINUTE)


CONCURRENT_KEY_LIMIT = 25
CONCURRENT_REQUESTS = 60


def concurrent_requests(server: ApiServer, token: str, count: int) -> list[httpx.Response]:
    """`count` requests of one key, released together from as many threads and connections."""
    start = threading.Barrier(count)
    limits = httpx.Limits(max_connections=count, max_keepalive_connections=count)

    with ApiClient(server.base_url, timeout=30.0, limits=limits) as client:

        def one_request(_: int) -> httpx.Response:
            start.wait()
            return client.api("sessions", token=token, params={"limit": "1"})

        with ThreadPoolExecutor(max_workers=count) as pool:
            return list(pool.map(one_request, range(count)))


def assert_exact(responses: list[httpx.Response], *, key_limit: int, admitted: int) -> None:
    """`admitted` requests got 200, each with a count of its own; the others the key's 429."""
    statuses = Counter(response.status_code for response in responses)
    assert statuses == {200: admitted, 429: len(responses) - admitted}
    # Each admitted request saw its own count: remaining takes every value once.
    remaining = sorted(rate_headers(r).remaining for r in responses if r.status_code == 200)
    assert remaining == list(range(admitted))
    for response in responses:
        if response.status_code == 429:
            assert_rejected(response, limit=key_limit, window_s=MINUTE)


@pytest.fixture(scope="module")
def two_workers(dedicated_db: SeededDatabase, shared_redis_url: str) -> Iterator[ApiServer]:
    env = dedicated_db.env.with_changes(
        **{**HIGH_LIMITS, "rate_limit_key": f"{CONCURRENT_KEY_LIMIT} per minute"}, redis_url=shared_redis_url
    )
    with running_server(env, workdir=dedicated_db.workdir, workers=2) as server:
        yield server


def test_counts_are_exact_under_concurrency_across_workers(two_workers: ApiServer, keys: ScenarioKeys) -> None:
    # The key limit here is another limit (another counter) than the tiny servers' one.
    # Each worker meets the key for the first time: most of these requests take the two
    # stages, the rest (once their worker has verified the key) the one round trip.
    responses = concurrent_requests(two_workers, keys.key, CONCURRENT_REQUESTS)
    assert_exact(responses, key_limit=CONCURRENT_KEY_LIMIT, admitted=CONCURRENT_KEY_LIMIT)


WARM_KEY_LIMIT = 200
WARM_UP_REQUESTS_MAX = 120
WARM_KEY_OVER_LIMIT = 20  # requests of the measured burst past the key's limit


@pytest.fixture(scope="module")
def two_warm_workers(dedicated_db: SeededDatabase) -> Iterator[tuple[ApiServer, redis.Redis]]:
    """Two workers on a private redis-server, whose command counts are this test's alone;
    keys stay verified in memory for a minute, longer than the test takes."""
    with own_redis(dedicated_db.workdir) as redis_server:
        env = dedicated_db.env.with_changes(
            **{**HIGH_LIMITS, "rate_limit_key": f"{WARM_KEY_LIMIT} per minute"},
            redis_url=redis_server.url,
            key_cache_s=60,
        )
        with running_server(env, workdir=dedicated_db.workdir, workers=2) as server:
            probe = redis.Redis.from_url(redis_server.url)
            yield server, probe
            probe.close()


def evalsha_calls(probe: redis.Redis) -> int:
    return int(probe.info("commandstats").get("cmdstat_evalsha", {}).get("calls", 0))


def test_counts_are_exact_under_concurrency_with_a_warm_key(
    two_warm_workers: tuple[ApiServer, redis.Redis], keys: ScenarioKeys
) -> None:
    server, probe = two_warm_workers
    # A worker meeting the key verifies it in two stages (two EVALSHA); once verified it
    # keeps the key for a minute, one EVALSHA a request. Sequential requests, each on a new
    # connection that the kernel hands to either worker, until two of them took the two
    # stages: one cold start per worker, so both are warm whichever got which requests
    # (concurrent bursts can all land on one worker when the machine is loaded).
    warmed = cold_starts = 0
    while cold_starts < 2 and warmed < WARM_UP_REQUESTS_MAX:
        before = evalsha_calls(probe)
        with ApiClient(server.base_url) as client:
            assert client.api("sessions", token=keys.key, params={"limit": "1"}).status_code == 200
        warmed += 1
        # 1 warm; 2 on a worker's first meeting; 3 on the very first, whose EVALSHA also
        # finds the new Redis without the script (NOSCRIPT, loaded, sent again).
        cost = evalsha_calls(probe) - before
        assert cost in (1, 2, 3)
        cold_starts += cost > 1
    assert cold_starts == 2, f"only {cold_starts} worker(s) met the key in {warmed} requests"
    # The key's limit falls inside the burst, whatever the warm-up took.
    admitted = WARM_KEY_LIMIT - warmed
    burst = admitted + WARM_KEY_OVER_LIMIT
    before = evalsha_calls(probe)
    responses = concurrent_requests(server, keys.key, burst)
    round_trips = evalsha_calls(probe) - before
    print(f"{burst} concurrent requests of a warm key, 2 workers: {round_trips} EVALSHA")
    assert round_trips == burst  # one each: none went through the two stages
    assert_exact(responses, key_limit=WARM_KEY_LIMIT, admitted=admitted)

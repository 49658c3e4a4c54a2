"""The limiter behind Redis Sentinel follows a failover (issue 14, item 2).

A private primary, replica and three Sentinels (tests/cluster/sentinel.py); one server with
two workers and REDIS_URL=redis+sentinel://…/campaign. The primary is killed under a steady
load: until the Sentinels have promoted the replica every request is the exact 503 (never a
500, never longer than REDIS_TIMEOUT_S and some slack), then 200s again from the same server
processes, and the counters are exact across both workers on the new primary.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import httpx
import pytest
import redis
from limits import parse

from engine.ratelimit import STORAGE_PREFIX, Step
from tests.cluster.sentinel import HOST, SentinelGroup, sentinel_group
from tests.contract.campaign import CAMPAIGN_A, RATE_OWNERS
from tests.contract.client import ApiClient
from tests.contract.server import ApiServer, key_id_of, running_server
from tests.faults.common import UNAVAILABLE_BODY, Seeded, all_ok, assert_unavailable, issue_keys, wait_until

pytestmark = pytest.mark.xdist_group("cluster-sentinel")

REDIS_TIMEOUT_S = 1.0
# A loaded machine's scheduling on top of the timeout; a hang would be many times this.
SLACK_S = 1.5
KEY_LIMIT = 60
POLLERS, POLLING_KEYS = 4, 32


@dataclass(slots=True)
class Failover:
    group: SentinelGroup
    server: ApiServer
    seeded: Seeded
    polling_tokens: list[str]


@pytest.fixture(scope="module")
def failover(cluster_db: Seeded, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Failover]:
    workdir = tmp_path_factory.mktemp("sentinel")
    # Keys enough that the polling never meets the key limit.
    tokens = issue_keys(cluster_db.env, campaign=CAMPAIGN_A, owner=RATE_OWNERS[5], count=POLLING_KEYS)
    with sentinel_group(workdir) as group:
        env = cluster_db.env.with_changes(
            redis_url=group.url,
            rate_limit_key=f"{KEY_LIMIT} per minute",
            extra={"REDIS_TIMEOUT_S": str(REDIS_TIMEOUT_S)},
        )
        with running_server(env, workdir=workdir, workers=2) as server:
            yield Failover(group, server, cluster_db, tokens)


@dataclass(frozen=True, slots=True)
class Answer:
    at: float
    elapsed: float
    response: httpx.Response


def _poll(base_url: str, tokens: list[str], stopping: threading.Event) -> list[Answer]:
    answers = []
    with ApiClient(base_url, timeout=30) as client:
        n = 0
        while not stopping.is_set():
            started = time.monotonic()
            response = client.api("sessions", token=tokens[n % len(tokens)])
            answers.append(Answer(started, time.monotonic() - started, response))
            n += 1
            time.sleep(0.03)
    return answers


def _burst(base_url: str, token: str, count: int) -> Counter[int]:
    def one(_: int) -> int:
        with ApiClient(base_url) as client:
            return client.api("sessions", token=token).status_code

    with ThreadPoolExecutor(20) as pool:
        return Counter(pool.map(one, range(count)))


def test_a_killed_primary_is_503s_until_the_failover_then_200s_without_a_restart(failover: Failover) -> None:
    server, group = failover.server, failover.group
    pid = server.process.pid
    with ApiClient(server.base_url) as client:
        assert all_ok(client, failover.polling_tokens[0])
    stopping = threading.Event()
    with ThreadPoolExecutor(POLLERS) as pool:
        polling = [
            pool.submit(_poll, server.base_url, failover.polling_tokens[n::POLLERS], stopping) for n in range(POLLERS)
        ]
        try:
            time.sleep(0.5)
            old_primary = group.kill_primary()
            killed_at = time.monotonic()
            new_primary = group.wait_for_new_primary(old_primary)
            promoted_at = time.monotonic()
            with ApiClient(server.base_url) as client:
                wait_until(lambda: all_ok(client, failover.polling_tokens[0]), timeout=15, interval=0.2,
                           what="200s once the Sentinels name the new primary")
            time.sleep(0.5)
        finally:
            stopping.set()
        answers = [answer for running in polling for answer in running.result()]
    statuses = Counter(answer.response.status_code for answer in answers)
    slowest = max(answer.elapsed for answer in answers)
    print(f"failover {promoted_at - killed_at:.1f}s after the kill; answers {dict(statuses)}, slowest {slowest:.2f}s")
    assert set(statuses) <= {200, 503}, statuses  # never a 500 (nor anything else)
    for answer in answers:
        if answer.response.status_code == 503:
            assert_unavailable(answer.response)
    assert slowest < REDIS_TIMEOUT_S + SLACK_S, slowest
    unavailable = [answer.at for answer in answers if answer.response.content == UNAVAILABLE_BODY]
    assert unavailable and min(unavailable) >= killed_at - REDIS_TIMEOUT_S  # the outage was seen, and only then
    # The same server processes answer 200 again: nothing was restarted.
    assert server.is_running() and server.process.pid == pid
    assert new_primary != old_primary


def test_counters_stay_exact_across_workers_on_the_new_primary(failover: Failover) -> None:
    """Run after the failover: a burst over both workers gets exactly the key limit, and
    the key's counter on the promoted replica holds every request."""
    [token] = issue_keys(failover.seeded.env, campaign=CAMPAIGN_A, owner=RATE_OWNERS[0], count=1)
    assert _burst(failover.server.base_url, token, 2 * KEY_LIMIT) == {200: KEY_LIMIT, 429: KEY_LIMIT}
    counter = Step.of("key", parse(f"{KEY_LIMIT} per minute"), key_id_of(token)).key
    with redis.Redis(host=HOST, port=failover.group.primary_port(), socket_timeout=2) as primary:
        assert int(primary.get(f"{STORAGE_PREFIX}:{counter}") or 0) == 2 * KEY_LIMIT

"""The guard's two ways through the limits give the same answers, in-process.

A key verified less than KEY_CACHE_S ago is counted in one limiter round trip
(`RateLimits.admit_request`); with KEY_CACHE_S=0 every request takes the two stages
around key verification. Each scenario below trips one limit and is sent twice, to a
fresh app of each kind, on process memory and on a private Redis (emptied between runs):
statuses, bodies, rate headers and the stored counters must be the same, and the warm
app must have used the one round trip for every request after the first.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import redis

from engine.db import Database
from engine.keys import create_api_key
from engine.ratelimit import RateLimits
from engine.settings import Settings
from rest.app import create_app
from rest.runtime import Runtime
from tests.conftest import TEST_PEPPER
from tests.contract.redis_process import RedisProcess, own_redis
from tests.databases import sqlite_database
from tests.factories import add_campaign, add_session

PREFIX = "/api/public/v1"
IP_LIMIT, FAILED_AUTH_LIMIT, KEY_LIMIT, OWNER_LIMIT = 3, 2, 4, 6
# Every request comes through this proxy, which names the client IP in X-Forwarded-For.
PROXY = "192.0.2.1"
BAD_TOKEN = "cpk_" + "a" * 12 + "_" + "A" * 43
RATE_HEADERS = ("x-ratelimit-limit", "x-ratelimit-remaining")

# (client IP, key name or "bad") of each request; each scenario ends with its 429.
SCENARIOS: dict[str, list[tuple[str, str]]] = {
    "ip": [("10.0.0.1", "ip")] * (IP_LIMIT + 1),
    # The key is verified from another IP first, so the blocked IP's good key is warm.
    "failed_auth": [("10.0.0.3", "failed_auth")] + [("10.0.0.2", "bad")] * FAILED_AUTH_LIMIT
    + [("10.0.0.2", "failed_auth")],
    "key": [("10.0.0.4", "key"), ("10.0.0.4", "key"), ("10.0.0.5", "key"), ("10.0.0.5", "key"), ("10.0.0.6", "key")],
    # Two keys of one owner, three requests each, then the owner's seventh.
    "owner": [("10.0.0.7", "owner_1"), ("10.0.0.7", "owner_2"), ("10.0.0.7", "owner_1"), ("10.0.0.8", "owner_2"),
              ("10.0.0.8", "owner_1"), ("10.0.0.8", "owner_2"), ("10.0.0.9", "owner_1")],
}  # fmt: skip
# The counters each scenario reads back: (limit, client IP or key name).
COUNTERS: dict[str, list[tuple[str, str]]] = {
    "ip": [("ip", "10.0.0.1"), ("key", "ip"), ("owner", "ip")],
    "failed_auth": [("ip", "10.0.0.2"), ("failed_auth", "10.0.0.2"), ("key", "failed_auth"), ("owner", "failed_auth")],
    "key": [("ip", "10.0.0.6"), ("key", "key"), ("owner", "key")],
    "owner": [("ip", "10.0.0.9"), ("key", "owner_1"), ("key", "owner_2"), ("owner", "owner_1")],
}
EXPECTED_COUNTERS = {
    # The IP's 4th request is rejected before the key: key and owner stay at 3.
    "ip": [IP_LIMIT + 1, IP_LIMIT, IP_LIMIT],
    # The blocked request counts its IP only.
    "failed_auth": [FAILED_AUTH_LIMIT + 1, FAILED_AUTH_LIMIT, 1, 1],
    # The key's 5th request is rejected before the owner: the owner stays at 4.
    "key": [1, KEY_LIMIT + 1, KEY_LIMIT],
    "owner": [1, 4, 3, OWNER_LIMIT + 1],
}
EXPECTED_STATUSES = {
    "ip": [200] * IP_LIMIT + [429],
    "failed_auth": [200] + [401] * FAILED_AUTH_LIMIT + [429],
    "key": [200] * KEY_LIMIT + [429],
    "owner": [200] * OWNER_LIMIT + [429],
}


@dataclass(frozen=True, slots=True)
class Keys:
    database_url: str
    tokens: dict[str, str]  # key name -> token
    owners: dict[str, str]  # key name -> owner id

    def identity(self, limit: str, who: str) -> str:
        """Whose counter `who` (a client IP or a key name) names for `limit`."""
        if limit == "key":
            return self.tokens[who][4:16]
        if limit == "owner":
            return self.owners[who]
        return who


@pytest.fixture(scope="module")
def database_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with sqlite_database(tmp_path_factory.mktemp("guard-limits")) as url:
        yield url


@pytest.fixture(scope="module")
async def keys(database_url: str) -> Keys:
    database = Database(settings(database_url, redis_url=None, key_cache_s=0))
    tokens, owners = {}, {}
    try:
        async with database.session() as db:
            for names in (["ip"], ["failed_auth"], ["key"], ["owner_1", "owner_2"]):
                campaign = await add_campaign(db)
                await add_session(db, campaign_id=campaign.id)
                for name in names:  # the keys of one list share their campaign's owner
                    issued = await create_api_key(
                        db, campaign_id=campaign.id, owner_id=campaign.owner_id, label=name, pepper=TEST_PEPPER.encode()
                    )
                    tokens[name], owners[name] = issued.token, campaign.owner_id
    finally:
        await database.dispose()
    return Keys(database_url=database_url, tokens=tokens, owners=owners)


@pytest.fixture(scope="module")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisProcess]:
    with own_redis(tmp_path_factory.mktemp("guard-limits-redis")) as server:
        yield server


@pytest.fixture(params=["memory", "redis"])
def storage(request: pytest.FixtureRequest) -> str | None:
    """The limiter's REDIS_URL: None (process memory) or the module's own redis-server."""
    if request.param == "memory":
        return None
    server: RedisProcess = request.getfixturevalue("redis_server")
    return server.url


def settings(database_url: str, *, redis_url: str | None, key_cache_s: float) -> Settings:
    return Settings(  # type: ignore[call-arg]
        _env_file=None,
        database_url=database_url,
        api_key_pepper=TEST_PEPPER,
        redis_url=redis_url,
        key_cache_s=key_cache_s,
        rate_limit_ip=f"{IP_LIMIT} per minute",
        rate_limit_failed_auth=f"{FAILED_AUTH_LIMIT} per 10 minutes",
        rate_limit_key=f"{KEY_LIMIT} per minute",
        rate_limit_owner=f"{OWNER_LIMIT} per minute",
        trusted_proxies=[f"{PROXY}/32"],
        metrics_enabled=False,
        log_level="WARNING",
    )


@dataclass(frozen=True, slots=True)
class Answer:
    status: int
    body: bytes
    headers: dict[str, str]  # the rate headers whose values do not depend on the clock
    reset_in: int | None  # X-RateLimit-Reset, seconds from the request
    retry_after: int | None
    key_id: str | None  # of the access log line
    fresh: bool  # whether the key was verified in memory: the one-trip path
    evalsha: int | None  # limiter round trips on Redis


@dataclass(frozen=True, slots=True)
class Run:
    answers: list[Answer]
    counters: list[int]


async def stored(limits: RateLimits, limit: str, identity: str) -> int:
    return await limits.stored_count(limit, identity)


def access_line(caplog: pytest.LogCaptureFixture) -> logging.LogRecord:
    [record] = [record for record in caplog.records if record.name == "campaign_api.access"]
    return record


def evalsha_calls(probe: redis.Redis | None) -> int | None:
    if probe is None:
        return None
    return int(probe.info("commandstats").get("cmdstat_evalsha", {}).get("calls", 0))


@pytest.fixture
async def run(keys: Keys, storage: str | None, caplog: pytest.LogCaptureFixture) -> AsyncIterator[Any]:
    probe = redis.Redis.from_url(storage) if storage else None
    caplog.set_level(logging.INFO, logger="campaign_api.access")

    async def send(scenario: str, *, key_cache_s: float) -> Run:
        if probe is not None:
            probe.flushdb()  # the test's own redis-server: every run starts from no counter
        app = create_app(settings(keys.database_url, redis_url=storage, key_cache_s=key_cache_s))
        runtime: Runtime = app.state.runtime
        transport = httpx.ASGITransport(app=app, client=(PROXY, 40000))
        answers = []
        try:
            async with httpx.AsyncClient(transport=transport, base_url="http://guard.test") as client:
                for ip, name in SCENARIOS[scenario]:
                    token = BAD_TOKEN if name == "bad" else keys.tokens[name]
                    fresh = runtime.guard.verifier.fresh(token) is not None
                    before, now = evalsha_calls(probe), time.time()
                    caplog.clear()
                    response = await client.get(
                        f"{PREFIX}/sessions",
                        headers={"Authorization": f"Bearer {token}", "X-Forwarded-For": ip},
                    )
                    after = evalsha_calls(probe)
                    reset = response.headers.get("x-ratelimit-reset")
                    retry_after = response.headers.get("retry-after")
                    answers.append(
                        Answer(
                            status=response.status_code,
                            body=response.content if response.status_code != 200 else b"",
                            headers={name: response.headers[name] for name in RATE_HEADERS if name in response.headers},
                            reset_in=None if reset is None else int(reset) - int(now),
                            retry_after=None if retry_after is None else int(retry_after),
                            key_id=getattr(access_line(caplog), "key_id", None),
                            fresh=fresh,
                            evalsha=None if before is None or after is None else after - before,
                        )
                    )
            counters = [
                await stored(runtime.limits, limit, keys.identity(limit, who)) for limit, who in COUNTERS[scenario]
            ]
        finally:
            await runtime.database.dispose()
            await runtime.limits.close()
        return Run(answers=answers, counters=counters)

    yield send
    if probe is not None:
        probe.close()


def _clockless(answers: list[Answer]) -> list[tuple[object, ...]]:
    return [(a.status, a.body, a.headers, a.retry_after is None, a.reset_in is None, a.key_id) for a in answers]


@pytest.mark.parametrize("scenario", list(SCENARIOS))
async def test_one_trip_answers_and_counts_like_two_stages(run: Any, storage: str | None, scenario: str) -> None:
    cold: Run = await run(scenario, key_cache_s=0)
    warm: Run = await run(scenario, key_cache_s=60)
    print(f"[{'redis' if storage else 'memory'}] {scenario}: statuses {[a.status for a in warm.answers]},"
          f" limiter round trips cold {[a.evalsha for a in cold.answers]} warm {[a.evalsha for a in warm.answers]},"
          f" counters {warm.counters}")  # fmt: skip

    # The paths taken: never the one trip with KEY_CACHE_S=0; always, with a good key
    # verified before, otherwise.
    assert not any(answer.fresh for answer in cold.answers)
    names = [name for _ip, name in SCENARIOS[scenario]]
    assert [a.fresh for a in warm.answers] == [name != "bad" and name in names[:i] for i, name in enumerate(names)]
    if storage:
        # The script is loaded by the first request, so a fresh key's one trip is one EVALSHA.
        assert [a.evalsha for a in warm.answers if a.fresh] == [1] * sum(a.fresh for a in warm.answers)
        # (Cold requests cost two, or one when the IP stage rejects, plus the scripts'
        # first loads: tests/perf/test_round_trips.py counts those exactly.)

    assert [a.status for a in warm.answers] == EXPECTED_STATUSES[scenario]
    assert _clockless(warm.answers) == _clockless(cold.answers)
    for warm_answer, cold_answer in zip(warm.answers, cold.answers, strict=True):
        # The reset times (and so Retry-After) of the same window: equal up to the clock
        # moving between the two runs.
        for warm_value, cold_value in ((warm_answer.reset_in, cold_answer.reset_in),
                                       (warm_answer.retry_after, cold_answer.retry_after)):  # fmt: skip
            assert warm_value is None or cold_value is None or abs(warm_value - cold_value) <= 2
    assert warm.counters == cold.counters == EXPECTED_COUNTERS[scenario]

    # The key id is logged once the key is verified and its limits reached: not for the
    # IP's limits, even though the one trip knew the key before counting anything.
    rejected = warm.answers[-1]
    assert all(answer.key_id is not None for answer in warm.answers if answer.status == 200)
    assert (rejected.key_id is not None) == (scenario in ("key", "owner"))
    window_s = 600 if scenario == "failed_auth" else 60
    limit = {"ip": IP_LIMIT, "failed_auth": FAILED_AUTH_LIMIT, "key": KEY_LIMIT, "owner": OWNER_LIMIT}[scenario]
    assert rejected.headers == {"x-ratelimit-limit": str(limit), "x-ratelimit-remaining": "0"}
    # Whole seconds to the window's end, which is itself rounded up: one more at most.
    assert rejected.retry_after is not None and window_s - 60 < rejected.retry_after <= window_s + 1

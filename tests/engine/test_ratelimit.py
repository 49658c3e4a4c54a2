"""The four limits and their stages, on process memory, on the real Redis, and on a real Redis
found through Sentinel (`redis+sentinel://`)."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Iterator

import pytest
import redis
from sqlalchemy.engine import make_url

from engine.errors import ServiceUnavailable
from engine.ratelimit import STORAGE_PREFIX, RateLimitExceeded, RateLimits, RateWindow
from engine.settings import Settings
from tests.cluster.sentinel import sentinel_group
from tests.services import REDIS_URL, require_service


@pytest.fixture(scope="module")
def sentinel_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A private Redis behind one Sentinel of its own: REDIS_URL=redis+sentinel://…"""
    with sentinel_group(tmp_path_factory.mktemp("sentinel"), replicas=0, sentinels=1, quorum=1) as group:
        yield group.url


def shared_redis_url() -> str:
    parsed = make_url(REDIS_URL.replace("redis://", "redis+x://"))
    require_service("Redis", parsed.host or "127.0.0.1", parsed.port or 6379)
    return REDIS_URL


@pytest.fixture(params=["memory", "redis", "sentinel"])
async def limits(request: pytest.FixtureRequest) -> AsyncIterator[RateLimits]:
    redis_url = None
    if request.param == "redis":
        redis_url = shared_redis_url()
    elif request.param == "sentinel":
        redis_url = request.getfixturevalue("sentinel_url")
    settings = Settings(  # type: ignore[call-arg]
        _env_file=None,
        redis_url=redis_url,
        rate_limit_ip="5 per minute",
        rate_limit_failed_auth="2 per 10 minutes",
        rate_limit_key="3 per minute",
        rate_limit_owner="4 per minute",
    )
    limits = RateLimits(settings)
    yield limits
    await limits.close()


def identity() -> str:
    # Counters live in the shared Redis: every test uses identities nobody else uses.
    return uuid.uuid4().hex


async def outcomes_of(calls: int, admit: object) -> list[str | RateWindow]:
    results: list[str | RateWindow] = []
    for _ in range(calls):
        try:
            window = await admit()  # type: ignore[operator]
            results.append(window if isinstance(window, RateWindow) else "ok")
        except RateLimitExceeded as exc:
            results.append(exc.limit)
    return results


class TestClientStage:
    async def test_ip_limit_rejects_after_its_amount(self, limits: RateLimits) -> None:
        ip = identity()
        assert await outcomes_of(7, lambda: limits.admit_client(ip)) == ["ok"] * 5 + ["ip", "ip"]

    async def test_failed_authentications_block_the_ip(self, limits: RateLimits) -> None:
        ip = identity()
        await limits.admit_client(ip)
        await limits.record_failed_auth(ip)
        await limits.admit_client(ip)  # one failure is below the limit of two
        await limits.record_failed_auth(ip)
        with pytest.raises(RateLimitExceeded) as rejected:
            await limits.admit_client(ip)
        assert rejected.value.limit == "failed_auth"
        assert (rejected.value.window.limit, rejected.value.window.remaining) == (2, 0)
        # The window of the failed-auth limit is ten minutes long.
        assert 540 < rejected.value.window.reset_at - time.time() <= 601

    async def test_equal_rates_do_not_share_a_counter(self) -> None:
        # The IP and failed-auth limits both count per IP; configured alike, they must
        # still count apart: good requests are not failed authentications.
        settings = Settings(  # type: ignore[call-arg]
            _env_file=None, rate_limit_ip="3 per minute", rate_limit_failed_auth="3 per minute"
        )
        limits = RateLimits(settings)
        ip = identity()
        for _ in range(3):
            await limits.admit_client(ip)
        with pytest.raises(RateLimitExceeded) as rejected:
            await limits.admit_client(ip)
        assert rejected.value.limit == "ip"

    async def test_other_ips_are_not_affected(self, limits: RateLimits) -> None:
        blocked, other = identity(), identity()
        await outcomes_of(6, lambda: limits.admit_client(blocked))
        await limits.admit_client(other)


class TestKeyStage:
    async def test_key_window_counts_down(self, limits: RateLimits) -> None:
        key, owner = identity(), identity()
        windows = await outcomes_of(4, lambda: limits.admit_key(key_id=key, owner_id=owner))
        assert [w.remaining for w in windows[:3] if isinstance(w, RateWindow)] == [2, 1, 0]
        assert windows[3] == "key"
        first = windows[0]
        assert isinstance(first, RateWindow) and first.limit == 3
        assert 0 < first.reset_at - time.time() <= 61

    async def test_owner_limit_spans_keys_and_is_not_counted_for_rejected_keys(self, limits: RateLimits) -> None:
        owner, first_key, second_key = identity(), identity(), identity()
        # Three admitted and two rejected by the key limit: the owner has counted three.
        first = await outcomes_of(5, lambda: limits.admit_key(key_id=first_key, owner_id=owner))
        assert first[3:] == ["key", "key"]
        second = await outcomes_of(2, lambda: limits.admit_key(key_id=second_key, owner_id=owner))
        assert isinstance(second[0], RateWindow) and second[1] == "owner"

    async def test_rejection_reports_the_rejecting_window(self, limits: RateLimits) -> None:
        owner = identity()
        for _ in range(4):
            await limits.admit_key(key_id=identity(), owner_id=owner)
        with pytest.raises(RateLimitExceeded) as rejected:
            await limits.admit_key(key_id=identity(), owner_id=owner)
        assert (rejected.value.limit, rejected.value.window.limit, rejected.value.window.remaining) == ("owner", 4, 0)
        assert rejected.value.window.retry_after(time.time()) >= 1


class TestConcurrency:
    async def test_concurrent_admissions_are_exact(self, limits: RateLimits) -> None:
        key, owner = identity(), identity()

        async def attempt() -> bool:
            try:
                await limits.admit_key(key_id=key, owner_id=owner)
            except RateLimitExceeded:
                return False
            return True

        results = await asyncio.gather(*(attempt() for _ in range(20)))
        assert sum(results) == 3


class TestWindowEnds:
    async def test_every_response_of_a_window_reports_its_end(self, limits: RateLimits) -> None:
        key, owner = identity(), identity()
        before = time.time()
        windows = await outcomes_of(3, lambda: limits.admit_key(key_id=key, owner_id=owner))
        resets = {w.reset_at for w in windows if isinstance(w, RateWindow)}
        assert len(resets) == 1
        # Never before the minute is over, and at most the second that completes it.
        assert before + 60 <= resets.pop() <= time.time() + 61

    async def test_redis_counters_expire_on_the_reported_second(self) -> None:
        # A window ending between two seconds was reported as either, depending on the
        # round trip; every counter the limiter sets now ends on a whole second.
        limits = RateLimits(Settings(_env_file=None, redis_url=shared_redis_url()))  # type: ignore[call-arg]
        inspector = redis.Redis.from_url(REDIS_URL)
        ip, key, owner = identity(), identity(), identity()
        try:
            window = await limits.admit_request(ip, key_id=key, owner_id=owner)
            await limits.record_failed_auth(ip)
            items = {"ip": limits.ip, "failed_auth": limits.failed_auth, "key": limits.key, "owner": limits.owner}
            who = {"ip": ip, "failed_auth": ip, "key": key, "owner": owner}
            ends = {
                limit: inspector.pexpiretime(f"{STORAGE_PREFIX}:{item.key_for(f'{limit}/{who[limit]}')}")
                for limit, item in items.items()
            }
            assert all(end > 0 and end % 1000 == 0 for end in ends.values()), ends
            assert ends["key"] == window.reset_at * 1000
        finally:
            inspector.close()
            await limits.close()


# --- one trip: all four steps in one storage operation --------------------------------

PATHS = ("two_stages", "one_trip")


@pytest.fixture(params=PATHS)
def path(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def admit(limits: RateLimits, path: str, ip: str, key: str, owner: str) -> RateWindow:
    """A verified request through the given path: the guard's two stages around key
    verification (a cache miss), or admit_request (a key verified without I/O)."""
    if path == "one_trip":
        return await limits.admit_request(ip, key_id=key, owner_id=owner)
    await limits.admit_client(ip)
    return await limits.admit_key(key_id=key, owner_id=owner)


async def counter(limits: RateLimits, limit: str, who: str) -> int:
    """The stored value of one counter, as the limiter reads it (without counting)."""
    return await limits.stored_count(limit, who)


async def counters(limits: RateLimits, ip: str, key: str, owner: str) -> dict[str, int]:
    who = {"ip": ip, "failed_auth": ip, "key": key, "owner": owner}
    return {limit: await counter(limits, limit, identity) for limit, identity in who.items()}


async def rejection(limits: RateLimits, path: str, ip: str, key: str, owner: str) -> RateLimitExceeded:
    with pytest.raises(RateLimitExceeded) as rejected:
        await admit(limits, path, ip, key, owner)
    return rejected.value


class TestEachRejectionOnBothPaths:
    """Each step rejects alike through both paths, and nothing after it is counted."""

    async def test_ip_over_its_limit_leaves_key_and_owner_uncounted(self, limits: RateLimits, path: str) -> None:
        ip, key, owner = identity(), identity(), identity()
        for _ in range(5):
            await admit(limits, path, ip, identity(), identity())
        rejected = await rejection(limits, path, ip, key, owner)
        assert (rejected.limit, rejected.window.limit, rejected.window.remaining) == ("ip", 5, 0)
        assert 0 < rejected.window.reset_at - time.time() <= 61
        assert await counters(limits, ip, key, owner) == {"ip": 6, "failed_auth": 0, "key": 0, "owner": 0}

    async def test_failed_authentications_block_before_the_key(self, limits: RateLimits, path: str) -> None:
        ip, key, owner = identity(), identity(), identity()
        await admit(limits, path, ip, key, owner)
        await limits.record_failed_auth(ip)
        await limits.record_failed_auth(ip)
        rejected = await rejection(limits, path, ip, key, owner)
        assert (rejected.limit, rejected.window.limit, rejected.window.remaining) == ("failed_auth", 2, 0)
        assert 540 < rejected.window.reset_at - time.time() <= 601
        assert await counters(limits, ip, key, owner) == {"ip": 2, "failed_auth": 2, "key": 1, "owner": 1}

    async def test_key_over_its_limit_leaves_the_owner_uncounted(self, limits: RateLimits, path: str) -> None:
        key, owner = identity(), identity()
        windows = [await admit(limits, path, identity(), key, owner) for _ in range(3)]
        assert [(window.limit, window.remaining) for window in windows] == [(3, 2), (3, 1), (3, 0)]
        ip = identity()
        rejected = await rejection(limits, path, ip, key, owner)
        assert (rejected.limit, rejected.window.limit, rejected.window.remaining) == ("key", 3, 0)
        assert await counters(limits, ip, key, owner) == {"ip": 1, "failed_auth": 0, "key": 4, "owner": 3}

    async def test_owner_over_its_limit(self, limits: RateLimits, path: str) -> None:
        owner = identity()
        for _ in range(4):
            await admit(limits, path, identity(), identity(), owner)
        ip, key = identity(), identity()
        rejected = await rejection(limits, path, ip, key, owner)
        assert (rejected.limit, rejected.window.limit, rejected.window.remaining) == ("owner", 4, 0)
        assert await counters(limits, ip, key, owner) == {"ip": 1, "failed_auth": 0, "key": 1, "owner": 5}


class TestOneTripMatchesTwoStages:
    async def test_same_outcomes_windows_and_counters_over_a_mixed_sequence(self, limits: RateLimits) -> None:
        # One script of requests, replayed on fresh identities through each path: two IPs,
        # two keys of one owner, failed authentications in between; every limit trips.
        script = [("a", "k1"), ("a", "k1"), ("b", "k2"), ("a", "k1"), ("a", "fail"), ("b", "k1"),
                  ("b", "k2"), ("a", "k2"), ("b", "k2"), ("a", "fail"), ("a", "k1"), ("b", "k2"),
                  ("b", "k1"), ("b", "k2"), ("a", "k2")]  # fmt: skip
        seen: dict[str, tuple[list[object], dict[str, int]]] = {}
        for path in PATHS:
            ips = {"a": identity(), "b": identity()}
            keys, owner = {"k1": identity(), "k2": identity()}, identity()
            outcomes: list[object] = []
            for ip, key in script:
                if key == "fail":
                    await limits.record_failed_auth(ips[ip])
                    continue
                try:
                    window = await admit(limits, path, ips[ip], keys[key], owner)
                    outcomes.append(("ok", window.limit, window.remaining))
                except RateLimitExceeded as exc:
                    outcomes.append((exc.limit, exc.window.limit, exc.window.remaining))
            stored = {
                f"{limit} of {name}": await counter(limits, limit, who)
                for limit, names in (("ip", ips), ("failed_auth", ips), ("key", keys))
                for name, who in names.items()
            }
            stored["owner"] = await counter(limits, "owner", owner)
            seen[path] = (outcomes, stored)
        assert seen["one_trip"] == seen["two_stages"]
        outcomes, _ = seen["one_trip"]
        assert {outcome[0] for outcome in outcomes} == {"ok", "ip", "failed_auth", "key", "owner"}  # type: ignore[index]


class TestOneTripConcurrency:
    async def test_concurrent_requests_of_one_key_are_exact(self, limits: RateLimits) -> None:
        key, owner = identity(), identity()

        async def attempt() -> int | str:
            try:
                return (await limits.admit_request(identity(), key_id=key, owner_id=owner)).remaining
            except RateLimitExceeded as exc:
                return exc.limit

        results = await asyncio.gather(*(attempt() for _ in range(20)))
        assert sorted(result for result in results if isinstance(result, int)) == [0, 1, 2]
        assert results.count("key") == 17
        assert (await counter(limits, "key", key), await counter(limits, "owner", owner)) == (20, 3)

    async def test_concurrent_requests_of_one_ip_stop_at_each_limit(self, limits: RateLimits) -> None:
        ip, key, owner = identity(), identity(), identity()

        async def attempt() -> str:
            try:
                await limits.admit_request(ip, key_id=key, owner_id=owner)
            except RateLimitExceeded as exc:
                return exc.limit
            return "ok"

        results = await asyncio.gather(*(attempt() for _ in range(20)))
        # Five pass the IP limit; of those the key admits three.
        assert sorted(results) == sorted(["ok"] * 3 + ["key"] * 2 + ["ip"] * 15)
        assert await counters(limits, ip, key, owner) == {"ip": 20, "failed_auth": 0, "key": 5, "owner": 3}


class TestUnavailableStorage:
    async def test_unreachable_redis_is_service_unavailable(self) -> None:
        # Nothing listens on port 1: every stage fails closed with one error type.
        settings = Settings(_env_file=None, redis_url="redis://127.0.0.1:1/0", redis_timeout_s=0.2)  # type: ignore[call-arg]
        limits = RateLimits(settings)
        with pytest.raises(ServiceUnavailable):
            await limits.admit_client("10.0.0.1")
        with pytest.raises(ServiceUnavailable):
            await limits.admit_key(key_id="k", owner_id="o")
        with pytest.raises(ServiceUnavailable):
            await limits.admit_request("10.0.0.1", key_id="k", owner_id="o")
        with pytest.raises(ServiceUnavailable):
            await limits.record_failed_auth("10.0.0.1")
        assert await limits.ping() is False
        await limits.close()

"""The four limits and their stages, on process memory and on the real Redis."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator

import pytest
from sqlalchemy.engine import make_url

from engine.errors import ServiceUnavailable
from engine.ratelimit import RateLimitExceeded, RateLimits, RateWindow
from engine.settings import Settings
from tests.services import REDIS_URL, require_service


@pytest.fixture(params=["memory", "redis"])
async def limits(request: pytest.FixtureRequest) -> AsyncIterator[RateLimits]:
    redis_url = None
    if request.param == "redis":
        parsed = make_url(REDIS_URL.replace("redis://", "redis+x://"))
        require_service("Redis", parsed.host or "127.0.0.1", parsed.port or 6379)
        redis_url = REDIS_URL
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
            await limits.record_failed_auth("10.0.0.1")
        assert await limits.ping() is False
        await limits.close()

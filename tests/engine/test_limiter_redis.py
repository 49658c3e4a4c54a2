"""REDIS_URL made into the limiter's client (engine/limiter_redis.py): the URLs it takes, the
ones it refuses and why (never echoing a password), the pool each gets. The client's
traffic through a real Sentinel is in tests/engine/test_ratelimit.py; a failover in
tests/cluster/test_sentinel.py."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable

import pytest
from redis.asyncio.connection import BlockingConnectionPool
from redis.asyncio.sentinel import SentinelConnectionPool

from engine.limiter_redis import InvalidRedisUrl, LimiterRedis, SentinelUrl, limiter_redis, parse_sentinel_url


class TestSentinelUrls:
    def test_the_limits_notation(self) -> None:
        assert parse_sentinel_url("redis+sentinel://10.0.0.1:26380,sentinel-b:26381/campaign") == SentinelUrl(
            sentinels=(("10.0.0.1", 26380), ("sentinel-b", 26381)), service_name="campaign"
        )

    def test_a_port_left_out_is_sentinels_own(self) -> None:
        assert parse_sentinel_url("redis+sentinel://a,b:5000/s").sentinels == (("a", 26379), ("b", 5000))

    def test_credentials_are_decoded(self) -> None:
        parsed = parse_sentinel_url("redis+sentinel://user:p%40ss@a:1/svc%2Done")
        assert (parsed.username, parsed.password, parsed.service_name) == ("user", "p@ss", "svc-one")
        assert "p@ss" not in repr(parsed)

    def test_a_password_alone(self) -> None:
        parsed = parse_sentinel_url("redis+sentinel://:secret@a:1/svc")
        assert (parsed.username, parsed.password) == (None, "secret")

    def test_ipv6_sentinels(self) -> None:
        assert parse_sentinel_url("redis+sentinel://[::1]:26379/s").sentinels == (("::1", 26379),)

    @pytest.mark.parametrize(
        ("url", "reason"),
        [
            ("redis+sentinel://a:1", "service name"),
            ("redis+sentinel://a:1/", "service name"),
            ("redis+sentinel://a:1/svc/extra", "service name"),
            ("redis+sentinel://a:1/svc?db=2", "no query"),
            ("redis+sentinel://a:notaport/svc", "bad Sentinel address 'a:notaport'"),
            ("redis+sentinel://a:1,,b:2/svc", "bad Sentinel address ''"),
            ("redis+sentinel:///svc", "bad Sentinel address ''"),
        ],
    )
    def test_what_is_refused_and_why(self, url: str, reason: str) -> None:
        with pytest.raises(InvalidRedisUrl, match=re.escape(reason)):
            parse_sentinel_url(url)


@pytest.fixture
async def built() -> AsyncIterator[Callable[[str], LimiterRedis]]:
    made: list[LimiterRedis] = []

    def build(url: str) -> LimiterRedis:
        made.append(limiter_redis(url, pool_size=7, timeout_s=0.25))
        return made[-1]

    yield build
    for redis in made:
        await redis.aclose()


class TestClients:
    async def test_one_server_gets_a_blocking_pool(self, built: Callable[[str], LimiterRedis]) -> None:
        pool = built("redis://:secret@127.0.0.1:6390/3").pool
        assert isinstance(pool, BlockingConnectionPool) and not isinstance(pool, SentinelConnectionPool)
        assert (pool.max_connections, pool.timeout) == (7, 0.25)
        kwargs = pool.connection_kwargs
        assert (kwargs["port"], kwargs["db"], kwargs["socket_timeout"], kwargs["socket_connect_timeout"]) == (
            6390, 3, 0.25, 0.25
        )

    async def test_sentinel_gets_a_blocking_pool_that_asks_for_the_primary(
        self, built: Callable[[str], LimiterRedis]
    ) -> None:
        redis = built("redis+sentinel://:secret@127.0.0.1:1,127.0.0.1:2/campaign")
        pool = redis.pool
        assert isinstance(pool, SentinelConnectionPool) and isinstance(pool, BlockingConnectionPool)
        assert (pool.max_connections, pool.timeout, pool.service_name, pool.is_master) == (7, 0.25, "campaign", True)
        assert pool.connection_kwargs["password"] == "secret"
        assert redis.sentinel is not None
        for sentinel in redis.sentinel.sentinels:
            kwargs = sentinel.connection_pool.connection_kwargs
            assert (kwargs["socket_timeout"], kwargs["password"]) == (0.25, "secret")
            assert kwargs["retry"].get_retries() == 0  # the next Sentinel is asked instead

    @pytest.mark.parametrize(
        ("url", "reason"),
        [
            ("redis+cluster://:secret@127.0.0.1:7000", "Redis Cluster is not supported"),
            ("http://:secret@127.0.0.1:6379", "unsupported scheme 'http'"),
            ("127.0.0.1:6379", "unsupported scheme '(none)'"),
            ("redis://:secret@127.0.0.1:notaport/0", "Port could not be cast"),
        ],
    )
    def test_what_is_refused_and_why(self, url: str, reason: str) -> None:
        with pytest.raises(InvalidRedisUrl, match=re.escape(reason)) as refused:
            limiter_redis(url, pool_size=1, timeout_s=1)
        assert "secret" not in str(refused.value)

"""The limiter's Redis: REDIS_URL made into a client, on one server or behind Sentinel.

- `redis://`, `rediss://`, `unix://`: one Redis server (redis-py's URL notation).
- `redis+sentinel://[[user]:password@]host[:port][,host[:port]...]/service_name`: the
  primary that the Sentinels at those addresses name for `service_name`, in the notation
  of the `limits` library (a port left out is Sentinel's own, 26379; the user and password
  are sent to the Sentinels and to the Redis servers alike). A new connection asks the
  Sentinels which server is the primary, so after a failover the next connections go to
  the new one; until the Sentinels have agreed on it, connecting fails (the 503 of a
  limiter storage that cannot be reached) rather than waiting.
- `redis+cluster://` is refused: each request's limits are one script over the counters of
  its client IP, key and owner, which Redis Cluster would spread over its shards
  (docs/deployment.md says why hash tags do not help).

Either way the connections come from a pool that waits (at most the timeout) for a free
connection instead of raising once all are busy, which under load would be false 503s,
and every socket operation gives up after the timeout.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlsplit

import redis.asyncio
from redis.asyncio.connection import BlockingConnectionPool
from redis.asyncio.retry import Retry
from redis.asyncio.sentinel import MasterNotFoundError, Sentinel, SentinelConnectionPool
from redis.backoff import NoBackoff

SENTINEL_SCHEME = "redis+sentinel"
SENTINEL_PORT = 26379
SERVER_SCHEMES = ("redis", "rediss", "unix")
CLUSTER_SCHEMES = ("redis+cluster", "rediss+cluster")
_FORM = f"{SENTINEL_SCHEME}://[[user]:password@]host[:port][,host[:port]...]/service_name"


class InvalidRedisUrl(ValueError):
    """REDIS_URL cannot be used; the message says why and never contains a password."""


@dataclass(frozen=True, slots=True)
class SentinelUrl:
    sentinels: tuple[tuple[str, int], ...]
    service_name: str
    username: str | None = None
    password: str | None = field(default=None, repr=False)


class _BlockingSentinelPool(SentinelConnectionPool, BlockingConnectionPool):
    """Sentinel's pool (connections to the primary it names, idle ones dropped when that
    changes) with BlockingConnectionPool's wait for a free connection."""


@dataclass(slots=True)
class LimiterRedis:
    """A client of the limiter's Redis and what it owns."""

    client: redis.asyncio.Redis
    sentinel: Sentinel | None = None
    service_name: str | None = None

    @property
    def pool(self) -> redis.asyncio.ConnectionPool:
        return self.client.connection_pool

    async def where(self) -> str:
        """Where commands go: "host:port", the primary's address for Sentinel."""
        if self.sentinel is not None and self.service_name is not None:
            host, port = await self.sentinel.discover_master(self.service_name)
            return f"primary {host}:{port}"
        kwargs = self.pool.connection_kwargs
        return str(kwargs.get("path") or f"{kwargs.get('host')}:{kwargs.get('port')}")

    async def aclose(self) -> None:
        await self.client.aclose()  # and its pool, which it was made from
        if self.sentinel is not None:
            await self.sentinel.aclose()


def describe_redis_error(exc: BaseException) -> str:
    """One line for an operator. redis-py's MasterNotFoundError text goes on with the repr
    of every Sentinel client (their options, pool handlers, ...): its first clause says it."""
    if isinstance(exc, MasterNotFoundError):
        return str(exc).split(" : ")[0] + " (no Sentinel answered, or none knows a healthy primary)"
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def scheme_of(url: str) -> str:
    return url.partition("://")[0].lower() if "://" in url else ""


def parse_sentinel_url(url: str) -> SentinelUrl:
    """The parts of a `redis+sentinel://` URL; InvalidRedisUrl when one is missing or bad."""
    parts = urlsplit(url)
    userinfo, _, hosts = parts.netloc.rpartition("@")
    username, _, password = userinfo.partition(":")
    sentinels = tuple(_host_and_port(location) for location in hosts.split(","))
    service_name = unquote(parts.path.removeprefix("/"))
    if not service_name or "/" in service_name:
        raise InvalidRedisUrl(f"{SENTINEL_SCHEME}:// URL needs the service name as its path: {_FORM}")
    if parts.query or parts.fragment:
        raise InvalidRedisUrl(f"{SENTINEL_SCHEME}:// URL takes no query or fragment: {_FORM}")
    return SentinelUrl(
        sentinels=sentinels,
        service_name=service_name,
        username=unquote(username) or None,
        password=unquote(password) or None,
    )


def _host_and_port(location: str) -> tuple[str, int]:
    try:
        parts = urlsplit(f"//{location.strip()}")
        host, port = parts.hostname, parts.port
    except ValueError:
        host = None
    if not host:
        raise InvalidRedisUrl(f"{SENTINEL_SCHEME}:// URL has a bad Sentinel address {location.strip()!r}: {_FORM}")
    return host, port or SENTINEL_PORT


def check_redis_url(url: str) -> None:
    """InvalidRedisUrl when `url` cannot be used, whatever the servers' state."""
    if _sentinel_target(url) is None:
        _server_pool(url, pool_size=1, timeout_s=1.0)  # parses the URL; connects nothing


def limiter_redis(url: str, *, pool_size: int, timeout_s: float) -> LimiterRedis:
    """A client for `url` with a blocking pool of `pool_size` connections; nothing is
    connected yet. InvalidRedisUrl when the URL cannot be used."""
    target = _sentinel_target(url)
    if target is not None:
        return _behind_sentinel(target, pool_size=pool_size, timeout_s=timeout_s)
    return LimiterRedis(redis.asyncio.Redis.from_pool(_server_pool(url, pool_size=pool_size, timeout_s=timeout_s)))


def _sentinel_target(url: str) -> SentinelUrl | None:
    """The Sentinel URL's parts; None for a one-server URL; InvalidRedisUrl for the rest."""
    scheme = scheme_of(url)
    if scheme == SENTINEL_SCHEME:
        return parse_sentinel_url(url)
    if scheme in CLUSTER_SCHEMES:
        raise InvalidRedisUrl(
            "Redis Cluster is not supported: each request's limits are one script over counters that "
            "Cluster would place on different shards (see docs/deployment.md); use redis:// or redis+sentinel://"
        )
    if scheme not in SERVER_SCHEMES:
        raise InvalidRedisUrl(
            f"unsupported scheme {scheme or '(none)'!r}: use redis://, rediss://, unix:// or {SENTINEL_SCHEME}://"
        )
    return None


def _connection_options(timeout_s: float) -> dict[str, Any]:
    # One immediate retry: a pooled connection Redis dropped since (a restart, a failover)
    # is replaced without failing the requests it carried; the caller's deadline bounds both.
    return {"socket_timeout": timeout_s, "socket_connect_timeout": timeout_s, "retry": Retry(NoBackoff(), 1)}


def _server_pool(url: str, *, pool_size: int, timeout_s: float) -> BlockingConnectionPool:
    try:
        return BlockingConnectionPool.from_url(
            url, max_connections=pool_size, timeout=timeout_s, **_connection_options(timeout_s)
        )
    except ValueError as exc:  # a port that is no number, an unknown query option ...
        raise InvalidRedisUrl(str(exc).splitlines()[0]) from None


def _behind_sentinel(target: SentinelUrl, *, pool_size: int, timeout_s: float) -> LimiterRedis:
    credentials = {"username": target.username, "password": target.password}
    sentinel = Sentinel(  # type: ignore[no-untyped-call]  # redis-py leaves it unannotated
        list(target.sentinels),
        # Each Sentinel asked once per new connection, not retried with backoff (redis-py's
        # default for a client): the next Sentinel of the list is asked instead.
        sentinel_kwargs={**_connection_options(timeout_s), **credentials, "retry": Retry(NoBackoff(), 0)},
        **_connection_options(timeout_s),
        **credentials,
    )
    client = sentinel.master_for(
        target.service_name, connection_pool_class=_BlockingSentinelPool, max_connections=pool_size, timeout=timeout_s
    )
    return LimiterRedis(client, sentinel=sentinel, service_name=target.service_name)

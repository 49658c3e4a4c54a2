"""The four rate limits of contract §5, on the `limits` library's async storage.

Fixed windows: a counter per (limit, identity) that expires with its window, so the
reset time reported to clients is exact. The counter is incremented atomically in the
storage (a Lua script on Redis), which keeps counts exact across workers and hosts.

slowapi is not used: it calls its storage synchronously (blocking the event loop on
every Redis round trip) and answers 500 rather than 503 when Redis is down.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import redis.asyncio
from limits import RateLimitItem, parse
from limits.aio.storage import MemoryStorage, RedisStorage, Storage
from limits.errors import StorageError

from engine.errors import RateLimited, ServiceUnavailable
from engine.metrics import RATE_LIMIT_REJECTIONS, RATE_LIMIT_STORAGE_ERRORS
from engine.settings import Settings


@dataclass(frozen=True, slots=True)
class RateWindow:
    """The state of one limit's current window, as reported in the X-RateLimit headers."""

    limit: int
    remaining: int
    reset_at: int  # Unix epoch seconds

    def retry_after(self, now: float) -> int:
        return max(1, math.ceil(self.reset_at - now))


class RateLimitExceeded(RateLimited):
    def __init__(self, window: RateWindow, *, limit: str = "") -> None:
        super().__init__("Rate limit exceeded")
        self.window = window
        self.limit = limit  # which limit rejected: "ip", "failed_auth", "key" or "owner"


def _create_storage(settings: Settings) -> Storage:
    if not settings.redis_url:
        return MemoryStorage(wrap_exceptions=True)
    # A blocking pool waits (bounded) for a free connection instead of raising once
    # all are busy, which under load would turn into false 503s.
    pool = redis.asyncio.BlockingConnectionPool.from_url(
        settings.redis_url,
        max_connections=settings.redis_pool_size,
        timeout=settings.redis_timeout_s,
        socket_timeout=settings.redis_timeout_s,
        socket_connect_timeout=settings.redis_timeout_s,
    )
    return RedisStorage(
        "async+" + settings.redis_url,
        wrap_exceptions=True,
        implementation="redispy",
        connection_pool=pool,
    )


class RateLimits:
    """The IP, failed-authentication, key and owner limits, built once per process."""

    def __init__(self, settings: Settings) -> None:
        self.storage = _create_storage(settings)
        self.ip = parse(settings.rate_limit_ip)
        self.failed_auth = parse(settings.rate_limit_failed_auth)
        self.key = parse(settings.rate_limit_key)
        self.owner = parse(settings.rate_limit_owner)
        # By identity: two limits may be configured with equal rate strings.
        self._names = {
            id(self.ip): "ip",
            id(self.failed_auth): "failed_auth",
            id(self.key): "key",
            id(self.owner): "owner",
        }

    async def _window(self, item: RateLimitItem, storage_key: str, count: int) -> RateWindow:
        expiry = await self.storage.get_expiry(storage_key)
        return RateWindow(limit=item.amount, remaining=max(0, item.amount - count), reset_at=math.ceil(expiry))

    async def _rejection(self, item: RateLimitItem, storage_key: str, count: int) -> RateLimitExceeded:
        window = await self._window(item, storage_key, count)
        limit = self._names.get(id(item), "other")
        RATE_LIMIT_REJECTIONS.labels(limit=limit).inc()
        return RateLimitExceeded(window, limit=limit)

    @staticmethod
    def _unavailable() -> ServiceUnavailable:
        RATE_LIMIT_STORAGE_ERRORS.inc()
        return ServiceUnavailable("rate limit storage unreachable")

    async def consume(self, item: RateLimitItem, identity: str, *, report: bool = False) -> RateWindow | None:
        """Count one request; raise RateLimitExceeded when over the limit.

        Returns the window when `report` is set (the key limit, whose state every
        handled response reports); otherwise skips the extra round trip.
        """
        storage_key = item.key_for(identity)
        try:
            count = await self.storage.incr(storage_key, item.get_expiry())
            if count > item.amount:
                raise await self._rejection(item, storage_key, count)
            return await self._window(item, storage_key, count) if report else None
        except StorageError as exc:
            raise self._unavailable() from exc

    async def record(self, item: RateLimitItem, identity: str) -> None:
        """Count one event (a failed authentication) without judging this request by it."""
        try:
            await self.storage.incr(item.key_for(identity), item.get_expiry())
        except StorageError as exc:
            raise self._unavailable() from exc

    async def ensure_not_exhausted(self, item: RateLimitItem, identity: str) -> None:
        """Reject when the window is already full, without counting this request."""
        storage_key = item.key_for(identity)
        try:
            count = await self.storage.get(storage_key)
            if count >= item.amount:
                raise await self._rejection(item, storage_key, count)
        except StorageError as exc:
            raise self._unavailable() from exc

    async def ping(self) -> bool:
        try:
            up = bool(await self.storage.check())
        except StorageError:
            up = False
        if not up:
            RATE_LIMIT_STORAGE_ERRORS.inc()
        return up

    @staticmethod
    def now() -> float:
        return time.time()

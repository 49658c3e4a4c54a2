"""The four rate limits of contract §5, on the `limits` library's async storage.

Fixed windows: a counter per (limit, identity) that expires with its window, so the reset
time reported to clients is exact. Counters are incremented atomically in the storage,
which keeps counts exact across workers and hosts.

A request passes two stages, each one storage round trip on Redis (one Lua script each):
before authentication, count the client IP and read its failed-authentication counter;
after it, count the key and, only if the key is within its limit, the owner. The counter
keys are the `limits` library's own (`LIMITS:LIMITER/...`), so its tools can read them.

slowapi is not used: it calls its storage synchronously (blocking the event loop on
every Redis round trip) and answers 500 rather than 503 when Redis is down.
"""

from __future__ import annotations

import math
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

import redis.asyncio
from limits import RateLimitItem, parse
from limits.aio.storage import MemoryStorage, RedisStorage

from engine.errors import RateLimited, ServiceUnavailable
from engine.metrics import RATE_LIMIT_REJECTIONS, RATE_LIMIT_STORAGE_ERRORS
from engine.settings import Settings

# Stage 1. KEYS: ip counter, failed-auth counter. ARGV: ip window seconds.
# Returns ip count, ip ttl (ms), failed count, failed ttl (ms).
_CLIENT_STAGE = """
local ip = redis.call('INCR', KEYS[1])
if ip == 1 then redis.call('EXPIRE', KEYS[1], ARGV[1]) end
local failed = tonumber(redis.call('GET', KEYS[2]) or '0')
return {ip, redis.call('PTTL', KEYS[1]), failed, redis.call('PTTL', KEYS[2])}
"""

# Stage 2. KEYS: key counter, owner counter. ARGV: key window s, key amount, owner window s.
# The owner is counted only when the key admits the request (the documented order).
_KEY_STAGE = """
local key = redis.call('INCR', KEYS[1])
if key == 1 then redis.call('EXPIRE', KEYS[1], ARGV[1]) end
local key_ttl = redis.call('PTTL', KEYS[1])
if key > tonumber(ARGV[2]) then return {key, key_ttl, -1, -1} end
local owner = redis.call('INCR', KEYS[2])
if owner == 1 then redis.call('EXPIRE', KEYS[2], ARGV[3]) end
return {key, key_ttl, owner, redis.call('PTTL', KEYS[2])}
"""

STORAGE_PREFIX = "LIMITS"


@dataclass(frozen=True, slots=True)
class RateWindow:
    """The state of one limit's current window, as reported in the X-RateLimit headers."""

    limit: int
    remaining: int
    reset_at: int  # Unix epoch seconds

    def retry_after(self, now: float) -> int:
        return max(1, math.ceil(self.reset_at - now))


class RateLimitExceeded(RateLimited):
    def __init__(self, window: RateWindow, *, limit: str) -> None:
        super().__init__("Rate limit exceeded")
        self.window = window
        self.limit = limit  # which limit rejected: "ip", "failed_auth", "key" or "owner"


@dataclass(frozen=True, slots=True)
class Count:
    """A counter after this request: its value and when its window ends (epoch seconds)."""

    value: int
    reset_at: float


class _Counters(ABC):
    """Storage of the counters: the two stages and the failed-authentication count."""

    @abstractmethod
    async def client_stage(
        self, ip: RateLimitItem, ip_id: str, failed: RateLimitItem, failed_id: str
    ) -> tuple[Count, Count]:
        ...

    @abstractmethod
    async def key_stage(
        self, key: RateLimitItem, key_id: str, owner: RateLimitItem, owner_id: str
    ) -> tuple[Count, Count | None]: ...

    @abstractmethod
    async def add(self, item: RateLimitItem, identity: str) -> None: ...

    @abstractmethod
    async def ping(self) -> bool: ...

    async def close(self) -> None:  # noqa: B027 (only storages holding connections override it)
        """Release connections."""


def _reset_at(ttl_ms: int, item: RateLimitItem, now: float) -> float:
    # A counter without a TTL (none yet) resets one full window from now.
    return now + (ttl_ms / 1000 if ttl_ms >= 0 else item.get_expiry())


class _RedisCounters(_Counters):
    def __init__(self, settings: Settings, redis_url: str) -> None:
        # A blocking pool waits (bounded) for a free connection instead of raising once
        # all are busy, which under load would turn into false 503s.
        pool = redis.asyncio.BlockingConnectionPool.from_url(
            redis_url,
            max_connections=settings.redis_pool_size,
            timeout=settings.redis_timeout_s,
            socket_timeout=settings.redis_timeout_s,
            socket_connect_timeout=settings.redis_timeout_s,
        )
        self._pool = pool
        self.storage = RedisStorage(
            "async+" + redis_url,
            wrap_exceptions=True,
            implementation="redispy",
            key_prefix=STORAGE_PREFIX,
            connection_pool=pool,
        )
        client = self.storage.bridge.get_connection()
        self._client_stage = client.register_script(_CLIENT_STAGE)
        self._key_stage = client.register_script(_KEY_STAGE)

    def _key(self, item: RateLimitItem, identity: str) -> str:
        return f"{STORAGE_PREFIX}:{item.key_for(identity)}"

    async def _run(self, script: Any, keys: list[str], args: list[int]) -> list[int]:
        try:
            return [int(value) for value in await script(keys, args)]
        except (redis.RedisError, OSError, TimeoutError) as exc:
            raise _unavailable() from exc

    async def client_stage(
        self, ip: RateLimitItem, ip_id: str, failed: RateLimitItem, failed_id: str
    ) -> tuple[Count, Count]:
        now = time.time()
        ip_count, ip_ttl, failed_count, failed_ttl = await self._run(
            self._client_stage, [self._key(ip, ip_id), self._key(failed, failed_id)], [ip.get_expiry()]
        )
        return Count(ip_count, _reset_at(ip_ttl, ip, now)), Count(failed_count, _reset_at(failed_ttl, failed, now))

    async def key_stage(
        self, key: RateLimitItem, key_id: str, owner: RateLimitItem, owner_id: str
    ) -> tuple[Count, Count | None]:
        now = time.time()
        key_count, key_ttl, owner_count, owner_ttl = await self._run(
            self._key_stage,
            [self._key(key, key_id), self._key(owner, owner_id)],
            [key.get_expiry(), key.amount, owner.get_expiry()],
        )
        key_state = Count(key_count, _reset_at(key_ttl, key, now))
        if owner_count < 0:
            return key_state, None
        return key_state, Count(owner_count, _reset_at(owner_ttl, owner, now))

    async def add(self, item: RateLimitItem, identity: str) -> None:
        try:
            await self.storage.incr(item.key_for(identity), item.get_expiry())
        except Exception as exc:  # limits wraps every storage failure in StorageError
            raise _unavailable() from exc

    async def ping(self) -> bool:
        try:
            return bool(await self.storage.check())
        except Exception:  # a failed check is "down", whatever the cause
            return False

    async def close(self) -> None:
        await self._pool.disconnect()


class _MemoryCounters(_Counters):
    """Process memory: exact for one process (the event loop runs one stage at a time)."""

    def __init__(self) -> None:
        self.storage = MemoryStorage()

    async def _hit(self, item: RateLimitItem, identity: str) -> Count:
        key = item.key_for(identity)
        value = await self.storage.incr(key, item.get_expiry())
        return Count(value, await self.storage.get_expiry(key))

    async def _peek(self, item: RateLimitItem, identity: str) -> Count:
        key = item.key_for(identity)
        value = await self.storage.get(key)
        return Count(value, await self.storage.get_expiry(key) if value else time.time() + item.get_expiry())

    async def client_stage(
        self, ip: RateLimitItem, ip_id: str, failed: RateLimitItem, failed_id: str
    ) -> tuple[Count, Count]:
        return await self._hit(ip, ip_id), await self._peek(failed, failed_id)

    async def key_stage(
        self, key: RateLimitItem, key_id: str, owner: RateLimitItem, owner_id: str
    ) -> tuple[Count, Count | None]:
        key_state = await self._hit(key, key_id)
        if key_state.value > key.amount:
            return key_state, None
        return key_state, await self._hit(owner, owner_id)

    async def add(self, item: RateLimitItem, identity: str) -> None:
        await self.storage.incr(item.key_for(identity), item.get_expiry())

    async def ping(self) -> bool:
        return bool(await self.storage.check())


def _unavailable() -> ServiceUnavailable:
    RATE_LIMIT_STORAGE_ERRORS.inc()
    return ServiceUnavailable("rate limit storage unreachable")


def _for(limit: str, identity: str) -> str:
    """The counter identity of one limit: the IP and failed-auth limits both count per
    IP, and two limits configured with the same rate must still not share a counter."""
    return f"{limit}/{identity}"


def _window(item: RateLimitItem, count: Count) -> RateWindow:
    remaining = max(0, item.amount - count.value)
    return RateWindow(limit=item.amount, remaining=remaining, reset_at=math.ceil(count.reset_at))


def _reject(name: str, item: RateLimitItem, count: Count) -> RateLimitExceeded:
    RATE_LIMIT_REJECTIONS.labels(limit=name).inc()
    return RateLimitExceeded(_window(item, count), limit=name)


class RateLimits:
    """The IP, failed-authentication, key and owner limits, built once per process."""

    def __init__(self, settings: Settings) -> None:
        self.ip = parse(settings.rate_limit_ip)
        self.failed_auth = parse(settings.rate_limit_failed_auth)
        self.key = parse(settings.rate_limit_key)
        self.owner = parse(settings.rate_limit_owner)
        self._counters: _Counters = (
            _RedisCounters(settings, settings.redis_url) if settings.redis_url else _MemoryCounters()
        )

    async def admit_client(self, ip: str) -> None:
        """Steps 1 and 2: count the IP; reject it when over its limit or when blocked for
        failed authentications (checked before the key, so a good key does not help)."""
        ip_count, failed_count = await self._counters.client_stage(
            self.ip, _for("ip", ip), self.failed_auth, _for("failed_auth", ip)
        )
        if ip_count.value > self.ip.amount:
            raise _reject("ip", self.ip, ip_count)
        if failed_count.value >= self.failed_auth.amount:
            raise _reject("failed_auth", self.failed_auth, failed_count)

    async def record_failed_auth(self, ip: str) -> None:
        """Step 3's failure: one more failed authentication for the IP."""
        await self._counters.add(self.failed_auth, _for("failed_auth", ip))

    async def admit_key(self, *, key_id: str, owner_id: str) -> RateWindow:
        """Steps 4 and 5: count the key, then its owner. The key's window is returned for
        the headers of every handled response."""
        key_count, owner_count = await self._counters.key_stage(
            self.key, _for("key", key_id), self.owner, _for("owner", owner_id)
        )
        if key_count.value > self.key.amount:
            raise _reject("key", self.key, key_count)
        if owner_count is not None and owner_count.value > self.owner.amount:
            raise _reject("owner", self.owner, owner_count)
        return _window(self.key, key_count)

    async def ping(self) -> bool:
        up = await self._counters.ping()
        if not up:
            RATE_LIMIT_STORAGE_ERRORS.inc()
        return up

    async def close(self) -> None:
        await self._counters.close()

    @staticmethod
    def now() -> float:
        return time.time()

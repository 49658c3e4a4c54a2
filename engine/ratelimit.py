"""The four rate limits of contract §5, on the `limits` library's async storage.

Fixed windows: a counter per (limit, identity) that expires with its window, so the reset
time reported to clients is exact. The reset is reported as one whole second for every
response of a window, however long its round trip to the storage took: on Redis the
window ends on it (its first count plus the window, rounded up: never shorter than the
limit says); in memory, whose windows end exactly, it is the next whole second.
Counters are incremented atomically in the storage, which keeps counts exact across
workers and hosts.

A request's limits are steps in the documented order: count the client IP, read its
failed-authentication counter, count the key, count the owner. One storage operation (one
Lua script, one round trip on Redis) runs a list of steps and stops after the first that
rejects, so nothing after a rejection is counted (an IP over its limit leaves the key and
owner counters alone; a key over its limit, the owner's). The guard runs them as:

- one operation of all four steps (`admit_request`) when the key was verified from the
  per-worker cache, without I/O: verification then cannot fail, so it need not sit
  between the IP's steps and the key's;
- otherwise two, around key verification: the IP's steps before it (`admit_client`),
  the key's after it (`admit_key`); a failed verification adds to the failed-auth
  counter instead (`record_failed_auth`).

Both give the same counts, rejections and windows. The counter keys are the `limits`
library's own (`LIMITS:LIMITER/...`), so its tools can read them.

slowapi is not used: it calls its storage synchronously (blocking the event loop on
every Redis round trip) and answers 500 rather than 503 when Redis is down.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import math
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

import redis
from limits import RateLimitItem, parse
from limits.aio.storage import MemoryStorage, RedisStorage

from engine.errors import RateLimited, ServiceUnavailable
from engine.limiter_redis import limiter_redis
from engine.metrics import RATE_LIMIT_REJECTIONS, RATE_LIMIT_STORAGE_ERRORS
from engine.script_batches import ScriptBatches
from engine.settings import Settings

# Runs the given steps in order, stopping after the first whose counter reaches the value
# at which it rejects (`Step.rejects_at`, the one statement of the rule), so that nothing
# after a rejection is counted.
# KEYS: the steps' counters. ARGV: per step, its window (s), the value at which it
# rejects, and 1 when the request counts on it, 0 when the counter is only read.
# A new counter expires on the whole second (of Redis's clock) at or after its window's end.
# Returns the value and the TTL (ms) of each counter reached.
_STEPS = """
local result = {}
for i, counter in ipairs(KEYS) do
  local window, rejects_at, counted = tonumber(ARGV[3 * i - 2]), tonumber(ARGV[3 * i - 1]), ARGV[3 * i] == '1'
  local value
  if counted then
    value = redis.call('INCR', counter)
    if value == 1 then
      local now = redis.call('TIME')
      redis.call('EXPIREAT', counter, tonumber(now[1]) + window + (now[2] == '0' and 0 or 1))
    end
  else
    value = tonumber(redis.call('GET', counter) or '0')
  end
  result[#result + 1] = value
  result[#result + 1] = redis.call('PTTL', counter)
  if value >= rejects_at then return result end
end
return result
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
        super().__init__()
        self.window = window
        self.limit = limit  # which limit rejected: "ip", "failed_auth", "key" or "owner"

    @property
    def after_authentication(self) -> bool:
        """Rejected by the key or owner limit (steps 4 and 5), which are checked only once
        the key is verified; the IP and failed-auth limits come before verification."""
        return self.limit in ("key", "owner")


@dataclass(frozen=True, slots=True)
class Count:
    """A counter after this request: its value and when its window ends (epoch seconds)."""

    value: int
    reset_at: int


@dataclass(frozen=True, slots=True)
class Step:
    """One limit checked for one request: which limit, whose counter, and whether the
    request counts on it (the failed-auth counter is only read: failures are added when
    they happen)."""

    limit: str  # "ip", "failed_auth", "key" or "owner"
    item: RateLimitItem
    key: str  # the counter's key in the `limits` library's naming (before the storage prefix)
    counted: bool = True

    @classmethod
    def of(cls, limit: str, item: RateLimitItem, identity: str, *, counted: bool = True) -> Step:
        """The step of `limit` for `identity` (an IP, a key id, an owner id). The limit's
        name is part of the counter's key: the IP and failed-auth limits both count per
        IP, and two limits configured with the same rate must still not share a counter."""
        return cls(limit, item, item.key_for(f"{limit}/{identity}"), counted)

    @property
    def rejects_at(self) -> int:
        """The counter value from which this step rejects. A counted value includes this
        request, so `amount` of them fit in the window; a read-only one does not, so it
        blocks once it holds `amount`."""
        return self.item.amount + 1 if self.counted else self.item.amount

    def rejects(self, value: int) -> bool:
        return value >= self.rejects_at


class _Counters(ABC):
    """Storage of the counters: running steps, and adding a failed authentication."""

    @abstractmethod
    async def run(self, steps: Sequence[Step]) -> list[Count]:
        """Count (or read) each step's counter in order, as one atomic operation where the
        storage allows it, and stop after the first step that rejects: the counts of the
        steps reached, that one included."""

    @abstractmethod
    async def add(self, step: Step) -> None: ...

    @abstractmethod
    async def stored(self, step: Step) -> int:
        """The step's counter as stored now (0 when there is none), without counting."""

    @abstractmethod
    async def ping(self) -> bool: ...

    async def close(self) -> None:  # noqa: B027 (only storages holding connections override it)
        """Release connections."""


def _reset_at(ttl_ms: int, item: RateLimitItem, now: float) -> int:
    # The counter expires on a whole second: `now` (read before the round trip) plus its
    # TTL is that second less the round trip's latency, plus up to a millisecond of
    # Redis's clock truncation, so the nearest second is the expiry itself.
    if ttl_ms >= 0:
        return round(now + ttl_ms / 1000)
    # A counter without a TTL (none yet) resets one full window from now.
    return math.ceil(now + item.get_expiry())


class _RedisCounters(_Counters):
    """Redis: each `run` is one Lua script, so one round trip and atomic across workers."""

    def __init__(self, settings: Settings, redis_url: str) -> None:
        # One server or the primary Sentinel names, through a pool that waits for a free
        # connection (engine/limiter_redis.py).
        self._redis = limiter_redis(redis_url, pool_size=settings.redis_pool_size, timeout_s=settings.redis_timeout_s)
        self._timeout_s = settings.redis_timeout_s
        # The `limits` storage runs on the same pool (its URI is not used when a pool is given).
        self.storage = RedisStorage(
            "async+redis://",
            wrap_exceptions=True,
            implementation="redispy",
            key_prefix=STORAGE_PREFIX,
            # limits types its pass-through options narrowly; redis-py takes the pool.
            connection_pool=self._redis.pool,  # type: ignore[arg-type]
        )
        # Concurrent requests' scripts share round trips (engine/script_batches.py), each
        # round trip (a new primary's discovery and a retry included) within the timeout.
        self._steps = ScriptBatches(self._redis.client, _STEPS, deadline_s=settings.redis_timeout_s)

    @staticmethod
    @functools.lru_cache(maxsize=16384)
    def _wire(key: str, window: int, rejects_at: int, counted: bool) -> tuple[bytes, tuple[bytes, bytes, bytes]]:
        """A step's counter key and script arguments, encoded once (bytes go to the socket
        as they are; redis-py would encode every str and int of every call again). Keyed
        by plain values, whose hashes are cheap, rather than by the step."""
        arguments = (str(window).encode(), str(rejects_at).encode(), b"1" if counted else b"0")
        return f"{STORAGE_PREFIX}:{key}".encode(), arguments

    async def run(self, steps: Sequence[Step]) -> list[Count]:
        now = time.time()
        wires = [self._wire(step.key, step.item.get_expiry(), step.rejects_at, step.counted) for step in steps]
        keys = [key for key, _arguments in wires]
        args = [value for _key, arguments in wires for value in arguments]
        try:
            values = [int(value) for value in await self._steps.call(keys, args)]
        except (redis.RedisError, OSError, TimeoutError) as exc:
            raise _unavailable() from exc
        return [
            Count(value, _reset_at(ttl, step.item, now))
            for step, value, ttl in zip(steps, values[::2], values[1::2], strict=False)
        ]

    async def add(self, step: Step) -> None:
        # Through the script, so the window ends on a whole second like every other's.
        await self.run([dataclasses.replace(step, counted=True)])

    async def stored(self, step: Step) -> int:
        try:
            async with asyncio.timeout(self._timeout_s):
                return int(await self.storage.get(step.key) or 0)
        except Exception as exc:  # limits wraps every storage failure in StorageError
            raise _unavailable() from exc

    async def ping(self) -> bool:
        try:
            return bool(await self.storage.check())
        except Exception:  # a failed check is "down", whatever the cause
            return False

    async def close(self) -> None:
        await self._steps.close()
        await self._redis.aclose()


class _MemoryCounters(_Counters):
    """Process memory: exact for one process (each increment is atomic in the event loop;
    other requests' steps may run in between, which changes no count)."""

    def __init__(self) -> None:
        self.storage = MemoryStorage()

    async def _count(self, step: Step) -> Count:
        # The storage keeps each window's exact end; its next whole second is reported.
        if step.counted:
            value = await self.storage.incr(step.key, step.item.get_expiry())
            return Count(value, math.ceil(await self.storage.get_expiry(step.key)))
        value = await self.storage.get(step.key)
        ends = await self.storage.get_expiry(step.key) if value else time.time() + step.item.get_expiry()
        return Count(value, math.ceil(ends))

    async def run(self, steps: Sequence[Step]) -> list[Count]:
        counts = []
        for step in steps:
            counts.append(await self._count(step))
            if step.rejects(counts[-1].value):
                break
        return counts

    async def add(self, step: Step) -> None:
        await self.storage.incr(step.key, step.item.get_expiry())

    async def stored(self, step: Step) -> int:
        return int(await self.storage.get(step.key) or 0)

    async def ping(self) -> bool:
        return bool(await self.storage.check())


def _unavailable() -> ServiceUnavailable:
    RATE_LIMIT_STORAGE_ERRORS.inc()
    return ServiceUnavailable("rate limit storage unreachable")


def _window(item: RateLimitItem, count: Count) -> RateWindow:
    remaining = max(0, item.amount - count.value)
    return RateWindow(limit=item.amount, remaining=remaining, reset_at=count.reset_at)


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
        self._items = {"ip": self.ip, "failed_auth": self.failed_auth, "key": self.key, "owner": self.owner}
        # A client makes many requests: its steps (and their counter keys, which `limits`
        # builds by joining strings) are made once per identity and reused, looked up by
        # plain strings. Bounded, as identities include client IPs; an evicted one is
        # simply built again.
        self._step = functools.lru_cache(maxsize=16384)(self._new_step)

    def _new_step(self, limit: str, identity: str, counted: bool) -> Step:
        return Step.of(limit, self._items[limit], identity, counted=counted)

    def _failed_auth_step(self, ip: str) -> Step:
        return self._step("failed_auth", ip, False)

    def _client_steps(self, ip: str) -> list[Step]:
        # The failed-auth limit is checked before the key, so a good key does not help.
        return [self._step("ip", ip, True), self._failed_auth_step(ip)]

    def _key_steps(self, key_id: str, owner_id: str) -> list[Step]:
        return [self._step("key", key_id, True), self._step("owner", owner_id, True)]

    async def _run(self, steps: Sequence[Step]) -> list[Count]:
        """The steps' counts; RateLimitExceeded of the first step that rejects. The one
        place a count turns into a rejection, whichever steps a storage operation runs."""
        counts = await self._counters.run(steps)
        for step, count in zip(steps, counts, strict=False):
            if step.rejects(count.value):
                RATE_LIMIT_REJECTIONS.labels(limit=step.limit).inc()
                raise RateLimitExceeded(_window(step.item, count), limit=step.limit)
        return counts

    async def admit_client(self, ip: str) -> None:
        """Steps 1 and 2: count the IP; reject it when over its limit or when blocked for
        failed authentications."""
        await self._run(self._client_steps(ip))

    async def record_failed_auth(self, ip: str) -> None:
        """Step 3's failure: one more failed authentication for the IP."""
        await self._counters.add(self._failed_auth_step(ip))

    async def admit_key(self, *, key_id: str, owner_id: str) -> RateWindow:
        """Steps 4 and 5: count the key, then its owner. The key's window is returned for
        the headers of every handled response."""
        counts = await self._run(self._key_steps(key_id, owner_id))
        return _window(self.key, counts[0])

    async def admit_request(self, ip: str, *, key_id: str, owner_id: str) -> RateWindow:
        """Steps 1, 2, 4 and 5 in one storage operation (one round trip on Redis), for a key
        verified without I/O, whose step 3 therefore cannot fail or wait in between. The
        same counts, rejections and windows as admit_client then admit_key: a rejection
        stops the count, so the IP limit and the failed-auth block leave the key and owner
        counters untouched, and the key limit the owner's."""
        counts = await self._run([*self._client_steps(ip), *self._key_steps(key_id, owner_id)])
        return _window(self.key, counts[2])

    async def stored_count(self, limit: str, identity: str) -> int:
        """What one limit's counter holds for an identity now (0 when none), without
        counting: the value its next check adds to. `limit` is ip, failed_auth, key or owner."""
        return await self._counters.stored(self._new_step(limit, identity, False))

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

"""Script calls of concurrent callers share round trips, each keeps its own reply and errors.

On a private redis-server: the tests flush its scripts, count the reads it processes and
kill it.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import redis
import redis.asyncio
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError

from engine.limiter_redis import limiter_redis
from engine.script_batches import ScriptBatches
from tests.contract.redis_process import RedisProcess, own_redis

# Adds ARGV[1] to the counter KEYS[1]; fails (an error reply) when ARGV[1] is "boom".
ADD = """
if ARGV[1] == 'boom' then return redis.error_reply('boom') end
return redis.call('INCRBY', KEYS[1], ARGV[1])
"""
DEADLINE_S = 2.0


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisProcess]:
    with own_redis(tmp_path_factory.mktemp("script-batches")) as process:
        yield process


@pytest.fixture
def inspector(server: RedisProcess) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(server.url)
    client.flushall()
    client.script_flush()
    client.config_resetstat()
    yield client
    client.close()


@pytest.fixture
async def client(server: RedisProcess) -> AsyncIterator[redis.asyncio.Redis]:
    client = limiter_redis(server.url, pool_size=4, timeout_s=1).client
    yield client
    await client.aclose()


def reads_processed(inspector: redis.Redis) -> int:
    """Reads of client sockets the server has done (this INFO's own read included)."""
    return int(inspector.info("stats")["total_reads_processed"])


async def test_calls_made_together_share_one_write_and_keep_their_own_replies(
    client: redis.asyncio.Redis, inspector: redis.Redis
) -> None:
    batches = ScriptBatches(client, ADD, deadline_s=DEADLINE_S)
    await batches.call(["warm"], [1])  # connects, and loads the script after NOSCRIPT
    inspector.config_resetstat()
    before = reads_processed(inspector)
    replies = await asyncio.gather(*(batches.call([f"counter-{n % 3}"], [n]) for n in range(30)))
    reads = reads_processed(inspector) - before - 1  # minus the second INFO
    # Each caller got its own counter's value after its own increment, in call order.
    expected, totals = [], [0, 0, 0]
    for n in range(30):
        totals[n % 3] += n
        expected.append(totals[n % 3])
    assert replies == expected
    assert int(inspector.info("commandstats")["cmdstat_evalsha"]["calls"]) == 30
    # Thirty calls, one pipeline: the server read them in one go (a read may split at
    # the socket buffer, never into thirty).
    assert reads <= 2, reads


async def test_a_lone_call_is_a_pipeline_of_one(client: redis.asyncio.Redis, inspector: redis.Redis) -> None:
    batches = ScriptBatches(client, ADD, deadline_s=DEADLINE_S)
    assert await batches.call(["alone"], [5]) == 5
    assert await batches.call(["alone"], [2]) == 7
    assert inspector.get("alone") == b"7"


async def test_an_unknown_script_is_loaded_once_and_every_call_runs_once(
    client: redis.asyncio.Redis, inspector: redis.Redis
) -> None:
    batches = ScriptBatches(client, ADD, deadline_s=DEADLINE_S)
    assert await asyncio.gather(*(batches.call(["once"], [1]) for _ in range(10))) == list(range(1, 11))
    stats = inspector.info("commandstats")
    assert stats["cmdstat_script|load"]["calls"] == 1
    # Ten NOSCRIPT answers that ran nothing, then ten that counted: the counter says 10.
    assert stats["cmdstat_evalsha"]["calls"] == 20
    assert inspector.get("once") == b"10"
    inspector.script_flush()  # the server forgot it (as after a restart): loaded again
    assert await batches.call(["once"], [1]) == 11


async def test_an_error_reply_fails_only_its_own_call(client: redis.asyncio.Redis) -> None:
    batches = ScriptBatches(client, ADD, deadline_s=DEADLINE_S)
    results = await asyncio.gather(
        batches.call(["mixed"], [1]),
        batches.call(["mixed"], ["boom"]),
        batches.call(["mixed"], [1]),
        return_exceptions=True,
    )
    assert results[0] == 1 and results[2] == 2
    assert isinstance(results[1], ResponseError) and "boom" in str(results[1])


async def test_a_cancelled_caller_leaves_the_others_their_replies(
    client: redis.asyncio.Redis, inspector: redis.Redis
) -> None:
    batches = ScriptBatches(client, ADD, deadline_s=DEADLINE_S)
    await batches.call(["warm"], [1])
    calls = [asyncio.ensure_future(batches.call(["shared"], [1])) for _ in range(5)]
    await asyncio.sleep(0)  # all five queued and sent
    calls[2].cancel()
    results = await asyncio.gather(*calls, return_exceptions=True)
    assert isinstance(results[2], asyncio.CancelledError)
    # The cancelled call was already on its way: Redis counted it, as it would alone.
    assert sorted(r for r in results if isinstance(r, int)) == [1, 2, 4, 5]
    assert inspector.get("shared") == b"5"


async def test_a_lost_server_fails_every_call_then_serves_again(server: RedisProcess, tmp_path: Path) -> None:
    client = redis.asyncio.Redis.from_url(server.url, socket_timeout=1, socket_connect_timeout=1, retry=None)
    batches = ScriptBatches(client, ADD, deadline_s=DEADLINE_S)
    try:
        await batches.call(["before"], [1])
        server.stop()
        results = await asyncio.gather(*(batches.call(["down"], [1]) for _ in range(4)), return_exceptions=True)
        assert all(isinstance(result, (RedisConnectionError, OSError)) for result in results), results
        server.start()
        assert await batches.call(["after"], [3]) == 3
    finally:
        if server.process is None:
            server.start()
        await batches.close()
        await client.aclose()


async def test_a_connection_dropped_since_is_replaced_without_an_error(server: RedisProcess) -> None:
    client = limiter_redis(server.url, pool_size=4, timeout_s=1).client
    batches = ScriptBatches(client, ADD, deadline_s=DEADLINE_S)
    try:
        assert await batches.call(["restart"], [1]) == 1  # leaves a connection in the pool
        server.stop()
        server.start()  # an empty server: the pooled connection is dead, the script unknown
        assert await batches.call(["restart"], [2]) == 2
        assert await batches.call(["restart"], [3]) == 5
    finally:
        await batches.close()
        await client.aclose()


async def test_a_batch_ends_at_its_deadline_whatever_the_socket_timeouts(server: RedisProcess) -> None:
    """A stalled server (SIGSTOP) answers nothing: the calls fail at the batch's deadline,
    not at the client's much longer socket timeout (nor that timeout twice, with the retry)."""
    client = redis.asyncio.Redis.from_url(server.url, socket_timeout=30, socket_connect_timeout=30)
    batches = ScriptBatches(client, ADD, deadline_s=0.5)
    assert server.process is not None
    try:
        assert await batches.call(["stall"], [1]) == 1
        os.kill(server.process.pid, signal.SIGSTOP)
        try:
            started = time.monotonic()
            results = await asyncio.gather(*(batches.call(["stall"], [1]) for _ in range(3)), return_exceptions=True)
            elapsed = time.monotonic() - started
        finally:
            os.kill(server.process.pid, signal.SIGCONT)
        assert all(isinstance(result, TimeoutError) for result in results), results
        assert elapsed < 5, elapsed
        # The connection that waited was dropped (its replies may still come): a new one serves.
        assert await batches.call(["stall"], [1]) in (2, 5)
    finally:
        await batches.close()
        await client.aclose()

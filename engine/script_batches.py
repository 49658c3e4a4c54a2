"""Calls of one Lua script made by concurrent requests, sent to Redis together.

Every API request runs the limiter's script once. Under load, many requests of a worker
reach that call in the same turn of the event loop (their bytes arrived in the same
poll); sent one by one, each costs a pool checkout, a write, a wake-up and a read, which
made the Redis round trip the largest single cost of a request. Here the calls made in
one loop turn are queued and sent as one non-transactional pipeline on one connection:
one write, replies read in order. Each call is still its own EVALSHA, so each runs
atomically in Redis exactly as it would alone; only their transport is shared. A call
waits at most one loop turn longer than it would have; a lone call is a pipeline of one.

A script Redis does not know yet (a new or restarted server) answers NOSCRIPT: it is
loaded once and the calls that met NOSCRIPT (which ran nothing) are sent again.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Sequence
from typing import Any

import redis.asyncio
from redis.exceptions import NoScriptError

# (keys, args, the caller's future)
_Call = tuple[Sequence[str | bytes], Sequence[Any], "asyncio.Future[Any]"]


class ScriptBatches:
    """Runs `script` for concurrent callers, one pipeline per event-loop turn."""

    def __init__(self, client: redis.asyncio.Redis, script: str, *, deadline_s: float) -> None:
        self._client = client
        self._pool = client.connection_pool
        self._script = script
        # How long a batch may take, all of it (waiting for a connection, connecting, which
        # behind Sentinel means asking for the primary first, a retry): then its calls fail.
        self._deadline_s = deadline_s
        self._sha = hashlib.sha1(script.encode(), usedforsecurity=False).hexdigest()  # EVALSHA's name for it
        self._queued: list[_Call] = []
        self._sending: set[asyncio.Task[None]] = set()  # referenced until done

    async def call(self, keys: Sequence[str | bytes], args: Sequence[Any]) -> Any:
        """The script's reply for these keys and arguments; what Redis raised otherwise."""
        loop = asyncio.get_running_loop()
        if not self._queued:
            loop.call_soon(self._send_queued, loop)
        future: asyncio.Future[Any] = loop.create_future()
        self._queued.append((keys, args, future))
        return await future

    def _send_queued(self, loop: asyncio.AbstractEventLoop) -> None:
        batch, self._queued = self._queued, []
        task = loop.create_task(self._send(batch))
        self._sending.add(task)
        task.add_done_callback(self._sending.discard)

    async def _send(self, batch: list[_Call]) -> None:
        try:
            async with asyncio.timeout(self._deadline_s):
                replies = await self._replies(batch)
        except Exception as exc:  # the connection failed, the deadline passed: every call of the batch fails
            for _keys, _args, future in batch:
                if not future.done():
                    future.set_exception(exc)
            return
        except BaseException:  # cancelled (the loop is shutting down): so are the calls
            for _keys, _args, future in batch:
                future.cancel()
            raise
        for (_keys, _args, future), reply in zip(batch, replies, strict=True):
            if future.done():  # the caller was cancelled (its client went away)
                continue
            if isinstance(reply, Exception):
                future.set_exception(reply)
            else:
                future.set_result(reply)

    async def _replies(self, batch: list[_Call]) -> list[Any]:
        """The batch's replies; calls Redis answered NOSCRIPT are sent again once the script is loaded."""
        replies = await self._run(batch)
        if any(isinstance(reply, NoScriptError) for reply in replies):
            await self._client.script_load(self._script)  # from here on, EVALSHA finds it
            again = [call for call, reply in zip(batch, replies, strict=True) if isinstance(reply, NoScriptError)]
            retried = iter(await self._run(again))
            replies = [next(retried) if isinstance(reply, NoScriptError) else reply for reply in replies]
        return replies

    async def _run(self, calls: list[_Call]) -> list[Any]:
        """One non-transactional pipeline of EVALSHAs; each reply, or the error Redis
        answered it with. redis-py retries it once on a new connection when the pooled one
        fails (most often one Redis dropped since, e.g. on a restart: then Redis ran
        nothing). Had Redis run the scripts before the connection broke, their counts are
        then taken twice: a limit errs toward counting a request more, never less.
        """
        pipeline = self._client.pipeline(transaction=False)
        for keys, args, _future in calls:
            pipeline.evalsha(self._sha, len(keys), *keys, *args)
        return await pipeline.execute(raise_on_error=False)

    async def close(self) -> None:
        """Waits for pipelines already sent (their callers get their replies or errors)."""
        if self._sending:
            await asyncio.gather(*self._sending, return_exceptions=True)

"""What every writing transaction sets up: the write lock, the renderer check, the feed.

    async with writing(db) as new_writer:
        writer = new_writer()
        await writer.write("sessions", rows)
        await writer.flush()

Inside, the transaction holds the write lock (engine/write_lock.py), has checked that no
row comes from a newer renderer than this code's (engine/renderings.py), and its writers
share one change feed writer, whose changes are stamped with the time the lock was taken
(so the feed's times follow the order in which writers commit). The rendering processes
are closed on the way out; on an error, batches not yet written are abandoned.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime

from sqlalchemy.ext.asyncio import AsyncSession

from engine.feed_writer import FeedWriter
from engine.record_writer import RecordWriter
from engine.rendering import RenderPool
from engine.renderings import refuse_newer_renderer
from engine.write_lock import lock_writes


@asynccontextmanager
async def writing(db: AsyncSession, *, renderer: RenderPool | None = None) -> AsyncIterator[Callable[[], RecordWriter]]:
    """A factory of record writers for `db`'s transaction; `renderer` defaults to one
    process per core, started once there is enough to render (and closed here)."""
    pool = renderer if renderer is not None else RenderPool()
    writers: list[RecordWriter] = []
    try:
        await lock_writes(db)
        await refuse_newer_renderer(db)
        feed = FeedWriter(db, now=datetime.now(UTC))

        def new_writer() -> RecordWriter:
            # While workers render one batch, the next ones are read: one more than workers.
            writers.append(RecordWriter(db, renderer=pool, feed=feed, depth=pool.processes + 1))
            return writers[-1]

        try:
            yield new_writer
        except BaseException:
            for writer in writers:
                writer.cancel()
            raise
    finally:
        if renderer is None:
            pool.close()

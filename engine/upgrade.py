"""The data half of `campaign-api db upgrade`: after the migrations, render stale rows again.

A database written before rendering moved to write time, or by an older renderer, holds
rows whose stored rendering is stale (engine/renderings.py). Upgrading renders them again
in one transaction (parallel, streaming, the change feed kept: a record whose body the
new rendering changes gets an `upsert`, a record new to the feed gets its first entry).
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession

from engine.record_writer import Progress
from engine.rendering import RenderPool
from engine.renderings import render_stale
from engine.write_transaction import writing


@dataclass(frozen=True, slots=True)
class Rerendered:
    records: int
    bytes: int


async def upgrade_renderings(
    db: AsyncSession, *, progress: Progress | None = None, renderer: RenderPool | None = None
) -> Rerendered:
    async with writing(db, renderer=renderer) as new_writer:
        writer = new_writer()
        await render_stale(writer, progress=progress)
    return Rerendered(records=writer.rendered_records, bytes=writer.rendered_bytes)

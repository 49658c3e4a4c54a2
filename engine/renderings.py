"""Stored renderings and the renderer that made them: finding stale ones, rendering them again.

Every record row stores the version of the renderer that produced its public Markdown
(`renderer_version`, 0 for a row written before rendering moved to write time). A row
rendered by an older renderer than this code's (`CURRENT_RENDERER`) may hold text the
newer renderer removes, so it must never be served as it is:

- `campaign-api db upgrade` and `campaign-api import` render every stale row again
  (`render_stale`, through the record writer: in parallel, streaming, feed kept);
- `campaign-api serve` refuses to start while any row is stale, `campaign-api check` and
  `/readyz` report them, and the read path refuses a stale row it meets anyway (one
  written by an older version of the service after this one started);
- a writer refuses to run against rows of a *newer* renderer than its own (an older
  deployment writing after an upgrade): rendering them again would undo the upgrade.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import Select, bindparam, func, select, union_all
from sqlalchemy.ext.asyncio import AsyncSession

from engine.db import Reader, fetch
from engine.errors import NewerRenderer
from engine.record_kinds import RECORD_KINDS
from engine.record_writer import Progress, RecordWriter, data_columns
from engine.rendering import CURRENT_RENDERER
from engine.statements import ReadStatement

# Stale rows read and rendered again per batch.
BATCH_SIZE = 500
UPGRADE_ADVICE = "run `campaign-api db upgrade`"


def _over_record_tables(part: Callable[[Any], Select[Any]], combine: Callable[[Any], Any]) -> Select[int]:
    """`combine` (sum, max) of one `part` per record table, each given the table's
    renderer_version column and selecting one `value`."""
    merged = union_all(*(part(kind.table.c.renderer_version) for kind in RECORD_KINDS.values())).subquery()
    return select(func.coalesce(combine(merged.c.value), 0).label("value"))


# Each part is one range scan of the table's renderer_version index.
_STALE_COUNT = ReadStatement(
    _over_record_tables(
        lambda version: select(func.count().label("value")).where(version < bindparam("current")), func.sum
    )
)
_NEWEST_RENDERER = _over_record_tables(lambda version: select(func.max(version).label("value")), func.max)


async def count_stale_renderings(db: Reader) -> int:
    """Rows whose stored rendering is older than this code's renderer (or missing);
    ReadFailed when the database cannot answer."""
    (row,) = await fetch(db, _STALE_COUNT, {"current": CURRENT_RENDERER})
    return int(row.value)


def describe_stale(count: int) -> str:
    return (
        f"{count:,} stored record(s) were rendered by an older Markdown renderer than this "
        f"campaign-api's (version {CURRENT_RENDERER}), or never: {UPGRADE_ADVICE}"
    )


async def refuse_newer_renderer(db: AsyncSession) -> None:
    """NewerRenderer when a row was rendered by a newer renderer than this code's."""
    newest = int((await db.execute(_NEWEST_RENDERER)).scalar_one())
    if newest > CURRENT_RENDERER:
        raise NewerRenderer(
            f"this database holds renderings of Markdown renderer version {newest}, newer than this "
            f"campaign-api's ({CURRENT_RENDERER}): write to it with the newer campaign-api"
        )


async def render_stale(writer: RecordWriter, *, progress: Progress | None = None) -> None:
    """Render every stale row again, in batches (the caller holds the write lock)."""
    for kind in RECORD_KINDS.values():
        table = kind.table
        statement = (
            select(*(table.c[name] for name in data_columns(kind)))
            .where(table.c.renderer_version < CURRENT_RENDERER, table.c.id > bindparam("after"))
            .order_by(table.c.id)
            .limit(BATCH_SIZE)
        )
        after = ""
        while rows := (await writer.db.execute(statement, {"after": after})).all():
            await writer.write(kind.array, [dict(row._mapping) for row in rows])
            after = rows[-1].id
            if progress is not None:
                progress(writer.progress())
    await writer.flush()

"""Writes records: unchanged ones left alone, new Markdown rendered once, the feed kept.

Everything that writes users, campaigns or the five record types goes through a
`RecordWriter` (the importer, the re-rendering after a renderer change, the test
factories), so that what is stored beside a record always matches it:

- A record equal to its stored row (every column, the raw Markdown compared by digest)
  is counted `unchanged` and not written, unless its rendering is stale.
- Raw Markdown is rendered (engine/rendering.py) only when its digest changed, the record
  is new, or its stored rendering came from an older renderer: a record whose raw text is
  unchanged is never rendered again. The rendering, the raw text's digest, the renderer
  version and the digest of the record's single-record body are stored with the record.
- A changed record whose Markdown did not change keeps its rendering; its body digest is
  computed again only when a field of the body changed.
- The change feed learns where every written or deleted record now stands
  (engine/feed_writer.py).

Batches are prepared (stored state read, renderings submitted) and completed (rows and
feed written) in order, up to `depth` at a time: while workers render one batch, the
caller reads and validates the next ones.
"""

from __future__ import annotations

import time
from collections import defaultdict, deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import BindParameter, RowMapping, Table, bindparam, delete, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from engine.feed_writer import FeedWriter, RecordState
from engine.public_body import body_digest, source_digest
from engine.record_kinds import RECORD_KINDS, RecordKind
from engine.rendering import CURRENT_RENDERER, Rendering, RenderJob, RenderPool
from engine.tables import Campaign, User
from engine.upserts import upsert

Record = dict[str, Any]
# Users and campaigns: written as given, nothing derived from them.
PLAIN_TABLES: Mapping[str, Table] = {
    "users": User.__table__,  # type: ignore[attr-defined]
    "campaigns": Campaign.__table__,  # type: ignore[attr-defined]
}
_BOOKKEEPING = ("source_digest", "renderer_version", "body_digest")


@dataclass(slots=True)
class WriteCounts:
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    deleted: int = 0

    def add(self, other: WriteCounts) -> None:
        self.created += other.created
        self.updated += other.updated
        self.unchanged += other.unchanged
        self.deleted += other.deleted


@dataclass(frozen=True, slots=True)
class WriteProgress:
    """How far a writer has come: records written or found unchanged, and how much of their
    Markdown was rendered, in how long."""

    records: int
    rendered_records: int
    rendered_bytes: int
    elapsed_s: float


Progress = Callable[[WriteProgress], None]


@dataclass(slots=True)
class _Batch:
    array: str
    counts: WriteCounts = field(default_factory=WriteCounts)
    # Complete rows, for an upsert.
    rows: list[Record] = field(default_factory=list)
    # Rows whose rendering is pending: the renderings fill them in, in order.
    rendered: list[Record] = field(default_factory=list)
    renders: Any = None  # asyncio.Future[list[Rendering]]
    # Rows that keep their stored rendering: their other columns and body digest change.
    kept: list[Record] = field(default_factory=list)
    rendered_bytes: int = 0


def data_columns(kind: RecordKind) -> list[str]:
    """The columns a writer is given (the raw Markdown included): all but what is derived."""
    derived = {*_BOOKKEEPING, kind.markdown_column, kind.text_column}
    return [column.name for column in kind.table.columns if column.name not in derived]


class RecordWriter:
    """The record writes of one transaction (`db`), which began at `feed.now`."""

    def __init__(self, db: AsyncSession, *, renderer: RenderPool, feed: FeedWriter, depth: int = 1) -> None:
        self.db = db
        self.renderer = renderer
        self.feed = feed
        self.depth = depth
        self.counts: dict[str, WriteCounts] = defaultdict(WriteCounts)
        self.records_done = 0
        self.rendered_records = 0
        self.rendered_bytes = 0
        self._started = time.perf_counter()
        self._pending: deque[_Batch] = deque()

    def progress(self) -> WriteProgress:
        return WriteProgress(
            records=self.records_done,
            rendered_records=self.rendered_records,
            rendered_bytes=self.rendered_bytes,
            elapsed_s=time.perf_counter() - self._started,
        )

    async def write(self, array: str, records: Sequence[Record]) -> None:
        """Write `records` (of one array, each id once, all columns of `data_columns`);
        done by the time `flush()` returns."""
        kind = RECORD_KINDS.get(array)
        batch = await (self._plan_plain(array, records) if kind is None else self._plan(kind, records))
        self._pending.append(batch)
        while len(self._pending) > self.depth:
            await self._complete(self._pending.popleft())

    async def flush(self) -> None:
        while self._pending:
            await self._complete(self._pending.popleft())

    def cancel(self) -> None:
        """Forget the batches not written yet (the transaction is being rolled back)."""
        for batch in self._pending:
            if batch.renders is not None:
                batch.renders.cancel()
        self._pending.clear()

    async def delete(self, array: str, record_ids: Sequence[str]) -> None:
        """Delete records of one of the five types (after `flush()`), with their tombstones."""
        kind = RECORD_KINDS[array]
        if not record_ids:
            return
        await self.db.execute(delete(kind.table).where(kind.table.c.id.in_(record_ids)))
        await self.feed.record(kind.record_type, [RecordState(record_id, None, False, "") for record_id in record_ids])
        self.counts[array].deleted += len(record_ids)

    # -- planning ------------------------------------------------------------------------

    async def _plan_plain(self, array: str, records: Sequence[Record]) -> _Batch:
        table = PLAIN_TABLES[array]
        stored = await self._stored(table, [column.name for column in table.columns], records)
        batch = _Batch(array)
        for record in records:
            old = stored.get(record["id"])
            if old is None:
                batch.counts.created += 1
            elif all(record[name] == old[name] for name in record):
                batch.counts.unchanged += 1
                continue
            else:
                batch.counts.updated += 1
            batch.rows.append(record)
        return batch

    async def _plan(self, kind: RecordKind, records: Sequence[Record]) -> _Batch:
        columns = [name for name in data_columns(kind) if name != kind.source]
        stored = await self._stored(kind.table, [*columns, *_BOOKKEEPING], records)
        batch = _Batch(kind.array)
        jobs: list[RenderJob] = []
        needs_body_digest: list[Record] = []
        for record in records:
            row = {**record, "source_digest": source_digest(record[kind.source])}
            old = stored.get(record["id"])
            rendering_stands = (
                old is not None
                and old["source_digest"] == row["source_digest"]
                and old["renderer_version"] >= CURRENT_RENDERER
            )
            if old is None:
                batch.counts.created += 1
            elif old["source_digest"] == row["source_digest"] and all(record[n] == old[n] for n in columns):
                batch.counts.unchanged += 1
                if rendering_stands:
                    continue
            else:
                batch.counts.updated += 1
            if rendering_stands:
                # Other columns changed; the body digest too if a field of the body did.
                assert old is not None
                if all(record[name] == old[name] for name in kind.body_columns):
                    row["body_digest"] = old["body_digest"]
                else:
                    needs_body_digest.append(row)
                batch.kept.append(row)
            else:
                batch.rendered.append(row)
                jobs.append(RenderJob(kind.record_type, {n: record[n] for n in kind.body_columns}, record[kind.source]))
                batch.rendered_bytes += jobs[-1].size
        await self._recompute_body_digests(kind, needs_body_digest)
        batch.renders = self.renderer.submit(jobs)
        return batch

    async def _stored(
        self, table: Table, columns: list[str], records: Sequence[Record]
    ) -> dict[str, RowMapping]:
        if not records:
            return {}
        statement = select(*(table.c[name] for name in columns)).where(table.c.id.in_([r["id"] for r in records]))
        return {row.id: row._mapping for row in await self.db.execute(statement)}

    async def _recompute_body_digests(self, kind: RecordKind, rows: list[Record]) -> None:
        """Body digests of rows whose body changed but whose stored rendering stands."""
        if not rows:
            return
        table = kind.table
        rendered = {
            row.id: row
            for row in await self.db.execute(
                select(table.c.id, table.c[kind.markdown_column], table.c[kind.text_column]).where(
                    table.c.id.in_([row["id"] for row in rows])
                )
            )
        }
        for row in rows:
            stored = rendered[row["id"]]._mapping
            values = {
                **row,
                kind.markdown_column: stored[kind.markdown_column],
                kind.text_column: stored[kind.text_column],
            }
            row["body_digest"] = body_digest(kind.record_type, values)

    # -- writing -------------------------------------------------------------------------

    async def _complete(self, batch: _Batch) -> None:
        kind = RECORD_KINDS.get(batch.array)
        if kind is None:
            if batch.rows:
                await self.db.execute(upsert(self.db, PLAIN_TABLES[batch.array]), batch.rows)
        else:
            renderings: list[Rendering] = await batch.renders
            for row, rendering in zip(batch.rendered, renderings, strict=True):
                row[kind.markdown_column] = rendering.markdown
                row[kind.text_column] = rendering.text
                row["body_digest"] = rendering.body_digest
                row["renderer_version"] = CURRENT_RENDERER
            if batch.rendered:
                await self.db.execute(upsert(self.db, kind.table), batch.rendered)
            if batch.kept:
                await self.db.execute(_kept_update(kind), [_kept_parameters(kind, row) for row in batch.kept])
            states = [
                RecordState(row["id"], row["campaign_id"], kind.visible(row), row["body_digest"])
                for row in (*batch.rendered, *batch.kept)
            ]
            await self.feed.record(kind.record_type, states)
            self.rendered_records += len(batch.rendered)
            self.rendered_bytes += batch.rendered_bytes
        self.counts[batch.array].add(batch.counts)
        self.records_done += batch.counts.created + batch.counts.updated + batch.counts.unchanged


def _kept_columns(kind: RecordKind) -> list[str]:
    """What a row that keeps its rendering updates: every data column but the raw
    Markdown (unchanged), and the body digest."""
    return [name for name in data_columns(kind) if name not in ("id", kind.source)] + ["body_digest"]


def _kept_update(kind: RecordKind) -> Any:
    table = kind.table
    # Parameter names other than the columns': SQLAlchemy reserves those for itself.
    values: dict[str, BindParameter[Any]] = {name: bindparam(f"new_{name}") for name in _kept_columns(kind)}
    return update(table).where(table.c.id == bindparam("key_id")).values(values)


def _kept_parameters(kind: RecordKind, row: Record) -> dict[str, Any]:
    return {"key_id": row["id"], **{f"new_{name}": row[name] for name in _kept_columns(kind)}}

"""Load a campaign export (contract §8) into the database: validate, then write by id.

The file is streamed twice, because its arrays may come in any order while the foreign
keys want users before campaigns before everything else:

1. users are written as they stream; campaigns are validated and held (a few short
   rows) until every user of the file is in; the file's locations are indexed
   (id -> campaign) so that a location may name a parent listed after it.
2. sessions, locations, characters, factions and items are written as they stream.

Records go to the record writer (engine/record_writer.py) in batches of `BATCH_SIZE`: it
skips unchanged records, renders changed Markdown on every core while the next batches
are read, and keeps the change feed. Memory holds a few batches, never the file.
References (campaign, owner, parent) are checked per batch against the file and the
database. The first invalid record raises InvalidExport; the import runs in the caller's
session and commits nothing itself, so the caller's rollback leaves the database (change
feed included) as it was.

With `replace` (contract §10.1) each campaign of the file's `campaigns` array is the
file's to describe completely: its sessions, locations, characters, factions and items
that the file does not hold are deleted, in the same transaction. A location of such a
campaign must then find its parent in the file: any other would be deleted.

An import holds the write lock (engine/write_lock.py) for its whole transaction, and
ends by rendering again the rows of older renderers that it did not write itself.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from sqlalchemy import ScalarResult, Table, select, text
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from engine.errors import InvalidExport
from engine.export_format import (
    RECORD_MODELS,
    ExportedCampaign,
    ExportedLocation,
    ExportRecord,
    describe_record,
    describe_validation_error,
)
from engine.export_stream import iter_records
from engine.record_kinds import RECORD_KINDS
from engine.record_writer import PLAIN_TABLES, Progress, RecordWriter, WriteCounts
from engine.rendering import RenderPool
from engine.renderings import render_stale
from engine.tables import Location
from engine.write_transaction import writing

BATCH_SIZE = 500

FIRST_PASS = ("users", "campaigns", "locations")
SECOND_PASS = ("sessions", "locations", "characters", "factions", "items")

Batch = list[tuple[int, Any]]  # (index in its array, validated record)


@dataclass(slots=True)
class ImportSummary:
    """Per array of the export, in write order: rows created, updated, found unchanged and
    deleted (`replace`); and the Markdown rendered for them."""

    counts: dict[str, WriteCounts] = field(default_factory=lambda: {name: WriteCounts() for name in RECORD_MODELS})
    rendered_records: int = 0
    rendered_bytes: int = 0
    # Rows of older renderers, not in the file, rendered again after the import.
    rerendered_records: int = 0

    @property
    def total(self) -> int:
        """Records of the file (created, updated or unchanged)."""
        return sum(count.created + count.updated + count.unchanged for count in self.counts.values())


async def import_campaign_export(
    db: AsyncSession,
    *,
    source: Path,
    progress: Progress | None = None,
    replace: bool = False,
    renderer: RenderPool | None = None,
) -> ImportSummary:
    """Import the export at `source`. `progress` is called after each batch written;
    `renderer` defaults to one process per core, started once there is enough to render."""
    async with writing(db, renderer=renderer) as new_writer:
        summary = await _Import(db, writer=new_writer(), progress=progress, replace=replace).run(source)
        stale = new_writer()
        await render_stale(stale)
    summary.rerendered_records = stale.rendered_records
    return summary


def _record_error(array: str, index: int, record_id: str, problem: str) -> InvalidExport:
    return InvalidExport(f'{array}[{index}] (id "{record_id}"): {problem}')


class _Import:
    def __init__(self, db: AsyncSession, *, writer: RecordWriter, progress: Progress | None, replace: bool) -> None:
        self.db = db
        self.writer = writer
        self.progress = progress
        self.replace = replace
        self.batches: dict[str, Batch] = defaultdict(list)
        # id -> index of its first occurrence, per array: a repeated id is an error.
        self.first_seen: dict[str, dict[str, int]] = defaultdict(dict)
        self.file_locations: dict[str, str] = {}
        # The campaigns of the file's `campaigns` array (the ones `replace` describes).
        self.file_campaigns: set[str] = set()
        self.known_campaigns: set[str] = set()

    async def run(self, source: Path) -> ImportSummary:
        await self._prefer_fast_compression()
        await self._write_records(source)
        if self.replace:
            await self._delete_what_the_file_lacks()
        summary = ImportSummary(
            rendered_records=self.writer.rendered_records, rendered_bytes=self.writer.rendered_bytes
        )
        summary.counts.update(self.writer.counts)
        return summary

    async def _write_records(self, source: Path) -> None:
        campaigns: Batch = []
        for array, index, raw in iter_records(source, arrays=RECORD_MODELS, wanted=FIRST_PASS):
            if array == "locations":
                self._index_location(raw)
            elif array == "campaigns":
                campaign = self._validate(array, index, raw)
                campaigns.append((index, campaign))
                self.file_campaigns.add(campaign.id)
            else:
                await self._queue(array, index, self._validate(array, index, raw))
        await self._flush("users")
        await self.writer.flush()
        for index, campaign in campaigns:
            await self._queue("campaigns", index, campaign)
        await self._flush("campaigns")
        await self.writer.flush()

        for array, index, raw in iter_records(source, arrays=RECORD_MODELS, wanted=SECOND_PASS):
            await self._queue(array, index, self._validate(array, index, raw))
        for array in SECOND_PASS:
            await self._flush(array)
        await self.writer.flush()
        self._report()

    async def _prefer_fast_compression(self) -> None:
        # Summaries are TOASTed; PostgreSQL's default pglz makes the server the bottleneck
        # of a large import (about 5x slower than lz4). SET LOCAL ends with the transaction.
        if self.db.get_bind().dialect.name != "postgresql":
            return
        has_lz4 = await self.db.scalar(
            text("SELECT 'lz4' = ANY(enumvals) FROM pg_settings WHERE name = 'default_toast_compression'")
        )
        if has_lz4:
            await self.db.execute(text("SET LOCAL default_toast_compression = lz4"))

    def _index_location(self, raw: dict[str, Any]) -> None:
        # Only well-typed pairs are indexed; the second pass reports anything else.
        location_id, campaign_id = raw.get("id"), raw.get("campaign_id")
        if isinstance(location_id, str) and isinstance(campaign_id, str):
            self.file_locations[location_id] = campaign_id

    def _validate(self, array: str, index: int, raw: dict[str, Any]) -> ExportRecord:
        try:
            record = RECORD_MODELS[array].model_validate(raw)
        except ValidationError as exc:
            raise InvalidExport(f"{describe_record(array, index, raw)}: {describe_validation_error(exc)}") from None
        first = self.first_seen[array].setdefault(record.id, index)
        if first != index:
            raise _record_error(array, index, record.id, f"id: already used by {array}[{first}]")
        return record

    async def _queue(self, array: str, index: int, record: ExportRecord) -> None:
        batch = self.batches[array]
        batch.append((index, record))
        if len(batch) >= BATCH_SIZE:
            await self._flush(array)

    async def _flush(self, array: str) -> None:
        batch = self.batches.pop(array, None)
        if not batch:
            return
        await self._check_references(array, batch)
        await self.writer.write(array, [record.model_dump() for _, record in batch])
        self._report()

    def _report(self) -> None:
        if self.progress is not None:
            self.progress(self.writer.progress())

    async def _delete_what_the_file_lacks(self) -> None:
        if not self.file_campaigns:
            return
        for array, kind in RECORD_KINDS.items():
            in_file = self.first_seen[array]
            stored_ids: ScalarResult[str] = await self.db.scalars(
                select(kind.table.c.id).where(kind.table.c.campaign_id.in_(self.file_campaigns))
            )
            absent: list[str] = [record_id for record_id in stored_ids if record_id not in in_file]
            for start in range(0, len(absent), BATCH_SIZE):
                await self.writer.delete(array, absent[start : start + BATCH_SIZE])

    async def _existing_ids(self, table: Table, ids: Collection[str]) -> set[str]:
        if not ids:
            return set()
        result = await self.db.execute(select(table.c.id).where(table.c.id.in_(ids)))
        return set(result.scalars())

    async def _check_references(self, array: str, batch: Batch) -> None:
        if array == "campaigns":
            await self._check_owners(batch)
        elif array != "users":
            await self._check_campaigns(array, batch)
        if array == "locations":
            await self._check_parents(batch)

    async def _check_owners(self, batch: Batch) -> None:
        campaigns: list[tuple[int, ExportedCampaign]] = batch
        users = await self._existing_ids(PLAIN_TABLES["users"], {c.owner_id for _, c in campaigns if c.owner_id})
        for index, campaign in campaigns:
            if campaign.owner_id is not None and campaign.owner_id not in users:
                raise _record_error("campaigns", index, campaign.id, f'owner_id: unknown user "{campaign.owner_id}"')

    async def _check_campaigns(self, array: str, batch: Batch) -> None:
        # The file's campaigns are written by now, so the database knows every valid id.
        unseen = {record.campaign_id for _, record in batch} - self.known_campaigns
        self.known_campaigns |= await self._existing_ids(PLAIN_TABLES["campaigns"], unseen)
        for index, record in batch:
            if record.campaign_id not in self.known_campaigns:
                raise _record_error(array, index, record.id, f'campaign_id: unknown campaign "{record.campaign_id}"')

    async def _check_parents(self, batch: Batch) -> None:
        locations: list[tuple[int, ExportedLocation]] = batch
        stored = await self._stored_location_campaigns(
            {loc.parent_id for _, loc in locations if loc.parent_id and loc.parent_id not in self.file_locations}
        )
        for index, location in locations:
            parent_id = location.parent_id
            if parent_id is None:
                continue
            if parent_id == location.id:
                raise _record_error(
                    "locations",
                    index,
                    location.id,
                    "parent_id: a location cannot be its own parent",
                )
            # A location of the file overrides its stored row, campaign included; with
            # `replace`, a stored location of a campaign of the file is about to go.
            replaced = self.replace and location.campaign_id in self.file_campaigns
            parent_campaign = self.file_locations.get(parent_id, None if replaced else stored.get(parent_id))
            if parent_campaign is None:
                raise _record_error("locations", index, location.id, f'parent_id: unknown location "{parent_id}"')
            if parent_campaign != location.campaign_id:
                raise _record_error(
                    "locations",
                    index,
                    location.id,
                    f'parent_id: location "{parent_id}" belongs to another campaign',
                )

    async def _stored_location_campaigns(self, ids: Collection[str]) -> dict[str, str]:
        if not ids:
            return {}
        statement = select(col(Location.id), col(Location.campaign_id)).where(col(Location.id).in_(ids))
        rows = await self.db.execute(statement)
        return {row.id: row.campaign_id for row in rows}

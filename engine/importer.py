"""Load a campaign export (contract §8) into the database: validate, then upsert by id.

The file is streamed twice, because its arrays may come in any order while the foreign
keys want users before campaigns before everything else:

1. users are written as they stream; campaigns are validated and held (a few short
   rows) until every user of the file is in; the file's locations are indexed
   (id -> campaign) so that a location may name a parent listed after it.
2. sessions, locations, characters, factions and items are written as they stream.

Rows go out in batches of `BATCH_SIZE` as one `INSERT ... ON CONFLICT (id) DO UPDATE`
each, so memory holds one batch, never the file. References (campaign, owner, parent)
are checked per batch against the file and the database. The first invalid record
raises InvalidExport; the import runs in the caller's session and writes nothing it
commits itself, so the caller's rollback leaves the database as it was.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from sqlalchemy import Table, select, text
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.dml import Insert

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
from engine.tables import Campaign, Character, Faction, Item, Location, Session, User

BATCH_SIZE = 500

TABLES: Mapping[str, Table] = {
    "users": User.__table__,  # type: ignore[attr-defined]
    "campaigns": Campaign.__table__,  # type: ignore[attr-defined]
    "sessions": Session.__table__,  # type: ignore[attr-defined]
    "locations": Location.__table__,  # type: ignore[attr-defined]
    "characters": Character.__table__,  # type: ignore[attr-defined]
    "factions": Faction.__table__,  # type: ignore[attr-defined]
    "items": Item.__table__,  # type: ignore[attr-defined]
}
FIRST_PASS = ("users", "campaigns", "locations")
SECOND_PASS = ("sessions", "locations", "characters", "factions", "items")
_INSERTS: Mapping[str, Callable[[Table], Insert]] = {
    "postgresql": postgresql.insert,
    "sqlite": sqlite.insert,
}

Progress = Callable[[int], None]
Batch = list[tuple[int, Any]]  # (index in its array, validated record)


@dataclass(slots=True)
class RecordCounts:
    created: int = 0
    updated: int = 0


@dataclass(slots=True)
class ImportSummary:
    """Rows created and updated per array of the export, in write order."""

    counts: dict[str, RecordCounts] = field(default_factory=lambda: {name: RecordCounts() for name in RECORD_MODELS})

    @property
    def total(self) -> int:
        return sum(count.created + count.updated for count in self.counts.values())


async def import_campaign_export(db: AsyncSession, *, source: Path, progress: Progress | None = None) -> ImportSummary:
    """Import the export at `source`; `progress` gets the running count of records written."""
    return await _Import(db, progress=progress).run(source)


def _record_error(array: str, index: int, record_id: str, problem: str) -> InvalidExport:
    return InvalidExport(f'{array}[{index}] (id "{record_id}"): {problem}')


class _Import:
    def __init__(self, db: AsyncSession, *, progress: Progress | None) -> None:
        self.db = db
        self.progress = progress
        self.summary = ImportSummary()
        self.written = 0
        self.batches: dict[str, Batch] = defaultdict(list)
        # id -> index of its first occurrence, per array: a repeated id is an error.
        self.first_seen: dict[str, dict[str, int]] = defaultdict(dict)
        self.file_locations: dict[str, str] = {}
        self.known_campaigns: set[str] = set()
        self.upserts: dict[str, Insert] = {}

    async def run(self, source: Path) -> ImportSummary:
        await self._prefer_fast_compression()
        campaigns: Batch = []
        for array, index, raw in iter_records(source, arrays=RECORD_MODELS, wanted=FIRST_PASS):
            if array == "locations":
                self._index_location(raw)
            elif array == "campaigns":
                campaigns.append((index, self._validate(array, index, raw)))
            else:
                await self._queue(array, index, self._validate(array, index, raw))
        await self._flush("users")
        for index, campaign in campaigns:
            await self._queue("campaigns", index, campaign)
        await self._flush("campaigns")

        for array, index, raw in iter_records(source, arrays=RECORD_MODELS, wanted=SECOND_PASS):
            await self._queue(array, index, self._validate(array, index, raw))
        for array in SECOND_PASS:
            await self._flush(array)
        return self.summary

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
        table = TABLES[array]
        existing = await self._existing_ids(table, {record.id for _, record in batch})
        await self.db.execute(self._upsert(array), [record.model_dump() for _, record in batch])
        counts = self.summary.counts[array]
        counts.updated += len(existing)
        counts.created += len(batch) - len(existing)
        self.written += len(batch)
        if self.progress is not None:
            self.progress(self.written)

    def _upsert(self, array: str) -> Insert:
        if array not in self.upserts:
            table = TABLES[array]
            statement = _INSERTS[self.db.get_bind().dialect.name](table)
            self.upserts[array] = statement.on_conflict_do_update(  # type: ignore[attr-defined]
                index_elements=[table.c.id],
                set_={
                    column.name: statement.excluded[column.name] for column in table.columns if not column.primary_key
                },  # type: ignore[attr-defined]
            )
        return self.upserts[array]

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
        users = await self._existing_ids(TABLES["users"], {c.owner_id for _, c in campaigns if c.owner_id})
        for index, campaign in campaigns:
            if campaign.owner_id is not None and campaign.owner_id not in users:
                raise _record_error("campaigns", index, campaign.id, f'owner_id: unknown user "{campaign.owner_id}"')

    async def _check_campaigns(self, array: str, batch: Batch) -> None:
        # The file's campaigns are written by now, so the database knows every valid id.
        unseen = {record.campaign_id for _, record in batch} - self.known_campaigns
        self.known_campaigns |= await self._existing_ids(TABLES["campaigns"], unseen)
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
            # A location of the file overrides its stored row, campaign included.
            parent_campaign = self.file_locations.get(parent_id, stored.get(parent_id))
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
        rows = await self.db.execute(select(Location.id, Location.campaign_id).where(Location.id.in_(ids)))  # type: ignore[attr-defined]
        return {row.id: row.campaign_id for row in rows}

"""`import --replace` (contract §10.1), on SQLite and PostgreSQL: the file is the whole state
of each campaign in its `campaigns` array."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from engine.errors import InvalidExport
from engine.importer import import_campaign_export
from engine.keys import create_api_key
from engine.tables import ApiKey, Character, Faction, Item, Location, Session, User
from tests.engine.exports import ExportFiles
from tests.factories import base_export, export_campaign, export_entity, export_session, export_user

RECORD_TABLES: dict[str, Any] = {
    "sessions": Session,
    "locations": Location,
    "characters": Character,
    "factions": Faction,
    "items": Item,
}

# Campaign @c with two of everything; campaign @other with one session.
FULL = base_export(
    users=[export_user(), export_user("@u2", name="Player")],
    campaigns=[export_campaign(), export_campaign("@other", name="Other")],
    sessions=[
        export_session("@s1"),
        export_session("@s2", visibility="private"),
        export_session("@s-other", campaign_id="@other"),
    ],
    locations=[export_entity("@l1"), export_entity("@l2", parent_id="@l1")],
    characters=[export_entity("@ch1"), export_entity("@ch2", hidden_from_wiki=True)],
    factions=[export_entity("@f1"), export_entity("@f2")],
    items=[export_entity("@i1"), export_entity("@i2")],
)


async def stored_ids(db: AsyncSession, files: ExportFiles) -> dict[str, set[str]]:
    found = {}
    for array, table in RECORD_TABLES.items():
        rows = await db.execute(select(table.id).where(table.id.startswith(files.prefix)))
        found[array] = {record_id.replace(files.prefix, "@") for record_id in rows.scalars()}
    return found


class TestReplace:
    async def test_what_the_file_lacks_of_its_campaigns_is_deleted(self, db: AsyncSession, files: ExportFiles) -> None:
        await import_campaign_export(db, source=files.write(FULL, "full.json"))
        # Only @c is described; each array keeps one record of it (locations: the parent).
        snapshot = base_export(
            users=[export_user()],
            campaigns=[export_campaign()],
            sessions=[export_session("@s1")],
            locations=[export_entity("@l1")],
            characters=[export_entity("@ch1")],
            factions=[export_entity("@f1")],
            items=[export_entity("@i1")],
        )
        summary = await import_campaign_export(db, source=files.write(snapshot, "snapshot.json"), replace=True)

        assert {array: summary.counts[array].deleted for array in RECORD_TABLES} == dict.fromkeys(RECORD_TABLES, 1)
        assert {array: summary.counts[array].unchanged for array in RECORD_TABLES} == dict.fromkeys(RECORD_TABLES, 1)
        assert (summary.counts["users"].deleted, summary.counts["campaigns"].deleted) == (0, 0)
        assert await stored_ids(db, files) == {
            "sessions": {"@s1", "@s-other"},  # another campaign's record stays
            "locations": {"@l1"},
            "characters": {"@ch1"},
            "factions": {"@f1"},
            "items": {"@i1"},
        }
        # Users the file leaves out are not the campaign's to delete.
        assert await db.scalar(select(func.count()).where(User.id == files.ids("@u2"))) == 1  # type: ignore[arg-type]

    async def test_an_array_the_file_leaves_out_empties_it(self, db: AsyncSession, files: ExportFiles) -> None:
        await import_campaign_export(db, source=files.write(FULL, "full.json"))
        snapshot = {"campaigns": [export_campaign()], "sessions": [export_session("@s1")]}
        summary = await import_campaign_export(db, source=files.write(snapshot, "snapshot.json"), replace=True)
        assert summary.counts["items"].deleted == 2
        assert (await stored_ids(db, files))["locations"] == set()

    async def test_keys_of_the_campaign_are_untouched(self, db: AsyncSession, files: ExportFiles) -> None:
        await import_campaign_export(db, source=files.write(FULL, "full.json"))
        issued = await create_api_key(
            db, campaign_id=files.ids("@c"), owner_id=files.ids("@u"), label=None, pepper=b"p" * 32
        )
        await import_campaign_export(
            db, source=files.write({"campaigns": [export_campaign()]}, "bare.json"), replace=True
        )
        assert await db.get(ApiKey, issued.key_id) is not None

    async def test_without_replace_nothing_is_deleted(self, db: AsyncSession, files: ExportFiles) -> None:
        await import_campaign_export(db, source=files.write(FULL, "full.json"))
        summary = await import_campaign_export(db, source=files.write({"campaigns": [export_campaign()]}, "bare.json"))
        assert sum(count.deleted for count in summary.counts.values()) == 0
        assert (await stored_ids(db, files))["items"] == {"@i1", "@i2"}

    async def test_a_record_moved_out_of_a_described_campaign_is_not_deleted(
        self, db: AsyncSession, files: ExportFiles
    ) -> None:
        await import_campaign_export(db, source=files.write(FULL, "full.json"))
        moved = base_export(
            campaigns=[export_campaign()],
            sessions=[export_session("@s1"), export_session("@s2", campaign_id="@other")],
            locations=[],
        )
        summary = await import_campaign_export(db, source=files.write(moved, "moved.json"), replace=True)
        assert summary.counts["sessions"].deleted == 0
        assert (await db.get(Session, files.ids("@s2"))).campaign_id == files.ids("@other")  # type: ignore[union-attr]

    async def test_a_parent_the_file_lacks_is_an_error_not_a_dangling_reference(
        self, db: AsyncSession, files: ExportFiles
    ) -> None:
        await import_campaign_export(db, source=files.write(FULL, "full.json"))
        orphan = base_export(
            campaigns=[export_campaign()], sessions=[], locations=[export_entity("@l2", parent_id="@l1")]
        )
        with pytest.raises(InvalidExport, match=r'locations\[0\] .*parent_id: unknown location "'):
            async with db.begin_nested():
                await import_campaign_export(db, source=files.write(orphan, "orphan.json"), replace=True)
        # Without --replace the stored parent is a valid reference.
        await import_campaign_export(db, source=files.write(orphan, "orphan.json"))

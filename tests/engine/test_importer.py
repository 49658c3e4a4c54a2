"""The campaign export importer, on SQLite and PostgreSQL.

Exports are written to files as JSON. Ids in them start with "@", replaced by a prefix
unique to the test, so no test depends on what another left in the shared database.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from importlib import resources
from typing import Any

import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from engine.errors import InvalidExport
from engine.export_format import MAX_MARKDOWN_BYTES
from engine.importer import BATCH_SIZE, ImportSummary, import_campaign_export
from engine.record_writer import WriteCounts, WriteProgress
from engine.tables import Campaign, Character, Item, Location, Session
from tests.engine.exports import ALL_TABLES, DEMO_EXPORT, ExportFiles
from tests.factories import DROP, base_export, export_campaign, export_entity, export_session, export_user


async def row_counts(db: AsyncSession) -> dict[str, int]:
    return {table.__tablename__: await db.scalar(select(func.count()).select_from(table)) for table in ALL_TABLES}


async def fetch(db: AsyncSession, table: Any, record_id: str) -> Any:
    # populate_existing: rows change under the identity map through the importer's Core upserts.
    statement = select(table).where(table.id == record_id).execution_options(populate_existing=True)
    return (await db.execute(statement)).scalar_one()


def counts(summary: ImportSummary) -> dict[str, tuple[int, int, int]]:
    """(created, updated, unchanged) of every array the import touched."""
    return {
        array: (c.created, c.updated, c.unchanged)
        for array, c in summary.counts.items()
        if c.created or c.updated or c.unchanged
    }


class TestImport:
    async def test_counts_and_values(self, db: AsyncSession, files: ExportFiles) -> None:
        export = base_export(
            sessions=[
                export_session(
                    "@s1",
                    recording_date="2024-05-01T21:00:00+02:00",
                    created_at="2024-05-02T08:00:00Z",
                    updated_at=None,
                    summary="# Recap",
                ),
                export_session("@s2", visibility="private", status="weird-status", session_type="text_doc"),
            ],
            locations=[export_entity("@l1", sort_order=None, icon="🏰")],
            characters=[export_entity("@ch", name="Tamsin", type="pc", hidden_from_wiki=True, sort_order=-3)],
            factions=[export_entity("@f", name="Compact", type="guild")],
            items=[export_entity("@i", name="Ember Key", type="key", image_url="https://example.com/key.png")],
        )
        summary = await import_campaign_export(db, source=files.write(export))

        assert counts(summary) == {
            "users": (1, 0, 0),
            "campaigns": (1, 0, 0),
            "sessions": (2, 0, 0),
            "locations": (1, 0, 0),
            "characters": (1, 0, 0),
            "factions": (1, 0, 0),
            "items": (1, 0, 0),
        }
        assert summary.total == 8
        first = await fetch(db, Session, files.ids("@s1"))
        assert first.recording_date == datetime(2024, 5, 1, 19, tzinfo=UTC)
        assert first.recording_date.utcoffset().total_seconds() == 0
        assert first.created_at == datetime(2024, 5, 2, 8, tzinfo=UTC)
        assert (first.updated_at, first.summary, first.campaign_id) == (None, "# Recap", files.ids("@c"))
        second = await fetch(db, Session, files.ids("@s2"))
        assert (second.visibility, second.status, second.session_type) == ("private", "weird-status", "text_doc")
        assert (second.recording_date, second.summary) == (None, None)
        location = await fetch(db, Location, files.ids("@l1"))
        assert (location.hidden_from_wiki, location.sort_order, location.parent_id, location.icon) == (
            False,
            None,
            None,
            "🏰",
        )
        character = await fetch(db, Character, files.ids("@ch"))
        assert (character.hidden_from_wiki, character.sort_order, character.type) == (True, -3, "pc")
        item = await fetch(db, Item, files.ids("@i"))
        assert item.image_url == "https://example.com/key.png"
        owner = await fetch(db, Campaign, files.ids("@c"))
        assert owner.owner_id == files.ids("@u")

    async def test_reimport_updates_by_id(self, db: AsyncSession, files: ExportFiles) -> None:
        dated = export_session(recording_date="2024-05-01T19:00:00+00:00")
        await import_campaign_export(db, source=files.write(base_export(sessions=[dated])))
        renamed = export_session(title="Smoke, revised", recording_date=None)
        export = base_export(
            sessions=[renamed, export_session("@s2")], locations=[export_entity(name="Emberhold (ruined)")]
        )

        summary = await import_campaign_export(db, source=files.write(export))

        assert counts(summary) == {
            "users": (0, 0, 1),
            "campaigns": (0, 0, 1),
            "sessions": (1, 1, 0),
            "locations": (0, 1, 0),
        }
        stored = await fetch(db, Session, files.ids("@s1"))
        # An explicit null replaces the stored timestamp: the export is the new truth.
        assert (stored.title, stored.recording_date) == ("Smoke, revised", None)
        assert (await fetch(db, Location, files.ids("@l1"))).name == "Emberhold (ruined)"

    async def test_arrays_in_any_order(self, db: AsyncSession, files: ExportFiles) -> None:
        export = {
            "items": [export_entity("@i")],
            "sessions": [export_session()],
            "locations": [export_entity()],
            "campaigns": [export_campaign()],
            "users": [export_user()],
        }
        summary = await import_campaign_export(db, source=files.write(export))
        assert counts(summary) == {
            "users": (1, 0, 0),
            "campaigns": (1, 0, 0),
            "sessions": (1, 0, 0),
            "locations": (1, 0, 0),
            "items": (1, 0, 0),
        }

    async def test_campaign_without_owner(self, db: AsyncSession, files: ExportFiles) -> None:
        export = {"campaigns": [export_campaign(owner_id=None)], "sessions": [export_session()]}
        await import_campaign_export(db, source=files.write(export))
        assert (await fetch(db, Campaign, files.ids("@c"))).owner_id is None

    async def test_parent_listed_later(self, db: AsyncSession, files: ExportFiles) -> None:
        child = export_entity("@child", name="Antechamber", parent_id="@vault")
        parent = export_entity("@vault", name="Ninth Vault", hidden_from_wiki=True, parent_id="@l1")
        export = base_export(locations=[child, parent, export_entity()])
        await import_campaign_export(db, source=files.write(export))
        assert (await fetch(db, Location, files.ids("@child"))).parent_id == files.ids("@vault")
        assert (await fetch(db, Location, files.ids("@vault"))).parent_id == files.ids("@l1")

    async def test_parent_already_stored(self, db: AsyncSession, files: ExportFiles) -> None:
        await import_campaign_export(db, source=files.write(base_export(), "first.json"))
        later = {"locations": [export_entity("@child", parent_id="@l1")]}
        summary = await import_campaign_export(db, source=files.write(later, "later.json"))
        assert counts(summary) == {"locations": (1, 0, 0)}

    async def test_batches_and_progress(self, db: AsyncSession, files: ExportFiles) -> None:
        many = [export_session(f"@s{n}", summary="x" * 100) for n in range(BATCH_SIZE * 2 + 34)]
        reported: list[WriteProgress] = []
        summary = await import_campaign_export(
            db, source=files.write(base_export(sessions=many)), progress=reported.append
        )
        assert summary.counts["sessions"] == WriteCounts(created=len(many))
        records = [progress.records for progress in reported]
        assert records == sorted(records) and records[-1] == summary.total == len(many) + 3
        # Every summary was rendered, once; the demo-sized summaries stay in this process.
        assert reported[-1].rendered_records == summary.rendered_records == len(many) + 1
        assert reported[-1].rendered_bytes == summary.rendered_bytes == 100 * len(many)
        assert await db.scalar(select(func.count()).where(Session.id.startswith(files.prefix))) == len(many)

    async def test_bundled_demo_imports_cleanly(self, db: AsyncSession) -> None:
        with resources.as_file(DEMO_EXPORT) as source:
            demo = json.loads(source.read_text(encoding="utf-8"))
            summary = await import_campaign_export(db, source=source)
        for array, records in demo.items():
            assert summary.counts[array].created + summary.counts[array].updated == len(records)
        vault = await fetch(db, Location, "ash-l-ninth-vault")
        antechamber = await fetch(db, Location, "ash-l-antechamber")
        assert (vault.hidden_from_wiki, antechamber.hidden_from_wiki, antechamber.parent_id) == (
            True,
            False,
            "ash-l-ninth-vault",
        )


# (export, expected message): the message names the array, index, id and field.
BAD_EXPORTS: dict[str, tuple[dict[str, Any], str]] = {
    "missing required field": (
        base_export(sessions=[export_session(), export_session("@bad", title=DROP)]),
        'sessions[1] (id "@bad"): title: required field is missing',
    ),
    "bad timestamp": (
        base_export(sessions=[export_session(), export_session("@bad", recording_date="last Tuesday")]),
        "sessions[1] (id \"@bad\"): recording_date: not an ISO 8601 timestamp: 'last Tuesday'",
    ),
    "naive timestamp": (
        base_export(sessions=[export_session(), export_session("@bad", created_at="2024-05-01T19:00:00")]),
        'sessions[1] (id "@bad"): created_at: timestamp must include a UTC offset',
    ),
    "number as timestamp": (
        base_export(sessions=[export_session(), export_session("@bad", updated_at=1714590000)]),
        'sessions[1] (id "@bad"): updated_at: timestamp must be an ISO 8601 string or null',
    ),
    "unknown campaign": (
        base_export(sessions=[export_session(), export_session("@bad", campaign_id="@nope")]),
        'sessions[1] (id "@bad"): campaign_id: unknown campaign "@nope"',
    ),
    "title is a number": (
        base_export(sessions=[export_session(), export_session("@bad", title=5)]),
        'sessions[1] (id "@bad"): title: Input should be a valid string',
    ),
    "sort_order is a string": (
        base_export(locations=[export_entity(), export_entity("@bad", sort_order="x")]),
        'locations[1] (id "@bad"): sort_order: Input should be a valid integer',
    ),
    "sort_order is a bool": (
        base_export(locations=[export_entity(), export_entity("@bad", sort_order=True)]),
        'locations[1] (id "@bad"): sort_order: Input should be a valid integer',
    ),
    "sort_order is a fraction": (
        base_export(locations=[export_entity(), export_entity("@bad", sort_order=1.5)]),
        'locations[1] (id "@bad"): sort_order: Input should be a valid integer',
    ),
    "hidden_from_wiki is a string": (
        base_export(locations=[export_entity(), export_entity("@bad", hidden_from_wiki="yes")]),
        'locations[1] (id "@bad"): hidden_from_wiki: Input should be a valid boolean',
    ),
    "bad visibility": (
        base_export(sessions=[export_session(), export_session("@bad", visibility="friends")]),
        "sessions[1] (id \"@bad\"): visibility: Input should be 'public' or 'private'",
    ),
    "unknown parent": (
        base_export(locations=[export_entity(), export_entity("@bad", parent_id="@nowhere")]),
        'locations[1] (id "@bad"): parent_id: unknown location "@nowhere"',
    ),
    "parent in another campaign": (
        base_export(
            campaigns=[export_campaign(), export_campaign("@c2")],
            locations=[export_entity("@l2", campaign_id="@c2"), export_entity("@bad", parent_id="@l2")],
        ),
        'locations[1] (id "@bad"): parent_id: location "@l2" belongs to another campaign',
    ),
    "own parent": (
        base_export(locations=[export_entity(), export_entity("@bad", parent_id="@bad")]),
        'locations[1] (id "@bad"): parent_id: a location cannot be its own parent',
    ),
    "unknown field": (
        base_export(sessions=[export_session(), export_session("@bad", colour="red")]),
        'sessions[1] (id "@bad"): colour: unknown field',
    ),
    "parent_id on a character": (
        base_export(characters=[export_entity("@bad", parent_id="@l1")]),
        'characters[0] (id "@bad"): parent_id: unknown field',
    ),
    "empty id": (
        base_export(sessions=[export_session(), export_session("")]),
        "sessions[1]: id: String should have at least 1 character",
    ),
    "id too long": (
        base_export(users=[export_user(), export_user("x" * 65)]),
        'users[1] (id "' + "x" * 65 + '"): id: String should have at most 64 characters',
    ),
    "summary over the size limit": (
        base_export(sessions=[export_session(), export_session("@bad", summary="é" * (MAX_MARKDOWN_BYTES // 2) + "x")]),
        f'sessions[1] (id "@bad"): summary: Markdown of {MAX_MARKDOWN_BYTES + 1} bytes is over the limit of '
        f"{MAX_MARKDOWN_BYTES} bytes (256 KB)",
    ),
    "description over the size limit": (
        base_export(items=[export_entity("@bad", description="x" * (MAX_MARKDOWN_BYTES + 1))]),
        f'items[0] (id "@bad"): description: Markdown of {MAX_MARKDOWN_BYTES + 1} bytes is over the limit of '
        f"{MAX_MARKDOWN_BYTES} bytes (256 KB)",
    ),
    "summary too dense to render": (
        base_export(sessions=[export_session("@bad", summary="- a\n" * 10_000)]),
        'sessions[0] (id "@bad"): summary: Markdown too dense to render in time: 10000 non-blank lines, 0 nested '
        "list markers, 0 markup characters, 0 possible autolinks and 0 lines read again after quotes in 40000 "
        "bytes weigh 1620000 render units, over the 1000000 allowed for its size (split it into several records "
        "or write fewer, longer lines)",
    ),
    "id missing": (
        base_export(users=[export_user(), export_user(DROP)]),
        "users[1]: id: required field is missing",
    ),
    "duplicate id": (
        base_export(sessions=[export_session(), export_session("@s1")]),
        'sessions[1] (id "@s1"): id: already used by sessions[0]',
    ),
    "unknown owner": (
        base_export(campaigns=[export_campaign(), export_campaign("@bad", owner_id="@ghost")]),
        'campaigns[1] (id "@bad"): owner_id: unknown user "@ghost"',
    ),
    "record is not an object": (
        base_export(sessions=[export_session(), "oops"]),
        "sessions[1]: a record must be a JSON object",
    ),
    "array is not an array": (
        {**base_export(), "items": {"id": "@i"}},
        "items: must be an array",
    ),
    "unknown top-level key": (
        {**base_export(), "sesions": []},
        'unknown top-level key "sesions"',
    ),
}


class TestInvalidExport:
    @pytest.mark.parametrize(("export", "message"), BAD_EXPORTS.values(), ids=BAD_EXPORTS.keys())
    async def test_names_record_and_field_and_writes_nothing(
        self, db: AsyncSession, files: ExportFiles, export: dict[str, Any], message: str
    ) -> None:
        before = await row_counts(db)
        with pytest.raises(InvalidExport) as caught:
            async with db.begin_nested():
                await import_campaign_export(db, source=files.write(export))
        assert files.ids(message) in str(caught.value)
        assert await row_counts(db) == before

    async def test_failure_after_flushed_batches_writes_nothing(self, db: AsyncSession, files: ExportFiles) -> None:
        many = [export_session(f"@s{n}") for n in range(BATCH_SIZE * 2)]
        export = base_export(sessions=[*many, export_session("@bad", visibility="everyone")])
        before = await row_counts(db)
        with pytest.raises(InvalidExport, match=rf"sessions\[{len(many)}\] .*visibility"):
            async with db.begin_nested():
                await import_campaign_export(db, source=files.write(export))
        assert await row_counts(db) == before

    @pytest.mark.parametrize(
        ("text", "message"),
        [
            ('{"users": [\n  {"id": "@u"},\n  {"id": oops}\n]}', "malformed JSON at line 3, column 10"),
            ('{"users": [{"id": "@u"}', "malformed JSON at the end of the file"),
            ('{"users": []} trailing', "malformed JSON at line 1, column "),
            ("", "malformed JSON at the end of the file (byte 0)"),
            ('[{"id": "@u"}]', "a campaign export must be a JSON object"),
        ],
    )
    async def test_malformed_json_gives_position(
        self, db: AsyncSession, files: ExportFiles, text: str, message: str
    ) -> None:
        before = await row_counts(db)
        with pytest.raises(InvalidExport) as caught:
            async with db.begin_nested():
                await import_campaign_export(db, source=files.write(text))
        assert str(caught.value).startswith(files.ids(message))
        assert await row_counts(db) == before

"""The change feed (contract §10.2) as imports leave it, on SQLite and PostgreSQL.

Each test imports exports (tests/engine/exports.py) and reads the feed of one campaign
through engine/changes.py, from its start or from a cursor taken earlier.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from engine.changes import list_changes
from engine.cursor import Cursor, encode_cursor
from engine.errors import InvalidCursor, InvalidExport
from engine.importer import import_campaign_export
from engine.records import CampaignScope
from engine.rendering import CURRENT_RENDERER
from engine.tables import ChangeFeedEntry, Session
from tests.engine.exports import ExportFiles
from tests.factories import age_renderings, base_export, export_campaign, export_entity, export_session, export_user

Entry = tuple[str, str, str]  # (type, id, change)


async def read_feed(
    db: AsyncSession, files: ExportFiles, *, cursor: str | None = None, limit: int = 3, campaign_id: str = "@c"
) -> tuple[list[Any], str]:
    """Every entry of the campaign's feed after `cursor`, page by page, and where to resume."""
    scope = CampaignScope(campaign_id=files.ids(campaign_id))
    entries: list[Any] = []
    while True:
        page = await list_changes(db, scope=scope, limit=limit, cursor=cursor)
        assert page.next_cursor is not None
        entries += page.items
        cursor = page.next_cursor
        if not page.has_more:
            return entries, cursor


def triples(entries: list[Any], files: ExportFiles) -> list[Entry]:
    """(type, id with the test's prefix turned back into "@", change), in feed order."""
    return [(entry.type, entry.id.replace(files.prefix, "@"), entry.change) for entry in entries]


async def imported(db: AsyncSession, files: ExportFiles, export: dict[str, Any], *, replace: bool = False) -> Path:
    path = files.write(export, name=f"export-{files.prefix}{id(export)}.json")
    await import_campaign_export(db, source=path, replace=replace)
    return path


async def body_digests(db: AsyncSession, files: ExportFiles) -> dict[str, str]:
    statement = select(Session.id, Session.body_digest).where(Session.id.startswith(files.prefix))  # type: ignore[attr-defined]
    rows = await db.execute(statement)
    return {row.id: row.body_digest for row in rows}


# Campaign @c: two public sessions and a private one; a visible location and a hidden one;
# a visible character; a hidden item. Campaign @c2 has one public session.
MIXED = base_export(
    campaigns=[export_campaign(), export_campaign("@c2", name="Other")],
    sessions=[
        export_session("@s1", summary="# One\n\n:::gm\nsecret\n:::\n"),
        export_session("@s2", title="Two"),
        export_session("@s-private", visibility="private", summary="private"),
        export_session("@s-other", campaign_id="@c2"),
    ],
    locations=[export_entity("@l1", sort_order=1), export_entity("@l-hidden", hidden_from_wiki=True)],
    characters=[export_entity("@ch1", name="Mira")],
    items=[export_entity("@i-hidden", name="Key", hidden_from_wiki=True)],
)
VISIBLE_IN_C = {
    ("session", "@s1", "upsert"),
    ("session", "@s2", "upsert"),
    ("location", "@l1", "upsert"),
    ("character", "@ch1", "upsert"),
}


class TestFromTheStart:
    async def test_every_visible_record_once_as_upsert(self, db: AsyncSession, files: ExportFiles) -> None:
        await imported(db, files, MIXED)
        entries, _ = await read_feed(db, files)
        assert sorted(triples(entries, files)) == sorted(VISIBLE_IN_C)

    async def test_order_is_the_sequence_and_times_never_decrease(self, db: AsyncSession, files: ExportFiles) -> None:
        await imported(db, files, MIXED)
        await imported(
            db, files, base_export(campaigns=[export_campaign()], sessions=[export_session("@s2", title="Two, again")])
        )
        entries, _ = await read_feed(db, files)
        sequences = [entry.seq for entry in entries]
        assert sequences == sorted(sequences) and len(set(sequences)) == len(sequences)
        times = [entry.changed_at for entry in entries]
        assert times == sorted(times)
        assert all(moment.utcoffset().total_seconds() == 0 and moment.microsecond == 0 for moment in times)
        # The changed record moved to the end: it was the last change.
        assert triples(entries, files)[-1] == ("session", "@s2", "upsert")

    async def test_other_campaigns_changes_are_not_in_it(self, db: AsyncSession, files: ExportFiles) -> None:
        await imported(db, files, MIXED)
        entries, _ = await read_feed(db, files, campaign_id="@c2")
        assert triples(entries, files) == [("session", "@s-other", "upsert")]

    async def test_an_empty_feed_resumes_where_it_was_asked(self, db: AsyncSession, files: ExportFiles) -> None:
        await imported(db, files, base_export(sessions=[export_session(visibility="private")], locations=[]))
        scope = CampaignScope(campaign_id=files.ids("@c"))
        page = await list_changes(db, scope=scope, limit=None, cursor=None)
        assert (page.items, page.has_more, page.next_cursor) == ([], False, encode_cursor(Cursor(offset=0)))
        later = encode_cursor(Cursor(offset=7))
        assert (await list_changes(db, scope=scope, limit=None, cursor=later)).next_cursor == later


class TestWhatLeavesNoTrace:
    async def test_gm_only_edits_sort_order_and_never_visible_records(
        self, db: AsyncSession, files: ExportFiles
    ) -> None:
        await imported(db, files, MIXED)
        _, cursor = await read_feed(db, files)
        digests = await body_digests(db, files)
        changed = base_export(
            campaigns=[export_campaign(), export_campaign("@c2", name="Other")],
            sessions=[
                # Inside GM-only text, and a GM-only section added.
                export_session("@s1", summary="# One\n\n:::gm\nanother secret\n:::\n\n## GM notes\n\nmore\n"),
                export_session("@s2", title="Two"),
                # Never visible: edited, and a new one.
                export_session("@s-private", visibility="private", title="Renamed", summary="changed"),
                export_session("@s-new-private", visibility="private"),
                export_session("@s-other", campaign_id="@c2"),
            ],
            locations=[
                export_entity("@l1", sort_order=9),
                export_entity("@l-hidden", hidden_from_wiki=True, name="Moved"),
            ],
            characters=[export_entity("@ch1", name="Mira")],
            items=[export_entity("@i-hidden", name="Key", hidden_from_wiki=True, description="now described")],
        )
        await imported(db, files, changed)
        entries, _ = await read_feed(db, files, cursor=cursor)
        assert entries == []
        # The visible sessions' tags (their body digests) did not move either.
        after = await body_digests(db, files)
        visible = [files.ids(record) for record in ("@s1", "@s2", "@s-other")]
        assert [after[record] for record in visible] == [digests[record] for record in visible]

    async def test_a_never_visible_record_leaves_none_when_deleted(self, db: AsyncSession, files: ExportFiles) -> None:
        await imported(db, files, MIXED)
        _, cursor = await read_feed(db, files)
        without = {**MIXED, "sessions": [s for s in MIXED["sessions"] if s["id"] != "@s-private"]}
        await imported(db, files, without, replace=True)
        assert await read_feed(db, files, cursor=cursor) == ([], cursor)


class TestWhatIsAnnounced:
    async def test_a_record_changed_twice_appears_once_after_the_cursor(
        self, db: AsyncSession, files: ExportFiles
    ) -> None:
        await imported(db, files, MIXED)
        _, cursor = await read_feed(db, files)
        for title in ("Two, revised", "Two, final"):
            await imported(db, files, base_export(sessions=[export_session("@s2", title=title)], locations=[]))
        entries, _ = await read_feed(db, files, cursor=cursor)
        assert triples(entries, files) == [("session", "@s2", "upsert")]
        from_start, _ = await read_feed(db, files)
        assert sorted(triples(from_start, files)) == sorted(VISIBLE_IN_C)

    @pytest.mark.parametrize(
        "change",
        [
            pytest.param({"sessions": [export_session("@s2", title="Two", visibility="private")]}, id="made-private"),
            pytest.param({"locations": [export_entity("@l1", sort_order=1, hidden_from_wiki=True)]}, id="hidden"),
            pytest.param(
                {
                    "campaigns": [export_campaign(), export_campaign("@c2")],
                    "characters": [export_entity("@ch1", name="Mira", campaign_id="@c2")],
                },
                id="moved-to-another-campaign",
            ),
        ],
    )
    async def test_a_record_that_stops_being_visible_gets_a_delete(
        self, db: AsyncSession, files: ExportFiles, change: dict[str, Any]
    ) -> None:
        await imported(db, files, MIXED)
        _, cursor = await read_feed(db, files)
        await imported(db, files, base_export(**{"sessions": [], "locations": [], **change}))
        entries, _ = await read_feed(db, files, cursor=cursor)
        ((record_type, record_id, change_kind),) = triples(entries, files)
        assert change_kind == "delete"
        assert (record_type, record_id) in {(t, i) for t, i, _ in VISIBLE_IN_C}

    async def test_moved_record_is_an_upsert_in_its_new_campaign(self, db: AsyncSession, files: ExportFiles) -> None:
        await imported(db, files, MIXED)
        moved = export_entity("@ch1", name="Mira", campaign_id="@c2")
        await imported(
            db, files, base_export(campaigns=[export_campaign(), export_campaign("@c2")], characters=[moved])
        )
        entries, _ = await read_feed(db, files, campaign_id="@c2")
        assert triples(entries, files) == [("session", "@s-other", "upsert"), ("character", "@ch1", "upsert")]

    async def test_deleted_by_replace_is_a_delete(self, db: AsyncSession, files: ExportFiles) -> None:
        await imported(db, files, MIXED)
        _, cursor = await read_feed(db, files)
        without = {**MIXED, "characters": []}
        await imported(db, files, without, replace=True)
        entries, _ = await read_feed(db, files, cursor=cursor)
        assert triples(entries, files) == [("character", "@ch1", "delete")]
        # The delete stays, so a client reading from the start learns it too.
        from_start, _ = await read_feed(db, files)
        assert ("character", "@ch1", "delete") in triples(from_start, files)

    async def test_visible_again_after_a_delete_is_an_upsert_whatever_its_body(
        self, db: AsyncSession, files: ExportFiles
    ) -> None:
        await imported(db, files, MIXED)
        hidden = base_export(sessions=[], locations=[export_entity("@l1", sort_order=1, hidden_from_wiki=True)])
        await imported(db, files, hidden)
        _, cursor = await read_feed(db, files)
        await imported(db, files, base_export(sessions=[], locations=[export_entity("@l1", sort_order=1)]))
        entries, _ = await read_feed(db, files, cursor=cursor)
        assert triples(entries, files) == [("location", "@l1", "upsert")]

    async def test_every_entry_names_the_body_it_announced(self, db: AsyncSession, files: ExportFiles) -> None:
        await imported(db, files, MIXED)
        upserts = await db.execute(
            select(ChangeFeedEntry.record_id, ChangeFeedEntry.body_digest).where(  # type: ignore[call-overload]
                ChangeFeedEntry.record_type == "session", ChangeFeedEntry.change == "upsert"
            )
        )
        announced = {row.record_id: row.body_digest for row in upserts if row.record_id.startswith(files.prefix)}
        stored = await body_digests(db, files)
        assert announced == {record: stored[record] for record in announced} and len(announced) == 3


class TestCursors:
    @pytest.mark.parametrize(
        "cursor",
        [
            pytest.param("!!", id="not-base64"),
            pytest.param(encode_cursor(Cursor(offset=3, after=("2024-01-01T00:00:00+00:00", "s"))), id="list-seek"),
        ],
    )
    async def test_what_is_not_a_feed_cursor(self, db: AsyncSession, cursor: str) -> None:
        with pytest.raises(InvalidCursor, match="Invalid cursor"):
            await list_changes(db, scope=CampaignScope(campaign_id="c"), limit=None, cursor=cursor)

    async def test_has_more_is_false_on_the_page_that_ends_the_feed(self, db: AsyncSession, files: ExportFiles) -> None:
        await imported(db, files, MIXED)
        scope = CampaignScope(campaign_id=files.ids("@c"))
        first = await list_changes(db, scope=scope, limit=2, cursor=None)
        second = await list_changes(db, scope=scope, limit=2, cursor=first.next_cursor)
        assert (len(first.items), first.has_more, len(second.items), second.has_more) == (2, True, 2, False)


class TestFailedImports:
    async def test_a_failed_replace_changes_neither_records_nor_feed(
        self, db: AsyncSession, files: ExportFiles
    ) -> None:
        await imported(db, files, MIXED)
        before_feed, cursor = await read_feed(db, files)
        before = await body_digests(db, files)
        broken = {
            **MIXED,
            "sessions": [export_session("@s2", title="Changed"), export_session("@bad", visibility="everyone")],
        }
        with pytest.raises(InvalidExport, match="visibility"):
            async with db.begin_nested():
                await imported(db, files, broken, replace=True)
        assert await body_digests(db, files) == before
        assert await read_feed(db, files) == (before_feed, cursor)


class TestRenderingsOfOlderRenderers:
    async def test_an_import_renders_stale_rows_again_and_the_feed_learns_of_changed_bodies(
        self, db: AsyncSession, files: ExportFiles
    ) -> None:
        await imported(db, files, MIXED)
        _, cursor = await read_feed(db, files)
        # As an older renderer would have left them.
        for array in ("sessions", "locations", "characters", "items"):
            ids = [files.ids(record["id"]) for record in MIXED[array]]
            await age_renderings(db, array=array, record_ids=ids)
        users_only = files.write({"users": [export_user()]}, "users.json")
        summary = await import_campaign_export(db, source=users_only)
        assert summary.rerendered_records == 8
        versions = await db.execute(
            select(Session.renderer_version).where(Session.id.startswith(files.prefix))  # type: ignore[attr-defined]
        )
        assert set(versions.scalars()) == {CURRENT_RENDERER}
        assert await read_feed(db, files, cursor=cursor) == ([], cursor)

"""Public content computed when records are written, on SQLite and PostgreSQL: rendered once,
stored with its renderer version and the body's digest, never served stale."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from engine.errors import FetchFailed, NewerRenderer
from engine.importer import import_campaign_export
from engine.markdown import render_public
from engine.public_body import BODY_FIELDS, body_of, digest_of, source_digest
from engine.records import CampaignScope, EntityKind, get_entity, get_session, list_sessions
from engine.rendering import CURRENT_RENDERER, RenderJob, RenderPool
from engine.renderings import count_stale_renderings
from engine.tables import Location, Session
from engine.upgrade import upgrade_renderings
from tests.engine.exports import ExportFiles
from tests.factories import STALE_MARKDOWN, age_renderings, base_export, export_entity, export_session

SUMMARY = "# Recap\n\nThe **bridge** fell.\n\n:::gm\nThe GM's twist.\n:::\n"


async def stored(db: AsyncSession, table: Any, record_id: str) -> Any:
    # populate_existing: the writer changes rows under the session's identity map.
    statement = select(table).where(table.id == record_id).execution_options(populate_existing=True)
    return (await db.execute(statement)).scalar_one()


class TestRenderedOnce:
    async def test_stored_rendering_digests_and_version(self, db: AsyncSession, files: ExportFiles) -> None:
        await import_campaign_export(db, source=files.write(base_export(sessions=[export_session(summary=SUMMARY)])))
        row = await stored(db, Session, files.ids("@s1"))
        public = render_public(SUMMARY)
        assert (row.summary_markdown, row.summary_text) == (public.markdown, public.text)
        assert "twist" not in row.summary_markdown
        assert (row.source_digest, row.renderer_version) == (source_digest(SUMMARY), CURRENT_RENDERER)
        # The digest is that of the exact body the record is served with.
        assert row.body_digest == digest_of(body_of("session", row.model_dump()))

    async def test_unchanged_markdown_is_not_rendered_again(self, db: AsyncSession, files: ExportFiles) -> None:
        await import_campaign_export(db, source=files.write(base_export(sessions=[export_session(summary=SUMMARY)])))
        before = await stored(db, Session, files.ids("@s1"))
        digest, markdown = before.body_digest, before.summary_markdown
        renamed = base_export(sessions=[export_session(summary=SUMMARY, title="Renamed")])
        summary = await import_campaign_export(db, source=files.write(renamed, "renamed.json"))
        assert (summary.rendered_records, summary.counts["sessions"].updated) == (0, 1)
        after = await stored(db, Session, files.ids("@s1"))
        assert (after.title, after.summary_markdown) == ("Renamed", markdown)
        assert after.body_digest == digest_of(body_of("session", after.model_dump())) != digest

    async def test_a_change_outside_the_body_keeps_the_digest(self, db: AsyncSession, files: ExportFiles) -> None:
        await import_campaign_export(db, source=files.write(base_export(locations=[export_entity(sort_order=1)])))
        digest = (await stored(db, Location, files.ids("@l1"))).body_digest
        moved = base_export(locations=[export_entity(sort_order=2)])
        summary = await import_campaign_export(db, source=files.write(moved, "moved.json"))
        assert (summary.rendered_records, summary.counts["locations"].updated) == (0, 1)
        row = await stored(db, Location, files.ids("@l1"))
        assert (row.sort_order, row.body_digest) == (2, digest)

    async def test_changed_markdown_is_rendered(self, db: AsyncSession, files: ExportFiles) -> None:
        await import_campaign_export(db, source=files.write(base_export(sessions=[export_session(summary=SUMMARY)])))
        edited = base_export(sessions=[export_session(summary=SUMMARY + "\nA new paragraph.\n")])
        summary = await import_campaign_export(db, source=files.write(edited, "edited.json"))
        assert summary.rendered_records == 1
        assert (await stored(db, Session, files.ids("@s1"))).summary_markdown.endswith("A new paragraph.\n")

    def test_a_missing_summary_and_an_empty_one_are_told_apart(self) -> None:
        assert source_digest(None) == "" != source_digest("")


class TestRenderPool:
    async def test_processes_render_what_this_process_would(self) -> None:
        fields = dict.fromkeys(BODY_FIELDS["session"][:-2])
        jobs = [RenderJob("session", {**fields, "id": f"s{n}"}, SUMMARY * (n + 1)) for n in range(40)]
        pool = RenderPool(processes=2, inline_bytes=0)
        try:
            parallel = await pool.submit(jobs)
            assert pool.parallel
        finally:
            pool.close()
        inline = await RenderPool(processes=1).submit(jobs)
        assert parallel == inline and len(inline) == 40

    async def test_small_amounts_stay_in_this_process(self) -> None:
        pool = RenderPool(processes=2)
        await pool.submit([RenderJob("session", dict.fromkeys(BODY_FIELDS["session"][:-2]), SUMMARY)])
        assert not pool.parallel


async def make_stale(db: AsyncSession, files: ExportFiles, *, version: int = 0) -> None:
    """The base export's session and location, as another renderer left them."""
    await age_renderings(db, array="sessions", record_ids=[files.ids("@s1")], version=version)
    await age_renderings(db, array="locations", record_ids=[files.ids("@l1")], version=version)


class TestStaleRenderings:
    async def test_reads_of_stored_markdown_refuse_them(self, db: AsyncSession, files: ExportFiles) -> None:
        await import_campaign_export(db, source=files.write(base_export(sessions=[export_session(summary=SUMMARY)])))
        await make_stale(db, files)
        scope = CampaignScope(campaign_id=files.ids("@c"))
        with pytest.raises(FetchFailed, match="Failed to fetch session"):
            await get_session(db, scope=scope, session_id=files.ids("@s1"))
        with pytest.raises(FetchFailed, match="Failed to fetch locations"):
            await get_entity(db, kind=EntityKind.LOCATION, scope=scope, entity_id=files.ids("@l1"))
        with pytest.raises(FetchFailed, match="Failed to fetch sessions"):
            await list_sessions(db, scope=scope, limit=None, cursor=None, with_summary=True)
        # What holds no rendering is served as ever.
        page = await list_sessions(db, scope=scope, limit=None, cursor=None)
        assert [row.id for row in page.items] == [files.ids("@s1")]
        assert await count_stale_renderings(db) == 2

    async def test_upgrade_renders_them_again(self, db: AsyncSession, files: ExportFiles) -> None:
        await import_campaign_export(db, source=files.write(base_export(sessions=[export_session(summary=SUMMARY)])))
        await make_stale(db, files)
        assert (await stored(db, Session, files.ids("@s1"))).summary_markdown == STALE_MARKDOWN
        rerendered = await upgrade_renderings(db)
        assert (rerendered.records, rerendered.bytes) == (2, len(SUMMARY))
        assert await count_stale_renderings(db) == 0
        assert (await stored(db, Session, files.ids("@s1"))).summary_markdown == render_public(SUMMARY).markdown

    async def test_writers_refuse_a_newer_renderers_rows(self, db: AsyncSession, files: ExportFiles) -> None:
        await import_campaign_export(db, source=files.write(base_export()))
        await make_stale(db, files, version=CURRENT_RENDERER + 1)
        with pytest.raises(NewerRenderer, match=f"renderer version {CURRENT_RENDERER + 1}, newer than"):
            await import_campaign_export(db, source=files.write(base_export(), "again.json"))
        with pytest.raises(NewerRenderer):
            await upgrade_renderings(db)
        # A newer renderer's output is served: it removes at least what this one does.
        scope = CampaignScope(campaign_id=files.ids("@c"))
        assert (await get_session(db, scope=scope, session_id=files.ids("@s1"))).id == files.ids("@s1")

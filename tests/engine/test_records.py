from __future__ import annotations

import base64
import json
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from sqlalchemy import Row
from sqlalchemy.ext.asyncio import AsyncSession

from engine.cursor import MAX_OFFSET, Cursor, SortKeyValue, encode_cursor
from engine.errors import InvalidCursor, RecordNotFound
from engine.pagination import MAX_LIMIT, Page
from engine.records import (
    CampaignScope,
    EntityKind,
    get_entity,
    get_session,
    list_entities,
    list_sessions,
    visible_children_by_parent,
    visible_locations_by_id,
)
from engine.rendering import CURRENT_RENDERER
from engine.tables import DIGEST_LENGTH
from tests.factories import add_campaign, add_entity, add_session, at

PAGE_LIMITS = (1, 2, 3, 7, 100)
SESSION_LIST_FIELDS = (
    "id",
    "title",
    "status",
    "recording_date",
    "created_at",
    "updated_at",
    "session_type",
    "visibility",
)
ENTITY_LIST_FIELDS = (
    "id",
    "name",
    "icon",
    "hidden_from_wiki",
    "created_at",
    "updated_at",
    "type",
    "image_url",
    "sort_order",
)
# What a read adds for the stored rendering: the public Markdown and text, the renderer.
RENDERED_SUMMARY = ("summary_markdown", "summary_text", "renderer_version")
RENDERED_DESCRIPTION = ("description_markdown", "description_text", "renderer_version")


@pytest.fixture
async def scope(db: AsyncSession) -> CampaignScope:
    return CampaignScope(campaign_id=(await add_campaign(db)).id)


@pytest.fixture
async def other_scope(db: AsyncSession) -> CampaignScope:
    return CampaignScope(campaign_id=(await add_campaign(db, name="Someone else's")).id)


def ids(rows: list[Row[Any]]) -> list[str]:
    return [row.id for row in rows]


def forged_cursor(offset: int, after: tuple[SortKeyValue, ...]) -> str:
    """A cursor as a client could make one; JSON escapes let it carry lone surrogates."""
    payload = json.dumps([offset, *after]).encode("ascii")
    return base64.urlsafe_b64encode(payload).rstrip(b"=").decode("ascii")


# --- data sets ------------------------------------------------------------------------

# Visible sessions in list order: newest first, equal dates by id (byte-wise), undated last.
SESSION_ORDER = [
    "s_2025",
    "s_may_A",
    "s_may_B",
    "s_may_a",
    "s_may_b",
    "s_2024_early",
    "s_2023",
    "s_1999",
    "s_undated_0",
    "s_undated_A",
    "s_undated_Z",
    "s_undated_a",
    "s_undated_b",
    "s_undated_z",
]


async def add_ordered_sessions(db: AsyncSession, scope: CampaignScope, other: CampaignScope) -> None:
    """The sessions of SESSION_ORDER, inserted out of order, plus ones that must never show."""
    dates: dict[str, datetime | None] = {
        "s_undated_b": None,
        "s_may_b": at(2024, 5, 1, 19),
        "s_1999": at(1999, 12, 31, 23),
        "s_undated_A": None,
        "s_2023": at(2023, 1, 1, 0),
        "s_may_A": at(2024, 5, 1, 19),
        "s_undated_z": None,
        "s_2025": at(2025, 2, 3, 4),
        "s_undated_0": None,
        # Same instant as the other s_may_* ones, written with another offset.
        "s_may_a": datetime(2024, 5, 1, 21, tzinfo=timezone(timedelta(hours=2))),
        "s_2024_early": at(2024, 5, 1, 18),
        "s_undated_Z": None,
        "s_may_B": at(2024, 5, 1, 19),
        "s_undated_a": None,
    }
    for session_id, recorded in dates.items():
        await add_session(db, campaign_id=scope.campaign_id, session_id=session_id, recording_date=recorded)
    for session_id, recorded in [("s_private_new", at(2026)), ("s_private_undated", None)]:
        await add_session(
            db, campaign_id=scope.campaign_id, session_id=session_id, recording_date=recorded, visibility="private"
        )
    await add_session(db, campaign_id=scope.campaign_id, session_id="s_draft", visibility="draft")
    await add_session(db, campaign_id=other.campaign_id, session_id="s_foreign", recording_date=at(2030))


# Visible entities in list order: sort_order ascending with nulls last, then name in byte
# order (digits < uppercase < "_" < lowercase < non-ASCII), then id.
ENTITY_ORDER = [
    "e_neg",
    "e_zero",
    "e_one_z",
    "e_one_b",
    "e_one_a_10",
    "e_one_a_2",
    "e_10",
    "e_9",
    "e_banana",
    "e_zebra",
    "e_under",
    "e_apple",
    "e_apple_twin",
    "e_ahre",
]


async def add_ordered_entities(
    db: AsyncSession, scope: CampaignScope, other: CampaignScope, *, kind: EntityKind
) -> None:
    entities: list[tuple[str, str, int | None]] = [
        ("e_ahre", "ähre", None),
        ("e_one_b", "B", 1),
        ("e_apple_twin", "apple", None),
        ("e_zebra", "Zebra", None),
        ("e_one_a_2", "a", 1),
        ("e_under", "_under", None),
        ("e_neg", "zzz", -5),
        ("e_9", "9", None),
        ("e_one_z", "A", 1),
        ("e_banana", "Banana", None),
        ("e_zero", "zz", 0),
        ("e_apple", "apple", None),
        ("e_one_a_10", "a", 1),
        ("e_10", "10", None),
    ]
    for entity_id, name, sort_order in entities:
        await add_entity(
            db, table=kind.table, campaign_id=scope.campaign_id, entity_id=entity_id, name=name, sort_order=sort_order
        )
    await add_entity(
        db,
        table=kind.table,
        campaign_id=scope.campaign_id,
        entity_id="e_hidden",
        name="0",
        sort_order=-9,
        hidden_from_wiki=True,
    )
    await add_entity(
        db, table=kind.table, campaign_id=scope.campaign_id, entity_id="e_hidden_late", name="ü", hidden_from_wiki=True
    )
    await add_entity(
        db, table=kind.table, campaign_id=other.campaign_id, entity_id="e_foreign", name="0", sort_order=-9
    )


# --- walking pages ----------------------------------------------------------------------

Lister = Any  # async (limit, cursor) -> Page


async def walk(list_page: Lister, *, limit: int) -> list[Page[Row[Any]]]:
    """Every page, following next_cursor exactly as returned."""
    pages = [await list_page(limit, None)]
    while pages[-1].next_cursor is not None:
        assert len(pages) <= 100, "cursor walk does not terminate"
        pages.append(await list_page(limit, pages[-1].next_cursor))
    return pages


async def assert_walks(list_page: Lister, expected: list[str]) -> None:
    for limit in PAGE_LIMITS:
        pages = await walk(list_page, limit=limit)
        chunks = [expected[start : start + limit] for start in range(0, len(expected), limit)]
        assert [ids(page.items) for page in pages] == chunks, f"limit={limit}"
        assert [page.has_more for page in pages] == [True] * (len(chunks) - 1) + [False], f"limit={limit}"

        # A bare-offset cursor (no sort key) lands on the same rows as the keyset cursor.
        for index, start in enumerate(range(0, len(expected), limit)):
            page = await list_page(limit, encode_cursor(Cursor(offset=start)))
            assert ids(page.items) == chunks[index], f"limit={limit} offset={start}"
            assert page.has_more is (start + limit < len(expected)), f"limit={limit} offset={start}"


def session_lister(db: AsyncSession, scope: CampaignScope) -> Lister:
    async def list_page(limit: int, cursor: str | None) -> Page[Row[Any]]:
        return await list_sessions(db, scope=scope, limit=limit, cursor=cursor)

    return list_page


def entity_lister(db: AsyncSession, scope: CampaignScope, kind: EntityKind) -> Lister:
    async def list_page(limit: int, cursor: str | None) -> Page[Row[Any]]:
        return await list_entities(db, kind=kind, scope=scope, limit=limit, cursor=cursor)

    return list_page


# --- sessions ---------------------------------------------------------------------------


class TestSessionList:
    async def test_order_newest_first_ties_by_id_undated_last(
        self, db: AsyncSession, scope: CampaignScope, other_scope: CampaignScope
    ) -> None:
        await add_ordered_sessions(db, scope, other_scope)
        page = await list_sessions(db, scope=scope, limit=100, cursor=None)
        assert ids(page.items) == SESSION_ORDER
        assert (page.next_cursor, page.has_more) == (None, False)

    async def test_private_and_foreign_sessions_are_not_listed(
        self, db: AsyncSession, scope: CampaignScope, other_scope: CampaignScope
    ) -> None:
        await add_session(db, campaign_id=scope.campaign_id, session_id="s_private", visibility="private")
        await add_session(db, campaign_id=scope.campaign_id, session_id="s_upper", visibility="PUBLIC")
        await add_session(db, campaign_id=other_scope.campaign_id, session_id="s_foreign")
        await add_session(db, campaign_id=scope.campaign_id, session_id="s_public")
        page = await list_sessions(db, scope=scope, limit=None, cursor=None)
        assert ids(page.items) == ["s_public"]
        other = await list_sessions(db, scope=other_scope, limit=None, cursor=None)
        assert ids(other.items) == ["s_foreign"]

    async def test_empty_campaign(self, db: AsyncSession, scope: CampaignScope) -> None:
        page = await list_sessions(db, scope=scope, limit=None, cursor=None)
        assert (page.items, page.next_cursor, page.has_more) == ([], None, False)

    async def test_any_status_is_listed_unchanged(self, db: AsyncSession, scope: CampaignScope) -> None:
        for index, status in enumerate(["completed", "processing", "failed", "weird-new-status"]):
            await add_session(db, campaign_id=scope.campaign_id, session_id=f"s_{index}", status=status)
        page = await list_sessions(db, scope=scope, limit=None, cursor=None)
        assert [row.status for row in page.items] == ["completed", "processing", "failed", "weird-new-status"]

    async def test_row_fields(self, db: AsyncSession, scope: CampaignScope) -> None:
        await add_session(
            db,
            campaign_id=scope.campaign_id,
            session_id="s_1",
            title="The Sunken Keep",
            status="processing",
            recording_date=at(2024, 5, 1, 19),
            created_at=at(2024, 5, 2, 8),
            updated_at=None,
            session_type="text_doc",
            summary="# Hidden from lists",
        )
        page = await list_sessions(db, scope=scope, limit=None, cursor=None)
        assert [row._asdict() for row in page.items] == [
            {
                "id": "s_1",
                "title": "The Sunken Keep",
                "status": "processing",
                "recording_date": at(2024, 5, 1, 19),
                "created_at": at(2024, 5, 2, 8),
                "updated_at": None,
                "session_type": "text_doc",
                "visibility": "public",
            }
        ]

    async def test_summary_only_on_request(self, db: AsyncSession, scope: CampaignScope) -> None:
        await add_session(db, campaign_id=scope.campaign_id, session_id="s_1", summary="Hello")
        plain = await list_sessions(db, scope=scope, limit=None, cursor=None)
        with_summary = await list_sessions(db, scope=scope, limit=None, cursor=None, with_summary=True)
        tagged = await list_sessions(db, scope=scope, limit=None, cursor=None, with_tag=True)
        assert plain.items[0]._fields == SESSION_LIST_FIELDS
        assert with_summary.items[0]._fields == (*SESSION_LIST_FIELDS, *RENDERED_SUMMARY)
        assert (with_summary.items[0].summary_markdown, with_summary.items[0].summary_text) == ("Hello\n", "Hello\n")
        assert tagged.items[0]._fields == (*SESSION_LIST_FIELDS, "body_digest")


class TestSessionPaging:
    async def test_walks_yield_every_session_once_in_order(
        self, db: AsyncSession, scope: CampaignScope, other_scope: CampaignScope
    ) -> None:
        await add_ordered_sessions(db, scope, other_scope)
        await assert_walks(session_lister(db, scope), SESSION_ORDER)

    async def test_walks_across_sub_second_dates(self, db: AsyncSession, scope: CampaignScope) -> None:
        base = at(2024, 5, 1, 19)
        dates = {
            "s_a": base + timedelta(microseconds=1),
            "s_b": base,
            "s_c": base + timedelta(microseconds=1),
            "s_d": base + timedelta(seconds=1),
            "s_e": base - timedelta(microseconds=1),
        }
        for session_id, recorded in dates.items():
            await add_session(db, campaign_id=scope.campaign_id, session_id=session_id, recording_date=recorded)
        await assert_walks(session_lister(db, scope), ["s_d", "s_a", "s_c", "s_b", "s_e"])

    @pytest.mark.parametrize("offset", [14, 15, 1000, MAX_OFFSET])
    async def test_past_the_end_is_empty(
        self, db: AsyncSession, scope: CampaignScope, other_scope: CampaignScope, offset: int
    ) -> None:
        await add_ordered_sessions(db, scope, other_scope)
        page = await list_sessions(db, scope=scope, limit=10, cursor=encode_cursor(Cursor(offset=offset)))
        assert (page.items, page.next_cursor, page.has_more) == ([], None, False)

    async def test_limit_plus_one(self, db: AsyncSession, scope: CampaignScope) -> None:
        for index in range(3):
            await add_session(db, campaign_id=scope.campaign_id, session_id=f"s_{index}")
        exact = await list_sessions(db, scope=scope, limit=3, cursor=None)
        assert (ids(exact.items), exact.has_more, exact.next_cursor) == (["s_0", "s_1", "s_2"], False, None)
        short = await list_sessions(db, scope=scope, limit=2, cursor=None)
        assert (ids(short.items), short.has_more) == (["s_0", "s_1"], True)
        last = await list_sessions(db, scope=scope, limit=2, cursor=short.next_cursor)
        assert (ids(last.items), last.has_more, last.next_cursor) == (["s_2"], False, None)

    async def test_next_cursor_carries_offset_and_last_sort_key(self, db: AsyncSession, scope: CampaignScope) -> None:
        await add_session(db, campaign_id=scope.campaign_id, session_id="s_dated", recording_date=at(2024, 5, 1, 19))
        await add_session(db, campaign_id=scope.campaign_id, session_id="s_undated")
        await add_session(db, campaign_id=scope.campaign_id, session_id="s_undated_2")
        first = await list_sessions(db, scope=scope, limit=1, cursor=None)
        assert first.next_cursor == encode_cursor(Cursor(offset=1, after=("2024-05-01T19:00:00+00:00", "s_dated")))
        second = await list_sessions(db, scope=scope, limit=1, cursor=first.next_cursor)
        assert second.next_cursor == encode_cursor(Cursor(offset=2, after=(None, "s_undated")))

    async def test_keyset_cursor_skips_rows_inserted_before_it(self, db: AsyncSession, scope: CampaignScope) -> None:
        # Seeking by sort key, not offset: a row added in front does not repeat a row.
        for index in range(4):
            await add_session(
                db, campaign_id=scope.campaign_id, session_id=f"s_{index}", recording_date=at(2024, 1, 1 + index)
            )
        first = await list_sessions(db, scope=scope, limit=2, cursor=None)
        assert ids(first.items) == ["s_3", "s_2"]
        await add_session(db, campaign_id=scope.campaign_id, session_id="s_new", recording_date=at(2025))
        second = await list_sessions(db, scope=scope, limit=2, cursor=first.next_cursor)
        assert ids(second.items) == ["s_1", "s_0"]

    @pytest.mark.parametrize(
        "after",
        [
            pytest.param((None,), id="too-short"),
            pytest.param((None, "s_1", "x"), id="too-long"),
            pytest.param((None, "a", "b", "c"), id="entity-shaped"),
            pytest.param((1714590000, "s_1"), id="integer-date"),
            pytest.param(("yesterday", "s_1"), id="unparseable-date"),
            pytest.param(("2024-05-01T19:00:00", "s_1"), id="naive-date"),
            pytest.param(("2024-05-01T19:00:00+00:00", 5), id="integer-id"),
            pytest.param((None, None), id="null-id"),
            pytest.param(("2024-05-01T19:00:00+00:00", "s\x001"), id="nul-in-id"),
            pytest.param((None, "s_\ud800"), id="lone-surrogate-in-id"),
            pytest.param(("9999-12-31T23:30:00-05:00", "s_1"), id="date-beyond-year-9999-in-utc"),
        ],
    )
    async def test_wrong_sort_key_shape(
        self, db: AsyncSession, scope: CampaignScope, after: tuple[SortKeyValue, ...]
    ) -> None:
        with pytest.raises(InvalidCursor) as caught:
            await list_sessions(db, scope=scope, limit=10, cursor=forged_cursor(1, after))
        assert str(caught.value) == "Invalid cursor"

    @pytest.mark.parametrize(
        ("recorded", "expected"),
        [
            pytest.param("2024-05-01T21:00:00+02:00", ["s_older", "s_undated"], id="other-offset"),
            pytest.param("2024-05-01T19:00:00Z", ["s_older", "s_undated"], id="zulu"),
            pytest.param("0001-01-01T00:00:00-05:00", ["s_undated"], id="year-one"),
            pytest.param("9999-12-31T23:59:59+00:00", ["s_dated", "s_older", "s_undated"], id="year-9999"),
        ],
    )
    async def test_hand_made_date_keys_seek_by_instant(
        self, db: AsyncSession, scope: CampaignScope, recorded: str, expected: list[str]
    ) -> None:
        await add_session(db, campaign_id=scope.campaign_id, session_id="s_dated", recording_date=at(2024, 5, 1, 19))
        await add_session(db, campaign_id=scope.campaign_id, session_id="s_older", recording_date=at(2020))
        await add_session(db, campaign_id=scope.campaign_id, session_id="s_undated")
        cursor = encode_cursor(Cursor(offset=1, after=(recorded, "s_dated")))
        page = await list_sessions(db, scope=scope, limit=10, cursor=cursor)
        assert ids(page.items) == expected


class TestGetSession:
    async def test_public_session_with_summary(self, db: AsyncSession, scope: CampaignScope) -> None:
        await add_session(
            db,
            campaign_id=scope.campaign_id,
            session_id="s_1",
            title="One",
            recording_date=at(2024, 5, 1, 19),
            summary="## Recap",
        )
        row = await get_session(db, scope=scope, session_id="s_1")
        assert row._asdict() == {
            "id": "s_1",
            "title": "One",
            "status": "completed",
            "recording_date": at(2024, 5, 1, 19),
            "created_at": None,
            "updated_at": None,
            "session_type": "audio",
            "visibility": "public",
            "summary_markdown": "## Recap\n",
            "summary_text": "Recap\n",
            "renderer_version": CURRENT_RENDERER,
        }

    async def test_without_summary(self, db: AsyncSession, scope: CampaignScope) -> None:
        await add_session(db, campaign_id=scope.campaign_id, session_id="s_1")
        row = await get_session(db, scope=scope, session_id="s_1", with_summary=False)
        assert row._fields == SESSION_LIST_FIELDS

    async def test_tag_alone(self, db: AsyncSession, scope: CampaignScope) -> None:
        await add_session(db, campaign_id=scope.campaign_id, session_id="s_1", summary="# Long text")
        row = await get_session(db, scope=scope, session_id="s_1", with_summary=False, with_tag=True)
        assert row._fields == (*SESSION_LIST_FIELDS, "body_digest")
        assert len(row.body_digest) == DIGEST_LENGTH

    @pytest.mark.parametrize(
        "session_id",
        [
            pytest.param("s_foreign", id="other-campaign"),
            pytest.param("s_private", id="private"),
            pytest.param("s_absent", id="absent"),
            pytest.param("S_PUBLIC", id="different-case"),
            pytest.param("s_Public", id="one-letter-case"),
            pytest.param(" s_public", id="leading-space"),
            pytest.param("s_public ", id="trailing-space"),
            pytest.param("s_public\n", id="trailing-newline"),
            pytest.param("s_public%", id="like-wildcard"),
            pytest.param("s_public\x00", id="nul"),
            pytest.param("s_\ud800", id="lone-surrogate"),
            pytest.param("", id="empty"),
        ],
    )
    async def test_not_found_is_one_error(
        self, db: AsyncSession, scope: CampaignScope, other_scope: CampaignScope, session_id: str
    ) -> None:
        await add_session(db, campaign_id=scope.campaign_id, session_id="s_public")
        await add_session(db, campaign_id=scope.campaign_id, session_id="s_private", visibility="private")
        await add_session(db, campaign_id=other_scope.campaign_id, session_id="s_foreign")
        with pytest.raises(RecordNotFound) as caught:
            await get_session(db, scope=scope, session_id=session_id)
        assert str(caught.value) == "Session not found"
        assert (await get_session(db, scope=scope, session_id="s_public")).id == "s_public"


# --- wiki entities ----------------------------------------------------------------------


@pytest.fixture(params=list(EntityKind), ids=lambda kind: kind.plural)
def kind(request: pytest.FixtureRequest) -> EntityKind:
    return request.param  # type: ignore[no-any-return]


class TestEntityList:
    async def test_order_sort_order_then_byte_wise_name_then_id(
        self, db: AsyncSession, scope: CampaignScope, other_scope: CampaignScope, kind: EntityKind
    ) -> None:
        await add_ordered_entities(db, scope, other_scope, kind=kind)
        page = await list_entities(db, kind=kind, scope=scope, limit=100, cursor=None)
        assert ids(page.items) == ENTITY_ORDER
        assert [row.name for row in page.items] == [
            "zzz", "zz", "A", "B", "a", "a", "10", "9", "Banana", "Zebra", "_under", "apple", "apple", "ähre",
        ]  # fmt: skip
        assert (page.next_cursor, page.has_more) == (None, False)

    async def test_hidden_and_foreign_are_not_listed(
        self, db: AsyncSession, scope: CampaignScope, other_scope: CampaignScope, kind: EntityKind
    ) -> None:
        await add_entity(db, table=kind.table, campaign_id=scope.campaign_id, entity_id="e_shown")
        await add_entity(
            db, table=kind.table, campaign_id=scope.campaign_id, entity_id="e_hidden", hidden_from_wiki=True
        )
        await add_entity(db, table=kind.table, campaign_id=other_scope.campaign_id, entity_id="e_foreign")
        page = await list_entities(db, kind=kind, scope=scope, limit=None, cursor=None)
        assert ids(page.items) == ["e_shown"]
        assert [row.hidden_from_wiki for row in page.items] == [False]

    async def test_kinds_do_not_mix(self, db: AsyncSession, scope: CampaignScope) -> None:
        for each in EntityKind:
            await add_entity(db, table=each.table, campaign_id=scope.campaign_id, entity_id=f"e_{each.plural}")
        for each in EntityKind:
            page = await list_entities(db, kind=each, scope=scope, limit=None, cursor=None)
            assert ids(page.items) == [f"e_{each.plural}"]

    async def test_row_fields(self, db: AsyncSession, scope: CampaignScope, kind: EntityKind) -> None:
        await add_entity(
            db,
            table=kind.table,
            campaign_id=scope.campaign_id,
            entity_id="e_1",
            name="Harbor",
            icon="⚓",
            entity_type="settlement",
            image_url="https://example.test/harbor.png",
            sort_order=3,
            description="Salt and tar.",
            created_at=at(2024, 1, 2, 3),
            updated_at=at(2024, 2, 3, 4),
        )
        page = await list_entities(db, kind=kind, scope=scope, limit=None, cursor=None)
        expected: dict[str, Any] = {
            "id": "e_1",
            "name": "Harbor",
            "icon": "⚓",
            "hidden_from_wiki": False,
            "created_at": at(2024, 1, 2, 3),
            "updated_at": at(2024, 2, 3, 4),
            "type": "settlement",
            "image_url": "https://example.test/harbor.png",
            "sort_order": 3,
        }
        if kind is EntityKind.LOCATION:
            expected["parent_id"] = None
        assert [row._asdict() for row in page.items] == [expected]

    async def test_description_only_on_request(self, db: AsyncSession, scope: CampaignScope, kind: EntityKind) -> None:
        await add_entity(db, table=kind.table, campaign_id=scope.campaign_id, entity_id="e_1", description="Hi")
        plain = await list_entities(db, kind=kind, scope=scope, limit=None, cursor=None)
        described = await list_entities(db, kind=kind, scope=scope, limit=None, cursor=None, with_description=True)
        list_fields = ENTITY_LIST_FIELDS + (("parent_id",) if kind is EntityKind.LOCATION else ())
        assert plain.items[0]._fields == list_fields
        assert described.items[0]._fields == (*list_fields, *RENDERED_DESCRIPTION)
        assert (described.items[0].description_markdown, described.items[0].description_text) == ("Hi\n", "Hi\n")


class TestEntityPaging:
    async def test_walks_yield_every_entity_once_in_order(
        self, db: AsyncSession, scope: CampaignScope, other_scope: CampaignScope, kind: EntityKind
    ) -> None:
        await add_ordered_entities(db, scope, other_scope, kind=kind)
        await assert_walks(entity_lister(db, scope, kind), ENTITY_ORDER)

    @pytest.mark.parametrize("offset", [14, 15, 1000, MAX_OFFSET])
    async def test_past_the_end_is_empty(
        self, db: AsyncSession, scope: CampaignScope, other_scope: CampaignScope, offset: int
    ) -> None:
        await add_ordered_entities(db, scope, other_scope, kind=EntityKind.LOCATION)
        page = await list_entities(
            db, kind=EntityKind.LOCATION, scope=scope, limit=10, cursor=encode_cursor(Cursor(offset=offset))
        )
        assert (page.items, page.next_cursor, page.has_more) == ([], None, False)

    async def test_next_cursor_carries_offset_and_last_sort_key(self, db: AsyncSession, scope: CampaignScope) -> None:
        await add_entity(db, campaign_id=scope.campaign_id, entity_id="e_1", name="A", sort_order=2)
        await add_entity(db, campaign_id=scope.campaign_id, entity_id="e_2", name="B")
        await add_entity(db, campaign_id=scope.campaign_id, entity_id="e_3", name="C")
        first = await list_entities(db, kind=EntityKind.LOCATION, scope=scope, limit=1, cursor=None)
        assert first.next_cursor == encode_cursor(Cursor(offset=1, after=(2, "A", "e_1")))
        second = await list_entities(db, kind=EntityKind.LOCATION, scope=scope, limit=1, cursor=first.next_cursor)
        assert second.next_cursor == encode_cursor(Cursor(offset=2, after=(None, "B", "e_2")))

    async def test_extreme_sort_orders_page(self, db: AsyncSession, scope: CampaignScope) -> None:
        await add_entity(db, campaign_id=scope.campaign_id, entity_id="e_max", sort_order=2**31 - 1)
        await add_entity(db, campaign_id=scope.campaign_id, entity_id="e_none")
        await add_entity(db, campaign_id=scope.campaign_id, entity_id="e_min", sort_order=-(2**31))
        await assert_walks(entity_lister(db, scope, EntityKind.LOCATION), ["e_min", "e_max", "e_none"])

    @pytest.mark.parametrize(
        "after",
        [
            pytest.param((None, "a"), id="too-short"),
            pytest.param((None, "a", "b", "c"), id="too-long"),
            pytest.param(("2024-05-01T19:00:00+00:00", "s_1"), id="session-shaped"),
            pytest.param(("1", "a", "e_1"), id="string-sort-order"),
            pytest.param((None, 1, "e_1"), id="integer-name"),
            pytest.param((None, "a", 1), id="integer-id"),
            pytest.param((None, None, "e_1"), id="null-name"),
            pytest.param((1, "a", None), id="null-id"),
            pytest.param((True, "a", "e_1"), id="boolean-sort-order"),
            pytest.param((2**31, "a", "e_1"), id="sort-order-above-int4"),
            pytest.param((-(2**31) - 1, "a", "e_1"), id="sort-order-below-int4"),
            pytest.param((2**70, "a", "e_1"), id="sort-order-above-int8"),
            pytest.param((None, "a\x00", "e_1"), id="nul-in-name"),
            pytest.param((None, "a", "e\x001"), id="nul-in-id"),
            pytest.param((None, "\ud800", "e_1"), id="lone-surrogate-in-name"),
        ],
    )
    async def test_wrong_sort_key_shape(
        self, db: AsyncSession, scope: CampaignScope, kind: EntityKind, after: tuple[SortKeyValue, ...]
    ) -> None:
        with pytest.raises(InvalidCursor) as caught:
            await list_entities(db, kind=kind, scope=scope, limit=10, cursor=forged_cursor(1, after))
        assert str(caught.value) == "Invalid cursor"


class TestGetEntity:
    async def test_visible_entity_with_description(
        self, db: AsyncSession, scope: CampaignScope, kind: EntityKind
    ) -> None:
        await add_entity(
            db, table=kind.table, campaign_id=scope.campaign_id, entity_id="e_1", name="Keep", description="Stone."
        )
        row = await get_entity(db, kind=kind, scope=scope, entity_id="e_1")
        expected: dict[str, Any] = {
            "id": "e_1",
            "name": "Keep",
            "icon": None,
            "hidden_from_wiki": False,
            "created_at": None,
            "updated_at": None,
            "type": "settlement",
            "image_url": None,
            "sort_order": None,
        }
        if kind is EntityKind.LOCATION:
            expected["parent_id"] = None
        rendered = {"description_markdown": "Stone.\n", "description_text": "Stone.\n"}
        assert row._asdict() == {**expected, **rendered, "renderer_version": CURRENT_RENDERER}

    @pytest.mark.parametrize(
        "entity_id",
        [
            pytest.param("e_foreign", id="other-campaign"),
            pytest.param("e_hidden", id="hidden"),
            pytest.param("e_absent", id="absent"),
            pytest.param("e_other_kind", id="other-record-type"),
            pytest.param("E_SHOWN", id="different-case"),
            pytest.param(" e_shown", id="leading-space"),
            pytest.param("e_shown ", id="trailing-space"),
            pytest.param("e_shown\t", id="trailing-tab"),
            pytest.param("e_shown_", id="like-wildcard"),
            pytest.param("e_shown\x00", id="nul"),
            pytest.param("e_\udfff", id="lone-surrogate"),
            pytest.param("", id="empty"),
        ],
    )
    async def test_not_found_is_one_error(
        self, db: AsyncSession, scope: CampaignScope, other_scope: CampaignScope, kind: EntityKind, entity_id: str
    ) -> None:
        other_kind = next(each for each in EntityKind if each is not kind)
        await add_entity(db, table=kind.table, campaign_id=scope.campaign_id, entity_id="e_shown")
        await add_entity(
            db, table=kind.table, campaign_id=scope.campaign_id, entity_id="e_hidden", hidden_from_wiki=True
        )
        await add_entity(db, table=kind.table, campaign_id=other_scope.campaign_id, entity_id="e_foreign")
        await add_entity(db, table=other_kind.table, campaign_id=scope.campaign_id, entity_id="e_other_kind")
        with pytest.raises(RecordNotFound) as caught:
            await get_entity(db, kind=kind, scope=scope, entity_id=entity_id)
        assert str(caught.value) == "Entity not found"
        assert (await get_entity(db, kind=kind, scope=scope, entity_id="e_shown")).id == "e_shown"


# --- timestamps -------------------------------------------------------------------------


def assert_utc(value: datetime | None, expected: datetime) -> None:
    assert value is not None
    assert value == expected
    assert value.tzinfo is not None and value.utcoffset() == timedelta(0)
    assert value.isoformat() == expected.astimezone(UTC).isoformat()


class TestTimestamps:
    async def test_sessions_read_back_aware_utc(self, db: AsyncSession, scope: CampaignScope) -> None:
        plus_two = timezone(timedelta(hours=2))
        await add_session(
            db,
            campaign_id=scope.campaign_id,
            session_id="s_1",
            recording_date=datetime(2024, 5, 1, 21, 0, 0, 123456, tzinfo=plus_two),
            created_at=datetime(2024, 5, 1, 12, tzinfo=timezone(timedelta(hours=-7, minutes=-30))),
            updated_at=at(2024, 5, 2, 0),
        )
        listed = (await list_sessions(db, scope=scope, limit=None, cursor=None)).items[0]
        fetched = await get_session(db, scope=scope, session_id="s_1")
        for row in (listed, fetched):
            assert_utc(row.recording_date, datetime(2024, 5, 1, 19, 0, 0, 123456, tzinfo=UTC))
            assert_utc(row.created_at, datetime(2024, 5, 1, 19, 30, tzinfo=UTC))
            assert_utc(row.updated_at, datetime(2024, 5, 2, 0, tzinfo=UTC))
            assert row.recording_date.isoformat() == "2024-05-01T19:00:00.123456+00:00"
            assert row.created_at.isoformat() == "2024-05-01T19:30:00+00:00"

    async def test_entities_read_back_aware_utc(self, db: AsyncSession, scope: CampaignScope, kind: EntityKind) -> None:
        await add_entity(
            db,
            table=kind.table,
            campaign_id=scope.campaign_id,
            entity_id="e_1",
            created_at=datetime(2024, 1, 1, 1, tzinfo=timezone(timedelta(hours=5))),
            updated_at=at(2024, 1, 1, 0),
        )
        listed = (await list_entities(db, kind=kind, scope=scope, limit=None, cursor=None)).items[0]
        fetched = await get_entity(db, kind=kind, scope=scope, entity_id="e_1")
        for row in (listed, fetched):
            assert_utc(row.created_at, datetime(2023, 12, 31, 20, tzinfo=UTC))
            assert_utc(row.updated_at, datetime(2024, 1, 1, 0, tzinfo=UTC))

    async def test_null_timestamps_stay_null(self, db: AsyncSession, scope: CampaignScope) -> None:
        await add_session(db, campaign_id=scope.campaign_id, session_id="s_1")
        row = await get_session(db, scope=scope, session_id="s_1")
        assert (row.recording_date, row.created_at, row.updated_at) == (None, None, None)

    async def test_offset_dates_order_by_instant(self, db: AsyncSession, scope: CampaignScope) -> None:
        # 20:00+02:00 is 18:00 UTC: earlier than 19:00 UTC although its wall clock is later.
        await add_session(
            db,
            campaign_id=scope.campaign_id,
            session_id="s_a",
            recording_date=datetime(2024, 5, 1, 20, tzinfo=timezone(timedelta(hours=2))),
        )
        await add_session(db, campaign_id=scope.campaign_id, session_id="s_b", recording_date=at(2024, 5, 1, 19))
        page = await list_sessions(db, scope=scope, limit=None, cursor=None)
        assert ids(page.items) == ["s_b", "s_a"]


# --- location hierarchy helpers ----------------------------------------------------------


@pytest.fixture
async def hierarchy(db: AsyncSession, scope: CampaignScope, other_scope: CampaignScope) -> None:
    campaign_id = scope.campaign_id
    await add_entity(db, campaign_id=campaign_id, entity_id="root", name="World", description="The whole world.")
    await add_entity(db, campaign_id=campaign_id, entity_id="secret_root", name="Hidden realm", hidden_from_wiki=True)
    await add_entity(db, campaign_id=campaign_id, entity_id="c_zed", name="Zed", parent_id="root")
    await add_entity(db, campaign_id=campaign_id, entity_id="c_first", name="zzz", sort_order=1, parent_id="root")
    await add_entity(db, campaign_id=campaign_id, entity_id="c_alpha", name="Alpha", parent_id="root")
    await add_entity(
        db, campaign_id=campaign_id, entity_id="c_hidden", name="Aaa", parent_id="root", hidden_from_wiki=True
    )
    await add_entity(db, campaign_id=campaign_id, entity_id="c_of_secret", name="Beneath", parent_id="secret_root")
    await add_entity(db, campaign_id=other_scope.campaign_id, entity_id="c_foreign", name="Aa", parent_id="root")
    await add_entity(db, campaign_id=other_scope.campaign_id, entity_id="foreign_root", name="Elsewhere")


@pytest.mark.usefixtures("hierarchy")
class TestLocationBatches:
    async def test_locations_by_id_returns_only_visible(self, db: AsyncSession, scope: CampaignScope) -> None:
        found = await visible_locations_by_id(
            db, scope=scope, location_ids=["root", "secret_root", "c_hidden", "foreign_root", "c_zed", "absent"]
        )
        assert sorted(found) == ["c_zed", "root"]
        assert found["root"].name == "World"
        assert found["c_zed"].parent_id == "root"

    async def test_locations_by_id_with_no_ids(self, db: AsyncSession, scope: CampaignScope) -> None:
        assert await visible_locations_by_id(db, scope=scope, location_ids=[]) == {}

    async def test_children_are_visible_only_in_list_order(self, db: AsyncSession, scope: CampaignScope) -> None:
        children = await visible_children_by_parent(
            db, scope=scope, parent_ids=["root", "secret_root", "c_zed", "foreign_root"], limit=MAX_LIMIT
        )
        assert {parent: ids(rows) for parent, rows in children.items()} == {
            "root": ["c_first", "c_alpha", "c_zed"],
            "secret_root": ["c_of_secret"],
            "c_zed": [],
            "foreign_root": [],
        }

    async def test_each_parent_gets_its_first_children_up_to_the_limit(
        self, db: AsyncSession, scope: CampaignScope
    ) -> None:
        # The hidden child sorts first by name: the limit counts visible children only.
        children = await visible_children_by_parent(db, scope=scope, parent_ids=["root", "secret_root"], limit=2)
        assert {parent: ids(rows) for parent, rows in children.items()} == {
            "root": ["c_first", "c_alpha"],
            "secret_root": ["c_of_secret"],
        }
        one = await visible_children_by_parent(db, scope=scope, parent_ids=["root"], limit=1)
        assert ids(one["root"]) == ["c_first"]

    async def test_children_of_another_campaign_are_not_returned(
        self, db: AsyncSession, other_scope: CampaignScope
    ) -> None:
        children = await visible_children_by_parent(db, scope=other_scope, parent_ids=["root"], limit=MAX_LIMIT)
        assert {parent: ids(rows) for parent, rows in children.items()} == {"root": ["c_foreign"]}

    async def test_rows_carry_list_fields_and_description(self, db: AsyncSession, scope: CampaignScope) -> None:
        # Nested locations of the GraphQL schema answer every location field from these rows.
        children = await visible_children_by_parent(db, scope=scope, parent_ids=["root"], limit=MAX_LIMIT)
        parents = await visible_locations_by_id(db, scope=scope, location_ids=["root"])
        fields = (*ENTITY_LIST_FIELDS, "parent_id", *RENDERED_DESCRIPTION, "body_digest")
        assert children["root"][0]._fields == fields
        assert parents["root"]._fields == fields
        assert parents["root"].description_markdown == "The whole world.\n"

    async def test_parent_filter_is_exact(self, db: AsyncSession, scope: CampaignScope) -> None:
        children = await visible_children_by_parent(db, scope=scope, parent_ids=["ROOT", "root "], limit=MAX_LIMIT)
        assert children == {"ROOT": [], "root ": []}

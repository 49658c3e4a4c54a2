from __future__ import annotations

import json
import logging
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
import strawberry
from sqlalchemy import event, select
from sqlalchemy.ext.asyncio import AsyncSession
from strawberry.types import ExecutionResult

from engine.cursor import Cursor, encode_cursor
from engine.db import Database
from engine.pagination import MAX_LIMIT
from engine.public_body import body_of, digest_of, entity_tag
from engine.records import CampaignScope
from engine.settings import Settings
from engine.tables import Character, Faction, Item, Location, WikiEntityColumns
from graphql_schema.context import CampaignContext
from graphql_schema.execution import PlainFieldExecutor
from graphql_schema.query import Query
from graphql_schema.schema import MAX_ALIASES, MAX_DEPTH, build_schema
from tests.factories import add_campaign, add_entity, add_session, at

schema = build_schema()

SESSION_FIELDS = "id title status recordingDate createdAt updatedAt sessionType visibility"
SESSION_RECORD_FIELDS = SESSION_FIELDS + " summaryMarkdown summaryText"
ENTITY_FIELDS = "id name icon hiddenFromWiki createdAt updatedAt type imageUrl"
ENTITY_RECORD_FIELDS = ENTITY_FIELDS + " descriptionMarkdown descriptionText"
LOCATION_FIELDS = ENTITY_FIELDS + " parentId"
LOCATION_RECORD_FIELDS = LOCATION_FIELDS + " descriptionMarkdown descriptionText"
PAGINATION = "pagination { nextCursor hasMore }"
PUBLIC_SUMMARY = "The party reached **Saltmarsh**.\n\n## Aftermath\n\nEveryone slept well.\n"
PUBLIC_SUMMARY_TEXT = "The party reached Saltmarsh.\n\nAftermath\n\nEveryone slept well.\n"

QUERY_FIELDS = ["sessions", "session", "locations", "location", "characters"]
QUERY_FIELDS += ["character", "factions", "faction", "items", "item", "changes"]

# (list field, single field, table) of the wiki entity types shaped alike.
ENTITY_FIELDS_BY_TYPE = [
    ("locations", "location", Location),
    ("characters", "character", Character),
    ("factions", "faction", Faction),
    ("items", "item", Item),
]

GM_SUMMARY = textwrap.dedent(
    """\
    The party reached **Saltmarsh**.

    :::gm
    The mayor is the smuggler. GMCANARY-block
    :::

    ## GM notes

    Ambush at dawn. GMCANARY-section

    ## Aftermath

    Everyone slept well.
    """
)


async def run(
    db: AsyncSession, campaign_id: str, query: str, variables: dict[str, Any] | None = None
) -> ExecutionResult:
    context = CampaignContext(db=db, scope=CampaignScope(campaign_id=campaign_id))
    return await schema.execute(query, variable_values=variables, context_value=context)


def errors_of(result: ExecutionResult) -> list[dict[str, Any]]:
    return [dict(error.formatted) for error in result.errors or []]


def field_error(query: str, field: str, message: str, code: str) -> list[dict[str, Any]]:
    """The one error of a failed top-level field of a one-line document."""
    return [
        {
            "message": message,
            "locations": [{"line": 1, "column": query.index(f" {field}") + 2}],
            "path": [field],
            "extensions": {"code": code},
        }
    ]


@contextmanager
def recorded_statements(db: AsyncSession) -> Iterator[list[str]]:
    """Every SQL statement sent on the test's connection while the block runs."""
    statements: list[str] = []
    engine = db.bind.sync_engine  # type: ignore[union-attr]

    def record(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        statements.append(statement)

    event.listen(engine, "before_cursor_execute", record)
    try:
        yield statements
    finally:
        event.remove(engine, "before_cursor_execute", record)


@pytest.fixture
async def campaign_id(db: AsyncSession) -> str:
    return (await add_campaign(db)).id


@pytest.fixture
async def other_campaign_id(db: AsyncSession) -> str:
    return (await add_campaign(db, name="Another table")).id


# --- the shape of the schema --------------------------------------------------------------


class TestSchemaShape:
    @pytest.mark.parametrize(
        ("type_name", "fields"),
        [
            ("Session", [*SESSION_RECORD_FIELDS.split(), "etag"]),
            ("Location", [*LOCATION_RECORD_FIELDS.split(), "etag", "parent", "children"]),
            ("Character", [*ENTITY_RECORD_FIELDS.split(), "etag"]),
            ("Faction", [*ENTITY_RECORD_FIELDS.split(), "etag"]),
            ("Item", [*ENTITY_RECORD_FIELDS.split(), "etag"]),
            ("Pagination", ["nextCursor", "hasMore"]),
            ("SessionPage", ["data", "pagination"]),
            ("LocationPage", ["data", "pagination"]),
            ("Change", ["type", "id", "change", "changedAt"]),
            ("FeedPagination", ["nextCursor", "hasMore"]),
            ("ChangePage", ["data", "pagination"]),
            ("Query", QUERY_FIELDS),
        ],
    )
    async def test_type_fields(self, type_name: str, fields: list[str]) -> None:
        result = await schema.execute(
            "query($name: String!) { __type(name: $name) { fields { name } } }",
            variable_values={"name": type_name},
        )
        assert result.errors is None
        assert result.data is not None
        assert sorted(field["name"] for field in result.data["__type"]["fields"]) == sorted(fields)

    async def test_list_arguments(self) -> None:
        result = await schema.execute(
            '{ __type(name: "Query") { fields { name args { name defaultValue type { name kind } } } } }'
        )
        assert result.data is not None
        fields = {field["name"]: field["args"] for field in result.data["__type"]["fields"]}
        paging_args = [
            {"name": "limit", "defaultValue": "50", "type": {"name": "Int", "kind": "SCALAR"}},
            {"name": "cursor", "defaultValue": "null", "type": {"name": "String", "kind": "SCALAR"}},
        ]
        id_args = [{"name": "id", "defaultValue": None, "type": {"name": None, "kind": "NON_NULL"}}]
        assert fields == {
            "sessions": paging_args,
            "session": id_args,
            "locations": paging_args,
            "location": id_args,
            "characters": paging_args,
            "character": id_args,
            "factions": paging_args,
            "faction": id_args,
            "items": paging_args,
            "item": id_args,
            "changes": paging_args,
        }


# --- sessions -----------------------------------------------------------------------------


class TestSessions:
    async def test_list_items_in_order_with_pagination(self, db: AsyncSession, campaign_id: str) -> None:
        await add_session(
            db,
            campaign_id=campaign_id,
            session_id="s_old",
            title="Old",
            status="failed",
            recording_date=at(2023, 1, 2, 3),
            created_at=at(2023, 1, 2, 4),
            updated_at=at(2023, 1, 2, 5),
            session_type="text_doc",
        )
        await add_session(db, campaign_id=campaign_id, session_id="s_undated", title="Undated", status="processing")
        await add_session(
            db, campaign_id=campaign_id, session_id="s_new", title="New", recording_date=at(2024, 5, 1, 19)
        )
        await add_session(db, campaign_id=campaign_id, session_id="s_private", visibility="private")
        result = await run(db, campaign_id, f"{{ sessions {{ data {{ {SESSION_FIELDS} }} {PAGINATION} }} }}")
        assert result.errors is None
        assert result.data == {
            "sessions": {
                "data": [
                    {
                        "id": "s_new",
                        "title": "New",
                        "status": "completed",
                        "recordingDate": "2024-05-01T19:00:00+00:00",
                        "createdAt": None,
                        "updatedAt": None,
                        "sessionType": "audio",
                        "visibility": "public",
                    },
                    {
                        "id": "s_old",
                        "title": "Old",
                        "status": "failed",
                        "recordingDate": "2023-01-02T03:00:00+00:00",
                        "createdAt": "2023-01-02T04:00:00+00:00",
                        "updatedAt": "2023-01-02T05:00:00+00:00",
                        "sessionType": "text_doc",
                        "visibility": "public",
                    },
                    {
                        "id": "s_undated",
                        "title": "Undated",
                        "status": "processing",
                        "recordingDate": None,
                        "createdAt": None,
                        "updatedAt": None,
                        "sessionType": "audio",
                        "visibility": "public",
                    },
                ],
                "pagination": {"nextCursor": None, "hasMore": False},
            }
        }

    async def test_single_record(self, db: AsyncSession, campaign_id: str) -> None:
        await add_session(
            db,
            campaign_id=campaign_id,
            session_id="s_1",
            title="The Sunken Keep",
            recording_date=at(2024, 5, 1, 19),
            created_at=at(2024, 5, 2, 8),
            updated_at=at(2024, 5, 3, 9),
            summary="The party met **Mira** at the docks.",
        )
        result = await run(
            db, campaign_id, f"query($id: ID!) {{ session(id: $id) {{ {SESSION_RECORD_FIELDS} }} }}", {"id": "s_1"}
        )
        assert result.errors is None
        assert result.data == {
            "session": {
                "id": "s_1",
                "title": "The Sunken Keep",
                "status": "completed",
                "recordingDate": "2024-05-01T19:00:00+00:00",
                "createdAt": "2024-05-02T08:00:00+00:00",
                "updatedAt": "2024-05-03T09:00:00+00:00",
                "sessionType": "audio",
                "visibility": "public",
                "summaryMarkdown": "The party met **Mira** at the docks.\n",
                "summaryText": "The party met Mira at the docks.\n",
            }
        }

    @pytest.mark.parametrize("summary", [None, "", "   \n", ":::gm\nOnly secrets GMCANARY\n:::\n"])
    async def test_no_public_summary_is_empty(self, db: AsyncSession, campaign_id: str, summary: str | None) -> None:
        await add_session(db, campaign_id=campaign_id, session_id="s_1", summary=summary)
        result = await run(db, campaign_id, '{ session(id: "s_1") { summaryMarkdown summaryText } }')
        assert result.errors is None
        assert result.data == {"session": {"summaryMarkdown": "", "summaryText": ""}}

    async def test_timestamps_are_utc_with_offset(self, db: AsyncSession, campaign_id: str) -> None:
        await add_session(
            db,
            campaign_id=campaign_id,
            session_id="s_1",
            recording_date=datetime(2024, 5, 1, 21, 0, 0, 250000, tzinfo=timezone(timedelta(hours=2))),
        )
        result = await run(db, campaign_id, '{ session(id: "s_1") { recordingDate } }')
        assert result.data == {"session": {"recordingDate": "2024-05-01T19:00:00.250000+00:00"}}


class TestSummaryGmContent:
    async def test_single_record_hides_gm_text(self, db: AsyncSession, campaign_id: str) -> None:
        await add_session(db, campaign_id=campaign_id, session_id="s_1", summary=GM_SUMMARY)
        result = await run(db, campaign_id, '{ session(id: "s_1") { summaryMarkdown summaryText } }')
        assert result.errors is None
        assert result.data == {
            "session": {
                "summaryMarkdown": PUBLIC_SUMMARY,
                "summaryText": PUBLIC_SUMMARY_TEXT,
            }
        }
        assert "GMCANARY" not in json.dumps(result.data)

    async def test_list_selecting_summary(self, db: AsyncSession, campaign_id: str) -> None:
        await add_session(db, campaign_id=campaign_id, session_id="s_1", summary=GM_SUMMARY, recording_date=at(2024))
        await add_session(db, campaign_id=campaign_id, session_id="s_2", summary=None)
        result = await run(db, campaign_id, "{ sessions { data { id summaryMarkdown summaryText } } }")
        assert result.errors is None
        assert result.data == {
            "sessions": {
                "data": [
                    {
                        "id": "s_1",
                        "summaryMarkdown": PUBLIC_SUMMARY,
                        "summaryText": PUBLIC_SUMMARY_TEXT,
                    },
                    {"id": "s_2", "summaryMarkdown": "", "summaryText": ""},
                ]
            }
        }

    @pytest.mark.parametrize(
        ("query", "row"),
        [
            pytest.param(
                "{ sessions { data { id ...Summary } } } fragment Summary on Session { summaryText }",
                {"id": "s_1", "summaryText": PUBLIC_SUMMARY_TEXT},
                id="named-fragment",
            ),
            pytest.param(
                "{ sessions { data { id ... on Session { summaryMarkdown } } } }",
                {"id": "s_1", "summaryMarkdown": PUBLIC_SUMMARY},
                id="inline-fragment",
            ),
            pytest.param(
                "{ sessions { data { id s: summaryMarkdown } } }",
                {"id": "s_1", "s": PUBLIC_SUMMARY},
                id="aliased",
            ),
        ],
    )
    async def test_list_selecting_summary_indirectly(
        self, db: AsyncSession, campaign_id: str, query: str, row: dict[str, str]
    ) -> None:
        await add_session(db, campaign_id=campaign_id, session_id="s_1", summary=GM_SUMMARY)
        result = await run(db, campaign_id, query)
        assert (result.data, result.errors) == ({"sessions": {"data": [row]}}, None)

    async def test_description_hides_gm_text(self, db: AsyncSession, campaign_id: str) -> None:
        for plural, _, table in ENTITY_FIELDS_BY_TYPE:
            await add_entity(db, table=table, campaign_id=campaign_id, entity_id=f"e_{plural}", description=GM_SUMMARY)
        query = " ".join(
            f'{single}(id: "e_{plural}") {{ descriptionMarkdown descriptionText }}'
            for plural, single, _ in ENTITY_FIELDS_BY_TYPE
        )
        lists = " ".join(
            f"{plural}(limit: 5) {{ data {{ descriptionMarkdown }} }}" for plural, _, _ in ENTITY_FIELDS_BY_TYPE
        )
        result = await run(db, campaign_id, f"{{ {query} {lists} }}")
        assert result.errors is None
        assert result.data is not None
        for plural, single, _ in ENTITY_FIELDS_BY_TYPE:
            assert result.data[single] == {
                "descriptionMarkdown": PUBLIC_SUMMARY,
                "descriptionText": PUBLIC_SUMMARY_TEXT,
            }
            assert result.data[plural] == {"data": [{"descriptionMarkdown": PUBLIC_SUMMARY}]}
        assert "GMCANARY" not in json.dumps(result.data)


# --- wiki entities --------------------------------------------------------------------------


async def add_full_entity(
    db: AsyncSession, table: type[WikiEntityColumns], campaign_id: str, entity_id: str, **overrides: Any
) -> None:
    fields: dict[str, Any] = {
        "name": "Harbor",
        "icon": "⚓",
        "entity_type": "settlement",
        "image_url": "https://example.test/harbor.png",
        "sort_order": 2,
        "description": "Salt and **tar**.",
        "created_at": at(2024, 1, 2, 3),
        "updated_at": at(2024, 2, 3, 4),
    }
    await add_entity(db, table=table, campaign_id=campaign_id, entity_id=entity_id, **{**fields, **overrides})


def entity_body(entity_id: str, **overrides: Any) -> dict[str, Any]:
    return {
        "id": entity_id,
        "name": "Harbor",
        "icon": "⚓",
        "hiddenFromWiki": False,
        "createdAt": "2024-01-02T03:00:00+00:00",
        "updatedAt": "2024-02-03T04:00:00+00:00",
        "type": "settlement",
        "imageUrl": "https://example.test/harbor.png",
        **overrides,
    }


class TestEntities:
    @pytest.mark.parametrize(("plural", "single", "table"), ENTITY_FIELDS_BY_TYPE[1:])
    async def test_list_and_single(
        self, db: AsyncSession, campaign_id: str, plural: str, single: str, table: type[WikiEntityColumns]
    ) -> None:
        await add_full_entity(db, table, campaign_id, "e_b", name="B")
        await add_full_entity(db, table, campaign_id, "e_a", name="A", icon=None, image_url=None, created_at=None)
        await add_full_entity(db, table, campaign_id, "e_first", name="Z", sort_order=1)
        await add_full_entity(db, table, campaign_id, "e_hidden", name="0", sort_order=0, hidden_from_wiki=True)
        result = await run(
            db,
            campaign_id,
            f"{{ {plural}(limit: 2) {{ data {{ {ENTITY_FIELDS} }} {PAGINATION} }} "
            f'{single}(id: "e_b") {{ {ENTITY_RECORD_FIELDS} }} }}',
        )
        assert result.errors is None
        assert result.data == {
            plural: {
                "data": [
                    entity_body("e_first", name="Z"),
                    entity_body("e_a", name="A", icon=None, imageUrl=None, createdAt=None),
                ],
                "pagination": {
                    "nextCursor": encode_cursor(Cursor(offset=2, after=(2, "A", "e_a"))),
                    "hasMore": True,
                },
            },
            single: entity_body(
                "e_b", name="B", descriptionMarkdown="Salt and **tar**.\n", descriptionText="Salt and tar.\n"
            ),
        }

    async def test_locations_list_and_single(self, db: AsyncSession, campaign_id: str) -> None:
        await add_full_entity(db, Location, campaign_id, "l_root", name="World", sort_order=None)
        await add_full_entity(db, Location, campaign_id, "l_port", parent_id="l_root")
        result = await run(
            db,
            campaign_id,
            f"{{ locations {{ data {{ {LOCATION_FIELDS} }} {PAGINATION} }} "
            f'location(id: "l_port") {{ {LOCATION_RECORD_FIELDS} }} }}',
        )
        assert result.errors is None
        assert result.data == {
            "locations": {
                "data": [entity_body("l_port", parentId="l_root"), entity_body("l_root", name="World", parentId=None)],
                "pagination": {"nextCursor": None, "hasMore": False},
            },
            "location": entity_body(
                "l_port",
                parentId="l_root",
                descriptionMarkdown="Salt and **tar**.\n",
                descriptionText="Salt and tar.\n",
            ),
        }


class TestLocationHierarchy:
    async def test_parent_and_children(self, db: AsyncSession, campaign_id: str, other_campaign_id: str) -> None:
        await add_entity(db, campaign_id=campaign_id, entity_id="root", name="World")
        await add_entity(db, campaign_id=campaign_id, entity_id="c_zed", name="Zed", parent_id="root")
        await add_entity(db, campaign_id=campaign_id, entity_id="c_first", name="zzz", sort_order=1, parent_id="root")
        await add_entity(db, campaign_id=campaign_id, entity_id="c_alpha", name="Alpha", parent_id="root")
        await add_entity(
            db, campaign_id=campaign_id, entity_id="c_hidden", name="A", parent_id="root", hidden_from_wiki=True
        )
        await add_entity(db, campaign_id=other_campaign_id, entity_id="c_foreign", name="A", parent_id="root")
        result = await run(
            db,
            campaign_id,
            '{ location(id: "root") { id parentId parent { id } children { id name parentId parent { id } } } }',
        )
        assert result.errors is None
        assert result.data == {
            "location": {
                "id": "root",
                "parentId": None,
                "parent": None,
                "children": [
                    {"id": "c_first", "name": "zzz", "parentId": "root", "parent": {"id": "root"}},
                    {"id": "c_alpha", "name": "Alpha", "parentId": "root", "parent": {"id": "root"}},
                    {"id": "c_zed", "name": "Zed", "parentId": "root", "parent": {"id": "root"}},
                ],
            }
        }

    async def test_hidden_parent_is_null_but_named(self, db: AsyncSession, campaign_id: str) -> None:
        await add_entity(db, campaign_id=campaign_id, entity_id="secret", name="Hidden realm", hidden_from_wiki=True)
        await add_entity(db, campaign_id=campaign_id, entity_id="child", name="Beneath", parent_id="secret")
        result = await run(
            db, campaign_id, '{ location(id: "child") { id parentId parent { id name } } locations { data { id } } }'
        )
        assert result.errors is None
        assert result.data == {
            "location": {"id": "child", "parentId": "secret", "parent": None},
            "locations": {"data": [{"id": "child"}]},
        }

    async def test_parent_in_another_campaign_is_null(
        self, db: AsyncSession, campaign_id: str, other_campaign_id: str
    ) -> None:
        await add_entity(db, campaign_id=other_campaign_id, entity_id="foreign", name="Elsewhere")
        await add_entity(db, campaign_id=campaign_id, entity_id="child", parent_id="foreign")
        await add_entity(db, campaign_id=campaign_id, entity_id="orphan", parent_id="nowhere")
        result = await run(db, campaign_id, "{ locations { data { id parentId parent { id } } } }")
        assert result.errors is None
        assert result.data == {
            "locations": {
                "data": [
                    {"id": "child", "parentId": "foreign", "parent": None},
                    {"id": "orphan", "parentId": "nowhere", "parent": None},
                ]
            }
        }

    async def test_nested_locations_carry_descriptions(self, db: AsyncSession, campaign_id: str) -> None:
        await add_entity(db, campaign_id=campaign_id, entity_id="root", description="The **world**.")
        await add_entity(db, campaign_id=campaign_id, entity_id="child", parent_id="root", description=GM_SUMMARY)
        result = await run(
            db, campaign_id, '{ location(id: "child") { parent { descriptionMarkdown descriptionText } } }'
        )
        assert result.errors is None
        assert result.data == {
            "location": {"parent": {"descriptionMarkdown": "The **world**.\n", "descriptionText": "The world.\n"}}
        }
        nested = await run(db, campaign_id, '{ location(id: "root") { children { descriptionMarkdown } } }')
        assert nested.data == {"location": {"children": [{"descriptionMarkdown": PUBLIC_SUMMARY}]}}


class TestChildren:
    @pytest.fixture
    async def parent_with_children(self, db: AsyncSession) -> tuple[str, list[str]]:
        campaign_id = (await add_campaign(db)).id
        await add_entity(db, campaign_id=campaign_id, entity_id="root", name="Root")
        children = [f"c_{index:03}" for index in range(MAX_LIMIT + 2)]
        for child in children:
            await add_entity(db, campaign_id=campaign_id, entity_id=child, name=child, parent_id="root")
        return campaign_id, children

    async def test_default_is_the_first_hundred(
        self, db: AsyncSession, parent_with_children: tuple[str, list[str]]
    ) -> None:
        campaign_id, children = parent_with_children
        result = await run(db, campaign_id, '{ location(id: "root") { children { id } } }')
        assert result.errors is None
        assert result.data == {"location": {"children": [{"id": child} for child in children[:MAX_LIMIT]]}}

    async def test_limit_and_aliases_with_different_limits(
        self, db: AsyncSession, parent_with_children: tuple[str, list[str]]
    ) -> None:
        campaign_id, children = parent_with_children
        with recorded_statements(db) as statements:
            result = await run(
                db,
                campaign_id,
                '{ locations(limit: 3) { data { id two: children(limit: 2) { id } one: children(limit: 1) { id } } } '
                ' location(id: "root") { many: children(limit: 1000) { id } } }',
            )
        assert result.errors is None
        assert result.data is not None
        rows: list[dict[str, Any]] = result.data["locations"]["data"]
        # "Root" sorts before "c_000" (binary order); the children come in list order.
        first, second = ({"id": child} for child in children[:2])
        assert rows[0] == {"id": "root", "two": [first, second], "one": [first]}
        assert rows[1] == {"id": children[0], "two": [], "one": []}
        assert len(result.data["location"]["many"]) == MAX_LIMIT
        # The page, then one query per distinct limit (each batched over its parents).
        assert len([statement for statement in statements if "child_rank" in statement]) == 3

    async def test_limit_below_one_is_an_error(
        self, db: AsyncSession, parent_with_children: tuple[str, list[str]]
    ) -> None:
        campaign_id, _ = parent_with_children
        result = await run(db, campaign_id, '{ location(id: "root") { id children(limit: 0) { id } } }')
        assert result.data == {"location": None}
        assert [(error["message"], error["extensions"]) for error in errors_of(result)] == [
            ("limit must be a positive integer", {"code": "INVALID_LIMIT"})
        ]


class TestDataLoaders:
    async def test_children_of_a_page_are_one_query(self, db: AsyncSession, campaign_id: str) -> None:
        for index in range(20):
            await add_entity(db, campaign_id=campaign_id, entity_id=f"p_{index:02}", name=f"Parent {index:02}")
            await add_entity(
                db,
                campaign_id=campaign_id,
                entity_id=f"q_{index:02}",
                name=f"Child {index:02}",
                sort_order=1,
                parent_id=f"p_{index:02}",
            )
        with recorded_statements(db) as statements:
            result = await run(db, campaign_id, "{ locations(limit: 20) { data { id children { id } } } }")
        assert result.errors is None
        assert result.data == {"locations": {"data": [{"id": f"q_{index:02}", "children": []} for index in range(20)]}}
        assert len(statements) == 2, statements

        with recorded_statements(db) as statements:
            result = await run(
                db,
                campaign_id,
                "query($c: String) { locations(limit: 20, cursor: $c) { data { id children { id } } } }",
                {"c": encode_cursor(Cursor(offset=20))},
            )
        assert result.errors is None
        assert result.data == {
            "locations": {
                "data": [{"id": f"p_{index:02}", "children": [{"id": f"q_{index:02}"}]} for index in range(20)]
            }
        }
        assert len(statements) == 2, statements

    async def test_parents_of_a_page_are_one_query(self, db: AsyncSession, campaign_id: str) -> None:
        for index in range(20):
            await add_entity(
                db, campaign_id=campaign_id, entity_id=f"p_{index:02}", name=f"Parent {index:02}", sort_order=2
            )
            await add_entity(
                db,
                campaign_id=campaign_id,
                entity_id=f"q_{index:02}",
                name=f"Child {index:02}",
                sort_order=1,
                parent_id=f"p_{index:02}",
            )
        with recorded_statements(db) as statements:
            result = await run(db, campaign_id, "{ locations(limit: 20) { data { id parent { id } } } }")
        assert result.data == {
            "locations": {"data": [{"id": f"q_{index:02}", "parent": {"id": f"p_{index:02}"}} for index in range(20)]}
        }
        assert len(statements) == 2, statements

    async def test_one_query_per_nesting_level(self, db: AsyncSession, campaign_id: str) -> None:
        for index in range(5):
            await add_entity(db, campaign_id=campaign_id, entity_id=f"a_{index}", sort_order=1)
            await add_entity(db, campaign_id=campaign_id, entity_id=f"b_{index}", parent_id=f"a_{index}", sort_order=2)
            await add_entity(db, campaign_id=campaign_id, entity_id=f"c_{index}", parent_id=f"b_{index}", sort_order=3)
        with recorded_statements(db) as statements:
            result = await run(
                db,
                campaign_id,
                "{ locations(limit: 5) { data { id children(limit: 5) { id children(limit: 5) { id } } } } }",
            )
        assert result.data == {
            "locations": {
                "data": [
                    {"id": f"a_{index}", "children": [{"id": f"b_{index}", "children": [{"id": f"c_{index}"}]}]}
                    for index in range(5)
                ]
            }
        }
        assert len(statements) == 3, statements


# --- paging through GraphQL ----------------------------------------------------------------


class TestPaging:
    async def test_default_limit_is_50(self, db: AsyncSession, campaign_id: str) -> None:
        for index in range(51):
            await add_session(db, campaign_id=campaign_id, session_id=f"s_{index:03}")
        result = await run(db, campaign_id, f"{{ sessions {{ data {{ id }} {PAGINATION} }} }}")
        assert result.data is not None
        page = result.data["sessions"]
        assert [row["id"] for row in page["data"]] == [f"s_{index:03}" for index in range(50)]
        assert page["pagination"] == {
            "nextCursor": encode_cursor(Cursor(offset=50, after=(None, "s_049"))),
            "hasMore": True,
        }
        explicit_null = await run(db, campaign_id, "{ sessions(limit: null) { data { id } } }")
        assert explicit_null.data is not None
        assert len(explicit_null.data["sessions"]["data"]) == 50

    @pytest.mark.parametrize("limit", [101, 500, 2**31 - 1])
    async def test_large_limit_is_capped_to_100(self, db: AsyncSession, campaign_id: str, limit: int) -> None:
        for index in range(102):
            await add_entity(db, table=Item, campaign_id=campaign_id, entity_id=f"i_{index:03}", name=f"{index:03}")
        result = await run(
            db,
            campaign_id,
            f"query($limit: Int) {{ items(limit: $limit) {{ data {{ id }} {PAGINATION} }} }}",
            {"limit": limit},
        )
        assert result.errors is None
        assert result.data is not None
        page = result.data["items"]
        assert [row["id"] for row in page["data"]] == [f"i_{index:03}" for index in range(100)]
        assert page["pagination"] == {
            "nextCursor": encode_cursor(Cursor(offset=100, after=(None, "099", "i_099"))),
            "hasMore": True,
        }
        rest = await run(
            db,
            campaign_id,
            f"query($cursor: String) {{ items(limit: 500, cursor: $cursor) {{ data {{ id }} {PAGINATION} }} }}",
            {"cursor": page["pagination"]["nextCursor"]},
        )
        assert rest.data == {
            "items": {"data": [{"id": "i_100"}, {"id": "i_101"}], "pagination": {"nextCursor": None, "hasMore": False}}
        }

    async def test_walk_all_pages(self, db: AsyncSession, campaign_id: str) -> None:
        for index in range(7):
            recorded = at(2024, 1, 7 - index) if index < 4 else None
            await add_session(db, campaign_id=campaign_id, session_id=f"s_{index}", recording_date=recorded)
        query = f"query($cursor: String) {{ sessions(limit: 3, cursor: $cursor) {{ data {{ id }} {PAGINATION} }} }}"
        pages: list[tuple[list[str], bool]] = []
        cursor: str | None = None
        while len(pages) < 10:
            result = await run(db, campaign_id, query, {"cursor": cursor})
            assert result.errors is None
            assert result.data is not None
            page = result.data["sessions"]
            pages.append(([row["id"] for row in page["data"]], page["pagination"]["hasMore"]))
            cursor = page["pagination"]["nextCursor"]
            if cursor is None:
                break
        assert pages == [(["s_0", "s_1", "s_2"], True), (["s_3", "s_4", "s_5"], True), (["s_6"], False)]


# --- errors -----------------------------------------------------------------------------------


class TestNotFound:
    async def test_foreign_private_and_absent_sessions_are_identical(
        self, db: AsyncSession, campaign_id: str, other_campaign_id: str
    ) -> None:
        await add_session(db, campaign_id=other_campaign_id, session_id="s_foreign")
        await add_session(db, campaign_id=campaign_id, session_id="s_private", visibility="private")
        query = "query($id: ID!) { session(id: $id) { id title } }"
        outcomes = []
        for session_id in ["s_foreign", "s_private", "s_absent", "S_FOREIGN", " s_private", "s_\x00", "\ud800"]:
            result = await run(db, campaign_id, query, {"id": session_id})
            outcomes.append((result.data, errors_of(result)))
        expected = ({"session": None}, field_error(query, "session", "Session not found", "NOT_FOUND"))
        assert outcomes == [expected] * 7

    async def test_foreign_session_is_visible_to_its_own_campaign(
        self, db: AsyncSession, campaign_id: str, other_campaign_id: str
    ) -> None:
        await add_session(db, campaign_id=other_campaign_id, session_id="s_foreign")
        result = await run(db, other_campaign_id, '{ session(id: "s_foreign") { id } }')
        assert (result.data, result.errors) == ({"session": {"id": "s_foreign"}}, None)

    @pytest.mark.parametrize(("plural", "single", "table"), ENTITY_FIELDS_BY_TYPE)
    async def test_foreign_hidden_and_absent_entities_are_identical(
        self,
        db: AsyncSession,
        campaign_id: str,
        other_campaign_id: str,
        plural: str,
        single: str,
        table: type[WikiEntityColumns],
    ) -> None:
        other_table = Character if table is not Character else Faction
        await add_entity(db, table=table, campaign_id=other_campaign_id, entity_id="e_foreign")
        await add_entity(db, table=table, campaign_id=campaign_id, entity_id="e_hidden", hidden_from_wiki=True)
        await add_entity(db, table=other_table, campaign_id=campaign_id, entity_id="e_other_type")
        query = f"query($id: ID!) {{ {single}(id: $id) {{ id }} }}"
        outcomes = []
        for entity_id in ["e_foreign", "e_hidden", "e_absent", "e_other_type", "E_HIDDEN", "e_hidden ", "e\x00"]:
            result = await run(db, campaign_id, query, {"id": entity_id})
            outcomes.append((result.data, errors_of(result)))
        expected = ({single: None}, field_error(query, single, "Entity not found", "NOT_FOUND"))
        assert outcomes == [expected] * 7

    async def test_not_found_does_not_null_siblings(self, db: AsyncSession, campaign_id: str) -> None:
        await add_session(db, campaign_id=campaign_id, session_id="s_1")
        query = '{ session(id: "nope") { id } sessions { data { id } } }'
        result = await run(db, campaign_id, query)
        assert result.data == {"session": None, "sessions": {"data": [{"id": "s_1"}]}}
        assert errors_of(result) == field_error(query, "session", "Session not found", "NOT_FOUND")


class TestInvalidArguments:
    @pytest.mark.parametrize("field", ["sessions", "locations", "characters", "factions", "items", "changes"])
    @pytest.mark.parametrize("limit", [0, -3])
    async def test_limit_below_one(self, db: AsyncSession, campaign_id: str, field: str, limit: int) -> None:
        query = f"query($limit: Int) {{ {field}(limit: $limit) {{ data {{ id }} }} }}"
        result = await run(db, campaign_id, query, {"limit": limit})
        assert result.data is None
        assert errors_of(result) == field_error(query, field, "limit must be a positive integer", "INVALID_LIMIT")

    @pytest.mark.parametrize("limit", [0, -3])
    async def test_limit_below_one_inline(self, db: AsyncSession, campaign_id: str, limit: int) -> None:
        query = f"{{ sessions(limit: {limit}) {{ data {{ id }} }} }}"
        result = await run(db, campaign_id, query)
        assert result.data is None
        assert errors_of(result) == field_error(query, "sessions", "limit must be a positive integer", "INVALID_LIMIT")

    @pytest.mark.parametrize("field", ["sessions", "locations", "characters", "factions", "items", "changes"])
    @pytest.mark.parametrize(
        "cursor",
        [
            "nope",
            "",
            encode_cursor(Cursor(offset=0)) + "=",
            encode_cursor(Cursor(offset=1, after=(1, 2, 3, 4, 5))),
            "W10",  # []
            "Wy0xXQ",  # [-1]
        ],
    )
    async def test_invalid_cursor(self, db: AsyncSession, campaign_id: str, field: str, cursor: str) -> None:
        query = f"query($c: String) {{ {field}(cursor: $c) {{ data {{ id }} }} }}"
        result = await run(db, campaign_id, query, {"c": cursor})
        assert result.data is None
        assert errors_of(result) == field_error(query, field, "Invalid cursor", "INVALID_CURSOR")


class TestChangesAndTags:
    async def test_changes_are_the_campaigns_visible_records(
        self, db: AsyncSession, campaign_id: str, other_campaign_id: str
    ) -> None:
        await add_session(db, campaign_id=campaign_id, session_id="feed_s1")
        await add_session(db, campaign_id=campaign_id, session_id="feed_private", visibility="private")
        await add_entity(db, table=Item, campaign_id=campaign_id, entity_id="feed_i1")
        await add_entity(db, table=Item, campaign_id=campaign_id, entity_id="feed_hidden", hidden_from_wiki=True)
        await add_session(db, campaign_id=other_campaign_id, session_id="feed_other")
        query = "{ changes(limit: 1) { data { type id change changedAt } pagination { nextCursor hasMore } } }"
        first = await run(db, campaign_id, query)
        assert first.errors is None and first.data is not None
        page = first.data["changes"]
        assert [(e["type"], e["id"], e["change"]) for e in page["data"]] == [("session", "feed_s1", "upsert")]
        assert page["data"][0]["changedAt"].endswith("+00:00") and page["pagination"]["hasMore"] is True
        after = page["pagination"]["nextCursor"]
        rest = await run(db, campaign_id, "query($c: String) { changes(cursor: $c) { data { id } } }", {"c": after})
        assert rest.data == {"changes": {"data": [{"id": "feed_i1"}]}}

    async def test_etag_is_the_tag_of_the_record_body(self, db: AsyncSession, campaign_id: str) -> None:
        await add_entity(db, table=Location, campaign_id=campaign_id, entity_id="tag_l1", description="Walls.")
        result = await run(db, campaign_id, '{ location(id: "tag_l1") { etag } locations { data { id etag } } }')
        assert result.errors is None and result.data is not None
        stored = (await db.execute(select(Location).where(Location.id == "tag_l1"))).scalar_one()  # type: ignore[arg-type]
        expected = entity_tag(digest_of(body_of("location", stored.model_dump())))
        assert result.data["location"]["etag"] == expected
        assert result.data["locations"]["data"] == [{"id": "tag_l1", "etag": expected}]


class TestDocumentLimits:
    @staticmethod
    def nested_children(levels: int) -> str:
        """location { children { children { ... { id } } } } with `levels` children fields
        (one child each: nested lists multiply the cost)."""
        selection = "id"
        for _ in range(levels):
            selection = f"children(limit: 1) {{ {selection} }}"
        return f'{{ location(id: "root") {{ {selection} }} }}'

    async def test_depth_at_the_limit_runs(self, db: AsyncSession, campaign_id: str) -> None:
        await add_entity(db, campaign_id=campaign_id, entity_id="root")
        await add_entity(db, campaign_id=campaign_id, entity_id="child", parent_id="root")
        result = await run(db, campaign_id, self.nested_children(MAX_DEPTH - 1))
        assert result.errors is None
        assert result.data == {"location": {"children": [{"children": []}]}}

    async def test_too_deep_is_rejected_without_data(self, db: AsyncSession, campaign_id: str) -> None:
        await add_entity(db, campaign_id=campaign_id, entity_id="root")
        with recorded_statements(db) as statements:
            result = await run(db, campaign_id, self.nested_children(MAX_DEPTH))
        assert result.data is None
        assert [(error["message"], error["extensions"]) for error in errors_of(result)] == [
            (f"'anonymous' exceeds maximum operation depth of {MAX_DEPTH}", {"code": "QUERY_TOO_DEEP"})
        ]
        assert statements == []

    async def test_aliases_at_the_limit_run(self, db: AsyncSession, campaign_id: str) -> None:
        query = "{ " + " ".join(f"a{index}: __typename" for index in range(MAX_ALIASES)) + " }"
        result = await run(db, campaign_id, query)
        assert result.errors is None
        assert result.data == {f"a{index}": "Query" for index in range(MAX_ALIASES)}

    async def test_too_many_aliases_are_rejected_without_data(self, db: AsyncSession, campaign_id: str) -> None:
        query = "{ " + " ".join(f"a{index}: sessions {{ data {{ id }} }}" for index in range(MAX_ALIASES + 1)) + " }"
        with recorded_statements(db) as statements:
            result = await run(db, campaign_id, query)
        assert result.data is None
        assert errors_of(result) == [
            {
                "message": f"{MAX_ALIASES + 1} aliases found. Allowed: {MAX_ALIASES}",
                "extensions": {"code": "TOO_MANY_ALIASES"},
            }
        ]
        assert statements == []


class TestUnexpectedErrors:
    async def test_masked_as_internal_server_error(self, caplog: pytest.LogCaptureFixture) -> None:
        # A context whose "session" cannot run statements: the resolver fails with AttributeError.
        broken = CampaignContext(db=object(), scope=CampaignScope(campaign_id="c"))  # type: ignore[arg-type]
        with caplog.at_level(logging.ERROR, logger="campaign_api.graphql"):
            result = await schema.execute("{ sessions { data { id } } }", context_value=broken)
        assert result.data is None
        assert errors_of(result) == [
            {
                "message": "Internal server error",
                "locations": [{"line": 1, "column": 3}],
                "path": ["sessions"],
                "extensions": {"code": "INTERNAL_SERVER_ERROR"},
            }
        ]
        assert "execute" not in json.dumps(errors_of(result))
        assert [record.message for record in caplog.records] == ["GraphQL resolver failed"]

    async def test_single_record_failure_is_masked(self) -> None:
        broken = CampaignContext(db=object(), scope=CampaignScope(campaign_id="c"))  # type: ignore[arg-type]
        result = await schema.execute('{ location(id: "x") { id } }', context_value=broken)
        assert result.data == {"location": None}
        assert errors_of(result) == [
            {
                "message": "Internal server error",
                "locations": [{"line": 1, "column": 3}],
                "path": ["location"],
                "extensions": {"code": "INTERNAL_SERVER_ERROR"},
            }
        ]

    async def test_database_failure_is_fetch_failed(self, tmp_path: Path) -> None:
        # The SQLite file's directory does not exist, so connecting fails.
        settings = Settings(_env_file=None, database_url=f"sqlite+aiosqlite:///{tmp_path}/missing/x.db")  # type: ignore[call-arg]
        database = Database(settings)
        try:
            async with database.session() as db:
                result = await run(db, "c", "{ factions { data { id } } }")
        finally:
            await database.dispose()
        assert result.data is None
        assert errors_of(result) == [
            {
                "message": "Failed to fetch factions",
                "locations": [{"line": 1, "column": 3}],
                "path": ["factions"],
                "extensions": {"code": "FETCH_FAILED"},
            }
        ]

    async def test_syntax_errors_are_reported_as_is(self) -> None:
        result = await schema.execute("{ sessions { data { id }")
        assert result.data is None
        assert [error["message"] for error in errors_of(result)] == ["Syntax Error: Expected Name, found <EOF>."]


class TestFlatListExecution:
    """Lists of plain objects take the executor's one-pass completion; results must be
    exactly what graphql-core's own completion gives."""

    async def test_flat_list_matches_field_by_field_completion(self, db: AsyncSession) -> None:
        campaign = await add_campaign(db)
        for day in (1, 2, 3):
            await add_session(db, campaign_id=campaign.id, recording_date=at(day=day), title=f"Day {day}")
        await add_session(db, campaign_id=campaign.id, title="Undated", created_at=at(day=9))
        query = """{ sessions(limit: 10) { data { __typename id title recordingDate createdAt
                     visibility kind: sessionType } pagination { hasMore } } }"""
        context = CampaignContext(db=db, scope=CampaignScope(campaign_id=campaign.id))
        fast = await schema.execute(query, context_value=context)
        plain = await strawberry.Schema(query=Query).execute(query, context_value=context)
        assert isinstance(schema.execution_context_class, type)
        assert issubclass(schema.execution_context_class, PlainFieldExecutor)
        assert fast.errors is None and plain.errors is None
        assert fast.data == plain.data
        assert fast.data is not None
        rows = fast.data["sessions"]["data"]
        assert [row["title"] for row in rows] == ["Day 3", "Day 2", "Day 1", "Undated"]
        assert rows[0]["__typename"] == "Session" and rows[-1]["recordingDate"] is None

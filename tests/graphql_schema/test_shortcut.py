"""The fixed documents' shortcut gives graphql-core's results, on both databases.

Each REST document is run through its shortcut and through graphql-core's executor (the
path it takes without one) on the same data: equal data, equal errors (message, path,
original error), for records that exist, ids that do not, pages with and without a next
page, and cursors that do not parse. Documents of other shapes get no shortcut. Arguments
passed on without coercion are those graphql-core's coercion gives.
"""

from __future__ import annotations

from typing import Any

import pytest
from graphql import ExecutionResult, FieldNode, OperationDefinitionNode, parse
from graphql.execution.values import get_argument_values, get_variable_values
from sqlalchemy.ext.asyncio import AsyncSession

from engine.errors import InvalidCursor, RecordNotFound
from engine.records import CampaignScope
from graphql_schema.context import CampaignContext
from graphql_schema.prepared import PreparedQuery
from graphql_schema.schema import build_schema
from graphql_schema.shortcut import RootFieldShortcut
from rest import documents
from rest.routes import CHANGES, RESOURCES
from tests.factories import ENTITY_TABLES, add_campaign, add_entity, add_session, at

SCHEMA = build_schema(introspection=False)
RECORD_DOCUMENTS = {resource.path: (resource.record_document, resource.tag_document) for resource in RESOURCES}
LIST_DOCUMENTS = {resource.path: resource.list_document for resource in RESOURCES} | {"changes": CHANGES.document}


def prepared(document: str) -> PreparedQuery:
    return PreparedQuery(SCHEMA, document, data_to_orjson=True)


async def both_ways(document: str, db: AsyncSession, campaign_id: str, **variables: Any) -> ExecutionResult:
    """The shortcut's result, after checking it against graphql-core's executor."""
    query = prepared(document)
    shortcut = RootFieldShortcut.of(SCHEMA._schema, parse(document))
    assert shortcut is not None

    def context() -> CampaignContext:
        return CampaignContext(db=db, scope=CampaignScope(campaign_id=campaign_id))

    ours = await shortcut.run(variables=variables, context=context())
    reference = await query._execute(variables=variables, context=context())
    assert ours is not None
    assert ours.data == reference.data
    assert [(e.message, e.path, type(e.original_error)) for e in ours.errors or ()] == [
        (e.message, e.path, type(e.original_error)) for e in reference.errors or ()
    ]
    return ours


async def seeded_campaign(db: AsyncSession) -> tuple[str, dict[str, list[str]]]:
    campaign = await add_campaign(db)
    sessions = [await add_session(db, campaign_id=campaign.id, recording_date=at(day=day)) for day in (1, 2, 3)]
    ids = {"sessions": [session.id for session in sessions]}
    for table in ENTITY_TABLES:
        ids[table.__tablename__] = [  # type: ignore[attr-defined]
            (await add_entity(db, table=table, campaign_id=campaign.id)).id for _ in range(3)
        ]
    return campaign.id, ids


def test_every_rest_document_has_a_shortcut() -> None:
    # Without one, each request would pay for graphql-core's execution.
    for document in documents.ALL:
        assert RootFieldShortcut.of(SCHEMA._schema, parse(document)) is not None, document


@pytest.mark.parametrize(
    "document",
    [
        'query { session(id: "x") { id ...More } } fragment More on Session { title }',
        'query { session(id: "x") { id @include(if: true) } }',
        'query { a: session(id: "x") { id } b: session(id: "y") { id } }',
        'query { session(id: "x") { id id } }',  # a field selected twice, merged
        'query { location(id: "x") { id parent { id } } }',  # an async resolver below
        'query { location(id: "x") { children { id } } }',
    ],
)
def test_other_shapes_take_graphql_cores_path(document: str) -> None:
    assert RootFieldShortcut.of(SCHEMA._schema, parse(document)) is None


@pytest.mark.parametrize("path", list(RECORD_DOCUMENTS))
async def test_records_and_their_tags(db: AsyncSession, path: str) -> None:
    campaign_id, ids = await seeded_campaign(db)
    for document in RECORD_DOCUMENTS[path]:
        for record_id in ids[path]:
            result = await both_ways(document, db, campaign_id, id=record_id)
            assert result.errors is None and result.data is not None
            assert next(iter(result.data.values()))["id" if "etag" not in document else "etag"]
        missing = await both_ways(document, db, campaign_id, id="no-such-record")
        assert missing.errors is not None and isinstance(missing.errors[0].original_error, RecordNotFound)


@pytest.mark.parametrize("path", list(LIST_DOCUMENTS))
async def test_pages_and_bad_cursors(db: AsyncSession, path: str) -> None:
    campaign_id, _ids = await seeded_campaign(db)
    document = LIST_DOCUMENTS[path]
    first = await both_ways(document, db, campaign_id, limit=2, cursor=None)
    assert first.data is not None
    page = next(iter(first.data.values()))
    if path != "changes":  # the factories write records, not feed entries
        assert len(page["data"]) == 2 and page["pagination"]["has_more"]
    await both_ways(document, db, campaign_id, limit=2, cursor=page["pagination"]["next_cursor"])
    await both_ways(document, db, campaign_id, limit=100, cursor=None)
    bad = await both_ways(document, db, campaign_id, limit=2, cursor="not a cursor")
    assert bad.data is None and bad.errors is not None
    assert isinstance(bad.errors[0].original_error, InvalidCursor)


async def test_variables_that_do_not_coerce_are_left_to_graphql_core(db: AsyncSession) -> None:
    campaign_id, _ids = await seeded_campaign(db)
    shortcut = RootFieldShortcut.of(SCHEMA._schema, parse(documents.SESSIONS_LIST))
    assert shortcut is not None
    context = CampaignContext(db=db, scope=CampaignScope(campaign_id=campaign_id))
    variables = {"limit": "many", "cursor": None}
    assert await shortcut.run(variables=variables, context=context) is None
    result = await prepared(documents.SESSIONS_LIST).execute(variables=variables, context=context)
    assert result.errors is not None and "limit" in result.errors[0].message


def test_every_rest_document_takes_its_arguments_from_its_variables() -> None:
    for document in documents.ALL:
        shortcut = RootFieldShortcut.of(SCHEMA._schema, parse(document))
        assert shortcut is not None and shortcut.direct is not None, document


def _coerced_arguments(document: str, variables: dict[str, Any]) -> dict[str, Any] | None:
    """The arguments graphql-core builds from `variables` (None: they do not coerce)."""
    operation = parse(document).definitions[0]
    assert isinstance(operation, OperationDefinitionNode)
    coerced = get_variable_values(SCHEMA._schema, operation.variable_definitions, variables)
    if isinstance(coerced, list):
        return None
    node = operation.selection_set.selections[0]
    assert isinstance(node, FieldNode) and SCHEMA._schema.query_type is not None
    return get_argument_values(SCHEMA._schema.query_type.fields[node.name.value], node, coerced)


@pytest.mark.parametrize(
    ("document", "variables", "direct"),
    [
        (documents.SESSION_RECORD, {"id": "abc"}, True),
        (documents.SESSION_RECORD, {"id": 5}, False),  # an ID given as an int becomes "5"
        (documents.SESSION_RECORD, {"id": None}, False),  # null for a non-null ID
        (documents.SESSION_RECORD, {}, False),
        (documents.SESSIONS_LIST, {"limit": 2, "cursor": None}, True),
        (documents.SESSIONS_LIST, {"limit": None, "cursor": "c"}, True),
        (documents.SESSIONS_LIST, {"limit": 2}, False),  # a variable not given is not a null
        (documents.SESSIONS_LIST, {"limit": True, "cursor": None}, False),
        (documents.SESSIONS_LIST, {"limit": 2**31, "cursor": None}, False),
        (documents.SESSIONS_LIST, {"limit": -(2**31), "cursor": None}, True),
        (documents.CHANGES_LIST, {"limit": 2.0, "cursor": None}, False),
    ],
)
def test_arguments_taken_directly_are_those_graphql_core_coerces(
    document: str, variables: dict[str, Any], direct: bool
) -> None:
    shortcut = RootFieldShortcut.of(SCHEMA._schema, parse(document))
    assert shortcut is not None and shortcut.direct is not None
    arguments = shortcut.direct.values(variables)
    assert (arguments is not None) == direct
    if arguments is not None:
        assert arguments == _coerced_arguments(document, variables)


@pytest.mark.parametrize(
    "document",
    [
        'query ($id: ID = "x") { session(id: $id) { id } }',  # a variable's default
        'query { session(id: "x") { id } }',  # a literal argument
        "query ($limit: Int) { sessions(limit: $limit) { data { id } } }",  # an argument left out
        "query ($id: ID!, $other: ID) { session(id: $id) { id } }",  # a variable not passed on
    ],
)
def test_other_arguments_are_coerced_by_graphql_core(document: str) -> None:
    shortcut = RootFieldShortcut.of(SCHEMA._schema, parse(document))
    assert shortcut is not None and shortcut.direct is None

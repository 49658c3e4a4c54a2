"""The cost limit (graphql_schema/cost.py): what it admits, what it refuses, and that a
refused operation reads nothing."""

from __future__ import annotations

import pytest
from graphql import (
    GraphQLObjectType,
    get_introspection_query,
    get_named_type,
    get_nullable_type,
    is_leaf_type,
    parse,
)
from sqlalchemy.ext.asyncio import AsyncSession

from engine.pagination import MAX_LIMIT
from graphql_schema.cost import MAX_COST, RENDER_POINTS, ROW_POINTS, operation_costs
from rest import documents
from tests.factories import add_campaign, add_session
from tests.graphql_schema.test_schema import errors_of, recorded_statements, run, schema

# The query of issue 12: 30 aliases of a 100-row page with summaries, at 30 cursors.
THIRTY_PAGES = (
    "{ "
    + " ".join(f'p{n}: sessions(limit: 100, cursor: "c{n}") {{ data {{ id summaryMarkdown }} }}' for n in range(30))
    + " }"
)


def cost_of(query: str) -> int:
    [cost] = operation_costs(schema._schema, parse(query)).values()
    return cost


def every_field(object_type: GraphQLObjectType) -> str:
    """Every field of a record type whose value is not another record (its REST body's fields)."""
    return " ".join(name for name, field in object_type.fields.items() if is_leaf_type(get_named_type(field.type)))


def full_pages() -> dict[str, str]:
    """For each list of Query: one page of MAX_LIMIT records with every field, and its pagination."""
    pages = {}
    for name, field in schema._schema.query_type.fields.items():
        page_type = get_nullable_type(field.type)
        if not isinstance(page_type, GraphQLObjectType) or "data" not in page_type.fields:
            continue
        record_type = get_named_type(page_type.fields["data"].type)
        assert isinstance(record_type, GraphQLObjectType)
        pages[name] = (
            f"{{ {name}(limit: {MAX_LIMIT}) {{ data {{ {every_field(record_type)} }} "
            "pagination { nextCursor hasMore } } }"
        )
    return pages


class TestBudget:
    @pytest.mark.parametrize("document", documents.ALL, ids=lambda document: document.split("(")[0])
    def test_every_rest_document_is_admitted(self, document: str) -> None:
        assert cost_of(document) <= MAX_COST

    @pytest.mark.parametrize("field", ["sessions", "locations", "characters", "factions", "items"])
    def test_any_single_page_with_every_field_is_admitted(self, field: str) -> None:
        query = full_pages()[field]
        assert "Markdown" in query and "Text" in query
        # A page, its pagination, and MAX_LIMIT records each rendered once.
        assert cost_of(query) == 2 * ROW_POINTS + MAX_LIMIT * (ROW_POINTS + RENDER_POINTS)
        assert cost_of(query) <= MAX_COST

    def test_the_graphiql_introspection_query_is_admitted(self) -> None:
        assert cost_of(get_introspection_query(descriptions=True)) <= MAX_COST

    def test_the_thirty_pages_of_the_issue_are_refused(self) -> None:
        assert cost_of(THIRTY_PAGES) == 30 * (ROW_POINTS + MAX_LIMIT * (ROW_POINTS + RENDER_POINTS))
        assert cost_of(THIRTY_PAGES) > MAX_COST


class TestEstimate:
    def test_a_variable_limit_counts_as_the_maximum(self) -> None:
        by_variable = "query($n: Int) { sessions(limit: $n) { data { id } } }"
        assert cost_of(by_variable) == cost_of("{ sessions(limit: 100) { data { id } } }") == 1 + 100

    def test_literal_limits_are_capped_and_absent_ones_take_the_default(self) -> None:
        assert cost_of("{ sessions(limit: 5) { data { id } } }") == 1 + 5
        assert cost_of("{ sessions(limit: 100000000000000000000000) { data { id } } }") == 1 + 100
        assert cost_of("{ sessions { data { id } } }") == cost_of("{ sessions(limit: null) { data { id } } }") == 1 + 50

    def test_nested_lists_multiply(self) -> None:
        query = "{ locations(limit: 10) { data { children(limit: 20) { children(limit: 3) { id } } } } }"
        assert cost_of(query) == 1 + 10 * (1 + 20 * (1 + 3))
        # Children without a limit count as their default, the maximum.
        assert cost_of('{ location(id: "x") { children { id } } }') == 1 + MAX_LIMIT

    def test_a_records_two_markdown_fields_are_one_rendering(self) -> None:
        one = cost_of("{ sessions(limit: 10) { data { summaryMarkdown } } }")
        both = cost_of("{ sessions(limit: 10) { data { summaryMarkdown summaryText s: summaryText } } }")
        assert one == both == 1 + 10 * (1 + RENDER_POINTS)
        nested = cost_of('{ location(id: "x") { descriptionText parent { descriptionMarkdown } } }')
        assert nested == (1 + RENDER_POINTS) + (1 + RENDER_POINTS)

    def test_fragments_cost_what_their_fields_cost(self) -> None:
        inline = "{ sessions(limit: 7) { data { id summaryText } pagination { hasMore } } }"
        with_fragments = (
            "{ sessions(limit: 7) { ...Page } } "
            "fragment Page on SessionPage { data { ...Row } ... on SessionPage { pagination { hasMore } } } "
            "fragment Row on Session { id summaryText }"
        )
        assert cost_of(with_fragments) == cost_of(inline) == 1 + 7 * (1 + RENDER_POINTS) + 1

    def test_scalars_and_typename_are_free(self) -> None:
        assert cost_of("{ __typename }") == 0
        assert cost_of('{ session(id: "x") { id title __typename } }') == 1


async def _seed_sessions(db: AsyncSession) -> str:
    campaign_id = (await add_campaign(db)).id
    for index in range(3):
        await add_session(db, campaign_id=campaign_id, session_id=f"s_{index}", summary="Some **text**.")
    return campaign_id


class TestRefusal:
    async def test_an_operation_over_the_budget_reads_nothing(self, db: AsyncSession) -> None:
        campaign_id = await _seed_sessions(db)
        with recorded_statements(db) as statements:
            result = await run(db, campaign_id, THIRTY_PAGES)
        cost = cost_of(THIRTY_PAGES)
        assert statements == []
        assert result.data is None
        assert errors_of(result) == [
            {
                "message": f"'anonymous' has an estimated cost of {cost:,}, above the budget of {MAX_COST:,}: "
                "ask for smaller pages, fewer Markdown fields or fewer aliases, or split the query",
                "locations": [{"line": 1, "column": 1}],
                "extensions": {"code": "QUERY_TOO_COSTLY", "cost": cost, "budget": MAX_COST},
            }
        ]

    async def test_each_costly_operation_is_named(self, db: AsyncSession) -> None:
        campaign_id = await _seed_sessions(db)
        pages = THIRTY_PAGES.removeprefix("{")
        result = await run(db, campaign_id, f"query Cheap {{ __typename }} query Costly {{{pages}")
        assert [error["message"].split(" has ")[0] for error in errors_of(result)] == ["'Costly'"]

    async def test_at_the_budget_it_runs(self, db: AsyncSession) -> None:
        campaign_id = await _seed_sessions(db)
        result = await run(db, campaign_id, full_pages()["sessions"])
        assert result.errors is None
        assert result.data is not None
        assert [row["summaryText"] for row in result.data["sessions"]["data"]] == ["Some text.\n"] * 3

"""The Query type: a list field and a single-record field per record type.

Every resolver reads through the campaign scope of the execution context; ids of other
campaigns, hidden or private records and absent ids all raise the same RecordNotFound.
"""

# No `from __future__ import annotations`: the generated resolvers carry real type objects.
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Annotated, Any

import strawberry
from graphql import FieldNode, FragmentDefinitionNode, FragmentSpreadNode, SelectionNode
from strawberry.types import Info

from engine.changes import list_changes
from engine.pagination import DEFAULT_LIMIT, MAX_LIMIT, Page
from engine.records import EntityKind, get_entity, get_session, list_entities, list_sessions
from graphql_schema.context import CampaignContext
from graphql_schema.cost import MAX_COST, RENDER_POINTS, ROW_POINTS
from graphql_schema.types import (
    DESCRIPTION_FIELDS,
    SUMMARY_FIELDS,
    ChangePage,
    CharacterPage,
    CharacterType,
    FactionPage,
    FactionType,
    FeedPagination,
    ItemPage,
    ItemType,
    LocationPage,
    LocationType,
    Pagination,
    SessionPage,
    SessionType,
)

Ctx = Info[CampaignContext, Any]
LIMIT_HELP = (
    f"Page size: default {DEFAULT_LIMIT}, values above {MAX_LIMIT} are capped, below 1 is an error. "
    "Each record of the page counts towards the query's cost budget (see Query)."
)
CURSOR_HELP = "The nextCursor of the previous page; omit for the first page."
LimitArgument = Annotated[int | None, strawberry.argument(description=LIMIT_HELP)]
CursorArgument = Annotated[str | None, strawberry.argument(description=CURSOR_HELP)]
FEED_CURSOR_HELP = "The nextCursor of an earlier page; omit to read the feed from its start."
# Records read the stored Markdown and the body digest only when a client asks for them.
TAG_FIELDS = frozenset({"etag"})
_DETAIL_FIELDS = SUMMARY_FIELDS | DESCRIPTION_FIELDS | TAG_FIELDS


def selected_details(
    field_nodes: Sequence[FieldNode], fragments: Mapping[str, FragmentDefinitionNode]
) -> frozenset[str]:
    """Which of the fields that cost a read (stored Markdown, the tag) are selected anywhere
    below the field (fragments included), in one walk.

    Walks graphql-core's syntax nodes: Strawberry's `selected_fields` would first convert
    the whole selection (arguments, directives) on every request.
    """
    pending: list[SelectionNode] = [
        selection for node in field_nodes if node.selection_set for selection in node.selection_set.selections
    ]
    spread: set[str] = set()
    found: set[str] = set()
    while pending:
        selection = pending.pop()
        if isinstance(selection, FieldNode) and selection.name.value in _DETAIL_FIELDS:
            found.add(selection.name.value)
        if isinstance(selection, FragmentSpreadNode):
            fragment = fragments.get(selection.name.value)
            if fragment is None or selection.name.value in spread:
                continue
            spread.add(selection.name.value)
            pending.extend(fragment.selection_set.selections)
        elif selection.selection_set is not None:  # type: ignore[attr-defined]
            pending.extend(selection.selection_set.selections)  # type: ignore[attr-defined]
    return frozenset(found)


def _selected_details(info: Ctx) -> frozenset[str]:
    raw = info._raw_info
    return selected_details(raw.field_nodes, raw.fragments)


def _as_page(page: Page[Any], page_type: type) -> Any:
    return page_type(data=page.items, pagination=Pagination(next_cursor=page.next_cursor, has_more=page.has_more))


# The reads behind the root fields: the execution context, which of the detail fields the
# selection asks for, and the field's arguments (by their Python names). The resolvers
# below find `details` in their selection; a fixed document knows it in advance
# (graphql_schema/shortcut.py).
RootRead = Callable[..., Awaitable[Any]]


async def read_sessions(
    ctx: CampaignContext, details: frozenset[str], *, limit: int | None = DEFAULT_LIMIT, cursor: str | None = None
) -> SessionPage:
    with_summary, with_tag = bool(details & SUMMARY_FIELDS), bool(details & TAG_FIELDS)
    page = await ctx.read(
        lambda db: list_sessions(
            db, scope=ctx.scope, limit=limit, cursor=cursor, with_summary=with_summary, with_tag=with_tag
        )
    )
    return _as_page(page, SessionPage)  # type: ignore[no-any-return]


async def read_session(ctx: CampaignContext, details: frozenset[str], *, id: str) -> Any:
    with_summary, with_tag = bool(details & SUMMARY_FIELDS), bool(details & TAG_FIELDS)
    return await ctx.read(
        lambda db: get_session(db, scope=ctx.scope, session_id=id, with_summary=with_summary, with_tag=with_tag)
    )


def _entity_list_read(kind: EntityKind, page_type: type) -> RootRead:
    async def read(
        ctx: CampaignContext, details: frozenset[str], *, limit: int | None = DEFAULT_LIMIT, cursor: str | None = None
    ) -> Any:
        with_description, with_tag = bool(details & DESCRIPTION_FIELDS), bool(details & TAG_FIELDS)
        page = await ctx.read(
            lambda db: list_entities(
                db,
                kind=kind,
                scope=ctx.scope,
                limit=limit,
                cursor=cursor,
                with_description=with_description,
                with_tag=with_tag,
            )
        )
        return _as_page(page, page_type)

    return read


def _entity_read(kind: EntityKind) -> RootRead:
    async def read(ctx: CampaignContext, details: frozenset[str], *, id: str) -> Any:
        with_description, with_tag = bool(details & DESCRIPTION_FIELDS), bool(details & TAG_FIELDS)
        return await ctx.read(
            lambda db: get_entity(
                db, kind=kind, scope=ctx.scope, entity_id=id, with_description=with_description, with_tag=with_tag
            )
        )

    return read


async def read_changes(
    ctx: CampaignContext, _details: frozenset[str], *, limit: int | None = DEFAULT_LIMIT, cursor: str | None = None
) -> ChangePage:
    page = await ctx.read(lambda db: list_changes(db, scope=ctx.scope, limit=limit, cursor=cursor))
    return ChangePage(
        data=page.items,
        pagination=FeedPagination(next_cursor=page.next_cursor, has_more=page.has_more),
    )


# Each root field's read, by the field's GraphQL name.
ROOT_READS: dict[str, RootRead] = {
    "sessions": read_sessions,
    "session": read_session,
    "changes": read_changes,
}
_ENTITY_FIELDS = (
    ("locations", "location", EntityKind.LOCATION, LocationPage),
    ("characters", "character", EntityKind.CHARACTER, CharacterPage),
    ("factions", "faction", EntityKind.FACTION, FactionPage),
    ("items", "item", EntityKind.ITEM, ItemPage),
)
for _plural, _singular, _kind, _page_type in _ENTITY_FIELDS:
    ROOT_READS[_plural] = _entity_list_read(_kind, _page_type)
    ROOT_READS[_singular] = _entity_read(_kind)


async def _sessions(
    info: Ctx,
    limit: LimitArgument = DEFAULT_LIMIT,
    cursor: CursorArgument = None,
) -> SessionPage:
    return await read_sessions(info.context, _selected_details(info), limit=limit, cursor=cursor)


async def _session(info: Ctx, id: strawberry.ID) -> SessionType | None:
    return await read_session(info.context, _selected_details(info), id=id)  # type: ignore[no-any-return]


def _entity_list_resolver(plural: str, page_type: type) -> Callable[..., Any]:
    read = ROOT_READS[plural]

    async def resolve(
        info: Ctx,
        limit: LimitArgument = DEFAULT_LIMIT,
        cursor: CursorArgument = None,
    ) -> Any:
        return await read(info.context, _selected_details(info), limit=limit, cursor=cursor)

    resolve.__annotations__["return"] = page_type
    return resolve


def _entity_resolver(singular: str, record_type: type) -> Callable[..., Any]:
    read = ROOT_READS[singular]

    async def resolve(info: Ctx, id: strawberry.ID) -> Any:
        return await read(info.context, _selected_details(info), id=id)

    resolve.__annotations__["return"] = record_type | None
    return resolve


async def _changes(
    info: Ctx,
    limit: LimitArgument = DEFAULT_LIMIT,
    cursor: Annotated[str | None, strawberry.argument(description=FEED_CURSOR_HELP)] = None,
) -> ChangePage:
    return await read_changes(info.context, frozenset(), limit=limit, cursor=cursor)


def _list_field(resolver: Callable[..., Any], plural: str) -> Any:
    return strawberry.field(resolver=resolver, description=f"Visible {plural} of the key's campaign, in list order.")


def _record_field(resolver: Callable[..., Any], singular: str) -> Any:
    # Nullable, so one NOT_FOUND does not null out sibling fields of the operation.
    return strawberry.field(resolver=resolver, description=f"One visible {singular}; null and NOT_FOUND otherwise.")


QUERY_DESCRIPTION = (
    "The public records of the key's campaign. Before it runs, each operation's cost is estimated from its "
    f"selection and must not exceed {MAX_COST:,} points: every object it may return (a record, a page, its "
    f"pagination) costs {ROW_POINTS}; a record whose summary or description is selected (Markdown or text, "
    f"one rendering for both) costs {RENDER_POINTS} more; a list multiplies the cost of one item by its `limit` "
    f"(a variable counts as {MAX_LIMIT}; absent, the default), and nested lists multiply. One page of "
    f"{MAX_LIMIT} records with every field fits; an operation over the budget is refused with the error code "
    "QUERY_TOO_COSTLY and no data."
)


@strawberry.type(description=QUERY_DESCRIPTION)
class Query:
    sessions: SessionPage = _list_field(_sessions, "public sessions")
    session: SessionType | None = _record_field(_session, "public session")
    locations: LocationPage = _list_field(_entity_list_resolver("locations", LocationPage), "locations")
    location: LocationType | None = _record_field(_entity_resolver("location", LocationType), "location")
    characters: CharacterPage = _list_field(_entity_list_resolver("characters", CharacterPage), "characters")
    character: CharacterType | None = _record_field(_entity_resolver("character", CharacterType), "character")
    factions: FactionPage = _list_field(_entity_list_resolver("factions", FactionPage), "factions")
    faction: FactionType | None = _record_field(_entity_resolver("faction", FactionType), "faction")
    items: ItemPage = _list_field(_entity_list_resolver("items", ItemPage), "items")
    item: ItemType | None = _record_field(_entity_resolver("item", ItemType), "item")
    changes: ChangePage = strawberry.field(
        resolver=_changes,
        description="The change feed of the key's campaign: each record that is or was visible, once, at its "
        "latest change, in the order changes happened.",
    )

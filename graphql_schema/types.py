"""GraphQL object types. Resolvers receive database rows (attribute access by column name).

Markdown fields are GM-stripped and normalized on the way out; the raw column is never
exposed as a field.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

import strawberry
from strawberry.types import Info

from engine.markdown import render_public
from engine.pagination import MAX_LIMIT, clamp_limit
from graphql_schema.context import CampaignContext

# The Markdown fields: a list reads its raw Markdown column only when one is selected,
# and the cost of an operation counts their rendering (graphql_schema/cost.py).
SUMMARY_FIELDS = {"summaryMarkdown", "summaryText"}
DESCRIPTION_FIELDS = {"descriptionMarkdown", "descriptionText"}
CHILDREN_LIMIT_HELP = (
    f"How many children to return, in list order: default and maximum {MAX_LIMIT}, below 1 is an error. "
    "Each child counts towards the query's cost budget (see Query)."
)


@strawberry.type(description="Where the next page starts.")
class Pagination:
    next_cursor: str | None
    has_more: bool


@strawberry.type(name="Session", description="A public session of the key's campaign.")
class SessionType:
    id: strawberry.ID
    title: str
    status: str = strawberry.field(description="Stored processing status, returned unchanged.")
    recording_date: datetime | None
    created_at: datetime | None
    updated_at: datetime | None
    session_type: str
    visibility: str

    @strawberry.field(description="Public summary as normalized Markdown, GM-only parts removed.")
    def summary_markdown(self) -> str:
        return render_public(getattr(self, "summary", None)).markdown

    @strawberry.field(description="The summary without heading and bold markers or images.")
    def summary_text(self) -> str:
        return render_public(getattr(self, "summary", None)).text


@strawberry.type
class WikiEntityFields:
    id: strawberry.ID
    name: str
    icon: str | None
    hidden_from_wiki: bool
    created_at: datetime | None
    updated_at: datetime | None
    type: str
    image_url: str | None

    @strawberry.field(description="Public description as normalized Markdown, GM-only parts removed.")
    def description_markdown(self) -> str:
        return render_public(getattr(self, "description", None)).markdown

    @strawberry.field(description="The description without heading and bold markers or images.")
    def description_text(self) -> str:
        return render_public(getattr(self, "description", None)).text


@strawberry.type(name="Location", description="A wiki-visible location of the key's campaign.")
class LocationType(WikiEntityFields):
    parent_id: strawberry.ID | None = strawberry.field(
        description="May name a hidden parent, which is then not returned by `parent`."
    )

    @strawberry.field(description="The parent location when it is visible, else null.")
    async def parent(self, info: Info[CampaignContext, Any]) -> LocationType | None:
        parent_id = getattr(self, "parent_id", None)
        if parent_id is None:
            return None
        return await info.context.location_by_id.load(parent_id)  # type: ignore[return-value]

    @strawberry.field(description=f"Visible child locations, in list order: the first `limit` (at most {MAX_LIMIT}).")
    async def children(
        self,
        info: Info[CampaignContext, Any],
        limit: Annotated[int | None, strawberry.argument(description=CHILDREN_LIMIT_HELP)] = MAX_LIMIT,
    ) -> list[LocationType]:
        return await info.context.children_of(clamp_limit(limit)).load(self.id)  # type: ignore[return-value]


@strawberry.type(name="Character", description="A wiki-visible character of the key's campaign.")
class CharacterType(WikiEntityFields):
    pass


@strawberry.type(name="Faction", description="A wiki-visible faction of the key's campaign.")
class FactionType(WikiEntityFields):
    pass


@strawberry.type(name="Item", description="A wiki-visible item of the key's campaign.")
class ItemType(WikiEntityFields):
    pass


@strawberry.type
class SessionPage:
    data: list[SessionType]
    pagination: Pagination


@strawberry.type
class LocationPage:
    data: list[LocationType]
    pagination: Pagination


@strawberry.type
class CharacterPage:
    data: list[CharacterType]
    pagination: Pagination


@strawberry.type
class FactionPage:
    data: list[FactionType]
    pagination: Pagination


@strawberry.type
class ItemPage:
    data: list[ItemType]
    pagination: Pagination

"""GraphQL object types. Resolvers receive database rows (attribute access by column name).

Markdown fields are the public Markdown and text stored when the record was written
(GM-only parts removed, normalized: engine/record_writer.py); the raw column is never
read or exposed.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

import strawberry
from strawberry.types import Info

from engine.pagination import MAX_LIMIT, clamp_limit
from engine.public_body import entity_tag
from graphql_schema.context import CampaignContext

# The Markdown fields: a read selects the stored Markdown columns only when one is
# selected, and the cost of an operation counts them as large text (graphql_schema/cost.py).
SUMMARY_FIELDS = frozenset({"summaryMarkdown", "summaryText"})
DESCRIPTION_FIELDS = frozenset({"descriptionMarkdown", "descriptionText"})
CHILDREN_LIMIT_HELP = (
    f"How many children to return, in list order: default and maximum {MAX_LIMIT}, below 1 is an error. "
    "Each child counts towards the query's cost budget (see Query)."
)
ETAG_HELP = (
    "Strong entity tag of the record's single-record REST body: it changes exactly when that "
    "body changes (the ETag of GET /api/public/v1/<type>/{id})."
)
SUMMARY_MARKDOWN_HELP = "Public summary as normalized Markdown, GM-only parts removed."
SUMMARY_TEXT_HELP = "The summary without heading and bold markers or images."
DESCRIPTION_MARKDOWN_HELP = "Public description as normalized Markdown, GM-only parts removed."
DESCRIPTION_TEXT_HELP = "The description without heading and bold markers or images."


def _etag(record: object) -> str:
    return entity_tag(record.body_digest)  # type: ignore[attr-defined]


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
    summary_markdown: str = strawberry.field(description=SUMMARY_MARKDOWN_HELP)
    summary_text: str = strawberry.field(description=SUMMARY_TEXT_HELP)

    @strawberry.field(description=ETAG_HELP)
    def etag(self) -> str:
        return _etag(self)


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
    description_markdown: str = strawberry.field(description=DESCRIPTION_MARKDOWN_HELP)
    description_text: str = strawberry.field(description=DESCRIPTION_TEXT_HELP)

    @strawberry.field(description=ETAG_HELP)
    def etag(self) -> str:
        return _etag(self)


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


@strawberry.type(name="Change", description="The latest change of one record of the key's campaign.")
class ChangeType:
    type: str = strawberry.field(description="session, location, character, faction or item.")
    id: strawberry.ID
    change: str = strawberry.field(
        description="upsert: the record is visible and its body changed (or is new to the feed); "
        "delete: it was visible and no longer is."
    )
    changed_at: datetime = strawberry.field(description="When the write that made the change ran (UTC).")


@strawberry.type(description="Where to resume the feed.")
class FeedPagination:
    next_cursor: str = strawberry.field(description="Never null: store it and read from it later.")
    has_more: bool = strawberry.field(description="True when more entries are available now.")


@strawberry.type
class ChangePage:
    data: list[ChangeType]
    pagination: FeedPagination

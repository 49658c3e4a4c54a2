"""Response schemas for the OpenAPI document only; responses are built from GraphQL data.

They describe exactly the fields of the spec and contract §1, so the document tells the
truth about every 200 body (checked by schemathesis and the contract tests).
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Pagination(_Strict):
    next_cursor: str | None = Field(description="Opaque cursor for the next page; null on the last page.")
    has_more: bool = Field(description="True when another page is available.")


class SessionListItem(_Strict):
    id: str
    title: str
    status: str = Field(description="Stored processing status, e.g. completed, processing, failed.")
    recording_date: datetime | None
    created_at: datetime | None
    updated_at: datetime | None
    session_type: str = Field(description="Stored session kind, e.g. audio or text_doc.")
    visibility: Literal["public"]


class SessionRecord(SessionListItem):
    summary_markdown: str = Field(description="Public summary, normalized Markdown; GM-only parts removed.")
    summary_text: str = Field(description="The summary without heading and bold markers or images.")


class _WikiEntityHead(_Strict):
    """The fields every wiki entity lists first (contract §1); the spec puts a location's
    parent_id between `type` and `image_url`, so each list item adds its own tail."""

    id: str
    name: str
    icon: str | None
    hidden_from_wiki: Literal[False]
    created_at: datetime | None
    updated_at: datetime | None
    type: str


class EntityListItem(_WikiEntityHead):
    image_url: str | None


class LocationListItem(_WikiEntityHead):
    parent_id: str | None = Field(description="May reference a hidden location that is not listed.")
    image_url: str | None


DESCRIPTION_MARKDOWN = Field(description="Public description, normalized Markdown; GM-only parts removed.")
DESCRIPTION_TEXT = Field(description="The description without heading and bold markers or images.")


class EntityRecord(EntityListItem):
    description_markdown: str = DESCRIPTION_MARKDOWN
    description_text: str = DESCRIPTION_TEXT


class LocationRecord(LocationListItem):
    description_markdown: str = DESCRIPTION_MARKDOWN
    description_text: str = DESCRIPTION_TEXT


class SessionList(_Strict):
    data: list[SessionListItem]
    pagination: Pagination


class LocationList(_Strict):
    data: list[LocationListItem]
    pagination: Pagination


class EntityList(_Strict):
    data: list[EntityListItem]
    pagination: Pagination


class Change(_Strict):
    type: Literal["session", "character", "location", "faction", "item"]
    id: str
    change: Literal["upsert", "delete"] = Field(
        description="upsert: the record is visible and its single-record body changed since its previous entry "
        "(or it is new to the feed, or back after a delete); delete: it was visible and no longer is."
    )
    changed_at: datetime = Field(description="When the import (or other write) that made the change ran, in UTC.")


class FeedPagination(_Strict):
    next_cursor: str = Field(description="Never null: where to resume, now or later.")
    has_more: bool = Field(description="True when more entries are available now.")


class ChangeList(_Strict):
    data: list[Change]
    pagination: FeedPagination


class ErrorBody(_Strict):
    error: str

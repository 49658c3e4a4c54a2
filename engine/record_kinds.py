"""The five record types as the write path sees them: table, raw Markdown, visibility."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Table

from engine.public_body import BODY_FIELDS, RENDERED_FIELDS
from engine.tables import Character, Faction, Item, Location, Session


@dataclass(frozen=True, slots=True)
class RecordKind:
    record_type: str  # as the change feed names it: "session", "location", ...
    array: str  # as the export and the REST paths name it: "sessions", "locations", ...
    table: Table
    source: str  # the raw Markdown column
    visibility_column: str

    @property
    def markdown_column(self) -> str:
        return RENDERED_FIELDS[self.record_type][0]

    @property
    def text_column(self) -> str:
        return RENDERED_FIELDS[self.record_type][1]

    @property
    def body_columns(self) -> tuple[str, ...]:
        """The body's stored fields other than the rendered ones."""
        return BODY_FIELDS[self.record_type][:-2]

    def visible(self, values: Mapping[str, Any]) -> bool:
        """Whether the API returns the record (to keys of its campaign)."""
        if self.visibility_column == "visibility":
            return bool(values["visibility"] == "public")
        return not values["hidden_from_wiki"]


def _kind(record_type: str, array: str, table: Any, source: str, visibility_column: str) -> RecordKind:
    return RecordKind(record_type, array, table.__table__, source, visibility_column)


# In the order an import writes them.
RECORD_KINDS: Mapping[str, RecordKind] = {
    kind.array: kind
    for kind in (
        _kind("session", "sessions", Session, "summary", "visibility"),
        _kind("location", "locations", Location, "description", "hidden_from_wiki"),
        _kind("character", "characters", Character, "description", "hidden_from_wiki"),
        _kind("faction", "factions", Faction, "description", "hidden_from_wiki"),
        _kind("item", "items", Item, "description", "hidden_from_wiki"),
    )
}

"""Campaign exports for engine tests, written as files with ids unique to each test.

Ids in them start with "@", replaced by a prefix unique to the test, so no test depends on
what another left in the shared database.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

from engine.tables import Campaign, Character, Faction, Item, Location, Session, User
from tests.factories import unique_id

ALL_TABLES: tuple[Any, ...] = (User, Campaign, Session, Location, Character, Faction, Item)
DEMO_EXPORT = resources.files("engine") / "demo" / "campaign.json"
DROP = object()  # a field value meaning "leave the field out"


def _record(defaults: dict[str, Any], fields: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in {**defaults, **fields}.items() if value is not DROP}


def user(user_id: str = "@u", **fields: Any) -> dict[str, Any]:
    return _record({"id": user_id, "name": "Mara"}, fields)


def campaign(campaign_id: str = "@c", **fields: Any) -> dict[str, Any]:
    return _record({"id": campaign_id, "name": "Ashfall", "owner_id": "@u"}, fields)


def session(session_id: str = "@s1", **fields: Any) -> dict[str, Any]:
    defaults = {
        "id": session_id,
        "campaign_id": "@c",
        "title": "Smoke on the Ridge",
        "status": "completed",
        "session_type": "audio",
        "visibility": "public",
    }
    return _record(defaults, fields)


def entity(entity_id: str = "@l1", **fields: Any) -> dict[str, Any]:
    return _record({"id": entity_id, "campaign_id": "@c", "name": "Emberhold", "type": "settlement"}, fields)


def base_export(**arrays: list[Any]) -> dict[str, list[Any]]:
    """A valid export (one user, campaign, session, location) with `arrays` replaced."""
    export: dict[str, list[Any]] = {
        "users": [user()],
        "campaigns": [campaign()],
        "sessions": [session()],
        "locations": [entity()],
    }
    return {**export, **arrays}


class ExportFiles:
    """Writes exports into tmp_path, turning "@" into this test's id prefix."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.prefix = unique_id("imp") + "-"

    def ids(self, text: str) -> str:
        return text.replace("@", self.prefix)

    def write(self, export: dict[str, Any] | str, name: str = "export.json") -> Path:
        text = export if isinstance(export, str) else json.dumps(export)
        path = self.directory / name
        path.write_text(self.ids(text), encoding="utf-8")
        return path

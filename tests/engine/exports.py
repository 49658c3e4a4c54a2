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

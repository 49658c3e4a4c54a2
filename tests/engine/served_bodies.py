"""Every 200 body the ten endpoints serve for a database, crawled in-process.

`bodies_before_sync.json` holds what version 1.0.0 (before public content was rendered at
write time) served for the contract and demo campaigns; the upgrade test compares what a
database imported by that version serves after `campaign-api db upgrade` with it.

    python -m tests.engine.served_bodies OUT.json   # re-capture (needs PostgreSQL)
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import httpx

from engine.db import Database
from engine.keys import create_api_key
from engine.settings import Settings
from rest.app import create_app
from tests.contract.campaign import CAMPAIGN_A, CAMPAIGN_B, EXPORT, OWNER_A, OWNER_B
from tests.factories import unlimited_settings

GOLDEN = Path(__file__).with_name("bodies_before_sync.json")
DEMO_EXPORT = resources.files("engine") / "demo" / "campaign.json"
# (campaign, owner) of every campaign whose bodies are compared.
CAMPAIGNS = ((CAMPAIGN_A, OWNER_A), (CAMPAIGN_B, OWNER_B), ("ashfall", "mara"))
RESOURCES = ("sessions", "characters", "locations", "factions", "items")
PAGE_SIZES = (None, 3, 100)
PEPPER = "served-bodies-pepper-0123456789-abcdefgh"


def campaign_exports() -> list[dict[str, Any]]:
    """The contract campaigns' export and the demo campaign's, as JSON objects."""
    return [EXPORT, json.loads(DEMO_EXPORT.read_text(encoding="utf-8"))]


def settings_for(database_url: str) -> Settings:
    return unlimited_settings(database_url, pepper=PEPPER)


async def issue_tokens(database_url: str) -> dict[str, str]:
    """A key per compared campaign, by campaign id."""
    database = Database(settings_for(database_url))
    try:
        async with database.session() as db:
            tokens = {}
            for campaign, owner in CAMPAIGNS:
                issued = await create_api_key(
                    db, campaign_id=campaign, owner_id=owner, label=None, pepper=PEPPER.encode()
                )
                tokens[campaign] = issued.token
    finally:
        await database.dispose()
    return tokens


async def served_bodies(database_url: str, tokens: Mapping[str, str]) -> dict[str, str]:
    """`campaign request-path` -> body of every list page (three page sizes, cursors
    followed) and every listed record, for each campaign's key."""
    app = create_app(settings_for(database_url))
    bodies: dict[str, str] = {}
    try:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            for campaign, token in tokens.items():
                client.headers["Authorization"] = f"Bearer {token}"
                for resource in RESOURCES:
                    ids: list[str] = []
                    for size in PAGE_SIZES:
                        ids = await _crawl_list(client, bodies, campaign=campaign, resource=resource, size=size)
                    for record_id in ids:
                        await _get(client, bodies, campaign, f"/api/public/v1/{resource}/{record_id}")
    finally:
        await app.state.runtime.database.dispose()
    return bodies


async def _crawl_list(
    client: httpx.AsyncClient, bodies: dict[str, str], *, campaign: str, resource: str, size: int | None
) -> list[str]:
    ids: list[str] = []
    cursor: str | None = None
    while True:
        query = {**({"limit": str(size)} if size else {}), **({"cursor": cursor} if cursor else {})}
        path = str(httpx.URL(f"/api/public/v1/{resource}", params=query))
        page = json.loads(await _get(client, bodies, campaign, path))
        ids += [item["id"] for item in page["data"]]
        cursor = page["pagination"]["next_cursor"]
        if cursor is None:
            return ids


async def _get(client: httpx.AsyncClient, bodies: dict[str, str], campaign: str, path: str) -> str:
    response = await client.get(path)
    assert response.status_code == 200, (path, response.status_code, response.text)
    bodies[f"{campaign} {path}"] = response.text
    return response.text


async def _capture(database_url: str, exports: list[Path]) -> dict[str, str]:
    from engine.importer import import_campaign_export

    database = Database(settings_for(database_url))
    try:
        for path in exports:
            async with database.session() as db:
                await import_campaign_export(db, source=path)
    finally:
        await database.dispose()
    return await served_bodies(database_url, await issue_tokens(database_url))


def main(argv: list[str]) -> int:
    """Capture the bodies the current code serves on both databases (they must agree)."""
    import tempfile

    from tests.databases import migrated_database

    captured = []
    for backend in ("sqlite", "postgresql"):
        with tempfile.TemporaryDirectory() as directory, migrated_database(backend, Path(directory)) as url:
            exports = [Path(directory) / f"export-{number}.json" for number in range(len(campaign_exports()))]
            for path, export in zip(exports, campaign_exports(), strict=True):
                path.write_text(json.dumps(export), encoding="utf-8")
            captured.append(asyncio.run(_capture(url, exports)))
    assert captured[0] == captured[1], "SQLite and PostgreSQL served different bodies"
    Path(argv[0]).write_text(json.dumps(captured[0], indent=0, ensure_ascii=False, sort_keys=True) + "\n")
    print(f"{len(captured[0])} bodies written to {argv[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

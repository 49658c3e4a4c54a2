"""A two-campaign world for the isolation, secrecy and hostile-input suites.

Campaign A holds the key under test; for every record type it has visible records,
records it must never show (private sessions, entities hidden from the wiki) and records
whose Markdown carries GM-only canaries. Campaign B, owned by someone else, holds visible
records of every type: to a key of A they are "foreign". Ids mix upper and lower case so
that ids differing only in case can be tried.

The world is built once per backend per test session (and per xdist worker) in its own
migrated database, committed, so in-process apps (`asgi_client`) read it like a server.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy.ext.asyncio import AsyncSession

from engine.db import Database
from engine.keys import create_api_key, revoke_api_key
from engine.settings import Settings
from engine.tables import Character, Faction, Item, Location, WikiEntityColumns
from rest.app import create_app
from tests import factories
from tests.databases import BACKENDS, migrated_database

PEPPER = "world-pepper-0123456789-abcdefghijklmnopqrstuv"
# Every limit far out of reach: these suites test answers, not the limiter.
NO_LIMIT = "1000000 per minute"
PREFIX = "/api/public/v1"
# The address the in-process client appears to come from.
CLIENT_ADDRESS = ("203.0.113.7", 50123)


@dataclass(frozen=True, slots=True)
class RecordType:
    """One of the five record types, as REST and GraphQL name it."""

    path: str  # REST collection, e.g. "sessions"
    singular: str  # GraphQL single-record field, e.g. "session"
    not_found: str  # the exact 404 body's text
    table: type[WikiEntityColumns] | None  # None for sessions


RECORD_TYPES = (
    RecordType("sessions", "session", "Session not found", None),
    RecordType("characters", "character", "Entity not found", Character),
    RecordType("locations", "location", "Entity not found", Location),
    RecordType("factions", "faction", "Entity not found", Faction),
    RecordType("items", "item", "Entity not found", Item),
)
RECORD_TYPE_BY_PATH = {record_type.path: record_type for record_type in RECORD_TYPES}


@dataclass(frozen=True, slots=True)
class RecordIds:
    visible: tuple[str, ...]  # campaign A, returned to A's key
    hidden: tuple[str, ...]  # campaign A, private or hidden from the wiki
    foreign: tuple[str, ...]  # campaign B, visible there


@dataclass(frozen=True, slots=True)
class World:
    backend: str
    database_url: str
    pepper: str
    token: str  # campaign A
    key_id: str
    other_token: str  # campaign B
    revoked_token: str  # campaign A, revoked
    campaign_id: str
    ids: dict[str, RecordIds]  # by RecordType.path
    gm_canaries: tuple[str, ...]  # text inside GM-only parts of visible records
    hidden_canary: str  # in titles and names of hidden, private and foreign records

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    def absent_id(self, record_type: RecordType) -> str:
        """An id nobody stored, shaped like the real ones."""
        return self.ids[record_type.path].visible[0][:-2] + "zz"


def _gm_markdown(canary: str) -> str:
    """Public text around every kind of GM-only part of contract §6, each holding `canary`."""
    return (
        "# Overview\n\nThe party reached the **harbour**.\n\n"
        f":::gm\nThe mayor is the {canary} cultist.\n:::\n\n"
        f"## GM notes\n\n{canary} ambush at dawn.\n\n"
        "## Open questions\n\nWho rang the bell?\n\n"
        f"<!-- {canary} remember the map -->\n"
        f"%% {canary} obsidian note %%\n\n"
        f'<section class="secret">{canary} foundry secret</section>\n'
    )


async def _seed(db: AsyncSession, *, tag: str, backend: str, database_url: str) -> World:
    canary = f"GMCANARY{tag}"
    hidden_canary = f"HIDDENCANARY{tag}"
    owner = await factories.add_user(db, user_id=f"UsrA{tag}")
    other_owner = await factories.add_user(db, user_id=f"UsrB{tag}")
    campaign = await factories.add_campaign(db, campaign_id=f"CmpA{tag}", owner_id=owner.id)
    other = await factories.add_campaign(db, campaign_id=f"CmpB{tag}", owner_id=other_owner.id)

    ids: dict[str, RecordIds] = {}
    visible = [f"SesA{tag}V{n}x" for n in range(3)]
    hidden = [f"SesA{tag}P{n}x" for n in range(2)]
    foreign = [f"SesB{tag}V{n}x" for n in range(2)]
    for n, session_id in enumerate(visible):
        await factories.add_session(
            db,
            campaign_id=campaign.id,
            session_id=session_id,
            title=f"Session {n}",
            recording_date=factories.at(day=n + 1),
            summary=_gm_markdown(canary),
        )
    for session_id in hidden:
        await factories.add_session(
            db, campaign_id=campaign.id, session_id=session_id, title=hidden_canary, visibility="private",
            summary=hidden_canary,
        )
    for session_id in foreign:
        await factories.add_session(
            db, campaign_id=other.id, session_id=session_id, title=hidden_canary, summary=hidden_canary
        )
    ids["sessions"] = RecordIds(tuple(visible), tuple(hidden), tuple(foreign))

    for record_type in RECORD_TYPES[1:]:
        table = record_type.table
        assert table is not None
        short = record_type.path[:3].capitalize()
        visible = [f"{short}A{tag}V{n}x" for n in range(3)]
        hidden = [f"{short}A{tag}H{n}x" for n in range(2)]
        foreign = [f"{short}B{tag}V{n}x" for n in range(2)]
        for entity_id in hidden:
            await factories.add_entity(
                db, table=table, campaign_id=campaign.id, entity_id=entity_id, name=hidden_canary,
                hidden_from_wiki=True, description=hidden_canary,
            )
        for entity_id in foreign:
            await factories.add_entity(
                db, table=table, campaign_id=other.id, entity_id=entity_id, name=hidden_canary,
                description=hidden_canary,
            )
        for n, entity_id in enumerate(visible):
            extra: dict[str, Any] = {}
            if table is Location:
                # A parent that is hidden, one in the other campaign, and a root.
                extra["parent_id"] = (hidden[0], foreign[0], None)[n]
            await factories.add_entity(
                db, table=table, campaign_id=campaign.id, entity_id=entity_id, name=f"Entity {n}",
                sort_order=n, description=_gm_markdown(canary), **extra,
            )
        ids[record_type.path] = RecordIds(tuple(visible), tuple(hidden), tuple(foreign))

    pepper = PEPPER.encode()
    key = await create_api_key(db, campaign_id=campaign.id, owner_id=owner.id, label="world", pepper=pepper)
    other_key = await create_api_key(db, campaign_id=other.id, owner_id=other_owner.id, label="other", pepper=pepper)
    revoked = await create_api_key(db, campaign_id=campaign.id, owner_id=owner.id, label="revoked", pepper=pepper)
    await revoke_api_key(db, key_id=revoked.key_id)
    return World(
        backend=backend,
        database_url=database_url,
        pepper=PEPPER,
        token=key.token,
        key_id=key.key_id,
        other_token=other_key.token,
        revoked_token=revoked.token,
        campaign_id=campaign.id,
        ids=ids,
        gm_canaries=(canary,),
        hidden_canary=hidden_canary,
    )


def settings_for(world: World, **overrides: Any) -> Settings:
    """Settings of an app reading `world`, with every limit out of reach unless overridden."""
    values: dict[str, Any] = {
        "database_url": world.database_url,
        "api_key_pepper": world.pepper,
        "redis_url": None,
        "rate_limit_ip": NO_LIMIT,
        "rate_limit_failed_auth": NO_LIMIT,
        "rate_limit_key": NO_LIMIT,
        "rate_limit_owner": NO_LIMIT,
        "trusted_proxies": [],
        "cors_origins": [],
        "graphiql": True,
        "graphql_introspection": True,
    }
    values.update(overrides)
    return Settings(_env_file=None, **values)  # type: ignore[call-arg]


@asynccontextmanager
async def asgi_client(
    settings: Settings, *, app: FastAPI | None = None, raise_app_exceptions: bool = True
) -> AsyncIterator[httpx.AsyncClient]:
    """An httpx client talking to `create_app(settings)` (or `app`) in-process."""
    app = app or create_app(settings)
    transport = httpx.ASGITransport(app=app, client=CLIENT_ADDRESS, raise_app_exceptions=raise_app_exceptions)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://api.test") as client:
            yield client
    finally:
        await app.state.runtime.database.dispose()


# --- fixtures (imported by the conftest of each suite that uses the world) -----------


@pytest.fixture(scope="session", params=BACKENDS)
def world_database_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    directory: Path = tmp_path_factory.mktemp("world")
    with migrated_database(request.param, directory) as url:
        yield url


@pytest.fixture(scope="session")
async def world(world_database_url: str) -> AsyncIterator[World]:
    database = Database(Settings(_env_file=None, database_url=world_database_url))  # type: ignore[call-arg]
    try:
        async with database.session() as db:
            built = await _seed(
                db, tag=uuid.uuid4().hex[:6], backend=database.backend, database_url=world_database_url
            )
        yield built
    finally:
        await database.dispose()

"""Small typed factories for test data. Every argument has a keyword default.

Records are written as the service writes them (engine/record_writer.py): rendered,
digested and entered in the change feed, so reads find what an import would leave. The
`export_*` builders make the same records as a campaign export's JSON (contract §8), for
tests that import files or run the real CLI.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession

from engine.feed_writer import FeedWriter
from engine.record_kinds import RECORD_KINDS
from engine.record_writer import RecordWriter
from engine.rendering import RenderPool
from engine.settings import Settings
from engine.tables import Campaign, Character, Faction, Item, Location, Session, User, WikiEntityColumns

_counter = itertools.count(1)


def unique_id(prefix: str) -> str:
    return f"{prefix}_{next(_counter)}"


def at(year: int = 2024, month: int = 5, day: int = 1, hour: int = 19) -> datetime:
    return datetime(year, month, day, hour, tzinfo=UTC)


async def add_user(db: AsyncSession, *, user_id: str | None = None, name: str = "Game Master") -> User:
    user = User(id=user_id or unique_id("user"), name=name)
    db.add(user)
    await db.flush()
    return user


async def add_campaign(
    db: AsyncSession, *, campaign_id: str | None = None, name: str = "Test campaign", owner_id: str | None = None
) -> Campaign:
    if owner_id is None:
        owner_id = (await add_user(db)).id
    campaign = Campaign(id=campaign_id or unique_id("camp"), name=name, owner_id=owner_id)
    db.add(campaign)
    await db.flush()
    return campaign


async def add_session(
    db: AsyncSession,
    *,
    campaign_id: str,
    session_id: str | None = None,
    title: str = "A session",
    status: str = "completed",
    recording_date: datetime | None = None,
    created_at: datetime | None = None,
    updated_at: datetime | None = None,
    session_type: str = "audio",
    visibility: str = "public",
    summary: str | None = None,
) -> Session:
    fields = {
        "id": session_id or unique_id("sess"),
        "campaign_id": campaign_id,
        "title": title,
        "status": status,
        "recording_date": recording_date,
        "created_at": created_at,
        "updated_at": updated_at,
        "session_type": session_type,
        "visibility": visibility,
        "summary": summary,
    }
    await write_record(db, array="sessions", fields=fields)
    return Session(**fields)


async def add_entity(
    db: AsyncSession,
    *,
    table: type[WikiEntityColumns] = Location,
    campaign_id: str,
    entity_id: str | None = None,
    name: str = "Somewhere",
    icon: str | None = None,
    hidden_from_wiki: bool = False,
    entity_type: str = "settlement",
    image_url: str | None = None,
    sort_order: int | None = None,
    description: str | None = None,
    created_at: datetime | None = None,
    updated_at: datetime | None = None,
    parent_id: str | None = None,
) -> WikiEntityColumns:
    fields = {
        "id": entity_id or unique_id(table.__tablename__),  # type: ignore[attr-defined]
        "campaign_id": campaign_id,
        "name": name,
        "icon": icon,
        "hidden_from_wiki": hidden_from_wiki,
        "type": entity_type,
        "image_url": image_url,
        "sort_order": sort_order,
        "description": description,
        "created_at": created_at,
        "updated_at": updated_at,
    }
    if table is Location:
        fields["parent_id"] = parent_id
    await write_record(db, array=table.__tablename__, fields=fields)  # type: ignore[attr-defined]
    return table(**fields)


async def write_record(db: AsyncSession, *, array: str, fields: dict[str, Any]) -> None:
    """Write one record (every column of its export form) through the record writer."""
    # The ORM may hold rows of other tables not yet sent (users, campaigns) that it references.
    await db.flush()
    writer = RecordWriter(db, renderer=RenderPool(processes=1), feed=FeedWriter(db, now=datetime.now(UTC)))
    await writer.write(array, [fields])
    await writer.flush()


ENTITY_TABLES = (Location, Character, Faction, Item)


STALE_MARKDOWN = "a stale rendering"


async def age_renderings(db: AsyncSession, *, array: str, record_ids: Sequence[str], version: int = 0) -> None:
    """Leave records as another renderer would have: its version (0: never rendered, before
    rendering moved to write time), and a rendering that is not this renderer's."""
    kind = RECORD_KINDS[array]
    values = {"renderer_version": version, kind.markdown_column: STALE_MARKDOWN}
    await db.execute(update(kind.table).where(kind.table.c.id.in_(record_ids)).values(values))


# --- records of a campaign export -----------------------------------------------------

DROP = object()  # a field value meaning "leave the field out"


def _record(defaults: dict[str, Any], fields: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in {**defaults, **fields}.items() if value is not DROP}


def export_user(user_id: str = "@u", **fields: Any) -> dict[str, Any]:
    return _record({"id": user_id, "name": "Mara"}, fields)


def export_campaign(campaign_id: str = "@c", **fields: Any) -> dict[str, Any]:
    return _record({"id": campaign_id, "name": "Ashfall", "owner_id": "@u"}, fields)


def export_session(session_id: str = "@s1", **fields: Any) -> dict[str, Any]:
    defaults = {
        "id": session_id,
        "campaign_id": "@c",
        "title": "Smoke on the Ridge",
        "status": "completed",
        "session_type": "audio",
        "visibility": "public",
    }
    return _record(defaults, fields)


def export_entity(entity_id: str = "@l1", **fields: Any) -> dict[str, Any]:
    return _record({"id": entity_id, "campaign_id": "@c", "name": "Emberhold", "type": "settlement"}, fields)


def base_export(**arrays: list[Any]) -> dict[str, list[Any]]:
    """A valid export (one user, campaign, session, location) with `arrays` replaced."""
    export: dict[str, list[Any]] = {
        "users": [export_user()],
        "campaigns": [export_campaign()],
        "sessions": [export_session()],
        "locations": [export_entity()],
    }
    return {**export, **arrays}


# Limits no test or benchmark of bodies or CPU can reach.
UNLIMITED = "1000000000 per minute"


def unlimited_settings(database_url: str, *, pepper: str) -> Settings:
    """Settings of a database with limits out of the way and quiet logs."""
    return Settings(  # type: ignore[call-arg]
        _env_file=None,
        database_url=database_url,
        api_key_pepper=pepper,
        rate_limit_ip=UNLIMITED,
        rate_limit_key=UNLIMITED,
        rate_limit_owner=UNLIMITED,
        log_level="WARNING",
    )

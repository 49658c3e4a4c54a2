"""SQLModel tables: the campaign wiki data the API reads, plus users, campaigns and keys.

Text that is compared for ordering (ids and names) uses the byte-wise "C" collation on
PostgreSQL, which orders exactly like SQLite's default BINARY collation on UTF-8 text,
so every list has the same total order on both databases.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import DateTime, Index, String, Text
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator
from sqlmodel import Field, SQLModel


class UTCDateTime(TypeDecorator[datetime]):
    """Timestamps stored as UTC and always read back timezone-aware (SQLite keeps no offset)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime: timestamps must carry an offset")
        value = value.astimezone(UTC)
        # SQLite stores the text form; dropping the offset keeps one sortable format.
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None or value.tzinfo is UTC:
            return value
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


def ordered_text(length: int | None = None) -> String:
    """A string type that sorts byte-wise on every backend."""
    if length:
        return String(length).with_variant(String(length, collation="C"), "postgresql")  # type: ignore[return-value]
    return Text().with_variant(Text(collation="C"), "postgresql")  # type: ignore[return-value]


ID_TYPE = ordered_text(64)


def id_column(*, primary_key: bool = False, foreign_key: str | None = None) -> Any:
    # sa_type rather than sa_column: a Column object cannot be shared by the four
    # entity tables that inherit these fields.
    if foreign_key:
        return Field(sa_type=ID_TYPE, foreign_key=foreign_key, ondelete="CASCADE", nullable=False)
    return Field(sa_type=ID_TYPE, primary_key=primary_key, nullable=False)


def timestamp_column(*, nullable: bool = True) -> Any:
    return Field(default=None, sa_type=UTCDateTime, nullable=nullable)


def text_column(*, nullable: bool = False, sa_type: Any = Text) -> Any:
    if nullable:
        return Field(default=None, sa_type=sa_type, nullable=True)
    return Field(sa_type=sa_type, nullable=False)


class User(SQLModel, table=True):
    __tablename__ = "users"

    id: str = id_column(primary_key=True)
    name: str | None = text_column(nullable=True)


class Campaign(SQLModel, table=True):
    __tablename__ = "campaigns"

    id: str = id_column(primary_key=True)
    name: str = text_column()
    owner_id: str | None = Field(
        default=None, sa_type=ID_TYPE, foreign_key="users.id", ondelete="SET NULL", nullable=True
    )


class ApiKey(SQLModel, table=True):
    """An issued key. The secret is never stored: only HMAC-SHA256(pepper, secret)."""

    __tablename__ = "api_keys"

    key_id: str = Field(sa_type=String(12), primary_key=True)
    campaign_id: str = id_column(foreign_key="campaigns.id")
    owner_id: str = id_column(foreign_key="users.id")
    label: str | None = text_column(nullable=True)
    secret_hash: str = text_column(sa_type=String(64))
    created_at: datetime = timestamp_column(nullable=False)
    revoked_at: datetime | None = timestamp_column()


class Session(SQLModel, table=True):
    """A played session. Only visibility == "public" rows are ever returned."""

    __tablename__ = "sessions"
    id: str = id_column(primary_key=True)
    campaign_id: str = id_column(foreign_key="campaigns.id")
    title: str = text_column()
    status: str = text_column()
    recording_date: datetime | None = timestamp_column()
    created_at: datetime | None = timestamp_column()
    updated_at: datetime | None = timestamp_column()
    session_type: str = text_column()
    visibility: str = text_column(sa_type=String(16))
    summary: str | None = text_column(nullable=True)


class WikiEntityColumns(SQLModel):
    """Columns shared by locations, characters, factions and items."""

    id: str = id_column(primary_key=True)
    campaign_id: str = id_column(foreign_key="campaigns.id")
    name: str = text_column(sa_type=ordered_text())
    icon: str | None = text_column(nullable=True)
    hidden_from_wiki: bool = Field(default=False, nullable=False)
    type: str = text_column()
    image_url: str | None = text_column(nullable=True)
    sort_order: int | None = Field(default=None, nullable=True)
    description: str | None = text_column(nullable=True)
    created_at: datetime | None = timestamp_column()
    updated_at: datetime | None = timestamp_column()


class Location(WikiEntityColumns, table=True):
    __tablename__ = "locations"
    __table_args__ = (Index("ix_locations_parent", "campaign_id", "parent_id"),)

    # No foreign key: an export may name a parent that is filed later, or not at all.
    parent_id: str | None = Field(default=None, sa_type=ID_TYPE, nullable=True)


class Character(WikiEntityColumns, table=True):
    __tablename__ = "characters"

class Faction(WikiEntityColumns, table=True):
    __tablename__ = "factions"

class Item(WikiEntityColumns, table=True):
    __tablename__ = "items"

WikiEntity = Location | Character | Faction | Item
WIKI_ENTITY_TABLES: tuple[type[WikiEntityColumns], ...] = (Location, Character, Faction, Item)

# The list orders, as index range scans within one campaign's visible rows.
Index(
    "ix_sessions_public_order",
    Session.campaign_id,  # type: ignore[arg-type]
    Session.visibility,  # type: ignore[arg-type]
    Session.recording_date.desc().nulls_last(),  # type: ignore[union-attr]
    Session.id,  # type: ignore[arg-type]
)
for _table in WIKI_ENTITY_TABLES:
    Index(
        f"ix_{_table.__tablename__}_wiki_order",
        _table.campaign_id,  # type: ignore[arg-type]
        _table.hidden_from_wiki,  # type: ignore[arg-type]
        _table.sort_order.asc().nulls_last(),  # type: ignore[union-attr]
        _table.name,  # type: ignore[arg-type]
        _table.id,  # type: ignore[arg-type]
    )

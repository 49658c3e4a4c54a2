"""SQLModel tables: the campaign wiki data the API reads, plus users, campaigns and keys.

Text that is compared for ordering (ids and names) uses the byte-wise "C" collation on
PostgreSQL, which orders exactly like SQLite's default BINARY collation on UTF-8 text,
so every list has the same total order on both databases.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import BigInteger, DateTime, Index, String, Text, false, text
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
        return String(length).with_variant(String(length, collation="C"), "postgresql")
    return Text().with_variant(Text(collation="C"), "postgresql")


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


# A digest as stored: URL-safe base64 of a SHA-256, without padding.
DIGEST_LENGTH = 43


def derived_text_column(*, sa_type: Any = Text) -> Any:
    """A column the write path computes from the others; empty until it has run."""
    return Field(default="", sa_type=sa_type, nullable=False, sa_column_kwargs={"server_default": ""})


class PublicContentColumns(SQLModel):
    """What the write path stores beside a record's raw Markdown (engine/record_writer.py).

    The public Markdown and text themselves are named after the raw column (e.g.
    `summary_markdown`) by each table; these are the bookkeeping around them.
    """

    # Digest of the raw Markdown ("" for none): unchanged raw text is never rendered again.
    source_digest: str = derived_text_column(sa_type=String(DIGEST_LENGTH))
    # The renderer (engine.markdown.RENDERER_VERSION) that produced the stored rendering;
    # 0: never rendered (a row written before rendering moved to write time).
    renderer_version: int = Field(default=0, nullable=False, sa_column_kwargs={"server_default": text("0")})
    # Digest of the record's single-record REST body (engine/public_body.py).
    body_digest: str = derived_text_column(sa_type=String(DIGEST_LENGTH))


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


class Session(PublicContentColumns, table=True):
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
    summary_markdown: str = derived_text_column()
    summary_text: str = derived_text_column()


class WikiEntityColumns(PublicContentColumns):
    """Columns shared by locations, characters, factions and items."""

    id: str = id_column(primary_key=True)
    campaign_id: str = id_column(foreign_key="campaigns.id")
    name: str = text_column(sa_type=ordered_text())
    icon: str | None = text_column(nullable=True)
    hidden_from_wiki: bool = Field(default=False, nullable=False, sa_column_kwargs={"server_default": false()})
    type: str = text_column()
    image_url: str | None = text_column(nullable=True)
    sort_order: int | None = Field(default=None, nullable=True)
    description: str | None = text_column(nullable=True)
    created_at: datetime | None = timestamp_column()
    updated_at: datetime | None = timestamp_column()
    description_markdown: str = derived_text_column()
    description_text: str = derived_text_column()


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

class ChangeFeedEntry(SQLModel, table=True):
    """The latest change of one record in one campaign's change feed (contract §10.2).

    One row per (record, campaign) the record was ever visible in: `upsert` while it is
    visible there, `delete` once it no longer is. A new change of the record moves its row
    to a new `seq`, so the feed holds each record once, at its latest change.
    """

    __tablename__ = "change_feed"

    record_type: str = Field(sa_type=String(16), primary_key=True)
    record_id: str = Field(sa_type=ID_TYPE, primary_key=True)
    campaign_id: str = Field(
        sa_type=ID_TYPE, foreign_key="campaigns.id", ondelete="CASCADE", primary_key=True, nullable=False
    )
    # Per campaign: a campaign's feed numbers only its own changes (see ChangeFeedHead).
    seq: int = Field(sa_type=BigInteger, nullable=False)
    change: str = Field(sa_type=String(8), nullable=False)
    changed_at: datetime = timestamp_column(nullable=False)
    # The single-record body digest the entry announced (upsert), None for a delete.
    body_digest: str | None = Field(default=None, sa_type=String(DIGEST_LENGTH), nullable=True)


class ChangeFeedHead(SQLModel, table=True):
    """Where each campaign's feed stands: its last sequence number and change time.

    Sequence numbers are counted per campaign, so a feed cursor tells nothing about the
    activity of other campaigns; the row is updated in the writing transaction, so the
    numbers a rolled-back import took are taken again by the next one.
    """

    __tablename__ = "change_feed_heads"

    campaign_id: str = Field(
        sa_type=ID_TYPE, foreign_key="campaigns.id", ondelete="CASCADE", primary_key=True, nullable=False
    )
    last_seq: int = Field(sa_type=BigInteger, nullable=False)
    last_changed_at: datetime = timestamp_column(nullable=False)


WIKI_ENTITY_TABLES: tuple[type[WikiEntityColumns], ...] = (Location, Character, Faction, Item)

# The list orders (contract: a total order, NULLs last), by column name: (name, descending).
# Declared here once: the indexes below and every list read (engine/records.py) use them.
SESSION_ORDER = (("recording_date", True), ("id", False))
ENTITY_ORDER = (("sort_order", False), ("name", False), ("id", False))


def in_list_order(order: tuple[tuple[str, bool], ...], columns: Any) -> list[Any]:
    """ORDER BY (or index) terms of `order` over `columns` (a table's, a subquery's)."""
    terms = []
    for name, descending in order:
        column = columns[name]
        term = column.desc() if descending else column
        terms.append(term.nulls_last() if column.nullable else term)
    return terms


# The list orders, as index range scans within one campaign's visible rows.
Index(
    "ix_sessions_public_order",
    Session.campaign_id,
    Session.visibility,
    *in_list_order(SESSION_ORDER, Session.__table__.c),  # type: ignore[attr-defined]
)
Index("ux_change_feed_campaign_seq", ChangeFeedEntry.campaign_id, ChangeFeedEntry.seq, unique=True)  # type: ignore[arg-type]
for _table in (Session, *WIKI_ENTITY_TABLES):
    # Finds stale renderings without reading the table (engine/renderings.py).
    Index(f"ix_{_table.__tablename__}_renderer_version", _table.renderer_version)  # type: ignore[attr-defined]
for _table in WIKI_ENTITY_TABLES:
    Index(
        f"ix_{_table.__tablename__}_wiki_order",
        _table.campaign_id,
        _table.hidden_from_wiki,  # type: ignore[arg-type]
        *in_list_order(ENTITY_ORDER, _table.__table__.c),  # type: ignore[attr-defined]
    )

"""Campaign-scoped reads of the five record types.

Every query filters on the key's campaign and on visibility, orders totally (the same on
SQLite and PostgreSQL) and fetches `limit + 1` rows to know whether another page exists.
A cursor that carries the last row's sort key is answered by seeking past that key, so
deep pages cost the same as the first; a bare-offset cursor falls back to OFFSET.
Database failures become `FetchFailed`; callers never see driver exceptions.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import Enum
from typing import Any

from sqlalchemy import ColumnElement, Row, Select, and_, select, tuple_, union_all
from sqlalchemy.exc import SQLAlchemyError

from engine.cursor import Cursor, SortKeyValue, decode_cursor, encode_cursor
from engine.db import Reader
from engine.errors import FetchFailed, InvalidCursor, RecordNotFound
from engine.pagination import Page, clamp_limit
from engine.tables import Character, Faction, Item, Location, Session, WikiEntityColumns

PUBLIC = "public"
SESSION_NOT_FOUND = "Session not found"
ENTITY_NOT_FOUND = "Entity not found"


class EntityKind(Enum):
    """The wiki entity record types, each with its table and error texts."""

    LOCATION = ("locations", Location)
    CHARACTER = ("characters", Character)
    FACTION = ("factions", Faction)
    ITEM = ("items", Item)

    def __init__(self, plural: str, table: type[WikiEntityColumns]) -> None:
        self.plural = plural
        self.table = table

    @property
    def fetch_failed_message(self) -> str:
        return f"Failed to fetch {self.plural}"


@dataclass(frozen=True, slots=True)
class CampaignScope:
    """What a verified key may read: one campaign."""

    campaign_id: str


def _session_list_columns() -> list[Any]:
    return [
        Session.id,
        Session.title,
        Session.status,
        Session.recording_date,
        Session.created_at,
        Session.updated_at,
        Session.session_type,
        Session.visibility,
    ]


def _entity_list_columns(kind: EntityKind) -> list[Any]:
    table = kind.table
    columns = [
        table.id,
        table.name,
        table.icon,
        table.hidden_from_wiki,
        table.created_at,
        table.updated_at,
        table.type,
        table.image_url,
        table.sort_order,
    ]
    if kind is EntityKind.LOCATION:
        columns.append(Location.parent_id)
    return columns


async def _fetch(db: Reader, statement: Any, *, failure: str) -> Sequence[Row[Any]]:
    try:
        result = await db.execute(statement)
        return result.all()
    except SQLAlchemyError as exc:
        raise FetchFailed(failure) from exc


def _page(
    rows: Sequence[Row[Any]],
    *,
    limit: int,
    offset: int,
    sort_key: Callable[[Row[Any]], tuple[SortKeyValue, ...]],
) -> Page[Row[Any]]:
    items = list(rows[:limit])
    if len(rows) <= limit:
        return Page(items=items, next_cursor=None)
    cursor = Cursor(offset=offset + len(items), after=sort_key(items[-1]))
    return Page(items=items, next_cursor=encode_cursor(cursor))


def _parse_cursor(raw: str | None) -> Cursor:
    return decode_cursor(raw) if raw is not None else Cursor(offset=0)


# No stored row has a key outside these, so no page can have produced such a cursor; passed
# on, they make the database fail (PostgreSQL: NUL in text, int4 overflow; SQLite: >64 bits).
_SORT_ORDER_RANGE = range(-(2**31), 2**31)


def _is_storable_text(value: str) -> bool:
    """Whether any row could hold `value`: never with NUL (PostgreSQL text refuses it) or a
    lone surrogate (not UTF-8). As query parameters both make the driver raise (not a
    SQLAlchemyError), so a client's id or cursor holding one would otherwise be a 500."""
    if "\x00" in value:
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _is_key_text(value: SortKeyValue) -> bool:
    return isinstance(value, str) and _is_storable_text(value)


# The list orders, by column name: (name, descending). NULLs always come last.
_SESSION_ORDER = (("recording_date", True), ("id", False))
_ENTITY_ORDER = (("sort_order", False), ("name", False), ("id", False))


def _ordered(order: tuple[tuple[str, bool], ...], columns: Any) -> list[Any]:
    return [(columns[name].desc() if descending else columns[name].asc()).nulls_last() for name, descending in order]


def _page_query(
    columns: list[Any],
    *,
    visible: list[ColumnElement[bool]],
    order: tuple[tuple[str, bool], ...],
    position: Cursor,
    after: Callable[[tuple[SortKeyValue, ...]], list[ColumnElement[bool]]],
    size: int,
) -> Select[Any]:
    """One page of a list: from the start, past `offset` rows, or seeking past a sort key.

    A seek is the union of a few ranges, each an index range scan in list order capped at
    `size` rows, merged and cut to `size`: it reads about `size` index entries however
    deep the page. (One OR of the ranges would make PostgreSQL walk the index from the
    start and filter, which costs as much as OFFSET.)
    """
    if not position.after:
        base = select(*columns).where(*visible)
        if position.offset:
            base = base.offset(position.offset)
        return base.order_by(*_ordered(order, base.selected_columns)).limit(size)
    ranges = []
    for condition in after(position.after):
        part = select(*columns).where(*visible, condition)
        ranges.append(select(*part.order_by(*_ordered(order, part.selected_columns)).limit(size).subquery().c))
    merged = union_all(*ranges).subquery()
    return select(*merged.c).order_by(*_ordered(order, merged.c)).limit(size)


# --- sessions -------------------------------------------------------------------------


def _session_sort_key(row: Row[Any]) -> tuple[SortKeyValue, ...]:
    recorded = row.recording_date.isoformat() if row.recording_date is not None else None
    return (recorded, row.id)


def _after_session(after: tuple[SortKeyValue, ...]) -> list[ColumnElement[bool]]:
    """Rows strictly after (recording_date, id) in newest-first, undated-last order, as
    disjoint ranges that each follow the list index (see `_seek`)."""
    if len(after) != 2 or not _is_key_text(after[1]):
        raise InvalidCursor("Invalid cursor")
    if after[0] is not None and not _is_key_text(after[0]):
        raise InvalidCursor("Invalid cursor")
    recorded_raw, last_id = after
    if recorded_raw is None:
        return [and_(Session.recording_date.is_(None), Session.id > last_id)]  # type: ignore[union-attr,operator]
    try:
        recorded = datetime.fromisoformat(recorded_raw)
    except ValueError as exc:
        raise InvalidCursor("Invalid cursor") from exc
    if recorded.tzinfo is None:
        raise InvalidCursor("Invalid cursor")
    try:
        recorded = recorded.astimezone(UTC)
    except OverflowError as exc:  # e.g. 9999-12-31T23:00:00-05:00
        raise InvalidCursor("Invalid cursor") from exc
    return [
        and_(Session.recording_date == recorded, Session.id > last_id),  # type: ignore[operator]
        Session.recording_date < recorded,  # type: ignore[operator]
        Session.recording_date.is_(None),  # type: ignore[union-attr]
    ]


async def list_sessions(
    db: Reader,
    *,
    scope: CampaignScope,
    limit: int | None,
    cursor: str | None,
    with_summary: bool = False,
) -> Page[Row[Any]]:
    page_size = clamp_limit(limit)
    position = _parse_cursor(cursor)
    columns = _session_list_columns() + ([Session.summary] if with_summary else [])
    statement = _page_query(
        columns,
        visible=[Session.campaign_id == scope.campaign_id, Session.visibility == PUBLIC],
        order=_SESSION_ORDER,
        position=position,
        after=_after_session,
        size=page_size + 1,
    )
    rows = await _fetch(db, statement, failure="Failed to fetch sessions")
    return _page(rows, limit=page_size, offset=position.offset, sort_key=_session_sort_key)


async def get_session(
    db: Reader, *, scope: CampaignScope, session_id: str, with_summary: bool = True
) -> Row[Any]:
    if not _is_storable_text(session_id):
        raise RecordNotFound(SESSION_NOT_FOUND)
    columns = _session_list_columns() + ([Session.summary] if with_summary else [])
    statement = select(*columns).where(
        Session.id == session_id,
        Session.campaign_id == scope.campaign_id,
        Session.visibility == PUBLIC,
    )
    rows = await _fetch(db, statement, failure="Failed to fetch session")
    if not rows:
        raise RecordNotFound(SESSION_NOT_FOUND)
    return rows[0]


# --- wiki entities (locations, characters, factions, items) ---------------------------


def _entity_sort_key(row: Row[Any]) -> tuple[SortKeyValue, ...]:
    return (row.sort_order, row.name, row.id)


def _after_entity(table: type[WikiEntityColumns], after: tuple[SortKeyValue, ...]) -> list[ColumnElement[bool]]:
    """Rows strictly after (sort_order, name, id) in sort-order (nulls last), name, id
    order, as disjoint ranges that each follow the list index (see `_seek`)."""
    if len(after) != 3 or not all(_is_key_text(value) for value in after[1:]):
        raise InvalidCursor("Invalid cursor")
    if not (after[0] is None or (isinstance(after[0], int) and after[0] in _SORT_ORDER_RANGE)):
        raise InvalidCursor("Invalid cursor")
    sort_order, name, last_id = after
    # A row comparison over two ascending columns is one index range on both databases.
    after_name = tuple_(table.name, table.id) > tuple_(name, last_id)
    if sort_order is None:
        return [and_(table.sort_order.is_(None), after_name)]  # type: ignore[union-attr]
    return [
        and_(table.sort_order == sort_order, after_name),  # type: ignore[arg-type]
        table.sort_order > sort_order,  # type: ignore[operator]
        table.sort_order.is_(None),  # type: ignore[union-attr]
    ]


def _entity_order(table: type[WikiEntityColumns]) -> list[Any]:
    return _ordered(_ENTITY_ORDER, table.__table__.c)  # type: ignore[attr-defined]


def _visible(table: type[WikiEntityColumns], scope: CampaignScope) -> list[ColumnElement[bool]]:
    return [table.campaign_id == scope.campaign_id, table.hidden_from_wiki.is_(False)]  # type: ignore[list-item,attr-defined]


async def list_entities(
    db: Reader,
    *,
    kind: EntityKind,
    scope: CampaignScope,
    limit: int | None,
    cursor: str | None,
    with_description: bool = False,
) -> Page[Row[Any]]:
    page_size = clamp_limit(limit)
    position = _parse_cursor(cursor)
    table = kind.table
    columns = _entity_list_columns(kind) + ([table.description] if with_description else [])
    statement = _page_query(
        columns,
        visible=_visible(table, scope),
        order=_ENTITY_ORDER,
        position=position,
        after=lambda after: _after_entity(table, after),
        size=page_size + 1,
    )
    rows = await _fetch(db, statement, failure=kind.fetch_failed_message)
    return _page(rows, limit=page_size, offset=position.offset, sort_key=_entity_sort_key)


async def get_entity(
    db: Reader,
    *,
    kind: EntityKind,
    scope: CampaignScope,
    entity_id: str,
    with_description: bool = True,
) -> Row[Any]:
    if not _is_storable_text(entity_id):
        raise RecordNotFound(ENTITY_NOT_FOUND)
    table = kind.table
    columns = _entity_list_columns(kind) + ([table.description] if with_description else [])
    statement = select(*columns).where(table.id == entity_id, *_visible(table, scope))
    rows = await _fetch(db, statement, failure=kind.fetch_failed_message)
    if not rows:
        raise RecordNotFound(ENTITY_NOT_FOUND)
    return rows[0]


def _nested_location_columns() -> list[Any]:
    # A nested location (parent, children) may be asked for its description too.
    return [*_entity_list_columns(EntityKind.LOCATION), Location.description]


async def visible_locations_by_id(
    db: Reader, *, scope: CampaignScope, location_ids: Sequence[str]
) -> dict[str, Row[Any]]:
    """Visible locations among `location_ids` (for batched parent lookups)."""
    statement = select(*_nested_location_columns()).where(
        Location.id.in_(location_ids),  # type: ignore[attr-defined]
        *_visible(Location, scope),
    )
    rows = await _fetch(db, statement, failure=EntityKind.LOCATION.fetch_failed_message)
    return {row.id: row for row in rows}


async def visible_children_by_parent(
    db: Reader, *, scope: CampaignScope, parent_ids: Sequence[str]
) -> dict[str, list[Row[Any]]]:
    """Visible children of each parent, in list order (for batched children lookups)."""
    statement = (
        select(*_nested_location_columns())
        .where(Location.parent_id.in_(parent_ids), *_visible(Location, scope))  # type: ignore[union-attr]
        .order_by(*_entity_order(Location))
    )
    rows = await _fetch(db, statement, failure=EntityKind.LOCATION.fetch_failed_message)
    children: dict[str, list[Row[Any]]] = {parent_id: [] for parent_id in parent_ids}
    for row in rows:
        children[row.parent_id].append(row)
    return children

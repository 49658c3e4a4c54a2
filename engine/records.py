"""Campaign-scoped reads of the five record types.

Every query filters on the key's campaign and on visibility, orders totally (the same on
SQLite and PostgreSQL) and fetches `limit + 1` rows to know whether another page exists.
A cursor that carries the last row's sort key is answered by seeking past that key, so
deep pages cost the same as the first; a bare-offset cursor falls back to OFFSET.
Database failures become `FetchFailed`; callers never see driver exceptions.

Summaries and descriptions are read as stored: public Markdown and text rendered when the
record was written (engine/record_writer.py), never rendered here. A row rendered by an
older renderer than this code's is refused (engine/renderings.py).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import Enum
from functools import cache
from typing import Any, TypeGuard

from sqlalchemy import BindParameter, ColumnElement, and_, bindparam, func, select, tuple_, union_all
from sqlmodel import col

from engine.cursor import Cursor, SortKeyValue, decode_cursor, encode_cursor
from engine.db import Reader, fetch
from engine.errors import (
    ENTITY_NOT_FOUND_TEXT,
    SESSION_NOT_FOUND_TEXT,
    FetchFailed,
    InvalidCursor,
    RecordNotFound,
    fetch_failed_text,
)
from engine.pagination import Page, clamp_limit
from engine.read_pool import ReadFailed
from engine.rendering import CURRENT_RENDERER
from engine.statements import ReadStatement
from engine.tables import (
    ENTITY_ORDER,
    SESSION_ORDER,
    Character,
    Faction,
    Item,
    Location,
    Session,
    WikiEntityColumns,
    in_list_order,
)

# Rows have attribute access by column name (named tuples or SQLAlchemy rows).
Row = Any

logger = logging.getLogger("campaign_api.records")

PUBLIC = "public"


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
        return fetch_failed_text(self.plural)


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


async def _fetch(
    db: Reader, statement: ReadStatement, parameters: Mapping[str, Any], *, failure: str, rendered: bool = False
) -> Sequence[Row]:
    """The rows of `statement`; with `rendered`, rows holding a stored rendering, which
    must come from this code's renderer or a newer one."""
    try:
        rows = await fetch(db, statement, parameters)
    except ReadFailed as exc:
        raise FetchFailed(failure) from exc
    if rendered:
        for row in rows:
            if row.renderer_version < CURRENT_RENDERER:
                logger.error("refused a stale rendering (%s): run `campaign-api db upgrade`", row.id)
                raise FetchFailed(failure)
    return rows


def _page(
    rows: Sequence[Row],
    *,
    limit: int,
    offset: int,
    sort_key: Callable[[Row], tuple[SortKeyValue, ...]],
) -> Page[Row]:
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


def _is_key_text(value: SortKeyValue) -> TypeGuard[str]:
    return isinstance(value, str) and _is_storable_text(value)


class Shape(Enum):
    """Where a page starts, which decides its statement: each shape is built once."""

    FIRST = "first"  # no cursor
    OFFSET = "offset"  # a bare-offset cursor
    SEEK = "seek"  # past a sort key whose first value is set
    SEEK_NULL = "seek-null"  # past a sort key whose first value is NULL (undated, unordered)


def _page_statement(
    columns: list[Any],
    *,
    visible: list[ColumnElement[bool]],
    order: tuple[tuple[str, bool], ...],
    shape: Shape,
    after: Callable[[bool], list[ColumnElement[bool]]],
) -> ReadStatement:
    """One page of a list (`size` rows): from the start, past `offset` rows, or seeking
    past a sort key.

    A seek is the union of a few ranges, each an index range scan in list order capped at
    `size` rows, merged and cut to `size`: it reads about `size` index entries however
    deep the page. (One OR of the ranges would make PostgreSQL walk the index from the
    start and filter, which costs as much as OFFSET.)
    """
    size: BindParameter[int] = bindparam("size")
    if shape in (Shape.FIRST, Shape.OFFSET):
        base = select(*columns).where(*visible)
        if shape is Shape.OFFSET:
            base = base.offset(bindparam("offset"))
        return ReadStatement(base.order_by(*in_list_order(order, base.selected_columns)).limit(size))
    ranges = []
    for condition in after(shape is Shape.SEEK_NULL):
        part = select(*columns).where(*visible, condition)
        ranges.append(select(*part.order_by(*in_list_order(order, part.selected_columns)).limit(size).subquery().c))
    merged = union_all(*ranges).subquery()
    return ReadStatement(select(*merged.c).order_by(*in_list_order(order, merged.c)).limit(size))


def _page_start(
    scope: CampaignScope,
    position: Cursor,
    size: int,
    seek: Callable[[tuple[SortKeyValue, ...]], tuple[Shape, dict[str, Any]]],
) -> tuple[Shape, dict[str, Any]]:
    """The statement shape of a page and its parameters; `seek` validates a cursor's
    sort key and gives its shape and parameters."""
    parameters: dict[str, Any] = {"campaign_id": scope.campaign_id, "size": size}
    if position.after:
        shape, seek_parameters = seek(position.after)
        return shape, {**parameters, **seek_parameters}
    if position.offset:
        return Shape.OFFSET, {**parameters, "offset": position.offset}
    return Shape.FIRST, parameters


# --- sessions -------------------------------------------------------------------------


def _session_sort_key(row: Row) -> tuple[SortKeyValue, ...]:
    recorded = row.recording_date.isoformat() if row.recording_date is not None else None
    return (recorded, row.id)


def _session_seek(after: tuple[SortKeyValue, ...]) -> tuple[Shape, dict[str, Any]]:
    """The shape and parameters of a seek past (recording_date, id); InvalidCursor unless
    the cursor's key could have come from a page."""
    if len(after) != 2 or not _is_key_text(after[1]):
        raise InvalidCursor()
    recorded_raw, last_id = after
    if recorded_raw is None:
        return Shape.SEEK_NULL, {"after_id": last_id}
    if not _is_key_text(recorded_raw):
        raise InvalidCursor()
    try:
        recorded = datetime.fromisoformat(recorded_raw)
    except ValueError as exc:
        raise InvalidCursor() from exc
    if recorded.tzinfo is None:
        raise InvalidCursor()
    try:
        recorded = recorded.astimezone(UTC)
    except OverflowError as exc:  # e.g. 9999-12-31T23:00:00-05:00
        raise InvalidCursor() from exc
    return Shape.SEEK, {"after_date": recorded, "after_id": last_id}


def _after_session(undated: bool) -> list[ColumnElement[bool]]:
    """Rows strictly after (after_date, after_id) in newest-first, undated-last order, as
    disjoint ranges that each follow the list index (see `_page_statement`)."""
    after_id = Session.id > bindparam("after_id")
    if undated:
        return [and_(Session.recording_date.is_(None), after_id)]  # type: ignore[union-attr]
    after_date = bindparam("after_date", type_=Session.__table__.c.recording_date.type)  # type: ignore[attr-defined]
    return [
        and_(col(Session.recording_date) == after_date, after_id),
        Session.recording_date < after_date,
        Session.recording_date.is_(None),  # type: ignore[union-attr]
    ]


def _detail_columns(table: Any, *, rendered: tuple[Any, Any], with_rendering: bool, with_tag: bool) -> list[Any]:
    """The stored rendering (and the version of its renderer) and the body digest, as asked."""
    columns = [*rendered, table.renderer_version] if with_rendering else []
    return columns + ([table.body_digest] if with_tag else [])


def _session_columns(with_summary: bool, with_tag: bool) -> list[Any]:
    rendered = (Session.summary_markdown, Session.summary_text)
    return _session_list_columns() + _detail_columns(
        Session, rendered=rendered, with_rendering=with_summary, with_tag=with_tag
    )


def _session_visible() -> list[ColumnElement[bool]]:
    return [Session.campaign_id == bindparam("campaign_id"), Session.visibility == PUBLIC]  # type: ignore[list-item]


@cache
def _session_page(with_summary: bool, with_tag: bool, shape: Shape) -> ReadStatement:
    return _page_statement(
        _session_columns(with_summary, with_tag),
        visible=_session_visible(),
        order=SESSION_ORDER,
        shape=shape,
        after=_after_session,
    )


@cache
def _session_by_id(with_summary: bool, with_tag: bool) -> ReadStatement:
    return ReadStatement(
        select(*_session_columns(with_summary, with_tag)).where(
            col(Session.id) == bindparam("record_id"), *_session_visible()
        )
    )


async def list_sessions(
    db: Reader,
    *,
    scope: CampaignScope,
    limit: int | None,
    cursor: str | None,
    with_summary: bool = False,
    with_tag: bool = False,
) -> Page[Row]:
    page_size = clamp_limit(limit)
    position = _parse_cursor(cursor)
    shape, parameters = _page_start(scope, position, page_size + 1, _session_seek)
    statement = _session_page(with_summary, with_tag, shape)
    rows = await _fetch(db, statement, parameters, failure=fetch_failed_text("sessions"), rendered=with_summary)
    return _page(rows, limit=page_size, offset=position.offset, sort_key=_session_sort_key)


async def get_session(
    db: Reader, *, scope: CampaignScope, session_id: str, with_summary: bool = True, with_tag: bool = False
) -> Row:
    if not _is_storable_text(session_id):
        raise RecordNotFound(SESSION_NOT_FOUND_TEXT)
    parameters = {"record_id": session_id, "campaign_id": scope.campaign_id}
    statement = _session_by_id(with_summary, with_tag)
    rows = await _fetch(db, statement, parameters, failure=fetch_failed_text("session"), rendered=with_summary)
    if not rows:
        raise RecordNotFound(SESSION_NOT_FOUND_TEXT)
    return rows[0]


# --- wiki entities (locations, characters, factions, items) ---------------------------


def _entity_sort_key(row: Row) -> tuple[SortKeyValue, ...]:
    return (row.sort_order, row.name, row.id)


def _entity_seek(after: tuple[SortKeyValue, ...]) -> tuple[Shape, dict[str, Any]]:
    """The shape and parameters of a seek past (sort_order, name, id); InvalidCursor
    unless the cursor's key could have come from a page."""
    if len(after) != 3 or not all(_is_key_text(value) for value in after[1:]):
        raise InvalidCursor()
    if not (after[0] is None or (isinstance(after[0], int) and after[0] in _SORT_ORDER_RANGE)):
        raise InvalidCursor()
    sort_order, name, last_id = after
    parameters = {"after_name": name, "after_id": last_id}
    if sort_order is None:
        return Shape.SEEK_NULL, parameters
    return Shape.SEEK, {**parameters, "after_sort": sort_order}


def _after_entity(table: type[WikiEntityColumns], unordered: bool) -> list[ColumnElement[bool]]:
    """Rows strictly after (after_sort, after_name, after_id) in sort-order (nulls last),
    name, id order, as disjoint ranges that each follow the list index."""
    columns = table.__table__.c  # type: ignore[attr-defined]
    # A row comparison over two ascending columns is one index range on both databases.
    after_name = tuple_(columns.name, columns.id) > tuple_(
        bindparam("after_name", type_=columns.name.type), bindparam("after_id", type_=columns.id.type)
    )
    if unordered:
        return [and_(columns.sort_order.is_(None), after_name)]
    after_sort = bindparam("after_sort", type_=columns.sort_order.type)
    return [
        and_(columns.sort_order == after_sort, after_name),
        columns.sort_order > after_sort,
        columns.sort_order.is_(None),
    ]


def _entity_order(table: type[WikiEntityColumns]) -> list[Any]:
    return in_list_order(ENTITY_ORDER, table.__table__.c)  # type: ignore[attr-defined]


def _visible(table: type[WikiEntityColumns]) -> list[ColumnElement[bool]]:
    return [table.campaign_id == bindparam("campaign_id"), table.hidden_from_wiki.is_(False)]  # type: ignore[list-item,attr-defined]


def _entity_columns(kind: EntityKind, with_description: bool, with_tag: bool) -> list[Any]:
    table = kind.table
    rendered = (table.description_markdown, table.description_text)
    return _entity_list_columns(kind) + _detail_columns(
        table, rendered=rendered, with_rendering=with_description, with_tag=with_tag
    )


@cache
def _entity_page(kind: EntityKind, with_description: bool, with_tag: bool, shape: Shape) -> ReadStatement:
    return _page_statement(
        _entity_columns(kind, with_description, with_tag),
        visible=_visible(kind.table),
        order=ENTITY_ORDER,
        shape=shape,
        after=lambda unordered: _after_entity(kind.table, unordered),
    )


@cache
def _entity_by_id(kind: EntityKind, with_description: bool, with_tag: bool) -> ReadStatement:
    table = kind.table
    return ReadStatement(
        select(*_entity_columns(kind, with_description, with_tag)).where(
            col(table.id) == bindparam("record_id"), *_visible(table)
        )
    )


async def list_entities(
    db: Reader,
    *,
    kind: EntityKind,
    scope: CampaignScope,
    limit: int | None,
    cursor: str | None,
    with_description: bool = False,
    with_tag: bool = False,
) -> Page[Row]:
    page_size = clamp_limit(limit)
    position = _parse_cursor(cursor)
    shape, parameters = _page_start(scope, position, page_size + 1, _entity_seek)
    statement = _entity_page(kind, with_description, with_tag, shape)
    rows = await _fetch(db, statement, parameters, failure=kind.fetch_failed_message, rendered=with_description)
    return _page(rows, limit=page_size, offset=position.offset, sort_key=_entity_sort_key)


async def get_entity(
    db: Reader,
    *,
    kind: EntityKind,
    scope: CampaignScope,
    entity_id: str,
    with_description: bool = True,
    with_tag: bool = False,
) -> Row:
    if not _is_storable_text(entity_id):
        raise RecordNotFound(ENTITY_NOT_FOUND_TEXT)
    parameters = {"record_id": entity_id, "campaign_id": scope.campaign_id}
    statement = _entity_by_id(kind, with_description, with_tag)
    rows = await _fetch(db, statement, parameters, failure=kind.fetch_failed_message, rendered=with_description)
    if not rows:
        raise RecordNotFound(ENTITY_NOT_FOUND_TEXT)
    return rows[0]


# A nested location (parent, children) may be asked for anything a location has.
_NESTED_LOCATION_COLUMNS = _entity_columns(EntityKind.LOCATION, with_description=True, with_tag=True)

_VISIBLE_LOCATIONS_BY_ID = ReadStatement(
    select(*_NESTED_LOCATION_COLUMNS).where(
        Location.id.in_(bindparam("ids", expanding=True)),  # type: ignore[attr-defined]
        *_visible(Location),
    ),
)


def _visible_children() -> ReadStatement:
    """The first `size` visible children of each parent in `ids`, in list order: each
    parent's children are numbered in list order and cut at `size`, so a parent with
    thousands of children returns no more rows than the client asked for."""
    rank = (
        func.row_number()
        .over(partition_by=Location.parent_id, order_by=_entity_order(Location))
        .label("child_rank")
    )
    ranked = (
        select(*_NESTED_LOCATION_COLUMNS, rank)
        .where(Location.parent_id.in_(bindparam("ids", expanding=True)), *_visible(Location))  # type: ignore[union-attr]
        .subquery()
    )
    columns = [ranked.c[column.key] for column in _NESTED_LOCATION_COLUMNS]
    return ReadStatement(
        select(*columns)
        .where(ranked.c.child_rank <= bindparam("size"))
        .order_by(*in_list_order(ENTITY_ORDER, ranked.c))
    )


_VISIBLE_CHILDREN = _visible_children()


async def visible_locations_by_id(db: Reader, *, scope: CampaignScope, location_ids: Sequence[str]) -> dict[str, Row]:
    """Visible locations among `location_ids` (for batched parent lookups)."""
    parameters = {"ids": list(location_ids), "campaign_id": scope.campaign_id}
    failure = EntityKind.LOCATION.fetch_failed_message
    rows = await _fetch(db, _VISIBLE_LOCATIONS_BY_ID, parameters, failure=failure, rendered=True)
    return {row.id: row for row in rows}


async def visible_children_by_parent(
    db: Reader, *, scope: CampaignScope, parent_ids: Sequence[str], limit: int
) -> dict[str, list[Row]]:
    """The first `limit` visible children of each parent, in list order (for batched
    children lookups)."""
    parameters = {"ids": list(parent_ids), "campaign_id": scope.campaign_id, "size": limit}
    failure = EntityKind.LOCATION.fetch_failed_message
    rows = await _fetch(db, _VISIBLE_CHILDREN, parameters, failure=failure, rendered=True)
    children: dict[str, list[Row]] = {parent_id: [] for parent_id in parent_ids}
    for row in rows:
        children[row.parent_id].append(row)
    return children

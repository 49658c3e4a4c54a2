"""Campaign-scoped reads of the change feed (contract §10.2), written by engine/feed_writer.py.

A page is the campaign's entries after a sequence number, in sequence order: one index
range scan of (campaign_id, seq). Its cursor is the list cursor's encoding (engine/cursor.py)
of the last sequence number returned, as the cursor's offset: resuming from it returns
what changed since, and a cursor stays valid for ever. A page's `next_cursor` is never
null: with no entry after it, it is the cursor the page was read from.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import bindparam, select

from engine.cursor import Cursor, decode_cursor, encode_cursor
from engine.db import Reader, fetch
from engine.errors import FetchFailed, InvalidCursor, fetch_failed_text
from engine.pagination import clamp_limit
from engine.read_pool import ReadFailed
from engine.records import CampaignScope
from engine.statements import ReadStatement
from engine.tables import ChangeFeedEntry

_ENTRIES = ChangeFeedEntry.__table__  # type: ignore[attr-defined]
_PAGE = ReadStatement(
    select(
        _ENTRIES.c.record_type.label("type"),
        _ENTRIES.c.record_id.label("id"),
        _ENTRIES.c.change,
        _ENTRIES.c.changed_at,
        _ENTRIES.c.seq,
    )
    .where(_ENTRIES.c.campaign_id == bindparam("campaign_id"), _ENTRIES.c.seq > bindparam("after"))
    .order_by(_ENTRIES.c.seq)
    .limit(bindparam("size"))
)


@dataclass(frozen=True, slots=True)
class ChangePage:
    """Entries (rows with `type`, `id`, `change`, `changed_at`) and where to resume."""

    items: list[Any]
    next_cursor: str
    has_more: bool


def _after(cursor: str | None) -> int:
    """The sequence number a cursor resumes after; a list cursor that seeks (it carries a
    sort key) is not a feed cursor."""
    if cursor is None:
        return 0
    position = decode_cursor(cursor)
    if position.after:
        raise InvalidCursor()
    return position.offset


async def list_changes(db: Reader, *, scope: CampaignScope, limit: int | None, cursor: str | None) -> ChangePage:
    page_size = clamp_limit(limit)
    after = _after(cursor)
    parameters = {"campaign_id": scope.campaign_id, "after": after, "size": page_size + 1}
    try:
        rows: Sequence[Any] = await fetch(db, _PAGE, parameters)
    except ReadFailed as exc:
        raise FetchFailed(fetch_failed_text("changes")) from exc
    items = list(rows[:page_size])
    last = items[-1].seq if items else after
    return ChangePage(items, next_cursor=encode_cursor(Cursor(offset=last)), has_more=len(rows) > page_size)

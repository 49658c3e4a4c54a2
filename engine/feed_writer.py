"""Writes the change feed (contract §10.2) as records are written.

Each write tells the feed where its records now stand (`RecordState`: campaign, visible
or not, body digest). The feed keeps, per record and campaign, the latest change a client
of that campaign could observe:

- visible, and new to the feed, or back after a `delete`, or with another body digest
  than its entry announced: an `upsert`, at a new sequence number;
- not visible (hidden, private, deleted, or now in another campaign) after an `upsert`:
  a `delete`, at a new sequence number;
- anything else (a record never visible, an edit of GM-only text or of `sort_order`,
  which leave the body's digest as it was): nothing.

Sequence numbers come from the campaign's `change_feed_heads` row, updated in the writing
transaction: they are assigned by the database, counted per campaign, and, because writers
are serialized (engine/write_lock.py), they grow in commit order. `changed_at` is when the
write began, whole seconds, and never earlier than the campaign's last change.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import case, select
from sqlalchemy.ext.asyncio import AsyncSession

from engine.tables import ChangeFeedEntry, ChangeFeedHead
from engine.upserts import upsert

UPSERT = "upsert"
DELETE = "delete"

_ENTRIES = ChangeFeedEntry.__table__  # type: ignore[attr-defined]
_HEADS = ChangeFeedHead.__table__  # type: ignore[attr-defined]


@dataclass(frozen=True, slots=True)
class RecordState:
    """A record as a write leaves it; `campaign_id` None when it was deleted."""

    record_id: str
    campaign_id: str | None
    visible: bool
    body_digest: str


@dataclass(frozen=True, slots=True)
class _Change:
    campaign_id: str
    record_id: str
    change: str
    body_digest: str | None


class FeedWriter:
    """The feed entries of one writing transaction, which began at `now`."""

    def __init__(self, db: AsyncSession, *, now: datetime) -> None:
        self.db = db
        self.now = now.replace(microsecond=0)
        self.entries_written = 0

    async def record(self, record_type: str, states: Sequence[RecordState]) -> None:
        """Bring the feed up to date with `states` (records of one type, each once)."""
        if not states:
            return
        entries = await self._entries(record_type, [state.record_id for state in states])
        changes = [change for state in states for change in _changes(state, entries.get(state.record_id, {}))]
        by_campaign: dict[str, list[_Change]] = defaultdict(list)
        for change in changes:
            by_campaign[change.campaign_id].append(change)
        for campaign_id, campaign_changes in by_campaign.items():
            await self._write(record_type, campaign_id, campaign_changes)

    async def _entries(self, record_type: str, record_ids: list[str]) -> dict[str, dict[str, tuple[str, str | None]]]:
        """record id -> campaign -> (change, body digest) of the records' current entries."""
        rows = await self.db.execute(
            select(_ENTRIES.c.record_id, _ENTRIES.c.campaign_id, _ENTRIES.c.change, _ENTRIES.c.body_digest).where(
                _ENTRIES.c.record_type == record_type, _ENTRIES.c.record_id.in_(record_ids)
            )
        )
        found: dict[str, dict[str, tuple[str, str | None]]] = defaultdict(dict)
        for row in rows:
            found[row.record_id][row.campaign_id] = (row.change, row.body_digest)
        return found

    async def _write(self, record_type: str, campaign_id: str, changes: list[_Change]) -> None:
        first_seq, changed_at = await self._allocate(campaign_id, len(changes))
        await self.db.execute(
            upsert(self.db, _ENTRIES),
            [
                {
                    "record_type": record_type,
                    "record_id": change.record_id,
                    "campaign_id": campaign_id,
                    "seq": first_seq + offset,
                    "change": change.change,
                    "changed_at": changed_at,
                    "body_digest": change.body_digest,
                }
                for offset, change in enumerate(changes)
            ],
        )
        self.entries_written += len(changes)

    async def _allocate(self, campaign_id: str, count: int) -> tuple[int, datetime]:
        """The first of `count` new sequence numbers of the campaign, and the time to give
        its changes (this write's, unless an earlier write was stamped later)."""
        statement = upsert(
            self.db,
            _HEADS,
            updates=lambda excluded: {
                "last_seq": _HEADS.c.last_seq + excluded.last_seq,
                "last_changed_at": case(
                    (_HEADS.c.last_changed_at > excluded.last_changed_at, _HEADS.c.last_changed_at),
                    else_=excluded.last_changed_at,
                ),
            },
        ).returning(_HEADS.c.last_seq, _HEADS.c.last_changed_at)
        head = (
            await self.db.execute(
                statement, {"campaign_id": campaign_id, "last_seq": count, "last_changed_at": self.now}
            )
        ).one()
        return head.last_seq - count + 1, head.last_changed_at


def _changes(state: RecordState, entries: dict[str, tuple[str, str | None]]) -> list[_Change]:
    """The feed changes that `state` makes, given the record's entries by campaign."""
    changes = [
        _Change(campaign_id, state.record_id, DELETE, None)
        for campaign_id, (change, _digest) in entries.items()
        if campaign_id != state.campaign_id and change == UPSERT
    ]
    if state.campaign_id is None:
        return changes
    current = entries.get(state.campaign_id)
    if state.visible:
        if current != (UPSERT, state.body_digest):
            changes.append(_Change(state.campaign_id, state.record_id, UPSERT, state.body_digest))
    elif current is not None and current[0] == UPSERT:
        changes.append(_Change(state.campaign_id, state.record_id, DELETE, None))
    return changes

"""One writer at a time: imports and re-renderings take the database's write lock first.

A write decides what to store and what the change feed announces from what is stored
(unchanged rows are skipped, a body digest is compared with the feed's), so two writers
interleaved could each decide from a state the other is replacing; and feed sequence
numbers must grow in commit order, or a client could read past a number that a slower
transaction commits later. Taking the lock before the first read avoids both: writers run
one after the other, in the order they got the lock, and a reader never sees a later
writer's changes before an earlier one's.

PostgreSQL: a transaction-level advisory lock (released at commit or rollback). SQLite:
the database's own write lock, which a transaction takes at its first write statement;
a statement that changes nothing takes it at once (a second writer then waits for the
busy timeout, 5 s, and fails with "database is locked": SQLite is the one-host default).
"""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

# The advisory lock's key: any constant that no other application sharing the database
# uses; this one spells "campaign-api writes" in its bytes, loosely.
WRITERS_LOCK_KEY = 0x6361_6D70_6170_6977


async def lock_writes(db: AsyncSession) -> None:
    """Wait until no other writer holds the lock, then hold it until the transaction ends."""
    if db.get_bind().dialect.name == "postgresql":
        # Waiting for another import may take as long as it does: STATEMENT_TIMEOUT_MS is
        # lifted while waiting, then set back for the rest of the transaction.
        timeout = await db.scalar(text("SELECT current_setting('statement_timeout')"))
        await db.execute(text("SET LOCAL statement_timeout = 0"))
        await db.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": WRITERS_LOCK_KEY})
        await db.execute(text("SELECT set_config('statement_timeout', :timeout, true)"), {"timeout": timeout})
    else:
        await db.execute(text("DELETE FROM change_feed_heads WHERE 0 = 1"))

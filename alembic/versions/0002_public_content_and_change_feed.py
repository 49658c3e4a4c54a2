"""Public content stored at write time, and the change feed.

Adds to each record table the rendered public Markdown and text, the digest of the raw
Markdown they were rendered from, the renderer version and the digest of the record's
single-record body; and the change feed with its per-campaign heads.

The new columns start empty, with renderer version 0 ("never rendered"): rendering needs
the application's renderer and all cores, so `campaign-api db upgrade` does it right after
this migration (engine/renderings.py), and the server refuses to start while any row is
left unrendered.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-24
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from engine.tables import DIGEST_LENGTH, ID_TYPE, UTCDateTime

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# table -> the column holding its raw Markdown
SOURCES = {
    "sessions": "summary",
    "locations": "description",
    "characters": "description",
    "factions": "description",
    "items": "description",
}


def _derived(name: str, type_: sa.types.TypeEngine[str]) -> sa.Column:
    return sa.Column(name, type_, nullable=False, server_default="")


def _campaign_key() -> sa.Column:
    return sa.Column(
        "campaign_id", ID_TYPE, sa.ForeignKey("campaigns.id", ondelete="CASCADE"), primary_key=True, nullable=False
    )


def upgrade() -> None:
    for table, source in SOURCES.items():
        op.add_column(table, _derived(f"{source}_markdown", sa.Text()))
        op.add_column(table, _derived(f"{source}_text", sa.Text()))
        op.add_column(table, _derived("source_digest", sa.String(DIGEST_LENGTH)))
        op.add_column(table, _derived("body_digest", sa.String(DIGEST_LENGTH)))
        op.add_column(table, sa.Column("renderer_version", sa.Integer(), nullable=False, server_default=sa.text("0")))
        op.create_index(f"ix_{table}_renderer_version", table, ["renderer_version"])
    op.create_table(
        "change_feed_heads",
        _campaign_key(),
        sa.Column("last_seq", sa.BigInteger(), nullable=False),
        sa.Column("last_changed_at", UTCDateTime(), nullable=False),
    )
    op.create_table(
        "change_feed",
        sa.Column("record_type", sa.String(16), primary_key=True),
        sa.Column("record_id", ID_TYPE, primary_key=True),
        _campaign_key(),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("change", sa.String(8), nullable=False),
        sa.Column("changed_at", UTCDateTime(), nullable=False),
        sa.Column("body_digest", sa.String(DIGEST_LENGTH), nullable=True),
    )
    op.create_index("ux_change_feed_campaign_seq", "change_feed", ["campaign_id", "seq"], unique=True)


def downgrade() -> None:
    op.drop_index("ux_change_feed_campaign_seq", table_name="change_feed")
    op.drop_table("change_feed")
    op.drop_table("change_feed_heads")
    for table, source in reversed(SOURCES.items()):
        op.drop_index(f"ix_{table}_renderer_version", table_name=table)
        with op.batch_alter_table(table) as batch:
            for column in ("renderer_version", "body_digest", "source_digest", f"{source}_text", f"{source}_markdown"):
                batch.drop_column(column)

"""The event outbox: events the service publishes (``embedding.completed``, ``embedding.invalidated``), kept from
the change that caused them until the broker confirms them (docs/events.md, "Published events").

Revision ID: outbox_0001
Revises:
"""

import sqlalchemy as sa
from alembic import op

from components.stores.state.baseline import autoincrement_id, create_missing

revision = "outbox_0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    metadata = sa.MetaData()
    create_missing(
        sa.Table(
            "event_outbox",
            metadata,
            autoincrement_id(),
            sa.Column("event_id", sa.Text, nullable=False, unique=True),
            sa.Column("created_at", sa.Float, nullable=False),
            sa.Column("routing_key", sa.Text, nullable=False),
            sa.Column("tenant_id", sa.Text),
            sa.Column("body", sa.Text, nullable=False),
            sa.Column("attempts", sa.Integer, nullable=False, server_default="0"),
            # Until when a relay holds the row (it publishes it); NULL or past: any relay may take it.
            sa.Column("claimed_until", sa.Float),
            sa.Column("last_error", sa.Text),
            sa.Index("event_outbox_tenant", "tenant_id"),
            sqlite_autoincrement=True,
        )
    )


def downgrade() -> None:
    op.drop_table("event_outbox")

"""The records: query log, index events, the event consumer's tables (docs/events.md) and shared secrets.

``state_secrets`` holds the query-hash key when ``SOURCEBOUND_QUERY_HASH_KEY`` is not set and the database is
shared: every replica hashes equal queries alike (a per-replica key file would not).

Revision ID: records_0001
Revises:
"""

import sqlalchemy as sa
from alembic import op

from components.stores.state.baseline import autoincrement_id, create_missing

revision = "records_0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    metadata = sa.MetaData()
    create_missing(
        sa.Table(
            "query_log",
            metadata,
            autoincrement_id(),
            sa.Column("created_at", sa.Float, nullable=False),
            sa.Column("endpoint", sa.Text, nullable=False),
            *(sa.Column(name, sa.Text) for name in ("tenant_id", "user_id", "project_id", "scope", "key_id")),
            *(sa.Column(name, sa.Text) for name in ("query_text", "query_hash", "search_mode", "model")),
            sa.Column("latency_ms", sa.Float, nullable=False),
            sa.Column("result_count", sa.Integer),
            sa.Column("tokens_used", sa.Integer),
            sa.Column("action", sa.Text),
            sa.Column("confidence", sa.Integer),
            sa.Column("outcome", sa.Text, nullable=False),
            sa.Index("query_log_created_at", "created_at"),
            sa.Index("query_log_tenant", "tenant_id", "created_at"),
            sqlite_autoincrement=True,
        )
    )
    create_missing(
        sa.Table(
            "index_events",
            metadata,
            autoincrement_id(),
            sa.Column("created_at", sa.Float, nullable=False),
            sa.Column("event", sa.Text, nullable=False),
            *(sa.Column(name, sa.Text) for name in ("tenant_id", "key_id", "document_ids", "reason", "cascade_id")),
            sa.Column("chunks", sa.Integer),
            sa.Column("details", sa.Text),
            sa.Index("index_events_created_at", "created_at"),
            sa.Index("index_events_tenant", "tenant_id", "created_at"),
            sqlite_autoincrement=True,
        )
    )
    create_missing(
        sa.Table(
            "applied_events",
            metadata,
            sa.Column("event_id", sa.Text, primary_key=True),
            sa.Column("created_at", sa.Float, nullable=False),
            sa.Column("routing_key", sa.Text, nullable=False),
            sa.Column("tenant_id", sa.Text),
            sa.Column("document_ids", sa.Text),
            sa.Column("occurred_at", sa.BigInteger, nullable=False),
            sa.Column("outcome", sa.Text, nullable=False),
            sa.Column("details", sa.Text),
            sa.Index("applied_events_tenant", "tenant_id", "created_at"),
        )
    )
    create_missing(
        sa.Table(
            "event_positions",
            metadata,
            sa.Column("tenant_id", sa.Text, primary_key=True),
            sa.Column("document_id", sa.Text, primary_key=True),
            sa.Column("occurred_at", sa.BigInteger, nullable=False),
            sa.Column("event_id", sa.Text, nullable=False),
        )
    )
    create_missing(
        sa.Table(
            "event_attempts",
            metadata,
            sa.Column("event_id", sa.Text, primary_key=True),
            sa.Column("attempts", sa.Integer, nullable=False),
            sa.Column("updated_at", sa.Float, nullable=False),
        )
    )
    create_missing(
        sa.Table(
            "state_secrets",
            metadata,
            sa.Column("name", sa.Text, primary_key=True),
            sa.Column("value", sa.Text, nullable=False),
        )
    )


def downgrade() -> None:
    for table in ("state_secrets", "event_attempts", "event_positions", "applied_events", "index_events", "query_log"):
        op.drop_table(table)

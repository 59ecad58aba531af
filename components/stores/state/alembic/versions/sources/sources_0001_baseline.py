"""Source sync bookkeeping (docs/contract.md "Sources"): indexed commits and files, webhook deliveries, jobs.

Revision ID: sources_0001
Revises:
"""

import sqlalchemy as sa
from alembic import op

from components.stores.state.baseline import create_missing

revision = "sources_0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    metadata = sa.MetaData()
    create_missing(
        sa.Table(
            "source_state",
            metadata,
            sa.Column("source", sa.Text, primary_key=True),
            sa.Column("commit_sha", sa.Text, nullable=False),
            sa.Column("updated_at", sa.Text, nullable=False),
        )
    )
    create_missing(
        sa.Table(
            "source_files",
            metadata,
            sa.Column("source", sa.Text, primary_key=True),
            sa.Column("path", sa.Text, primary_key=True),
            sa.Column("blob_sha", sa.Text, nullable=False),
            sa.Column("document_id", sa.Text, nullable=False),
        )
    )
    # The primary key makes a delivery id count once, whichever replica receives it first.
    create_missing(
        sa.Table(
            "deliveries",
            metadata,
            sa.Column("source", sa.Text, primary_key=True),
            sa.Column("delivery_id", sa.Text, primary_key=True),
            sa.Column("job_id", sa.Text),
            sa.Column("received_at", sa.Text, nullable=False),
        )
    )
    create_missing(
        sa.Table(
            "jobs",
            metadata,
            sa.Column("id", sa.Text, primary_key=True),
            sa.Column("source", sa.Text, nullable=False),
            sa.Column("tenant_id", sa.Text, nullable=False),
            sa.Column("trigger", sa.Text, nullable=False),
            sa.Column("status", sa.Text, nullable=False),
            sa.Column("created_at", sa.Text, nullable=False),
            sa.Column("started_at", sa.Text),
            sa.Column("finished_at", sa.Text),
            sa.Column("result", sa.Text),
            sa.Column("error", sa.Text),
            sa.Index("jobs_by_status", "status"),
        )
    )


def downgrade() -> None:
    for table in ("jobs", "deliveries", "source_files", "source_state"):
        op.drop_table(table)

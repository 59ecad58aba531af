"""Jobs shared by replicas: who runs a job (``worker``), whether it is a full reconcile, one queued job per source.

A job is claimed by one worker (an ``UPDATE ... WHERE status = 'queued'``; on PostgreSQL the oldest queued job is
picked with ``FOR UPDATE SKIP LOCKED``). The partial unique index keeps one queued job per source, so two
replicas receiving pushes for one source queue one sync. Duplicates a file already holds are abandoned first.

Revision ID: sources_0002
Revises: sources_0001
"""

import sqlalchemy as sa
from alembic import op

revision = "sources_0002"
down_revision = "sources_0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("worker", sa.Text))
        batch.add_column(sa.Column("full_sync", sa.Integer, nullable=False, server_default="0"))
    op.execute(
        "UPDATE jobs SET status = 'abandoned' WHERE status = 'queued' AND id NOT IN "
        "(SELECT MIN(id) FROM jobs WHERE status = 'queued' GROUP BY source)"
    )
    op.create_index(
        "jobs_one_queued_per_source",
        "jobs",
        ["source"],
        unique=True,
        sqlite_where=sa.text("status = 'queued'"),
        postgresql_where=sa.text("status = 'queued'"),
    )


def downgrade() -> None:
    op.drop_index("jobs_one_queued_per_source", "jobs")
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("full_sync")
        batch.drop_column("worker")

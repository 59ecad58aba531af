"""API keys of ``api_key`` mode: only ``sha256(key)`` is stored (docs/contract.md "Delegation").

Revision ID: keys_0001
Revises:
"""

import sqlalchemy as sa
from alembic import op

from components.stores.state.baseline import create_missing

revision = "keys_0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    metadata = sa.MetaData()
    create_missing(
        sa.Table(
            "api_keys",
            metadata,
            sa.Column("key_hash", sa.String(64), primary_key=True),
            sa.Column("tenant_id", sa.Text, nullable=False),
            sa.Column("user_id", sa.Text),
            sa.Column("tags", sa.Text, nullable=False),  # JSON list
            sa.Column("projects", sa.Text),  # JSON list, NULL: any project
            sa.Column("permissions", sa.Text, nullable=False),  # JSON list
            sa.Column("label", sa.Text, nullable=False, server_default=""),
            sa.Column("act_as_users", sa.Text),  # JSON list, NULL: no delegation grant
            sa.Column("created_at", sa.Float, nullable=False),
            sa.Index("api_keys_tenant", "tenant_id", "user_id"),
        )
    )


def downgrade() -> None:
    op.drop_table("api_keys")

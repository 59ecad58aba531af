"""The tag-owner directory (docs/contract.md "Confidence and routing"): users and per-tenant tags.

A file written before tags had a ``tenant_id`` column cannot say which tenant a tag belongs to: that
``tags`` table is dropped (users are kept) and the tags are reloaded from the directory YAML.

Revision ID: tags_0001
Revises:
"""

import logging

import sqlalchemy as sa
from alembic import op

from components.stores.state.baseline import create_missing

revision = "tags_0001"
down_revision = None
branch_labels = None
depends_on = None

logger = logging.getLogger("components.stores.tag_directory")


def upgrade() -> None:
    inspector = sa.inspect(op.get_bind())
    if inspector.has_table("tags") and "tenant_id" not in {column["name"] for column in inspector.get_columns("tags")}:
        logger.warning(
            "Tag directory has the old tags table (no tenant_id): dropping its tags; "
            "reload them from the directory YAML (`sourcebound tags load ...`)."
        )
        op.drop_table("tags")
    metadata = sa.MetaData()
    create_missing(
        sa.Table(
            "users",
            metadata,
            sa.Column("id", sa.Text, primary_key=True),
            sa.Column("email", sa.Text, nullable=False),
        )
    )
    create_missing(
        sa.Table(
            "tags",
            metadata,
            sa.Column("tenant_id", sa.Text, primary_key=True),
            sa.Column("name", sa.Text, primary_key=True),
            sa.Column("owner_user_id", sa.Text, sa.ForeignKey("users.id", ondelete="SET NULL")),
        )
    )


def downgrade() -> None:
    op.drop_table("tags")
    op.drop_table("users")

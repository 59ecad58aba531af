"""A conversation belongs to the key that started it (docs/contract.md, "Conversations"): ``owner_key``.

Another key of the same user (other tags, another grant) must not read what this one was answered. Conversations
started before the column existed have ``owner_key = ''``: the owner of trusted mode (no key), so in api_key mode
no key reads them any more (fail closed); they are erased with their tenant or user as before.

Revision ID: conversations_0002
Revises: conversations_0001
"""

import sqlalchemy as sa
from alembic import op

revision = "conversations_0002"
down_revision = "conversations_0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("rag_conversations") as batch:
        batch.add_column(sa.Column("owner_key", sa.Text, nullable=False, server_default=""))


def downgrade() -> None:
    with op.batch_alter_table("rag_conversations") as batch:
        batch.drop_column("owner_key")

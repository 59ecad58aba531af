"""Server-side conversations (docs/contract.md "Conversations"): conversations, raw turns, rolling summaries.

Revision ID: conversations_0001
Revises:
"""

import sqlalchemy as sa
from alembic import op

from components.stores.state.baseline import autoincrement_id, create_missing

revision = "conversations_0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    metadata = sa.MetaData()
    create_missing(
        sa.Table(
            "rag_conversations",
            metadata,
            sa.Column("id", sa.Text, primary_key=True),
            sa.Column("tenant_id", sa.Text, nullable=False),
            sa.Column("user_id", sa.Text, nullable=False),
            sa.Column("project_id", sa.Text),
            sa.Column("created_at", sa.Float, nullable=False),
            sa.Column("updated_at", sa.Float, nullable=False),
            sa.Index("rag_conversations_owner", "tenant_id", "user_id"),
        )
    )
    create_missing(
        sa.Table(
            "rag_conversation_messages",
            metadata,
            autoincrement_id(),
            sa.Column(
                "conversation_id", sa.Text, sa.ForeignKey("rag_conversations.id", ondelete="CASCADE"), nullable=False
            ),
            sa.Column("role", sa.Text, nullable=False),
            sa.Column("content", sa.Text, nullable=False),
            sa.Column("created_at", sa.Float, nullable=False),
            sa.Column("summarized", sa.Integer, nullable=False, server_default="0"),
            sa.Index("rag_conversation_messages_thread", "conversation_id", "id"),
            sqlite_autoincrement=True,
        )
    )
    create_missing(
        sa.Table(
            "rag_conversation_summaries",
            metadata,
            autoincrement_id(),
            sa.Column("tenant_id", sa.Text, nullable=False),
            sa.Column("user_id", sa.Text, nullable=False),
            sa.Column("project_id", sa.Text),
            sa.Column("thread_id", sa.Text, sa.ForeignKey("rag_conversations.id", ondelete="CASCADE"), nullable=False),
            sa.Column("summary_text", sa.Text, nullable=False),
            sa.Column("message_ids", sa.Text, nullable=False),
            sa.Column("created_at", sa.Float, nullable=False),
            sa.Index("rag_conversation_summaries_thread", "thread_id", "id"),
            sqlite_autoincrement=True,
        )
    )


def downgrade() -> None:
    for table in ("rag_conversation_summaries", "rag_conversation_messages", "rag_conversations"):
        op.drop_table(table)

"""Feedback and knowledge gaps (docs/contract.md, "Feedback and knowledge gaps").

* ``query_log`` gains ``query_id`` (the id every answer, search and enrichment carries; ``POST /feedback`` names
  it) and ``tag`` (the answer's primary context tag: what a question is filed under);
* ``feedback``: one rating (``up``/``down``) and optional comment per query, by its asker;
* ``kept_questions``: the text of declined, routed and thumbs-down questions, kept only with
  ``SOURCEBOUND_KEEP_UNANSWERED_QUESTIONS=true``, for ``SOURCEBOUND_UNANSWERED_QUESTIONS_RETENTION_DAYS``.

Revision ID: records_0002
Revises: records_0001
"""

import sqlalchemy as sa
from alembic import op

from components.stores.state.baseline import autoincrement_id

revision = "records_0002"
down_revision = "records_0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("query_log") as batch:
        batch.add_column(sa.Column("query_id", sa.Text))
        batch.add_column(sa.Column("tag", sa.Text))
    op.create_index("query_log_query_id", "query_log", ["query_id"])
    op.create_table(
        "feedback",
        autoincrement_id(),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("query_id", sa.Text, nullable=False, unique=True),
        *(sa.Column(name, sa.Text) for name in ("tenant_id", "user_id", "key_id", "tag", "action")),
        sa.Column("rating", sa.Text, nullable=False),
        sa.Column("comment", sa.Text),
        sa.Index("feedback_tenant", "tenant_id", "created_at"),
        sqlite_autoincrement=True,
    )
    op.create_table(
        "kept_questions",
        autoincrement_id(),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("query_id", sa.Text, nullable=False, unique=True),
        sa.Column("tenant_id", sa.Text, nullable=False),
        *(sa.Column(name, sa.Text) for name in ("user_id", "endpoint", "reason")),
        sa.Column("kind", sa.Text, nullable=False),
        sa.Column("tag", sa.Text, nullable=False),
        sa.Column("question", sa.Text),
        sa.Index("kept_questions_tenant", "tenant_id", "created_at"),
        sqlite_autoincrement=True,
    )


def downgrade() -> None:
    op.drop_table("kept_questions")
    op.drop_table("feedback")
    op.drop_index("query_log_query_id", "query_log")
    with op.batch_alter_table("query_log") as batch:
        batch.drop_column("tag")
        batch.drop_column("query_id")

"""Per-tenant glossaries (docs/contract.md "Glossary"): one compiled vocabulary per tenant.

Revision ID: glossary_0001
Revises:
"""

import sqlalchemy as sa
from alembic import op

from components.stores.state.baseline import create_missing

revision = "glossary_0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    create_missing(
        sa.Table(
            "glossary_vocabularies",
            sa.MetaData(),
            sa.Column("tenant_id", sa.Text, primary_key=True),
            sa.Column("vocabulary", sa.Text, nullable=False),
            sa.Column("digest", sa.Text, nullable=False),
            sa.Column("terms", sa.Integer, nullable=False),
            sa.Column("updated_at", sa.Float, nullable=False),
        )
    )


def downgrade() -> None:
    op.drop_table("glossary_vocabularies")

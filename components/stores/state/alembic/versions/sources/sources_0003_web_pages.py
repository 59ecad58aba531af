"""Pages of web sources (docs/sources.md, "Web sources"): what each crawl found, for the next one.

Per source and canonical URL: the ``document_id``, the validators the server sent (``ETag``, ``Last-Modified``) for
conditional re-crawls, the page's links (followed again when the page answers 304 Not Modified) and how many
crawls in a row did not reach it (two, and it leaves the index).

Revision ID: sources_0003
Revises: sources_0002
"""

import sqlalchemy as sa
from alembic import op

from components.stores.state.baseline import create_missing

revision = "sources_0003"
down_revision = "sources_0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    create_missing(
        sa.Table(
            "web_pages",
            sa.MetaData(),
            sa.Column("source", sa.Text, primary_key=True),
            sa.Column("url", sa.Text, primary_key=True),
            sa.Column("document_id", sa.Text, nullable=False),
            sa.Column("etag", sa.Text),
            sa.Column("last_modified", sa.Text),
            sa.Column("links", sa.Text, nullable=False, server_default="[]"),
            sa.Column("missed", sa.Integer, nullable=False, server_default="0"),
            sa.Column("crawled_at", sa.Text, nullable=False),
        )
    )


def downgrade() -> None:
    op.drop_table("web_pages")

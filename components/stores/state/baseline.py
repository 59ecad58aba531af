"""
What the baseline migrations (``alembic/versions``) share: create a table or index only when missing, so a
data directory written before the state layer (the same tables, made by ``CREATE TABLE IF NOT EXISTS``) is
adopted as it is.
"""

import sqlalchemy as sa
from alembic import op


def create_missing(table: sa.Table) -> None:
    """Create ``table`` and its indexes unless a table of that name exists (its indexes are then checked)."""
    inspector = sa.inspect(op.get_bind())
    if not inspector.has_table(table.name):
        table.create(op.get_bind())
        return
    existing = {index["name"] for index in inspector.get_indexes(table.name)}
    for index in table.indexes:
        if index.name not in existing:
            index.create(op.get_bind())


def autoincrement_id() -> sa.Column:
    """An integer key the database assigns (SQLite's rowid alias, PostgreSQL's BIGSERIAL)."""
    return sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True, autoincrement=True)

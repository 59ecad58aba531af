"""
Alembic, run programmatically: each store's version chain in ``alembic/versions/<store>``, its own version
table (``alembic_version_<store>``), so a store's SQLite file and the shared database migrate alike.

Two replicas starting at once on PostgreSQL take turns on an advisory lock; on SQLite the migration runs in a
``BEGIN IMMEDIATE`` transaction, which serialises processes on one file the same way.
"""

from pathlib import Path

import sqlalchemy as sa
from alembic import command
from alembic.config import Config

ALEMBIC_DIR = Path(__file__).resolve().parent / "alembic"
# Any constant: the key of the advisory lock migrations hold on PostgreSQL.
_ADVISORY_LOCK_KEY = 0x5B0057A7E


def alembic_config(store: str) -> Config:
    """The Alembic configuration of one store's chain (no ``alembic.ini``)."""
    config = Config()
    config.set_main_option("script_location", str(ALEMBIC_DIR))
    config.set_main_option("path_separator", "os")
    config.set_main_option("version_locations", str(ALEMBIC_DIR / "versions" / store))
    config.attributes["version_table"] = f"alembic_version_{store}"
    return config


def upgrade(database, store: str, revision: str = "head") -> None:
    """
    Migrate ``store``'s tables in ``database`` (a :class:`components.stores.state.StateDatabase`) to ``revision``.
    """
    config = alembic_config(store)
    with database.begin(immediate=True) as connection:
        if database.is_postgresql:
            connection.execute(sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": _ADVISORY_LOCK_KEY})
        config.attributes["connection"] = connection
        command.upgrade(config, revision)


def current(database, store: str) -> str | None:
    """The revision ``store`` is at in ``database`` (``None`` before its first migration)."""
    from alembic.runtime.migration import MigrationContext

    with database.connect() as connection:
        context = MigrationContext.configure(connection, opts={"version_table": f"alembic_version_{store}"})
        return context.get_current_revision()

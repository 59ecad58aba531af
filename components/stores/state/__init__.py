"""
The state layer: everything the service keeps outside the vector store, on SQLite or PostgreSQL.

Without ``SOURCEBOUND_DATABASE_URL`` each store keeps its own SQLite file in the data directory, as it always
has (``tags.sqlite``, ``records.sqlite``, ...). With it (an SQLAlchemy URL, e.g.
``postgresql+psycopg://sourcebound@db/sourcebound``) every store of every replica shares that one database
(docs/operations.md "Replicas"). Tables are SQLAlchemy Core definitions in Alembic migrations
(``components/stores/state/alembic``), applied on first use by :func:`open_state` and by
``sourcebound state migrate``.

Importing this package has no side effects: nothing connects until a store asks for its database.
"""

from components.stores.state.database import (
    DATABASE_URL_ENV,
    STATE_ERRORS,
    STORES,
    StateDatabase,
    database_url,
    open_state,
)

__all__ = ["DATABASE_URL_ENV", "STATE_ERRORS", "STORES", "StateDatabase", "database_url", "open_state"]

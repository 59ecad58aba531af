"""
Engines for the state layer: one per SQLite file in the embedded default, one per URL when shared.

:func:`open_state` is what every store calls: it picks the shared database named by
``SOURCEBOUND_DATABASE_URL`` (or an explicit ``url``) or the store's own SQLite file, and brings the store's
tables to the newest Alembic revision once per process. Stores write dialect-neutral SQL (``ON CONFLICT``
works on SQLite and PostgreSQL alike) and branch on :attr:`StateDatabase.is_postgresql` only where the
engines differ (``FOR UPDATE SKIP LOCKED``, WAL checkpoints).

Usage:

```python
from components.stores.state import open_state

db = open_state("tags", "data/tags.sqlite")          # or the shared database when the URL is set
with db.begin() as connection:
    connection.execute(sqlalchemy.text("SELECT 1"))
```
"""

import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

DATABASE_URL_ENV = "SOURCEBOUND_DATABASE_URL"

# What a store's database can raise (a locked or corrupt SQLite file, an unreachable server): callers above the
# stores catch these without importing a database driver.
STATE_ERRORS: tuple[type[Exception], ...] = (sqlite3.Error, sa.exc.SQLAlchemyError)

# Each store's tables live in their own Alembic version chain (``alembic/versions/<store>``), so a store's
# SQLite file holds only its tables and a shared database holds them all.
STORES = ("keys", "tags", "records", "glossary", "conversations", "sources", "outbox")

# SQLite settings per store. Every store zeroes what it deletes (``secure_delete``): an erased row must not stay
# readable in a free page of the file (docs/contract.md, "Deletion").
_SQLITE_PRAGMAS = {
    "keys": ("foreign_keys = ON", "journal_mode = WAL", "secure_delete = ON"),
    "tags": ("foreign_keys = ON", "secure_delete = ON"),
    "records": ("journal_mode = WAL", "synchronous = NORMAL", "secure_delete = ON"),
    "glossary": ("secure_delete = ON",),
    "conversations": ("foreign_keys = ON", "secure_delete = ON", "journal_mode = WAL", "synchronous = NORMAL"),
    "sources": ("journal_mode = WAL", "secure_delete = ON"),
    # Published events wait here until the broker confirms them: a committed row must survive a power loss.
    "outbox": ("journal_mode = WAL", "synchronous = FULL", "secure_delete = ON"),
    "shared": ("foreign_keys = ON", "journal_mode = WAL", "synchronous = NORMAL", "secure_delete = ON"),
}

_shared: dict[str, "StateDatabase"] = {}
_shared_lock = threading.Lock()
# Store files this process has migrated and their revision: opening one again (a new store object per call,
# as some callers make) reads its version row instead of running Alembic; a replaced file is migrated again.
_migrated_files: dict[tuple[str, str], str] = {}


def database_url(url: str | None = None) -> str | None:
    """The shared database URL: ``url`` when given, else ``SOURCEBOUND_DATABASE_URL`` (``None``: per-store files)."""
    value = url if url is not None else os.environ.get(DATABASE_URL_ENV, "")
    return value.strip() or None


def _apply_pragma(dbapi_connection, pragma: str, timeout: float) -> None:
    """Set one pragma; switching a new file to WAL waits for a writer of another process instead of failing."""
    if pragma == "journal_mode = WAL" and dbapi_connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal":
        return
    deadline = time.monotonic() + timeout
    while True:
        try:
            dbapi_connection.execute(f"PRAGMA {pragma}")
            return
        except sqlite3.OperationalError as error:
            # The busy timeout does not cover a journal-mode change: retry it within the same bound.
            if "locked" not in str(error) or time.monotonic() >= deadline:
                raise
            time.sleep(0.05)


def _sqlite_engine(url: str, pragmas: tuple[str, ...], timeout: float) -> Engine:
    engine = sa.create_engine(url, connect_args={"timeout": timeout, "check_same_thread": False})

    @sa.event.listens_for(engine, "connect")
    def _connect(dbapi_connection, _record) -> None:
        # Transactions are begun by the "begin" hook below (pysqlite's own BEGIN skips DDL and cannot be
        # IMMEDIATE); the pragmas are the store's settings.
        dbapi_connection.isolation_level = None
        for pragma in pragmas:
            _apply_pragma(dbapi_connection, pragma, timeout)

    @sa.event.listens_for(engine, "begin")
    def _begin(connection: Connection) -> None:
        # ``sqlite_begin="IMMEDIATE"`` takes the write lock up front: what PostgreSQL's row locks give a claim.
        mode = connection.get_execution_options().get("sqlite_begin", "")
        connection.exec_driver_sql(f"BEGIN {mode}".strip())

    return engine


class StateDatabase:
    """
    One database of the state layer.

    :param engine: The SQLAlchemy engine.
    :param shared: ``True`` for the database named by the URL (every store, every replica), ``False`` for one
        store's own SQLite file.
    """

    def __init__(self, engine: Engine, shared: bool) -> None:
        self.engine = engine
        self.shared = shared
        self._migrated: set[str] = set()
        self._lock = threading.Lock()

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    @property
    def is_postgresql(self) -> bool:
        return self.dialect == "postgresql"

    @property
    def is_sqlite(self) -> bool:
        return self.dialect == "sqlite"

    @contextmanager
    def begin(self, immediate: bool = True) -> Iterator[Connection]:
        """
        A connection in one write transaction, committed on leaving (rolled back on an exception).

        :param immediate: On SQLite, take the write lock at ``BEGIN`` (``BEGIN IMMEDIATE``): a read-then-write
            then waits for another writer (busy timeout) instead of failing with "database is locked" when its
            read lock cannot be upgraded. Reads use :meth:`connect`.
        """
        with self.engine.connect() as connection:
            if immediate and self.is_sqlite:
                connection = connection.execution_options(sqlite_begin="IMMEDIATE")
            with connection.begin():
                yield connection

    @contextmanager
    def connect(self) -> Iterator[Connection]:
        """A connection for reads (its transaction ends when the block does)."""
        with self.engine.connect() as connection:
            yield connection

    def migrate(self, store: str) -> None:
        """Bring ``store``'s tables to the newest revision (once per process and database)."""
        if store in self._migrated:
            return
        with self._lock:
            if store not in self._migrated:
                from components.stores.state.migrations import upgrade

                upgrade(self, store)
                self._migrated.add(store)

    def checkpoint(self) -> None:
        """SQLite only: copy the WAL into the file and empty it (erased rows' old pages leave the log too)."""
        if not self.is_sqlite:
            return
        raw = self.engine.raw_connection()
        try:
            raw.driver_connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            raw.close()

    def dispose(self) -> None:
        """Close the pooled connections of a store's own SQLite file (a shared database stays open)."""
        if not self.shared:
            self.engine.dispose()


def create_database(
    url: str, pragmas: tuple[str, ...] = _SQLITE_PRAGMAS["shared"], shared: bool = True
) -> StateDatabase:
    """
    A :class:`StateDatabase` for ``url`` (no tables are created; see :meth:`StateDatabase.migrate`).

    :param url: An SQLAlchemy URL (``sqlite:///...`` or ``postgresql+psycopg://...``).
    :param pragmas: SQLite settings applied on every new connection.
    :param shared: Whether the database is the one every store shares.
    """
    try:
        parsed = sa.engine.make_url(url)
    except sa.exc.ArgumentError as error:
        # The URL may hold a password: the message names the setting, not its value.
        raise ValueError(
            f"{DATABASE_URL_ENV} is not an SQLAlchemy URL; expected e.g. "
            "postgresql+psycopg://USER:PASSWORD@HOST:5432/DB or sqlite:////path/state.sqlite."
        ) from error
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        return StateDatabase(_sqlite_engine(url, pragmas, timeout=30.0), shared=shared)
    if parsed.get_backend_name() != "postgresql":
        raise ValueError(
            f"{DATABASE_URL_ENV} must be a sqlite:/// or postgresql+psycopg:// URL, got {parsed.get_backend_name()!r}."
        )
    # pool_pre_ping: a replica survives the database restarting; the pool covers the server's threads.
    engine = sa.create_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=20)
    return StateDatabase(engine, shared=shared)


def open_state(store: str, sqlite_path: str | os.PathLike | None, url: str | None = None) -> StateDatabase:
    """
    The database a store keeps its state in, migrated for that store.

    :param store: One of :data:`STORES`.
    :param sqlite_path: The store's own SQLite file, used when no shared URL is configured.
    :param url: The shared database URL; ``None`` reads ``SOURCEBOUND_DATABASE_URL``.
    :returns: The shared database (one per URL per process) or a database on the store's own file.
    :raises ValueError: If neither a URL nor a file is given, or the URL names another engine.
    """
    if store not in STORES:
        raise ValueError(f"Unknown state store {store!r}; expected one of {', '.join(STORES)}.")
    shared_url = database_url(url)
    if shared_url is not None:
        with _shared_lock:
            database = _shared.get(shared_url)
            if database is None:
                database = _shared[shared_url] = create_database(shared_url)
    else:
        if not sqlite_path:
            raise ValueError(f"The {store} store needs a SQLite file path or {DATABASE_URL_ENV}.")
        database = create_database(f"sqlite:///{Path(sqlite_path)}", _SQLITE_PRAGMAS[store], shared=False)
        key = (store, str(Path(sqlite_path).resolve()))
        if key in _migrated_files and _revision(database, store) == _migrated_files[key]:
            database._migrated.add(store)
            return database
    database.migrate(store)
    if not database.shared:
        _migrated_files[key] = _revision(database, store)
    return database


def _revision(database: StateDatabase, store: str) -> str | None:
    """The store's revision in its own file (one indexed read), ``None`` when it has none."""
    try:
        with database.connect() as connection:
            return connection.execute(sa.text(f"SELECT version_num FROM alembic_version_{store}")).scalar()
    except sa.exc.DBAPIError:
        return None


def dispose_shared() -> None:
    """Close every shared engine's connections (tests; a process that forks)."""
    with _shared_lock:
        for database in _shared.values():
            database.engine.dispose()
        _shared.clear()

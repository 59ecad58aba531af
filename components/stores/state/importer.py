"""
Moving a data directory's SQLite files into a shared database (docs/operations.md "Replicas").

When a replica starts with ``SOURCEBOUND_DATABASE_URL`` and finds the files an embedded install wrote
(``tags.sqlite``, ``records.sqlite``, ``glossary.sqlite``, ``conversations.sqlite``, ``sources.sqlite``,
``event_outbox.sqlite``), each
store's rows are copied into the shared database, ids included, in one transaction per store; then the rows of
every table are counted on both sides and, when they match, the file and its ``-wal``/``-shm`` side files are
deleted: data erased later in the shared database is neither brought back by a second import nor kept in a
forgotten file (docs/contract.md, "Deletion"). A count that does not match leaves the file in place and fails the
import. A store whose tables already hold rows in the shared database is left alone (another replica imported
first): its file stays, with a warning. ``*.imported`` files an earlier version left after a completed import are
removed. API keys (``api_keys.json``) and the query-hash key file are taken over by their stores
(:class:`components.stores.key_store.SqlApiKeys`, :class:`components.stores.record_store.RecordStore`).

Usage:

```python
from components.stores.state.importer import import_data_dir

import_data_dir(Path("data"))      # {"tags": 3, "records": 120, ...}: rows copied per store
```
"""

import logging
from pathlib import Path

import sqlalchemy as sa

from components.stores.state.database import StateDatabase, open_state

logger = logging.getLogger(__name__)

# Per store: its file in the data dir and its tables, parents before children (foreign keys).
STORE_FILES = {
    "tags": ("tags.sqlite", ("users", "tags")),
    "records": (
        "records.sqlite",
        (
            "query_log",
            "index_events",
            "applied_events",
            "event_positions",
            "event_attempts",
            "feedback",
            "kept_questions",
        ),  # fmt: skip
    ),
    "glossary": ("glossary.sqlite", ("glossary_vocabularies",)),
    "conversations": (
        "conversations.sqlite",
        ("rag_conversations", "rag_conversation_messages", "rag_conversation_summaries"),
    ),
    "sources": ("sources.sqlite", ("source_state", "source_files", "web_pages", "deliveries", "jobs")),
    "outbox": ("event_outbox.sqlite", ("event_outbox",)),
}
_BATCH_ROWS = 1000
_IMPORT_LOCK_KEY = 0x5B0057A7F


def _copy_store(source: sa.Engine, database: StateDatabase, tables: tuple[str, ...]) -> int | None:
    """Copy ``tables`` in one transaction; ``None`` (nothing copied) when the target already has rows."""
    copied = 0
    with database.begin(immediate=True) as target:
        if database.is_postgresql:
            target.execute(sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": _IMPORT_LOCK_KEY})
        for name in tables:
            if target.execute(sa.text(f"SELECT 1 FROM {name} LIMIT 1")).first() is not None:  # noqa: S608
                return None
        with source.connect() as reader:
            present = set(sa.inspect(reader).get_table_names())
            for name in tables:
                if name not in present:
                    continue
                target_table = sa.Table(name, sa.MetaData(), autoload_with=target)
                columns = [column.name for column in target_table.columns]
                source_columns = [c["name"] for c in sa.inspect(reader).get_columns(name) if c["name"] in columns]
                result = reader.execute(sa.text(f"SELECT {', '.join(source_columns)} FROM {name}"))  # noqa: S608
                while rows := result.fetchmany(_BATCH_ROWS):
                    target.execute(target_table.insert(), [dict(row._mapping) for row in rows])
                    copied += len(rows)
                if database.is_postgresql and "id" in columns and target_table.c.id.autoincrement is not False:
                    # Explicit ids were copied: the sequence continues after them.
                    target.execute(
                        sa.text(
                            f"SELECT setval(pg_get_serial_sequence('{name}', 'id'), "
                            f"COALESCE((SELECT MAX(id) FROM {name}), 0) + 1, false) "  # noqa: S608
                            f"WHERE pg_get_serial_sequence('{name}', 'id') IS NOT NULL"
                        )
                    )
    return copied


class ImportVerificationError(RuntimeError):
    """The shared database does not hold every row of an imported file; the file was kept."""


def _row_counts(connection: sa.Connection, tables: tuple[str, ...], present: set[str] | None = None) -> dict[str, int]:
    return {
        name: connection.execute(sa.text(f"SELECT COUNT(*) FROM {name}")).scalar_one()  # noqa: S608 - constant names
        for name in tables
        if present is None or name in present
    }


def _verify_copy(source: sa.Engine, database: StateDatabase, tables: tuple[str, ...], path: Path) -> None:
    """Every table of the file has as many rows in the shared database (which held none before the import)."""
    with source.connect() as reader:
        present = set(sa.inspect(reader).get_table_names())
        expected = _row_counts(reader, tables, present)
    with database.connect() as target:
        found = _row_counts(target, tuple(expected))
    if found != expected:
        raise ImportVerificationError(
            f"Importing {path} into the shared database did not carry every row (file: {expected}, database: "
            f"{found}); the file was kept. Check the database, then start again."
        )


def _remove_file(path: Path) -> None:
    """Delete an imported SQLite file and its side files (an earlier version renamed them ``*.imported``)."""
    for suffix in ("", "-wal", "-shm", "-journal"):
        for leftover in (path.with_name(path.name + suffix), path.with_name(path.name + suffix + ".imported")):
            if leftover.exists():
                leftover.unlink()


def import_data_dir(data_dir: Path, url: str | None = None) -> dict[str, int]:
    """
    Copy the SQLite files of ``data_dir`` into the shared database (``url`` or ``SOURCEBOUND_DATABASE_URL``), verify
    the row counts and delete the files.

    :returns: Rows copied per store that was imported (stores skipped or without a file are absent).
    :raises ImportVerificationError: If the database does not hold every row of a file (the file stays).
    """
    imported: dict[str, int] = {}
    for store, (file_name, tables) in STORE_FILES.items():
        path = Path(data_dir) / file_name
        stale = path.with_name(path.name + ".imported")
        if stale.exists() and not path.exists():
            # A file an earlier version kept after importing it: the database has its rows (and any erasure since).
            _remove_file(path)
            logger.warning("Removed %s, left by an earlier import into the shared database.", stale)
        if not path.is_file():
            continue
        database = open_state(store, None, url)
        source = sa.create_engine(f"sqlite:///{path}")
        try:
            copied = _copy_store(source, database, tables)
            if copied is not None:
                _verify_copy(source, database, tables, path)
        finally:
            source.dispose()
        if copied is None:
            logger.warning(
                "%s was not imported: the shared database already has %s data (imported from another replica?).",
                path,
                store,
            )
            continue
        _remove_file(path)
        logger.warning("Imported %d %s rows from %s into the shared database; deleted the file.", copied, store, path)
        imported[store] = copied
    return imported

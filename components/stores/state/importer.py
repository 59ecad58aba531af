"""
Moving a data directory's SQLite files into a shared database (docs/operations.md "Replicas").

When a replica starts with ``SOURCEBOUND_DATABASE_URL`` and finds the files an embedded install wrote
(``tags.sqlite``, ``records.sqlite``, ``glossary.sqlite``, ``conversations.sqlite``, ``sources.sqlite``), each
store's rows are copied into the shared database, ids included, in one transaction per store, and the file is
renamed ``<name>.imported``, so data erased later is never brought back by a second import. A store whose tables
already hold rows in the shared database is left alone (another replica imported first): its file stays, with a
warning. API keys (``api_keys.json``) and the query-hash key file are taken over by their stores
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
        ("query_log", "index_events", "applied_events", "event_positions", "event_attempts"),
    ),
    "glossary": ("glossary.sqlite", ("glossary_vocabularies",)),
    "conversations": (
        "conversations.sqlite",
        ("rag_conversations", "rag_conversation_messages", "rag_conversation_summaries"),
    ),
    "sources": ("sources.sqlite", ("source_state", "source_files", "web_pages", "deliveries", "jobs")),
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


def import_data_dir(data_dir: Path, url: str | None = None) -> dict[str, int]:
    """
    Copy the SQLite files of ``data_dir`` into the shared database (``url`` or ``SOURCEBOUND_DATABASE_URL``).

    :returns: Rows copied per store that was imported (stores skipped or without a file are absent).
    """
    imported: dict[str, int] = {}
    for store, (file_name, tables) in STORE_FILES.items():
        path = Path(data_dir) / file_name
        if not path.is_file():
            continue
        database = open_state(store, None, url)
        source = sa.create_engine(f"sqlite:///{path}")
        try:
            copied = _copy_store(source, database, tables)
        finally:
            source.dispose()
        if copied is None:
            logger.warning(
                "%s was not imported: the shared database already has %s data (imported from another replica?).",
                path,
                store,
            )
            continue
        for suffix in ("", "-wal", "-shm"):
            leftover = path.with_name(path.name + suffix)
            if leftover.exists():
                leftover.replace(leftover.with_name(leftover.name + ".imported"))
        logger.warning("Imported %d %s rows from %s into the shared database.", copied, store, path)
        imported[store] = copied
    return imported

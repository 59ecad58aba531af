"""
Per-tenant glossaries (docs/contract.md, "Glossary"): one compiled vocabulary per tenant, in the state layer
(:mod:`components.stores.state`: ``glossary.sqlite`` by default, the shared database with ``SOURCEBOUND_DATABASE_URL``).

```sql
glossary_vocabularies (tenant_id TEXT PRIMARY KEY, vocabulary TEXT NOT NULL, digest TEXT NOT NULL,
                       terms INTEGER NOT NULL, updated_at REAL NOT NULL)
```

``vocabulary`` is the canonical ``vocabulary.json`` of :mod:`components.core.vocabulary`. Loading a
glossary replaces the tenant's whole vocabulary (an empty CSV removes it); every read names the tenant,
so one tenant's glossary never reaches another's queries. The file is
``$SOURCEBOUND_DATA_DIR/glossary.sqlite`` by default. Every call takes a pooled connection for one transaction,
so one store object is safe to share between server threads, CLI processes and replicas.

Usage:

```python
from components.stores.glossary_store import GlossaryStore

store = GlossaryStore("data/glossary.sqlite")
store.load_csv("acme", "term,aliases\\nPTO,paid time off|vacation days\\n")
store.vocabulary("acme")          # the compiled dict, or None
```
"""

import json
import time
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from components.core.vocabulary import compile_vocabulary, parse_glossary_csv, vocabulary_digest, vocabulary_json
from components.stores.state import StateDatabase, database_url, open_state

GLOSSARY_FILE = "glossary.sqlite"


class GlossaryStore:
    """
    :param path: The SQLite file (created with its table on first write).
    """

    def __init__(self, path: str | Path, database_url: str | None = None) -> None:
        self.path = Path(path)
        self.database_url = database_url
        self._database: StateDatabase | None = None

    @property
    def database(self) -> StateDatabase:
        """The state database (opened and migrated on first use)."""
        if self._database is None:
            self._database = open_state("glossary", self.path, self.database_url)
        return self._database

    def _empty(self) -> bool:
        """No glossary anywhere yet: without a shared database and before the first load there is no file."""
        return database_url(self.database_url) is None and not self.path.exists()

    def load_csv(self, tenant_id: str, text: str) -> dict[str, Any]:
        """
        Replace a tenant's glossary with the one in ``text`` (validated in full before anything changes).

        :returns: ``{"tenant_id", "terms", "aliases", "digest"}`` (``digest`` is ``None`` when the CSV had no terms).
        :raises GlossaryError: If the CSV is invalid (nothing is changed).
        """
        entries = parse_glossary_csv(text)
        if not entries:
            self.remove(tenant_id)
            return {"tenant_id": tenant_id, "terms": 0, "aliases": 0, "digest": None}
        vocabulary = compile_vocabulary(entries)
        digest = vocabulary_digest(vocabulary)
        with self.database.begin() as connection:
            connection.execute(
                sa.text(
                    "INSERT INTO glossary_vocabularies (tenant_id, vocabulary, digest, terms, updated_at) "
                    "VALUES (:tenant_id, :vocabulary, :digest, :terms, :updated_at) ON CONFLICT (tenant_id) DO UPDATE "
                    "SET vocabulary = excluded.vocabulary, digest = excluded.digest, terms = excluded.terms, "
                    "updated_at = excluded.updated_at"
                ),
                {
                    "tenant_id": tenant_id,
                    "vocabulary": vocabulary_json(vocabulary),
                    "digest": digest,
                    "terms": len(vocabulary["terms"]),
                    "updated_at": time.time(),
                },
            )
        aliases = sum(len(item["aliases"]) for item in vocabulary["terms"])
        return {"tenant_id": tenant_id, "terms": len(vocabulary["terms"]), "aliases": aliases, "digest": digest}

    def digest(self, tenant_id: str) -> str | None:
        """The digest of the tenant's vocabulary (cheap: for caches), or ``None`` when it has none."""
        if self._empty():
            return None
        with self.database.connect() as connection:
            row = connection.execute(
                sa.text("SELECT digest FROM glossary_vocabularies WHERE tenant_id = :tenant_id"),
                {"tenant_id": tenant_id},
            ).first()
        return row[0] if row else None

    def vocabulary(self, tenant_id: str) -> dict[str, Any] | None:
        """The tenant's compiled vocabulary, or ``None`` when it has no glossary."""
        if self._empty():
            return None
        with self.database.connect() as connection:
            row = connection.execute(
                sa.text("SELECT vocabulary FROM glossary_vocabularies WHERE tenant_id = :tenant_id"),
                {"tenant_id": tenant_id},
            ).first()
        return json.loads(row[0]) if row else None

    def remove(self, tenant_id: str) -> bool:
        """Delete a tenant's glossary; ``True`` if it had one."""
        if self._empty():
            return False
        with self.database.begin() as connection:
            removed = (
                connection.execute(
                    sa.text("DELETE FROM glossary_vocabularies WHERE tenant_id = :tenant_id"), {"tenant_id": tenant_id}
                ).rowcount
                > 0
            )
        # The erased vocabulary leaves the write-ahead log too (docs/contract.md, "Deletion").
        self.database.checkpoint()
        return removed

    def tenants(self) -> list[str]:
        """Tenants that have a glossary, sorted."""
        if self._empty():
            return []
        with self.database.connect() as connection:
            return list(connection.execute(sa.text("SELECT tenant_id FROM glossary_vocabularies ORDER BY 1")).scalars())

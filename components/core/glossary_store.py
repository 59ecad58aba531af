"""
Per-tenant glossaries (docs/contract.md, "Glossary"): one SQLite file, one compiled vocabulary per tenant.

```sql
glossary_vocabularies (tenant_id TEXT PRIMARY KEY, vocabulary TEXT NOT NULL, digest TEXT NOT NULL,
                       terms INTEGER NOT NULL, updated_at REAL NOT NULL)
```

``vocabulary`` is the canonical ``vocabulary.json`` of :mod:`components.core.vocabulary`. Loading a
glossary replaces the tenant's whole vocabulary (an empty CSV removes it); every read names the tenant,
so one tenant's glossary never reaches another's queries. The file is
``$SOURCEBOUND_DATA_DIR/glossary.sqlite`` by default. Every call opens its own short connection, so one
store object is safe to share between server threads and CLI processes.

Usage:

```python
from components.core.glossary_store import GlossaryStore

store = GlossaryStore("data/glossary.sqlite")
store.load_csv("acme", "term,aliases\\nPTO,paid time off|vacation days\\n")
store.vocabulary("acme")          # the compiled dict, or None
```
"""

import json
import sqlite3
import time
from contextlib import closing
from pathlib import Path
from typing import Any

from components.core.vocabulary import compile_vocabulary, parse_glossary_csv, vocabulary_digest, vocabulary_json

GLOSSARY_FILE = "glossary.sqlite"

SCHEMA = """
CREATE TABLE IF NOT EXISTS glossary_vocabularies (
    tenant_id TEXT PRIMARY KEY,
    vocabulary TEXT NOT NULL,
    digest TEXT NOT NULL,
    terms INTEGER NOT NULL,
    updated_at REAL NOT NULL
);
"""


class GlossaryStore:
    """
    :param path: The SQLite file (created with its table on first write).
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def _connect(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        connection = sqlite3.connect(self.path, timeout=10.0)
        connection.executescript(SCHEMA)
        return connection

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
        with closing(self._connect()) as connection, connection:
            connection.execute(
                "INSERT INTO glossary_vocabularies (tenant_id, vocabulary, digest, terms, updated_at) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT(tenant_id) DO UPDATE SET vocabulary = excluded.vocabulary, "
                "digest = excluded.digest, terms = excluded.terms, updated_at = excluded.updated_at",
                (tenant_id, vocabulary_json(vocabulary), digest, len(vocabulary["terms"]), time.time()),
            )
        aliases = sum(len(item["aliases"]) for item in vocabulary["terms"])
        return {"tenant_id": tenant_id, "terms": len(vocabulary["terms"]), "aliases": aliases, "digest": digest}

    def digest(self, tenant_id: str) -> str | None:
        """The digest of the tenant's vocabulary (cheap: for caches), or ``None`` when it has none."""
        if not self.path.exists():
            return None
        with closing(self._connect()) as connection:
            row = connection.execute(
                "SELECT digest FROM glossary_vocabularies WHERE tenant_id = ?", (tenant_id,)
            ).fetchone()
        return row[0] if row else None

    def vocabulary(self, tenant_id: str) -> dict[str, Any] | None:
        """The tenant's compiled vocabulary, or ``None`` when it has no glossary."""
        if not self.path.exists():
            return None
        with closing(self._connect()) as connection:
            row = connection.execute(
                "SELECT vocabulary FROM glossary_vocabularies WHERE tenant_id = ?", (tenant_id,)
            ).fetchone()
        return json.loads(row[0]) if row else None

    def remove(self, tenant_id: str) -> bool:
        """Delete a tenant's glossary; ``True`` if it had one."""
        if not self.path.exists():
            return False
        with closing(self._connect()) as connection, connection:
            cursor = connection.execute("DELETE FROM glossary_vocabularies WHERE tenant_id = ?", (tenant_id,))
        return cursor.rowcount > 0

    def tenants(self) -> list[str]:
        """Tenants that have a glossary, sorted."""
        if not self.path.exists():
            return []
        with closing(self._connect()) as connection:
            return [row[0] for row in connection.execute("SELECT tenant_id FROM glossary_vocabularies ORDER BY 1")]

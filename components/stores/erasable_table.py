"""
A records-database table of per-query rows that is erased by tenant or user and pruned by age
(docs/contract.md, "Deletion"): the base of the feedback and kept-question stores.

Removals run in one write transaction; when they removed anything the WAL is truncated, so the erased rows'
old pages leave the log too (the records database zeroes freed pages with ``secure_delete``).

Usage:

```python
from components.stores.erasable_table import ErasableTable


class NotesStore(ErasableTable):
    table = "notes"  # with tenant_id, user_id and created_at columns
```
"""

import os
import time
from typing import Any, Self

import sqlalchemy as sa

from components.stores.state import StateDatabase, open_state


class ErasableTable:
    """
    One table of the records database with ``tenant_id``, ``user_id`` and ``created_at`` columns.

    :param database: The records database (:attr:`components.stores.record_store.RecordStore.database`).
    """

    table: str = ""  # set by each subclass; a constant, never user input

    def __init__(self, database: StateDatabase) -> None:
        self.database = database

    @classmethod
    def open(cls, path: str | os.PathLike, database_url: str | None = None) -> Self:
        """The store on ``path`` (the records SQLite file) or on the shared database."""
        return cls(open_state("records", path, database_url))

    def erase_tenant(self, tenant_id: str) -> int:
        """Remove every row of a tenant; returns how many."""
        return self._delete("tenant_id = :tenant_id", {"tenant_id": tenant_id})

    def erase_user(self, user_id: str, tenant_id: str | None = None) -> int:
        """Remove a user's rows (in one tenant, or all); returns how many."""
        where, params = "user_id = :user_id", {"user_id": user_id}
        if tenant_id is not None:
            where, params = where + " AND tenant_id = :tenant_id", {**params, "tenant_id": tenant_id}
        return self._delete(where, params)

    def prune(self, retention_days: int, now: float | None = None) -> int:
        """Remove rows older than ``retention_days`` (0 keeps everything); returns how many."""
        if retention_days <= 0:
            return 0
        cutoff = (now if now is not None else time.time()) - retention_days * 86400
        return self._delete("created_at < :cutoff", {"cutoff": cutoff})

    def _delete(self, where: str, params: dict[str, Any]) -> int:
        statement = sa.text(f"DELETE FROM {self.table} WHERE {where}")  # noqa: S608 - constant table and clauses
        with self.database.begin(immediate=True) as connection:
            removed = connection.execute(statement, params).rowcount
        if removed:
            self.database.checkpoint()  # erased rows leave the WAL too
        return removed

"""
Kept questions: the text of questions the documents did not answer (docs/contract.md, "Feedback and knowledge
gaps"), in the records database (table ``kept_questions``). Written only with
``SOURCEBOUND_KEEP_UNANSWERED_QUESTIONS=true`` (the knowledge-gaps service decides), one row per query:

* ``declined``: routed to the administrator (no owner for the tag, or no context at all);
* ``routed``: routed to the owner of the tag;
* ``thumbs_down``: answered, and its asker rated the answer down.

Rows are pruned after ``SOURCEBOUND_UNANSWERED_QUESTIONS_RETENTION_DAYS`` and erased with their tenant or user;
the records database zeroes freed pages (``secure_delete``) and the WAL is truncated after each removal.

Usage:

```python
from components.stores.kept_question_store import KeptQuestionStore

kept = KeptQuestionStore.open("data/records.sqlite")
kept.keep(query_id="5f0c...", tenant_id="acme", user_id=None, endpoint="rag", kind="routed", tag="hr",
          question="How do I extend parental leave?", reason="Low confidence: 41%, routing to hr owner")
kept.questions("acme")  # newest first
```
"""

import os
import time
from typing import Any

import sqlalchemy as sa

from components.stores.state import StateDatabase, open_state

KINDS = ("declined", "routed", "thumbs_down")
_COLUMNS = ("query_id", "tenant_id", "user_id", "endpoint", "kind", "tag", "question", "reason")


class KeptQuestionStore:
    """
    The ``kept_questions`` table of the records database.

    :param database: The records database (:attr:`components.stores.record_store.RecordStore.database`).
    """

    def __init__(self, database: StateDatabase) -> None:
        self.database = database

    @classmethod
    def open(cls, path: str | os.PathLike, database_url: str | None = None) -> "KeptQuestionStore":
        """The store on ``path`` (the records SQLite file) or on the shared database."""
        return cls(open_state("records", path, database_url))

    def keep(
        self,
        *,
        query_id: str,
        tenant_id: str,
        user_id: str | None,
        kind: str,
        tag: str,
        question: str | None,
        endpoint: str | None = None,
        reason: str | None = None,
    ) -> bool:
        """
        Keep one question; a query already kept stays as it was (its first kind wins).

        :returns: Whether a row was added.
        :raises ValueError: An unknown ``kind``.
        """
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
        row = {
            "created_at": time.time(), "query_id": query_id, "tenant_id": tenant_id, "user_id": user_id,
            "endpoint": endpoint, "kind": kind, "tag": tag, "question": question, "reason": reason,
        }  # fmt: skip
        with self.database.begin(immediate=True) as connection:
            return bool(
                connection.execute(
                    sa.text(
                        f"INSERT INTO kept_questions (created_at, {', '.join(_COLUMNS)}) "  # noqa: S608 - fixed
                        f"VALUES (:created_at, {', '.join(':' + column for column in _COLUMNS)}) "
                        "ON CONFLICT (query_id) DO NOTHING"
                    ),
                    row,
                ).rowcount
            )

    def questions(self, tenant_id: str, limit: int = 1000) -> list[dict[str, Any]]:
        """The tenant's kept questions, newest first."""
        with self.database.connect() as connection:
            rows = connection.execute(
                sa.text(
                    "SELECT * FROM kept_questions WHERE tenant_id = :tenant_id "
                    "ORDER BY created_at DESC, id DESC LIMIT :limit"
                ),
                {"tenant_id": tenant_id, "limit": limit},
            ).mappings()
            return [dict(row) for row in rows]

    def erase_tenant(self, tenant_id: str) -> int:
        """Remove every kept question of a tenant; returns how many."""
        return self._delete("DELETE FROM kept_questions WHERE tenant_id = :tenant_id", {"tenant_id": tenant_id})

    def erase_user(self, user_id: str, tenant_id: str | None = None) -> int:
        """Remove a user's kept questions (in one tenant, or all); returns how many."""
        sql, params = "DELETE FROM kept_questions WHERE user_id = :user_id", {"user_id": user_id}
        if tenant_id is not None:
            sql, params = sql + " AND tenant_id = :tenant_id", {**params, "tenant_id": tenant_id}
        return self._delete(sql, params)

    def prune(self, retention_days: int, now: float | None = None) -> int:
        """Remove questions kept longer than ``retention_days`` (0 keeps them); returns how many."""
        if retention_days <= 0:
            return 0
        cutoff = (now if now is not None else time.time()) - retention_days * 86400
        return self._delete("DELETE FROM kept_questions WHERE created_at < :cutoff", {"cutoff": cutoff})

    def _delete(self, sql: str, params: dict[str, Any]) -> int:
        with self.database.begin(immediate=True) as connection:
            removed = connection.execute(sa.text(sql), params).rowcount
        if removed:
            self.database.checkpoint()  # erased text leaves the WAL too (docs/contract.md, "Deletion")
        return removed

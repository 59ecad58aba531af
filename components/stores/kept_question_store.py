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

import time
from typing import Any

import sqlalchemy as sa

from components.stores.erasable_table import ErasableTable

KINDS = ("declined", "routed", "thumbs_down")
_COLUMNS = ("query_id", "tenant_id", "user_id", "endpoint", "kind", "tag", "question", "reason")


class KeptQuestionStore(ErasableTable):
    """
    The ``kept_questions`` table of the records database.

    :param database: The records database (:attr:`components.stores.record_store.RecordStore.database`).
    """

    table = "kept_questions"

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

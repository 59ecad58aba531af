"""
Feedback on answers (docs/contract.md, "Feedback and knowledge gaps"): one rating (``up`` or ``down``) and an
optional comment per query, by the query's own asker, in the records database (``records.sqlite``, or the shared
database with ``SOURCEBOUND_DATABASE_URL``; table ``feedback``).

A second rating of the same query replaces the first. Rows are erased with their tenant or user and pruned with
the records (``SOURCEBOUND_RECORDS_RETENTION_DAYS``). Whether the asker may rate a query is the feedback
service's decision (``components.services.feedback_service``), not this store's.

Usage:

```python
from components.stores.feedback_store import FeedbackStore

feedback = FeedbackStore.open("data/records.sqlite")
feedback.record(query_id="5f0c...", tenant_id="acme", user_id="u-sam", key_id=None, rating="down",
                comment="The policy changed in May.", tag="hr", action="CITE")
feedback.recent("acme")  # newest first
```
"""

import time
from typing import Any

import sqlalchemy as sa

from components.stores.erasable_table import ErasableTable

RATINGS = ("up", "down")
MAX_COMMENT_CHARS = 2000
_COLUMNS = ("query_id", "tenant_id", "user_id", "key_id", "tag", "action", "rating", "comment")


class FeedbackStore(ErasableTable):
    """
    The ``feedback`` table of the records database.

    :param database: The records database (:attr:`components.stores.record_store.RecordStore.database`).
    """

    table = "feedback"

    def record(
        self,
        *,
        query_id: str,
        tenant_id: str,
        user_id: str | None,
        key_id: str | None,
        rating: str,
        comment: str | None = None,
        tag: str | None = None,
        action: str | None = None,
    ) -> dict[str, Any]:
        """
        Store the rating of a query (replacing an earlier one of the same query).

        :returns: The stored row.
        :raises ValueError: A rating other than ``up``/``down`` or a comment over :data:`MAX_COMMENT_CHARS`.
        """
        if rating not in RATINGS:
            raise ValueError(f"rating must be one of {', '.join(RATINGS)}, got {rating!r}")
        if comment is not None and len(comment) > MAX_COMMENT_CHARS:
            raise ValueError(f"comment must be at most {MAX_COMMENT_CHARS} characters")
        row = {
            "created_at": time.time(), "query_id": query_id, "tenant_id": tenant_id, "user_id": user_id,
            "key_id": key_id, "tag": tag, "action": action, "rating": rating, "comment": comment or None,
        }  # fmt: skip
        updates = ", ".join(f"{column} = excluded.{column}" for column in ("created_at", "rating", "comment"))
        with self.database.begin(immediate=True) as connection:
            connection.execute(
                sa.text(
                    f"INSERT INTO feedback (created_at, {', '.join(_COLUMNS)}) "  # noqa: S608 - fixed columns
                    f"VALUES (:created_at, {', '.join(':' + column for column in _COLUMNS)}) "
                    f"ON CONFLICT (query_id) DO UPDATE SET {updates}"
                ),
                row,
            )
        return row

    def recent(self, tenant_id: str, limit: int = 100) -> list[dict[str, Any]]:
        """The tenant's newest feedback first."""
        with self.database.connect() as connection:
            rows = connection.execute(
                sa.text(
                    "SELECT * FROM feedback WHERE tenant_id = :tenant_id ORDER BY created_at DESC, id DESC LIMIT :limit"
                ),
                {"tenant_id": tenant_id, "limit": limit},
            ).mappings()
            return [dict(row) for row in rows]

    def for_queries(self, tenant_id: str, query_ids: list[str]) -> dict[str, dict[str, Any]]:
        """The tenant's feedback on these queries, by query id."""
        if not query_ids:
            return {}
        statement = sa.text(
            "SELECT * FROM feedback WHERE tenant_id = :tenant_id AND query_id IN :query_ids"
        ).bindparams(sa.bindparam("query_ids", expanding=True))
        with self.database.connect() as connection:
            rows = connection.execute(statement, {"tenant_id": tenant_id, "query_ids": list(query_ids)}).mappings()
            return {row["query_id"]: dict(row) for row in rows}

    def counts(self, tenant_id: str, since: float) -> dict[str, dict[str, int]]:
        """Per tag (``""`` for none), the tenant's ratings since ``since``: ``{"up": n, "down": n}``."""
        statement = sa.text(
            "SELECT COALESCE(tag, '') AS tag, rating, COUNT(*) AS n FROM feedback "
            "WHERE tenant_id = :tenant_id AND created_at >= :since GROUP BY COALESCE(tag, ''), rating"
        )
        counts: dict[str, dict[str, int]] = {}
        with self.database.connect() as connection:
            for tag, rating, number in connection.execute(statement, {"tenant_id": tenant_id, "since": since}):
                counts.setdefault(tag, dict.fromkeys(RATINGS, 0))[rating] = int(number)
        return counts

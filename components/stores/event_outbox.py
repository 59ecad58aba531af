"""
The event outbox: events the service publishes, kept from the index change that caused them until the broker
has confirmed them (docs/events.md, "Published events").

A change to the index (a document indexed, artifacts invalidated) adds its events here after the change is in
the store; a relay (``hayhooks_app.events.outbox_relay``) publishes the oldest rows with publisher confirms and
removes each row only once the broker has confirmed it. A crash, a broker outage or a lost confirmation leaves the
row, which is published again with the same ``event_id``: delivery is at least once, and the event id is the
subscriber's idempotency key. Rows live in ``event_outbox.sqlite`` in the data dir, or the shared database with
``SOURCEBOUND_DATABASE_URL`` (one outbox for every replica; a row is claimed by one relay at a time).

Usage:

```python
from components.stores.event_outbox import EventOutbox

outbox = EventOutbox("data/event_outbox.sqlite")
outbox.add([{"event_id": "e-1", "routing_key": "embedding.completed", "tenant_id": "acme", "body": "{...}"}])
for row in outbox.claim(limit=50, owner="replica-1"):
    ...  # publish row["body"], then
    outbox.remove([row["event_id"]])
```
"""

import os
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from components.stores.state import StateDatabase, open_state

OUTBOX_FILE = "event_outbox.sqlite"
# A claimed row another relay has not confirmed within this time is published again (its relay died).
CLAIM_SECONDS = 60.0


class EventOutbox:
    """
    Thread-safe outbox of events to publish.

    :param path: SQLite file used when no shared database is configured.
    :param database_url: The shared database (default: ``SOURCEBOUND_DATABASE_URL``; none: ``path``).
    """

    def __init__(self, path: str | os.PathLike, database_url: str | None = None) -> None:
        self.path = Path(path)
        self.database: StateDatabase = open_state("outbox", self.path, database_url)
        self._listeners: list[Callable[[], None]] = []
        self._lock = threading.Lock()

    def on_added(self, listener: Callable[[], None]) -> None:
        """Call ``listener()`` after each :meth:`add` (a relay wakes up instead of waiting for its next poll)."""
        with self._lock:
            self._listeners.append(listener)

    def add(self, events: Iterable[dict[str, Any]]) -> int:
        """
        Store events to publish, in order; an ``event_id`` already stored is kept as it is (the same event).

        :param events: ``{"event_id", "routing_key", "tenant_id", "body"}`` each (``body``: the JSON text).
        :returns: How many were new.
        """
        rows = [
            {
                "event_id": str(event["event_id"]),
                "created_at": time.time(),
                "routing_key": str(event["routing_key"]),
                "tenant_id": event.get("tenant_id"),
                "body": str(event["body"]),
            }
            for event in events
        ]
        if not rows:
            return 0
        added = 0
        with self.database.begin() as connection:
            for row in rows:
                result = connection.execute(
                    sa.text(
                        "INSERT INTO event_outbox (event_id, created_at, routing_key, tenant_id, body, attempts) "
                        "VALUES (:event_id, :created_at, :routing_key, :tenant_id, :body, 0) "
                        "ON CONFLICT (event_id) DO NOTHING"
                    ),
                    row,
                )
                added += result.rowcount or 0
        with self._lock:
            listeners = list(self._listeners)
        for listener in listeners:
            listener()
        return added

    def claim(self, limit: int = 100, now: float | None = None) -> list[dict[str, Any]]:
        """
        The oldest rows no relay holds (or whose claim expired), marked as claimed now.

        :returns: ``{"event_id", "routing_key", "tenant_id", "body", "attempts"}`` each, oldest first.
        """
        now = time.time() if now is None else now
        with self.database.begin() as connection:
            lock = " FOR UPDATE SKIP LOCKED" if self.database.is_postgresql else ""
            rows = (
                connection.execute(
                    sa.text(
                        "SELECT id, event_id, routing_key, tenant_id, body, attempts FROM event_outbox "  # noqa: S608
                        f"WHERE claimed_until IS NULL OR claimed_until < :now ORDER BY id LIMIT :limit{lock}"
                    ),
                    {"now": now, "limit": limit},
                )
                .mappings()
                .all()
            )
            if rows:
                connection.execute(
                    sa.text(
                        "UPDATE event_outbox SET claimed_until = :until, attempts = attempts + 1 WHERE id IN "
                        f"({', '.join(str(int(row['id'])) for row in rows)})"  # noqa: S608 - integer ids
                    ),
                    {"until": now + CLAIM_SECONDS},
                )
        return [
            {key: row[key] for key in ("event_id", "routing_key", "tenant_id", "body")}
            | {"attempts": row["attempts"] + 1}
            for row in rows
        ]

    def release(self, event_ids: Iterable[str], error: str | None = None) -> None:
        """Give claimed rows back (their publication failed): the next claim takes them again."""
        ids = list(event_ids)
        if not ids:
            return
        with self.database.begin() as connection:
            connection.execute(
                sa.text("UPDATE event_outbox SET claimed_until = NULL, last_error = :error WHERE event_id = :event_id"),
                [{"event_id": one, "error": (error or "")[:1000]} for one in ids],
            )

    def remove(self, event_ids: Iterable[str]) -> int:
        """Delete rows the broker confirmed; returns how many were removed."""
        ids = list(event_ids)
        if not ids:
            return 0
        with self.database.begin() as connection:
            result = connection.execute(
                sa.text("DELETE FROM event_outbox WHERE event_id = :event_id"), [{"event_id": one} for one in ids]
            )
        return result.rowcount or 0

    def count(self) -> int:
        """Rows waiting to be published (claimed or not)."""
        with self.database.connect() as connection:
            return int(connection.execute(sa.text("SELECT count(*) FROM event_outbox")).scalar() or 0)

    def pending(self, limit: int = 100) -> list[dict[str, Any]]:
        """The waiting rows, oldest first (for operators and tests); claims are not changed."""
        with self.database.connect() as connection:
            rows = connection.execute(
                sa.text(
                    "SELECT event_id, routing_key, tenant_id, body, attempts, last_error FROM event_outbox "
                    "ORDER BY id LIMIT :limit"
                ),
                {"limit": limit},
            ).mappings()
            return [dict(row) for row in rows]

    def erase_tenant(self, tenant_id: str) -> int:
        """Delete a tenant's unpublished events (docs/contract.md, "Deletion"); returns how many."""
        with self.database.begin() as connection:
            result = connection.execute(
                sa.text("DELETE FROM event_outbox WHERE tenant_id = :tenant_id"), {"tenant_id": tenant_id}
            )
        self.database.checkpoint()  # erased events leave the WAL too (docs/contract.md, "Deletion")
        return result.rowcount or 0

    def close(self) -> None:
        self.database.dispose()


def erase_outbox_tenant(data_dir: str | os.PathLike, tenant_id: str) -> int | None:
    """
    Delete a tenant's unpublished events from the data dir's outbox (or the shared database's).

    :returns: How many rows were removed, or ``None`` when there is no outbox file (publishing never ran here)
        and, with a shared database, nothing was removed.
    """
    from components.stores.state import database_url

    path = Path(data_dir) / OUTBOX_FILE
    shared = database_url() is not None
    if not shared and not path.is_file():
        return None
    outbox = EventOutbox(path)
    try:
        removed = outbox.erase_tenant(tenant_id)
    finally:
        outbox.close()
    return None if shared and not removed else removed

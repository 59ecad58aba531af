"""
The service's records: a query log and an index event log in one SQLite file.

``query_log`` has a row for every ``/search``, ``/rag`` and chat-completion request, successful or not:
tenant, user, project, scope (``project`` when a project_id was given, else ``user`` when a
user_id was given, else ``tenant``), the API key id, the query text (or, with
``SOURCEBOUND_QUERY_LOG_TEXT=hash``, only an HMAC-SHA256 of it keyed by a secret kept in the
data dir, so equal queries still group together but the text cannot be recovered by guessing),
latency, result count, tokens used, action, confidence and the outcome (``ok`` or the error type).

``index_events`` has a row for every change to the index: ``index``, ``invalidate`` (with
``reason`` and ``cascade_id``), ``delete_tenant`` and ``flags`` (taint/verify), with the
document ids and the number of chunks affected.

The event consumer (``hayhooks_app.events``) keeps three more tables (docs/events.md): ``applied_events``
(each event handled, by id, with its outcome: what makes a redelivered event change nothing),
``event_positions`` (per document, the publish time of the newest event applied: an older one is
superseded) and ``event_attempts`` (deliveries of events not yet handled, bounding retries across crashes).

Deleting a tenant (:meth:`RecordStore.erase_tenant`) removes its rows from both tables and leaves one
``delete_tenant`` tombstone with counts only; deleting a user (:meth:`RecordStore.erase_user`) removes
the user's query-log rows (docs/contract.md "Deletion").

Rows older than ``SOURCEBOUND_RECORDS_RETENTION_DAYS`` (default 30; 0 keeps everything) are
pruned at start-up and every ``SOURCEBOUND_RECORDS_PRUNE_INTERVAL_SECONDS``.

Usage:

```python
from hayhooks_app.records import RecordStore

records = RecordStore("data/records.sqlite", query_text_mode="hash")
records.log_query(endpoint="search", tenant_id="acme", query="vpn", latency_ms=12.5, result_count=3)
records.log_event("invalidate", tenant_id="acme", document_ids=["doc-1"], reason="taint", cascade_id="c-1", chunks=4)
records.prune(retention_days=30)
```
"""

import hashlib
import hmac
import json
import os
import secrets
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

SCHEMA = """
CREATE TABLE IF NOT EXISTS query_log (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at REAL NOT NULL,
    endpoint TEXT NOT NULL,
    tenant_id TEXT,
    user_id TEXT,
    project_id TEXT,
    scope TEXT,
    key_id TEXT,
    query_text TEXT,
    query_hash TEXT,
    search_mode TEXT,
    model TEXT,
    latency_ms REAL NOT NULL,
    result_count INTEGER,
    tokens_used INTEGER,
    action TEXT,
    confidence INTEGER,
    outcome TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS query_log_created_at ON query_log (created_at);
CREATE INDEX IF NOT EXISTS query_log_tenant ON query_log (tenant_id, created_at);
CREATE TABLE IF NOT EXISTS index_events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at REAL NOT NULL,
    event TEXT NOT NULL,
    tenant_id TEXT,
    key_id TEXT,
    document_ids TEXT,
    reason TEXT,
    cascade_id TEXT,
    chunks INTEGER,
    details TEXT
);
CREATE INDEX IF NOT EXISTS index_events_created_at ON index_events (created_at);
CREATE INDEX IF NOT EXISTS index_events_tenant ON index_events (tenant_id, created_at);
CREATE TABLE IF NOT EXISTS applied_events (
    event_id TEXT PRIMARY KEY,
    created_at REAL NOT NULL,
    routing_key TEXT NOT NULL,
    tenant_id TEXT,
    document_ids TEXT,
    occurred_at INTEGER NOT NULL,
    outcome TEXT NOT NULL,
    details TEXT
);
CREATE INDEX IF NOT EXISTS applied_events_tenant ON applied_events (tenant_id, created_at);
CREATE TABLE IF NOT EXISTS event_positions (
    tenant_id TEXT NOT NULL,
    document_id TEXT NOT NULL,
    occurred_at INTEGER NOT NULL,
    event_id TEXT NOT NULL,
    PRIMARY KEY (tenant_id, document_id)
);
CREATE TABLE IF NOT EXISTS event_attempts (
    event_id TEXT PRIMARY KEY,
    attempts INTEGER NOT NULL,
    updated_at REAL NOT NULL
);
"""

QUERY_LOG_COLUMNS = (
    "endpoint", "tenant_id", "user_id", "project_id", "scope", "key_id", "query_text", "query_hash",
    "search_mode", "model", "latency_ms", "result_count", "tokens_used", "action", "confidence", "outcome",
)  # fmt: skip


class RecordStore:
    """
    Thread-safe writer and reader of the records database.

    :param path: SQLite file (created with its parent folder).
    :param query_text_mode: ``full`` keeps the query text; ``hash`` keeps only its keyed hash.
    """

    def __init__(self, path: str | os.PathLike, query_text_mode: str = "full"):
        if query_text_mode not in {"full", "hash"}:
            raise ValueError(f"query_text_mode must be 'full' or 'hash', got {query_text_mode!r}")
        self.path = Path(path)
        self.query_text_mode = query_text_mode
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        # One connection shared under a lock: writes are tiny and SQLite serialises them anyway.
        self._connection = sqlite3.connect(str(self.path), check_same_thread=False, timeout=10)
        self._connection.execute("PRAGMA journal_mode=WAL")
        self._connection.execute("PRAGMA synchronous=NORMAL")
        # Deleted rows are overwritten, not left in free pages: an erased query text is gone from the file.
        self._connection.execute("PRAGMA secure_delete=ON")
        self._connection.executescript(SCHEMA)
        self._connection.commit()
        self._hash_key = self._load_hash_key()

    def _load_hash_key(self) -> bytes:
        key_path = self.path.with_name(self.path.name + ".key")
        if not key_path.exists():
            fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as file:
                file.write(secrets.token_hex(32))
        return bytes.fromhex(key_path.read_text().strip())

    def query_hash(self, query: str) -> str:
        """HMAC-SHA256 of the query text under the data dir's secret."""
        return hmac.new(self._hash_key, query.encode("utf-8"), hashlib.sha256).hexdigest()

    def log_query(
        self,
        *,
        endpoint: str,
        query: str,
        latency_ms: float,
        tenant_id: str | None = None,
        user_id: str | None = None,
        project_id: str | None = None,
        scope: str | None = None,
        key_id: str | None = None,
        search_mode: str | None = None,
        model: str | None = None,
        result_count: int | None = None,
        tokens_used: int | None = None,
        action: str | None = None,
        confidence: int | None = None,
        outcome: str = "ok",
    ) -> None:
        """Record one search, RAG or chat request."""
        row = {
            "endpoint": endpoint,
            "tenant_id": tenant_id,
            "user_id": user_id,
            "project_id": project_id,
            "scope": scope,
            "key_id": key_id,
            "query_text": query if self.query_text_mode == "full" else None,
            "query_hash": self.query_hash(query),
            "search_mode": search_mode,
            "model": model,
            "latency_ms": round(float(latency_ms), 3),
            "result_count": result_count,
            "tokens_used": tokens_used,
            "action": action,
            "confidence": confidence,
            "outcome": outcome,
        }
        columns = ", ".join(("created_at", *QUERY_LOG_COLUMNS))
        placeholders = ", ".join("?" * (len(QUERY_LOG_COLUMNS) + 1))
        with self._lock:
            self._connection.execute(
                f"INSERT INTO query_log ({columns}) VALUES ({placeholders})",  # noqa: S608 - fixed column names
                (time.time(), *(row[column] for column in QUERY_LOG_COLUMNS)),
            )
            self._connection.commit()

    def log_event(
        self,
        event: str,
        *,
        tenant_id: str | None = None,
        key_id: str | None = None,
        document_ids: list[str] | None = None,
        reason: str | None = None,
        cascade_id: str | None = None,
        chunks: int | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        """Record one change to the index."""
        with self._lock:
            self._connection.execute(
                "INSERT INTO index_events "
                "(created_at, event, tenant_id, key_id, document_ids, reason, cascade_id, chunks, details)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    time.time(),
                    event,
                    tenant_id,
                    key_id,
                    json.dumps(document_ids) if document_ids is not None else None,
                    reason,
                    cascade_id,
                    chunks,
                    json.dumps(details, sort_keys=True, default=str) if details else None,
                ),
            )
            self._connection.commit()

    def prune(self, retention_days: int, now: float | None = None) -> dict[str, int]:
        """
        Delete records older than ``retention_days`` (0 keeps everything).

        :returns: Rows removed per table.
        """
        if retention_days <= 0:
            return {"query_log": 0, "index_events": 0}
        cutoff = (now if now is not None else time.time()) - retention_days * 86400
        with self._lock:
            removed = {}
            for table in ("query_log", "index_events"):
                cursor = self._connection.execute(f"DELETE FROM {table} WHERE created_at < ?", (cutoff,))  # noqa: S608
                removed[table] = cursor.rowcount
            self._connection.commit()
        return removed

    def erase_tenant(
        self, tenant_id: str, *, key_id: str | None = None, counts: dict[str, int] | None = None
    ) -> dict[str, int]:
        """
        Remove every query-log row and index event of a tenant, then write one ``delete_tenant`` tombstone:
        the tenant id, the key id, the removed chunk count and ``details`` with the counts; no document ids,
        query text or reason. One transaction.

        :param counts: What else was removed (chunks, tag owners, keys), stored in the tombstone.
        :returns: ``{"query_log_rows": n, "index_events": n}`` removed.
        """
        with self._lock, self._connection:
            removed = {
                "query_log_rows": self._connection.execute(
                    "DELETE FROM query_log WHERE tenant_id = ?", (tenant_id,)
                ).rowcount,
                # Consumed events are index changes too: counted with them (docs/events.md).
                "index_events": self._connection.execute(
                    "DELETE FROM index_events WHERE tenant_id = ?", (tenant_id,)
                ).rowcount
                + self._connection.execute("DELETE FROM applied_events WHERE tenant_id = ?", (tenant_id,)).rowcount,
            }
            self._connection.execute("DELETE FROM event_positions WHERE tenant_id = ?", (tenant_id,))
            details = {**(counts or {}), **removed}
            self._connection.execute(
                "INSERT INTO index_events (created_at, event, tenant_id, key_id, chunks, details) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (
                    time.time(),
                    "delete_tenant",
                    tenant_id,
                    key_id,
                    details.get("chunks"),
                    json.dumps(details, sort_keys=True),
                ),
            )
        self._truncate_wal()
        return removed

    def erase_user(
        self, user_id: str, tenant_id: str | None = None, *, counts: dict[str, int] | None = None
    ) -> dict[str, int]:
        """
        Remove a user's query-log rows (in one tenant, or all) and write a ``delete_user`` tombstone holding
        only counts (not the user id).

        :returns: ``{"query_log_rows": n}`` removed.
        """
        sql, params = "DELETE FROM query_log WHERE user_id = ?", (user_id,)
        if tenant_id is not None:
            sql, params = sql + " AND tenant_id = ?", (user_id, tenant_id)
        with self._lock, self._connection:
            removed = {"query_log_rows": self._connection.execute(sql, params).rowcount}
            details = {**(counts or {}), **removed}
            self._connection.execute(
                "INSERT INTO index_events (created_at, event, tenant_id, chunks, details) VALUES (?, ?, ?, ?, ?)",
                (time.time(), "delete_user", tenant_id, details.get("chunks"), json.dumps(details, sort_keys=True)),
            )
        self._truncate_wal()
        return removed

    # ------------------------------------------------------------------ consumed events (docs/events.md)

    def event_outcome(self, event_id: str) -> str | None:
        """The recorded outcome of an event already handled (``applied``, ``superseded``, ``dead_lettered``)."""
        with self._lock:
            row = self._connection.execute(
                "SELECT outcome FROM applied_events WHERE event_id = ?", (event_id,)
            ).fetchone()
        return row[0] if row else None

    def event_positions(self, tenant_id: str, document_ids: list[str]) -> dict[str, int]:
        """Per document, the publish time (microseconds) of the newest event applied to it."""
        with self._lock:
            rows = self._connection.execute(
                "SELECT document_id, occurred_at FROM event_positions WHERE tenant_id = ? AND document_id IN "
                f"({', '.join('?' * len(document_ids))})",  # noqa: S608 - placeholders only
                (tenant_id, *document_ids),
            ).fetchall()
        return {document_id: occurred_at for document_id, occurred_at in rows}

    def count_event_attempt(self, event_id: str) -> int:
        """Count one more delivery attempt of an event; returns the attempts so far, this one included."""
        with self._lock, self._connection:
            self._connection.execute(
                "INSERT INTO event_attempts (event_id, attempts, updated_at) VALUES (?, 1, ?) "
                "ON CONFLICT (event_id) DO UPDATE SET attempts = attempts + 1, updated_at = excluded.updated_at",
                (event_id, time.time()),
            )
            return int(
                self._connection.execute(
                    "SELECT attempts FROM event_attempts WHERE event_id = ?", (event_id,)
                ).fetchone()[0]
            )

    def record_events(self, events: list[dict[str, Any]]) -> None:
        """
        Record handled events in one transaction: the ``applied_events`` row, for ``applied`` ones the new
        per-document positions, and the end of their attempt count.

        :param events: ``{event_id, routing_key, tenant_id, document_ids, occurred_at, outcome, details?}`` each
            (``occurred_at`` in microseconds; ``document_ids`` those the event changed).
        """
        now = time.time()
        with self._lock, self._connection:
            for event in events:
                self._connection.execute(
                    "INSERT OR IGNORE INTO applied_events "
                    "(event_id, created_at, routing_key, tenant_id, document_ids, occurred_at, outcome, details) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        event["event_id"], now, event["routing_key"], event.get("tenant_id"),
                        json.dumps(event.get("document_ids") or []), int(event["occurred_at"]), event["outcome"],
                        json.dumps(event["details"], sort_keys=True, default=str) if event.get("details") else None,
                    ),
                )  # fmt: skip
                if event["outcome"] == "applied":
                    for document_id in event.get("document_ids") or []:
                        self._connection.execute(
                            "INSERT INTO event_positions (tenant_id, document_id, occurred_at, event_id) "
                            "VALUES (?, ?, ?, ?) ON CONFLICT (tenant_id, document_id) DO UPDATE SET "
                            "occurred_at = excluded.occurred_at, event_id = excluded.event_id "
                            "WHERE excluded.occurred_at >= event_positions.occurred_at",
                            (event["tenant_id"], document_id, int(event["occurred_at"]), event["event_id"]),
                        )
                self._connection.execute("DELETE FROM event_attempts WHERE event_id = ?", (event["event_id"],))

    def applied_events(self, limit: int = 100, tenant_id: str | None = None) -> list[dict[str, Any]]:
        """The newest handled events, newest first (``document_ids`` and ``details`` decoded)."""
        rows = self._select("applied_events", limit, tenant_id, order="created_at DESC, rowid DESC")
        for row in rows:
            for column in ("document_ids", "details"):
                if row[column] is not None:
                    row[column] = json.loads(row[column])
        return rows

    def _truncate_wal(self) -> None:
        """Copy the WAL into the database and empty it: its older frames still hold the erased rows' pages."""
        with self._lock:
            self._connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def queries(self, limit: int = 100, tenant_id: str | None = None) -> list[dict[str, Any]]:
        """The newest query-log rows, newest first."""
        return self._select("query_log", limit, tenant_id)

    def events(self, limit: int = 100, tenant_id: str | None = None) -> list[dict[str, Any]]:
        """The newest index events, newest first (``document_ids`` and ``details`` decoded)."""
        rows = self._select("index_events", limit, tenant_id)
        for row in rows:
            for column in ("document_ids", "details"):
                if row[column] is not None:
                    row[column] = json.loads(row[column])
        return rows

    def _select(self, table: str, limit: int, tenant_id: str | None, order: str = "id DESC") -> list[dict[str, Any]]:
        sql = f"SELECT * FROM {table}"  # noqa: S608 - table and order are constants
        params: tuple = ()
        if tenant_id is not None:
            sql += " WHERE tenant_id = ?"
            params = (tenant_id,)
        sql += f" ORDER BY {order} LIMIT ?"
        with self._lock:
            cursor = self._connection.execute(sql, (*params, limit))
            names = [description[0] for description in cursor.description]
            return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    def close(self) -> None:
        with self._lock:
            self._connection.close()

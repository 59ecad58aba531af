"""
The service's records: a query log and an index event log, in the state layer (:mod:`components.stores.state`):
``records.sqlite`` in the data dir by default, the shared database with ``SOURCEBOUND_DATABASE_URL``.

``query_log`` has a row for every ``/search``, ``/rag`` and chat-completion request, successful or not:
tenant, user, project, scope (``project`` when a project_id was given, else ``user`` when a
user_id was given, else ``tenant``), the API key id, the query text (or, with
``SOURCEBOUND_QUERY_LOG_TEXT=hash``, only an HMAC-SHA256 of it keyed by a secret, so equal queries still
group together but the text cannot be recovered by guessing), latency, result count, tokens used, action,
confidence and the outcome (``ok`` or the error type). The secret is ``SOURCEBOUND_QUERY_HASH_KEY`` when set,
else one row of the shared database (every replica hashes alike), else ``records.sqlite.key`` in the data dir.

The query log is written off the request path: :meth:`RecordStore.log_query` queues the row and a background
writer inserts queued rows in batches. The queue is bounded (``SOURCEBOUND_QUERY_LOG_QUEUE_ROWS``, default
10000): while the database is slow or down, rows past the bound are dropped and counted
(``rag_query_log_dropped_rows`` in ``/metrics``), never blocking a request. :meth:`RecordStore.close` (server
shutdown, SIGTERM) writes what is queued. Reads and erasures write the queue first, so they see every row
logged before them.

``index_events`` has a row for every change to the index: ``index``, ``invalidate`` (with
``reason`` and ``cascade_id``), ``delete_tenant`` and ``flags`` (taint/verify), with the
document ids and the number of chunks affected.

The event consumer (``hayhooks_app.events``) keeps three more tables here (docs/events.md): ``applied_events``
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
from components.stores.record_store import RecordStore

records = RecordStore("data/records.sqlite", query_text_mode="hash")
records.log_query(endpoint="search", tenant_id="acme", query="vpn", latency_ms=12.5, result_count=3)
records.log_event("invalidate", tenant_id="acme", document_ids=["doc-1"], reason="taint", cascade_id="c-1", chunks=4)
records.prune(retention_days=30)
```
"""

import hashlib
import hmac
import json
import logging
import os
import secrets
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from components.runtime.environment import env_number
from components.stores.state import StateDatabase, open_state

logger = logging.getLogger(__name__)

QUERY_LOG_COLUMNS = (
    "endpoint", "tenant_id", "user_id", "project_id", "scope", "key_id", "query_text", "query_hash",
    "search_mode", "model", "latency_ms", "result_count", "tokens_used", "action", "confidence", "outcome",
    "query_id", "tag",
)  # fmt: skip
_INSERT_QUERY = sa.text(
    f"INSERT INTO query_log (created_at, {', '.join(QUERY_LOG_COLUMNS)}) "  # noqa: S608 - fixed column names
    f"VALUES (:created_at, {', '.join(':' + column for column in QUERY_LOG_COLUMNS)})"
)
HASH_KEY_ENV = "SOURCEBOUND_QUERY_HASH_KEY"
QUEUE_ROWS_ENV = "SOURCEBOUND_QUERY_LOG_QUEUE_ROWS"
_SECRET_NAME = "query_hash_key"


class QueryLogWriter:
    """
    A bounded queue of query-log rows and the thread that writes them in batches.

    :param write: Inserts a batch of rows (one transaction); an exception keeps the batch and retries it.
    :param max_rows: Rows queued or being written at most; more are dropped and counted in :attr:`dropped`.
    :param batch_rows: Rows per insert at most.
    :param gather_s: How long the writer waits, after a row arrives, for more rows to write in the same transaction
        (a flush, a full batch or shutdown ends the wait). One row per transaction cost the writer ~0.5-1 ms of CPU
        per request, on the cores and the interpreter lock the requests use (bench/README.md, "Stage profile").
    """

    def __init__(
        self,
        write: Callable[[list[dict[str, Any]]], None],
        max_rows: int = 10_000,
        batch_rows: int = 1000,
        gather_s: float = 0.25,
    ):
        if max_rows < 1 or batch_rows < 1:
            raise ValueError(f"{QUEUE_ROWS_ENV} and the batch size must be >= 1, got {max_rows} and {batch_rows}.")
        if gather_s < 0:
            raise ValueError(f"gather_s must be >= 0, got {gather_s}.")
        self._write = write
        self.max_rows = max_rows
        self.batch_rows = batch_rows
        self.gather_s = gather_s
        self._flushing = 0
        self._queue: deque[dict[str, Any]] = deque()
        self._in_flight = 0
        self._condition = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closing = False
        self._deadline: float | None = None
        self.dropped = 0
        self.written = 0

    @property
    def queued(self) -> int:
        """Rows waiting or being written."""
        with self._condition:
            return len(self._queue) + self._in_flight

    def put(self, row: dict[str, Any]) -> bool:
        """Queue a row; ``False`` (and counted as dropped) when the queue is full or the writer closed."""
        with self._condition:
            if self._closing or len(self._queue) + self._in_flight >= self.max_rows:
                self.dropped += 1
                return False
            self._queue.append(row)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="query-log-writer", daemon=True)
                self._thread.start()
            self._condition.notify_all()
        return True

    def _run(self) -> None:
        backoff = 0.1
        while True:
            with self._condition:
                while not self._queue and not self._closing:
                    self._condition.wait()
                if self.gather_s:
                    self._condition.wait_for(
                        lambda: self._closing or self._flushing or len(self._queue) >= self.batch_rows, self.gather_s
                    )
                if not self._queue:
                    return
                batch = [self._queue.popleft() for _ in range(min(self.batch_rows, len(self._queue)))]
                self._in_flight = len(batch)
            while True:
                try:
                    self._write(batch)
                    backoff = 0.1
                    break
                except Exception as error:  # noqa: BLE001 - any database failure: keep the rows, retry
                    logger.warning("Query log write of %d rows failed (%s); retrying.", len(batch), error)
                    with self._condition:
                        if self._deadline is not None and time.monotonic() >= self._deadline:
                            self.dropped += len(batch)  # shutting down and the database is still failing
                            batch = []
                            break
                        self._condition.wait(backoff)
                    backoff = min(backoff * 2, 5.0)
            with self._condition:
                self.written += len(batch)
                self._in_flight = 0
                self._condition.notify_all()

    def flush(self, timeout: float = 30.0) -> bool:
        """Wait until every queued row is written; ``False`` if ``timeout`` passed first."""
        with self._condition:
            self._flushing += 1  # the writer stops gathering
            self._condition.notify_all()
            try:
                return self._condition.wait_for(lambda: not self._queue and not self._in_flight, timeout)
            finally:
                self._flushing -= 1

    def close(self, timeout: float = 30.0) -> None:
        """Write what is queued (for at most ``timeout`` seconds: the rest is counted as dropped), then stop."""
        with self._condition:
            self._closing = True
            self._deadline = time.monotonic() + timeout
            self._condition.notify_all()
            thread = self._thread
        if thread is not None:
            thread.join(timeout + 1.0)
        with self._condition:
            if self._queue:
                logger.warning("Query log: %d queued rows could not be written before shutdown.", len(self._queue))
                self.dropped += len(self._queue)
                self._queue.clear()


def _queue_rows_from_env() -> int:
    return env_number(QUEUE_ROWS_ENV, 10_000, minimum=1)


class RecordStore:
    """
    Thread-safe writer and reader of the records database.

    :param path: SQLite file (created with its parent folder) used when no shared database is configured.
    :param query_text_mode: ``full`` keeps the query text; ``hash`` keeps only its keyed hash.
    :param database_url: The shared database (default: ``SOURCEBOUND_DATABASE_URL``; none: ``path``).
    :param hash_key: The query-hash secret (default: ``SOURCEBOUND_QUERY_HASH_KEY``, then the database or file).
    :param queue_rows: Bound of the query-log queue (default: ``SOURCEBOUND_QUERY_LOG_QUEUE_ROWS`` or 10000).
    """

    def __init__(
        self,
        path: str | os.PathLike,
        query_text_mode: str = "full",
        database_url: str | None = None,
        hash_key: str | None = None,
        queue_rows: int | None = None,
    ):
        if query_text_mode not in {"full", "hash"}:
            raise ValueError(f"query_text_mode must be 'full' or 'hash', got {query_text_mode!r}")
        self.path = Path(path)
        self.query_text_mode = query_text_mode
        self.database: StateDatabase = open_state("records", self.path, database_url)
        self._hash_key = self._load_hash_key(hash_key if hash_key is not None else os.environ.get(HASH_KEY_ENV, ""))
        self.writer = QueryLogWriter(self._insert_queries, max_rows=queue_rows or _queue_rows_from_env())

    def _load_hash_key(self, configured: str) -> bytes:
        configured = configured.strip()
        if configured:
            if len(configured) < 32:
                raise ValueError(f"{HASH_KEY_ENV} must be at least 32 characters (e.g. `openssl rand -hex 32`).")
            return configured.encode("utf-8")
        key_path = self.path.with_name(self.path.name + ".key")
        if self.database.shared:
            # One secret for every replica: the first one to start stores it (a key file it had is kept).
            candidate = key_path.read_text().strip() if key_path.is_file() else secrets.token_hex(32)
            with self.database.begin(immediate=True) as connection:
                connection.execute(
                    sa.text(
                        "INSERT INTO state_secrets (name, value) VALUES (:name, :value) ON CONFLICT (name) DO NOTHING"
                    ),
                    {"name": _SECRET_NAME, "value": candidate},
                )
                value = connection.execute(
                    sa.text("SELECT value FROM state_secrets WHERE name = :name"), {"name": _SECRET_NAME}
                ).scalar_one()
            return bytes.fromhex(value)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if not key_path.exists():
            fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as file:
                file.write(secrets.token_hex(32))
        return bytes.fromhex(key_path.read_text().strip())

    def query_hash(self, query: str) -> str:
        """HMAC-SHA256 of the query text under the query-hash secret."""
        return hmac.new(self._hash_key, query.encode("utf-8"), hashlib.sha256).hexdigest()

    def _insert_queries(self, rows: list[dict[str, Any]]) -> None:
        with self.database.begin(immediate=True) as connection:
            connection.execute(_INSERT_QUERY, rows)

    @property
    def dropped_queries(self) -> int:
        """Query-log rows dropped because the queue was full (the database slow or down)."""
        return self.writer.dropped

    def flush(self, timeout: float = 30.0) -> bool:
        """Write every queued query-log row; ``False`` if ``timeout`` passed first."""
        return self.writer.flush(timeout)

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
        query_id: str | None = None,
        tag: str | None = None,
    ) -> None:
        """
        Queue one search, RAG or chat request for the query log (written in the background).

        :param query_id: The id the response carries (``POST /feedback`` names it).
        :param tag: An answer's primary context tag (what feedback and kept questions are filed under).
        """
        self.writer.put(
            {
                "created_at": time.time(),
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
                "query_id": query_id,
                "tag": tag,
            }
        )

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
        with self.database.begin(immediate=True) as connection:
            self._insert_event(
                connection,
                event=event,
                tenant_id=tenant_id,
                key_id=key_id,
                document_ids=json.dumps(document_ids) if document_ids is not None else None,
                reason=reason,
                cascade_id=cascade_id,
                chunks=chunks,
                details=json.dumps(details, sort_keys=True, default=str) if details else None,
            )

    @staticmethod
    def _insert_event(connection: sa.Connection, **values: Any) -> None:
        row = {"document_ids": None, "reason": None, "cascade_id": None, "key_id": None, **values}
        connection.execute(
            sa.text(
                "INSERT INTO index_events "
                "(created_at, event, tenant_id, key_id, document_ids, reason, cascade_id, chunks, details) VALUES "
                "(:created_at, :event, :tenant_id, :key_id, :document_ids, :reason, :cascade_id, :chunks, :details)"
            ),
            {"created_at": time.time(), **row},
        )

    def prune(self, retention_days: int, now: float | None = None) -> dict[str, int]:
        """
        Delete records older than ``retention_days`` (0 keeps everything).

        :returns: Rows removed per table.
        """
        if retention_days <= 0:
            return {"query_log": 0, "index_events": 0}
        cutoff = (now if now is not None else time.time()) - retention_days * 86400
        self.flush()
        removed = {}
        with self.database.begin(immediate=True) as connection:
            for table in ("query_log", "index_events"):
                removed[table] = connection.execute(
                    sa.text(f"DELETE FROM {table} WHERE created_at < :cutoff"),  # noqa: S608 - constant table
                    {"cutoff": cutoff},
                ).rowcount
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
        self.flush()  # a queued row of the tenant must not land after its erasure
        params = {"tenant_id": tenant_id}
        with self.database.begin(immediate=True) as connection:

            def delete(table: str) -> int:
                return connection.execute(
                    sa.text(f"DELETE FROM {table} WHERE tenant_id = :tenant_id"),  # noqa: S608 - constant table
                    params,
                ).rowcount

            removed = {
                "query_log_rows": delete("query_log"),
                # Consumed events are index changes too: counted with them (docs/events.md).
                "index_events": delete("index_events") + delete("applied_events"),
            }
            delete("event_positions")
            details = {**(counts or {}), **removed}
            self._insert_event(
                connection,
                event="delete_tenant",
                tenant_id=tenant_id,
                key_id=key_id,
                chunks=details.get("chunks"),
                details=json.dumps(details, sort_keys=True),
            )
        self.database.checkpoint()
        return removed

    def erase_user(
        self, user_id: str, tenant_id: str | None = None, *, counts: dict[str, int] | None = None
    ) -> dict[str, int]:
        """
        Remove a user's query-log rows (in one tenant, or all) and write a ``delete_user`` tombstone holding
        only counts (not the user id).

        :returns: ``{"query_log_rows": n}`` removed.
        """
        sql, params = "DELETE FROM query_log WHERE user_id = :user_id", {"user_id": user_id}
        if tenant_id is not None:
            sql, params = sql + " AND tenant_id = :tenant_id", {**params, "tenant_id": tenant_id}
        self.flush()
        with self.database.begin(immediate=True) as connection:
            removed = {"query_log_rows": connection.execute(sa.text(sql), params).rowcount}
            details = {**(counts or {}), **removed}
            self._insert_event(
                connection,
                event="delete_user",
                tenant_id=tenant_id,
                chunks=details.get("chunks"),
                details=json.dumps(details, sort_keys=True),
            )
        self.database.checkpoint()
        return removed

    # ------------------------------------------------------------------ consumed events (docs/events.md)

    def event_outcome(self, event_id: str) -> str | None:
        """The recorded outcome of an event already handled (``applied``, ``superseded``, ``dead_lettered``)."""
        with self.database.connect() as connection:
            return connection.execute(
                sa.text("SELECT outcome FROM applied_events WHERE event_id = :event_id"), {"event_id": event_id}
            ).scalar_one_or_none()

    def event_positions(self, tenant_id: str, document_ids: list[str]) -> dict[str, int]:
        """Per document, the publish time (microseconds) of the newest event applied to it."""
        if not document_ids:
            return {}
        statement = sa.text(
            "SELECT document_id, occurred_at FROM event_positions WHERE tenant_id = :tenant_id "
            "AND document_id IN :document_ids"
        ).bindparams(sa.bindparam("document_ids", expanding=True))
        with self.database.connect() as connection:
            rows = connection.execute(statement, {"tenant_id": tenant_id, "document_ids": list(document_ids)}).all()
        return {document_id: occurred_at for document_id, occurred_at in rows}

    def count_event_attempt(self, event_id: str) -> int:
        """Count one more delivery attempt of an event; returns the attempts so far, this one included."""
        with self.database.begin(immediate=True) as connection:
            connection.execute(
                sa.text(
                    "INSERT INTO event_attempts (event_id, attempts, updated_at) VALUES (:event_id, 1, :now) "
                    "ON CONFLICT (event_id) DO UPDATE SET attempts = event_attempts.attempts + 1, "
                    "updated_at = excluded.updated_at"
                ),
                {"event_id": event_id, "now": time.time()},
            )
            return int(
                connection.execute(
                    sa.text("SELECT attempts FROM event_attempts WHERE event_id = :event_id"), {"event_id": event_id}
                ).scalar_one()
            )

    def record_events(self, events: list[dict[str, Any]]) -> None:
        """
        Record handled events in one transaction: the ``applied_events`` row, for ``applied`` ones the new
        per-document positions, and the end of their attempt count.

        :param events: ``{event_id, routing_key, tenant_id, document_ids, occurred_at, outcome, details?}`` each
            (``occurred_at`` in microseconds; ``document_ids`` those the event changed).
        """
        now = time.time()
        with self.database.begin(immediate=True) as connection:
            for event in events:
                connection.execute(
                    sa.text(
                        "INSERT INTO applied_events "
                        "(event_id, created_at, routing_key, tenant_id, document_ids, occurred_at, outcome, details) "
                        "VALUES (:event_id, :created_at, :routing_key, :tenant_id, :document_ids, :occurred_at, "
                        ":outcome, :details) ON CONFLICT (event_id) DO NOTHING"
                    ),
                    {
                        "event_id": event["event_id"],
                        "created_at": now,
                        "routing_key": event["routing_key"],
                        "tenant_id": event.get("tenant_id"),
                        "document_ids": json.dumps(event.get("document_ids") or []),
                        "occurred_at": int(event["occurred_at"]),
                        "outcome": event["outcome"],
                        "details": json.dumps(event["details"], sort_keys=True, default=str)
                        if event.get("details")
                        else None,
                    },
                )
                if event["outcome"] == "applied":
                    for document_id in event.get("document_ids") or []:
                        connection.execute(
                            sa.text(
                                "INSERT INTO event_positions (tenant_id, document_id, occurred_at, event_id) "
                                "VALUES (:tenant_id, :document_id, :occurred_at, :event_id) "
                                "ON CONFLICT (tenant_id, document_id) DO UPDATE SET "
                                "occurred_at = excluded.occurred_at, event_id = excluded.event_id "
                                "WHERE excluded.occurred_at >= event_positions.occurred_at"
                            ),
                            {
                                "tenant_id": event["tenant_id"],
                                "document_id": document_id,
                                "occurred_at": int(event["occurred_at"]),
                                "event_id": event["event_id"],
                            },
                        )
                connection.execute(
                    sa.text("DELETE FROM event_attempts WHERE event_id = :event_id"), {"event_id": event["event_id"]}
                )

    def applied_events(self, limit: int = 100, tenant_id: str | None = None) -> list[dict[str, Any]]:
        """The newest handled events, newest first (``document_ids`` and ``details`` decoded)."""
        # SQLite's rowid is the insertion order; PostgreSQL has none, the id breaks ties there.
        order = "created_at DESC, rowid DESC" if self.database.is_sqlite else "created_at DESC, event_id DESC"
        rows = self._select("applied_events", limit, tenant_id, order=order)
        for row in rows:
            for column in ("document_ids", "details"):
                if row[column] is not None:
                    row[column] = json.loads(row[column])
        return rows

    def asked_query(
        self, query_id: str, *, tenant_id: str, user_id: str | None, key_id: str | None
    ) -> dict[str, Any] | None:
        """
        The query-log row of ``query_id`` when the same asker made it: the tenant, the user and the key all equal
        (``None`` equals ``None``), else ``None``, exactly as for an id that does not exist (docs/contract.md,
        "Feedback and knowledge gaps"). Queued rows are written first.
        """
        self.flush()
        params = {"query_id": query_id, "tenant_id": tenant_id, "user_id": user_id, "key_id": key_id}
        # A missing user or key is IS NULL in the SQL itself: PostgreSQL cannot type a NULL parameter in a test.
        same = " ".join(
            f"AND {column} IS NULL" if params[column] is None else f"AND {column} = :{column}"
            for column in ("user_id", "key_id")
        )
        statement = sa.text(
            "SELECT * FROM query_log WHERE query_id = :query_id AND tenant_id = :tenant_id "  # noqa: S608 - constants
            f"{same} ORDER BY id LIMIT 1"
        )
        with self.database.connect() as connection:
            row = connection.execute(statement, params).mappings().first()
        return dict(row) if row is not None else None

    def answer_quality(self, tenant_id: str, since: float) -> list[dict[str, Any]]:
        """
        Per tag, the tenant's RAG and chat answers since ``since`` (epoch seconds): ``answers``, ``cited``,
        ``routed`` and ``empty`` (routed with no context chunk), most answers first.
        """
        self.flush()
        statement = sa.text(
            "SELECT COALESCE(tag, '') AS tag, COUNT(*) AS answers, "
            "SUM(CASE WHEN action = 'CITE' THEN 1 ELSE 0 END) AS cited, "
            "SUM(CASE WHEN action = 'ROUTE' THEN 1 ELSE 0 END) AS routed, "
            "SUM(CASE WHEN action = 'ROUTE' AND result_count = 0 THEN 1 ELSE 0 END) AS empty "
            "FROM query_log WHERE tenant_id = :tenant_id AND created_at >= :since AND outcome = 'ok' "
            "AND endpoint IN ('rag', 'chat') AND action IS NOT NULL GROUP BY COALESCE(tag, '') "
            "ORDER BY answers DESC, tag"
        )
        with self.database.connect() as connection:
            rows = connection.execute(statement, {"tenant_id": tenant_id, "since": since}).mappings().all()
        return [{key: (int(value) if key != "tag" else value) for key, value in row.items()} for row in rows]

    def search_quality(self, tenant_id: str, since: float) -> dict[str, int]:
        """The tenant's successful searches and enrichments since ``since``: ``searches`` and ``empty`` (no result)."""
        self.flush()
        statement = sa.text(
            "SELECT COUNT(*) AS searches, SUM(CASE WHEN result_count = 0 THEN 1 ELSE 0 END) AS empty "
            "FROM query_log WHERE tenant_id = :tenant_id AND created_at >= :since AND outcome = 'ok' "
            "AND endpoint IN ('search', 'enrich')"
        )
        with self.database.connect() as connection:
            row = connection.execute(statement, {"tenant_id": tenant_id, "since": since}).mappings().one()
        return {"searches": int(row["searches"] or 0), "empty": int(row["empty"] or 0)}

    def queries(self, limit: int = 100, tenant_id: str | None = None) -> list[dict[str, Any]]:
        """The newest query-log rows, newest first (queued rows are written first)."""
        self.flush()
        # When asked, not when written: each replica's writer batches its rows, so ids follow flushes.
        return self._select("query_log", limit, tenant_id, order="created_at DESC, id DESC")

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
        params: dict[str, Any] = {"limit": limit}
        if tenant_id is not None:
            sql += " WHERE tenant_id = :tenant_id"
            params["tenant_id"] = tenant_id
        sql += f" ORDER BY {order} LIMIT :limit"
        with self.database.connect() as connection:
            return [dict(row) for row in connection.execute(sa.text(sql), params).mappings().all()]

    def close(self, timeout: float = 30.0) -> None:
        """Write the queued query-log rows (at most ``timeout`` seconds), then release the database."""
        self.writer.close(timeout)
        self.database.dispose()

"""
What source syncing remembers, in one SQLite file in the data directory (``sources.sqlite``).

* ``source_state``: per source, the last commit whose changes are fully in the index;
* ``source_files``: per source, each indexed file's path, blob id and ``document_id`` at that commit
  (what a full reconcile compares the head's tree with);
* ``deliveries``: webhook delivery ids already accepted (a redelivery is a no-op);
* ``jobs``: background sync jobs and their outcome (``GET /jobs/{id}``).

The commit and the file list advance together in one transaction, only after the index has the batch
(docs/contract.md, "Sources"): a crash before that leaves the old commit, so the next sync repeats the
same difference and converges.

Usage:

```python
from components.services.sync_state import SyncState

state = SyncState("data/sources.sqlite")
state.last_commit("handbook")  # None before the first sync
```
"""

import json
import sqlite3
import threading
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

SYNC_STATE_FILE = "sources.sqlite"
JOB_STATUSES = ("queued", "running", "succeeded", "failed", "abandoned")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS source_state (
    source TEXT PRIMARY KEY, commit_sha TEXT NOT NULL, updated_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS source_files (
    source TEXT NOT NULL, path TEXT NOT NULL, blob_sha TEXT NOT NULL, document_id TEXT NOT NULL,
    PRIMARY KEY (source, path)
);
CREATE TABLE IF NOT EXISTS deliveries (
    source TEXT NOT NULL, delivery_id TEXT NOT NULL, job_id TEXT, received_at TEXT NOT NULL,
    PRIMARY KEY (source, delivery_id)
);
CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY, source TEXT NOT NULL, tenant_id TEXT NOT NULL, trigger TEXT NOT NULL,
    status TEXT NOT NULL, created_at TEXT NOT NULL, started_at TEXT, finished_at TEXT,
    result TEXT, error TEXT
);
CREATE INDEX IF NOT EXISTS jobs_by_status ON jobs (status);
"""


def _now() -> str:
    return datetime.now(UTC).isoformat()


class SyncState:
    """
    The sync bookkeeping over one SQLite file; safe to share between threads.

    :param path: The SQLite file (created with its folder).
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.executescript(_SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def _query(self, sql: str, params: tuple = ()) -> list[tuple]:
        with self._lock:
            return self._db.execute(sql, params).fetchall()

    # ----------------------------------------------------------------- commits and files

    def last_commit(self, source: str) -> str | None:
        """The last commit fully indexed for ``source``, or ``None``."""
        rows = self._query("SELECT commit_sha FROM source_state WHERE source = ?", (source,))
        return rows[0][0] if rows else None

    def files(self, source: str) -> dict[str, tuple[str, str]]:
        """The indexed files of ``source``: ``path -> (blob_sha, document_id)``."""
        rows = self._query("SELECT path, blob_sha, document_id FROM source_files WHERE source = ?", (source,))
        return {path: (blob, document_id) for path, blob, document_id in rows}

    def advance(self, source: str, commit_sha: str, upserted: dict[str, tuple[str, str]], removed: list[str]) -> None:
        """
        Record that the index holds ``commit_sha``: files added or changed (``path -> (blob, document_id)``)
        and removed, with the commit, in one transaction.
        """
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.executemany(
                    "DELETE FROM source_files WHERE source = ? AND path = ?", [(source, path) for path in removed]
                )
                self._db.executemany(
                    "INSERT OR REPLACE INTO source_files (source, path, blob_sha, document_id) VALUES (?, ?, ?, ?)",
                    [(source, path, blob, document_id) for path, (blob, document_id) in upserted.items()],
                )
                self._db.execute(
                    "INSERT OR REPLACE INTO source_state (source, commit_sha, updated_at) VALUES (?, ?, ?)",
                    (source, commit_sha, _now()),
                )
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    # ----------------------------------------------------------------- deliveries

    def record_delivery(self, source: str, delivery_id: str, job_id: str | None) -> str | None:
        """
        Remember a webhook delivery. A delivery seen before is not recorded again.

        :returns: ``None`` for a new delivery; for a repeat, the job id it got the first time (or ``""``).
        """
        with self._lock:
            try:
                self._db.execute(
                    "INSERT INTO deliveries (source, delivery_id, job_id, received_at) VALUES (?, ?, ?, ?)",
                    (source, delivery_id, job_id, _now()),
                )
                return None
            except sqlite3.IntegrityError:
                row = self._db.execute(
                    "SELECT job_id FROM deliveries WHERE source = ? AND delivery_id = ?", (source, delivery_id)
                ).fetchone()
                return (row[0] or "") if row else ""

    def forget_delivery(self, source: str, delivery_id: str) -> None:
        """Drop a delivery whose job could not be queued, so GitHub's redelivery is accepted."""
        self._query("DELETE FROM deliveries WHERE source = ? AND delivery_id = ?", (source, delivery_id))

    def prune(self, older_than_days: int) -> dict[str, int]:
        """Remove deliveries and finished jobs older than ``older_than_days`` (0 keeps everything)."""
        if older_than_days <= 0:
            return {"deliveries": 0, "jobs": 0}
        cutoff = (datetime.now(UTC) - timedelta(days=older_than_days)).isoformat()
        with self._lock:
            deliveries = self._db.execute("DELETE FROM deliveries WHERE received_at < ?", (cutoff,)).rowcount
            jobs = self._db.execute(
                "DELETE FROM jobs WHERE created_at < ? AND status NOT IN ('queued', 'running')", (cutoff,)
            ).rowcount
        return {"deliveries": deliveries, "jobs": jobs}

    def set_delivery_job(self, source: str, delivery_id: str, job_id: str) -> None:
        self._query(
            "UPDATE deliveries SET job_id = ? WHERE source = ? AND delivery_id = ?", (job_id, source, delivery_id)
        )

    # ----------------------------------------------------------------- jobs

    def create_job(self, source: str, tenant_id: str, trigger: str) -> str:
        """A new ``queued`` job; returns its id."""
        job_id = f"job-{uuid.uuid4().hex}"
        self._query(
            "INSERT INTO jobs (id, source, tenant_id, trigger, status, created_at) VALUES (?, ?, ?, ?, 'queued', ?)",
            (job_id, source, tenant_id, trigger, _now()),
        )
        return job_id

    def start_job(self, job_id: str) -> None:
        self._query("UPDATE jobs SET status = 'running', started_at = ? WHERE id = ?", (_now(), job_id))

    def finish_job(self, job_id: str, result: dict[str, Any] | None = None, error: str | None = None) -> None:
        status = "failed" if error is not None else "succeeded"
        self._query(
            "UPDATE jobs SET status = ?, finished_at = ?, result = ?, error = ? WHERE id = ?",
            (status, _now(), json.dumps(result) if result is not None else None, error, job_id),
        )

    def abandon_unfinished(self) -> int:
        """Jobs a previous process left queued or running (it stopped): marked ``abandoned``."""
        with self._lock:
            cursor = self._db.execute(
                "UPDATE jobs SET status = 'abandoned', finished_at = ? WHERE status IN ('queued', 'running')",
                (_now(),),
            )
            return cursor.rowcount

    def job(self, job_id: str) -> dict[str, Any] | None:
        """A job as a dict, or ``None``."""
        rows = self._query(
            "SELECT id, source, tenant_id, trigger, status, created_at, started_at, finished_at, result, error "
            "FROM jobs WHERE id = ?",
            (job_id,),
        )
        if not rows:
            return None
        keys = ("job_id", "source", "tenant_id", "trigger", "status", "created_at", "started_at", "finished_at")
        row = rows[0]
        job = dict(zip(keys, row[:8], strict=True))
        job["result"] = json.loads(row[8]) if row[8] else None
        job["error"] = row[9]
        return job

    def count_jobs(self, *statuses: str) -> int:
        marks = ", ".join("?" for _ in statuses)
        return int(self._query(f"SELECT COUNT(*) FROM jobs WHERE status IN ({marks})", statuses)[0][0])  # noqa: S608

"""
What source syncing remembers, in the state layer (:mod:`components.stores.state`): ``sources.sqlite`` in the
data directory by default, the shared database with ``SOURCEBOUND_DATABASE_URL`` (replicas share it).

* ``source_state``: per source, the last commit whose changes are fully in the index;
* ``source_files``: per source, each indexed file's path, blob id and ``document_id`` at that commit
  (what a full reconcile compares the head's tree with);
* ``web_pages``: per web source, each indexed page's canonical URL, ``document_id``, validators (``ETag``,
  ``Last-Modified``) and links, and how many crawls in a row missed it (:class:`WebPage`);
* ``deliveries``: webhook delivery ids already accepted (a redelivery is a no-op; the primary key decides, so a
  delivery reaching two replicas is accepted by one);
* ``jobs``: sync jobs and their outcome (``GET /jobs/{id}``). At most one job per source is queued; a worker
  claims a job atomically (:meth:`SyncState.claim_next_job`; ``FOR UPDATE SKIP LOCKED`` on PostgreSQL), never
  while another job of the same source runs.

The commit and the file list advance together in one transaction, only after the index has the batch
(docs/contract.md, "Sources"): a crash before that leaves the old commit, so the next sync repeats the
same difference and converges.

Usage:

```python
from components.stores.sync_state import SyncState

state = SyncState("data/sources.sqlite")
state.last_commit("handbook")  # None before the first sync
```
"""

import json
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from components.stores.state import StateDatabase, open_state

SYNC_STATE_FILE = "sources.sqlite"
JOB_STATUSES = ("queued", "running", "succeeded", "failed", "abandoned")
_JOB_COLUMNS = "id, source, tenant_id, trigger, status, created_at, started_at, finished_at, result, error"


def _now() -> str:
    return datetime.now(UTC).isoformat()


@dataclass(frozen=True)
class WebPage:
    """A page of a web source as the last crawl left it (``links``: its outgoing links, absolute)."""

    url: str
    document_id: str
    etag: str | None = None
    last_modified: str | None = None
    links: tuple[str, ...] = field(default=(), repr=False)
    missed: int = 0


class SyncState:
    """
    The sync bookkeeping; safe to share between threads, processes and replicas.

    :param path: The SQLite file (created with its folder) when no shared database is configured.
    :param database_url: The shared database (default: ``SOURCEBOUND_DATABASE_URL``; none: ``path``).
    """

    def __init__(self, path: str | Path, database_url: str | None = None) -> None:
        self.path = Path(path)
        self.database: StateDatabase = open_state("sources", self.path, database_url)

    @property
    def shared(self) -> bool:
        """Whether replicas share this state (a shared database)."""
        return self.database.shared

    def close(self) -> None:
        self.database.dispose()

    def _query(self, sql: str, params: dict[str, Any] | None = None) -> list[tuple]:
        with self.database.begin() as connection:
            result = connection.execute(sa.text(sql), params or {})
            return [tuple(row) for row in result.all()] if result.returns_rows else []

    # ----------------------------------------------------------------- commits and files

    def last_commit(self, source: str) -> str | None:
        """The last commit fully indexed for ``source``, or ``None``."""
        rows = self._query("SELECT commit_sha FROM source_state WHERE source = :source", {"source": source})
        return rows[0][0] if rows else None

    def files(self, source: str) -> dict[str, tuple[str, str]]:
        """The indexed files of ``source``: ``path -> (blob_sha, document_id)``."""
        rows = self._query(
            "SELECT path, blob_sha, document_id FROM source_files WHERE source = :source", {"source": source}
        )
        return {path: (blob, document_id) for path, blob, document_id in rows}

    def advance(self, source: str, commit_sha: str, upserted: dict[str, tuple[str, str]], removed: list[str]) -> None:
        """
        Record that the index holds ``commit_sha``: files added or changed (``path -> (blob, document_id)``)
        and removed, with the commit, in one transaction.

        :raises sqlalchemy.exc.DBAPIError: If the database refuses a row (nothing is changed).
        """
        with self.database.begin(immediate=True) as connection:
            if removed:
                connection.execute(
                    sa.text("DELETE FROM source_files WHERE source = :source AND path = :path"),
                    [{"source": source, "path": path} for path in removed],
                )
            if upserted:
                connection.execute(
                    sa.text(
                        "INSERT INTO source_files (source, path, blob_sha, document_id) "
                        "VALUES (:source, :path, :blob, :document_id) ON CONFLICT (source, path) DO UPDATE SET "
                        "blob_sha = excluded.blob_sha, document_id = excluded.document_id"
                    ),
                    [
                        {"source": source, "path": path, "blob": blob, "document_id": document_id}
                        for path, (blob, document_id) in upserted.items()
                    ],
                )
            connection.execute(
                sa.text(
                    "INSERT INTO source_state (source, commit_sha, updated_at) VALUES (:source, :commit, :now) "
                    "ON CONFLICT (source) DO UPDATE SET commit_sha = excluded.commit_sha, "
                    "updated_at = excluded.updated_at"
                ),
                {"source": source, "commit": commit_sha, "now": _now()},
            )

    # ----------------------------------------------------------------- web pages

    def web_pages(self, source: str) -> dict[str, WebPage]:
        """The pages of web source ``source`` by canonical URL."""
        rows = self._query(
            "SELECT url, document_id, etag, last_modified, links, missed FROM web_pages WHERE source = :source",
            {"source": source},
        )
        return {
            url: WebPage(url, document_id, etag, last_modified, tuple(json.loads(links or "[]")), int(missed))
            for url, document_id, etag, last_modified, links, missed in rows
        }

    def record_web_pages(self, source: str, pages: list[WebPage], removed: list[str] = ()) -> None:
        """
        Record pages the index now holds (or that the crawl reached: ``missed`` is as given) and forget ``removed``,
        in one transaction; called only after the index has them (or no longer has them).
        """
        if not pages and not removed:
            return
        now = _now()
        with self.database.begin(immediate=True) as connection:
            if removed:
                connection.execute(
                    sa.text("DELETE FROM web_pages WHERE source = :source AND url = :url"),
                    [{"source": source, "url": url} for url in removed],
                )
            if pages:
                connection.execute(
                    sa.text(
                        "INSERT INTO web_pages (source, url, document_id, etag, last_modified, links, missed, "
                        "crawled_at) VALUES (:source, :url, :document_id, :etag, :last_modified, :links, :missed, "
                        ":now) ON CONFLICT (source, url) DO UPDATE SET document_id = excluded.document_id, "
                        "etag = excluded.etag, last_modified = excluded.last_modified, links = excluded.links, "
                        "missed = excluded.missed, crawled_at = excluded.crawled_at"
                    ),
                    [
                        {"source": source, "url": page.url, "document_id": page.document_id, "etag": page.etag,
                         "last_modified": page.last_modified, "links": json.dumps(list(page.links)),
                         "missed": page.missed, "now": now}
                        for page in pages
                    ],
                )  # fmt: skip

    # ----------------------------------------------------------------- deliveries

    def tenant_sources(self, tenant_id: str) -> set[str]:
        """The sources whose sync jobs ran for ``tenant_id`` (a source the configuration no longer declares too)."""
        rows = self._query("SELECT DISTINCT source FROM jobs WHERE tenant_id = :tenant_id", {"tenant_id": tenant_id})
        return {row[0] for row in rows}

    def known_sources(self) -> set[str]:
        """Every source this state remembers anything of (a commit, files, crawled pages, deliveries or jobs)."""
        rows = self._query(
            "SELECT source FROM source_state UNION SELECT source FROM source_files UNION SELECT source FROM web_pages "
            "UNION SELECT source FROM deliveries UNION SELECT source FROM jobs"
        )
        return {row[0] for row in rows}

    def erase_sources(self, sources: Iterable[str]) -> int:
        """
        Remove everything remembered about ``sources``: last commit, file list, crawled pages, deliveries and jobs
        (a deleted tenant's, docs/contract.md "Deletion"). Freed pages are zeroed and the write-ahead log emptied.

        :returns: How many rows went.
        """
        names = sorted(set(sources))
        removed = 0
        if not names:
            return 0
        with self.database.begin() as connection:
            for table in ("source_files", "source_state", "web_pages", "deliveries", "jobs"):
                for name in names:
                    removed += connection.execute(
                        sa.text(f"DELETE FROM {table} WHERE source = :source"),  # noqa: S608 - constant table
                        {"source": name},
                    ).rowcount
        self.database.checkpoint()
        return removed

    def record_delivery(self, source: str, delivery_id: str, job_id: str | None) -> str | None:
        """
        Remember a webhook delivery. A delivery seen before (by any replica) is not recorded again.

        :returns: ``None`` for a new delivery; for a repeat, the job id it got the first time (or ``""``).
        """
        params = {"source": source, "delivery_id": delivery_id, "job_id": job_id, "now": _now()}
        with self.database.begin(immediate=True) as connection:
            inserted = connection.execute(
                sa.text(
                    "INSERT INTO deliveries (source, delivery_id, job_id, received_at) "
                    "VALUES (:source, :delivery_id, :job_id, :now) ON CONFLICT (source, delivery_id) DO NOTHING"
                ),
                params,
            ).rowcount
            if inserted:
                return None
            row = connection.execute(
                sa.text("SELECT job_id FROM deliveries WHERE source = :source AND delivery_id = :delivery_id"), params
            ).first()
        return (row[0] or "") if row else ""

    def forget_delivery(self, source: str, delivery_id: str) -> None:
        """Drop a delivery whose job could not be queued, so GitHub's redelivery is accepted."""
        self._query(
            "DELETE FROM deliveries WHERE source = :source AND delivery_id = :delivery_id",
            {"source": source, "delivery_id": delivery_id},
        )

    def prune(self, older_than_days: int) -> dict[str, int]:
        """Remove deliveries and finished jobs older than ``older_than_days`` (0 keeps everything)."""
        if older_than_days <= 0:
            return {"deliveries": 0, "jobs": 0}
        cutoff = {"cutoff": (datetime.now(UTC) - timedelta(days=older_than_days)).isoformat()}
        with self.database.begin(immediate=True) as connection:
            deliveries = connection.execute(
                sa.text("DELETE FROM deliveries WHERE received_at < :cutoff"), cutoff
            ).rowcount
            jobs = connection.execute(
                sa.text("DELETE FROM jobs WHERE created_at < :cutoff AND status NOT IN ('queued', 'running')"), cutoff
            ).rowcount
        return {"deliveries": deliveries, "jobs": jobs}

    def set_delivery_job(self, source: str, delivery_id: str, job_id: str) -> None:
        self._query(
            "UPDATE deliveries SET job_id = :job_id WHERE source = :source AND delivery_id = :delivery_id",
            {"job_id": job_id, "source": source, "delivery_id": delivery_id},
        )

    # ----------------------------------------------------------------- jobs

    def create_job(self, source: str, tenant_id: str, trigger: str, full: bool = False) -> str:
        """
        Queue a job; returns its id, or the id of the job already queued for ``source`` (one queued job per
        source, whichever replica queued it; asking for a full reconcile makes that job a full one).
        """
        job_id = f"job-{uuid.uuid4().hex}"
        params = {"id": job_id, "source": source, "tenant_id": tenant_id, "trigger": trigger,
                  "now": _now(), "full": int(full)}  # fmt: skip
        with self.database.begin(immediate=True) as connection:
            inserted = connection.execute(
                sa.text(
                    "INSERT INTO jobs (id, source, tenant_id, trigger, status, created_at, full_sync) "
                    "VALUES (:id, :source, :tenant_id, :trigger, 'queued', :now, :full) "
                    "ON CONFLICT (source) WHERE status = 'queued' DO NOTHING"
                ),
                params,
            ).rowcount
            if inserted:
                return job_id
            queued = connection.execute(
                sa.text("SELECT id FROM jobs WHERE source = :source AND status = 'queued'"), params
            ).scalar_one()
            if full:
                connection.execute(sa.text("UPDATE jobs SET full_sync = 1 WHERE id = :id"), {"id": queued})
        return queued

    def start_job(self, job_id: str, worker: str | None = None) -> bool:
        """Claim a queued job for ``worker``; ``False`` when another worker claimed it first."""
        return bool(self._claim(job_id, worker))

    def _claim(self, job_id: str, worker: str | None, connection: sa.Connection | None = None) -> int:
        statement = sa.text(
            "UPDATE jobs SET status = 'running', started_at = :now, worker = :worker "
            "WHERE id = :id AND status = 'queued'"
        )
        params = {"now": _now(), "worker": worker, "id": job_id}
        if connection is not None:
            return connection.execute(statement, params).rowcount
        with self.database.begin(immediate=True) as own:
            return own.execute(statement, params).rowcount

    def claim_next_job(self, worker: str, sources: list[str] | None = None) -> dict[str, Any] | None:
        """
        Claim the oldest queued job (of ``sources``, if given) whose source has no running job.

        :returns: ``{"job_id", "source", "full"}``, or ``None`` when there is nothing to run.
        """
        where = "status = 'queued' AND source NOT IN (SELECT source FROM jobs WHERE status = 'running')"
        statement = sa.text(
            f"SELECT id, source, full_sync FROM jobs WHERE {where}"  # noqa: S608 - constant SQL
            + (" AND source IN :sources" if sources is not None else "")
            + " ORDER BY created_at, id LIMIT 1"
            # PostgreSQL: a claimer skips rows another claimer holds, instead of waiting for them.
            + (" FOR UPDATE SKIP LOCKED" if self.database.is_postgresql else "")
        )
        params: dict[str, Any] = {}
        if sources is not None:
            if not sources:
                return None
            statement = statement.bindparams(sa.bindparam("sources", expanding=True))
            params["sources"] = list(sources)
        with self.database.begin(immediate=True) as connection:
            row = connection.execute(statement, params).first()
            if row is None or not self._claim(row[0], worker, connection):
                return None
        return {"job_id": row[0], "source": row[1], "full": bool(row[2])}

    def finish_job(self, job_id: str, result: dict[str, Any] | None = None, error: str | None = None) -> None:
        status = "failed" if error is not None else "succeeded"
        self._query(
            "UPDATE jobs SET status = :status, finished_at = :now, result = :result, error = :error WHERE id = :id",
            {"status": status, "now": _now(), "result": json.dumps(result) if result is not None else None,
             "error": error, "id": job_id},
        )  # fmt: skip

    def abandon_unfinished(self, worker: str | None = None) -> int:
        """
        Jobs a stopped process left unfinished, marked ``abandoned``: every queued or running job of a data
        directory's own file; with a shared database, only the jobs ``worker`` (this replica, restarted) was
        running, since the other replicas' jobs are alive and queued ones wait for any replica.
        """
        if self.shared:
            sql = (
                "UPDATE jobs SET status = 'abandoned', finished_at = :now WHERE status = 'running' AND worker = :worker"
            )
        else:
            sql = "UPDATE jobs SET status = 'abandoned', finished_at = :now WHERE status IN ('queued', 'running')"
        with self.database.begin(immediate=True) as connection:
            return connection.execute(sa.text(sql), {"now": _now(), "worker": worker}).rowcount

    def job(self, job_id: str) -> dict[str, Any] | None:
        """A job as a dict, or ``None``."""
        rows = self._query(f"SELECT {_JOB_COLUMNS} FROM jobs WHERE id = :id", {"id": job_id})  # noqa: S608
        if not rows:
            return None
        keys = ("job_id", "source", "tenant_id", "trigger", "status", "created_at", "started_at", "finished_at")
        row = rows[0]
        job = dict(zip(keys, row[:8], strict=True))
        job["result"] = json.loads(row[8]) if row[8] else None
        job["error"] = row[9]
        return job

    def recent_jobs(self, source: str, limit: int = 10) -> list[dict[str, Any]]:
        """A source's newest jobs first, as :meth:`job` shows each."""
        rows = self._query(
            "SELECT id FROM jobs WHERE source = :source ORDER BY created_at DESC, id DESC LIMIT :limit",
            {"source": source, "limit": limit},
        )
        return [job for (job_id,) in rows if (job := self.job(job_id)) is not None]

    def count_jobs(self, *statuses: str) -> int:
        statement = sa.text("SELECT COUNT(*) FROM jobs WHERE status IN :statuses").bindparams(
            sa.bindparam("statuses", expanding=True)
        )
        with self.database.connect() as connection:
            return int(connection.execute(statement, {"statuses": list(statuses)}).scalar_one())

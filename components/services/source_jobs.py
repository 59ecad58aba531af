"""
Declared sources in the server: background sync jobs, the reconcile interval, and the queue figures.

``SourceJobs`` owns one worker thread that runs sync jobs one at a time through
``components.services.source_sync.SourceSyncer``, which indexes through the request service it is given
(``components.services.request_service``: its write lock, metrics and index events), so a sync never opens
the store a second time. A job is queued by a webhook (``hayhooks_app.webhooks``), by ``POST /webhooks/sync``
or by the reconcile timer; a second request for a source whose job has not started yet gets that job's id
(the job syncs to the head it finds when it starts, so it covers both pushes).

Jobs, webhook deliveries and the last indexed commit per source live in ``DATA_DIR/sources.sqlite``
or, with ``SOURCEBOUND_DATABASE_URL``, the shared database (``components.stores.sync_state``); the mirrors
in ``DATA_DIR/sources/``. The worker claims queued jobs from that table (one at a time, never two of one
source at once), woken by a local submit or every ``POLL_SECONDS``, so with replicas a job queued on one
may run on any. Jobs a stopped process left unfinished are marked ``abandoned`` at start-up (with a shared
database: only those this replica was running); the next reconcile catches up.

Settings (docs/configuration.md, "Sources"): ``SOURCEBOUND_SOURCES`` (the YAML file; no file, no
sources), ``SOURCEBOUND_RECONCILE_INTERVAL`` (seconds between reconciles, 0 turns it off).

Usage:

```python
from components.services.source_jobs import SourceJobs, declared_sources

sources, interval = declared_sources()     # None when SOURCEBOUND_SOURCES is unset
jobs = SourceJobs(sources, interval, data_dir, index_streams=requests.index_streams,
                  invalidate=requests.invalidate, max_file_bytes=indexing.max_file_bytes, retention_days=30)
job_id = jobs.submit("handbook", "webhook")
jobs.queue_status()                        # {'jobs_pending': 1, 'files_pending': 0, 'chunks_pending': 0}
```
"""

import asyncio
import logging
import math
import os
import queue
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from components.core.url_credentials import redact_url_credentials
from components.runtime.environment import env_int
from components.services.source_config import SourceConfig, load_sources
from components.services.source_sync import SourceSyncer
from components.stores.sync_state import SYNC_STATE_FILE, SyncState

logger = logging.getLogger(__name__)

DEFAULT_RECONCILE_INTERVAL_S = 3600
# The queue's chunk figure is estimated from the bytes still to index: about 4 bytes a token and the
# indexing pipeline's default chunk of 180 tokens (the real count is known only once chunked).
BYTES_PER_CHUNK_ESTIMATE = 4 * 180
# How often an idle worker looks for jobs another replica queued (shared database only).
POLL_SECONDS = 5.0


def declared_sources() -> tuple[dict[str, SourceConfig], int] | None:
    """
    The sources of ``SOURCEBOUND_SOURCES`` and the reconcile interval (``SOURCEBOUND_RECONCILE_INTERVAL``), or
    ``None`` when no sources file is configured.

    :raises SourceConfigError: If the sources file is invalid.
    """
    path = os.environ.get("SOURCEBOUND_SOURCES", "").strip()
    if not path:
        return None
    interval = env_int("SOURCEBOUND_RECONCILE_INTERVAL", DEFAULT_RECONCILE_INTERVAL_S, 0)
    return load_sources(path), interval


def _without_userinfo(url: str) -> str:
    """A source address as shown to operators: any ``user:password@`` removed (it may hold a token)."""
    parts = urlsplit(url)
    if not parts.netloc or "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))


class SourceJobs:
    """
    Sync jobs for declared sources, run one at a time by a worker thread.

    :param sources: The declared sources by name.
    :param reconcile_interval_s: Seconds between reconciles of every source (0: never).
    :param data_dir: Holds ``sources.sqlite`` and the mirrors (``sources/``).
    :param index_streams: Indexes files given as ``ByteStream`` objects (the request service's, so a sync takes
        the write lock and leaves index events like any other change).
    :param invalidate: ``invalidate(tenant_id, document_ids, reason=...)``: removes documents from the index.
    :param max_file_bytes: The largest file the indexing service takes.
    :param retention_days: Deliveries and finished jobs older than this are pruned at each reconcile.
    """

    def __init__(
        self,
        sources: dict[str, SourceConfig],
        reconcile_interval_s: int,
        data_dir: Path,
        *,
        index_streams: Callable[[list[Any]], dict[str, Any]],
        invalidate: Callable[..., dict[str, Any]],
        max_file_bytes: int,
        retention_days: int,
    ) -> None:
        self.sources = sources
        self.reconcile_interval_s = reconcile_interval_s
        self.retention_days = retention_days
        data_dir = Path(data_dir)
        self.state = SyncState(data_dir / SYNC_STATE_FILE)
        self.syncer = SourceSyncer(
            sources,
            self.state,
            data_dir / "sources",
            index_streams=index_streams,
            invalidate=lambda tenant, ids, reason: invalidate(tenant, ids, reason=reason),
            max_file_bytes=max_file_bytes,
            progress=self._progress,
        )
        self._queue: queue.Queue[bool | None] = queue.Queue()  # wake-ups; None stops the worker
        # Stable across restarts of this replica (its data dir), distinct between replicas on one host.
        self.worker_id = os.environ.get("SOURCEBOUND_REPLICA_ID", "").strip() or f"{socket.gethostname()}:{data_dir}"
        self._pending = {"files": 0, "bytes": 0}
        self._worker: threading.Thread | None = None
        self._reconciler: asyncio.Task | None = None

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Mark jobs a stopped process left unfinished, start the worker and (if set) the reconcile timer."""
        abandoned = self.state.abandon_unfinished(self.worker_id)
        if abandoned:
            logger.warning("%d sync job(s) of a previous run did not finish; the reconcile catches up.", abandoned)
        self._worker = threading.Thread(target=self._work, name="source-sync", daemon=True)
        self._worker.start()
        if self.reconcile_interval_s > 0:
            self._reconciler = asyncio.get_running_loop().create_task(self._reconcile_periodically())

    def stop(self) -> None:
        if self._reconciler is not None:
            self._reconciler.cancel()
        self._queue.put(None)
        if self._worker is not None:
            self._worker.join(timeout=60)
        self.state.close()

    async def _reconcile_periodically(self) -> None:
        while True:
            await asyncio.to_thread(self.reconcile)
            # Deliveries and finished jobs are kept as long as the other records.
            await asyncio.to_thread(self.state.prune, self.retention_days)
            await asyncio.sleep(self.reconcile_interval_s)

    # ------------------------------------------------------------------ jobs

    def reconcile(self) -> list[str]:
        """
        Queue a full reconcile of every git source (missed pushes applied, files gone invalidated) and a re-crawl
        of every web source (conditional requests: unchanged pages cost a 304).
        """
        return [self.submit(name, "reconcile", full=config.type == "git") for name, config in self.sources.items()]

    def submit(self, source: str, trigger: str, full: bool = False) -> str:
        """
        Queue a sync of ``source``; returns the job id (an existing not-yet-started job's, if any).

        :raises SourceNotFoundError: If no such source is declared.
        """
        config = self.syncer.source(source)
        job_id = self.state.create_job(source, config.tenant_id, trigger, full=full)
        self._queue.put(True)
        return job_id

    def run_and_wait(self, source: str, trigger: str, full: bool = False, poll_s: float = 0.2) -> dict[str, Any]:
        """
        Queue a sync of ``source`` and wait until it has run (``sourcebound sync`` beside a running server: the
        job takes its turn behind a running one, never beside it).

        :returns: The finished job (``status``, ``result``, ``error``).
        :raises SourceNotFoundError: If no such source is declared.
        """
        job_id = self.submit(source, trigger, full=full)
        while True:
            job = self.state.job(job_id)
            if job is None or job["status"] not in ("queued", "running"):
                return job or {"job_id": job_id, "status": "abandoned", "result": None, "error": "the job was pruned"}
            time.sleep(poll_s)

    def _work(self) -> None:
        while True:
            try:
                if self._queue.get(timeout=POLL_SECONDS if self.state.shared else None) is None:
                    return
            except queue.Empty:
                pass
            while (claimed := self.state.claim_next_job(self.worker_id, list(self.sources))) is not None:
                self._run(claimed["job_id"], claimed["source"], claimed["full"])

    def _run(self, job_id: str, source: str, full: bool) -> None:
        try:
            report = self.syncer.sync(source, full=full)
        except Exception as error:  # recorded on the job; the commit did not advance, so it repeats
            logger.exception("Sync job %s of source %s failed.", job_id, source)
            # The job's error is shown by GET /jobs/{id}: never a clone URL's credentials (contract, Sources).
            self.state.finish_job(job_id, error=redact_url_credentials(f"{type(error).__name__}: {error}"))
        else:
            if report["indexed"] or report["removed"] or report["rejected"]:
                logger.info(
                    "Source %s synced to %s (%s): %d indexed, %d removed, %d rejected.",
                    source, (report.get("to_commit") or "the site")[:12], report["mode"], len(report["indexed"]),
                    len(report["removed"]), len(report["rejected"]),
                )  # fmt: skip
            self.state.finish_job(job_id, result=report)
        finally:
            self._pending.update(files=0, bytes=0)

    def _progress(self, files_left: int, bytes_left: int) -> None:
        self._pending.update(files=files_left, bytes=bytes_left)

    def job(self, job_id: str) -> dict[str, Any] | None:
        return self.state.job(job_id)

    def sources_of(self, tenant_id: str, jobs: int = 5) -> list[dict[str, Any]]:
        """
        A tenant's declared sources for its operators: name, type, address (without credentials), branch, tags,
        the last indexed commit, the files indexed and the newest ``jobs`` sync jobs.
        """
        listed = []
        for name, source in sorted(self.sources.items()):
            if source.tenant_id != tenant_id:
                continue
            listed.append(
                {
                    "name": name,
                    "type": source.type,
                    "url": _without_userinfo(source.url),
                    "branch": source.branch,
                    "tags": list(source.tags),
                    "last_commit": self.state.last_commit(name),
                    "files": len(self.state.files(name)),
                    "jobs": self.state.recent_jobs(name, jobs),
                }
            )
        return listed

    def queue_status(self) -> dict[str, int]:
        """``embedding_queue`` of ``/health``: jobs queued or running, files and (estimated) chunks still to index."""
        pending_bytes = self._pending["bytes"]
        return {
            "jobs_pending": self.state.count_jobs("queued", "running"),
            "files_pending": self._pending["files"],
            "chunks_pending": math.ceil(pending_bytes / BYTES_PER_CHUNK_ESTIMATE) if pending_bytes else 0,
        }

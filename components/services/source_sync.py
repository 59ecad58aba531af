"""
Keeps the index in step with declared sources (docs/contract.md, "Sources"): git sources here, ``web`` sources
through ``components.services.web_source_sync`` (a crawl), with the same locks, batches and callbacks.

One sync of a git source:

1. fetch the branch into the source's mirror (``DATA_DIR/sources/<name>.git``);
2. if the last indexed commit is in the new head's history, take the difference
   (``git diff -M``): added and modified files are indexed, deleted files invalidated, a rename
   both; otherwise (first sync, a force-push that rewrote history, or ``full=True``) compare the
   head's whole tree with the files recorded at the last sync: a full reconcile;
3. index the files in batches through the caller's ``index_streams`` (the indexing service, so
   validation, change detection and atomic per-document writes are the usual ones), then invalidate
   the removed ones through ``invalidate``;
4. only then advance the last indexed commit and the file list, in one transaction.

A crash anywhere before step 4 leaves the old commit: the next sync repeats the same difference,
re-indexing what is already there is a no-op of the change detector, and invalidating what is
already gone removes nothing, so it converges. The same push twice does nothing (head unchanged).

A file the indexing service refuses (empty, binary, over the size limit) is reported as ``rejected``
and left out of the index rather than blocking the source forever.

Each document's ``document_id`` derives from the source's name and the path, its ``source_uri`` is
the file's page at the commit, ``source_updated_at`` the commit time and ``commit_sha`` the commit.

Usage:

```python
from components.services.source_sync import SourceSyncer

syncer = SourceSyncer(sources, state, "data/sources", index_streams=service.index_streams,
                      invalidate=lambda tenant, ids, reason: invalidate(store, tenant, ids, reason=reason))
syncer.sync("handbook")  # {'mode': 'incremental', 'indexed': [...], 'removed': [...], ...}
```
"""

import logging
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from haystack.dataclasses import ByteStream

from components.core.document_identity import IndexingValidationError, source_type_for_path
from components.core.errors import SourceboundError
from components.services.git_mirror import GitMirror, web_file_url
from components.services.source_config import SourceConfig, SyncError
from components.services.web_source_sync import WebSourceSync
from components.stores.sync_state import SyncState

__all__ = ["SourceNotFoundError", "SourceSyncer", "SyncError"]

logger = logging.getLogger(__name__)

DEFAULT_BATCH_FILES = 64
INVALIDATE_REASON = "source_removed"


class SourceNotFoundError(SourceboundError, KeyError):
    """No source of that name is declared in the sources file."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown source"


class SourceSyncer:
    """
    Syncs declared sources into the index.

    :param sources: The declared sources by name.
    :param state: The sync bookkeeping.
    :param mirrors_dir: Where the bare mirrors live.
    :param index_streams: Indexes a list of ``ByteStream`` (the indexing service's or the container's
        ``index_streams``); returns ``{"documents": [{"document_id", "status", ...}], "chunks_written"}``.
    :param invalidate: ``invalidate(tenant_id, document_ids, reason)`` removes documents from the index.
    :param max_file_bytes: Files larger than this are rejected without being read into the pipeline.
    :param batch_files: Files per indexing call (the write lock is released between calls).
    :param progress: Called with ``(files_left, bytes_left)`` before each batch and with ``(0, 0)`` at the end.
    """

    def __init__(
        self,
        sources: Mapping[str, SourceConfig],
        state: SyncState,
        mirrors_dir: str | Path,
        index_streams: Callable[[list[ByteStream]], dict[str, Any]],
        invalidate: Callable[[str, list[str], str], Any],
        max_file_bytes: int = 50 * 1024 * 1024,
        batch_files: int = DEFAULT_BATCH_FILES,
        progress: Callable[[int, int], None] | None = None,
    ) -> None:
        if batch_files < 1:
            raise ValueError(f"batch_files must be positive, got {batch_files}")
        self.sources = dict(sources)
        self.state = state
        self.mirrors_dir = Path(mirrors_dir)
        self.index_streams = index_streams
        self.invalidate = invalidate
        self.max_file_bytes = max_file_bytes
        self.batch_files = batch_files
        self.progress = progress
        self._locks: dict[str, threading.Lock] = {name: threading.Lock() for name in self.sources}
        self.web = WebSourceSync(
            state, index_streams, invalidate, max_file_bytes=max_file_bytes, batch_pages=batch_files, progress=progress
        )

    def source(self, name: str) -> SourceConfig:
        """The declared source ``name``; :class:`SourceNotFoundError` when there is none."""
        try:
            return self.sources[name]
        except KeyError:
            raise SourceNotFoundError(
                f"No source named {name!r}; declared: {', '.join(self.sources) or 'none'} (SOURCEBOUND_SOURCES)."
            ) from None

    def mirror(self, source: SourceConfig) -> GitMirror:
        return GitMirror(self.mirrors_dir / f"{source.name}.git", source.url, source.branch)

    def indexable(self, source: SourceConfig, path: str) -> bool:
        """A path the source indexes: it passes the globs and has a supported file type (git sources)."""
        return source.type == "git" and source.matches(path) and source_type_for_path(path) is not None

    def sync_all(self, full: bool = False) -> dict[str, dict[str, Any]]:
        """Sync every source; a failing source is reported (``error``) and the others still run."""
        reports = {}
        for name in self.sources:
            try:
                reports[name] = self.sync(name, full=full)
            except Exception as error:  # one broken remote must not stop the reconcile of the others
                logger.exception("Syncing source %s failed.", name)
                reports[name] = {"source": name, "error": str(error)}
        return reports

    def sync(self, name: str, full: bool = False) -> dict[str, Any]:
        """
        Bring the index up to the head of source ``name`` (see the module docstring); a ``web`` source is crawled
        (``WebSourceSync.sync``, whose report it returns).

        :param full: Compare the whole tree even when the last commit is an ancestor of the head; for a web
            source, request every page unconditionally.
        :returns: ``{"source", "mode" (unchanged | incremental | full), "from_commit", "to_commit", "indexed",
            "unchanged", "removed", "rejected": {path: reason}, "chunks_written", "latency_ms"}``.
        :raises SourceNotFoundError: If no such source is declared.
        :raises SyncError: If the pipeline reported a failed document (nothing advanced).
        :raises GitError: If the remote cannot be fetched.
        """
        source = self.source(name)
        if source.type == "web":
            with self._locks[name]:
                return self.web.sync(source, full=full)
        with self._locks[name]:
            started = time.perf_counter()
            mirror = self.mirror(source)
            head = mirror.fetch()
            last = self.state.last_commit(name)
            report: dict[str, Any] = {
                "source": name, "from_commit": last, "to_commit": head, "indexed": [], "unchanged": [],
                "removed": [], "rejected": {}, "chunks_written": 0,
            }  # fmt: skip
            if last == head and not full:
                report["mode"] = "unchanged"
            else:
                known = self.state.files(name)
                if last and not full and mirror.is_ancestor(last, head):
                    report["mode"] = "incremental"
                    wanted, removed = self._difference(source, mirror, last, head, known)
                else:
                    report["mode"] = "full"
                    tree = {path: blob for path, blob in mirror.tree(head).items() if self.indexable(source, path)}
                    wanted = {path: blob for path, blob in tree.items() if known.get(path, ("",))[0] != blob}
                    removed = sorted(path for path in known if path not in tree)
                self._apply(source, mirror, head, wanted, removed, known, report)
            report["latency_ms"] = round((time.perf_counter() - started) * 1000, 1)
            return report

    def _difference(self, source, mirror, last, head, known) -> tuple[dict[str, str], list[str]]:
        wanted: dict[str, str] = {}
        removed: list[str] = []
        for change in mirror.changes(last, head):
            if change.old_path and change.status == "R":
                removed.append(change.old_path)
            if change.blob and self.indexable(source, change.path):
                wanted[change.path] = change.blob
            elif change.path in known or change.status == "D":
                removed.append(change.path)  # deleted, or now a type or path the source no longer indexes
        return wanted, sorted(set(removed) - set(wanted))

    def _stream(self, source: SourceConfig, path: str, data: bytes, head: str, updated_at: str) -> ByteStream:
        meta = {
            **source.access_meta(),
            "document_id": source.document_id(path),
            "file_path": path,  # names the file in errors and gives the type; not stored (the URI is)
            "source_uri": web_file_url(source.url, head, path, source.web_url),
            "source_updated_at": updated_at,
            "commit_sha": head,
            "source_name": source.name,
            "source_path": path,
        }
        return ByteStream(data=data, meta=meta)

    def _apply(self, source, mirror, head, wanted, removed, known, report) -> None:
        updated_at = mirror.commit_time(head)
        upserted: dict[str, tuple[str, str]] = {}
        rejected: dict[str, str] = report["rejected"]
        paths = sorted(wanted)
        sizes = mirror.blob_sizes(list(wanted.values())) if self.progress else {}
        for start in range(0, len(paths), self.batch_files):
            batch = paths[start : start + self.batch_files]
            if self.progress:
                self.progress(len(paths) - start, sum(sizes.get(wanted[path], 0) for path in paths[start:]))
            contents = mirror.read_blobs([wanted[path] for path in batch])
            streams = []
            for path in batch:
                data = contents[wanted[path]]
                if len(data) > self.max_file_bytes:
                    rejected[path] = f"{len(data)} bytes is over the size limit of {self.max_file_bytes} bytes"
                    continue
                streams.append(self._stream(source, path, data, head, updated_at))
            result = self._index_with_rejections(streams, rejected)
            report["chunks_written"] += int(result.get("chunks_written") or 0)
            logger.info("Source %s: indexed %d/%d files.", source.name, min(start + len(batch), len(paths)), len(paths))
            failed = [entry for entry in result.get("documents", []) if entry.get("status") == "error"]
            if failed:
                raise SyncError(
                    f"Source {source.name}: {len(failed)} document(s) failed to index "
                    f"({failed[0].get('document_id')}: {failed[0].get('error')}); the sync will repeat."
                )
            statuses = {entry.get("document_id"): entry.get("status") for entry in result.get("documents", [])}
            for stream in streams:
                path = stream.meta["source_path"]
                if path in rejected:
                    continue
                status = statuses.get(stream.meta["document_id"], "indexed")
                report["unchanged" if status == "unchanged" else "indexed"].append(path)
                upserted[path] = (wanted[path], stream.meta["document_id"])
        # A rejected file that was indexed before leaves the index too: what it says now cannot be indexed.
        gone = sorted(set(removed) | {path for path in rejected if path in known})
        ids = [known[path][1] if path in known else source.document_id(path) for path in gone]
        if ids:
            self.invalidate(source.tenant_id, ids, INVALIDATE_REASON)
        report["removed"] = sorted(removed)
        self.state.advance(source.name, head, upserted, gone)
        if self.progress:
            self.progress(0, 0)

    def _index_with_rejections(self, streams: list[ByteStream], rejected: dict[str, str]) -> dict[str, Any]:
        """Index the streams; files the service refuses are set aside (``rejected``) and the rest retried."""
        while streams:
            try:
                return self.index_streams(streams)
            except IndexingValidationError as error:
                refused = {}
                for stream in streams:
                    labels = (f"{stream.meta['source_path']}: ", f"{stream.meta['document_id']}: ")
                    reasons = [problem for problem in error.problems if problem.startswith(labels)]
                    if reasons:
                        refused[stream.meta["source_path"]] = "; ".join(reasons)
                if not refused:
                    raise
                rejected.update(refused)
                streams = [stream for stream in streams if stream.meta["source_path"] not in refused]
        return {"documents": [], "chunks_written": 0}

"""
Keeps the index in step with a ``web`` source (docs/sources.md, "Web sources"; docs/contract.md, "Sources").

One sync of a web source is a crawl (``components.services.web_crawler``) whose pages go through the indexing
pipeline in batches while the crawl goes on:

* a fetched page is indexed like an upload: its converter by ``Content-Type`` (HTML, PDF, Office, ...), its
  ``document_id`` derived from the source's name and its canonical URL (A5: URL variants are one document),
  ``source_uri`` the canonical URL, ``document_name`` the page's title (else the URL's last segment),
  ``source_updated_at`` its ``Last-Modified``, and meta ``etag``, ``last_modified``, ``source_name``;
* an unchanged page costs a conditional request (304) and no indexing; a page whose content is unchanged
  although the server sent it again is skipped by the change detector;
* a page the pipeline refuses (no readable text, undecodable, over the size limits) is ``rejected``;
* a page that is gone (404/410) or refused (robots.txt, a redirect away, another type, ``noindex``, out of the
  domains) leaves the index at once; one the crawl did not reach within its limits leaves it after two crawls in
  a row missed it; a page that failed in a way that may pass (a timeout, a 5xx) stays as it was.

After each batch is in the index, its pages are recorded (``web_pages`` of the sync state: validators and links
for the next crawl), so a crash loses at most the batch in flight; the pages the crawl missed are counted, and
removed, only when the crawl completed.

The report: ``{"source", "type": "web", "mode" (crawl | full), "pages_requested", "indexed", "unchanged",
"not_modified", "removed": {url: reason}, "rejected": {url: reason}, "skipped": {url: reason},
"skipped_more", "chunks_written", "latency_ms"}``.

Usage:

```python
from components.services.web_source_sync import WebSourceSync

web = WebSourceSync(state, index_streams=service.index_streams, invalidate=invalidate_function)
web.sync(sources["docs-site"])   # {'mode': 'crawl', 'indexed': [...], 'not_modified': 12, ...}
```
"""

import logging
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import urlsplit

import httpx
from haystack.dataclasses import ByteStream

from components.core.crawl_rules import http_date_iso
from components.core.document_identity import IndexingValidationError
from components.services.source_config import SourceConfig, SyncError
from components.services.web_crawler import CrawlEvent, WebCrawler
from components.stores.sync_state import SyncState, WebPage

logger = logging.getLogger(__name__)

DEFAULT_BATCH_PAGES = 64
# Crawls in a row that may miss a page before it leaves the index (docs/contract.md, "Sources").
MISSED_CRAWLS_LIMIT = 2
# The report lists at most this many skipped URLs (an external link on every page would list the web).
MAX_REPORTED_SKIPS = 1000
INVALIDATE_REASON = "source_removed"


def page_name(url: str) -> str:
    """A page's fallback title: the last segment of its path, else its host."""
    parts = urlsplit(url)
    return PurePosixPath(parts.path).name or parts.hostname or url


class WebSourceSync:
    """
    Syncs ``web`` sources (see the module docstring).

    :param state: The sync bookkeeping (``web_pages``).
    :param index_streams: Indexes a list of ``ByteStream``; returns ``{"documents": [...], "chunks_written"}``.
    :param invalidate: ``invalidate(tenant_id, document_ids, reason)`` removes documents from the index.
    :param max_file_bytes: The largest body the indexing service takes (a source's ``max_page_bytes`` above it is
        lowered to it).
    :param batch_pages: Pages per indexing call.
    :param progress: Called with ``(pages_waiting, bytes_waiting)`` before each batch and ``(0, 0)`` at the end.
    :param transport: An ``httpx`` transport instead of the network (tests).
    """

    def __init__(
        self,
        state: SyncState,
        index_streams: Callable[[list[ByteStream]], dict[str, Any]],
        invalidate: Callable[[str, list[str], str], Any],
        max_file_bytes: int = 50 * 1024 * 1024,
        batch_pages: int = DEFAULT_BATCH_PAGES,
        progress: Callable[[int, int], None] | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        if batch_pages < 1:
            raise ValueError(f"batch_pages must be positive, got {batch_pages}")
        self.state = state
        self.index_streams = index_streams
        self.invalidate = invalidate
        self.max_file_bytes = max_file_bytes
        self.batch_pages = batch_pages
        self.progress = progress
        self.transport = transport

    def sync(self, source: SourceConfig, full: bool = False) -> dict[str, Any]:
        """
        Crawl ``source`` and bring the index in step with it.

        :param full: Request every page unconditionally (no ``If-None-Match`` / ``If-Modified-Since``).
        :returns: The report (module docstring).
        :raises CrawlError: If the crawl itself broke (pages already indexed stay recorded).
        """
        if source.crawl is None:
            raise ValueError(f"source {source.name!r} is not a web source")
        started = time.perf_counter()
        settings = source.crawl
        if settings.max_page_bytes > self.max_file_bytes:
            settings = replace(settings, max_page_bytes=self.max_file_bytes)
        known = self.state.web_pages(source.name)
        run = _SyncRun(self, source, known)
        report = run.report
        report["mode"] = "full" if full else "crawl"
        for event in WebCrawler(settings, transport=self.transport).crawl(known, conditional=not full):
            run.take(event)
        run.flush()
        run.finish()
        report["latency_ms"] = round((time.perf_counter() - started) * 1000, 1)
        return report


class _SyncRun:
    """The bookkeeping of one web sync: batches, reached pages, removals, the report."""

    def __init__(self, owner: WebSourceSync, source: SourceConfig, known: dict[str, WebPage]) -> None:
        self.owner = owner
        self.source = source
        self.known = known
        self.reached: set[str] = set()
        self.batch: list[CrawlEvent] = []
        self.touched: list[WebPage] = []  # 304s: recorded as reached with the next batch
        self.doomed: dict[str, str] = {}  # known pages to remove: url -> reason
        self.complete = False
        self.report: dict[str, Any] = {
            "source": source.name, "type": "web", "pages_requested": 0, "indexed": [], "unchanged": [],
            "not_modified": 0, "removed": {}, "rejected": {}, "skipped": {}, "skipped_more": 0, "chunks_written": 0,
        }  # fmt: skip

    def skip(self, url: str, reason: str) -> None:
        skipped = self.report["skipped"]
        if url in skipped or len(skipped) < MAX_REPORTED_SKIPS:
            skipped[url] = reason
        else:
            self.report["skipped_more"] += 1

    def take(self, event: CrawlEvent) -> None:
        outcome, url = event.outcome, event.url
        if outcome == "done":
            self.complete = True
            self.report["pages_requested"] = event.requested
            return
        if outcome in ("page", "not_modified", "failed"):
            self.reached.add(url)
            self.report["skipped"].pop(url, None)
        if outcome == "page":
            self.batch.append(event)
            if len(self.batch) >= self.owner.batch_pages:
                self.flush()
        elif outcome == "not_modified":
            self.report["not_modified"] += 1
            self.report["unchanged"].append(url)
            page = self.known.get(url)
            if page is not None:
                self.touched.append(WebPage(url, page.document_id, page.etag, page.last_modified, page.links, 0))
        elif outcome == "failed":
            self.skip(url, event.reason + ("; the indexed page is kept" if url in self.known else ""))
        elif outcome == "refused":
            if url in self.known:
                self.doomed[url] = event.reason  # reported under "removed"
            else:
                self.skip(url, event.reason)
        elif outcome == "left_out" and url not in self.reached:
            self.skip(url, event.reason)

    def _stream(self, event: CrawlEvent) -> ByteStream:
        source = self.source
        meta = {
            **source.access_meta(),
            "document_id": source.document_id(event.url),
            "file_path": event.url,  # names the page in errors (and gives a fallback title); not stored
            "source_type": event.source_type,
            "source_uri": event.url,
            "source_updated_at": http_date_iso(event.last_modified),
            "source_name": source.name,
            "etag": event.etag,
            "last_modified": event.last_modified,
        }
        if event.source_type != "html":
            meta["document_name"] = page_name(event.url)  # HTML pages are named by their <title>
        return ByteStream(data=event.data, meta=meta)

    def flush(self) -> None:
        batch, self.batch = self.batch, []
        if not batch:
            if self.touched:
                self.owner.state.record_web_pages(self.source.name, self.touched)
                self.touched = []
            return
        if self.owner.progress:
            self.owner.progress(len(batch), sum(len(event.data) for event in batch))
        streams = [self._stream(event) for event in batch]
        rejected: dict[str, str] = self.report["rejected"]
        result = self._index(streams, rejected)
        self.report["chunks_written"] += int(result.get("chunks_written") or 0)
        statuses = {entry.get("document_id"): entry.get("status") for entry in result.get("documents", [])}
        failed = [entry for entry in result.get("documents", []) if entry.get("status") == "error"]
        if failed:
            raise SyncError(
                f"Source {self.source.name}: {len(failed)} page(s) failed to index "
                f"({failed[0].get('document_id')}: {failed[0].get('error')}); the next crawl repeats them."
            )
        recorded = list(self.touched)
        self.touched = []
        for event, stream in zip(batch, streams, strict=True):
            if event.url in rejected:
                if event.url in self.known:
                    self.doomed[event.url] = f"rejected: {rejected[event.url]}"
                continue
            status = statuses.get(stream.meta["document_id"], "indexed")
            self.report["unchanged" if status == "unchanged" else "indexed"].append(event.url)
            recorded.append(
                WebPage(event.url, stream.meta["document_id"], event.etag, event.last_modified, event.links, 0)
            )
        self.owner.state.record_web_pages(self.source.name, recorded)
        logger.info("Source %s: %d page(s) indexed so far.", self.source.name, len(self.report["indexed"]))

    def _index(self, streams: list[ByteStream], rejected: dict[str, str]) -> dict[str, Any]:
        """Index the streams; pages the service refuses are set aside (``rejected``) and the rest retried."""
        while streams:
            try:
                return self.owner.index_streams(streams)
            except IndexingValidationError as error:
                refused = {}
                for stream in streams:
                    labels = (f"{stream.meta['file_path']}: ", f"{stream.meta['document_id']}: ")
                    reasons = [
                        problem[len(label) :]
                        for problem in error.problems
                        for label in labels
                        if problem.startswith(label)
                    ]
                    if reasons:
                        refused[stream.meta["file_path"]] = "; ".join(reasons)
                if not refused:
                    raise
                rejected.update(refused)
                streams = [stream for stream in streams if stream.meta["file_path"] not in refused]
        return {"documents": [], "chunks_written": 0}

    def finish(self) -> None:
        """Remove what left the site; count (and after two crawls remove) the pages this complete crawl missed."""
        still: list[WebPage] = []
        if self.complete:
            for url, page in self.known.items():
                if url in self.reached or url in self.doomed:
                    continue
                missed = page.missed + 1
                if missed >= MISSED_CRAWLS_LIMIT:
                    self.doomed[url] = f"not reached within the limits in {missed} crawls in a row"
                else:
                    still.append(WebPage(url, page.document_id, page.etag, page.last_modified, page.links, missed))
        removed = sorted(self.doomed)
        if removed:
            ids = [self.known[url].document_id for url in removed]
            self.owner.invalidate(self.source.tenant_id, ids, INVALIDATE_REASON)
        self.owner.state.record_web_pages(self.source.name, still, removed)
        self.report["removed"] = {url: self.doomed[url] for url in removed}
        if self.owner.progress:
            self.owner.progress(0, 0)

"""
Prometheus metrics served at ``GET /metrics`` (names after the DATS RAG service specification).

| metric | type | labels | what |
|---|---|---|---|
| ``rag_query_latency_seconds`` | histogram | endpoint, mode | search / RAG / chat latency by search mode |
| ``rag_query_results_count`` | histogram | endpoint, mode | results (search) or context chunks used (RAG) |
| ``rag_query_tokens_used`` | histogram | endpoint | context tokens used |
| ``rag_queries_total`` | counter | endpoint, outcome | requests by outcome (``ok`` or the error type) |
| ``rag_answers_total`` | counter | action | RAG answers by action (CITE / ROUTE) |
| ``rag_embedding_latency_seconds`` | histogram | | indexing request latency (embedding dominates) |
| ``rag_embedding_chunks_created_total`` | counter | | chunks written |
| ``rag_embedding_documents_total`` | counter | status | documents by indexing status |
| ``rag_invalidation_count_total`` | counter | reason | documents invalidated |
| ``rag_invalidation_chunks_removed_total`` | counter | reason | chunks removed by invalidation |
| ``rag_tenant_deletions_total`` / ``rag_tenant_chunks_removed_total`` | counter | | tenant deletes |
| ``rag_flag_updates_total`` | counter | flag | taint / verify changes (documents) |
| ``rag_index_size_total`` | gauge | | points in the store, read at scrape time |
| ``rag_events_total`` | counter | routing_key, outcome | RabbitMQ events handled (docs/events.md) |
| ``rag_query_log_dropped_rows`` | gauge | | query-log rows dropped since start (queue full: database slow or down) |
| ``rag_query_log_queued_rows`` | gauge | | query-log rows waiting for the background writer |

Per-tenant or per-project labels are left out on purpose (unbounded cardinality); the query
log has those. Invalidation ``reason`` is kept as a label only when it is a short slug
(``[a-z0-9_-]{1,32}``), otherwise it is counted as ``other``.
"""

import re
from collections.abc import Callable

from prometheus_client import CONTENT_TYPE_LATEST as PROMETHEUS_CONTENT_TYPE
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, disable_created_metrics, generate_latest
from prometheus_client.process_collector import ProcessCollector

from components.services.request_observer import RequestObserver
from hayhooks_app.errors import map_exception

__all__ = ["PROMETHEUS_CONTENT_TYPE", "Metrics", "MetricsObserver", "metrics"]

# The `_created` series double the output and nothing here reads them.
disable_created_metrics()

_REASON_SLUG = re.compile(r"[a-z0-9_-]{1,32}")
_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
_COUNT_BUCKETS = (0, 1, 2, 3, 5, 10, 20, 50, 100)
_TOKEN_BUCKETS = (0, 100, 250, 500, 1000, 2000, 3000, 5000, 10000)


def reason_label(reason: str | None) -> str:
    """A bounded label value for an invalidation reason."""
    if not reason:
        return "unspecified"
    reason = reason.strip().lower()
    return reason if _REASON_SLUG.fullmatch(reason) else "other"


class Metrics:
    """The application's metrics in their own registry (so imports and tests never collide)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        ProcessCollector(registry=self.registry)
        r = self.registry
        self.query_latency = Histogram(
            "rag_query_latency_seconds", "Query latency by endpoint and search mode.", ["endpoint", "mode"],
            buckets=_LATENCY_BUCKETS, registry=r,
        )  # fmt: skip
        self.query_results = Histogram(
            "rag_query_results_count", "Results returned (search) or context chunks used (RAG).", ["endpoint", "mode"],
            buckets=_COUNT_BUCKETS, registry=r,
        )  # fmt: skip
        self.query_tokens = Histogram(
            "rag_query_tokens_used", "Context tokens used per query.", ["endpoint"], buckets=_TOKEN_BUCKETS, registry=r
        )
        self.queries = Counter("rag_queries", "Queries by endpoint and outcome.", ["endpoint", "outcome"], registry=r)
        self.answers = Counter("rag_answers", "RAG answers by action.", ["action"], registry=r)
        self.embedding_latency = Histogram(
            "rag_embedding_latency_seconds", "Indexing request latency.", buckets=_LATENCY_BUCKETS, registry=r
        )
        self.chunks_created = Counter("rag_embedding_chunks_created", "Chunks written to the index.", registry=r)
        self.documents_indexed = Counter(
            "rag_embedding_documents", "Documents by indexing status.", ["status"], registry=r
        )
        self.invalidations = Counter("rag_invalidation_count", "Documents invalidated.", ["reason"], registry=r)
        self.invalidated_chunks = Counter(
            "rag_invalidation_chunks_removed", "Chunks removed by invalidation.", ["reason"], registry=r
        )
        self.tenant_deletions = Counter("rag_tenant_deletions", "Tenants deleted.", registry=r)
        self.tenant_chunks_removed = Counter(
            "rag_tenant_chunks_removed", "Chunks removed by tenant deletes.", registry=r
        )
        self.flag_updates = Counter("rag_flag_updates", "Documents whose flags changed.", ["flag"], registry=r)
        self.index_size = Gauge("rag_index_size_total", "Points (chunks) in the store.", registry=r)
        self.query_log_dropped = Gauge(
            "rag_query_log_dropped_rows", "Query-log rows dropped since start (queue full).", registry=r
        )
        self.query_log_queued = Gauge("rag_query_log_queued_rows", "Query-log rows not yet written.", registry=r)

    def track_index_size(self, count: Callable[[], int]) -> None:
        """Read the index size from ``count`` at every scrape."""
        self.index_size.set_function(count)

    def track_query_log(self, dropped: Callable[[], int], queued: Callable[[], int]) -> None:
        """Read the query-log writer's dropped and queued rows at every scrape."""
        self.query_log_dropped.set_function(dropped)
        self.query_log_queued.set_function(queued)

    def render(self) -> bytes:
        """The Prometheus text exposition of every metric."""
        return generate_latest(self.registry)


class MetricsObserver(RequestObserver):
    """
    The request service's observer (``components.services.request_observer``): counts into :class:`Metrics`, and
    names a failure's outcome by its HTTP error type (``hayhooks_app.errors``).

    :param target: The metrics to count into.
    """

    def __init__(self, target: Metrics) -> None:
        self.target = target

    def outcome(self, error: BaseException) -> str:
        mapped = map_exception(error)
        return mapped.error_type if mapped is not None else "internal_error"

    def query_failed(self, endpoint: str, outcome: str) -> None:
        self.target.queries.labels(endpoint, outcome).inc()

    def query_answered(
        self, endpoint: str, mode: str, latency_s: float, results: int, tokens: int, action: str | None = None
    ) -> None:
        self.target.query_latency.labels(endpoint, mode).observe(latency_s)
        self.target.query_results.labels(endpoint, mode).observe(results)
        self.target.query_tokens.labels(endpoint).observe(tokens)
        self.target.queries.labels(endpoint, "ok").inc()
        if action:
            self.target.answers.labels(action).inc()

    def documents_indexed(self, latency_s: float, chunks: int, statuses: dict[str, int]) -> None:
        self.target.embedding_latency.observe(latency_s)
        self.target.chunks_created.inc(chunks)
        for status, count in statuses.items():
            self.target.documents_indexed.labels(status).inc(count)

    def documents_invalidated(self, reason: str | None, documents: int, chunks: int) -> None:
        label = reason_label(reason)
        self.target.invalidations.labels(label).inc(documents)
        self.target.invalidated_chunks.labels(label).inc(chunks)

    def flags_changed(self, flag: str, documents: int) -> None:
        self.target.flag_updates.labels(flag).inc(documents)

    def tenant_deleted(self, chunks: int) -> None:
        self.target.tenant_deletions.inc()
        self.target.tenant_chunks_removed.inc(chunks)


metrics = Metrics()

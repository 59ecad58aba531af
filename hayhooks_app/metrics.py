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
| ``rag_quality_answers_total`` | counter | tenant, tag, result | answers by result (below) |
| ``rag_quality_searches_total`` | counter | tenant, result | searches and enrichments: ``hits`` or ``empty`` |
| ``rag_feedback_total`` | counter | tenant, tag, rating | ``POST /feedback`` ratings (``up`` / ``down``) |
| ``rag_stale_documents`` | gauge | tenant, reason | stale documents, refreshed on the records-pruning schedule |
| ``rag_routed_events_total`` | counter | outcome | ``question.routed`` events by outcome |

An answer's ``result`` is ``cited``, ``routed`` (to the tag's owner), ``declined`` (to the administrator) or
``empty`` (no context at all); a stale document's ``reason`` ``not_reindexed``, ``source_changed`` or
``source_missing``; a routed event's ``outcome`` ``published``, ``unroutable``, ``failed`` or ``dropped``.

Per-project labels are left out on purpose (unbounded cardinality); the query log has those. The quality
metrics carry ``tenant`` and ``tag`` with a bound (docs/contract.md, "Feedback and knowledge gaps"): the first
``SOURCEBOUND_METRICS_MAX_TENANTS`` (20) tenants and ``SOURCEBOUND_METRICS_MAX_TAGS`` (50) tags a process sees keep
their names, later ones count as ``other`` (at most 21 x 51 x 4 answer series). Invalidation ``reason`` is kept
as a label only when it is a short slug (``[a-z0-9_-]{1,32}``), otherwise it is counted as ``other``.
"""

import logging
import re
import threading
import time
from collections.abc import Callable

from prometheus_client import CONTENT_TYPE_LATEST as PROMETHEUS_CONTENT_TYPE
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, disable_created_metrics, generate_latest
from prometheus_client.process_collector import ProcessCollector

from components.services.request_observer import RequestObserver
from hayhooks_app.errors import map_exception

logger = logging.getLogger(__name__)

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


class BoundedLabel:
    """
    A label whose distinct values are capped: the first ``limit`` values seen keep their names, later ones are
    ``other`` (a Prometheus series per value must stay bounded whatever tenants and tags exist).

    :param limit: Distinct values kept (0: every value is ``other``).
    """

    OTHER = "other"

    def __init__(self, limit: int) -> None:
        if limit < 0:
            raise ValueError(f"limit must be >= 0, got {limit}")
        self.limit = limit
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def __call__(self, value: str | None) -> str:
        value = value or "none"
        if value in self._seen:
            return value
        with self._lock:
            if value in self._seen or len(self._seen) < self.limit:
                self._seen.add(value)
                return value
        return self.OTHER


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
        self.search_over_budget = Counter(
            "rag_search_over_budget", "Searches slower than the latency budget (RAG_P95_SEARCH_MS).", registry=r
        )
        self.index_size = Gauge("rag_index_size_total", "Points (chunks) in the store.", registry=r)
        self.query_log_dropped = Gauge(
            "rag_query_log_dropped_rows", "Query-log rows dropped since start (queue full).", registry=r
        )
        self.query_log_queued = Gauge("rag_query_log_queued_rows", "Query-log rows not yet written.", registry=r)
        self.answer_results = Counter(
            "rag_quality_answers", "Answers by tenant, tag and result (cited/routed/declined/empty).",
            ["tenant", "tag", "result"], registry=r,
        )  # fmt: skip
        self.search_results = Counter(
            "rag_quality_searches", "Searches and enrichments by tenant and result (hits/empty).",
            ["tenant", "result"], registry=r,
        )  # fmt: skip
        self.feedback = Counter(
            "rag_feedback", "Feedback by tenant, tag and rating.", ["tenant", "tag", "rating"], registry=r
        )
        self.stale_documents = Gauge(
            "rag_stale_documents", "Stale documents by tenant and reason.", ["tenant", "reason"], registry=r
        )
        self.routed_events = Counter("rag_routed_events", "question.routed events by outcome.", ["outcome"], registry=r)
        self.bound_labels(20, 50)

    def bound_labels(self, max_tenants: int, max_tags: int) -> None:
        """Cap the quality metrics' ``tenant`` and ``tag`` label values (``SOURCEBOUND_METRICS_MAX_*``)."""
        self.tenant_label = BoundedLabel(max_tenants)
        self.tag_label = BoundedLabel(max_tags)

    def set_stale_documents(self, counts: dict[str, dict[str, int]]) -> None:
        """Replace the stale-document gauge with ``{tenant: {reason: documents}}`` (bounded tenants summed)."""
        values: dict[tuple[str, str], int] = {}
        for tenant, reasons in counts.items():
            label = self.tenant_label(tenant)
            for reason, number in reasons.items():
                values[(label, reason)] = values.get((label, reason), 0) + number
        self.stale_documents.clear()
        for (tenant, reason), number in values.items():
            self.stale_documents.labels(tenant, reason).set(number)

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
    :param search_budget_ms: The search latency budget (``RAG_P95_SEARCH_MS``): a slower search is counted in
        ``rag_search_over_budget_total`` and logged (at most one warning a minute); ``None``: no budget.
    """

    def __init__(self, target: Metrics, search_budget_ms: float | None = None) -> None:
        self.target = target
        self.search_budget_ms = search_budget_ms
        self._over_budget_since_warning = 0
        self._last_warning = float("-inf")

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
        if endpoint == "search" and self.search_budget_ms is not None and latency_s * 1000 > self.search_budget_ms:
            self._over_budget(latency_s * 1000)

    def _over_budget(self, latency_ms: float) -> None:
        self.target.search_over_budget.inc()
        self._over_budget_since_warning += 1
        now = time.monotonic()
        if now - self._last_warning >= 60:
            logger.warning(
                "%d search(es) slower than the budget of %.0f ms (RAG_P95_SEARCH_MS) since the last warning; "
                "the latest took %.0f ms.",
                self._over_budget_since_warning, self.search_budget_ms, latency_ms,
            )  # fmt: skip
            self._last_warning, self._over_budget_since_warning = now, 0

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

    def answer_quality(self, tenant_id: str, tag: str | None, result: str) -> None:
        target = self.target
        target.answer_results.labels(target.tenant_label(tenant_id), target.tag_label(tag), result).inc()

    def search_quality(self, tenant_id: str, empty: bool) -> None:
        self.target.search_results.labels(self.target.tenant_label(tenant_id), "empty" if empty else "hits").inc()

    def feedback_given(self, tenant_id: str, tag: str | None, rating: str) -> None:
        target = self.target
        target.feedback.labels(target.tenant_label(tenant_id), target.tag_label(tag), rating).inc()


metrics = Metrics()

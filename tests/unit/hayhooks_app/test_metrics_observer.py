"""MetricsObserver: the request service's callbacks counted into Prometheus metrics, outcomes as HTTP error types."""

import pytest

from components.core.errors import LLMTimeoutError, NotFoundError
from hayhooks_app.errors import validation_error
from hayhooks_app.metrics import Metrics, MetricsObserver


def value(metrics: Metrics, name: str, **labels) -> float | None:
    return metrics.registry.get_sample_value(name, labels)


@pytest.mark.unit
class TestMetricsObserver:
    def test_outcomes_are_the_http_error_types(self):
        observer = MetricsObserver(Metrics())
        assert observer.outcome(LLMTimeoutError("slow")) == "llm_timeout"
        assert observer.outcome(NotFoundError("gone")) == "not_found"
        assert observer.outcome(validation_error("k: too big")) == "validation_error"
        assert observer.outcome(RuntimeError("bug")) == "internal_error"

    def test_queries_are_counted_by_endpoint_mode_and_outcome(self):
        metrics = Metrics()
        observer = MetricsObserver(metrics)
        observer.query_answered("rag", "hybrid", 0.2, 3, 120, action="CITE")
        observer.query_answered("search", "dense", 0.01, 5, 40)
        observer.query_failed("rag", "llm_timeout")
        assert value(metrics, "rag_queries_total", endpoint="rag", outcome="ok") == 1
        assert value(metrics, "rag_queries_total", endpoint="rag", outcome="llm_timeout") == 1
        assert value(metrics, "rag_answers_total", action="CITE") == 1
        assert value(metrics, "rag_query_latency_seconds_count", endpoint="search", mode="dense") == 1
        assert value(metrics, "rag_query_results_count_sum", endpoint="rag", mode="hybrid") == 3
        assert value(metrics, "rag_query_tokens_used_sum", endpoint="search") == 40

    def test_index_changes_are_counted(self):
        metrics = Metrics()
        observer = MetricsObserver(metrics)
        observer.documents_indexed(1.5, 12, {"indexed": 2, "unchanged": 1})
        observer.documents_invalidated("Upstream_Taint", 2, 7)
        observer.documents_invalidated("a reason with spaces", 1, 1)
        observer.flags_changed("untainted", 4)
        observer.tenant_deleted(30)
        assert value(metrics, "rag_embedding_chunks_created_total") == 12
        assert value(metrics, "rag_embedding_documents_total", status="unchanged") == 1
        assert value(metrics, "rag_invalidation_count_total", reason="upstream_taint") == 2
        assert value(metrics, "rag_invalidation_chunks_removed_total", reason="other") == 1
        assert value(metrics, "rag_flag_updates_total", flag="untainted") == 4
        assert value(metrics, "rag_tenant_deletions_total") == 1
        assert value(metrics, "rag_tenant_chunks_removed_total") == 30

"""MetricsObserver: the request service's callbacks counted into Prometheus metrics, outcomes as HTTP error types."""

import pytest

from components.core.errors import LLMTimeoutError, NotFoundError
from hayhooks_app.errors import validation_error
from hayhooks_app.metrics import BoundedLabel, Metrics, MetricsObserver


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


@pytest.mark.unit
class TestQualityMetrics:
    def test_answers_searches_and_feedback_per_tenant_and_tag(self):
        metrics = Metrics()
        observer = MetricsObserver(metrics)
        observer.answer_quality("acme", "hr", "routed")
        observer.answer_quality("acme", None, "empty")
        observer.search_quality("acme", empty=True)
        observer.feedback_given("acme", "hr", "down")
        assert value(metrics, "rag_quality_answers_total", tenant="acme", tag="hr", result="routed") == 1
        assert value(metrics, "rag_quality_answers_total", tenant="acme", tag="none", result="empty") == 1
        assert value(metrics, "rag_quality_searches_total", tenant="acme", result="empty") == 1
        assert value(metrics, "rag_feedback_total", tenant="acme", tag="hr", rating="down") == 1

    def test_label_values_are_bounded(self):
        metrics = Metrics()
        metrics.bound_labels(max_tenants=2, max_tags=1)
        observer = MetricsObserver(metrics)
        for tenant in ("t1", "t2", "t3", "t4"):
            for tag in ("a", "b", "c"):
                observer.answer_quality(tenant, tag, "cited")
        series = {
            (sample.labels["tenant"], sample.labels["tag"]): sample.value
            for family in metrics.registry.collect()
            if family.name == "rag_quality_answers"
            for sample in family.samples
            if sample.name.endswith("_total")
        }
        assert series == {
            ("t1", "a"): 1, ("t1", "other"): 2, ("t2", "a"): 1, ("t2", "other"): 2,
            ("other", "a"): 2, ("other", "other"): 4,
        }  # fmt: skip
        with pytest.raises(ValueError):
            BoundedLabel(-1)

    def test_stale_documents_gauge_is_replaced_and_sums_other_tenants(self):
        metrics = Metrics()
        metrics.bound_labels(max_tenants=1, max_tags=1)
        metrics.set_stale_documents(
            {"acme": {"not_reindexed": 3}, "b": {"not_reindexed": 1}, "c": {"not_reindexed": 2}}
        )
        assert value(metrics, "rag_stale_documents", tenant="acme", reason="not_reindexed") == 3
        assert value(metrics, "rag_stale_documents", tenant="other", reason="not_reindexed") == 3
        metrics.set_stale_documents({"acme": {"not_reindexed": 0}})
        assert value(metrics, "rag_stale_documents", tenant="other", reason="not_reindexed") is None

    def test_searches_over_the_budget_are_counted_and_logged_once_a_minute(self, caplog):
        metrics = Metrics()
        observer = MetricsObserver(metrics, search_budget_ms=300)
        with caplog.at_level("WARNING", logger="hayhooks_app.metrics"):
            observer.query_answered("search", "hybrid", 0.25, 5, 40)  # within
            observer.query_answered("search", "hybrid", 0.45, 5, 40)
            observer.query_answered("search", "vector", 0.50, 5, 40)
            observer.query_answered("rag", "hybrid", 2.0, 5, 40)  # answers are not searches
        assert value(metrics, "rag_search_over_budget_total") == 2
        assert [record.message for record in caplog.records if "RAG_P95_SEARCH_MS" in record.message] == [
            "1 search(es) slower than the budget of 300 ms (RAG_P95_SEARCH_MS) since the last warning; the latest "
            "took 450 ms."
        ]
        unbudgeted = Metrics()
        MetricsObserver(unbudgeted).query_answered("search", "hybrid", 9.0, 5, 40)
        assert value(unbudgeted, "rag_search_over_budget_total") == 0

"""HealthCheck without HTTP: status from the real Qdrant Edge store and the generator, the probe's 2 s cache."""

from types import SimpleNamespace

import pytest
from haystack import Pipeline

from components.generators.ollama_answerer import OllamaAnswerer
from components.services.health_check import HealthCheck, introspect_generator, rag_standard_fields

NAMES = {"indexing": "indexing", "search": "search", "rag": "query", "enrich": "enrich"}


class Queries:
    def __init__(self, reachable: bool, model_available: bool | None = None) -> None:
        self.reachable = reachable
        self.model_available = model_available
        self.probes = 0

    def health(self):
        self.probes += 1
        generator = {
            "backend": "ollama",
            "model": "qwen3:8b",
            "url": "http://ollama:11434",
            "reachable": self.reachable,
        }
        if self.model_available is not None:
            generator["model_available"] = self.model_available
        return {"generator": generator}


def resources(store, reachable=True, search=None, model_available=None):
    return SimpleNamespace(
        store=store, queries=Queries(reachable, model_available), pipeline=lambda kind: search or Pipeline()
    )


class BrokenStore:
    def count_documents(self):
        raise RuntimeError("shard locked by another process")


@pytest.mark.integration
class TestHealthCheck:
    def test_init_and_a_healthy_report(self, store):
        check = HealthCheck(resources(store), version="1.2.3", auth_mode="api_key", pipeline_names=NAMES, started_at=0)
        report = check.report()
        assert list(report) == [
            "status", "ready", "reason", "version", "auth_mode", "uptime_s", "store", "embedder", "generator",
            "pipelines", "rag_ok", "rag_details", "index_metrics",
        ]  # fmt: skip
        assert (report["status"], report["version"], report["auth_mode"]) == ("healthy", "1.2.3", "api_key")
        assert report["ready"] is True and report["reason"] is None
        assert report["store"]["backend"] == "qdrant-edge" and report["store"]["status"] == "ok"
        assert report["embedder"] == {"model": None, "loaded": False}  # no text embedder in that search pipeline
        assert report["pipelines"] == NAMES and report["uptime_s"] > 0
        # The RAG Standard's fields: not ok while the embedder is not loaded; the index figures are the store's.
        assert report["rag_ok"] is False and report["rag_details"] == "Embedding model not loaded"
        points = report["store"]["points"]
        assert report["index_metrics"] == {"total_chunks": points, "total_vectors": points, "dimension": 384}

    def test_rag_standard_fields(self):
        store = {"backend": "qdrant-edge", "status": "ok", "points": 1250, "embedding_dim": 384}
        fields = rag_standard_fields(store, {"model": "m", "loaded": True, "dim": 384})
        assert fields == {
            "rag_ok": True,
            "rag_details": "Index loaded: 1250 chunks, 384-dimensional vectors (qdrant-edge)",
            "index_metrics": {"total_chunks": 1250, "total_vectors": 1250, "dimension": 384},
        }
        broken = rag_standard_fields({"status": "error", "points": None, "error": "locked"}, {"loaded": True})
        assert broken["rag_ok"] is False and broken["rag_details"] == "Index unavailable: locked"

    def test_an_unreachable_llm_degrades_and_a_failing_store_is_unhealthy(self, store):
        assert HealthCheck(resources(store, reachable=False), version="v", auth_mode="trusted",
                           pipeline_names=NAMES).report()["status"] == "degraded"  # fmt: skip
        report = HealthCheck(resources(BrokenStore()), version="v", auth_mode="trusted", pipeline_names=NAMES).report()
        assert report["status"] == "unhealthy"
        assert report["store"] == {
            "backend": "unknown", "status": "error", "points": None, "error": "shard locked by another process"
        }  # fmt: skip

    def test_a_chat_model_that_is_not_pulled_degrades_and_is_not_ready(self, store):
        # Ollama answers, but the configured model is missing: every /rag/run would fail with 503.
        report = HealthCheck(
            resources(store, model_available=False), version="v", auth_mode="trusted", pipeline_names=NAMES
        ).report()
        assert report["status"] == "degraded" and report["ready"] is False
        assert "'qwen3:8b' is not pulled" in report["reason"] and "ollama pull qwen3:8b" in report["reason"]
        pulled = HealthCheck(
            resources(store, model_available=True), version="v", auth_mode="trusted", pipeline_names=NAMES
        )
        assert pulled.report()["status"] == "healthy" and pulled.report()["ready"] is True

    def test_the_generator_is_probed_at_most_every_two_seconds(self, store):
        parts = resources(store)
        check = HealthCheck(parts, version="v", auth_mode="trusted", pipeline_names=NAMES)
        check.report()
        check.report()
        assert parts.queries.probes == 1
        check._generator_cache = (check._generator_cache[0] - 2.5, check._generator_cache[1])
        check.report()
        assert parts.queries.probes == 2


@pytest.mark.unit
class TestIntrospectGenerator:
    def test_extractive_without_ollama_and_unreachable_ollama(self):
        assert introspect_generator(Pipeline()) == {"backend": "extractive", "model": "extractive", "reachable": True}
        pipeline = Pipeline()
        pipeline.add_component("answerer", OllamaAnswerer(model="llama3.2", url="http://127.0.0.1:9/", timeout=1))
        assert introspect_generator(pipeline) == {
            "backend": "ollama", "model": "llama3.2", "url": "http://127.0.0.1:9", "reachable": False
        }  # fmt: skip

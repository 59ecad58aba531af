"""The specifications' RAG_* settings: each honoured or refused with what to set instead, none ignored."""

import pytest

from components.runtime.environment import ConfigError
from components.runtime.rag_settings import (
    CHECKS,
    check_rag_settings,
    p95_search_budget_ms,
    rag_setting_problems,
)

# Every RAG_* variable of the RAG Standard's .env except those of the web sources (RAG_CRAWL_*,
# RAG_ALLOWLIST_DOMAINS, RAG_MAX_PAGES) and those the YAML already names (RAG_CHUNK_MAX_TOKENS, RAG_CHUNK_OVERLAP).
STANDARD_SETTINGS = {
    "RAG_CHUNK_MIN_TOKENS", "RAG_EMBEDDING_BACKEND", "RAG_EMBEDDING_MODEL", "RAG_INDEX_TYPE", "RAG_TOP_K",
    "RAG_TOP_K_RAW", "RAG_USE_BM25", "RAG_P95_SEARCH_MS",
}  # fmt: skip


@pytest.mark.unit
class TestRagSettings:
    def test_every_standard_setting_is_checked(self):
        assert set(CHECKS) == STANDARD_SETTINGS

    @pytest.mark.parametrize(
        "name, value",
        [
            ("RAG_TOP_K", "5"), ("RAG_TOP_K_RAW", "50"), ("RAG_TOP_K_RAW", "0"), ("RAG_USE_BM25", "true"),
            ("RAG_USE_BM25", "1"), ("RAG_EMBEDDING_BACKEND", "onnx"), ("RAG_EMBEDDING_MODEL", "all-MiniLM-L6-v2"),
            ("RAG_EMBEDDING_MODEL", "sentence-transformers/all-MiniLM-L6-v2"), ("RAG_INDEX_TYPE", "flat"),
            ("RAG_P95_SEARCH_MS", "300"),
        ],
    )  # fmt: skip
    def test_honoured_values_pass(self, name, value):
        assert rag_setting_problems({name: value}) == []

    @pytest.mark.parametrize(
        "name, value, instead",
        [
            ("RAG_USE_BM25", "false", "search_mode=vector"),
            ("RAG_USE_BM25", "maybe", "true or false"),
            ("RAG_EMBEDDING_BACKEND", "ollama", "set it to onnx"),
            ("RAG_EMBEDDING_MODEL", "nomic-embed-text:latest", "Unset RAG_EMBEDDING_MODEL"),
            ("RAG_INDEX_TYPE", "hnsw", "set it to flat"),
            ("RAG_CHUNK_MIN_TOKENS", "800", "set RAG_CHUNK_SIZE"),
            ("RAG_TOP_K", "0", "between 1 and 100"),
            ("RAG_TOP_K", "five", "integer"),
            ("RAG_TOP_K_RAW", "5000", "between 0 and 1000"),
            ("RAG_P95_SEARCH_MS", "-1", "> 0"),
            ("RAG_P95_SEARCH_MS", "fast", "milliseconds"),
        ],
    )
    def test_refused_values_say_what_to_set_instead(self, name, value, instead):
        (problem,) = rag_setting_problems({name: value})
        assert name in problem and instead in problem
        with pytest.raises(ConfigError, match=name):
            check_rag_settings({name: value})

    def test_every_refusal_is_reported_at_once_and_unset_means_nothing(self):
        problems = rag_setting_problems({"RAG_USE_BM25": "false", "RAG_INDEX_TYPE": "ivf", "RAG_TOP_K": " "})
        assert len(problems) == 2
        assert rag_setting_problems({}) == []

    def test_the_search_budget(self):
        assert p95_search_budget_ms({"RAG_P95_SEARCH_MS": "300"}) == 300.0
        assert p95_search_budget_ms({}) is None

    def test_the_server_settings_refuse_at_start_up(self, monkeypatch):
        from hayhooks_app.config import Settings

        monkeypatch.setenv("RAG_CHUNK_MIN_TOKENS", "800")
        with pytest.raises(ConfigError, match="RAG_CHUNK_MIN_TOKENS"):
            Settings.from_env()
        monkeypatch.delenv("RAG_CHUNK_MIN_TOKENS")
        monkeypatch.setenv("RAG_P95_SEARCH_MS", "250")
        monkeypatch.setenv("SOURCEBOUND_DEFAULT_TENANT", "dats")
        monkeypatch.setenv("SOURCEBOUND_DEFAULT_TAGS", "all, eng ,all")
        settings = Settings.from_env()
        assert (settings.search_budget_ms, settings.default_tenant, settings.default_tags) == (
            250.0,
            "dats",
            ("all", "eng"),
        )

"""SearchModeRouter: which retrievals a search mode runs, and which of them return embeddings."""

import pytest

from components.models import SearchMode
from components.search_mode_router import SearchModeRouter

EMBEDDING = [0.1, 0.2, 0.3]


@pytest.mark.unit
class TestSearchModeRouter:
    def test_init(self):
        assert SearchModeRouter().default_mode == "hybrid"
        assert SearchModeRouter(default_mode="keyword").default_mode == "keyword"
        with pytest.raises(ValueError, match="search_mode must be one of"):
            SearchModeRouter(default_mode="semantic")

    def test_to_dict(self):
        assert SearchModeRouter(default_mode="vector").to_dict() == {
            "type": "components.search_mode_router.SearchModeRouter",
            "init_parameters": {"default_mode": "vector"},
        }

    def test_from_dict(self):
        router = SearchModeRouter.from_dict(SearchModeRouter(default_mode="keyword").to_dict())
        assert router.default_mode == "keyword"

    def test_run_hybrid_runs_all_three_with_embeddings_only_for_the_fusion(self):
        out = SearchModeRouter().run(query="vpn", query_embedding=EMBEDDING, search_mode="hybrid")
        assert out == {
            "vector_embedding": EMBEDDING, "vector_return_embedding": False,
            "keyword_query": "vpn", "keyword_return_embedding": False,
            "hybrid_query": "vpn", "hybrid_embedding": EMBEDDING, "search_mode": "hybrid",
        }  # fmt: skip

    @pytest.mark.parametrize("mode", ["vector", "keyword", SearchMode.VECTOR])
    def test_run_single_side_modes_skip_the_hybrid_retriever(self, mode):
        out = SearchModeRouter().run(query="vpn", query_embedding=EMBEDDING, search_mode=mode)
        name = mode.value if isinstance(mode, SearchMode) else mode
        assert "hybrid_query" not in out and "hybrid_embedding" not in out
        assert out["vector_embedding"] == EMBEDDING and out["keyword_query"] == "vpn"
        assert out["vector_return_embedding"] is (name == "vector") and out["keyword_return_embedding"] is (name == "keyword")
        assert out["search_mode"] == name

    def test_run_without_mode_uses_the_default(self):
        assert SearchModeRouter(default_mode="keyword").run(query="q", query_embedding=EMBEDDING)["search_mode"] == "keyword"

    def test_run_rejects_unknown_mode(self):
        with pytest.raises(ValueError, match="search_mode must be one of"):
            SearchModeRouter().run(query="q", query_embedding=EMBEDDING, search_mode="HYBRID")

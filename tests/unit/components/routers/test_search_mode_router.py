"""SearchModeRouter: a search mode runs exactly one retriever."""

import pytest

from components.core.models import SearchMode
from components.routers.search_mode_router import SearchModeRouter

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
            "type": "components.routers.search_mode_router.SearchModeRouter",
            "init_parameters": {"default_mode": "vector"},
        }

    def test_from_dict(self):
        router = SearchModeRouter.from_dict(SearchModeRouter(default_mode="keyword").to_dict())
        assert router.default_mode == "keyword"

    @pytest.mark.parametrize(
        "mode,expected",
        [
            ("vector", {"vector_embedding": EMBEDDING}),
            (SearchMode.VECTOR, {"vector_embedding": EMBEDDING}),
            ("keyword", {"keyword_query": "vpn"}),
            ("hybrid", {"hybrid_query": "vpn", "hybrid_embedding": EMBEDDING}),
        ],
    )
    def test_run_sends_the_query_only_to_the_modes_retriever(self, mode, expected):
        out = SearchModeRouter().run(query="vpn", query_embedding=EMBEDDING, search_mode=mode)
        name = mode.value if isinstance(mode, SearchMode) else mode
        assert out == {**expected, "search_mode": name}

    def test_run_without_mode_uses_the_default(self):
        assert (
            SearchModeRouter(default_mode="keyword").run(query="q", query_embedding=EMBEDDING)["search_mode"]
            == "keyword"
        )

    def test_run_rejects_unknown_mode(self):
        with pytest.raises(ValueError, match="search_mode must be one of"):
            SearchModeRouter().run(query="q", query_embedding=EMBEDDING, search_mode="HYBRID")

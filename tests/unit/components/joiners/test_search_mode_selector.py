"""SearchModeSelector: one pipeline, three search modes."""

import pytest
from haystack import Document

from components.core.errors import ContextError
from components.joiners.search_mode_selector import SearchModeSelector

QUERY = [1.0, 0.0]


def _doc(name: str, score: float, embedding=(1.0, 0.0), sources=None) -> Document:
    meta = {} if sources is None else {"retrieved_by": sources}
    return Document(id=name, content=name, score=score, embedding=list(embedding), meta=meta)


def _lists():
    vector = [_doc("a", 0.9), _doc("b", 0.8, (1.0, 0.5))]
    keyword = [_doc("c", 12.0, (0.0, 1.0)), _doc("a", 3.0)]
    # b and c tie on RRF; b is closer to the query, so b comes first whatever order the engine returned.
    hybrid = [
        _doc("a", 0.0328, sources=["vector", "keyword"]),
        _doc("c", 0.0161, (0.0, 1.0), sources=["keyword"]),
        _doc("b", 0.0161, (1.0, 0.5), sources=["vector"]),
    ]
    return {"vector_documents": vector, "keyword_documents": keyword, "hybrid_documents": hybrid}


@pytest.mark.unit
class TestSearchModeSelector:
    def test_init(self):
        assert SearchModeSelector().top_k == 5
        with pytest.raises(ValueError):
            SearchModeSelector(top_k=0)

    def test_to_dict(self):
        assert SearchModeSelector(top_k=3).to_dict() == {
            "type": "components.joiners.search_mode_selector.SearchModeSelector",
            "init_parameters": {"top_k": 3},
        }

    def test_from_dict(self):
        assert SearchModeSelector.from_dict(SearchModeSelector(top_k=3).to_dict()).top_k == 3

    @pytest.mark.parametrize(
        "mode,expected",
        [
            ("vector", [("a", ["vector"]), ("b", ["vector"])]),
            ("keyword", [("c", ["keyword"]), ("a", ["keyword"])]),
            ("hybrid", [("a", ["vector", "keyword"]), ("b", ["vector"]), ("c", ["keyword"])]),
        ],
    )
    def test_run_modes(self, mode, expected):
        out = SearchModeSelector().run(**_lists(), query_embedding=QUERY, search_mode=mode)
        assert out["search_mode"] == mode
        assert [(doc.id, doc.meta["retrieved_by"]) for doc in out["documents"]] == expected

    def test_run_ties_are_deterministic_and_cut(self):
        lists = _lists()
        reversed_hybrid = {**lists, "hybrid_documents": lists["hybrid_documents"][::-1]}
        for variant in (lists, reversed_hybrid):
            out = SearchModeSelector().run(**variant, query_embedding=QUERY, search_mode="hybrid", top_k=2)
            assert [doc.id for doc in out["documents"]] == ["a", "b"]

    def test_run_errors(self):
        with pytest.raises(ValueError, match="search_mode"):
            SearchModeSelector().run(**_lists(), query_embedding=QUERY, search_mode="fuzzy")
        lists = _lists()
        lists["vector_documents"] = [Document(id="x", content="x", score=1.0)]
        with pytest.raises(ContextError, match="return_embedding"):
            SearchModeSelector().run(**lists, query_embedding=QUERY, search_mode="vector")
        assert (
            SearchModeSelector().run(
                **{**lists, "keyword_documents": []}, query_embedding=QUERY, search_mode="keyword"
            )["documents"]
            == []
        )
        for mode in ("vector", "keyword", "hybrid"):
            others = {key: value for key, value in _lists().items() if key != f"{mode}_documents"}
            with pytest.raises(ContextError, match=f"{mode} search got no results from its retriever"):
                SearchModeSelector().run(**others, query_embedding=QUERY, search_mode=mode)

    def test_run_only_the_modes_list_is_needed(self):
        out = SearchModeSelector().run(
            query_embedding=QUERY, search_mode="keyword", keyword_documents=_lists()["keyword_documents"]
        )
        assert [doc.id for doc in out["documents"]] == ["c", "a"]

    def test_run_hybrid_sources_come_from_the_retriever(self):
        unreported = [Document(id=doc.id, content=doc.content, score=doc.score, embedding=doc.embedding)
                      for doc in _lists()["hybrid_documents"]]  # fmt: skip
        out = SearchModeSelector().run(query_embedding=QUERY, search_mode="hybrid", hybrid_documents=unreported)
        assert [doc.meta["retrieved_by"] for doc in out["documents"]] == [[], [], []]
        odd = [_doc("a", 0.03, sources="vector"), _doc("b", 0.02, sources=["keyword", "bogus", "vector"])]
        out = SearchModeSelector().run(query_embedding=QUERY, search_mode="hybrid", hybrid_documents=odd)
        assert [doc.meta["retrieved_by"] for doc in out["documents"]] == [[], ["vector", "keyword"]]

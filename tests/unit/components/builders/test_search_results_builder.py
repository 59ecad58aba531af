"""SearchResultsBuilder: the search response (docs/contract.md, "Response fields")."""

import pytest
from haystack import Document

from components.builders.search_results_builder import SearchResultsBuilder
from components.core.models import SearchResponse
from components.core.prompts import format_chunk
from components.core.text_analysis import count_tokens


def _docs() -> list[Document]:
    return [
        Document(
            id=f"doc-{i}:{i}",
            content=f"chunk {i} " + "words " * 60,
            score=0.9 - i / 10,
            meta={
                "document_id": f"doc-{i}",
                "chunk_index": i,
                "document_name": f"Doc {i}",
                "tags": ["hr"],
                "retrieved_by": sides,
            },
        )
        for i, sides in enumerate([["vector", "keyword"], ["vector"], ["keyword"]])
    ]


@pytest.mark.unit
class TestSearchResultsBuilder:
    def test_init(self):
        assert SearchResultsBuilder().snippet_chars == 200
        with pytest.raises(ValueError):
            SearchResultsBuilder(encoding="nope")

    def test_to_dict(self):
        assert SearchResultsBuilder().to_dict()["init_parameters"]["encoding"] == "cl100k_base"

    def test_from_dict(self):
        assert SearchResultsBuilder.from_dict(SearchResultsBuilder(snippet_chars=50).to_dict()).snippet_chars == 50

    def test_run(self):
        response = SearchResultsBuilder().run(
            documents=_docs(), search_mode="hybrid", max_tokens=2000, latency_ms=1.23456
        )["response"]
        SearchResponse.model_validate(response)
        first = response["results"][0]
        assert first["source_id"] == "doc-0:0" and first["document_name"] == "Doc 0" and first["tags"] == ["hr"]
        assert first["snippet"].endswith("...") and len(first["snippet"]) == 203 and first["score"] == 0.9
        assert first["url"] is None
        assert response["metadata"] == {
            "vector_results": 2,
            "keyword_results": 2,
            "latency_ms": 1.235,
            "glossary_terms": [],
        }
        assert response["context"].startswith("[SourceId: doc-0:0]\n[Document: Doc 0]")
        assert response["tokens_used"] == count_tokens(response["context"])

    def test_run_empty_results_say_why(self):
        builder = SearchResultsBuilder(min_similarity=0.1)
        assert builder.run(documents=_docs(), search_mode="hybrid")["response"]["empty_reason"] is None
        below = builder.run(documents=[], search_mode="vector", dropped=4)["response"]
        assert (
            below["results"] == []
            and "None of the 4 retrieved chunks reached the minimum similarity of 0.1" in (below["empty_reason"])
        )
        nothing = builder.run(documents=[], search_mode="keyword")["response"]
        assert nothing["empty_reason"] == "No document this identity may see matches the query."
        SearchResponse.model_validate(below)
        assert SearchResultsBuilder.from_dict(builder.to_dict()).min_similarity == 0.1

    def test_run_results_link_web_sources(self):
        documents = _docs()
        documents[1].meta["source_uri"] = "http://wiki.example.com/page"
        documents[2].meta["source_uri"] = "/srv/corpus/doc-2.md"
        results = SearchResultsBuilder().run(documents=documents, search_mode="hybrid")["response"]["results"]
        assert [result["url"] for result in results] == [None, "http://wiki.example.com/page", None]

    def test_run_results_carry_the_language(self):
        documents = _docs()
        documents[0].meta["language"] = "de"
        results = SearchResultsBuilder().run(documents=documents, search_mode="hybrid")["response"]["results"]
        assert [result["language"] for result in results] == ["de", None, None]

    def test_run_context_within_max_tokens(self):
        documents = _docs()
        one = count_tokens(format_chunk(documents[0]))
        response = SearchResultsBuilder().run(documents=documents, search_mode="vector", max_tokens=one + 5)["response"]
        assert response["tokens_used"] == one and "doc-1:1" not in response["context"]
        assert len(response["results"]) == 3  # results are not cut, only the context
        assert (
            SearchResultsBuilder().run(documents=documents, search_mode="vector", max_tokens=5)["response"]["context"]
            == ""
        )

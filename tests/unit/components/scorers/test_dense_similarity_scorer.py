"""DenseSimilarityScorer: cosine similarity re-scoring with the fusion order kept."""

import math

import pytest
from haystack import Document

from components.core.errors import ContextError
from components.scorers.dense_similarity_scorer import DenseSimilarityScorer


def _doc(name: str, embedding, score: float) -> Document:
    return Document(
        id=name, content=name, embedding=embedding, score=score, meta={"document_id": name, "chunk_index": 0}
    )


@pytest.mark.unit
class TestDenseSimilarityScorer:
    def test_init(self):
        assert DenseSimilarityScorer().min_similarity == 0.3
        with pytest.raises(ValueError):
            DenseSimilarityScorer(min_similarity=2)

    def test_to_dict(self):
        assert DenseSimilarityScorer(min_similarity=0.25).to_dict() == {
            "type": "components.scorers.dense_similarity_scorer.DenseSimilarityScorer",
            "init_parameters": {"min_similarity": 0.25, "keep_embeddings": False},
        }

    def test_from_dict(self):
        assert DenseSimilarityScorer.from_dict(DenseSimilarityScorer(0.4).to_dict()).min_similarity == 0.4

    def test_run_scores_by_cosine_keeps_order_and_drops_weak(self):
        query = [1.0, 0.0, 0.0]
        documents = [
            _doc("bm25-only", [0.0, 1.0, 0.0], 0.033),  # fused first, but orthogonal to the query
            _doc("close", [2.0, 0.1, 0.0], 0.032),
            _doc("medium", [1.0, 1.0, 0.0], 0.031),
            _doc("opposite", [-1.0, 0.0, 0.0], 0.030),
        ]
        out = DenseSimilarityScorer(min_similarity=0.3).run(documents=documents, query_embedding=query)
        assert [doc.id for doc in out["documents"]] == ["close", "medium"]
        assert out["documents"][1].score == pytest.approx(1 / math.sqrt(2))
        assert out["documents"][0].meta["retriever_score"] == 0.032
        assert out["documents"][0].embedding is None
        assert out["dropped"] == 2

    def test_run_without_embeddings_names_the_fix(self):
        with pytest.raises(ContextError, match="return_embedding"):
            DenseSimilarityScorer().run(documents=[Document(id="x", content="x")], query_embedding=[1.0])

    def test_run_empty(self):
        assert DenseSimilarityScorer().run(documents=[], query_embedding=[1.0]) == {"documents": [], "dropped": 0}


@pytest.mark.unit
class TestDeterministicOrder:
    def test_ties_broken_by_similarity_then_id(self):
        query = [1.0, 0.0]
        # b and c tie on the fusion score (mirrored ranks); c is closer to the query; a2/a1 tie on both.
        documents = [
            _doc("b", [0.5, 0.5], 0.032018),
            _doc("a2", [1.0, 1.0], 0.01),
            _doc("c", [1.0, 0.2], 0.032018),
            _doc("top", [1.0, 0.9], 0.033333),
            _doc("a1", [1.0, 1.0], 0.01),
        ]
        scorer = DenseSimilarityScorer(min_similarity=-1)
        expected = ["top", "c", "b", "a1", "a2"]
        for permutation in (documents, documents[::-1], documents[2:] + documents[:2]):
            assert [doc.id for doc in scorer.run(documents=permutation, query_embedding=query)["documents"]] == expected
        assert [doc.id for doc in scorer.run(documents=documents, query_embedding=query, top_k=2)["documents"]] == [
            "top",
            "c",
        ]

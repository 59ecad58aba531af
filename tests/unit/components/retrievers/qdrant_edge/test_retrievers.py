"""The three Qdrant Edge retrievers: init, (de)serialisation, ranking, scores, filters and embeddings."""

import asyncio
import math
import random

import numpy as np
import pytest
from haystack import Document, Pipeline
from haystack.document_stores.types import FilterPolicy

from components.document_stores.qdrant_edge import (
    EmbeddingDimensionError,
    FilterError,
    QdrantEdgeDocumentStore,
)
from components.retrievers.qdrant_edge import (
    QdrantEdgeBM25Retriever,
    QdrantEdgeEmbeddingRetriever,
    QdrantEdgeHybridRetriever,
)

ACME = {"field": "meta.tenant_id", "operator": "==", "value": "acme"}
GLOBEX = {"field": "meta.tenant_id", "operator": "==", "value": "globex"}


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True)) / (math.hypot(*a) * math.hypot(*b))


CHUNKS = [
    Document(
        id="acme-pw:0",
        content="How to reset your password in the portal",
        embedding=[1.0, 0.1, 0.0, 0.0],
        meta={"tenant_id": "acme", "tags": ["it"]},
    ),
    Document(
        id="acme-vac:0",
        content="Vacation policy and holiday calendar",
        embedding=[0.0, 1.0, 0.1, 0.0],
        meta={"tenant_id": "acme", "tags": ["hr"]},
    ),
    Document(
        id="acme-exp:0",
        content="Expense report deadlines and receipts",
        embedding=[0.0, 0.1, 1.0, 0.0],
        meta={"tenant_id": "acme", "tags": ["finance"]},
    ),
    Document(
        id="acme-kw:0",
        content="Password rules: rotate the password yearly",
        embedding=[0.3, 0.0, 0.2, 1.0],
        meta={"tenant_id": "acme", "tags": ["it"]},
    ),
    # Another tenant's chunk that matches every query perfectly: it must never leak into acme's results.
    Document(
        id="globex-pw:0",
        content="Reset password: password reset password",
        embedding=[1.0, 0.0, 0.0, 0.0],
        meta={"tenant_id": "globex", "tags": ["it"]},
    ),
]
QUERY_VECTOR = [1.0, 0.0, 0.0, 0.0]


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    document_store = QdrantEdgeDocumentStore(
        path=str(tmp_path_factory.mktemp("retrievers") / "qdrant"), embedding_dim=4
    )
    document_store.write_documents(CHUNKS)
    yield document_store
    document_store.close()


def store_dict(store: QdrantEdgeDocumentStore) -> dict:
    return store.to_dict()


def round_trip_in_yaml(component) -> object:
    pipeline = Pipeline()
    pipeline.add_component("retriever", component)
    loaded = Pipeline.loads(pipeline.dumps(), allowed_modules=["components", "haystack"])
    return loaded.get_component("retriever")


@pytest.mark.integration
class TestQdrantEdgeEmbeddingRetriever:
    def test_init(self, store):
        retriever = QdrantEdgeEmbeddingRetriever(document_store=store)
        assert retriever.document_store is store
        assert (retriever.filters, retriever.top_k, retriever.filter_policy) == (None, 10, FilterPolicy.REPLACE)
        assert (retriever.return_embedding, retriever.score_threshold) == (False, None)

    def test_init_rejects_invalid_parameters(self, store):
        with pytest.raises(ValueError, match="QdrantEdgeDocumentStore"):
            QdrantEdgeEmbeddingRetriever(document_store="store")
        with pytest.raises(ValueError, match="top_k"):
            QdrantEdgeEmbeddingRetriever(document_store=store, top_k=0)
        with pytest.raises(FilterError, match="Unknown filter operator"):
            QdrantEdgeEmbeddingRetriever(document_store=store, filters={"field": "meta.a", "operator": "=", "value": 1})

    def test_to_dict(self, store):
        retriever = QdrantEdgeEmbeddingRetriever(document_store=store, filters=ACME, top_k=3, score_threshold=0.2)
        assert retriever.to_dict() == {
            "type": "components.retrievers.qdrant_edge.embedding_retriever.QdrantEdgeEmbeddingRetriever",
            "init_parameters": {
                "document_store": store_dict(store),
                "filters": ACME,
                "top_k": 3,
                "filter_policy": "replace",
                "return_embedding": False,
                "score_threshold": 0.2,
            },
        }

    def test_from_dict(self, store):
        retriever = QdrantEdgeEmbeddingRetriever(document_store=store, filters=ACME, top_k=3, filter_policy="merge")
        restored = QdrantEdgeEmbeddingRetriever.from_dict(retriever.to_dict())
        assert restored.to_dict() == retriever.to_dict()
        assert restored.filter_policy == FilterPolicy.MERGE
        assert restored.document_store._shard_state() is store._shard_state()
        assert round_trip_in_yaml(retriever).to_dict() == retriever.to_dict()

    def test_run_ranks_by_cosine_similarity(self, store):
        documents = QdrantEdgeEmbeddingRetriever(document_store=store, top_k=2).run(QUERY_VECTOR, filters=ACME)[
            "documents"
        ]
        assert [doc.id for doc in documents] == ["acme-pw:0", "acme-kw:0"]
        expected = {doc.id: cosine(QUERY_VECTOR, doc.embedding) for doc in CHUNKS}
        for document in documents:
            assert document.score == pytest.approx(expected[document.id], abs=1e-6)
            assert document.embedding is None  # return_embedding=False

    def test_run_filter_policy(self, store):
        replace = QdrantEdgeEmbeddingRetriever(document_store=store, filters=ACME, top_k=1)
        assert replace.run(QUERY_VECTOR)["documents"][0].id == "acme-pw:0"  # init filters when the run has none
        assert replace.run(QUERY_VECTOR, filters=GLOBEX)["documents"][0].id == "globex-pw:0"  # replaced
        merge = QdrantEdgeEmbeddingRetriever(document_store=store, filters=ACME, filter_policy="merge")
        merged = merge.run(QUERY_VECTOR, filters={"field": "meta.tags", "operator": "in", "value": ["hr"]})
        assert [doc.id for doc in merged["documents"]] == ["acme-vac:0"]

    def test_run_return_embedding_and_threshold(self, store):
        retriever = QdrantEdgeEmbeddingRetriever(document_store=store, return_embedding=True, score_threshold=0.5)
        documents = retriever.run(QUERY_VECTOR, filters=ACME, top_k=5)["documents"]
        assert [doc.id for doc in documents] == ["acme-pw:0"]
        assert documents[0].embedding == pytest.approx(CHUNKS[0].embedding)

    def test_run_wrong_dimension(self, store):
        with pytest.raises(EmbeddingDimensionError):
            QdrantEdgeEmbeddingRetriever(document_store=store).run([1.0, 0.0])

    def test_run_async(self, store):
        retriever = QdrantEdgeEmbeddingRetriever(document_store=store, top_k=1)
        result = asyncio.run(retriever.run_async(QUERY_VECTOR, filters=ACME))
        assert [doc.id for doc in result["documents"]] == ["acme-pw:0"]


@pytest.mark.integration
class TestQdrantEdgeBM25Retriever:
    def test_init(self, store):
        retriever = QdrantEdgeBM25Retriever(document_store=store)
        assert (retriever.filters, retriever.top_k, retriever.filter_policy, retriever.return_embedding) == (
            None,
            10,
            FilterPolicy.REPLACE,
            False,
        )
        with pytest.raises(ValueError, match="top_k"):
            QdrantEdgeBM25Retriever(document_store=store, top_k=-1)

    def test_to_dict(self, store):
        retriever = QdrantEdgeBM25Retriever(document_store=store, top_k=4, return_embedding=True)
        assert retriever.to_dict() == {
            "type": "components.retrievers.qdrant_edge.bm25_retriever.QdrantEdgeBM25Retriever",
            "init_parameters": {
                "document_store": store_dict(store),
                "filters": None,
                "top_k": 4,
                "filter_policy": "replace",
                "return_embedding": True,
            },
        }

    def test_from_dict(self, store):
        retriever = QdrantEdgeBM25Retriever(document_store=store, filters=ACME)
        assert QdrantEdgeBM25Retriever.from_dict(retriever.to_dict()).to_dict() == retriever.to_dict()
        assert round_trip_in_yaml(retriever).to_dict() == retriever.to_dict()

    def test_run_ranks_by_bm25(self, store):
        documents = QdrantEdgeBM25Retriever(document_store=store).run("password", filters=ACME)["documents"]
        # "password" twice in a short chunk outranks once in a longer one; chunks without it are not returned.
        assert [doc.id for doc in documents] == ["acme-kw:0", "acme-pw:0"]
        assert documents[0].score > documents[1].score > 0

    def test_run_with_filters_isolates_tenants(self, store):
        retriever = QdrantEdgeBM25Retriever(document_store=store)
        assert [doc.id for doc in retriever.run("password reset", filters=GLOBEX)["documents"]] == ["globex-pw:0"]
        assert "globex-pw:0" not in [doc.id for doc in retriever.run("password reset", filters=ACME)["documents"]]

    def test_run_stop_words_only(self, store):
        assert QdrantEdgeBM25Retriever(document_store=store).run("the and of")["documents"] == []

    def test_run_return_embedding(self, store):
        documents = QdrantEdgeBM25Retriever(document_store=store, return_embedding=True, top_k=1).run(
            "vacation", filters=ACME
        )["documents"]
        assert documents[0].embedding == pytest.approx(CHUNKS[1].embedding)

    def test_run_async(self, store):
        result = asyncio.run(QdrantEdgeBM25Retriever(document_store=store, top_k=1).run_async("expense", filters=ACME))
        assert [doc.id for doc in result["documents"]] == ["acme-exp:0"]


@pytest.mark.integration
class TestQdrantEdgeHybridRetriever:
    def test_init(self, store):
        retriever = QdrantEdgeHybridRetriever(document_store=store)
        assert (retriever.top_k, retriever.filter_policy, retriever.return_embedding) == (
            10,
            FilterPolicy.REPLACE,
            False,
        )
        assert (retriever.prefetch_limit, retriever.rrf_k, retriever.report_sources) == (None, 60, False)
        with pytest.raises(ValueError, match="report_sources"):
            QdrantEdgeHybridRetriever(document_store=store, report_sources="yes")
        with pytest.raises(ValueError, match="rrf_k"):
            QdrantEdgeHybridRetriever(document_store=store, rrf_k=0)
        with pytest.raises(ValueError, match="prefetch_limit"):
            QdrantEdgeHybridRetriever(document_store=store, prefetch_limit=0)

    def test_to_dict(self, store):
        retriever = QdrantEdgeHybridRetriever(
            document_store=store, top_k=5, return_embedding=True, prefetch_limit=20, rrf_k=10
        )
        assert retriever.to_dict() == {
            "type": "components.retrievers.qdrant_edge.hybrid_retriever.QdrantEdgeHybridRetriever",
            "init_parameters": {
                "document_store": store_dict(store),
                "filters": None,
                "top_k": 5,
                "filter_policy": "replace",
                "return_embedding": True,
                "prefetch_limit": 20,
                "rrf_k": 10,
                "report_sources": False,
            },
        }

    def test_from_dict(self, store):
        retriever = QdrantEdgeHybridRetriever(document_store=store, filters=ACME, rrf_k=30, report_sources=True)
        assert QdrantEdgeHybridRetriever.from_dict(retriever.to_dict()).to_dict() == retriever.to_dict()
        assert round_trip_in_yaml(retriever).to_dict() == retriever.to_dict()

    def test_run_fuses_with_rrf(self, store):
        documents = QdrantEdgeHybridRetriever(document_store=store, rrf_k=60).run(
            query="reset password", query_embedding=QUERY_VECTOR, filters=ACME
        )["documents"]
        # acme-pw:0 is first in both rankings: 1/60 + 1/60; acme-kw:0 is second in both: 1/61 + 1/61.
        assert [doc.id for doc in documents[:2]] == ["acme-pw:0", "acme-kw:0"]
        assert documents[0].score == pytest.approx(2 / 60, rel=1e-5)
        assert documents[1].score == pytest.approx(2 / 61, rel=1e-5)
        assert all(doc.score <= 2 / 60 * (1 + 1e-6) for doc in documents)  # float32 scores
        assert {doc.meta["tenant_id"] for doc in documents} == {"acme"}

    def test_run_filters_apply_inside_both_stages(self, store):
        # With one candidate per stage, an outer-only filter would drop globex's better candidates and return
        # nothing; filtered stages return acme's best dense and best BM25 chunk.
        retriever = QdrantEdgeHybridRetriever(document_store=store, prefetch_limit=1)
        documents = retriever.run(query="password", query_embedding=QUERY_VECTOR, filters=ACME)["documents"]
        assert sorted(doc.id for doc in documents) == ["acme-kw:0", "acme-pw:0"]

    def test_run_return_embedding_includes_bm25_only_candidates(self, store):
        retriever = QdrantEdgeHybridRetriever(document_store=store, prefetch_limit=1, return_embedding=True)
        # The dense stage finds acme-vac:0 only; the BM25 stage finds acme-exp:0 only.
        documents = retriever.run(query="expense receipts", query_embedding=[0.0, 1.0, 0.0, 0.0], filters=ACME)[
            "documents"
        ]
        by_id = {doc.id: doc for doc in documents}
        assert set(by_id) == {"acme-vac:0", "acme-exp:0"}
        originals = {doc.id: doc.embedding for doc in CHUNKS}
        for doc_id, document in by_id.items():
            assert document.embedding == pytest.approx(originals[doc_id])

    def test_run_report_sources_marks_the_stages_that_found_each_document(self, store):
        retriever = QdrantEdgeHybridRetriever(document_store=store, prefetch_limit=1, report_sources=True)
        documents = retriever.run(query="expense receipts", query_embedding=[0.0, 1.0, 0.0, 0.0], filters=ACME)[
            "documents"
        ]
        assert {doc.id: doc.meta["retrieved_by"] for doc in documents} == {
            "acme-vac:0": ["vector"],
            "acme-exp:0": ["keyword"],
        }
        both = QdrantEdgeHybridRetriever(document_store=store, report_sources=True).run(
            query="reset password", query_embedding=QUERY_VECTOR, filters=ACME
        )["documents"]
        assert both[0].id == "acme-pw:0" and both[0].meta["retrieved_by"] == ["vector", "keyword"]
        assert both[0].score == pytest.approx(2 / 60, rel=1e-5) and "retrieved_by" not in CHUNKS[0].meta
        stop_words = retriever.run(query="the of and", query_embedding=QUERY_VECTOR, filters=ACME)["documents"]
        assert [(doc.id, doc.meta["retrieved_by"]) for doc in stop_words] == [("acme-pw:0", ["vector"])]

    @staticmethod
    def _tied_chunks(seed: int) -> list[Document]:
        rng = random.Random(seed)
        words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda".split()
        return [
            Document(id=f"doc-{index}", content=" ".join(rng.choices(words, k=rng.randint(3, 12))),
                     embedding=[rng.uniform(-1, 1) for _ in range(4)],
                     meta={"tenant_id": rng.choice(["acme", "globex"]), "tags": ["it"]})
            for index in range(300)
        ]  # fmt: skip

    def test_run_fuses_the_stages_with_the_engines_arithmetic(self, tmp_path):
        # Many candidates with tied BM25 scores: both paths give the RRF of the two stage rankings (each stage's
        # ties ordered by id, as the stage retrievals order them), float32 sums, dense first.
        rng = random.Random(7)
        words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda".split()
        many = QdrantEdgeDocumentStore(path=str(tmp_path / "qdrant"), embedding_dim=4)
        try:
            many.write_documents(self._tied_chunks(7))
            for top_k, prefetch in ((5, None), (10, 15), (40, 25)):
                candidates = prefetch or max(4 * top_k, 40)
                for _ in range(15):
                    query = " ".join(rng.choices(words, k=rng.randint(1, 3)))
                    vector = [rng.uniform(-1, 1) for _ in range(4)]
                    dense = many.embedding_retrieval(query_embedding=vector, filters=ACME, top_k=candidates)
                    keyword = many.bm25_retrieval(query=query, filters=ACME, top_k=candidates)
                    expected: dict[str, np.float32] = {}
                    for ranking in (dense, keyword):
                        for rank, doc in enumerate(ranking):
                            expected[doc.id] = expected.get(doc.id, np.float32(0)) + np.float32(1) / np.float32(
                                60 + rank
                            )
                    engine, reporting = (
                        QdrantEdgeHybridRetriever(document_store=many, top_k=top_k, prefetch_limit=prefetch,
                                                  return_embedding=True, report_sources=report).run(
                            query=query, query_embedding=vector, filters=ACME)["documents"]
                        for report in (False, True)
                    )  # fmt: skip
                    assert [(doc.id, doc.score, doc.embedding, doc.content) for doc in reporting] == [
                        (doc.id, doc.score, doc.embedding, doc.content) for doc in engine
                    ]
                    best = sorted(expected.values(), reverse=True)[:top_k]
                    assert [doc.score for doc in engine] == [float(score) for score in best]
                    assert all(float(expected[doc.id]) == doc.score for doc in engine)
                    assert all(doc.meta["retrieved_by"] and doc.meta["tenant_id"] == "acme" for doc in reporting)
                    assert all("retrieved_by" not in doc.meta for doc in engine)
        finally:
            many.close()

    def test_run_same_results_whatever_the_write_order(self, tmp_path):
        # The engine orders equal stage scores by where points sit in the shard; a re-index must not change results.
        chunks = self._tied_chunks(11)
        stores = [QdrantEdgeDocumentStore(path=str(tmp_path / name), embedding_dim=4) for name in ("a", "b")]
        try:
            stores[0].write_documents(chunks)
            for start in range(len(chunks), 0, -50):  # reversed, in several writes
                stores[1].write_documents(list(reversed(chunks[max(0, start - 50) : start])))
            rng = random.Random(3)
            for _ in range(20):
                query = " ".join(rng.choices(["alpha", "beta", "gamma", "delta"], k=rng.randint(1, 2)))
                vector = [rng.uniform(-1, 1) for _ in range(4)]
                results = [
                    [(doc.id, doc.score) for doc in QdrantEdgeHybridRetriever(document_store=store, top_k=10).run(
                        query=query, query_embedding=vector, filters=ACME)["documents"]]
                    for store in stores
                ]  # fmt: skip
                assert results[0] == results[1]
        finally:
            for store in stores:
                store.close()

    def test_run_return_embedding_per_run(self, store):
        retriever = QdrantEdgeHybridRetriever(document_store=store, top_k=2)
        with_vectors = retriever.run(
            query="password", query_embedding=QUERY_VECTOR, filters=ACME, return_embedding=True
        )
        assert all(doc.embedding is not None for doc in with_vectors["documents"])
        assert all(
            doc.embedding is None for doc in retriever.run(query="password", query_embedding=QUERY_VECTOR)["documents"]
        )

    def test_run_stop_words_only_falls_back_to_dense(self, store):
        documents = QdrantEdgeHybridRetriever(document_store=store, top_k=1).run(
            query="the of and", query_embedding=QUERY_VECTOR, filters=ACME
        )["documents"]
        assert [doc.id for doc in documents] == ["acme-pw:0"]

    def test_run_async(self, store):
        retriever = QdrantEdgeHybridRetriever(document_store=store, top_k=1)
        result = asyncio.run(retriever.run_async("vacation", [0.0, 1.0, 0.0, 0.0], filters=ACME))
        assert [doc.id for doc in result["documents"]] == ["acme-vac:0"]

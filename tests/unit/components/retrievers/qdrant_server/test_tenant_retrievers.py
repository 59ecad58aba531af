"""qdrant-haystack's retrievers on the server profile's store: they deserialise onto it and hybrid really fuses."""

import pytest
from haystack import Document, Pipeline

from components.document_stores.qdrant_server import TenantQdrantDocumentStore
from components.embedders.bm25_embedders import Bm25DocumentEmbedder, Bm25TextEmbedder
from components.retrievers.qdrant_server import (
    TenantQdrantEmbeddingRetriever,
    TenantQdrantHybridRetriever,
    TenantQdrantSparseEmbeddingRetriever,
)

TEXTS = [
    "Reset your password from the account settings page",
    "The vacation policy grants twenty days of holiday",
    "Submit expense reports with scanned receipts",
]
ACME = {"field": "meta.tenant_id", "operator": "==", "value": "acme"}


@pytest.fixture
def store():
    store = TenantQdrantDocumentStore(
        local_location=":memory:",
        index="retrievers",
        embedding_dim=4,
        use_sparse_embeddings=True,
        sparse_idf=True,
        progress_bar=False,
    )
    vectors = [[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0]]
    documents = [
        Document(id=f"doc-{i}:0", content=text, embedding=vector, meta={"tenant_id": tenant})
        for tenant in ("acme", "globex")
        for i, (text, vector) in enumerate(zip(TEXTS, vectors, strict=True))
    ]
    store.write_documents(Bm25DocumentEmbedder().run(documents=documents)["documents"])
    yield store
    store.close()


@pytest.mark.unit
class TestTenantRetrievers:
    @pytest.mark.parametrize(
        "cls", [TenantQdrantEmbeddingRetriever, TenantQdrantSparseEmbeddingRetriever, TenantQdrantHybridRetriever]
    )
    def test_round_trip_keeps_the_store_type(self, store, cls):
        data = cls(document_store=store, top_k=3).to_dict()
        again = cls.from_dict(data)
        assert type(again) is cls and type(again._document_store) is TenantQdrantDocumentStore
        assert again._document_store.local_location == ":memory:"

    def test_hybrid_fuses_a_dense_only_and_a_keyword_only_match(self, store):
        query = Pipeline()
        query.add_component("sparse", Bm25TextEmbedder())
        query.add_component("retriever", TenantQdrantHybridRetriever(document_store=store, top_k=2))
        query.connect("sparse.sparse_embedding", "retriever.query_sparse_embedding")
        # The dense vector points at the vacation chunk, the keywords at the expense chunk: both come back.
        retriever = {"query_embedding": [0.0, 1.0, 0.0, 0.0], "filters": ACME}
        result = query.run({"sparse": {"text": "expense receipts"}, "retriever": retriever})
        documents = result["retriever"]["documents"]
        assert {d.id for d in documents} == {"doc-1:0", "doc-2:0"}
        assert {d.meta["tenant_id"] for d in documents} == {"acme"}

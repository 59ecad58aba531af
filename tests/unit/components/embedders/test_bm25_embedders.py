"""The BM25 sparse embedders: their own behaviour, parity with the Edge store, and hybrid search on qdrant-haystack."""

import pytest
from haystack import Document, Pipeline
from haystack.components.writers import DocumentWriter
from haystack.dataclasses import SparseEmbedding
from qdrant_edge import Bm25

from components.document_stores.qdrant_edge import (
    MissingContentError,
    QdrantEdgeDocumentStore,
    StoreConfigError,
)
from components.embedders.bm25_embedders import Bm25DocumentEmbedder, Bm25TextEmbedder

TEXTS = [
    "Reset your password from the account settings page",
    "The vacation policy grants twenty days of holiday",
    "Submit expense reports with scanned receipts",
]


@pytest.mark.unit
class TestBm25DocumentEmbedder:
    def test_init(self):
        assert Bm25DocumentEmbedder().bm25_config is None
        assert Bm25DocumentEmbedder(bm25_config={"k": 1.5, "b": 0.5}).bm25_config == {"k": 1.5, "b": 0.5}
        with pytest.raises(StoreConfigError, match="Unknown bm25_config option 'k1'"):
            Bm25DocumentEmbedder(bm25_config={"k1": 1.5})
        with pytest.raises(StoreConfigError, match="wrong type"):
            Bm25DocumentEmbedder(bm25_config={"lowercase": "yes"})

    def test_to_dict(self):
        assert Bm25DocumentEmbedder(bm25_config={"avg_len": 120}).to_dict() == {
            "type": "components.embedders.bm25_embedders.Bm25DocumentEmbedder",
            "init_parameters": {
                "bm25_config": {"avg_len": 120},
                "meta_fields_to_embed": [],
                "embedding_separator": "\n",
            },
        }

    def test_from_dict(self):
        embedder = Bm25DocumentEmbedder(bm25_config={"language": "english"})
        assert Bm25DocumentEmbedder.from_dict(embedder.to_dict()).to_dict() == embedder.to_dict()

    def test_run_indexes_meta_fields_with_the_content(self):
        # A chunk's contextual header makes its document's name part of its keyword side.
        chunk = Document(content="--force-all turns on every force option.", meta={"context_header": "dpkg(1)"})
        embedder = Bm25DocumentEmbedder(meta_fields_to_embed=["context_header"])
        headed = embedder.run(documents=[chunk])["documents"][0].sparse_embedding
        plain = Bm25DocumentEmbedder().run(documents=[chunk])["documents"][0].sparse_embedding
        query = Bm25TextEmbedder().run(text="dpkg")["sparse_embedding"]
        assert set(query.indices) <= set(headed.indices) and not set(query.indices) & set(plain.indices)
        # An absent or empty field adds nothing.
        bare = Document(content=chunk.content, meta={"context_header": ""})
        assert embedder.run(documents=[bare])["documents"][0].sparse_embedding.indices == plain.indices
        with pytest.raises(ValueError):
            Bm25DocumentEmbedder(meta_fields_to_embed="context_header")

    def test_run_sets_sparse_embeddings(self):
        documents = [Document(content=text, meta={"n": index}) for index, text in enumerate(TEXTS)]
        embedded = Bm25DocumentEmbedder().run(documents=documents)["documents"]
        reference = Bm25()
        for original, result in zip(documents, embedded, strict=True):
            expected = reference.embed_document(original.content)
            assert result.sparse_embedding == SparseEmbedding(indices=expected.indices, values=expected.values)
            assert (result.id, result.content, result.meta) == (original.id, original.content, original.meta)
            assert original.sparse_embedding is None  # inputs are not modified

    def test_run_missing_content(self):
        with pytest.raises(MissingContentError, match="no text content"):
            Bm25DocumentEmbedder().run(documents=[Document(content=None)])
        with pytest.raises(TypeError, match="list of Documents"):
            Bm25DocumentEmbedder().run(documents="text")


@pytest.mark.unit
class TestBm25TextEmbedder:
    def test_init(self):
        assert Bm25TextEmbedder().bm25_config is None

    def test_to_dict(self):
        assert Bm25TextEmbedder().to_dict() == {
            "type": "components.embedders.bm25_embedders.Bm25TextEmbedder",
            "init_parameters": {"bm25_config": None},
        }

    def test_from_dict(self):
        embedder = Bm25TextEmbedder(bm25_config={"b": 0.6})
        assert Bm25TextEmbedder.from_dict(embedder.to_dict()).bm25_config == {"b": 0.6}

    def test_run(self):
        sparse = Bm25TextEmbedder().run(text="password reset password")["sparse_embedding"]
        assert len(sparse.indices) == 2 and sparse.values == [1.0, 1.0]  # one weight per distinct term
        assert Bm25TextEmbedder().run(text="the of and")["sparse_embedding"].indices == []
        with pytest.raises(TypeError):
            Bm25TextEmbedder().run(text=["password"])


@pytest.mark.integration
def test_embedder_vectors_score_like_the_edge_stores_own(tmp_path):
    """Documents embedded by Bm25DocumentEmbedder rank and score exactly as the store's own BM25 vectors."""
    own = QdrantEdgeDocumentStore(path=str(tmp_path / "own"), embedding_dim=4)
    supplied = QdrantEdgeDocumentStore(path=str(tmp_path / "supplied"), embedding_dim=4)
    try:
        documents = [Document(id=f"doc-{index}:0", content=text) for index, text in enumerate(TEXTS)]
        own.write_documents(documents)
        supplied.write_documents(Bm25DocumentEmbedder().run(documents=documents)["documents"])
        for query in ("password settings", "holiday days", "receipts"):
            assert [(d.id, d.score) for d in own.bm25_retrieval(query)] == [
                (d.id, d.score) for d in supplied.bm25_retrieval(query)
            ]
    finally:
        own.close()
        supplied.close()


@pytest.mark.integration
@pytest.mark.parametrize("location", ["memory", "path"])
def test_hybrid_search_on_qdrant_haystack(tmp_path, location):
    """The Qdrant-server profile: qdrant-haystack with sparse IDF gets the same hybrid search end to end."""
    from haystack_integrations.components.retrievers.qdrant import QdrantHybridRetriever
    from haystack_integrations.document_stores.qdrant import QdrantDocumentStore

    where = {"location": ":memory:"} if location == "memory" else {"path": str(tmp_path / "qdrant-local")}
    store = QdrantDocumentStore(
        **where, embedding_dim=4, use_sparse_embeddings=True, sparse_idf=True, recreate_index=True, progress_bar=False
    )
    try:
        vectors = [[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0]]
        documents = [
            Document(id=f"doc-{index}:0", content=text, embedding=vector, meta={"tenant_id": "acme"})
            for index, (text, vector) in enumerate(zip(TEXTS, vectors, strict=True))
        ]
        indexing = Pipeline()
        indexing.add_component("sparse", Bm25DocumentEmbedder())
        indexing.add_component("writer", DocumentWriter(document_store=store))
        indexing.connect("sparse.documents", "writer.documents")
        indexing.run({"sparse": {"documents": documents}})
        assert store.count_documents() == 3

        query = Pipeline()
        query.add_component("sparse", Bm25TextEmbedder())
        query.add_component("retriever", QdrantHybridRetriever(document_store=store, top_k=3))
        query.connect("sparse.sparse_embedding", "retriever.query_sparse_embedding")
        # The dense vector points at the vacation chunk, the keywords at the expense chunk: both come back first.
        result = query.run(
            {
                "sparse": {"text": "expense receipts"},
                "retriever": {
                    "query_embedding": [0.0, 1.0, 0.0, 0.0],
                    "filters": {"field": "meta.tenant_id", "operator": "==", "value": "acme"},
                },
            }
        )
        ranked = [doc.id for doc in result["retriever"]["documents"]]
        assert set(ranked[:2]) == {"doc-1:0", "doc-2:0"}
    finally:
        store.close()

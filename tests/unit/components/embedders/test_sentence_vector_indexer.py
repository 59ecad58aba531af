"""SentenceVectorIndexer: the reader's sentences of each chunk, embedded at indexing time into the vector file."""

import numpy as np
import pytest
from haystack import Document

from components.embedders.onnx_document_embedder import OnnxDocumentEmbedder
from components.embedders.sentence_vector_indexer import SentenceVectorIndexer
from components.preprocessors.context_sentence_splitter import ContextSentenceSplitter

TYPE = "components.embedders.sentence_vector_indexer.SentenceVectorIndexer"
CHUNKS = [
    Document(
        id="acme-hr:0",
        content="VACATION POLICY\n\nEmployees receive 25 vacation days per year. Unused days expire in March.\n\n"
        "See HR.",
        meta={"tenant_id": "acme", "document_id": "hr", "chunk_index": 0},
    ),
    Document(
        id="acme-it:0",
        content="Laptops are replaced every three years. Employees receive 25 vacation days per year.",
        meta={"tenant_id": "acme", "document_id": "it", "chunk_index": 0},
    ),
    Document(id="orphan", content="A chunk without tenant or document id is never stored."),
]


@pytest.mark.unit
class TestSentenceVectorIndexer:
    def test_init(self, tmp_path):
        indexer = SentenceVectorIndexer(vector_cache_path=str(tmp_path / "v.sqlite"))
        assert indexer.min_sentence_words == 3
        assert indexer._embedder.vector_cache_path == str(tmp_path / "v.sqlite")

    def test_init_rejects_bad_parameters(self, tmp_path):
        with pytest.raises(ValueError, match="min_sentence_words"):
            SentenceVectorIndexer(vector_cache_path=str(tmp_path / "v.sqlite"), min_sentence_words=0)
        with pytest.raises(ValueError, match="vector_cache_path"):
            SentenceVectorIndexer(vector_cache_path="")

    def test_to_dict(self):
        data = SentenceVectorIndexer(vector_cache_path="/d/v.sqlite", min_sentence_words=4, batch_size=8).to_dict()
        assert data == {
            "type": TYPE,
            "init_parameters": {
                "vector_cache_path": "/d/v.sqlite",
                "model": "packaged:all-MiniLM-L6-v2",
                "min_sentence_words": 4,
                "batch_size": 8,
                "concurrent_batches": 1,
                "threads": None,
                "cache_size": 20000,
            },
        }

    def test_from_dict(self):
        indexer = SentenceVectorIndexer.from_dict(
            {"type": TYPE, "init_parameters": {"vector_cache_path": "/d/v.sqlite", "min_sentence_words": 5}}
        )
        assert (indexer.min_sentence_words, indexer._embedder.vector_cache_path) == (5, "/d/v.sqlite")

    def test_sentences_are_the_ones_the_query_splitter_selects(self, tmp_path):
        indexer = SentenceVectorIndexer(vector_cache_path=str(tmp_path / "v.sqlite"))
        stored = [(s.meta["document_id"], s.content) for s in indexer.sentences(CHUNKS)]
        read = [
            (s.meta["document_id"], s.content) for s in ContextSentenceSplitter().run(documents=CHUNKS[:2])["sentences"]
        ]
        assert stored == read
        assert ("hr", "VACATION POLICY") not in stored and ("hr", "See HR.") not in stored


@pytest.mark.integration
class TestSentenceVectorIndexerModel:
    def test_run_stores_vectors_the_query_side_reads_without_embedding(self, tmp_path):
        path = str(tmp_path / "v.sqlite")
        indexer = SentenceVectorIndexer(vector_cache_path=path)
        result = indexer.run(documents=CHUNKS)
        assert result["documents"] is CHUNKS
        assert result["sentences_indexed"] == 4
        assert indexer._embedder._vector_cache.count() == 4

        sentences = ContextSentenceSplitter().run(documents=CHUNKS[:2])["sentences"]
        reader = OnnxDocumentEmbedder(vector_cache_path=path)
        reader.warm_up()
        reader._encoder = None  # any embedding now would fail: every vector must come from the file
        reader.warm_up = lambda: None
        embedded = reader.run(documents=sentences)["documents"]
        fresh = OnnxDocumentEmbedder().run(documents=sentences)["documents"]
        for stored, computed in zip(embedded, fresh, strict=True):
            cosine = np.dot(stored.embedding, computed.embedding) / np.linalg.norm(stored.embedding)
            assert cosine > 0.9999

import numpy as np
import pytest
from haystack import Document

from components.embedders.onnx_document_embedder import OnnxDocumentEmbedder
from components.runtime import offline as runtime

TYPE = "components.embedders.onnx_document_embedder.OnnxDocumentEmbedder"
DOCUMENTS = [
    Document(content="Qdrant Edge runs inside the service process.", meta={"title": "Store"}),
    Document(content="short"),
    Document(
        content="The tenant filter is built on the server and ANDed into every retrieval. " * 30,
        meta={"title": "Access"},
    ),
    Document(content=None, meta={"title": "Empty"}),
    Document(content="Chunks carry their source, tags and a content hash.\n\nSecond paragraph."),
]


def spy_on_encoder(embedder: OnnxDocumentEmbedder) -> list[list[str]]:
    """Warm ``embedder`` up and record the texts of every encoder call (the vectors stay real)."""
    embedder.warm_up()
    encoded: list[list[str]] = []
    real_encode = embedder._encoder.encode

    def counting_encode(texts, **kwargs):
        encoded.append(list(texts))
        return real_encode(texts, **kwargs)

    embedder._encoder = type("Spy", (), {"encode": staticmethod(counting_encode)})()
    return encoded


@pytest.mark.unit
class TestOnnxDocumentEmbedder:
    def test_init(self):
        embedder = OnnxDocumentEmbedder()
        assert (embedder.model, embedder.batch_size, embedder.threads) == ("packaged:all-MiniLM-L6-v2", 32, None)
        assert (embedder.meta_fields_to_embed, embedder.embedding_separator) == ([], "\n")

    def test_init_rejects_bad_parameters(self):
        for kwargs, message in (
            ({"batch_size": 0}, "batch_size"),
            ({"batch_size": True}, "batch_size"),
            ({"meta_fields_to_embed": "title"}, "meta_fields_to_embed"),
            ({"embedding_separator": 1}, "embedding_separator"),
            ({"threads": 100}, "threads"),
            ({"concurrent_batches": 0}, "concurrent_batches"),
            ({"cache_size": -1}, "cache_size"),
            ({"cache_size": True}, "cache_size"),
            ({"vector_cache_path": ""}, "vector_cache_path"),
            ({"vector_cache_path": 3}, "vector_cache_path"),
        ):
            with pytest.raises(ValueError, match=message):
                OnnxDocumentEmbedder(**kwargs)

    def test_to_dict(self):
        data = OnnxDocumentEmbedder(model="/m", batch_size=8, meta_fields_to_embed=["title"], threads=2).to_dict()
        assert data == {
            "type": TYPE,
            "init_parameters": {
                "model": "/m",
                "batch_size": 8,
                "prefix": "",
                "suffix": "",
                "meta_fields_to_embed": ["title"],
                "embedding_separator": "\n",
                "threads": 2,
                "concurrent_batches": 1,
                "cache_size": 0,
                "vector_cache_path": None,
            },
        }

    def test_from_dict(self):
        embedder = OnnxDocumentEmbedder.from_dict({"type": TYPE, "init_parameters": {"model": "/m", "batch_size": 4}})
        assert (embedder.model, embedder.batch_size, embedder.meta_fields_to_embed) == ("/m", 4, [])

    def test_run_rejects_strings(self):
        with pytest.raises(TypeError, match="OnnxTextEmbedder"):
            OnnxDocumentEmbedder().run(documents="not documents")
        with pytest.raises(TypeError, match="list of Documents"):
            OnnxDocumentEmbedder().run(documents=[Document(content="ok"), "not a document"])

    def test_run_with_no_documents(self):
        assert OnnxDocumentEmbedder().run(documents=[]) == {"documents": []}


@pytest.mark.integration
class TestOnnxDocumentEmbedderModel:
    def test_run_matches_the_sentence_transformers_document_embedder(self):
        from haystack_integrations.components.embedders.sentence_transformers import (
            SentenceTransformersDocumentEmbedder,
        )

        for meta_fields in ([], ["title"]):
            reference = SentenceTransformersDocumentEmbedder(
                model=runtime.embedding_model_path(),
                local_files_only=True,
                progress_bar=False,
                meta_fields_to_embed=meta_fields,
            )
            reference.warm_up()
            expected = np.asarray(
                [d.embedding for d in reference.run(documents=DOCUMENTS)["documents"]], dtype=np.float32
            )
            embedded = OnnxDocumentEmbedder(batch_size=2, meta_fields_to_embed=meta_fields).run(documents=DOCUMENTS)[
                "documents"
            ]
            vectors = np.asarray([d.embedding for d in embedded], dtype=np.float32)
            cosine = (
                (vectors * expected).sum(axis=1) / np.linalg.norm(vectors, axis=1) / np.linalg.norm(expected, axis=1)
            )
            assert cosine.min() >= 0.9999, (meta_fields, cosine)

    def test_concurrent_batches_give_the_same_vectors_in_order(self):
        one = OnnxDocumentEmbedder(batch_size=1).run(documents=DOCUMENTS)["documents"]
        two = OnnxDocumentEmbedder(batch_size=1, concurrent_batches=2).run(documents=DOCUMENTS)["documents"]
        assert [d.id for d in two] == [d.id for d in DOCUMENTS]
        np.testing.assert_allclose([d.embedding for d in two], [d.embedding for d in one], atol=1e-6)

    def test_run_with_cache_embeds_each_text_once_and_stays_bounded(self):
        embedder = OnnxDocumentEmbedder(batch_size=4, cache_size=3)
        encoded = spy_on_encoder(embedder)
        plain = OnnxDocumentEmbedder(batch_size=4).run(documents=DOCUMENTS)["documents"]
        first = embedder.run(documents=DOCUMENTS[:2] + DOCUMENTS[:1])["documents"]
        assert encoded == [[DOCUMENTS[0].content, DOCUMENTS[1].content]]  # the repeated text once
        second = embedder.run(documents=DOCUMENTS[:2])["documents"]
        assert len(encoded) == 1  # both served from the cache
        np.testing.assert_allclose([d.embedding for d in second], [d.embedding for d in plain[:2]], atol=1e-6)
        np.testing.assert_allclose(first[2].embedding, plain[0].embedding, atol=1e-6)
        embedder.run(documents=DOCUMENTS[2:])
        assert len(embedder._cache) == 3  # least recently used dropped

    def test_run_keeps_order_and_leaves_the_input_alone(self):
        embedded = OnnxDocumentEmbedder(batch_size=2).run(documents=DOCUMENTS)["documents"]
        assert [d.id for d in embedded] == [d.id for d in DOCUMENTS]
        assert all(d.embedding is None for d in DOCUMENTS)
        assert all(
            isinstance(d.embedding, list) and len(d.embedding) == runtime.DEFAULT_EMBEDDING_DIM for d in embedded
        )
        single = OnnxDocumentEmbedder().run(documents=[DOCUMENTS[2]])["documents"][0].embedding
        np.testing.assert_allclose(embedded[2].embedding, single, atol=1e-5)

    def test_run_with_vector_file_reads_stored_sentences_and_writes_back_the_rest(self, tmp_path):
        path = str(tmp_path / "sentence_vectors.sqlite")
        keyed = [
            Document(content=DOCUMENTS[0].content, meta={"tenant_id": "acme", "document_id": "store"}),
            Document(content=DOCUMENTS[4].content, meta={"tenant_id": "acme", "document_id": "chunks"}),
            Document(content=DOCUMENTS[0].content, meta={"tenant_id": "globex", "document_id": "store"}),
            Document(content="No tenant: computed, never stored."),
        ]
        plain = OnnxDocumentEmbedder().run(documents=keyed)["documents"]
        writer = OnnxDocumentEmbedder(vector_cache_path=path)
        first = writer.run(documents=keyed[:2])["documents"]
        assert writer._vector_cache.count() == 2

        reader = OnnxDocumentEmbedder(vector_cache_path=path)
        encoded = spy_on_encoder(reader)
        second = reader.run(documents=keyed)["documents"]
        # acme's two sentences come from the file; globex's equal text is another tenant's key: computed.
        assert encoded == [[keyed[2].content, keyed[3].content]]
        assert reader._vector_cache.count() == 3  # globex's written back; the tenantless one is not stored
        # Stored or computed, a vector is rounded alike (float16), so the answer never depends on a cache hit.
        assert first[0].embedding == second[0].embedding == second[2].embedding
        np.testing.assert_allclose(second[0].embedding, plain[0].embedding, atol=2e-3)
        np.testing.assert_allclose(second[3].embedding, plain[3].embedding, atol=2e-3)

    def test_an_unusable_vector_file_costs_time_not_the_request(self, tmp_path, caplog):
        keyed = [Document(content=DOCUMENTS[0].content, meta={"tenant_id": "acme", "document_id": "store"})]
        embedder = OnnxDocumentEmbedder(vector_cache_path=str(tmp_path / "sentence_vectors.sqlite"))
        embedder.warm_up()
        embedder._vector_cache.close()  # every read and write now fails with sqlite3.ProgrammingError
        embedded = embedder.run(documents=keyed)["documents"]
        plain = OnnxDocumentEmbedder().run(documents=keyed)["documents"]
        np.testing.assert_allclose(embedded[0].embedding, plain[0].embedding, atol=2e-3)
        assert "unreadable" in caplog.text and "not stored" in caplog.text

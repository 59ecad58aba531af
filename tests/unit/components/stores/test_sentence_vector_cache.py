"""SentenceVectorCache: per-tenant, per-document sentence vectors in one SQLite file."""

import threading

import numpy as np
import pytest

from components.stores.sentence_vector_cache import SentenceVectorCache, stored_vector


def _vector(seed: int) -> np.ndarray:
    vector = np.random.default_rng(seed).normal(size=384).astype(np.float32)
    return vector / np.linalg.norm(vector)


@pytest.mark.unit
class TestSentenceVectorCache:
    def test_init_rejects_an_unnamed_model(self, tmp_path):
        with pytest.raises(ValueError, match="model_key"):
            SentenceVectorCache(tmp_path / "v.sqlite", model_key="")

    def test_get_returns_what_put_stored_for_that_tenant_only(self, tmp_path):
        cache = SentenceVectorCache(tmp_path / "nested" / "v.sqlite", model_key="m@1")
        assert cache.put("acme", [("hr", "Employees get 25 days.", _vector(1)), ("it", "Laptops.", _vector(2))]) == 2
        found = cache.get("acme", [("hr", "Employees get 25 days."), ("hr", "Laptops."), ("it", "Laptops.")])
        assert set(found) == {("hr", "Employees get 25 days."), ("it", "Laptops.")}  # the key includes the document
        np.testing.assert_array_equal(found[("hr", "Employees get 25 days.")], stored_vector(_vector(1)))
        assert found[("it", "Laptops.")].dtype == np.float32
        assert cache.get("globex", [("hr", "Employees get 25 days.")]) == {}
        assert cache.get("acme", []) == {}

    def test_put_replaces_an_equal_key(self, tmp_path):
        cache = SentenceVectorCache(tmp_path / "v.sqlite", model_key="m@1")
        cache.put("acme", [("hr", "Same text.", _vector(1))])
        cache.put("acme", [("hr", "Same text.", _vector(2))])
        assert cache.count() == 1
        np.testing.assert_array_equal(
            cache.get("acme", [("hr", "Same text.")])[("hr", "Same text.")], stored_vector(_vector(2))
        )

    def test_stored_vector_is_float16_precision(self):
        vector = _vector(3)
        rounded = stored_vector(vector)
        assert rounded.dtype == np.float32
        assert np.abs(rounded - vector).max() < 1e-3
        np.testing.assert_array_equal(stored_vector(rounded), rounded)  # rounding twice changes nothing

    def test_many_keys_are_looked_up(self, tmp_path):
        cache = SentenceVectorCache(tmp_path / "v.sqlite", model_key="m@1")
        entries = [(f"doc-{i % 7}", f"Sentence number {i}.", _vector(i)) for i in range(1200)]
        cache.put("acme", entries)
        found = cache.get("acme", [(document, text) for document, text, _ in entries])
        assert len(found) == 1200

    def test_delete_tenant_and_documents(self, tmp_path):
        cache = SentenceVectorCache(tmp_path / "v.sqlite", model_key="m@1")
        cache.put("acme", [("hr", "A b c.", _vector(1)), ("it", "D e f.", _vector(2))])
        cache.put("globex", [("hr", "A b c.", _vector(1))])
        assert cache.document_ids("acme") == {"hr", "it"}
        assert cache.delete_documents("acme", ["it", "unknown"]) == 1
        assert cache.document_ids("acme") == {"hr"}
        assert cache.delete_tenant("acme") == 1
        assert cache.tenants() == {"globex"}
        assert cache.count() == 1

    def test_a_file_of_another_model_is_emptied_on_open(self, tmp_path):
        path = tmp_path / "v.sqlite"
        SentenceVectorCache(path, model_key="m@1").put("acme", [("hr", "A b c.", _vector(1))])
        assert SentenceVectorCache(path, model_key="m@1").count() == 1  # same model: kept across opens
        assert SentenceVectorCache(path, model_key="m@2").count() == 0

    def test_same_weights_under_another_name_keep_the_vectors(self, tmp_path):
        # A served pipeline names the model by its install path, a component built in code by "packaged:...", and a
        # new environment moves the path: the digest names the weights, so the index's vectors stay.
        path = tmp_path / "v.sqlite"
        SentenceVectorCache(path, model_key="/old/venv/model@d1").put("acme", [("hr", "A b c.", _vector(1))])
        assert SentenceVectorCache(path, model_key="packaged:all-MiniLM-L6-v2@d1").count() == 1
        assert SentenceVectorCache(path, model_key="/new/venv/model@d1").count() == 1
        assert SentenceVectorCache(path, model_key="/new/venv/model@d2").count() == 0

    def test_concurrent_readers_and_writers(self, tmp_path):
        cache = SentenceVectorCache(tmp_path / "v.sqlite", model_key="m@1")
        errors: list[BaseException] = []

        def work(worker: int) -> None:
            try:
                for round_ in range(30):
                    key = (f"doc-{worker}", f"Sentence {round_}.")
                    cache.put("acme", [(*key, _vector(round_))])
                    assert key in cache.get("acme", [key])
            except BaseException as error:  # noqa: BLE001 - reported below
                errors.append(error)

        threads = [threading.Thread(target=work, args=(worker,)) for worker in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert not errors
        assert cache.count() == 120


@pytest.mark.integration
class TestPruneSentenceVectors:
    def test_vectors_of_documents_the_store_lost_are_removed(self, tmp_path):
        from haystack import Document

        from components.document_stores.qdrant_edge import QdrantEdgeDocumentStore
        from components.stores.sentence_vector_cache import SENTENCE_VECTORS_FILE, prune_sentence_vectors

        assert prune_sentence_vectors(tmp_path, store=None) == 0  # no file: nothing to do
        store = QdrantEdgeDocumentStore(path=str(tmp_path / "qdrant"), embedding_dim=384)
        try:
            held = [("acme", "handbook"), ("globex", "handbook")]
            store.write_documents(
                [
                    Document(
                        id=f"{tenant}-{document}:0",
                        content="Employees get 25 days.",
                        embedding=_vector(1).tolist(),
                        meta={"tenant_id": tenant, "document_id": document, "chunk_index": 0},
                    )
                    for tenant, document in held
                ]
            )
            cache = SentenceVectorCache(tmp_path / SENTENCE_VECTORS_FILE, model_key="m@1")
            for tenant, document in [*held, ("acme", "deleted-elsewhere"), ("initech", "gone")]:
                cache.put(tenant, [(document, "Employees get 25 days.", _vector(1)), (document, "More.", _vector(2))])
            # 1 id per store query: the batching is exercised too.
            assert prune_sentence_vectors(tmp_path, store, batch=1) == 4
            assert {(tenant, document) for tenant in cache.tenants() for document in cache.document_ids(tenant)} == set(
                held
            )
        finally:
            store.close()

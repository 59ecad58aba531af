"""Lifecycle functions on the real Qdrant Edge store: invalidate, set_flags, delete_tenant, stats."""

import pytest
from support.indexing_support import module_store, stored_chunk, unit_vector  # noqa: F401 (fixture)

from components.core.document_identity import tenant_document_filter
from components.retrievers.qdrant_edge import QdrantEdgeEmbeddingRetriever
from components.services.document_lifecycle import LifecycleError, delete_tenant, invalidate, set_flags, stats


@pytest.fixture
def store(module_store):
    module_store.delete_all_documents()
    module_store.write_documents(
        [stored_chunk("a", index) for index in range(3)]
        + [stored_chunk("b", index) for index in range(2)]
        # Chunk ids are document_id:chunk_index, so one document_id belongs to one tenant (see the change detector).
        + [stored_chunk("c", index, tenant_id="globex") for index in range(2)]
    )
    return module_store


def search_ids(store, tenant_id="acme"):
    retriever = QdrantEdgeEmbeddingRetriever(document_store=store, top_k=50)
    filters = {"field": "meta.tenant_id", "operator": "==", "value": tenant_id}
    return {
        doc.meta["document_id"] for doc in retriever.run(query_embedding=unit_vector(1), filters=filters)["documents"]
    }


@pytest.mark.integration
class TestDocumentLifecycle:
    def test_invalidate_removes_every_chunk_of_the_tenants_documents(self, store):
        result = invalidate(store, "acme", ["a", "c"], reason="upstream_taint", cascade_id="cascade-1")
        assert (result["invalidated"], result["chunks_removed"], result["cascade_id"]) == (1, 3, "cascade-1")
        assert result["reason"] == "upstream_taint" and result["not_found"] == ["c"]
        assert result["documents"] == [
            {"document_id": "a", "chunks_removed": 3},
            {"document_id": "c", "chunks_removed": 0},
        ]
        assert search_ids(store) == {"b"}  # zero stale results
        assert store.count_documents_by_filter(tenant_document_filter("globex", "c")) == 2  # other tenant untouched

    def test_invalidate_many_in_one_call(self, store):
        assert invalidate(store, "acme", ["a", "b"])["chunks_removed"] == 5
        assert search_ids(store) == set()

    @pytest.mark.parametrize("tenant, ids", [("", ["a"]), ("acme", []), ("acme", ["bad id"])])
    def test_invalidate_rejects_bad_requests(self, store, tenant, ids):
        with pytest.raises(LifecycleError):
            invalidate(store, tenant, ids)
        assert store.count_documents() == 7

    def test_set_flags_without_reembedding(self, store):
        before = {doc.id: doc.embedding for doc in store.filter_documents(tenant_document_filter("acme", "a"))}
        assert set_flags(store, "acme", ["a"], tainted=True) == 3
        after = store.filter_documents(tenant_document_filter("acme", "a"))
        assert all(doc.meta["tainted"] is True and doc.meta["verified"] is False for doc in after)
        assert {doc.id: doc.embedding for doc in after} == before
        assert set_flags(store, "acme", "b", verified=True, tainted=False) == 2
        excluded = {"field": "meta.tainted", "operator": "==", "value": False}
        assert {
            doc.meta["document_id"]
            for doc in store.filter_documents(
                {
                    "operator": "AND",
                    "conditions": [excluded, {"field": "meta.tenant_id", "operator": "==", "value": "acme"}],
                }
            )
        } == {"b"}
        assert set_flags(store, "acme", ["c"], tainted=True) == 0  # another tenant's document is out of reach
        assert all(
            doc.meta["tainted"] is False for doc in store.filter_documents(tenant_document_filter("globex", "c"))
        )

    def test_set_flags_needs_a_flag(self, store):
        with pytest.raises(LifecycleError, match="tainted and/or verified"):
            set_flags(store, "acme", ["a"])
        with pytest.raises(LifecycleError, match="true or false"):
            set_flags(store, "acme", ["a"], tainted="yes")

    def test_delete_tenant(self, store):
        assert delete_tenant(store, "acme") == 5
        assert store.count_documents_by_filter({"field": "meta.tenant_id", "operator": "==", "value": "acme"}) == 0
        assert store.count_documents() == 2
        with pytest.raises(LifecycleError):
            delete_tenant(store, " ")

    def test_stats(self, store):
        set_flags(store, "acme", ["b"], verified=True)
        everything = stats(store)
        assert (everything["chunks"], everything["documents"]) == (7, 3)
        assert everything["tenants"] == {"acme": {"chunks": 5, "documents": 2}, "globex": {"chunks": 2, "documents": 1}}
        acme = stats(store, "acme")
        assert (acme["chunks"], acme["documents"], acme["verified_chunks"], acme["tokens"]) == (5, 2, 2, 25)
        assert acme["source_types"] == {"text": 2}

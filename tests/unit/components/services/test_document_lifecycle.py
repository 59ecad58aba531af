"""Lifecycle functions on the real Qdrant Edge store: invalidate, set_flags, delete_tenant, stats."""

import pytest
from support.indexing_support import stored_chunk, unit_vector

from components.core.access_rule import WriteRule
from components.core.document_identity import tenant_document_filter
from components.retrievers.qdrant_edge import QdrantEdgeEmbeddingRetriever
from components.services.document_lifecycle import (
    LifecycleError,
    delete_tenant,
    invalidate,
    set_flags,
    stats,
    writable_ids,
)


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


@pytest.fixture
def owned_store(module_store):
    """acme: alice's private document (hr), a tenant document (hr + finance), a public one, a p2 project one."""
    module_store.delete_all_documents()
    module_store.write_documents(
        [stored_chunk("alice-notes", index, scope="user", user_id="alice") for index in range(2)]
        + [stored_chunk("budget", 0, tags=["hr", "finance"])]
        + [stored_chunk("public-faq", 0, scope="public")]
        + [stored_chunk("p2-plan", 0, scope="project", project_id="p2", user_id="bob")]
    )
    return module_store


@pytest.mark.integration
class TestWriteRuleInTheLifecycle:
    """docs/contract.md, "Write rule": ids the writer may not change read exactly like ids that do not exist."""

    BOB = WriteRule(tenant_ids=("acme",), tags=("hr",), user_ids=("bob",), projects=("p1",))

    def test_writable_ids_keeps_what_the_writer_may_change(self, owned_store):
        ids = ["alice-notes", "budget", "public-faq", "p2-plan", "missing"]
        assert writable_ids(owned_store, "acme", ids, self.BOB) == ["missing"]
        operator = WriteRule.operator("acme")
        assert writable_ids(owned_store, "acme", ids, operator) == ids and writable_ids(owned_store, "acme", ids, None)
        hr_finance = WriteRule(tenant_ids=("acme",), tags=("finance", "hr"))
        assert writable_ids(owned_store, "acme", ids, hr_finance) == ["budget", "missing"]

    def test_refused_ids_are_answered_as_missing_ones(self, owned_store):
        refused = invalidate(owned_store, "acme", ["alice-notes"], writer=self.BOB)
        missing = invalidate(owned_store, "acme", ["nowhere"], writer=self.BOB)
        shape = lambda result: {key: value for key, value in result.items() if key not in ("at", "document_ids")}  # noqa: E731
        assert shape(refused) == {**shape(missing), "documents": [{"document_id": "alice-notes", "chunks_removed": 0}],
                                  "not_found": ["alice-notes"]}  # fmt: skip
        assert (refused["invalidated"], refused["chunks_removed"]) == (0, 0)
        assert (
            set_flags(owned_store, "acme", ["alice-notes", "public-faq", "p2-plan"], tainted=True, writer=self.BOB) == 0
        )
        assert owned_store.count_documents() == 5
        assert not any(doc.meta["tainted"] for doc in owned_store.filter_documents())

    def test_writable_documents_change_and_the_rest_stay(self, owned_store):
        alice = WriteRule(tenant_ids=("acme",), tags=("hr",), user_ids=("alice",))
        result = invalidate(owned_store, "acme", ["alice-notes", "budget", "public-faq"], writer=alice)
        assert (result["invalidated"], result["chunks_removed"], result["not_found"]) == (
            1,
            2,
            ["budget", "public-faq"],
        )
        publisher = WriteRule(tenant_ids=("acme",), tags=("hr",), public=True)
        assert set_flags(owned_store, "acme", ["public-faq", "budget"], verified=True, writer=publisher) == 1
        assert owned_store.count_documents() == 3

"""LifecycleDocumentWriter: atomic per-document replacement on the real Qdrant Edge store."""

import logging
from dataclasses import replace

import pytest
from haystack.document_stores.in_memory import InMemoryDocumentStore
from support.indexing_support import module_store, roundtrip, store, stored_chunk  # noqa: F401 (fixtures)

from components.caching.document_change_detector import plan_entry
from components.core.document_identity import tenant_document_filter
from components.document_stores.qdrant_edge import QdrantEdgeDocumentStore
from components.writers.lifecycle_document_writer import LifecycleDocumentWriter


def ids(store, document_id, tenant_id="acme"):
    return sorted(doc.id for doc in store.filter_documents(tenant_document_filter(tenant_id, document_id)))


@pytest.mark.integration
class TestLifecycleDocumentWriter:
    def test_init(self, store, caplog):
        assert LifecycleDocumentWriter(document_store=store).document_store is store
        with caplog.at_level(logging.WARNING):
            LifecycleDocumentWriter(document_store=InMemoryDocumentStore())
        assert "not atomic" not in caplog.text and "replace_documents" in caplog.text

    def test_to_dict(self, store):
        data = LifecycleDocumentWriter(document_store=store).to_dict()
        assert data["type"] == "components.writers.lifecycle_document_writer.LifecycleDocumentWriter"
        assert data["init_parameters"]["document_store"]["init_parameters"]["path"] == store.path

    def test_from_dict(self, store):
        restored = roundtrip(LifecycleDocumentWriter(document_store=store))  # from_dict, under the YAML allowlist
        assert isinstance(restored.document_store, QdrantEdgeDocumentStore)

    def test_run_shorter_version_leaves_no_stale_tail(self, store):
        writer = LifecycleDocumentWriter(document_store=store)
        writer.run(documents=[stored_chunk("doc", index) for index in range(5)])
        assert ids(store, "doc") == [f"doc:{index}" for index in range(5)]
        result = writer.run(documents=[stored_chunk("doc", index, source_hash="hash-2") for index in range(2)])
        assert ids(store, "doc") == ["doc:0", "doc:1"]
        assert {doc.meta["source_hash"] for doc in store.filter_documents()} == {"hash-2"}
        assert result["chunks_written"] == 2 and result["documents"][0]["status"] == "indexed"
        assert result["documents"][0]["tokens"] == 10

    def test_run_never_touches_another_tenant(self, store):
        writer = LifecycleDocumentWriter(document_store=store)
        writer.run(documents=[stored_chunk("a", 0, tenant_id="globex"), stored_chunk("b", 0, tenant_id="globex")])
        writer.run(documents=[stored_chunk("c", 0)])
        assert store.count_documents() == 3

    def test_run_a_failing_document_does_not_stop_the_others(self, store):
        writer = LifecycleDocumentWriter(document_store=store)
        writer.run(documents=[stored_chunk("bad", index) for index in range(3)])
        broken = [stored_chunk("bad", 0, source_hash="hash-2")]
        broken = [replace(broken[0], embedding=[0.1, 0.2])]  # wrong dimension: the store refuses the whole document
        result = writer.run(documents=[*broken, stored_chunk("good", 0)])
        statuses = {entry["document_id"]: entry for entry in result["documents"]}
        assert statuses["bad"]["status"] == "error" and "EmbeddingDimensionError" in statuses["bad"]["error"]
        assert statuses["good"]["status"] == "indexed" and result["chunks_written"] == 1
        # The failed document is still fully its old version.
        assert ids(store, "bad") == ["bad:0", "bad:1", "bad:2"]
        assert {doc.meta["source_hash"] for doc in store.filter_documents(tenant_document_filter("acme", "bad"))} == {
            "hash-1"
        }

    def test_run_merges_the_plan_in_order(self, store):
        chunk = stored_chunk("new", 0)
        plan = [
            plan_entry({"document_id": "old", "tenant_id": "acme"}, "unchanged"),
            plan_entry(chunk.meta, "pending"),
            plan_entry({"document_id": "other", "tenant_id": "acme"}, "error", "taken"),
            plan_entry({"document_id": "emptied", "tenant_id": "acme"}, "pending"),
        ]
        result = LifecycleDocumentWriter(document_store=store).run(documents=[chunk], plan=plan)
        assert [(entry["document_id"], entry["status"]) for entry in result["documents"]] == [
            ("old", "unchanged"),
            ("new", "indexed"),
            ("other", "error"),
            ("emptied", "error"),
        ]

    def test_run_in_memory_store_fallback(self):
        store = InMemoryDocumentStore()
        writer = LifecycleDocumentWriter(document_store=store)
        writer.run(documents=[stored_chunk("doc", index) for index in range(3)])
        writer.run(documents=[stored_chunk("doc", 0, source_hash="h2")])
        assert [doc.id for doc in store.filter_documents()] == ["doc:0"]

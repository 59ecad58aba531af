"""DocumentChangeDetector against the real Qdrant Edge store (chunks with synthetic vectors)."""

import pytest
from haystack import Document
from support.indexing_support import roundtrip, stored_chunk

from components.caching.document_change_detector import DEFAULT_COMPARE_FIELDS, DocumentChangeDetector
from components.document_stores.qdrant_edge import QdrantEdgeDocumentStore


def source(document_id: str, source_hash: str = "hash-1", tenant_id: str = "acme", **meta) -> Document:
    base = stored_chunk(document_id, 0, tenant_id=tenant_id, source_hash=source_hash, **meta).meta
    base.update(chunk_index=None, chunk_hash=None, token_count=None)
    return Document(content=f"content of {document_id}", meta=base)


@pytest.mark.integration
class TestDocumentChangeDetector:
    def test_init(self, store):
        detector = DocumentChangeDetector(document_store=store)
        assert detector._fields == DEFAULT_COMPARE_FIELDS
        with pytest.raises(ValueError, match="source_hash"):
            DocumentChangeDetector(document_store=store, compare_fields=["tags"])

    def test_to_dict(self, store):
        data = DocumentChangeDetector(document_store=store, compare_fields=["source_hash"]).to_dict()
        assert data["type"] == "components.caching.document_change_detector.DocumentChangeDetector"
        assert data["init_parameters"]["compare_fields"] == ["source_hash"]
        assert data["init_parameters"]["document_store"]["type"].endswith("QdrantEdgeDocumentStore")

    def test_from_dict(self, store):
        restored = roundtrip(DocumentChangeDetector(document_store=store))  # from_dict, under the YAML allowlist
        assert (
            isinstance(restored.document_store, QdrantEdgeDocumentStore) and restored.document_store.path == store.path
        )

    def test_run_plans_new_unchanged_and_changed(self, store):
        store.write_documents([stored_chunk("same", 0), stored_chunk("same", 1), stored_chunk("edited", 0)])
        documents = [source("new"), source("same"), source("same"), source("edited", source_hash="hash-2")]
        result = DocumentChangeDetector(document_store=store).run(documents=documents)
        assert [(entry["document_id"], entry["status"]) for entry in result["plan"]] == [
            ("new", "pending"),
            ("same", "unchanged"),
            ("edited", "pending"),
        ]
        assert [doc.meta["document_id"] for doc in result["documents"]] == ["new", "edited"]
        assert all(entry["chunks"] == 0 and entry["tokens"] == 0 for entry in result["plan"])

    def test_run_access_meta_change_is_a_change(self, store):
        store.write_documents([stored_chunk("doc", 0)])
        result = DocumentChangeDetector(document_store=store).run(documents=[source("doc", tags=["hr", "finance"])])
        assert result["plan"][0]["status"] == "pending"
        same_tags_reordered = DocumentChangeDetector(document_store=store).run(documents=[source("doc", tags=["hr"])])
        assert same_tags_reordered["plan"][0]["status"] == "unchanged"

    def test_run_another_index_format_is_re_indexed(self, store):
        # docs/operations.md, "Re-indexing after an index-format change": chunks written before contextual headers
        # (no index_format) or in an older format are re-indexed though their source is unchanged.
        store.write_documents([stored_chunk("old", 0), stored_chunk("current", 0, index_format="context-header-v1")])
        detector = DocumentChangeDetector(document_store=store, index_format="context-header-v1")
        plan = detector.run(documents=[source("old"), source("current")])["plan"]
        assert [(entry["document_id"], entry["status"]) for entry in plan] == [
            ("old", "pending"),
            ("current", "unchanged"),
        ]
        # Without an index format the detector compares content and meta only, as before.
        assert DocumentChangeDetector(document_store=store).run(documents=[source("old")])["plan"][0]["status"] == (
            "unchanged"
        )
        assert roundtrip(detector).index_format == "context-header-v1"
        with pytest.raises(ValueError, match="index_format"):
            DocumentChangeDetector(document_store=store, index_format="")

    def test_run_flags_do_not_count(self, store):
        store.write_documents([stored_chunk("doc", 0, tainted=True)])
        assert (
            DocumentChangeDetector(document_store=store).run(documents=[source("doc")])["plan"][0]["status"]
            == "unchanged"
        )

    def test_run_force_reindexes_unchanged(self, store):
        store.write_documents([stored_chunk("doc", 0)])
        result = DocumentChangeDetector(document_store=store).run(documents=[source("doc")], force=True)
        assert result["plan"][0]["status"] == "pending" and len(result["documents"]) == 1

    def test_run_document_id_of_another_tenant_is_a_new_document(self, store):
        # Ids are per tenant on the Edge store (docs/contract.md "Document ids"): globex's copy is not looked at.
        store.write_documents([stored_chunk("shared-id", 0, tenant_id="globex")])
        result = DocumentChangeDetector(document_store=store).run(documents=[source("shared-id")])
        assert result["plan"][0]["status"] == "pending" and result["plan"][0].get("error") is None
        assert len(result["documents"]) == 1

    def test_run_store_with_global_ids_refuses_another_tenants_id(self, store):
        class GlobalIds:
            """A store whose chunk ids collide across tenants, like qdrant-haystack's."""

            ids_per_tenant = False

            def __getattr__(self, name):
                return getattr(store, name)

        store.write_documents([stored_chunk("shared-id", 0, tenant_id="globex")])
        result = DocumentChangeDetector(document_store=GlobalIds()).run(documents=[source("shared-id")], force=True)
        assert result["plan"][0]["status"] == "error" and "another tenant" in result["plan"][0]["error"]
        assert result["documents"] == []

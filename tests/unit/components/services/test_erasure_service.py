"""The erasure service without HTTP: what deleting a user or a tenant removes (docs/contract.md, "Deletion")."""

import time

import pytest
from haystack import Document

from components.core.requester import Identity
from components.document_stores.qdrant_edge import QdrantEdgeDocumentStore
from components.services.conversation_service import ConversationService, ConversationSettings
from components.services.erasure_service import erase_tenant, erase_user
from components.stores import key_store
from components.stores.conversation_store import CONVERSATIONS_FILE
from components.stores.record_store import RecordStore


@pytest.mark.integration
class TestEraseFunctions:
    def test_erase_user_across_tenants_and_tenant_without_directory(self, tmp_path):
        store = QdrantEdgeDocumentStore(path=str(tmp_path / "qdrant"), embedding_dim=4)
        meta = {"tags": ["hr"], "scope": "user", "user_id": "u-x"}
        store.write_documents(
            [
                Document(
                    id=f"n:{i}",
                    content=f"note {i}",
                    meta={**meta, "tenant_id": t, "document_id": "n"},
                    embedding=[1, 0, 0, 0],
                )
                for i, t in enumerate(("a", "b"))
            ]
        )
        records = RecordStore(tmp_path / "records.sqlite")
        records.log_query(endpoint="search", query="q", latency_ms=1, tenant_id="a", user_id="u-x")
        assert erase_user(store, "u-x", records=records, keys_file=tmp_path / "none.json") == {
            "chunks": 2,
            "api_keys": 0,
            "query_log_rows": 1,
        }
        assert erase_tenant(store, "a", records=records, directory=None, keys_file=None) == {
            "chunks": 0, "tag_owners": 0, "api_keys": 0, "query_log_rows": 0, "index_events": 0,
        }  # fmt: skip
        records.close()
        store.close()

    def test_erase_user_with_a_data_dir_takes_keys_and_conversations_in_one_tenant(self, tmp_path):
        store = QdrantEdgeDocumentStore(path=str(tmp_path / "qdrant"), embedding_dim=4)
        keys_file = tmp_path / "api_keys.json"
        for tenant in ("a", "b"):
            key_store.register_key(keys_file, tenant_id=tenant, tags=["hr"], user_id="u-x")
        key_store.register_key(keys_file, tenant_id="a", tags=["hr"], user_id="u-y")
        conversations = ConversationService(tmp_path / CONVERSATIONS_FILE, ConversationSettings(), None)
        for tenant in ("a", "b"):
            conversations.create(Identity(tenant, ("hr",), "u-x"))
        conversations.close()
        records = RecordStore(tmp_path / "records.sqlite")
        report = erase_user(store, "u-x", "a", records=records, keys_file=keys_file, data_dir=tmp_path)
        assert report == {
            "chunks": 0, "sentence_vectors": 0, "api_keys": 1, "conversations": 1, "query_log_rows": 0
        }  # fmt: skip
        assert sorted((r.tenant_id, r.user_id) for r in key_store.list_keys(keys_file)) == [("a", "u-y"), ("b", "u-x")]
        (tombstone,) = records.events()
        assert (tombstone["event"], tombstone["tenant_id"]) == ("delete_user", "a")
        assert time.time() - tombstone["created_at"] < 60
        records.close()
        store.close()

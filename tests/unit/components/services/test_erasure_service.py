"""The erasure service without HTTP: what deleting a user or a tenant removes (docs/contract.md, "Deletion")."""

import time

import pytest
from haystack import Document

from components.core.requester import Identity
from components.document_stores.qdrant_edge import QdrantEdgeDocumentStore
from components.services.conversation_service import ConversationService, ConversationSettings
from components.services.erasure_service import erase_tenant, erase_user, purge_due
from components.stores import key_store
from components.stores.conversation_store import CONVERSATIONS_FILE
from components.stores.feedback_store import FeedbackStore
from components.stores.kept_question_store import KeptQuestionStore
from components.stores.record_store import RecordStore
from components.stores.sync_state import SYNC_STATE_FILE, SyncState, WebPage
from components.stores.tag_directory import TagDirectory


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
            "feedback": 0,
            "kept_questions": 0,
        }
        assert erase_tenant(store, "a", records=records, directory=None, keys_file=None) == {
            "chunks": 0, "tag_owners": 0, "api_keys": 0, "query_log_rows": 0, "index_events": 0, "feedback": 0,
            "kept_questions": 0,
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
            "chunks": 0, "sentence_vectors": 0, "api_keys": 1, "conversations": 1, "query_log_rows": 0, "feedback": 0,
            "kept_questions": 0,
        }  # fmt: skip
        assert sorted((r.tenant_id, r.user_id) for r in key_store.list_keys(keys_file)) == [("a", "u-y"), ("b", "u-x")]
        (tombstone,) = records.events()
        assert (tombstone["event"], tombstone["tenant_id"]) == ("delete_user", "a")
        assert time.time() - tombstone["created_at"] < 60
        records.close()
        store.close()

    @pytest.mark.parametrize("erase", ["tenant", "user"])
    def test_kept_questions_and_feedback_are_erased_from_the_rows_and_the_file(self, tmp_path, erase):
        store = QdrantEdgeDocumentStore(path=str(tmp_path / "qdrant"), embedding_dim=4)
        records = RecordStore(tmp_path / "records.sqlite")
        kept, feedback = KeptQuestionStore(records.database), FeedbackStore(records.database)
        for tenant, user, marker in (("a", "u-x", "QUOKKA-7741"), ("b", "u-x", "WOMBAT-1180"), ("a", "u-y", "EMU-5")):
            query_id = f"{tenant}-{user}"
            kept.keep(query_id=query_id, tenant_id=tenant, user_id=user, kind="routed", tag="hr",
                      question=f"Where is {marker}?")  # fmt: skip
            feedback.record(query_id=query_id, tenant_id=tenant, user_id=user, key_id=None, rating="down",
                            comment=f"{marker} is missing")  # fmt: skip
        if erase == "tenant":
            report = erase_tenant(store, "a", records=records, directory=None, keys_file=None)
            gone, left = ("QUOKKA-7741", "EMU-5"), ("WOMBAT-1180",)
        else:
            report = erase_user(store, "u-x", "a", records=records, keys_file=None)
            gone, left = ("QUOKKA-7741",), ("WOMBAT-1180", "EMU-5")
        assert (report["kept_questions"], report["feedback"]) == (len(gone), len(gone))
        remaining = [row["question"] for tenant in ("a", "b") for row in kept.questions(tenant)]
        assert sorted(remaining) == sorted(f"Where is {marker}?" for marker in left)
        comments = [row["comment"] for tenant in ("a", "b") for row in feedback.recent(tenant)]
        assert sorted(comments) == sorted(f"{marker} is missing" for marker in left)
        records.close()
        store.close()
        # secure_delete zeroes the freed pages and the WAL was truncated: no byte of the erased text is left.
        stored = b"".join(path.read_bytes() for path in tmp_path.glob("records.sqlite*") if path.is_file())
        for marker in gone:
            assert marker.encode() not in stored
        for marker in left:
            assert marker.encode() in stored


@pytest.mark.integration
class TestErasureReachesEveryStore:
    def test_tenant_erasure_removes_its_sources_mirrors_and_sync_rows(self, tmp_path, monkeypatch):
        sources_file = tmp_path / "sources.yml"
        sources_file.write_text(
            "sources:\n"
            "  - {name: handbook, type: git, url: 'file:///srv/h.git', tenant_id: a, tags: [eng]}\n"
            "  - {name: wiki, type: git, url: 'file:///srv/w.git', tenant_id: b, tags: [eng]}\n"
        )
        monkeypatch.setenv("SOURCEBOUND_SOURCES", str(sources_file))
        state = SyncState(tmp_path / SYNC_STATE_FILE)
        for name, tenant in (("handbook", "a"), ("wiki", "b"), ("retired", "a")):
            state.advance(name, "c1", {"guide.md": ("blob1", f"{name}-guide")}, [])
            state.finish_job(state.create_job(name, tenant, "manual"), result={"indexed": 1})
            (tmp_path / "sources" / f"{name}.git" / "objects").mkdir(parents=True)
        state.close()
        store = QdrantEdgeDocumentStore(path=str(tmp_path / "qdrant"), embedding_dim=4)
        records = RecordStore(tmp_path / "records.sqlite")
        report = erase_tenant(store, "a", records=records, directory=None, keys_file=None, data_dir=tmp_path)
        records.close()
        store.close()
        # The declared source of "a" and the one only its jobs still name ("retired"): mirror and rows go.
        assert report["source_mirrors"] == 2 and report["sync_rows"] == 6
        assert sorted(path.name for path in (tmp_path / "sources").iterdir()) == ["wiki.git"]
        state = SyncState(tmp_path / SYNC_STATE_FILE)
        try:
            assert state.last_commit("handbook") is None and state.last_commit("retired") is None
            assert state.last_commit("wiki") == "c1" and state.tenant_sources("b") == {"wiki"}
            assert state.tenant_sources("a") == set()
        finally:
            state.close()

    def test_tenant_erasure_removes_crawled_pages_of_a_source_known_only_by_its_chunks(self, tmp_path, monkeypatch):
        # A crawl run by the CLI records pages but no job, and no sources file declares it: the tenant's chunks
        # name it (meta.source_name). The other tenant's crawl stays.
        monkeypatch.delenv("SOURCEBOUND_SOURCES", raising=False)
        state = SyncState(tmp_path / SYNC_STATE_FILE)
        state.record_web_pages("crawl", [WebPage("https://a.example/p", "crawl-p", etag='"e1"', links=("x",))])
        state.record_web_pages("b-site", [WebPage("https://b.example/q", "b-site-q")])
        state.close()
        store = QdrantEdgeDocumentStore(path=str(tmp_path / "qdrant"), embedding_dim=4)
        store.write_documents(
            [
                Document(id=f"{doc}:0", content=f"page {doc}", embedding=[1, 0, 0, 0],
                         meta={"tenant_id": tenant, "tags": ["web"], "document_id": doc, "source_name": source})
                for doc, tenant, source in (("crawl-p", "a", "crawl"), ("b-site-q", "b", "b-site"))
            ]
        )  # fmt: skip
        records = RecordStore(tmp_path / "records.sqlite")
        report = erase_tenant(store, "a", records=records, directory=None, keys_file=None, data_dir=tmp_path)
        records.close()
        store.close()
        assert report["chunks"] == 1 and report["sync_rows"] == 1 and report["source_mirrors"] == 0
        state = SyncState(tmp_path / SYNC_STATE_FILE)
        try:
            assert state.web_pages("crawl") == {}
            assert list(state.web_pages("b-site")) == ["https://b.example/q"]
            assert state.known_sources() == {"b-site"}
        finally:
            state.close()

    def test_user_erasure_removes_tag_ownerships_and_email(self, tmp_path):
        directory = TagDirectory(tmp_path / "tags.sqlite")
        directory.load(
            {
                "users": [{"id": "u-x", "email": "x.secret@acme.example"}, {"id": "u-y", "email": "y@acme.example"}],
                "tags": [
                    {"tenant_id": "a", "name": "hr", "owner_user_id": "u-x"},
                    {"tenant_id": "b", "name": "hr", "owner_user_id": "u-x"},
                    {"tenant_id": "a", "name": "it", "owner_user_id": "u-y"},
                ],
            }
        )
        store = QdrantEdgeDocumentStore(path=str(tmp_path / "qdrant"), embedding_dim=4)
        records = RecordStore(tmp_path / "records.sqlite")
        in_a = erase_user(store, "u-x", "a", records=records, keys_file=None, directory=directory)
        # Still the owner in tenant b: the email stays until that goes too.
        assert (in_a["tag_owners"], in_a["users"]) == (1, 0)
        assert directory.lookup("a", "hr").owner_user_id is None
        assert directory.lookup("b", "hr").owner_email == "x.secret@acme.example"
        everywhere = erase_user(store, "u-x", records=records, keys_file=None, directory=directory)
        assert (everywhere["tag_owners"], everywhere["users"]) == (1, 1)
        assert directory.list_users() == [("u-y", "y@acme.example")]
        assert directory.lookup("a", "it").owner_email == "y@acme.example"
        records.close()
        store.close()
        # Zeroed, not left in a free page of the file.
        assert b"x.secret@acme.example" not in (tmp_path / "tags.sqlite").read_bytes()

    def test_purge_due_compacts_old_deletions_only(self, tmp_path):
        store = QdrantEdgeDocumentStore(path=str(tmp_path / "qdrant"), embedding_dim=4)
        store.write_documents(
            [Document(id="d:0", content="INVALIDATED-TEXT", meta={"tenant_id": "a"}, embedding=[1, 0, 0, 0])]
        )
        store.delete_by_filter({"field": "meta.tenant_id", "operator": "==", "value": "a"})
        assert purge_due(store, max_age_s=3600) is None
        assert store.pending_deletions()["points"] == 1
        assert purge_due(store, max_age_s=0)["points"] == 0
        assert store.pending_deletions() is None
        store.close()
        held = [
            path for path in (tmp_path / "qdrant").rglob("*") if path.is_file() and b"INVALIDATED" in path.read_bytes()
        ]
        assert held == []
        assert purge_due(object(), max_age_s=0) is None  # a store that cannot purge (a Qdrant server)

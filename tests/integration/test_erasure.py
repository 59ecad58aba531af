"""
Delete means gone (docs/contract.md "Deletion"), checked in the files themselves: after a tenant
delete over HTTP the store, ``records.sqlite``, ``tags.sqlite``, the keys file, ``conversations.sqlite`` and
``glossary.sqlite`` hold nothing of the
tenant but one tombstone row with counts; ``sourcebound delete --user`` removes a user's private
documents, log rows and user keys and leaves everyone else's.
"""

import json
from types import SimpleNamespace

import pytest
from support.api_server import ApiServer
from support.sqlite_files import rows

from components.stores import key_store
from components.stores.tag_directory import TagDirectory
from hayhooks_app.cli import main as sourcebound

ACME_QUERY = "secret acme merger codename"  # query text that must not survive the tenant
UNANSWERED = "Where is the zeppelin hangar lease"  # a kept question, and a feedback comment on its answer
COMMENT = "quokka-cartography comment"


def documents_for(tenant):
    return [
        {
            "content": f"{tenant} shared handbook: the office opens at eight.",
            "tenant_id": tenant,
            "tags": ["hr"],
            "document_id": "handbook",
        },
        {
            "content": f"{tenant} private notes of alice: salary review in March.",
            "tenant_id": tenant,
            "tags": ["hr"],
            "document_id": "alice-notes",
            "scope": "user",
            "user_id": "u-alice",
        },
        {
            "content": f"{tenant} project plan of alice for atlas.",
            "tenant_id": tenant,
            "tags": ["hr"],
            "document_id": "alice-atlas",
            "scope": "project",
            "user_id": "u-alice",
            "project_id": "atlas",
        },
        {
            "content": f"{tenant} private notes of bob: dentist on Friday.",
            "tenant_id": tenant,
            "tags": ["hr"],
            "document_id": "bob-notes",
            "scope": "user",
            "user_id": "u-bob",
        },
    ]


def chunks_of(store_path, **meta):
    from components.document_stores.qdrant_edge import QdrantEdgeDocumentStore

    store = QdrantEdgeDocumentStore(path=str(store_path), embedding_dim=384)
    try:
        conditions = [{"field": f"meta.{name}", "operator": "==", "value": value} for name, value in meta.items()]
        return store.filter_documents({"operator": "AND", "conditions": conditions} if conditions else None)
    finally:
        store.close()


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    """A data dir two tenants used: documents, queries, tag owners and keys of acme and globex; the server stopped."""
    data_dir = tmp_path_factory.mktemp("erasure") / "data"
    env = {"SOURCEBOUND_BOOTSTRAP_CORPUS": "false", "SOURCEBOUND_KEEP_UNANSWERED_QUESTIONS": "true"}
    with ApiServer(data_dir, env=env) as server:
        for tenant in ("acme", "globex"):
            assert server.client.post("/index/run", json={"documents": documents_for(tenant)}).status_code == 200
            for user in ("u-alice", "u-bob"):
                body = {
                    "query": ACME_QUERY if tenant == "acme" else "office hours",
                    "tenant_id": tenant,
                    "user_tags": ["hr"],
                    "user_id": user,
                }
                assert server.client.post("/search/run", json=body).status_code == 200
                # A question the documents do not answer (kept: declined) and the asker's comment on it.
                asked = {**body, "query": f"{UNANSWERED} for {tenant}?"}
                answer = server.client.post("/rag/run", json=asked).json()["result"]
                assert answer["action"] == "ROUTE", answer
                rated = {"query_id": answer["query_id"], "rating": "down", "comment": f"{COMMENT} ({tenant})",
                         "tenant_id": tenant, "user_id": user}  # fmt: skip
                assert server.client.post("/feedback", json=rated).status_code == 200
                conversation = server.client.post("/conversations", json={"tenant_id": tenant, "user_id": user})
                assert conversation.status_code == 200
            glossary = {"tenant_id": tenant, "csv": "term,aliases\nhandbook,staff guide\n"}
            assert server.client.post("/glossary", json=glossary).status_code == 200
        directory = TagDirectory(data_dir / "tags.sqlite")
        directory.add_user("u-alice", "alice@example.com")
        for tenant in ("acme", "globex"):
            directory.set_tag_owner(tenant, "hr", "u-alice")
            key_store.register_key(data_dir / "api_keys.json", tenant_id=tenant, tags=["hr"], permissions=["admin"])
            key_store.register_key(data_dir / "api_keys.json", tenant_id=tenant, tags=["hr"], user_id="u-alice")
        response = server.client.post("/delete_tenant/run", json={"tenant_id": "acme"})
        assert response.status_code == 200, response.text
        searched_after = server.client.post(
            "/search/run", json={"query": "handbook", "tenant_id": "acme", "user_tags": ["hr"], "user_id": "u-alice"}
        ).json()["result"]["results"]
    return SimpleNamespace(path=data_dir, report=response.json()["result"], searched_after=searched_after)


@pytest.mark.integration
@pytest.mark.slow
class TestTenantDelete:
    def test_report_names_what_was_removed(self, data_dir):
        assert data_dir.report == {
            "tenant_id": "acme", "chunks_removed": 4,
            # index_events: the indexing and the glossary load.
            "removed": {"chunks": 4, "query_log_rows": 4, "index_events": 2, "tag_owners": 1, "api_keys": 2,
                        "conversations": 2, "glossary": 1, "sentence_vectors": 4, "feedback": 2, "kept_questions": 2,
                        "source_mirrors": 0, "sync_rows": 0},
        }  # fmt: skip
        assert data_dir.searched_after == []

    def test_store_holds_nothing_of_the_tenant(self, data_dir):
        assert chunks_of(data_dir.path / "qdrant", tenant_id="acme") == []
        assert len(chunks_of(data_dir.path / "qdrant", tenant_id="globex")) == 4

    def test_records_keep_one_tombstone_without_content(self, data_dir):
        records = data_dir.path / "records.sqlite"
        # The search made right after the delete is logged anew; nothing from before it survives.
        assert rows(
            records, "SELECT count(*) FROM query_log WHERE tenant_id = 'acme' AND query_text = ?", ACME_QUERY
        ) == [(0,)]
        assert rows(records, "SELECT count(*) FROM query_log WHERE query_text LIKE '%merger%'") == [(0,)]
        events = rows(
            records,
            "SELECT event, document_ids, reason, cascade_id, chunks, details FROM index_events "
            "WHERE tenant_id = 'acme'",
        )
        assert len(events) == 1
        event, document_ids, reason, cascade_id, chunks, details = events[0]
        assert (event, document_ids, reason, cascade_id, chunks) == ("delete_tenant", None, None, None, 4)
        assert json.loads(details) == {
            "chunks": 4,
            "query_log_rows": 4,
            "index_events": 2,
            "tag_owners": 1,
            "api_keys": 2,
            "conversations": 2,
            "glossary": 1,
            "sentence_vectors": 4,
            "feedback": 2,
            "kept_questions": 2,
            "source_mirrors": 0,
            "sync_rows": 0,
        }
        assert rows(records, "SELECT count(*) FROM query_log WHERE tenant_id = 'globex'") == [(4,)]
        assert rows(records, "SELECT count(*) FROM index_events WHERE tenant_id = 'globex'") == [(2,)]
        # No file of the database still holds the query text (deleted pages are not left in the WAL or the file).
        for name in ("records.sqlite", "records.sqlite-wal"):
            path = data_dir.path / name
            assert not path.exists() or b"merger codename" not in path.read_bytes(), name

    def test_kept_questions_and_feedback_are_gone_from_the_rows_and_the_file(self, data_dir):
        records = data_dir.path / "records.sqlite"
        for table in ("kept_questions", "feedback"):
            assert rows(records, f"SELECT count(*) FROM {table} WHERE tenant_id = 'acme'") == [(0,)], table  # noqa: S608
            assert rows(records, f"SELECT count(*) FROM {table} WHERE tenant_id = 'globex'") == [(2,)], table  # noqa: S608
        stored = b"".join(path.read_bytes() for path in data_dir.path.glob("records.sqlite*") if path.is_file())
        assert f"{UNANSWERED} for acme".encode() not in stored and f"{COMMENT} (acme)".encode() not in stored
        assert f"{UNANSWERED} for globex".encode() in stored  # the other tenant's stay

    def test_tag_owners_and_keys_are_gone(self, data_dir):
        assert rows(data_dir.path / "tags.sqlite", "SELECT count(*) FROM tags WHERE tenant_id = 'acme'") == [(0,)]
        assert rows(data_dir.path / "tags.sqlite", "SELECT count(*) FROM tags WHERE tenant_id = 'globex'") == [(1,)]
        tenants = [entry["tenant_id"] for entry in json.loads((data_dir.path / "api_keys.json").read_text())["keys"]]
        assert tenants == ["globex", "globex"]

    def test_conversations_and_glossary_are_gone(self, data_dir):
        conversations = data_dir.path / "conversations.sqlite"
        assert rows(conversations, "SELECT count(*) FROM rag_conversations WHERE tenant_id = 'acme'") == [(0,)]
        assert rows(conversations, "SELECT count(*) FROM rag_conversations WHERE tenant_id = 'globex'") == [(2,)]
        assert rows(data_dir.path / "glossary.sqlite", "SELECT tenant_id FROM glossary_vocabularies") == [("globex",)]

    def test_stored_sentence_vectors_are_gone(self, data_dir):
        vectors = data_dir.path / "sentence_vectors.sqlite"
        assert rows(vectors, "SELECT count(*) FROM sentence_vectors WHERE tenant_id = 'acme'") == [(0,)]
        assert rows(vectors, "SELECT count(*) FROM sentence_vectors WHERE tenant_id = 'globex'") == [(4,)]


@pytest.mark.integration
@pytest.mark.slow
class TestUserDelete:
    def test_cli_delete_user_removes_private_documents_log_rows_and_keys(self, data_dir, capsys):
        code = sourcebound(
            ["delete", "--user", "u-alice", "--tenant", "globex", "--json", "--data-dir", str(data_dir.path)]
        )
        out = capsys.readouterr().out
        assert code == 0, out
        assert json.loads(out) == {
            "user_id": "u-alice", "tenant_id": "globex",
            "removed": {"chunks": 2, "sentence_vectors": 2, "api_keys": 1, "tag_owners": 1, "users": 1,
                        "conversations": 1, "feedback": 1, "kept_questions": 1, "query_log_rows": 2},
        }  # fmt: skip
        # The reader's stored sentence vectors of alice's private documents went with them; bob's stay.
        assert sorted(
            rows(
                data_dir.path / "sentence_vectors.sqlite",
                "SELECT DISTINCT tenant_id, document_id FROM sentence_vectors",
            )
        ) == [("globex", "bob-notes"), ("globex", "handbook")]
        assert rows(data_dir.path / "conversations.sqlite", "SELECT tenant_id, user_id FROM rag_conversations") == [
            ("globex", "u-bob")
        ]
        left = {
            (d.meta["document_id"], d.meta.get("user_id"))
            for d in chunks_of(data_dir.path / "qdrant", tenant_id="globex")
        }
        assert left == {("handbook", None), ("bob-notes", "u-bob")}
        records = data_dir.path / "records.sqlite"
        assert rows(records, "SELECT count(*) FROM query_log WHERE user_id = 'u-alice' AND tenant_id = 'globex'") == [
            (0,)
        ]
        # --tenant limits it: alice's row in acme (the search made after acme's delete) stays.
        assert rows(records, "SELECT count(*) FROM query_log WHERE user_id = 'u-alice' AND tenant_id = 'acme'") == [
            (1,)
        ]
        assert rows(records, "SELECT count(*) FROM query_log WHERE user_id = 'u-bob' AND tenant_id = 'globex'") == [
            (2,)
        ]
        # The user's kept question and feedback went too; bob's stay.
        for table in ("kept_questions", "feedback"):
            assert rows(records, f"SELECT user_id FROM {table} WHERE tenant_id = 'globex'") == [("u-bob",)]  # noqa: S608
        tombstone = rows(records, "SELECT tenant_id, details FROM index_events WHERE event = 'delete_user'")
        assert [(tenant, json.loads(details)) for tenant, details in tombstone] == [
            ("globex", {"chunks": 2, "sentence_vectors": 2, "api_keys": 1, "tag_owners": 1, "users": 1,
                        "conversations": 1, "feedback": 1, "kept_questions": 1, "query_log_rows": 2})
        ]  # fmt: skip
        assert "u-alice" not in tombstone[0][1]
        users = [entry.get("user_id") for entry in json.loads((data_dir.path / "api_keys.json").read_text())["keys"]]
        assert users == [None]

    def test_cli_delete_needs_a_target(self, data_dir, capsys):
        assert sourcebound(["delete", "--data-dir", str(data_dir.path)]) == 2
        assert "--tenant" in capsys.readouterr().err

"""
Document ids are per tenant (docs/contract.md "Document ids"): point ids derive from the tenant and
the Haystack id (``document_id:chunk_index``), so the same ``document_id`` in two tenants is two
unrelated documents, and nothing an indexing call returns depends on another tenant's ids. A data
dir written with the old scheme (point id from the Haystack id alone) is re-keyed on start-up.
"""

import uuid

import pytest
from haystack import Document
from haystack.document_stores.types import DuplicatePolicy
from support.api_server import ApiServer

from components.document_stores.qdrant_edge import QdrantEdgeDocumentStore
from components.document_stores.qdrant_edge import document_store as document_store_module
from components.document_stores.qdrant_edge.converters import UUID_NAMESPACE, point_id

DIM = 4


def chunk(doc_id: str, content: str, embedding: list[float], tenant_id: str) -> Document:
    meta = {
        "tenant_id": tenant_id,
        "tags": ["hr"],
        "document_id": doc_id.split(":")[0],
        "chunk_index": int(doc_id.split(":")[1]),
    }
    return Document(id=doc_id, content=content, meta=meta, embedding=embedding)


def old_point_id(document_id: str, tenant_id: str | None = None) -> uuid.UUID:
    """The point id scheme of data dirs written before ids were per tenant."""
    return uuid.uuid5(UUID_NAMESPACE, document_id)


def stored_point_ids(store: QdrantEdgeDocumentStore) -> dict[tuple[str, str], uuid.UUID]:
    shared = store._shard_state()
    records = document_store_module._scroll_all(shared, None, with_payload=True)
    return {
        (record.payload["meta"].get("tenant_id"), record.payload["id"]): uuid.UUID(str(record.id)) for record in records
    }


@pytest.fixture
def store(tmp_path):
    document_store = QdrantEdgeDocumentStore(path=str(tmp_path / "qdrant"), embedding_dim=DIM)
    yield document_store
    document_store.close()


@pytest.mark.unit
class TestPointIds:
    def test_point_id_depends_on_the_tenant(self):
        assert point_id("handbook:0", "acme") != point_id("handbook:0", "globex")
        assert point_id("handbook:0", "acme") == point_id("handbook:0", "acme")
        # Tenant and id are kept apart: no concatenation makes two pairs collide.
        assert point_id("b:0", "a") != point_id("a:0", "b") and point_id(":0", "a\nb") != point_id("b:0", "a\n")

    def test_without_a_tenant_the_plain_id_decides(self):
        assert point_id("doc:0") == point_id("doc:0", None) == uuid.uuid5(UUID_NAMESPACE, "doc:0")


@pytest.mark.integration
class TestSameIdInTwoTenants:
    def test_same_ids_coexist(self, store):
        store.write_documents([chunk("handbook:0", "acme's handbook", [1, 0, 0, 0], "acme")])
        store.write_documents(
            [chunk("handbook:0", "globex's handbook", [0, 1, 0, 0], "globex")], policy=DuplicatePolicy.OVERWRITE
        )
        assert sorted(
            d.content for d in store.filter_documents({"field": "id", "operator": "==", "value": "handbook:0"})
        ) == [
            "acme's handbook",
            "globex's handbook",
        ]
        acme = {"field": "meta.tenant_id", "operator": "==", "value": "acme"}
        assert [d.content for d in store.filter_documents(acme)] == ["acme's handbook"]

    def test_overwrite_and_replace_stay_in_their_tenant(self, store):
        store.write_documents(
            [
                chunk("handbook:0", "acme v1", [1, 0, 0, 0], "acme"),
                chunk("handbook:0", "globex v1", [0, 1, 0, 0], "globex"),
            ]
        )
        store.write_documents(
            [chunk("handbook:0", "globex v2", [0, 1, 0, 0], "globex")], policy=DuplicatePolicy.OVERWRITE
        )
        globex = {"field": "meta.tenant_id", "operator": "==", "value": "globex"}
        assert store.replace_documents(globex, [chunk("handbook:0", "globex v3", [0, 1, 0, 0], "globex")]) == (1, 1)
        assert sorted(d.content for d in store.filter_documents()) == ["acme v1", "globex v3"]
        assert store.delete_by_filter(globex) == 1
        assert [d.content for d in store.filter_documents()] == ["acme v1"]

    def test_duplicate_policies_look_only_at_the_own_tenant(self, store):
        store.write_documents([chunk("handbook:0", "acme", [1, 0, 0, 0], "acme")])
        # FAIL/NONE: an id of another tenant is no duplicate, so nothing reveals that acme has it.
        assert (
            store.write_documents([chunk("handbook:0", "globex", [0, 1, 0, 0], "globex")], policy=DuplicatePolicy.FAIL)
            == 1
        )
        assert (
            store.write_documents([chunk("handbook:0", "again", [0, 1, 0, 0], "globex")], policy=DuplicatePolicy.SKIP)
            == 0
        )

    def test_delete_documents_by_id_removes_every_tenants_copy(self, store):
        store.write_documents(
            [chunk("handbook:0", "a", [1, 0, 0, 0], "acme"), chunk("handbook:0", "g", [0, 1, 0, 0], "globex")]
        )
        store.write_documents([Document(id="plain", content="no tenant", embedding=[0, 0, 1, 0])])
        store.delete_documents(["handbook:0", "plain"])
        assert store.count_documents() == 0


@pytest.mark.integration
class TestMigration:
    def test_old_data_dir_is_rekeyed_on_open(self, tmp_path, monkeypatch):
        path = str(tmp_path / "qdrant")
        # A data dir as the previous version wrote it: point ids from the Haystack id alone, no scheme marker.
        with monkeypatch.context() as patch:
            patch.setattr(document_store_module, "point_id", old_point_id)
            patch.setattr(document_store_module.QdrantEdgeDocumentStore, "_migrate_point_ids", lambda self: None)
            old = QdrantEdgeDocumentStore(path=path, embedding_dim=DIM)
            old.write_documents(
                [
                    chunk("handbook:0", "acme handbook zero", [1, 0, 0, 0], "acme"),
                    chunk("handbook:1", "acme handbook one", [0.6, 0.8, 0, 0], "acme"),
                    chunk("policy:0", "globex policy", [0, 0, 1, 0], "globex"),
                    Document(id="plain", content="no tenant", embedding=[0, 0, 0, 1]),
                ]
            )
            assert stored_point_ids(old)[("acme", "handbook:0")] == old_point_id("handbook:0")
            old.close()
        (tmp_path / "qdrant" / document_store_module.POINT_ID_SCHEME_FILE).unlink(missing_ok=True)

        store = QdrantEdgeDocumentStore(path=path, embedding_dim=DIM)
        records = document_store_module._scroll_all(store._shard_state(), None, with_payload=True)
        by_id = {record.payload["id"]: uuid.UUID(str(record.id)) for record in records}
        assert by_id == {
            "handbook:0": point_id("handbook:0", "acme"), "handbook:1": point_id("handbook:1", "acme"),
            "policy:0": point_id("policy:0", "globex"), "plain": point_id("plain"),
        }  # fmt: skip
        # Content, meta and vectors survived; retrieval and the tenant's own overwrite work on the new ids.
        top = store.embedding_retrieval([0.6, 0.8, 0, 0], top_k=1, return_embedding=True)[0]
        assert (
            top.id == "handbook:1"
            and top.meta["tenant_id"] == "acme"
            and top.embedding == pytest.approx([0.6, 0.8, 0, 0], abs=1e-6)
        )
        assert [d.id for d in store.bm25_retrieval("globex policy", top_k=1)] == ["policy:0"]
        store.write_documents(
            [chunk("handbook:0", "acme handbook v2", [1, 0, 0, 0], "acme")], policy=DuplicatePolicy.OVERWRITE
        )
        store.write_documents([chunk("handbook:0", "globex handbook", [0, 1, 0, 0], "globex")])
        assert store.count_documents() == 5
        assert (tmp_path / "qdrant" / document_store_module.POINT_ID_SCHEME_FILE).exists()
        store.close()
        # Re-opening finds the marker and leaves everything as it is.
        again = QdrantEdgeDocumentStore(path=path, embedding_dim=DIM)
        assert again.count_documents() == 5
        again.close()


TEXT = {
    "acme": "Acme's handbook: desks are cleared every Friday evening.",
    "globex": "Globex's handbook: the canteen opens at noon.",
}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with ApiServer(tmp_path_factory.mktemp("ids") / "data", env={"SOURCEBOUND_BOOTSTRAP_CORPUS": "false"}) as running:
        yield running


def index(server, tenant, document_id="handbook", content=None):
    document = {"content": content or TEXT[tenant], "tenant_id": tenant, "tags": ["hr"], "document_id": document_id}
    response = server.client.post("/index/run", json={"documents": [document]})
    assert response.status_code == 200, response.text
    return response.json()["result"]


@pytest.mark.integration
@pytest.mark.slow
class TestTwoTenantsOverHttp:
    def test_same_document_id_in_two_tenants(self, server):
        first, second = index(server, "acme"), index(server, "globex")
        # The second tenant's answer is the one any fresh id gets: nothing says acme has "handbook".
        fresh = index(server, "initech", content="Initech's handbook: parking is free.")
        for result in (first, second, fresh):
            assert [(d["document_id"], d["status"], d["chunks"]) for d in result["documents"]] == [
                ("handbook", "indexed", 1)
            ]
            assert set(result["documents"][0]) == set(fresh["documents"][0])
        for tenant, own in TEXT.items():
            hits = server.client.post(
                "/search/run", json={"query": "handbook", "tenant_id": tenant, "user_tags": ["hr"]}
            ).json()["result"]
            assert [(h["source_id"], h["snippet"]) for h in hits["results"]] == [("handbook:0", own)]

    def test_lifecycle_calls_touch_only_their_tenant(self, server):
        index(server, "acme"), index(server, "globex")
        removed = server.client.post(
            "/invalidate/run", json={"tenant_id": "globex", "document_ids": ["handbook"]}
        ).json()["result"]
        assert removed["chunks_removed"] == 1
        hits = server.client.post(
            "/search/run", json={"query": "handbook", "tenant_id": "acme", "user_tags": ["hr"]}
        ).json()["result"]
        assert [h["snippet"] for h in hits["results"]] == [TEXT["acme"]]
        # Re-indexing it in globex is a plain new index, unaffected by acme's copy.
        assert index(server, "globex")["documents"][0]["status"] == "indexed"


@pytest.mark.integration
class TestAccessKeyMigration:
    def test_stale_access_keys_are_recomputed_on_open(self, tmp_path):
        from qdrant_edge import UpdateOperation

        from components.core.access_rule import AccessRule
        from components.document_stores.qdrant_edge.converters import STORE_PAYLOAD_KEY, access_key

        path = str(tmp_path / "qdrant")
        store = QdrantEdgeDocumentStore(path=path, embedding_dim=DIM)
        meta = {
            "tenant_id": "acme",
            "tags": ["hr"],
            "scope": "project",
            "project_id": "atlas",
            "user_id": "u1",
            "document_id": "plan",
        }
        store.write_documents([Document(id="plan:0", content="atlas plan", meta=meta, embedding=[1, 0, 0, 0])])
        owner = AccessRule("acme", ("hr",), user_id="u1", project_id="atlas").to_filters()
        assert [d.id for d in store.filter_documents(owner)] == ["plan:0"]
        # The key the previous version wrote for a project chunk (project only, no owner), and its marker.
        shared = store._shard_state()
        stale = [access_key("acme", "hr", "project", "atlas", False, False)]
        shared.shard.update(
            UpdateOperation.set_payload([point_id("plan:0", "acme")], {"access": stale}, key=STORE_PAYLOAD_KEY)
        )
        (tmp_path / "qdrant" / document_store_module.POINT_ID_SCHEME_FILE).write_text("tenant-id-v2\n")
        assert store.filter_documents(owner) == []  # stale keys: the owner would not see it
        store.close()

        reopened = QdrantEdgeDocumentStore(path=path, embedding_dim=DIM)
        assert [d.id for d in reopened.filter_documents(owner)] == ["plan:0"]
        other_user = AccessRule("acme", ("hr",), user_id="u2", project_id="atlas").to_filters()
        assert reopened.filter_documents(other_user) == []
        reopened.close()

    def test_readable_access_keys_become_digests_on_open(self, tmp_path):
        import json

        from qdrant_edge import UpdateOperation

        from components.core.access_rule import AccessRule
        from components.document_stores.qdrant_edge.converters import STORE_PAYLOAD_KEY

        path = str(tmp_path / "qdrant")
        store = QdrantEdgeDocumentStore(path=path, embedding_dim=DIM)
        meta = {"tenant_id": "acme", "tags": ["hr"], "scope": "tenant", "document_id": "policy"}
        store.write_documents([Document(id="policy:0", content="leave policy", meta=meta, embedding=[1, 0, 0, 0])])
        # What the access-v2 scheme stored: the combination itself, as JSON.
        readable = [json.dumps(["acme", "hr", "tenant", "", 0, 0], separators=(",", ":"))]
        store._shard_state().shard.update(
            UpdateOperation.set_payload([point_id("policy:0", "acme")], {"access": readable}, key=STORE_PAYLOAD_KEY)
        )
        (tmp_path / "qdrant" / document_store_module.POINT_ID_SCHEME_FILE).write_text("tenant-id-v2 access-v2\n")
        reader = AccessRule("acme", ("hr",)).to_filters()
        assert store.filter_documents(reader) == []  # the rule now asks for digests
        store.close()

        reopened = QdrantEdgeDocumentStore(path=path, embedding_dim=DIM)
        assert [d.id for d in reopened.filter_documents(reader)] == ["policy:0"]
        assert reopened.filter_documents(AccessRule("acme", ("it",)).to_filters()) == []
        assert reopened.filter_documents(AccessRule("other", ("hr",)).to_filters()) == []
        reopened.close()

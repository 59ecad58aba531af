"""The server profile's store (qdrant-haystack with per-tenant ids) on qdrant-client's local engine."""

import pytest
from haystack import Document
from haystack.document_stores.errors import DuplicateDocumentError
from haystack.document_stores.types import DuplicatePolicy

from components.document_stores.qdrant_server import (
    QdrantLocalLocationError,
    TenantQdrantDocumentStore,
    tenant_point_id,
)


def _store(location: str, **extra) -> TenantQdrantDocumentStore:
    return TenantQdrantDocumentStore(
        local_location=location, index="chunks", embedding_dim=4, progress_bar=False, **extra
    )


def _chunk(tenant: str, document_id: str, index: int, text: str) -> Document:
    return Document(
        id=f"{document_id}:{index}",
        content=text,
        embedding=[1.0, float(index), 0.0, 0.0],
        meta={"tenant_id": tenant, "document_id": document_id, "chunk_index": index},
    )


def _tenant_document(tenant: str, document_id: str) -> dict:
    return {
        "operator": "AND",
        "conditions": [
            {"field": "meta.tenant_id", "operator": "==", "value": tenant},
            {"field": "meta.document_id", "operator": "==", "value": document_id},
        ],
    }


@pytest.fixture
def store(tmp_path):
    store = _store(str(tmp_path / "local"))
    yield store
    store.close()


@pytest.mark.unit
class TestTenantPointId:
    def test_tenant_takes_part(self):
        assert tenant_point_id("doc:0", "acme") != tenant_point_id("doc:0", "globex")
        assert tenant_point_id("doc:0", "acme") == tenant_point_id("doc:0", "acme")

    def test_separator_in_values_does_not_collide(self):
        assert tenant_point_id("b:0", "a") != tenant_point_id("0", "a:b")

    def test_without_tenant_keeps_the_upstream_id(self):
        from haystack_integrations.document_stores.qdrant.converters import convert_id

        assert tenant_point_id("doc:0") == tenant_point_id("doc:0", "") == convert_id("doc:0")


@pytest.mark.unit
class TestTenantQdrantDocumentStore:
    def test_same_id_in_two_tenants_is_two_documents(self, store):
        store.write_documents([_chunk("acme", "doc", 0, "acme text"), _chunk("globex", "doc", 0, "globex text")])
        assert store.count_documents() == 2
        (acme,) = store.filter_documents(_tenant_document("acme", "doc"))
        assert acme.id == "doc:0" and acme.content == "acme text"
        # The plain Haystack id selects every tenant's copy.
        assert {d.content for d in store.get_documents_by_id(["doc:0"])} == {"acme text", "globex text"}

    def test_duplicate_policies_see_the_writers_tenant_only(self, store):
        store.write_documents([_chunk("acme", "doc", 0, "acme text")])
        assert store.write_documents([_chunk("globex", "doc", 0, "globex")], policy=DuplicatePolicy.FAIL) == 1
        with pytest.raises(DuplicateDocumentError, match="doc:0"):
            store.write_documents([_chunk("acme", "doc", 0, "again")], policy=DuplicatePolicy.FAIL)
        assert store.write_documents([_chunk("acme", "doc", 0, "again")], policy=DuplicatePolicy.SKIP) == 0
        assert store.write_documents([_chunk("acme", "doc", 0, "new")], policy=DuplicatePolicy.OVERWRITE) == 1
        assert store.filter_documents(_tenant_document("acme", "doc"))[0].content == "new"
        assert store.count_documents() == 2

    def test_replace_leaves_no_stale_tail_and_spares_other_tenants(self, store):
        store.write_documents([_chunk("acme", "doc", i, f"old {i}") for i in range(3)])
        store.write_documents([_chunk("globex", "doc", i, f"theirs {i}") for i in range(3)])
        deleted, written = store.replace_documents(_tenant_document("acme", "doc"), [_chunk("acme", "doc", 0, "new 0")])
        assert (deleted, written) == (2, 1)
        assert [d.content for d in store.filter_documents(_tenant_document("acme", "doc"))] == ["new 0"]
        assert len(store.filter_documents(_tenant_document("globex", "doc"))) == 3

    def test_delete_documents_by_haystack_id(self, store):
        chunks = [_chunk("acme", "doc", 0, "a"), _chunk("globex", "doc", 0, "g"), _chunk("acme", "x", 0, "x")]
        store.write_documents(chunks)
        store.delete_documents(["doc:0"])
        assert [d.id for d in store.filter_documents()] == ["x:0"]

    def test_update_by_filter_keeps_per_tenant_ids(self, store):
        store.write_documents([_chunk("acme", "doc", 0, "a"), _chunk("globex", "doc", 0, "g")])
        assert store.update_by_filter(_tenant_document("acme", "doc"), {"tainted": True}) == 1
        flags = {d.meta["tenant_id"]: d.meta.get("tainted") for d in store.filter_documents()}
        assert flags == {"acme": True, "globex": None} and store.count_documents() == 2

    @pytest.mark.parametrize("where", ["memory", "folder"])
    def test_stores_with_one_location_share_one_engine(self, tmp_path, where):
        location = ":memory:" if where == "memory" else str(tmp_path / "shared")
        writer, reader = _store(location), _store(location)
        try:
            writer.write_documents([_chunk("acme", "doc", 0, "shared")])
            # A second local client on one folder would fail ("already accessed"); an in-memory one would be empty.
            assert [d.content for d in reader.filter_documents()] == ["shared"]
        finally:
            writer.close()
            reader.close()

    def test_folder_keeps_the_index_after_close(self, tmp_path):
        location = str(tmp_path / "kept")
        first = _store(location)
        first.write_documents([_chunk("acme", "doc", 0, "kept")])
        first.close()
        again = _store(location)
        try:
            assert [d.content for d in again.filter_documents()] == ["kept"]
        finally:
            again.close()

    def test_location_that_is_a_file_is_refused(self, tmp_path):
        path = tmp_path / "file"
        path.write_text("x")
        with pytest.raises(QdrantLocalLocationError, match="SOURCEBOUND_QDRANT_LOCATION"):
            _store(str(path))

    def test_empty_location_means_the_configured_server(self):
        store = TenantQdrantDocumentStore(local_location="  ", url="http://qdrant:6333", embedding_dim=4)
        assert store.local_location is None and store.url == "http://qdrant:6333"

    def test_serialisation_round_trip(self, tmp_path):
        store = _store(str(tmp_path / "x"), use_sparse_embeddings=True, sparse_idf=True)
        data = store.to_dict()
        assert data["type"] == "components.document_stores.qdrant_server.document_store.TenantQdrantDocumentStore"
        assert data["init_parameters"]["local_location"] == str(tmp_path / "x")
        again = TenantQdrantDocumentStore.from_dict(data)
        assert again.to_dict() == data and again.sparse_idf is True

    def test_async_use_of_the_local_engine_is_refused(self, tmp_path):
        import asyncio

        with pytest.raises(QdrantLocalLocationError, match="synchronous"):
            asyncio.run(_store(":memory:").count_documents_async())

"""
QdrantEdgeDocumentStore: Haystack's conformance suites, then the store's own guarantees
(duplicate policies, atomic and validated writes, replace_documents, persistence,
sharing within a process, concurrency, and the lock against a second process).
"""

import os
import subprocess
import sys
import textwrap
import threading
import time

import pytest
from haystack import Document
from haystack.dataclasses import SparseEmbedding
from haystack.document_stores.errors import DuplicateDocumentError as HaystackDuplicateDocumentError
from haystack.document_stores.types import DuplicatePolicy
from haystack.testing.document_store import (
    CountDocumentsByFilterTest,
    CountDocumentsTest,
    DeleteAllTest,
    DeleteByFilterTest,
    DeleteDocumentsTest,
    FilterableDocsFixtureMixin,
    FilterDocumentsTest,
    UpdateByFilterTest,
    WriteDocumentsTest,
)

from components.document_stores.qdrant_edge import (
    DocumentValidationError,
    DuplicateDocumentError,
    EmbeddingDimensionError,
    FilterError,
    MissingContentError,
    QdrantEdgeDocumentStore,
    StoreConfigError,
    TenantConflictError,
)
from components.document_stores.qdrant_edge.converters import point_id
from components.document_stores.qdrant_edge.shard import open_paths, resolve_path

CONFORMANCE_DIM = 768  # the conformance suites' embeddings
DIM = 4


def unit(*values: float) -> list[float]:
    """A small deterministic dense vector of the test dimension."""
    return [float(value) for value in values]


def chunk(doc_id: str, content: str, embedding: list[float] | None = None, **meta) -> Document:
    meta.setdefault("tenant_id", "acme")
    meta.setdefault("tags", ["public"])
    return Document(id=doc_id, content=content, meta=meta, embedding=embedding)


@pytest.fixture(scope="module")
def module_store(tmp_path_factory):
    document_store = QdrantEdgeDocumentStore(path=str(tmp_path_factory.mktemp("store") / "qdrant"), embedding_dim=DIM)
    yield document_store
    document_store.close()


@pytest.fixture
def store(module_store):
    """An empty store (one shard per module, emptied per test: creating shards costs file syncs)."""
    module_store.delete_all_documents()
    return module_store


# --------------------------------------------------------------------------- conformance


@pytest.fixture(scope="module")
def conformance_store(tmp_path_factory):
    # One shard for the module, emptied before each test: creating a shard costs ~0.1-1 s of file syncs.
    document_store = QdrantEdgeDocumentStore(
        path=str(tmp_path_factory.mktemp("conformance") / "qdrant"), embedding_dim=CONFORMANCE_DIM
    )
    yield document_store
    document_store.close()


class _ConformanceStore:
    """The `document_store` fixture every Haystack suite asks for: an empty store."""

    @pytest.fixture
    def document_store(self, conformance_store):
        conformance_store.delete_all_documents()
        assert conformance_store.count_documents() == 0
        return conformance_store

    @staticmethod
    def assert_documents_are_equal(received: list[Document], expected: list[Document]) -> None:
        # The store returns documents in point-id order, and vectors come back through float32: compare
        # every field exactly except the embedding, which must match to float32 precision.
        assert len(received) == len(expected)
        for got, want in zip(sorted(received, key=lambda d: d.id), sorted(expected, key=lambda d: d.id), strict=True):
            assert (got.id, got.content, got.meta, got.score, got.blob, got.sparse_embedding) == (
                want.id,
                want.content,
                want.meta,
                want.score,
                want.blob,
                want.sparse_embedding,
            )
            if want.embedding is None:
                assert got.embedding is None
            else:
                assert got.embedding == pytest.approx(want.embedding, rel=1e-5, abs=1e-6)


@pytest.mark.conformance
@pytest.mark.integration
class TestCountDocumentsConformance(_ConformanceStore, CountDocumentsTest):
    pass


@pytest.mark.conformance
@pytest.mark.integration
class TestWriteDocumentsConformance(_ConformanceStore, WriteDocumentsTest):
    def test_write_documents(self, document_store):
        """Default policy (NONE) acts as FAIL: a second write of the same id raises and changes nothing."""
        doc = Document(content="test doc")
        assert document_store.write_documents([doc]) == 1
        with pytest.raises(HaystackDuplicateDocumentError):
            document_store.write_documents([doc])
        self.assert_documents_are_equal(document_store.filter_documents(), [doc])


@pytest.mark.conformance
@pytest.mark.integration
class TestDeleteDocumentsConformance(_ConformanceStore, DeleteDocumentsTest):
    pass


@pytest.mark.conformance
@pytest.mark.integration
class TestFilterDocumentsConformance(_ConformanceStore, FilterDocumentsTest):
    pass


@pytest.mark.conformance
@pytest.mark.integration
class TestDeleteAllConformance(_ConformanceStore, DeleteAllTest):
    pass


@pytest.mark.conformance
@pytest.mark.integration
class TestDeleteByFilterConformance(_ConformanceStore, DeleteByFilterTest):
    pass


@pytest.mark.conformance
@pytest.mark.integration
class TestCountDocumentsByFilterConformance(_ConformanceStore, CountDocumentsByFilterTest):
    pass


@pytest.mark.conformance
@pytest.mark.integration
class TestUpdateByFilterConformance(_ConformanceStore, FilterableDocsFixtureMixin, UpdateByFilterTest):
    pass


# --------------------------------------------------------------------------- the store's own behaviour


class _CountingShard:
    """Delegates to the real engine shard and counts update operations (to check one update per call)."""

    def __init__(self, shard):
        self._shard = shard
        self.updates = 0

    def update(self, operation):
        self.updates += 1
        return self._shard.update(operation)

    def __getattr__(self, name):
        return getattr(self._shard, name)


@pytest.mark.integration
class TestQdrantEdgeDocumentStore:
    def test_init(self, tmp_path):
        path = tmp_path / "qdrant"
        store = QdrantEdgeDocumentStore(path=str(path))
        try:
            assert (store.path, store.embedding_dim, store.similarity, store.on_disk) == (
                str(path),
                384,
                "cosine",
                False,
            )
            assert store.bm25_config is None and store.max_search_threads is None
            assert (path / "edge_config.json").exists()
            info = store.info()
            assert info["path"] == resolve_path(path)
            assert info["points"] == 0 and info["segments"] >= 1
            assert set(info["payload_indexes"]) == {
                "id",
                "meta.tenant_id",
                "meta.tags",
                "meta.document_id",
                "meta.scope",
                "meta.user_id",
                "meta.project_id",
                "meta.verified",
                "meta.tainted",
                "meta.language",
                "meta.artifact_id",
                "meta.domain",
                "_store.access",
            }
        finally:
            store.close()

    @pytest.mark.parametrize(
        ("params", "message"),
        [
            ({"embedding_dim": 0}, "embedding_dim"),
            ({"embedding_dim": "384"}, "embedding_dim"),
            ({"similarity": "euclid"}, "similarity"),
            ({"bm25_config": {"k1": 1.2}}, "k1"),
            ({"bm25_config": {"language": "klingon"}}, "bm25_config"),
            ({"max_search_threads": 0}, "max_search_threads"),
        ],
    )
    def test_init_rejects_invalid_parameters(self, tmp_path, params, message):
        with pytest.raises(StoreConfigError, match=message):
            QdrantEdgeDocumentStore(path=str(tmp_path / "qdrant"), **params)

    def test_to_dict(self, store):
        assert store.to_dict() == {
            "type": "components.document_stores.qdrant_edge.document_store.QdrantEdgeDocumentStore",
            "init_parameters": {
                "path": store.path,
                "embedding_dim": DIM,
                "similarity": "cosine",
                "on_disk": False,
                "bm25_config": None,
                "max_search_threads": None,
                "min_free_disk_mb": 64,
            },
        }

    def test_from_dict(self, store):
        store.write_documents([chunk("doc-1:0", "shared shard", unit(1, 0, 0, 0))])
        copy = QdrantEdgeDocumentStore.from_dict(store.to_dict())
        try:
            assert copy.to_dict() == store.to_dict()
            # The copy shares the open shard instead of failing on its lock.
            assert copy.count_documents() == 1
            assert open_paths().count(resolve_path(store.path)) == 1
        finally:
            copy.close()

    def test_pipeline_yaml_round_trip(self, store):
        from haystack import Pipeline
        from haystack.components.writers import DocumentWriter

        pipeline = Pipeline()
        pipeline.add_component("writer", DocumentWriter(document_store=store, policy=DuplicatePolicy.OVERWRITE))
        loaded = Pipeline.loads(pipeline.dumps(), allowed_modules=["components", "haystack"])
        written = loaded.run({"writer": {"documents": [chunk("doc-1:0", "from yaml", unit(1, 0, 0, 0))]}})
        assert written == {"writer": {"documents_written": 1}}
        assert [doc.id for doc in store.filter_documents()] == ["doc-1:0"]

    def test_write_one_engine_update_per_call(self, store):
        shared = store._shard_state()
        counting = _CountingShard(shared.shard)
        shared.shard = counting
        try:
            documents = [chunk(f"doc-1:{index}", f"chunk {index}", unit(1, index, 0, 0)) for index in range(50)]
            assert store.write_documents(documents) == 50
            assert counting.updates == 1
            assert store.write_documents(documents, policy=DuplicatePolicy.OVERWRITE) == 50
            assert counting.updates == 2
        finally:
            shared.shard = counting._shard

    def test_duplicate_policies_within_and_across_batches(self, store):
        first = chunk("doc-1:0", "first version", unit(1, 0, 0, 0))
        second = chunk("doc-1:0", "second version", unit(0, 1, 0, 0))
        other = chunk("doc-2:0", "another document", unit(0, 0, 1, 0))

        with pytest.raises(DuplicateDocumentError, match="doc-1:0"):
            store.write_documents([first, other, second], policy=DuplicatePolicy.FAIL)
        assert store.count_documents() == 0

        assert store.write_documents([first, second], policy=DuplicatePolicy.SKIP) == 1
        assert store.filter_documents()[0].content == "first version"
        assert store.write_documents([second, other], policy=DuplicatePolicy.SKIP) == 1
        assert {doc.id: doc.content for doc in store.filter_documents()} == {
            "doc-1:0": "first version",
            "doc-2:0": "another document",
        }

        with pytest.raises(DuplicateDocumentError, match="already exist.*doc-1:0"):
            store.write_documents([chunk("doc-3:0", "new"), first], policy=DuplicatePolicy.NONE)
        assert store.count_documents() == 2

        assert store.write_documents([first, second], policy=DuplicatePolicy.OVERWRITE) == 1
        assert (
            store.filter_documents({"field": "id", "operator": "==", "value": "doc-1:0"})[0].content == "second version"
        )
        assert store.write_documents([]) == 0

    def test_embedding_round_trips_with_its_length(self, store):
        embedding = unit(3, 4, 0, 12)  # length 13: the engine stores it normalised
        store.write_documents([chunk("doc-1:0", "vector", embedding)])
        returned = store.filter_documents()[0].embedding
        assert returned == pytest.approx(embedding, rel=1e-6)
        hit = store.embedding_retrieval(unit(3, 4, 0, 12), return_embedding=True)[0]
        assert hit.embedding == pytest.approx(embedding, rel=1e-6)
        assert hit.score == pytest.approx(1.0, abs=1e-6)

    def test_document_without_embedding_is_found_by_bm25_only(self, store):
        store.write_documents([chunk("doc-1:0", "quarterly revenue report"), chunk("doc-2:0", "cat", unit(1, 0, 0, 0))])
        assert [doc.id for doc in store.bm25_retrieval("revenue")] == ["doc-1:0"]
        assert [doc.id for doc in store.embedding_retrieval(unit(1, 0, 0, 0))] == ["doc-2:0"]

    def test_bm25_query_is_normalised_like_the_indexed_text(self, store):
        store.write_documents([chunk("doc-1:0", "the specification of workflows"), chunk("doc-2:0", "cat")])
        assert [doc.id for doc in store.bm25_retrieval("speci\ufb01cation")] == ["doc-1:0"]
        assert [doc.id for doc in store.bm25_retrieval("ＷＯＲＫＦＬＯＷＳ")] == ["doc-1:0"]

    def test_own_sparse_embedding_is_stored_and_returned(self, store):
        sparse = SparseEmbedding(indices=[7, 42], values=[0.5, 1.5])
        document = Document(id="doc-1:0", content="text", meta={}, embedding=unit(1, 0, 0, 0), sparse_embedding=sparse)
        store.write_documents([document])
        assert store.filter_documents()[0].sparse_embedding == sparse

    def test_update_by_filter_changes_meta_without_re_embedding(self, store):
        store.write_documents(
            [
                chunk("doc-1:0", "password reset steps", unit(1, 2, 3, 4), tainted=False),
                chunk("doc-2:0", "holiday calendar", unit(4, 3, 2, 1), tainted=False),
            ]
        )
        before = {doc.id: doc for doc in store.filter_documents()}
        bm25_before = store.bm25_retrieval("password")[0].score

        updated = store.update_by_filter({"field": "meta.document_id", "operator": "==", "value": "doc-1"}, {"x": 1})
        assert updated == 0  # no document_id meta set in these chunks
        updated = store.update_by_filter({"field": "id", "operator": "==", "value": "doc-1:0"}, {"tainted": True})
        assert updated == 1

        after = {doc.id: doc for doc in store.filter_documents()}
        assert after["doc-1:0"].meta == {**before["doc-1:0"].meta, "tainted": True}
        assert after["doc-2:0"].meta == before["doc-2:0"].meta
        assert after["doc-1:0"].embedding == pytest.approx(before["doc-1:0"].embedding)
        assert store.bm25_retrieval("password")[0].score == pytest.approx(bm25_before)
        assert store.count_documents_by_filter({"field": "meta.tainted", "operator": "==", "value": True}) == 1

    def test_delete_by_filter_needs_a_filter(self, store):
        store.write_documents([chunk("doc-1:0", "keep me")])
        with pytest.raises(FilterError, match="delete_all_documents"):
            store.delete_by_filter({})
        assert store.count_documents() == 1

    def test_replace_documents(self, store):
        old = [chunk(f"doc-1:{index}", f"old {index}", unit(1, index, 0, 0), document_id="doc-1") for index in range(3)]
        unrelated = chunk("doc-2:0", "unrelated", unit(0, 0, 1, 0), document_id="doc-2")
        store.write_documents([*old, unrelated])
        new = [chunk(f"doc-1:{index}", f"new {index}", unit(0, 1, index, 0), document_id="doc-1") for index in range(2)]

        deleted, written = store.replace_documents(
            {"field": "meta.document_id", "operator": "==", "value": "doc-1"}, new
        )

        assert (deleted, written) == (3, 2)
        assert {doc.id: doc.content for doc in store.filter_documents()} == {
            "doc-1:0": "new 0",
            "doc-1:1": "new 1",
            "doc-2:0": "unrelated",
        }

    def test_overwrite_never_crosses_tenants(self, store):
        # Point ids derive from the tenant: globex's "handbook:0" is another document, acme's stays untouched.
        store.write_documents([chunk("handbook:0", "acme's handbook", unit(1, 0, 0, 0), tenant_id="acme")])
        intruder = chunk(
            "handbook:0", "globex's handbook", unit(0, 1, 0, 0), tenant_id="globex", document_id="handbook"
        )
        assert store.write_documents([intruder], policy=DuplicatePolicy.OVERWRITE) == 1
        assert store.replace_documents(
            {"field": "meta.tenant_id", "operator": "==", "value": "globex"}, [intruder]
        ) == (1, 1)
        assert sorted(doc.content for doc in store.filter_documents()) == ["acme's handbook", "globex's handbook"]
        # A document without a string tenant keeps the plain id; overwriting it with another tenant's is refused.
        store.write_documents([chunk("legacy:0", "list tenant", unit(0, 0, 1, 0), tenant_id=["acme"])])
        with pytest.raises(TenantConflictError):
            store.write_documents(
                [chunk("legacy:0", "other", unit(0, 0, 1, 0), tenant_id=["globex"])], policy=DuplicatePolicy.OVERWRITE
            )
        store.delete_by_filter({"field": "id", "operator": "==", "value": "legacy:0"})
        # The same tenant overwrites its own document as usual.
        mine = chunk("handbook:0", "acme's new handbook", unit(1, 0, 0, 0), tenant_id="acme")
        assert store.write_documents([mine], policy=DuplicatePolicy.OVERWRITE) == 1

    def test_replace_documents_rejects_empty_filter_and_bad_batch(self, store):
        store.write_documents([chunk("doc-1:0", "old", unit(1, 0, 0, 0), document_id="doc-1")])
        with pytest.raises(FilterError):
            store.replace_documents({}, [chunk("doc-1:0", "new")])
        with pytest.raises(MissingContentError):
            store.replace_documents(
                {"field": "meta.document_id", "operator": "==", "value": "doc-1"},
                [chunk("doc-1:0", "new"), Document(id="doc-1:1", content=None)],
            )
        assert [doc.content for doc in store.filter_documents()] == ["old"]

    def test_optimize_and_info(self, store):
        store.write_documents([chunk(f"doc-1:{index}", f"text {index}", unit(1, index, 1, 0)) for index in range(20)])
        assert isinstance(store.optimize(), bool)
        info = store.info()
        assert info["points"] == 20 and info["payload_indexes"]["meta.tenant_id"] == 20
        assert store.embedding_retrieval(unit(1, 3, 1, 0), top_k=1)[0].id == "doc-1:3"

    def test_delete_all_documents_recreate_keeps_sharing_objects_working(self, store):
        other = QdrantEdgeDocumentStore(path=store.path, embedding_dim=DIM)
        try:
            store.write_documents([chunk("doc-1:0", "before", unit(1, 0, 0, 0))])
            store.delete_all_documents(recreate_index=True)
            assert other.count_documents() == 0
            other.write_documents([chunk("doc-2:0", "marmalade", unit(0, 1, 0, 0))])
            assert [doc.id for doc in store.bm25_retrieval("marmalade")] == ["doc-2:0"]
            assert set(store.info()["payload_indexes"]) >= {"meta.tenant_id", "meta.tags"}
        finally:
            other.close()


@pytest.mark.integration
class TestBadInput:
    """Each bad input gets a typed error naming the problem, and a failed write leaves the store as it was."""

    @pytest.fixture
    def filled(self, store):
        store.write_documents([chunk("doc-0:0", "existing chunk", unit(1, 1, 1, 1))])
        return store

    @pytest.mark.parametrize(
        ("bad", "error", "message"),
        [
            (Document(id="doc-9:0", content=None, meta={"tenant_id": "acme"}), MissingContentError, "doc-9:0.*no text"),
            (Document(id="doc-9:0", content="   "), MissingContentError, "doc-9:0"),
            (
                Document(id="doc-9:0", content="x", embedding=[1.0, 2.0]),
                EmbeddingDimensionError,
                "doc-9:0.*dimension 2.*4",
            ),
            (Document(id="doc-9:0", content="x", embedding=[1.0, float("nan"), 0, 0]), DocumentValidationError, "NaN"),
            (Document(id="doc-9:0", content="x", embedding=[0.0, 0.0, 0.0, 0.0]), DocumentValidationError, "all-zero"),
            (Document(id="doc-9:0", content="x", meta={"when": time}), DocumentValidationError, "doc-9:0.*meta"),
            (Document(id="doc-9:0", content="x", meta={"score": float("nan")}), DocumentValidationError, "NaN"),
            (
                Document(id="doc-9:0", content="x", sparse_embedding=SparseEmbedding(indices=[-1], values=[1.0])),
                DocumentValidationError,
                "sparse_embedding",
            ),
            ("not a document", DocumentValidationError, "item 1 is a str"),
        ],
    )
    def test_bad_document_fails_whole_batch(self, filled, bad, error, message):
        before = filled.filter_documents()
        good = chunk("doc-5:0", "a valid chunk written in the same batch", unit(0, 1, 0, 0))
        with pytest.raises(error, match=message) as raised:
            filled.write_documents([good, bad], policy=DuplicatePolicy.OVERWRITE)
        assert isinstance(raised.value, ValueError)
        assert filled.filter_documents() == before

    def test_not_a_list(self, filled):
        with pytest.raises(DocumentValidationError, match="list of Documents"):
            filled.write_documents(chunk("doc-1:0", "x"))

    @pytest.mark.parametrize(
        ("filters", "message"),
        [
            ({"field": "meta.tenant_id", "operator": "~=", "value": "acme"}, "Unknown filter operator '~='"),
            ({"operator": "AND"}, "'AND'.*conditions"),
            ({"conditions": []}, "no 'operator'"),
            ({"field": "meta.tenant_id", "operator": "=="}, "no 'value'"),
            (
                {"field": "tenant_id", "operator": "==", "value": "acme"},
                "Unknown filter field 'tenant_id'.*meta.tenant_id",
            ),
            ({"field": "meta.n", "operator": ">", "value": "soon"}, "ISO 8601"),
            ({"field": "meta.tags", "operator": "in", "value": "public"}, "needs a list"),
        ],
    )
    def test_bad_filter(self, filled, filters, message):
        with pytest.raises(FilterError, match=message):
            filled.filter_documents(filters)
        with pytest.raises(FilterError, match=message):
            filled.delete_by_filter(filters)
        assert filled.count_documents() == 1

    def test_query_vector_of_wrong_dimension(self, filled):
        with pytest.raises(EmbeddingDimensionError, match="3 dimensions.*4-dimensional"):
            filled.embedding_retrieval([1.0, 0.0, 0.0])
        with pytest.raises(EmbeddingDimensionError):
            filled.hybrid_retrieval("chunk", [1.0] * 5)

    def test_update_by_filter_bad_meta(self, filled):
        with pytest.raises(DocumentValidationError, match="non-empty dict"):
            filled.update_by_filter({"field": "id", "operator": "==", "value": "doc-0:0"}, {})
        with pytest.raises(DocumentValidationError, match="JSON-like"):
            filled.update_by_filter({"field": "id", "operator": "==", "value": "doc-0:0"}, {"when": time})
        assert filled.filter_documents()[0].meta == {"tenant_id": "acme", "tags": ["public"]}


@pytest.mark.integration
class TestSharingAndPersistence:
    def test_store_objects_on_one_path_share_the_shard(self, tmp_path, monkeypatch):
        monkeypatch.chdir(tmp_path)
        first = QdrantEdgeDocumentStore(path="qdrant", embedding_dim=DIM)
        second = QdrantEdgeDocumentStore(path=str(tmp_path / "qdrant"), embedding_dim=DIM)
        try:
            assert first._shard_state() is second._shard_state()
            first.write_documents([chunk("doc-1:0", "visible to both", unit(1, 0, 0, 0))])
            assert second.count_documents() == 1
            first.close()
            assert second.count_documents() == 1  # the shard stays open for the remaining holder
            with pytest.raises(StoreConfigError, match="already open in this process"):
                QdrantEdgeDocumentStore(path="qdrant", embedding_dim=8)
        finally:
            second.close()
        assert resolve_path(tmp_path / "qdrant") not in open_paths()

    def test_data_survives_reopening(self, tmp_path):
        path = str(tmp_path / "qdrant")
        store = QdrantEdgeDocumentStore(path=path, embedding_dim=DIM)
        written = [chunk("doc-1:0", "durable chunk", unit(1, 2, 3, 4), document_id="doc-1")]
        store.write_documents(written)
        # A rejected batch never reaches the engine, whose log would replay its valid part on the next start.
        with pytest.raises(EmbeddingDimensionError):
            store.write_documents([chunk("doc-2:0", "valid"), chunk("doc-3:0", "bad", [1.0, 2.0])])
        store.close()
        assert resolve_path(path) not in open_paths()

        reopened = QdrantEdgeDocumentStore(path=path, embedding_dim=DIM)
        try:
            _ConformanceStore.assert_documents_are_equal(reopened.filter_documents(), written)
            assert reopened.bm25_retrieval("durable")[0].id == "doc-1:0"
        finally:
            reopened.close()
        with pytest.raises(StoreConfigError, match="embedding_dim"):
            QdrantEdgeDocumentStore(path=path, embedding_dim=8)

    @pytest.mark.slow
    def test_writes_survive_a_crash_without_flush(self, tmp_path):
        path = str(tmp_path / "qdrant")
        code = f"""
            import os
            from haystack import Document
            from components.document_stores.qdrant_edge import QdrantEdgeDocumentStore
            store = QdrantEdgeDocumentStore(path={path!r}, embedding_dim=4)
            store.write_documents([Document(id=f"doc-1:{{i}}", content="crash test", embedding=[1.0, i, 0, 0])
                                   for i in range(10)])
            os._exit(0)  # no flush, no close: only the write-ahead log has the data
        """
        result = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120
        )
        assert result.returncode == 0, result.stderr
        store = QdrantEdgeDocumentStore(path=path, embedding_dim=DIM)
        try:
            assert store.count_documents() == 10
        finally:
            store.close()

    @pytest.mark.slow
    def test_second_process_gets_a_typed_error_naming_the_path(self, store):
        code = f"""
            from components.document_stores.qdrant_edge import QdrantEdgeDocumentStore, ShardLockedError
            try:
                QdrantEdgeDocumentStore(path={store.path!r}, embedding_dim=4)
            except ShardLockedError as error:
                print("LOCKED:", error)
        """
        store.write_documents([chunk("doc-1:0", "held by the test process", unit(1, 0, 0, 0))])
        result = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120
        )
        assert result.returncode == 0, result.stderr
        path = resolve_path(store.path)
        assert (
            f"LOCKED: The Qdrant Edge shard at {path} is held by another process (pid {os.getpid()})" in result.stdout
        )
        assert "Stop the other process" in result.stdout and "Qdrant server profile" in result.stdout
        # The failed attempt touched nothing: the holder still writes, flushes and reads.
        store.write_documents([chunk("doc-2:0", "written after the attempt", unit(0, 1, 0, 0))])
        store.flush()
        assert store.count_documents() == 2


@pytest.mark.integration
class TestConcurrency:
    def test_reads_during_writes(self, store):
        errors: list[BaseException] = []
        stop = threading.Event()
        access = {
            "operator": "AND",
            "conditions": [
                {"field": "meta.tenant_id", "operator": "==", "value": "acme"},
                {"field": "meta.tags", "operator": "in", "value": ["public"]},
            ],
        }

        def writer():
            try:
                for batch in range(20):
                    store.write_documents(
                        [
                            chunk(f"doc-{batch}:{index}", f"batch {batch} chunk {index} text", unit(1, batch, index, 1))
                            for index in range(25)
                        ]
                    )
            except BaseException as error:  # noqa: BLE001 - reported by the test
                errors.append(error)
            finally:
                stop.set()

        def reader():
            try:
                while not stop.is_set():
                    store.hybrid_retrieval("chunk text", unit(1, 2, 3, 1), filters=access, top_k=5)
                    store.count_documents_by_filter(access)
            except BaseException as error:  # noqa: BLE001 - reported by the test
                errors.append(error)

        threads = [threading.Thread(target=writer)] + [threading.Thread(target=reader) for _ in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert not errors
        assert store.count_documents() == 500

    def test_readers_never_see_half_a_replacement(self, store):
        document_filter = {"field": "meta.document_id", "operator": "==", "value": "doc-1"}

        def version(name: str, chunks: int) -> list[Document]:
            return [
                chunk(f"doc-1:{index}", f"{name} {index}", unit(1, index, 0, 1), document_id="doc-1")
                for index in range(chunks)
            ]

        store.write_documents(version("v0", 4))
        seen: set[tuple[int, frozenset]] = set()
        errors: list[BaseException] = []
        done = threading.Event()

        def replacer():
            try:
                for round_ in range(1, 30):
                    store.replace_documents(document_filter, version(f"v{round_}", 4 if round_ % 2 else 2))
                    time.sleep(0.002)  # let readers in between rounds, also on a loaded machine
            except BaseException as error:  # noqa: BLE001 - reported by the test
                errors.append(error)
            finally:
                done.set()

        def reader():
            try:
                while not done.is_set():
                    documents = store.filter_documents(document_filter)
                    seen.add((len(documents), frozenset(doc.content.split()[0] for doc in documents)))
            except BaseException as error:  # noqa: BLE001 - reported by the test
                errors.append(error)

        threads = [threading.Thread(target=replacer), threading.Thread(target=reader), threading.Thread(target=reader)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert not errors
        # Every read saw exactly one complete version: 4 or 2 chunks, all of one version.
        assert all(count in (2, 4) and len(versions) == 1 for count, versions in seen), seen
        assert len(seen) > 1, seen


@pytest.mark.integration
class TestDeterministicOrder:
    def test_equal_scores_come_back_ordered_by_point_id(self, store):
        # Identical text and vectors: dense and BM25 score these documents equally; the tie fits within
        # top_k + TIE_MARGIN, so the whole tie is fetched and ordered by point id.
        ids = [f"tie-{letter}:0" for letter in "qwerty"]
        store.write_documents([chunk(doc_id, "identical refund policy text", unit(1, 0, 0, 0)) for doc_id in ids])
        by_point_id = sorted(ids, key=lambda doc_id: str(point_id(doc_id, "acme")))
        assert [d.id for d in store.embedding_retrieval(unit(1, 0, 0, 0), top_k=4)] == by_point_id[:4]
        assert [d.id for d in store.bm25_retrieval("refund policy", top_k=4)] == by_point_id[:4]

    def test_rrf_ties_are_ordered_by_point_id(self, store):
        # "a" wins the dense ranking and "b" the BM25 ranking: 1/(k+0) + 1/(k+1) each, an exact RRF tie.
        store.write_documents(
            [
                chunk("rrf-a:0", "refund", unit(1, 0, 0, 0)),
                chunk("rrf-b:0", "refund refund refund", unit(0.6, 0.8, 0, 0)),
                chunk("rrf-c:0", "unrelated words", unit(0, 0, 1, 0)),
            ]
        )
        results = store.hybrid_retrieval("refund", unit(1, 0, 0, 0), top_k=2)
        assert results[0].score == pytest.approx(results[1].score)
        assert [d.id for d in results] == sorted(
            ["rrf-a:0", "rrf-b:0"], key=lambda doc_id: str(point_id(doc_id, "acme"))
        )

    def test_replace_deletes_the_old_version_before_writing_the_new(self, store):
        store.write_documents(
            [chunk(f"doc-a:{index}", f"old text {index}", unit(1, 0, 0, 0), document_id="doc-a") for index in range(4)]
        )
        deleted, written = store.replace_documents(
            {"field": "meta.document_id", "operator": "==", "value": "doc-a"},
            [chunk("doc-a:0", "new text", unit(0, 1, 0, 0), document_id="doc-a")],
        )
        assert (deleted, written) == (4, 1)
        remaining = store.filter_documents({"field": "meta.document_id", "operator": "==", "value": "doc-a"})
        assert [(document.id, document.content) for document in remaining] == [("doc-a:0", "new text")]


class _Point:
    def __init__(self, point_id: int) -> None:
        self.id = point_id


@pytest.mark.unit
class TestRrfFuse:
    def test_run_scores_are_the_engines_float32_sums(self):
        # Fusion.Rrf: a float32 sum, in ranking order, of 1 / (k + rank) over the rankings holding the point.
        import random

        import numpy as np

        from components.document_stores.qdrant_edge.document_store import rrf_fuse

        rng = random.Random(7)
        for _ in range(300):
            dense, keyword = rng.sample(range(120), 45), rng.sample(range(120), 45)
            rrf_k = rng.choice([1, 10, 60, 100])
            expected: dict[int, np.float32] = {}
            for ranking in (dense, keyword):
                for rank, point in enumerate(ranking):
                    expected[point] = expected.get(point, np.float32(0)) + np.float32(1) / np.float32(rrf_k + rank)
            fused = rrf_fuse({"vector": [_Point(p) for p in dense], "keyword": [_Point(p) for p in keyword]}, rrf_k)
            assert {point: score for point, score, _ in fused} == {p: float(s) for p, s in expected.items()}
            # Best first; equal scores ordered by id, as text (deterministic across re-indexing).
            assert [(-score, str(point)) for point, score, _ in fused] == sorted(
                (-score, str(point)) for point, score, _ in fused
            )

    def test_run_names_the_stages_that_found_each_point(self):
        from components.document_stores.qdrant_edge.document_store import rrf_fuse

        fused = rrf_fuse({"vector": [_Point(1), _Point(2)], "keyword": [_Point(2), _Point(3)]}, 60)
        assert {point: sources for point, _, sources in fused} == {
            1: ["vector"],
            2: ["vector", "keyword"],
            3: ["keyword"],
        }
        assert fused[0][0] == 2

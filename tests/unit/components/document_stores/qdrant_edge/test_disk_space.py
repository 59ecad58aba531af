"""A full disk under the Qdrant Edge store: the write is refused cleanly and the index stays as it was."""

import numpy as np
import pytest
from haystack import Document

from components.core.errors import InsufficientStorageError as CoreInsufficientStorageError
from components.document_stores.qdrant_edge import InsufficientStorageError, QdrantEdgeDocumentStore
from components.writers.lifecycle_document_writer import LifecycleDocumentWriter
from tests.support.small_disk import fill, small_filesystem

pytestmark = pytest.mark.unit

DIM = 384


def _documents(start: int, count: int) -> list[Document]:
    rng = np.random.default_rng(start)
    return [
        Document(
            id=f"doc{i}:0",
            content=f"chunk {i} on the travel policy and expense reports " * 8,
            meta={"tenant_id": "acme", "tags": ["hr"], "document_id": f"doc{i}", "chunk_index": 0},
            embedding=rng.random(DIM).tolist(),
        )
        for i in range(start, start + count)
    ]


class TestFullDisk:
    def test_a_write_that_would_fill_the_disk_is_refused_and_changes_nothing(self, tmp_path):
        # The engine maps its files into memory: without the check a write into a full disk kills the process.
        with small_filesystem(tmp_path / "disk", "256m") as disk:
            store = QdrantEdgeDocumentStore(path=str(disk / "qdrant"), embedding_dim=DIM)
            try:
                store.write_documents(_documents(0, 200))
                before = [doc.id for doc in store.bm25_retrieval("travel policy", top_k=5)]
                filler = fill(disk, leave_bytes=66 << 20)
                with pytest.raises(InsufficientStorageError, match="MiB are free.*Nothing was written"):
                    store.write_documents(_documents(200, 2000))
                with pytest.raises(CoreInsufficientStorageError):  # what the HTTP layer maps to 507
                    LifecycleDocumentWriter(store).run(_documents(200, 2000))
                assert store.count_documents() == 200
                assert [doc.id for doc in store.bm25_retrieval("travel policy", top_k=5)] == before
                filler.unlink()
                store.write_documents(_documents(200, 10))
                assert store.count_documents() == 210
            finally:
                store.close()
            reopened = QdrantEdgeDocumentStore(path=str(disk / "qdrant"), embedding_dim=DIM)
            try:
                assert reopened.count_documents() == 210
            finally:
                reopened.close()

    def test_min_free_disk_mb_is_validated(self, tmp_path):
        with pytest.raises(ValueError, match="min_free_disk_mb"):
            QdrantEdgeDocumentStore(path=str(tmp_path / "s"), embedding_dim=DIM, min_free_disk_mb=-1)

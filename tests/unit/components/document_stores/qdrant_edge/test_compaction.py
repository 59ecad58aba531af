"""
Compaction of the Qdrant Edge shard (docs/contract.md, "Deletion"): after a purge no file of the shard's folder
holds a deleted point's text, the live points answer as before, the folder's lock stays held throughout, and a
crash at any step leaves a whole shard (the old one or the new one) that finishes the erasure when reopened.
"""

import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from haystack import Document
from haystack.document_stores.types import DuplicatePolicy

from components.document_stores.qdrant_edge import QdrantEdgeDocumentStore, QdrantEdgeStoreError, compaction
from components.document_stores.qdrant_edge.compaction import PENDING_FILE, staging_path

DIM = 4
SECRET = b"ZEBRA-SECRET-7731"  # in the erased tenant's text only
KEPT = b"OKAPI-KEPT-2208"  # in the surviving tenant's text only


def documents(tenant: str, marker: bytes, count: int = 20) -> list[Document]:
    return [
        Document(
            id=f"{tenant}-doc:{index}",
            content=f"{marker.decode()} chunk {index} of {tenant}",
            meta={"tenant_id": tenant, "tags": ["hr"], "document_id": f"{tenant}-doc"},
            embedding=[1.0, float(index), 0.5, 0.25],
        )
        for index in range(count)
    ]


def files_holding(folder: Path, marker: bytes) -> list[str]:
    """Every file under ``folder``'s parent (the shard and any sibling a compaction makes) holding ``marker``."""
    found = []
    for path in folder.parent.rglob("*"):
        if path.is_file() and marker in path.read_bytes():
            found.append(str(path.relative_to(folder.parent)))
    return sorted(found)


def tenant_filter(tenant: str) -> dict:
    return {"field": "meta.tenant_id", "operator": "==", "value": tenant}


@pytest.fixture
def store(tmp_path):
    store = QdrantEdgeDocumentStore(path=str(tmp_path / "qdrant"), embedding_dim=DIM)
    store.write_documents(documents("gone", SECRET) + documents("kept", KEPT))
    store.flush()
    yield store
    store.close()


@pytest.mark.unit
class TestCompaction:
    def test_plain_delete_leaves_the_text_in_the_files_and_records_it(self, store):
        # The engine's own behaviour, which is why compaction exists: marked, not purged.
        assert store.delete_by_filter(tenant_filter("gone")) == 20
        store.flush()
        assert files_holding(Path(store.path), SECRET)
        pending = store.pending_deletions()
        assert pending["points"] == 20 and pending["erase"] is False
        assert json.loads((Path(store.path) / PENDING_FILE).read_text())["points"] == 20

    def test_purge_removes_the_text_from_every_file(self, store):
        assert store.delete_by_filter(tenant_filter("gone"), purge=True) == 20
        assert files_holding(Path(store.path), SECRET) == []
        assert files_holding(Path(store.path), KEPT)
        assert store.pending_deletions() is None
        assert not staging_path(store.path).exists()
        # The survivors answer as before: count, filters, dense and BM25 retrieval.
        assert store.count_documents() == 20
        assert {doc.meta["tenant_id"] for doc in store.filter_documents()} == {"kept"}
        assert store.embedding_retrieval([1.0, 3.0, 0.5, 0.25], top_k=1)[0].id == "kept-doc:3"
        assert store.bm25_retrieval(KEPT.decode(), top_k=3)[0].meta["tenant_id"] == "kept"
        # And the store keeps working: writes, flush, reopen.
        store.write_documents(documents("later", b"LATER", count=2))
        path = store.path
        store.close()
        reopened = QdrantEdgeDocumentStore(path=path, embedding_dim=DIM)
        try:
            assert reopened.count_documents() == 22
        finally:
            reopened.close()

    def test_purge_also_takes_earlier_invalidations(self, store):
        store.delete_by_filter({"field": "id", "operator": "==", "value": "kept-doc:0"})
        store.delete_by_filter(tenant_filter("gone"), purge=True)
        assert files_holding(Path(store.path), f"{KEPT.decode()} chunk 0 of".encode()) == []
        assert store.count_documents() == 19

    def test_replace_and_overwrite_are_recorded_as_pending(self, store):
        store.replace_documents(
            {"field": "meta.document_id", "operator": "==", "value": "kept-doc"}, documents("kept", b"NEWTEXT", 3)
        )
        assert store.pending_deletions()["points"] == 20
        store.write_documents(documents("kept", b"NEWER", 2), policy=DuplicatePolicy.OVERWRITE)
        assert store.pending_deletions()["points"] == 22
        report = store.purge_deleted()
        assert report["points"] == 23  # 20 of "gone" + 3 of "kept"
        assert files_holding(Path(store.path), KEPT) == []

    def test_purge_waits_for_the_age_given(self, store):
        store.delete_by_filter(tenant_filter("gone"))
        assert store.purge_deleted(older_than_s=3600) is None
        assert files_holding(Path(store.path), SECRET)
        assert store.purge_deleted(older_than_s=0) is not None
        assert files_holding(Path(store.path), SECRET) == []

    def test_nothing_pending_means_no_rewrite(self, store):
        assert store.pending_deletions() is None
        assert store.purge_deleted() is None
        assert store.delete_by_filter(tenant_filter("nobody"), purge=True) == 0

    def test_queries_go_on_while_the_copy_is_built(self, store, monkeypatch):
        copying, release = threading.Event(), threading.Event()
        original = compaction._copy_points

        def slow_copy(source, target):
            copying.set()
            assert release.wait(10)
            return original(source, target)

        monkeypatch.setattr(compaction, "_copy_points", slow_copy)
        store.delete_by_filter(tenant_filter("gone"))
        worker = threading.Thread(target=store.purge_deleted)
        worker.start()
        try:
            assert copying.wait(10)
            started = time.perf_counter()
            assert store.count_documents() == 20  # not held back by the compaction
            assert time.perf_counter() - started < 5
        finally:
            release.set()
            worker.join(30)
        assert store.pending_deletions() is None

    def test_a_failed_swap_leaves_the_old_shard_open_and_whole(self, store, monkeypatch):
        def refuse(first, second):
            raise QdrantEdgeStoreError("no exchange here")

        monkeypatch.setattr(compaction, "exchange_folders", refuse)
        store.delete_by_filter(tenant_filter("gone"))
        with pytest.raises(QdrantEdgeStoreError, match="no exchange here"):
            store.purge_deleted()
        assert not staging_path(store.path).exists()
        assert store.count_documents() == 20
        assert store.pending_deletions()["points"] == 20  # still to do
        store.write_documents(documents("after", b"AFTER", 1))
        assert store.count_documents() == 21

    def test_a_copy_that_does_not_open_is_swapped_back(self, store, monkeypatch):
        real_open = compaction.open_engine
        calls = []

        def fail_first(path, config):
            calls.append(path)
            if len(calls) == 1:
                raise QdrantEdgeStoreError("the copy does not load")
            return real_open(path, config)

        monkeypatch.setattr(compaction, "open_engine", fail_first)
        store.delete_by_filter(tenant_filter("gone"))
        with pytest.raises(QdrantEdgeStoreError, match="the copy does not load"):
            store.purge_deleted()
        assert not staging_path(store.path).exists()
        assert store.count_documents() == 20 and store.pending_deletions()["points"] == 20  # the old shard, open
        monkeypatch.setattr(compaction, "open_engine", real_open)
        assert store.purge_deleted()["points"] == 20
        assert files_holding(Path(store.path), SECRET) == []

    def test_a_leftover_sibling_is_removed_on_open(self, store):
        path = store.path
        store.close()
        leftover = staging_path(path)
        (leftover / "segments").mkdir(parents=True)
        (leftover / "segments" / "page.dat").write_bytes(SECRET)  # e.g. the old shard after a crash
        reopened = QdrantEdgeDocumentStore(path=path, embedding_dim=DIM)
        try:
            assert not leftover.exists()
            assert reopened.count_documents() == 40
        finally:
            reopened.close()


@pytest.mark.integration
@pytest.mark.slow
class TestCompactionAcrossProcesses:
    def run_child(self, code: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120, check=False
        )

    def test_an_erasure_cut_short_is_finished_on_the_next_open(self, tmp_path):
        path = str(tmp_path / "qdrant")
        seed = QdrantEdgeDocumentStore(path=path, embedding_dim=DIM)
        seed.write_documents(documents("gone", SECRET) + documents("kept", KEPT))
        seed.close()
        code = f"""
            import os
            from components.document_stores.qdrant_edge import QdrantEdgeDocumentStore, compaction
            def die(*args, **kwargs):
                os._exit(3)  # the process dies after the deletion, before the compaction
            compaction.compact_shard = die
            import components.document_stores.qdrant_edge.document_store as module
            module.compact_shard = die
            store = QdrantEdgeDocumentStore(path={path!r}, embedding_dim=4)
            store.delete_by_filter({{"field": "meta.tenant_id", "operator": "==", "value": "gone"}}, purge=True)
        """
        result = self.run_child(code)
        assert result.returncode == 3, result.stderr
        assert json.loads((Path(path) / PENDING_FILE).read_text())["erase"] is True
        assert files_holding(Path(path), SECRET)
        store = QdrantEdgeDocumentStore(path=path, embedding_dim=DIM)
        try:
            assert files_holding(Path(path), SECRET) == []
            assert store.count_documents() == 20
            assert store.pending_deletions() is None
        finally:
            store.close()

    def test_a_crash_after_the_swap_leaves_the_new_shard(self, tmp_path):
        path = str(tmp_path / "qdrant")
        seed = QdrantEdgeDocumentStore(path=path, embedding_dim=DIM)
        seed.write_documents(documents("gone", SECRET) + documents("kept", KEPT))
        seed.close()
        code = f"""
            import os, shutil
            from components.document_stores.qdrant_edge import QdrantEdgeDocumentStore
            from components.document_stores.qdrant_edge import compaction
            real = compaction.exchange_folders
            def swap_then_die(first, second):
                real(first, second)
                os._exit(4)  # swapped; the old shard not yet removed
            compaction.exchange_folders = swap_then_die
            store = QdrantEdgeDocumentStore(path={path!r}, embedding_dim=4)
            store.delete_by_filter({{"field": "meta.tenant_id", "operator": "==", "value": "gone"}}, purge=True)
        """
        result = self.run_child(code)
        assert result.returncode == 4, result.stderr
        assert staging_path(path).exists()  # the old shard, with the secret
        store = QdrantEdgeDocumentStore(path=path, embedding_dim=DIM)
        try:
            assert not staging_path(path).exists()
            assert files_holding(Path(path), SECRET) == []
            assert store.count_documents() == 20
        finally:
            store.close()

    def test_another_process_stays_locked_out_after_the_swap(self, store):
        store.delete_by_filter(tenant_filter("gone"), purge=True)
        code = f"""
            from components.document_stores.qdrant_edge import QdrantEdgeDocumentStore, ShardLockedError
            try:
                QdrantEdgeDocumentStore(path={store.path!r}, embedding_dim=4)
            except ShardLockedError:
                print("LOCKED")
        """
        result = self.run_child(code)
        assert result.returncode == 0, result.stderr
        assert "LOCKED" in result.stdout
        assert int((Path(store.path) / ".sourcebound.lock").read_text()) == os.getpid()

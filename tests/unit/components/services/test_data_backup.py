"""Backup and restore of a data directory on the real engines: Qdrant Edge, SQLite files, real processes."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from haystack import Document

from components.document_stores.qdrant_edge import QdrantEdgeDocumentStore
from components.services import data_backup
from components.services.backup_key import KEY_FILE_ENV, load_key
from components.services.data_backup import (
    CODE_NAME,
    FORMAT_VERSION,
    MANIFEST_NAME,
    BackupError,
    create_backup,
    restore_backup,
    sha256_file,
    verify_backup,
)
from tests.support.small_disk import small_filesystem

pytestmark = pytest.mark.unit

DIM = 16
EMBEDDING = {"model": "test-model", "dimension": DIM}
REPO = Path(__file__).resolve().parents[4]


def _documents(start: int, count: int, tenant: str, seed: int = 0) -> list[Document]:
    rng = np.random.default_rng(seed + start)
    return [
        Document(
            id=f"{tenant}-doc{i // 2}:{i % 2}",
            content=f"chunk {i} of {tenant} about {['payroll', 'vacation', 'laptops', 'security'][i % 4]} policy",
            meta={"tenant_id": tenant, "tags": ["hr"], "document_id": f"{tenant}-doc{i // 2}"},
            embedding=rng.random(DIM).tolist(),
        )
        for i in range(start, start + count)
    ]


def _definition(data_dir: Path) -> dict:
    return QdrantEdgeDocumentStore(path=str(data_dir / "qdrant"), embedding_dim=DIM).to_dict()


def make_data_dir(data_dir: Path) -> QdrantEdgeDocumentStore:
    """A data directory as a server leaves it, plus state of later features (any *.sqlite, nested files)."""
    store = QdrantEdgeDocumentStore(path=str(data_dir / "qdrant"), embedding_dim=DIM)
    store.write_documents(_documents(0, 300, "acme"))
    store.write_documents(_documents(0, 120, "globex"))
    records = sqlite3.connect(data_dir / "records.sqlite")
    records.execute("PRAGMA journal_mode=WAL")
    records.execute("CREATE TABLE index_events (id INTEGER PRIMARY KEY, event TEXT)")
    records.executemany("INSERT INTO index_events (event) VALUES (?)", [("index",)] * 50)
    records.commit()
    records.close()
    (data_dir / "records.sqlite.key").write_text("ab" * 32)
    os.chmod(data_dir / "records.sqlite.key", 0o600)
    (data_dir / "api_keys.json").write_text(json.dumps({"keys": [{"key_hash": "x", "tenant_id": "acme"}]}))
    for name in ("tags.sqlite", "glossary.sqlite"):
        connection = sqlite3.connect(data_dir / name)
        connection.execute("CREATE TABLE t (v TEXT)")
        connection.execute("INSERT INTO t VALUES (?)", (name,))
        connection.commit()
        connection.close()
    (data_dir / "mirrors").mkdir()
    (data_dir / "mirrors" / "state.json").write_text('{"cursor": 7}')
    return store


@pytest.fixture
def data_dir(tmp_path):
    path = tmp_path / "data"
    path.mkdir()
    store = make_data_dir(path)
    yield path, store
    store.close()


def _top5(store: QdrantEdgeDocumentStore) -> dict[str, list[str]]:
    query = np.random.default_rng(99).random(DIM).tolist()
    only = {"field": "meta.tenant_id", "operator": "==", "value": "acme"}
    return {
        "dense": [doc.id for doc in store.embedding_retrieval(query, filters=only, top_k=5)],
        "keyword": [doc.id for doc in store.bm25_retrieval("vacation policy", filters=only, top_k=5)],
    }


class TestWritesPaused:
    def test_writers_wait_and_readers_go_on_while_paused(self, data_dir):
        _, store = data_dir
        written = threading.Event()

        def writer():
            store.write_documents(_documents(1000, 1, "acme"))
            written.set()

        with store.writes_paused():
            thread = threading.Thread(target=writer)
            thread.start()
            started = time.perf_counter()
            assert len(store.embedding_retrieval([0.5] * DIM, top_k=3)) == 3  # a query is answered meanwhile
            assert time.perf_counter() - started < 2
            assert not written.wait(0.5), "a write went through during the pause"
        assert written.wait(10)
        thread.join()
        assert store.count_documents() == 421


class TestCreateBackup:
    def test_manifest_lists_every_file_with_its_checksum_and_the_counts(self, data_dir, tmp_path):
        path, store = data_dir
        manifest = create_backup(path, tmp_path / "backup", store, embedding=EMBEDDING, sourcebound_version="9.9")
        on_disk = json.loads((tmp_path / "backup" / MANIFEST_NAME).read_text())
        assert on_disk["format_version"] == FORMAT_VERSION and on_disk["sourcebound_version"] == "9.9"
        assert on_disk["embedding"] == EMBEDDING
        assert on_disk["counts"] == {
            "chunks": 420,
            "documents": 210,
            "tenants": {"acme": {"chunks": 300, "documents": 150}, "globex": {"chunks": 120, "documents": 60}},
        }
        files = set(on_disk["files"])
        for name in ("records.sqlite", "records.sqlite.key", "api_keys.json", "tags.sqlite", "glossary.sqlite",
                     "mirrors/state.json"):  # fmt: skip
            assert name in files
        assert any(name.startswith("qdrant/segments/") for name in files)
        assert not any(name.endswith(("-wal", "-shm", ".sourcebound.lock")) for name in files)
        for name, entry in on_disk["files"].items():
            assert sha256_file(tmp_path / "backup" / name) == entry["sha256"]
        assert on_disk["files"]["records.sqlite.key"]["mode"] == 0o600
        assert manifest["write_pause_s"] < manifest["seconds"]
        assert not [entry for entry in tmp_path.iterdir() if ".partial-" in entry.name]

    def test_restored_directory_is_the_state_at_backup_time(self, data_dir, tmp_path):
        path, store = data_dir
        stop = threading.Event()
        batches = []

        def keep_writing():
            start = 10_000
            while not stop.is_set():
                store.write_documents(_documents(start, 5, "acme"))
                batches.append(start)
                start += 5

        writer = threading.Thread(target=keep_writing)
        writer.start()
        try:
            time.sleep(0.2)
            manifest = create_backup(path, tmp_path / "backup", store, embedding=EMBEDDING)
        finally:
            stop.set()
            writer.join()
        top5 = _top5(store)
        # After the backup, ids past anything the writer reached (it runs as long as the backup does).
        later = _documents(batches[-1] + 1_000, 4, "acme")
        store.write_documents(later)
        records = sqlite3.connect(path / "records.sqlite")
        records.execute("INSERT INTO index_events (event) VALUES ('after')")
        records.commit()
        records.close()

        restore_backup(
            tmp_path / "backup", tmp_path / "restored", embedding=EMBEDDING, store_definition=_definition(path)
        )
        restored = QdrantEdgeDocumentStore(path=str(tmp_path / "restored" / "qdrant"), embedding_dim=DIM)
        try:
            assert restored.tenant_counts() == manifest["counts"]["tenants"]
            assert manifest["counts"]["chunks"] > 420  # the concurrent writes up to the pause are in it
            assert restored.filter_documents({"field": "id", "operator": "==", "value": later[0].id}) == []
            assert _top5(restored)["keyword"] == top5["keyword"]
        finally:
            restored.close()
        rows = sqlite3.connect(tmp_path / "restored" / "records.sqlite").execute("SELECT event FROM index_events")
        assert [row[0] for row in rows] == ["index"] * 50
        assert (tmp_path / "restored" / "mirrors" / "state.json").read_text() == '{"cursor": 7}'
        assert (tmp_path / "restored" / "records.sqlite.key").stat().st_mode & 0o777 == 0o600

    def test_same_top5_after_restore_without_concurrent_writes(self, data_dir, tmp_path):
        path, store = data_dir
        before = _top5(store)
        create_backup(path, tmp_path / "backup", store, embedding=EMBEDDING)
        restore_backup(tmp_path / "backup", tmp_path / "restored", embedding=EMBEDDING)
        restored = QdrantEdgeDocumentStore(path=str(tmp_path / "restored" / "qdrant"), embedding_dim=DIM)
        try:
            assert _top5(restored) == before and len(before["dense"]) == 5
        finally:
            restored.close()

    def test_refuses_an_existing_path(self, data_dir, tmp_path):
        path, store = data_dir
        (tmp_path / "backup").mkdir()
        with pytest.raises(BackupError, match="already exists"):
            create_backup(path, tmp_path / "backup", store, embedding=EMBEDDING)
        assert list((tmp_path / "backup").iterdir()) == []

    @pytest.mark.slow
    def test_full_disk_fails_the_backup_and_leaves_the_data_directory_as_it_was(self, data_dir, tmp_path):
        path, store = data_dir
        (path / "mirrors" / "pack.bin").write_bytes(os.urandom(12 << 20))
        before = {name: sha256_file(path / name) for name in ("records.sqlite", "mirrors/pack.bin", "api_keys.json")}
        with small_filesystem(tmp_path / "disk", "8m") as disk:
            with pytest.raises(BackupError, match="No space left"):
                create_backup(path, disk / "backup", store, embedding=EMBEDDING)
            assert list(disk.iterdir()) == []  # neither the backup nor its partial folder is left
        assert {name: sha256_file(path / name) for name in before} == before
        assert store.count_documents() == 420
        store.write_documents(_documents(70_000, 2, "acme"))  # writers were released
        assert store.count_documents() == 422


@pytest.fixture
def backup(data_dir, tmp_path):
    path, store = data_dir
    create_backup(path, tmp_path / "backup", store, embedding=EMBEDDING)
    return tmp_path / "backup"


class TestRestoreRefusals:
    def test_a_flipped_byte_is_refused_naming_the_file(self, backup, tmp_path):
        target = tmp_path / "restored"
        victim = backup / "tags.sqlite"
        content = bytearray(victim.read_bytes())
        content[len(content) // 2] ^= 0x01
        victim.write_bytes(bytes(content))
        with pytest.raises(BackupError, match="tags.sqlite does not match its SHA-256"):
            restore_backup(backup, target, embedding=EMBEDDING)
        assert not target.exists()

    def test_a_truncated_file_is_refused_naming_it_and_the_target_stays_as_it_was(self, backup, tmp_path):
        segment = max(
            (path for path in (backup / "qdrant").rglob("*") if path.is_file()), key=lambda path: path.stat().st_size
        )
        with open(segment, "r+b") as handle:
            handle.truncate(segment.stat().st_size // 2)
        target = tmp_path / "restored"
        target.mkdir()
        with pytest.raises(BackupError, match=str(segment.relative_to(backup)) + ".*truncated"):
            restore_backup(backup, target, embedding=EMBEDDING)
        assert list(target.iterdir()) == []
        assert not [entry for entry in tmp_path.iterdir() if ".restoring-" in entry.name]

    def test_a_file_the_manifest_does_not_list_is_refused(self, backup, tmp_path):
        (backup / "extra.txt").write_text("x")
        with pytest.raises(BackupError, match="extra.txt"):
            verify_backup(backup)

    def test_a_newer_format_is_refused_naming_the_versions(self, backup, tmp_path):
        manifest = json.loads((backup / MANIFEST_NAME).read_text())
        manifest["format_version"] = FORMAT_VERSION + 1
        (backup / MANIFEST_NAME).write_text(json.dumps(manifest))
        with pytest.raises(BackupError, match=f"format version {FORMAT_VERSION + 1}.*up to {FORMAT_VERSION}"):
            restore_backup(backup, tmp_path / "restored", embedding=EMBEDDING)

    def test_an_added_admin_key_with_its_checksum_updated_is_refused(self, backup, tmp_path):
        # The attack checksums alone cannot catch: change a file and rewrite its entry in the manifest.
        keys = backup / "api_keys.json"
        data = json.loads(keys.read_text())
        data["keys"].append({"key_hash": "attacker", "tenant_id": "acme", "permissions": ["admin"]})
        keys.write_text(json.dumps(data))
        manifest = json.loads((backup / MANIFEST_NAME).read_text())
        manifest["files"]["api_keys.json"].update(size=keys.stat().st_size, sha256=sha256_file(keys))
        (backup / MANIFEST_NAME).write_text(json.dumps(manifest, indent=2, sort_keys=True))
        target = tmp_path / "restored"
        with pytest.raises(BackupError, match=r"changed after it was made .*nothing was restored"):
            restore_backup(backup, target, embedding=EMBEDDING)
        assert not target.exists()
        assert not [entry for entry in tmp_path.iterdir() if ".restoring-" in entry.name]

    def test_a_backup_made_with_another_key_or_without_one_is_refused(self, backup, tmp_path, monkeypatch):
        other = tmp_path / "other.key"
        other.write_text("cd" * 32)
        monkeypatch.setenv(KEY_FILE_ENV, str(other))
        with pytest.raises(BackupError, match=r"made with another backup key \(key id '[0-9a-f]{16}'"):
            restore_backup(backup, tmp_path / "restored", embedding=EMBEDDING)
        monkeypatch.setenv(KEY_FILE_ENV, str(tmp_path / "missing.key"))
        with pytest.raises(BackupError, match=r"No backup key: .*missing.key does not exist"):
            restore_backup(backup, tmp_path / "restored", embedding=EMBEDDING)
        assert not (tmp_path / "missing.key").exists()  # a restore never makes a key up
        assert not (tmp_path / "restored").exists()

    def test_a_removed_code_is_refused_and_an_old_backup_needs_asking(self, backup, tmp_path):
        (backup / CODE_NAME).unlink()
        with pytest.raises(BackupError, match="has no manifest.hmac"):
            restore_backup(backup, tmp_path / "restored", embedding=EMBEDDING)
        # A format 1 backup (made before backups were authenticated) restores only when asked.
        manifest = json.loads((backup / MANIFEST_NAME).read_text())
        manifest["format_version"] = 1
        (backup / MANIFEST_NAME).write_text(json.dumps(manifest, indent=2, sort_keys=True))
        with pytest.raises(BackupError, match=r"format 1, no manifest.hmac.*--unauthenticated"):
            restore_backup(backup, tmp_path / "restored", embedding=EMBEDDING)
        result = restore_backup(backup, tmp_path / "restored", embedding=EMBEDDING, allow_unauthenticated=True)
        assert result["counts"]["chunks"] == 420

    def test_the_key_is_made_once_outside_the_data_dir_and_never_copied(self, data_dir, tmp_path, monkeypatch):
        path, store = data_dir
        key_path = tmp_path / "keys" / "backup.key"
        monkeypatch.setenv(KEY_FILE_ENV, str(key_path))
        manifest = create_backup(path, tmp_path / "b1", store, embedding=EMBEDDING)
        assert key_path.stat().st_mode & 0o777 == 0o600 and len(key_path.read_text().strip()) == 64
        assert manifest["key_id"] == load_key().key_id
        secret = key_path.read_bytes().strip()
        held = [p for p in (tmp_path / "b1").rglob("*") if p.is_file() and secret in p.read_bytes()]
        assert held == []
        monkeypatch.setenv(KEY_FILE_ENV, str(path / "backup.key"))
        with pytest.raises(BackupError, match="inside the data directory"):
            create_backup(path, tmp_path / "b2", store, embedding=EMBEDDING)
        assert not (tmp_path / "b2").exists()

    @pytest.mark.parametrize(
        ("configured", "named"),
        [({"model": "other-model", "dimension": DIM}, "model 'test-model' in the backup, 'other-model' configured"),
         ({"model": "test-model", "dimension": 384}, "dimension 16 in the backup, 384 configured")],
    )  # fmt: skip
    def test_another_embedding_model_or_dimension_is_refused(self, backup, tmp_path, configured, named):
        with pytest.raises(BackupError, match=named):
            restore_backup(backup, tmp_path / "restored", embedding=configured)
        assert not (tmp_path / "restored").exists()

    def test_a_non_empty_directory_needs_replace(self, backup, tmp_path):
        target = tmp_path / "other"
        target.mkdir()
        (target / "keep.txt").write_text("mine")
        with pytest.raises(BackupError, match="not empty.*--replace"):
            restore_backup(backup, target, embedding=EMBEDDING)
        assert (target / "keep.txt").read_text() == "mine"
        result = restore_backup(backup, target, embedding=EMBEDDING, replace=True)
        assert result["replaced"] and not (target / "keep.txt").exists() and (target / "records.sqlite").exists()
        assert not [entry for entry in tmp_path.iterdir() if ".before-restore-" in entry.name]

    @pytest.mark.slow
    def test_refuses_while_another_process_holds_the_target(self, backup, tmp_path):
        target = tmp_path / "served"
        holder = subprocess.Popen(
            [sys.executable, "-c", (
                "import sys, time\n"
                "from components.document_stores.qdrant_edge import QdrantEdgeDocumentStore\n"
                f"s = QdrantEdgeDocumentStore(path={str(target / 'qdrant')!r}, embedding_dim={DIM})\n"
                "print('ready', flush=True)\n"
                "time.sleep(60)\n"
            )],
            cwd=REPO, stdout=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(REPO)},
        )  # fmt: skip
        try:
            assert holder.stdout.readline().strip() == b"ready"
            before = sorted(str(path) for path in target.rglob("*"))
            with pytest.raises(BackupError, match=f"process {holder.pid}.*stop it"):
                restore_backup(backup, target, embedding=EMBEDDING, replace=True)
            assert sorted(str(path) for path in target.rglob("*")) == before
        finally:
            holder.kill()
            holder.wait()

    @pytest.mark.slow
    def test_a_backup_killed_half_way_is_never_accepted(self, data_dir, tmp_path):
        path, store = data_dir
        store.close()  # the backup process opens the shard itself
        (path / "mirrors" / "pack.bin").write_bytes(os.urandom(64 << 20))  # makes the copy take a while
        script = (
            "import sys\n"
            "from components.document_stores.qdrant_edge import QdrantEdgeDocumentStore\n"
            "from components.services.data_backup import create_backup\n"
            f"store = QdrantEdgeDocumentStore(path={str(path / 'qdrant')!r}, embedding_dim={DIM})\n"
            f"create_backup({str(path)!r}, {str(tmp_path / 'backup')!r}, store, embedding={EMBEDDING!r})\n"
        )
        process = subprocess.Popen(
            [sys.executable, "-c", script], cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}
        )
        deadline = time.monotonic() + 60
        partial = []
        while not partial and time.monotonic() < deadline and process.poll() is None:
            partial = [entry for entry in tmp_path.iterdir() if ".partial-" in entry.name]
            time.sleep(0.005)
        assert partial, "the backup never started writing"
        time.sleep(0.05)
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
        assert process.returncode == -signal.SIGKILL
        assert not (tmp_path / "backup").exists()
        with pytest.raises(BackupError, match="is not a backup directory"):
            restore_backup(tmp_path / "backup", tmp_path / "restored", embedding=EMBEDDING)
        with pytest.raises(BackupError, match=f"no {MANIFEST_NAME}"):
            restore_backup(partial[0], tmp_path / "restored", embedding=EMBEDDING)
        assert not (tmp_path / "restored").exists()


class TestCommands:
    def test_backup_and_restore_commands_offline(self, tmp_path, monkeypatch, capsys):
        from hayhooks_app.cli import main

        data_dir = tmp_path / "data"
        store = QdrantEdgeDocumentStore(path=str(data_dir / "qdrant"), embedding_dim=384)
        rng = np.random.default_rng(3)
        store.write_documents(
            [
                Document(id=f"doc{i}:0", content=f"chunk {i}", embedding=rng.random(384).tolist(),
                         meta={"tenant_id": "acme", "tags": ["hr"], "document_id": f"doc{i}"})
                for i in range(12)
            ]
        )  # fmt: skip
        store.close()
        monkeypatch.setenv("SOURCEBOUND_DATA_DIR", str(data_dir))  # restored after the test (the CLI sets it)

        assert main(["backup", str(tmp_path / "b"), "--data-dir", str(data_dir)]) == 0
        out = capsys.readouterr().out
        assert f"backup written to {tmp_path / 'b'}: 12 chunks in 12 documents of 1 tenant(s)" in out
        manifest = json.loads((tmp_path / "b" / MANIFEST_NAME).read_text())
        assert manifest["embedding"]["model"] == "sentence-transformers/all-MiniLM-L6-v2"
        assert manifest["embedding"]["dimension"] == 384 and manifest["sparse"]["model"].startswith("bm25")

        assert main(["backup", str(tmp_path / "b"), "--data-dir", str(data_dir)]) == 1
        assert "already exists" in capsys.readouterr().err
        assert main(["restore", str(tmp_path / "b"), "--data-dir", str(data_dir)]) == 1
        assert "not empty" in capsys.readouterr().err
        assert main(["restore", str(tmp_path / "b"), "--data-dir", str(tmp_path / "new")]) == 0
        assert "12 chunks in 12 documents of 1 tenant(s), " in capsys.readouterr().out
        assert main(["stats", "--data-dir", str(tmp_path / "new")]) == 0
        assert "acme: 12 documents, 12 chunks" in capsys.readouterr().out


@pytest.mark.unit
class TestPrecopy:
    def test_the_pause_makes_the_precopy_equal_writing_only_what_differs(self, tmp_path):
        data_dir, partial = tmp_path / "data", tmp_path / "partial"
        shard = data_dir / "qdrant"
        (shard / "segments").mkdir(parents=True)
        partial.mkdir()
        sealed = bytes(range(256)) * 8192  # 2 MB: two compare blocks
        (shard / "segments" / "sealed").write_bytes(sealed)
        (shard / "segments" / "mapped").write_bytes(b"m" * (3 << 20))
        (shard / "segments" / "merged").write_bytes(b"x" * 50)
        with open(shard / "segments" / "sparse", "wb") as handle:  # preallocated: data, a hole, data
            handle.write(b"a" * 4096)
            handle.seek(8 << 20)
            handle.write(b"b" * 4096)
        (shard / "wal").write_bytes(b"w" * 10)

        precopied = data_backup._precopy(shard, data_dir, partial)
        copy = partial / "qdrant"
        written_before = {path: (copy / path).stat().st_mtime_ns for path in ("segments/sealed", "segments/mapped")}
        # A write through a memory map need not move the file's mtime: same size, same mtime, other bytes.
        status = (shard / "segments" / "mapped").stat()
        with open(shard / "segments" / "mapped", "r+b") as handle:
            handle.seek(2 << 20)
            handle.write(b"M" * 10)
        os.utime(shard / "segments" / "mapped", ns=(status.st_atime_ns, status.st_mtime_ns))
        with open(shard / "segments" / "sparse", "r+b") as handle:  # data written into the hole
            handle.seek(4 << 20)
            handle.write(b"c" * 100)
        (shard / "segments" / "merged").unlink()
        (shard / "segments" / "new").write_bytes(b"n")
        with open(shard / "wal", "ab") as handle:
            handle.write(b"more")
        time.sleep(0.01)  # so a rewrite of the copy would show in its mtime

        data_backup._copy_changed(shard, data_dir, partial, precopied)

        names = sorted(p.relative_to(copy).as_posix() for p in copy.rglob("*") if p.is_file())
        assert names == ["segments/mapped", "segments/new", "segments/sealed", "segments/sparse", "wal"]
        for name in names:
            assert (copy / name).read_bytes() == (shard / name).read_bytes(), name
        assert (copy / "segments" / "sealed").stat().st_mtime_ns == written_before["segments/sealed"]  # only read
        assert (copy / "segments" / "mapped").stat().st_mtime_ns != written_before["segments/mapped"]

    def test_without_a_precopy_everything_is_copied_in_the_pause(self, tmp_path):
        data_dir, partial = tmp_path / "data", tmp_path / "partial"
        (data_dir / "qdrant").mkdir(parents=True)
        partial.mkdir()
        (data_dir / "qdrant" / "segment").write_bytes(b"x" * 10)
        data_backup._copy_changed(data_dir / "qdrant", data_dir, partial, None)
        assert (partial / "qdrant" / "segment").read_bytes() == b"x" * 10

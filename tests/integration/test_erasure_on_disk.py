"""
Delete means gone, on disk (docs/contract.md, "Deletion"): a live server indexes, logs, converses and syncs with
unique marker strings for two tenants; then a tenant is deleted over HTTP, a user through ``sourcebound delete
--user`` (which runs inside the server), and a document invalidated; after a clean stop every byte of every file
under the data directory (the shard's segments and write-ahead log, every SQLite file and its side files, the git
mirrors, the crawled pages' sync rows) is searched. The erased markers are in none; the surviving tenant's still are.
"""

import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from support.api_server import ApiServer
from support.git_repos import GitRepo
from support.web_site import Page, WebSite

from components.stores.tag_directory import TagDirectory
from hayhooks_app.cli import main as sourcebound

# Erased: the acme tenant's, alice's (in globex), and an invalidated globex document's.
ERASED = {
    "acme document": b"ACMEDOCMARK",
    "acme git file": b"ACMEGITMARK",
    "acme query": b"ACMEQUERYMARK",
    "acme conversation": b"ACMECONVMARK",
    "acme glossary": b"ACMEGLOSSMARK",
    "acme web page": b"ACMEWEBMARK",  # in a crawled page's URL (the sync state's pages) and text
    "alice document": b"ALICEDOCMARK",
    "alice query": b"ALICEQUERYMARK",
    "alice conversation": b"ALICECONVMARK",
    "alice email": b"alice.mark@globex.example",
    "invalidated document": b"GLOBEXGONEMARK",
}
# Kept: globex's tenant-wide document, bob's private document and bob's query.
KEPT = {"globex document": b"GLOBEXKEEPMARK", "bob document": b"BOBKEEPMARK", "bob query": b"BOBQUERYMARK"}


def document(tenant: str, document_id: str, marker: bytes, **meta) -> dict:
    return {
        "content": f"{marker.decode()} is the codeword of the {document_id} notes of {tenant}. "
        "The office opens at eight and closes at six.",
        "tenant_id": tenant,
        "tags": ["hr"],
        "document_id": document_id,
        **meta,
    }


def files_holding(root: Path, marker: bytes) -> list[str]:
    """Every file under ``root`` (hidden ones and side files included) whose bytes contain ``marker``."""
    return sorted(
        str(path.relative_to(root)) for path in root.rglob("*") if path.is_file() and marker in path.read_bytes()
    )


def purged(root: Path, marker: bytes) -> bool:
    """Whether no file under ``root`` holds ``marker``, read while the server runs (a file may go mid-scan)."""
    try:
        return files_holding(root, marker) == []
    except OSError:
        return False


def eventually(check, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError("not reached in time")
        time.sleep(0.3)


@pytest.fixture(scope="module")
def erased(tmp_path_factory):
    root = tmp_path_factory.mktemp("erasure_on_disk")
    data_dir = root / "data"
    repo = GitRepo(root / "repo")
    repo.commit({"guide.md": f"# Guide\n\n{ERASED['acme git file'].decode()} opens the vault on Mondays.\n"})
    web_marker = ERASED["acme web page"].decode()
    site = WebSite(
        {
            "/": Page.html("The intranet.", title="Intranet", links=[f"/{web_marker}-hours"]),
            f"/{web_marker}-hours": Page.html(f"{web_marker} hours are posted on the intranet.", title="Hours"),
        }
    )
    sources = root / "sources.yml"
    source = {"name": "handbook", "type": "git", "url": repo.url, "branch": "main", "tenant_id": "acme", "tags": ["hr"]}
    intranet = {"name": "intranet", "type": "web", "start_urls": [site.url("/")], "allowed_domains": [site.host],
                "tenant_id": "acme", "tags": ["hr"], "requests_per_second": 100}  # fmt: skip
    sources.write_text(yaml.safe_dump({"sources": [source, intranet]}), encoding="utf-8")
    env = {
        "SOURCEBOUND_BOOTSTRAP_CORPUS": "false",
        "SOURCEBOUND_SOURCES": str(sources),
        "SOURCEBOUND_RECONCILE_INTERVAL": "0",
        # Invalidated text is purged on the pruning schedule: here at once, every second.
        "SOURCEBOUND_PURGE_AFTER_SECONDS": "0",
        "SOURCEBOUND_RECORDS_PRUNE_INTERVAL_SECONDS": "1",
    }
    # An existing data dir as an earlier version left it: readable by everyone on the machine.
    (data_dir / "old").mkdir(parents=True)
    (data_dir / "old" / "notes.txt").write_text("left by an earlier version")
    for entry in (data_dir, data_dir / "old", data_dir / "old" / "notes.txt"):
        entry.chmod(0o755 if entry.is_dir() else 0o644)
    server = ApiServer(data_dir, env=env)
    server.log_path = root / "server.log"  # the harness's log is no file of the data directory
    with server:
        http = server.client
        documents = [
            document("acme", "handbook", ERASED["acme document"]),
            document("globex", "handbook", KEPT["globex document"]),
            document("globex", "retired", ERASED["invalidated document"]),
            document("globex", "alice-notes", ERASED["alice document"], scope="user", user_id="u-alice"),
            document("globex", "bob-notes", KEPT["bob document"], scope="user", user_id="u-bob"),
        ]
        assert http.post("/index/run", json={"documents": documents}).status_code == 200
        assert sourcebound(["sync", "handbook", "--data-dir", str(data_dir)]) == 0
        assert (data_dir / "sources" / "handbook.git").is_dir()
        with site:  # crawled through the running server
            assert sourcebound(["sync", "intranet", "--data-dir", str(data_dir)]) == 0
        glossary = {"tenant_id": "acme", "csv": f"term,aliases\n{ERASED['acme glossary'].decode()},vault\n"}
        assert http.post("/glossary", json=glossary).status_code == 200
        for tenant, user, query, turn in (
            ("acme", "u-carol", ERASED["acme query"], ERASED["acme conversation"]),
            ("globex", "u-alice", ERASED["alice query"], ERASED["alice conversation"]),
            ("globex", "u-bob", KEPT["bob query"], None),
        ):
            identity = {"tenant_id": tenant, "user_tags": ["hr"], "user_id": user}
            assert http.post("/search/run", json={"query": f"{query.decode()} hours", **identity}).status_code == 200
            if turn is not None:
                conversation = http.post("/conversations", json={"tenant_id": tenant, "user_id": user}).json()
                body = {
                    "query": f"When does {turn.decode()} open?",
                    "conversation_id": conversation["conversation_id"],
                    **identity,
                }
                answered = http.post("/rag/run", json=body)
                assert answered.status_code == 200, answered.text
        directory = TagDirectory(data_dir / "tags.sqlite")
        directory.add_user("u-alice", ERASED["alice email"].decode())
        directory.set_tag_owner("globex", "hr", "u-alice")
        before = {name: files_holding(data_dir, marker) for name, marker in {**ERASED, **KEPT}.items()}

        invalidated = http.post("/invalidate/run", json={"tenant_id": "globex", "document_ids": ["retired"]})
        assert invalidated.json()["result"]["chunks_removed"] == 1
        eventually(lambda: purged(data_dir / "qdrant", ERASED["invalidated document"]))
        deleted = http.post("/delete_tenant/run", json={"tenant_id": "acme"})
        assert deleted.status_code == 200, deleted.text
        tenant_report = deleted.json()["result"]["removed"]
        assert sourcebound(["delete", "--user", "u-alice", "--tenant", "globex", "--data-dir", str(data_dir)]) == 0
        # The survivors still answer.
        survivors = http.post(
            "/search/run",
            json={"query": "codeword notes", "tenant_id": "globex", "user_tags": ["hr"], "user_id": "u-bob"},
        ).json()["result"]["results"]
    assert server.process is None  # stopped cleanly by the context manager
    after = {name: files_holding(data_dir, marker) for name, marker in {**ERASED, **KEPT}.items()}
    return SimpleNamespace(
        data_dir=data_dir, before=before, after=after, tenant_report=tenant_report, survivors=survivors
    )


@pytest.mark.integration
@pytest.mark.slow
class TestErasureOnDisk:
    def test_every_marker_was_on_disk_before(self, erased):
        # The search below means something only if each marker was in a file first (the git file's text only
        # reaches the shard: git compresses its objects).
        missing = [name for name, files in erased.before.items() if not files]
        assert missing == []

    def test_no_file_of_the_data_dir_holds_erased_text(self, erased):
        assert {name: files for name, files in erased.after.items() if name in ERASED and files} == {}

    def test_the_other_tenant_and_users_are_still_on_disk(self, erased):
        assert all(erased.after[name] for name in KEPT), erased.after
        assert any(name.startswith("qdrant/") for name in erased.after["globex document"])
        assert {hit["document_id"] for hit in erased.survivors} == {"handbook", "bob-notes"}

    def test_the_tenants_mirror_and_sync_state_went(self, erased):
        # handbook: its commit and file; intranet: its two crawled pages (and the jobs of both)
        assert erased.tenant_report["source_mirrors"] == 1 and erased.tenant_report["sync_rows"] >= 4
        assert not (erased.data_dir / "sources" / "handbook.git").exists()

    def test_no_compaction_leftover_and_nothing_pending(self, erased):
        names = {path.name for path in erased.data_dir.iterdir()}
        assert not any(name.endswith(".compacting") for name in names), names
        assert not (erased.data_dir / "qdrant" / "deleted_points.json").exists()


@pytest.mark.integration
@pytest.mark.slow
class TestDataDirIsPrivate:
    def test_every_entry_is_private_to_the_owner(self, erased):
        # Tightened at start-up, and what SQLite, Qdrant Edge and git created later is private too.
        entries = [erased.data_dir, *erased.data_dir.rglob("*")]
        loose = {str(path): oct(path.lstat().st_mode & 0o777) for path in entries if path.lstat().st_mode & 0o077}
        assert loose == {}
        assert (erased.data_dir.stat().st_mode & 0o777) == 0o700
        assert (erased.data_dir / "old" / "notes.txt").stat().st_mode & 0o777 == 0o600
        kinds = {path.suffix for path in entries if path.is_file()}
        assert {".sqlite", ".json"} <= kinds  # SQLite files and the shard's own files were checked
        assert any("segments" in path.parts for path in entries)

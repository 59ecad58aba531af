"""
Syncing git sources through the real indexing pipeline, the real Qdrant Edge store and real git
repositories (``file://`` remotes): first sync, incremental pushes (add, modify, delete, rename),
idempotence, a force-push (full reconcile), refused files, and a sync process killed mid-batch.
"""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from support.git_repos import GitRepo

from components.core.document_identity import tenant_filter
from components.services.document_lifecycle import invalidate
from components.services.indexing_service import IndexingService
from components.services.source_config import parse_sources
from components.services.source_sync import SourceNotFoundError, SourceSyncer
from components.stores.sync_state import SyncState

pytestmark = [pytest.mark.integration, pytest.mark.slow]
REPO_ROOT = Path(__file__).resolve().parents[4]


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("data")
    return IndexingService.from_yaml(env={"SOURCEBOUND_DATA_DIR": str(data_dir)})


@pytest.fixture
def setup(service, tmp_path):
    service.document_store.delete_all_documents()
    repo = GitRepo(tmp_path / "repo")
    sources = parse_sources(
        {"sources": [{"name": "handbook", "url": repo.url, "include": ["**/*.md", "**/*.yaml"],
                      "exclude": ["drafts/**"], "tenant_id": "acme", "tags": ["eng"]}]}
    )  # fmt: skip
    state = SyncState(tmp_path / "sources.sqlite")
    syncer = SourceSyncer(
        sources, state, tmp_path / "mirrors", service.index_streams,
        lambda tenant, ids, reason: invalidate(service.document_store, tenant, ids, reason=reason),
    )  # fmt: skip
    yield repo, syncer, state
    state.close()


def indexed(service) -> dict[str, dict]:
    """source_path -> meta of its first chunk, for the tenant's source documents."""
    found = {}
    for chunk in service.document_store.filter_documents(tenant_filter("acme")):
        found.setdefault(chunk.meta["source_path"], chunk.meta)
    return found


class TestSourceSync:
    def test_first_sync_then_pushes(self, service, setup):
        repo, syncer, state = setup
        first = repo.commit(
            {
                "README.md": "# Handbook\n\nHow the team writes docs.\n\n## Setup\n\nRun make docs.\n",
                "specs/svc.yaml": "service: billing\nowner: payments\n",
                "drafts/wip.md": "# WIP\n\nnot yet\n",
                "notes.txt": "not included\n",
                "logo.md": b"\x89PNG\r\n\x1a\n\x00\x00binary",
            }
        )
        report = syncer.sync("handbook")
        assert report["mode"] == "full" and report["to_commit"] == first
        assert report["indexed"] == ["README.md", "specs/svc.yaml"]
        assert list(report["rejected"]) == ["logo.md"] and "PNG image" in report["rejected"]["logo.md"]
        docs = indexed(service)
        assert set(docs) == {"README.md", "specs/svc.yaml"}
        readme = docs["README.md"]
        assert readme["document_id"] == syncer.source("handbook").document_id("README.md")
        assert readme["source_uri"] == f"{repo.url}/README.md" and readme["commit_sha"] == first
        assert readme["source_updated_at"].startswith("20") and readme["document_name"] == "Handbook"
        assert (readme["tenant_id"], readme["tags"], readme["scope"]) == ("acme", ["eng"], "tenant")
        assert docs["specs/svc.yaml"]["source_type"] == "yaml"
        assert state.last_commit("handbook") == first

        # The same head again: nothing to do, nothing written.
        again = syncer.sync("handbook")
        assert again["mode"] == "unchanged" and again["chunks_written"] == 0

        # A push: modify, delete, rename, add; the excluded draft changes too.
        repo.rename("specs/svc.yaml", "specs/billing.yaml")
        second = repo.commit(
            {"README.md": "# Handbook\n\nHow the team writes and reviews docs.\n", "new.md": "# New page\n\nFresh.\n",
             "drafts/wip.md": "# WIP\n\nstill not\n", "logo.md": None}
        )  # fmt: skip
        report = syncer.sync("handbook")
        assert report["mode"] == "incremental" and report["from_commit"] == first and report["to_commit"] == second
        assert sorted(report["indexed"]) == ["README.md", "new.md", "specs/billing.yaml"]
        assert report["removed"] == ["logo.md", "specs/svc.yaml"]
        docs = indexed(service)
        assert set(docs) == {"README.md", "new.md", "specs/billing.yaml"}
        assert docs["README.md"]["commit_sha"] == second and docs["new.md"]["commit_sha"] == second
        readme_text = " ".join(
            chunk.content
            for chunk in service.document_store.filter_documents(tenant_filter("acme"))
            if chunk.meta["source_path"] == "README.md"
        )
        assert "reviews" in readme_text and "Run make docs" not in readme_text
        assert syncer.sync("handbook")["mode"] == "unchanged"

    def test_force_push_falls_back_to_a_full_reconcile(self, service, setup):
        repo, syncer, state = setup
        base = repo.commit({"a.md": "# A\n\nAlpha text.\n"})
        repo.commit({"b.md": "# B\n\nBeta text.\n", "c.md": "# C\n\nGamma text.\n"})
        syncer.sync("handbook")
        assert set(indexed(service)) == {"a.md", "b.md", "c.md"}
        rewritten = repo.rewrite_history(base, {"d.md": "# D\n\nDelta text.\n"})
        report = syncer.sync("handbook")
        assert report["mode"] == "full" and report["to_commit"] == rewritten
        assert report["indexed"] == ["d.md"] and report["removed"] == ["b.md", "c.md"]
        assert set(indexed(service)) == {"a.md", "d.md"}
        assert set(state.files("handbook")) == {"a.md", "d.md"}

    def test_full_reconcile_restores_what_was_removed_behind_its_back(self, service, setup):
        repo, syncer, state = setup
        repo.commit({"a.md": "# A\n\nAlpha text.\n", "b.md": "# B\n\nBeta text.\n"})
        syncer.sync("handbook")
        # The file list says b.md is indexed with this blob; a full reconcile trusts it, so re-index via --full
        # after forgetting it: the document comes back.
        state.advance("handbook", state.last_commit("handbook"), {}, ["b.md"])
        invalidate(service.document_store, "acme", [syncer.source("handbook").document_id("b.md")])
        report = syncer.sync("handbook", full=True)
        assert report["mode"] == "full" and report["indexed"] == ["b.md"]
        assert set(indexed(service)) == {"a.md", "b.md"}

    def test_adrs_and_specs_are_one_chunk_readme_sections_are_not(self, service, setup):
        repo, syncer, _state = setup
        adr = (
            "# 1. Use git\n\nDate: 2026-11-02\n\n## Status\n\nAccepted.\n\n## Decision\n\nThe handbook lives in git.\n"
        )
        repo.commit({"decisions/0001-use-git.md": adr, "README.md": adr, "specs/svc.yaml": "a: 1\n\nb: 2\n"})
        syncer.sync("handbook")
        chunks: dict[str, int] = {}
        for chunk in service.document_store.filter_documents(tenant_filter("acme")):
            chunks[chunk.meta["source_path"]] = chunks.get(chunk.meta["source_path"], 0) + 1
        assert chunks == {"decisions/0001-use-git.md": 1, "README.md": 3, "specs/svc.yaml": 1}

    def test_unknown_source(self, setup):
        _repo, syncer, _state = setup
        with pytest.raises(SourceNotFoundError, match="declared: handbook"):
            syncer.sync("nope")


def test_a_sync_killed_mid_batch_repeats_cleanly(tmp_path):
    """SIGKILL a real `sourcebound sync` after its first batch: the commit stays, the next sync converges."""
    repo = GitRepo(tmp_path / "repo")
    repo.commit({"intro.md": "# Intro\n\nStart here.\n", "gone.md": "# Gone\n\nTo be deleted.\n"})
    sources_file = tmp_path / "sources.yml"
    sources_file.write_text(
        yaml.safe_dump({"sources": [{"name": "handbook", "url": repo.url, "include": ["**/*.md"],
                                     "tenant_id": "acme", "tags": ["eng"]}]}),
        encoding="utf-8",
    )  # fmt: skip
    data_dir = tmp_path / "data"
    env = {**os.environ, "SOURCEBOUND_DATA_DIR": str(data_dir), "SOURCEBOUND_SOURCES": str(sources_file)}
    command = [sys.executable, "-m", "hayhooks_app.cli", "sync"]
    first = subprocess.run([*command, "--json"], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    first_commit = json.loads(first.stdout)["handbook"]["to_commit"]

    pages = {
        f"pages/page-{number:03d}.md": f"# Page {number}\n\n" + f"Page {number} explains topic {number}. " * 30
        for number in range(120)
    }
    head = repo.commit({**pages, "gone.md": None})
    process = subprocess.Popen(
        [*command, "--batch-files", "8", "-v"], cwd=REPO_ROOT, env=env, stderr=subprocess.PIPE, text=True
    )
    try:
        for line in process.stderr:
            if "indexed 8/120 files" in line:
                process.send_signal(signal.SIGKILL)
                break
        assert process.wait(timeout=120) == -signal.SIGKILL, "the sync finished before it could be killed"
    finally:
        if process.poll() is None:
            process.kill()

    state = SyncState(data_dir / "sources.sqlite")
    try:
        assert state.last_commit("handbook") == first_commit  # not advanced by the killed sync
    finally:
        state.close()

    second = subprocess.run([*command, "--json"], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert second.returncode == 0, second.stderr
    report = json.loads(second.stdout)["handbook"]
    assert report["mode"] == "incremental" and report["to_commit"] == head
    assert len(report["indexed"]) + len(report["unchanged"]) == 120 and report["unchanged"]  # the killed run's batch
    assert report["removed"] == ["gone.md"]

    service = IndexingService.from_yaml(env={"SOURCEBOUND_DATA_DIR": str(data_dir)})
    try:
        paths = {chunk.meta["source_path"] for chunk in service.document_store.filter_documents(tenant_filter("acme"))}
        assert paths == {"intro.md", *pages}
    finally:
        service.close()

"""
SourceJobs without HTTP: the declared sources from the environment, and a queued job synced by the worker
through a real request service (real git repository, indexing pipeline, Qdrant Edge store and records).
"""

import threading
import time
from types import SimpleNamespace

import pytest
import yaml
from support.git_repos import GitRepo

from components.core.document_identity import tenant_filter
from components.runtime.environment import ConfigError
from components.services.indexing_service import IndexingService
from components.services.request_service import RequestService
from components.services.source_jobs import DEFAULT_RECONCILE_INTERVAL_S, SourceJobs, declared_sources
from components.stores.record_store import RecordStore


def sources_file(tmp_path, url: str) -> str:
    path = tmp_path / "sources.yml"
    entry = {"name": "handbook", "url": url, "include": ["**/*.md"], "tenant_id": "acme", "tags": ["eng"]}
    path.write_text(yaml.safe_dump({"sources": [entry]}), encoding="utf-8")
    return str(path)


@pytest.mark.unit
class TestDeclaredSources:
    def test_none_without_a_sources_file(self, monkeypatch):
        monkeypatch.delenv("SOURCEBOUND_SOURCES", raising=False)
        assert declared_sources() is None

    def test_the_file_and_the_interval(self, monkeypatch, tmp_path):
        monkeypatch.setenv("SOURCEBOUND_SOURCES", sources_file(tmp_path, "file:///nowhere.git"))
        monkeypatch.delenv("SOURCEBOUND_RECONCILE_INTERVAL", raising=False)
        sources, interval = declared_sources()
        assert list(sources) == ["handbook"] and sources["handbook"].tenant_id == "acme"
        assert interval == DEFAULT_RECONCILE_INTERVAL_S
        monkeypatch.setenv("SOURCEBOUND_RECONCILE_INTERVAL", "-1")
        with pytest.raises(ConfigError, match="SOURCEBOUND_RECONCILE_INTERVAL"):
            declared_sources()


@pytest.mark.integration
@pytest.mark.slow
class TestSourceJobs:
    def test_a_queued_job_is_synced_through_the_request_service(self, tmp_path, monkeypatch):
        data_dir = tmp_path / "data"
        indexing = IndexingService.from_yaml(env={"SOURCEBOUND_DATA_DIR": str(data_dir)})
        records = RecordStore(data_dir / "records.sqlite")
        resources = SimpleNamespace(
            write_lock=threading.Lock(), indexing=indexing, records=records, store=indexing.document_store
        )
        requests = RequestService(resources, data_dir=data_dir)
        repo = GitRepo(tmp_path / "repo")
        repo.commit({"leave.md": "# Leave\n\nEvery employee has 27 days of paid leave a year.\n"})
        monkeypatch.setenv("SOURCEBOUND_SOURCES", sources_file(tmp_path, repo.url))
        sources, _ = declared_sources()
        jobs = SourceJobs(
            sources, 0, data_dir, index_streams=requests.index_streams, invalidate=requests.invalidate,
            max_file_bytes=indexing.max_file_bytes, retention_days=30,
        )  # fmt: skip
        try:
            left = jobs.submit("handbook", "webhook")
            assert jobs.submit("handbook", "reconcile") == left  # not started yet: the same job covers both
            assert jobs.queue_status()["jobs_pending"] == 1
            jobs.start()  # what a stopped process left queued is abandoned; the reconcile catches up
            assert jobs.job(left)["status"] == "abandoned"
            first = jobs.submit("handbook", "webhook")
            deadline = time.monotonic() + 120
            while jobs.job(first)["status"] in ("queued", "running") and time.monotonic() < deadline:
                time.sleep(0.2)
            job = jobs.job(first)
            assert job["status"] == "succeeded", job
            assert jobs.queue_status() == {"jobs_pending": 0, "files_pending": 0, "chunks_pending": 0}
        finally:
            jobs.stop()
        chunks = indexing.document_store.filter_documents(tenant_filter("acme"))
        assert chunks and {chunk.meta["tags"][0] for chunk in chunks} == {"eng"}
        (event,) = records.events()
        assert (event["event"], event["tenant_id"]) == ("index", "acme")
        records.close()
        indexing.close()


@pytest.mark.unit
class TestReconcile:
    def test_git_sources_reconcile_in_full_and_web_sources_recrawl_conditionally(self, tmp_path):
        from components.services.source_config import parse_sources

        sources = parse_sources(
            {"sources": [
                {"name": "handbook", "url": "file:///nowhere.git", "tenant_id": "acme", "tags": ["eng"]},
                {"name": "docs-site", "type": "web", "start_urls": ["https://docs.acme.internal/"],
                 "allowed_domains": ["docs.acme.internal"], "tenant_id": "acme", "tags": ["eng"]},
            ]}
        )  # fmt: skip
        jobs = SourceJobs(sources, 0, tmp_path, index_streams=None, invalidate=None, max_file_bytes=1, retention_days=1)
        try:
            jobs.reconcile()  # queued only: the worker is not started
            claimed = {}
            while (job := jobs.state.claim_next_job("test")) is not None:
                claimed[job["source"]] = job["full"]
            assert claimed == {"handbook": True, "docs-site": False}
        finally:
            jobs.state.close()

"""
Re-indexing after an index-format change (docs/operations.md): a data dir whose sample-corpus chunks were written
before contextual headers gets them at start-up; a document an operator deleted is not brought back.
"""

import dataclasses

import pytest
from haystack.document_stores.types import DuplicatePolicy

from components.core.chunk_context import INDEX_FORMAT
from components.core.document_identity import tenant_document_filter
from hayhooks_app.bootstrap import bootstrap
from hayhooks_app.config import Settings
from hayhooks_app.container import ServiceContainer


def _chunks(store, tenant_id: str, document_id: str):
    return store.filter_documents(tenant_document_filter(tenant_id, document_id))


@pytest.mark.integration
@pytest.mark.slow
def test_start_up_re_indexes_sample_documents_of_an_older_index_format(tmp_path, monkeypatch):
    monkeypatch.setenv("SOURCEBOUND_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("SOURCEBOUND_BOOTSTRAP_CORPUS", "true")
    container = ServiceContainer(Settings.from_env()).build()
    try:
        first = bootstrap(container)
        store = container.store
        assert first["corpus"]["chunks_written"] > 0 and container.indexing.index_format == INDEX_FORMAT
        handbook = _chunks(store, "acme", "acme-hr-handbook")
        assert handbook and all(chunk.meta["context_header"].startswith("Acme Robotics") for chunk in handbook)
        # Make the handbook look as an older release wrote it: no header, no index format.
        old = [
            dataclasses.replace(
                chunk,
                meta={k: v for k, v in chunk.meta.items() if k not in ("context_header", "index_format")},
                sparse_embedding=None,
            )
            for chunk in store.filter_documents(tenant_document_filter("acme", "acme-hr-handbook"))
        ]
        store.write_documents(old, policy=DuplicatePolicy.OVERWRITE)
        # An operator deleted another sample document: a restart must not bring it back.
        store.delete_documents([chunk.id for chunk in _chunks(store, "acme", "acme-remote-work")])

        again = bootstrap(container)
        assert again["corpus"]["documents"] == {"indexed": 1}
        upgraded = _chunks(store, "acme", "acme-hr-handbook")
        assert upgraded and all(chunk.meta.get("index_format") == INDEX_FORMAT for chunk in upgraded)
        assert _chunks(store, "acme", "acme-remote-work") == []
        assert bootstrap(container)["corpus"] is None  # nothing stale any more: nothing re-indexed
    finally:
        container.close()

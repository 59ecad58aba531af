"""
The issue's "Done when" scenario, end to end through pipelines/indexing.yml with the real embedder and
the real Qdrant Edge store: index a mixed folder, re-index it unchanged (0 chunks written), edit one
document shorter (its old tail chunks are gone, never both versions visible), taint/verify without
re-embedding, invalidate another (0 results from it), delete the tenant (count 0).
"""

import threading

import pytest
from haystack import Document
from support.indexing_support import index_checksum, sentences, write_mixed_folder

from components.core.document_identity import CHUNK_META_FIELDS, tenant_document_filter, tenant_filter
from components.retrievers.qdrant_edge import QdrantEdgeBM25Retriever, QdrantEdgeEmbeddingRetriever
from components.services.document_lifecycle import delete_tenant, invalidate, set_flags, stats
from components.services.indexing_service import IndexingService
from components.services.pipeline_loader import load_pipeline

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("data")
    return IndexingService(load_pipeline("indexing", env={"SOURCEBOUND_DATA_DIR": str(data_dir)}))


def chunks_of(store, tenant_id, document_id):
    return sorted(
        store.filter_documents(tenant_document_filter(tenant_id, document_id)), key=lambda d: d.meta["chunk_index"]
    )


def by_type(result, store, tenant_id):
    found = {}
    for entry in result["documents"]:
        chunk = store.filter_documents(tenant_document_filter(tenant_id, entry["document_id"]))[0]
        found[chunk.meta["source_type"]] = entry["document_id"]
    return found


def embed(service, text: str) -> list[float]:
    embedder = service.pipeline.get_component("embedder")
    return embedder.run(documents=[Document(content=text)])["documents"][0].embedding


def test_done_when_scenario(service, tmp_path):
    store = service.document_store
    folder = tmp_path / "corpus"
    files = write_mixed_folder(folder)
    service.index_texts(
        [{"content": sentences("globex", 5), "tenant_id": "globex", "tags": ["x"], "document_id": "globex-doc"}]
    )

    # 1. Index the mixed folder.
    first = service.index_files([folder], tenant_id="acme", tags=["hr", "handbook"])
    assert [entry["status"] for entry in first["documents"]] == ["indexed"] * 4
    assert first["chunks_written"] == sum(entry["chunks"] for entry in first["documents"]) >= 8
    ids = by_type(first, store, "acme")
    assert set(ids) == {"txt", "md", "html", "pdf"}
    for document_id in ids.values():
        chunks = chunks_of(store, "acme", document_id)
        assert [chunk.id for chunk in chunks] == [f"{document_id}:{index}" for index in range(len(chunks))]
        for chunk in chunks:
            assert set(CHUNK_META_FIELDS) <= set(chunk.meta)
            assert chunk.meta["tenant_id"] == "acme" and chunk.meta["tags"] == ["hr", "handbook"]
            assert (
                chunk.meta["scope"] == "tenant" and chunk.meta["tainted"] is False and chunk.meta["verified"] is False
            )
            assert 0 < chunk.meta["token_count"] <= 200 and len(chunk.embedding) == 384
    assert {chunk.meta["section"] for chunk in chunks_of(store, "acme", ids["md"])} == {
        "Employee handbook",
        "Onboarding",
        "Security",
    }
    assert "## not a heading" in chunks_of(store, "acme", ids["md"])[-1].content
    assert {chunk.meta["page_number"] for chunk in chunks_of(store, "acme", ids["pdf"])} == {1, 2}
    html = chunks_of(store, "acme", ids["html"])
    assert html[0].meta["source_uri"] == "https://help.example.com/timesheets"  # canonical link, canonicalised
    assert html[0].meta["document_name"] == "Timesheets help" and html[0].meta["language"] == "en"
    assert {chunk.meta["section"] for chunk in html} == {"Timesheets", "Approval"}
    assert not any("track()" in chunk.content or "Home | Help" in chunk.content for chunk in html)

    # 2. Re-index unchanged: nothing is embedded or written.
    snapshot = index_checksum(store)
    again = service.index_files([folder], tenant_id="acme", tags=["hr", "handbook"])
    assert again["chunks_written"] == 0 and {entry["status"] for entry in again["documents"]} == {"unchanged"}
    assert index_checksum(store) == snapshot

    # 3. Edit one document to be shorter: its old tail chunks are gone, and no reader ever sees two versions.
    txt_id = ids["txt"]
    old_chunks = chunks_of(store, "acme", txt_id)
    assert len(old_chunks) >= 3
    files["txt"].write_text(sentences("revised vacation", 6), encoding="utf-8")
    seen: list[set] = []
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            seen.append(
                {
                    (chunk.meta["source_hash"], len(chunk.content) > 0)
                    for chunk in store.filter_documents(tenant_document_filter("acme", txt_id))
                }
            )

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        edited = service.index_files([folder], tenant_id="acme", tags=["hr", "handbook"])
    finally:
        stop.set()
        watcher.join()
    statuses = {entry["document_id"]: entry["status"] for entry in edited["documents"]}
    assert statuses.pop(txt_id) == "indexed" and set(statuses.values()) == {"unchanged"}
    new_chunks = chunks_of(store, "acme", txt_id)
    assert len(new_chunks) < len(old_chunks)
    assert [chunk.id for chunk in new_chunks] == [f"{txt_id}:{index}" for index in range(len(new_chunks))]
    assert all("revised vacation" in chunk.content for chunk in new_chunks)
    assert edited["chunks_written"] == len(new_chunks)
    assert seen and all(len(hashes) == 1 for hashes in seen)  # one version at a time, never none
    bm25 = QdrantEdgeBM25Retriever(document_store=store, top_k=20)
    stale = bm25.run(query="Sentence 40 explains how the vacation policy", filters=tenant_filter("acme"))["documents"]
    assert all(chunk.meta["document_id"] != txt_id or "revised" in chunk.content for chunk in stale)

    # 4. Taint and verify without re-embedding; retrieval filters read the flags.
    before = {chunk.id: chunk.embedding for chunk in chunks_of(store, "acme", ids["html"])}
    assert set_flags(store, "acme", [ids["html"]], tainted=True) == len(before)
    assert set_flags(store, "acme", [ids["pdf"]], verified=True) > 0
    assert {chunk.id: chunk.embedding for chunk in chunks_of(store, "acme", ids["html"])} == before
    dense = QdrantEdgeEmbeddingRetriever(document_store=store, top_k=50)
    query = embed(service, "How are timesheets approved?")
    exclude_tainted = {
        "operator": "AND",
        "conditions": [tenant_filter("acme"), {"field": "meta.tainted", "operator": "==", "value": False}],
    }
    assert ids["html"] not in {
        doc.meta["document_id"] for doc in dense.run(query_embedding=query, filters=exclude_tainted)["documents"]
    }
    verified_only = {
        "operator": "AND",
        "conditions": [tenant_filter("acme"), {"field": "meta.verified", "operator": "==", "value": True}],
    }
    assert {
        doc.meta["document_id"] for doc in dense.run(query_embedding=query, filters=verified_only)["documents"]
    } == {ids["pdf"]}
    assert service.index_files([folder], tenant_id="acme", tags=["hr", "handbook"])["chunks_written"] == 0  # flags kept

    # 5. Invalidate another document: zero results from it, by dense and by keyword search.
    md_query = embed(service, "How does the onboarding policy work?")
    assert ids["md"] in {
        doc.meta["document_id"]
        for doc in dense.run(query_embedding=md_query, filters=tenant_filter("acme"))["documents"]
    }
    outcome = invalidate(store, "acme", [ids["md"]], reason="outdated", cascade_id="cascade-7")
    assert outcome["invalidated"] == 1 and outcome["chunks_removed"] > 0 and outcome["cascade_id"] == "cascade-7"
    assert ids["md"] not in {
        doc.meta["document_id"]
        for doc in dense.run(query_embedding=md_query, filters=tenant_filter("acme"))["documents"]
    }
    assert ids["md"] not in {
        doc.meta["document_id"]
        for doc in bm25.run(query="onboarding policy", filters=tenant_filter("acme"))["documents"]
    }
    assert stats(store, "acme")["documents"] == 3

    # 6. Delete the tenant: nothing of it remains; the other tenant is untouched.
    assert delete_tenant(store, "acme") > 0
    assert store.count_documents_by_filter(tenant_filter("acme")) == 0
    assert dense.run(query_embedding=md_query, filters=tenant_filter("acme"))["documents"] == []
    assert store.count_documents_by_filter(tenant_filter("globex")) == 1


def test_changing_the_chunk_size_is_a_yaml_edit(tmp_path):
    """The YAML's chunk size (here through its RAG_CHUNK_* variables) changes the chunks; --force re-chunks."""
    env = {
        "SOURCEBOUND_DATA_DIR": str(tmp_path),
        "RAG_CHUNK_SIZE": "60",
        "RAG_CHUNK_OVERLAP": "10",
        "RAG_CHUNK_MAX_TOKENS": "66",
    }
    small = IndexingService(load_pipeline("indexing", env=env))
    text = [{"content": sentences("yaml", 20), "tenant_id": "acme", "tags": ["x"], "document_id": "yaml-doc"}]
    result = small.index_texts(text)
    chunks = small.document_store.filter_documents(tenant_document_filter("acme", "yaml-doc"))
    assert result["chunks_written"] == len(chunks) >= 5
    assert max(chunk.meta["token_count"] for chunk in chunks) <= 66
    assert small.index_texts(text)["chunks_written"] == 0
    assert small.index_texts(text, force=True)["documents"][0]["status"] == "indexed"

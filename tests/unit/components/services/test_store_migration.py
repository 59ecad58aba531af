"""
Migration of the embedded Qdrant Edge store into the server profile's collection, on the real engines: Qdrant
Edge, qdrant-client's local mode (one client per folder) and the real embedding model.
"""

import pytest
from haystack import Document
from haystack_integrations.components.retrievers.qdrant import (
    QdrantEmbeddingRetriever,
    QdrantHybridRetriever,
    QdrantSparseEmbeddingRetriever,
)

from components.document_stores.qdrant_edge import QdrantEdgeDocumentStore
from components.embedders.bm25_embedders import Bm25DocumentEmbedder, Bm25TextEmbedder
from components.embedders.onnx_document_embedder import OnnxDocumentEmbedder
from components.embedders.onnx_text_embedder import OnnxTextEmbedder
from components.retrievers.qdrant_edge import (
    QdrantEdgeBM25Retriever,
    QdrantEdgeEmbeddingRetriever,
    QdrantEdgeHybridRetriever,
)
from components.services.store_migration import migrate_store, profile_point, target_store
from hayhooks_app.cli.common import store_definition

pytestmark = pytest.mark.unit

PROFILE = store_definition("profiles/server/indexing")
TOPICS = {
    "vacation": "Employees have 25 vacation days a year; unused days carry over until March.",
    "laptops": "Laptops are replaced every three years; request a replacement through the IT portal.",
    "expenses": "Keep the receipts of every expense claim; claims are paid with the next salary.",
    "security": "Report a lost badge to security at once; the badge is blocked within the hour.",
    "parking": "The parking garage opens at seven; electric cars charge on level two.",
    "onboarding": "New hires meet their buddy on the first day and get their laptop from IT.",
    "travel": "Book travel through the travel desk; trains are preferred under four hours.",
    "benefits": "The pension plan matches contributions up to five percent of the salary.",
}
QUERIES = ("how many vacation days", "replace my laptop", "expense receipts", "lost badge", "train or plane")
ACME_ONLY = {"field": "meta.tenant_id", "operator": "==", "value": "acme"}


@pytest.fixture(scope="module")
def corpus():
    documents = []
    for tenant in ("acme", "globex"):
        for topic, text in TOPICS.items():
            for index, sentence in enumerate(text.split("; ")):
                documents.append(
                    Document(
                        id=f"{tenant}-{topic}:{index}",
                        content=f"{sentence} ({tenant} {topic} policy)",
                        meta={
                            "tenant_id": tenant,
                            "tags": ["hr"],
                            "document_id": f"{tenant}-{topic}",
                            "chunk_index": index,
                            "scope": "tenant",
                        },
                    )  # fmt: skip
                )
    embedder = OnnxDocumentEmbedder()
    embedder.warm_up()
    return embedder.run(documents)["documents"]


@pytest.fixture(scope="module")
def query_embedder():
    embedder = OnnxTextEmbedder()
    embedder.warm_up()
    return embedder


@pytest.fixture
def source(corpus, tmp_path):
    store = QdrantEdgeDocumentStore(path=str(tmp_path / "edge"), embedding_dim=384)
    store.write_documents(corpus)
    yield store
    store.close()


class TestMigrateStore:
    def test_copies_every_point_verifies_counts_and_resumes_without_duplicates(self, source, tmp_path):
        target = target_store(PROFILE, str(tmp_path / "qdrant"))
        try:
            calls = []

            def interrupt(done, total):
                calls.append(done)
                if len(calls) == 2:
                    raise KeyboardInterrupt  # killed half way

            with pytest.raises(KeyboardInterrupt):
                migrate_store(source, target, batch_size=10, progress=interrupt)
            assert target.count_documents() == 20
            report = migrate_store(source, target, batch_size=10)
            total = len(source.filter_documents())
            assert report["points"] == total and report["copied"] == total - 20 and report["skipped"] == 20
            per_tenant = {"chunks": total // 2, "documents": len(TOPICS)}
            assert report["tenants"] == {"acme": per_tenant, "globex": per_tenant}
            again = migrate_store(source, target, batch_size=10)
            assert again["copied"] == 0 and target.count_documents() == total
            forced = migrate_store(source, target, batch_size=10, overwrite=True)
            assert forced["copied"] == total and target.count_documents() == total
        finally:
            target.close()

    def test_points_are_those_the_profile_writer_produces(self, source, corpus, tmp_path):
        # The profile's own write path for one chunk (its BM25 embedder, then its store), in a second folder.
        written = target_store(PROFILE, str(tmp_path / "written"))
        chunk = Bm25DocumentEmbedder().run([corpus[0]])["documents"][0]
        try:
            written.write_documents([chunk])
            expected = written._client.retrieve(written.index, [profile_point(chunk).id], with_vectors=True)
        finally:
            written.close()
        migrated = target_store(PROFILE, str(tmp_path / "qdrant"))
        try:
            migrate_store(source, migrated)
            records = migrated._client.retrieve(migrated.index, [expected[0].id], with_vectors=True)
        finally:
            migrated.close()
        assert len(expected) == 1 and len(records) == 1
        assert records[0].payload == expected[0].payload
        assert records[0].vector["text-sparse"] == expected[0].vector["text-sparse"]
        assert records[0].vector["text-dense"] == pytest.approx(expected[0].vector["text-dense"], abs=1e-6)

    def test_profile_retrievers_return_the_embedded_top5(self, source, tmp_path, query_embedder, capsys):
        target = target_store(PROFILE, str(tmp_path / "qdrant"))
        try:
            migrate_store(source, target)
            edge_dense, edge_bm25 = QdrantEdgeEmbeddingRetriever(source), QdrantEdgeBM25Retriever(source)
            edge_hybrid = QdrantEdgeHybridRetriever(source)
            dense, sparse = QdrantEmbeddingRetriever(target), QdrantSparseEmbeddingRetriever(target)
            hybrid = QdrantHybridRetriever(target)
            bm25 = Bm25TextEmbedder()
            overlaps = []
            for query in QUERIES:
                vector = query_embedder.run(query)["embedding"]
                terms = bm25.run(query)["sparse_embedding"]
                ids = {
                    "edge_dense": edge_dense.run(vector, filters=ACME_ONLY, top_k=5)["documents"],
                    "server_dense": dense.run(query_embedding=vector, filters=ACME_ONLY, top_k=5)["documents"],
                    "edge_keyword": edge_bm25.run(query, filters=ACME_ONLY, top_k=5)["documents"],
                    "server_keyword": sparse.run(query_sparse_embedding=terms, filters=ACME_ONLY, top_k=5)["documents"],
                    "edge_hybrid": edge_hybrid.run(query, vector, filters=ACME_ONLY, top_k=5)["documents"],
                    "server_hybrid": hybrid.run(
                        query_embedding=vector, query_sparse_embedding=terms, filters=ACME_ONLY, top_k=5
                    )["documents"],
                }
                ids = {name: [document.id for document in documents] for name, documents in ids.items()}
                assert ids["server_dense"] == ids["edge_dense"] and len(ids["edge_dense"]) == 5, query
                assert ids["server_keyword"] == ids["edge_keyword"] and ids["edge_keyword"], query
                overlaps.append(len(set(ids["server_hybrid"]) & set(ids["edge_hybrid"])) / 5)
            with capsys.disabled():
                print(f"\nhybrid top-5 overlap per query: {overlaps}")
            assert sum(overlaps) / len(overlaps) >= 0.6
        finally:
            target.close()


class TestMigrateCommand:
    def test_cli_copies_points_and_records_and_resumes(self, corpus, tmp_path, monkeypatch, capsys):
        import sqlite3

        from hayhooks_app.cli import main

        data_dir = tmp_path / "data"
        store = QdrantEdgeDocumentStore(path=str(data_dir / "qdrant"), embedding_dim=384)
        store.write_documents(corpus)
        store.close()
        records = sqlite3.connect(data_dir / "records.sqlite")
        records.execute("CREATE TABLE query_log (query_text TEXT)")
        records.execute("INSERT INTO query_log VALUES ('how many vacation days')")
        records.commit()
        records.close()
        (data_dir / "api_keys.json").write_text('{"keys": []}')
        monkeypatch.setenv("SOURCEBOUND_DATA_DIR", str(data_dir))  # restored after the test (the CLI sets it)
        argv = ["migrate", "--to-qdrant", str(tmp_path / "qdrant"), "--data-dir", str(data_dir), "--no-progress"]

        assert main([*argv, "--records-to", str(tmp_path / "server-data")]) == 0
        first = capsys.readouterr().out
        assert f"migrated {len(corpus)} chunks into collection 'sourcebound'" in first
        assert "counts verified for 2 tenant(s)" in first
        copied = sqlite3.connect(tmp_path / "server-data" / "records.sqlite").execute("SELECT * FROM query_log")
        assert copied.fetchall() == [("how many vacation days",)]
        assert (tmp_path / "server-data" / "api_keys.json").read_text() == '{"keys": []}'
        assert not (tmp_path / "server-data" / "qdrant").exists()

        assert main(argv) == 0
        assert f"0 copied, {len(corpus)} already there" in capsys.readouterr().out
        assert main([*argv, "--records-to", str(tmp_path / "server-data")]) == 1
        assert "is not empty" in capsys.readouterr().err

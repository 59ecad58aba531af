"""
IndexingService over pipelines/indexing.yml and the real Qdrant Edge store.

Every bad-input case must raise one IndexingValidationError naming the problem and leave the
index exactly as it was (count and a checksum of ids, contents and meta before and after).
"""

import pytest
from haystack.dataclasses import ByteStream
from support.indexing_support import index_checksum, make_pdf, sentences, stored_chunk

from components.core.document_identity import IndexingValidationError, tenant_document_filter
from components.services.indexing_service import IndexingService


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("data")
    service = IndexingService.from_yaml(
        "indexing", env={"SOURCEBOUND_DATA_DIR": str(data_dir), "RAG_ALLOWLIST_DOMAINS": "example.com"}
    )
    # Seed the index with chunks of another document (synthetic vectors: validation needs no model).
    service.document_store.write_documents([stored_chunk("seeded", index) for index in range(3)])
    return service


@pytest.fixture
def files(tmp_path):
    good = tmp_path / "good.txt"
    good.write_text(sentences("good", 5))
    return tmp_path, good


def assert_rejected_and_unchanged(service, call, *fragments):
    before = index_checksum(service.document_store)
    with pytest.raises(IndexingValidationError) as raised:
        call()
    message = str(raised.value)
    for fragment in fragments:
        assert fragment in message, message
    assert index_checksum(service.document_store) == before
    return raised.value


@pytest.mark.integration
class TestIndexingServiceValidation:
    def test_unsupported_type_lists_supported_ones(self, service, files):
        folder, good = files
        (folder / "report.odt").write_bytes(b"PK\x03\x04")
        assert_rejected_and_unchanged(
            service,
            lambda: service.index_files([good, folder / "report.odt"], tenant_id="acme", tags=["hr"]),
            "report.odt: unsupported file type; supported types are .csv, .docx, .htm, .html, .markdown, .md, .pdf, "
            ".pptx, .text, .txt, .xlsx, .yaml, .yml",
        )

    @pytest.mark.parametrize("content", [b"", b"   \n\t  \n"])
    def test_empty_or_whitespace_file(self, service, files, content):
        folder, good = files
        (folder / "empty.md").write_bytes(content)
        assert_rejected_and_unchanged(
            service,
            lambda: service.index_files([good, folder / "empty.md"], tenant_id="acme", tags=["hr"]),
            "empty.md: the document is empty or contains only whitespace",
        )

    def test_empty_text(self, service):
        assert_rejected_and_unchanged(
            service,
            lambda: service.index_texts([{"content": "  ", "tenant_id": "acme", "tags": ["hr"]}]),
            "content is empty or contains only whitespace",
        )

    def test_undecodable_bytes(self, service, files):
        folder, good = files
        (folder / "latin1.txt").write_bytes("Caf\xe9 cr\xe8me".encode("latin-1"))
        assert_rejected_and_unchanged(
            service,
            lambda: service.index_files([good, folder / "latin1.txt"], tenant_id="acme", tags=["hr"]),
            "latin1.txt: undecodable bytes: not valid UTF-8 text (byte 0xe9 at offset 3)",
        )

    def test_missing_tenant_and_tags(self, service, files):
        _, good = files
        assert_rejected_and_unchanged(
            service,
            lambda: service.index_files([good], tenant_id="", tags=[]),
            "tenant_id is required",
            "tags are required",
        )
        assert_rejected_and_unchanged(
            service, lambda: service.index_texts([{"content": "x"}]), "tenant_id is required", "tags are required"
        )

    def test_bad_document_id(self, service, files):
        _, good = files
        assert_rejected_and_unchanged(
            service,
            lambda: service.index_texts(
                [{"content": "x", "tenant_id": "acme", "tags": ["hr"], "document_id": "no/slash"}]
            ),
            "document_id 'no/slash' is invalid: use only letters, digits and '-'",
        )
        assert_rejected_and_unchanged(
            service,
            lambda: service.index_files([good], tenant_id="acme", tags=["hr"], document_id="a b"),
            "document_id 'a b'",
        )

    def test_file_over_the_size_limit(self, service, files):
        folder, good = files
        big = folder / "big.txt"
        big.write_text("word " * 100)
        small_limit = IndexingService(service.pipeline, max_file_bytes=200)
        assert_rejected_and_unchanged(
            small_limit,
            lambda: small_limit.index_files([good, big], tenant_id="acme", tags=["hr"]),
            "big.txt: 500 bytes is over the size limit of 200 bytes",
        )

    def test_unparsable_pdf(self, service, files):
        folder, good = files
        broken = folder / "broken.pdf"
        broken.write_bytes(make_pdf(folder / "ok.pdf", ["fine"]).read_bytes()[:200])
        assert_rejected_and_unchanged(
            service,
            lambda: service.index_files([good, broken], tenant_id="acme", tags=["hr"]),
            "broken.pdf: the PDF cannot be parsed",
        )

    def test_every_problem_is_named_at_once(self, service, files):
        folder, good = files
        (folder / "a.docx").write_bytes(b"x")
        (folder / "b.txt").write_bytes(b"ok \xff\xfd oops")
        (folder / "c.md").write_text("  ")
        error = assert_rejected_and_unchanged(
            service,
            lambda: service.index_files(
                [good, folder / "a.docx", folder / "b.txt", folder / "c.md", folder / "nope.txt"],
                tenant_id="acme",
                tags=["hr"],
            ),
            "a.docx",
            "b.txt",
            "c.md",
            "nope.txt: no such file",
        )
        assert len(error.problems) == 4

    def test_domain_outside_the_allowlist(self, service):
        assert_rejected_and_unchanged(
            service,
            lambda: service.index_texts(
                [{"content": "x", "tenant_id": "acme", "tags": ["hr"], "source_uri": "https://evil.org/page"}]
            ),
            "https://evil.org/page is outside the allowed domains (example.com)",
        )

    def test_html_canonical_link_is_checked_too(self, service, files):
        folder, _ = files
        page = folder / "page.html"
        page.write_text("<link rel='canonical' href='https://evil.org/p'><p>Hello</p>")
        assert_rejected_and_unchanged(
            service, lambda: service.index_files([page], tenant_id="acme", tags=["hr"]), "https://evil.org/p"
        )

    def test_meta_cannot_set_identity_or_computed_fields(self, service):
        assert_rejected_and_unchanged(
            service,
            lambda: service.index_texts(
                [
                    {
                        "content": "x",
                        "tenant_id": "acme",
                        "tags": ["hr"],
                        "meta": {"tenant_id": "globex", "chunk_index": 3},
                    }
                ]
            ),
            "meta may not set chunk_index, tenant_id",
        )

    def test_unknown_fields_and_conflicting_ids(self, service):
        assert_rejected_and_unchanged(
            service,
            lambda: service.index_texts([{"content": "x", "tenant_id": "acme", "tags": ["hr"], "tag": "typo"}]),
            "unknown fields tag",
        )
        texts = [{"content": c, "tenant_id": "acme", "tags": ["hr"], "document_id": "dup"} for c in ("one", "two")]
        assert_rejected_and_unchanged(
            service, lambda: service.index_texts(texts), "one document_id is given to 2 different sources"
        )

    def test_document_id_needs_exactly_one_file(self, service, files):
        folder, good = files
        other = folder / "other.txt"
        other.write_text("other")
        assert_rejected_and_unchanged(
            service,
            lambda: service.index_files([good, other], tenant_id="acme", tags=["hr"], document_id="one"),
            "exactly one file",
        )

    def test_upload_streams_are_validated_like_files(self, service):
        streams = [ByteStream(b"ok \xff\xfd", meta={"tenant_id": "acme", "tags": ["hr"], "file_path": "up.txt"})]
        assert_rejected_and_unchanged(service, lambda: service.index_streams(streams), "up.txt: undecodable bytes")

    def test_collect_files_skips_hidden_and_unsupported_in_folders(self, service, tmp_path):
        (tmp_path / "sub").mkdir()
        (tmp_path / "sub" / "a.md").write_text("a")
        (tmp_path / "b.png").write_bytes(b"x")
        (tmp_path / ".hidden").mkdir()
        (tmp_path / ".hidden" / "c.txt").write_text("c")
        files, skipped = service.collect_files([tmp_path])
        assert files == [tmp_path / "sub" / "a.md"] and skipped == [tmp_path / "b.png"]


@pytest.mark.integration
@pytest.mark.slow
class TestIndexingServiceIndexing:
    def test_index_texts_result_shape_and_meta(self, service):
        texts = [
            {
                "content": sentences("expense", 30),
                "tenant_id": "acme",
                "tags": ["finance"],
                "document_id": "expenses",
                "document_name": "Expense policy",
                "source_uri": "https://Help.Example.com/expenses/?utm_source=x",
                "scope": "project",
                "project_id": "atlas",
                "user_id": "u-owner",
                "meta": {"language": "en", "artifact_id": "art-1"},
            },
        ]
        result = service.index_texts(texts)
        [entry] = result["documents"]
        assert entry["status"] == "indexed" and entry["chunks"] >= 2 and entry["tokens"] > 0
        assert result["chunks_written"] == entry["chunks"] and result["latency_ms"] > 0
        chunks = sorted(
            service.document_store.filter_documents(tenant_document_filter("acme", "expenses")),
            key=lambda d: d.meta["chunk_index"],
        )
        assert [chunk.id for chunk in chunks] == [f"expenses:{index}" for index in range(len(chunks))]
        meta = chunks[0].meta
        assert meta["source_uri"] == "https://help.example.com/expenses" and meta["scope"] == "project"
        assert meta["project_id"] == "atlas" and meta["language"] == "en" and meta["artifact_id"] == "art-1"
        assert meta["source_type"] == "text" and len(chunks[0].embedding) == 384
        assert service.index_texts(texts)["documents"][0]["status"] == "unchanged"

    def test_index_files_single_upload_with_id_and_progress(self, service, tmp_path):
        path = tmp_path / "upload.md"
        path.write_text(f"# Upload\n\n{sentences('upload', 6)}")
        calls = []
        result = service.index_files(
            [path], tenant_id="acme", tags="hr,eng", document_id="upload-1", document_name="Uploaded", batch_size=1,
            progress=lambda done, total: calls.append((done, total)),
        )  # fmt: skip
        assert result["documents"][0]["document_id"] == "upload-1" and calls == [(1, 1)]
        chunk = service.document_store.filter_documents(tenant_document_filter("acme", "upload-1"))[0]
        assert (
            chunk.meta["document_name"] == "Uploaded"
            and chunk.meta["tags"] == ["hr", "eng"]
            and chunk.meta["section"] == "Upload"
        )

    def test_office_and_csv_files_index_with_their_sections_and_slides(self, service, tmp_path):
        from support.office_files import FIXTURES

        folder = tmp_path / "office"
        folder.mkdir()
        for name in ("handbook.docx", "review.pptx", "carriers.xlsx", "reorder.csv"):
            (folder / name).write_bytes((FIXTURES / name).read_bytes())
        (folder / "notes.txt").write_text("The speci\ufb01cation of shipping work\ufb02ows is re\u00advised yearly.")
        result = service.index_files([folder], tenant_id="office", tags=["ops"])
        assert [entry["status"] for entry in result["documents"]] == ["indexed"] * 5
        chunks = service.document_store.filter_documents(
            {"field": "meta.tenant_id", "operator": "==", "value": "office"}
        )
        by_type: dict[str, list] = {}
        for chunk in chunks:
            by_type.setdefault(chunk.meta["source_type"], []).append(chunk)
        assert set(by_type) == {"docx", "pptx", "xlsx", "csv", "txt"}
        assert {chunk.meta["section"] for chunk in by_type["docx"]} == {None, "Safety", "Shifts"}
        assert {chunk.meta["document_name"] for chunk in by_type["docx"]} == {"Warehouse handbook"}
        assert sorted(chunk.meta["page_number"] for chunk in by_type["pptx"]) == [1, 3]
        assert {chunk.meta["section"] for chunk in by_type["xlsx"]} == {"Carriers", "Contacts"}
        carriers = [chunk for chunk in by_type["xlsx"] if chunk.meta["section"] == "Carriers"]
        assert len(carriers) > 1 and all(
            c.content.startswith("Carrier | Region | Lead time (days)\n") for c in carriers
        )
        assert [chunk.content for chunk in by_type["txt"]] == [
            "The specification of shipping workflows is revised yearly."
        ]
        # source_hash is still the hash of the original bytes, not of the normalised text.
        from components.core.document_identity import content_hash

        assert by_type["txt"][0].meta["source_hash"] == content_hash((folder / "notes.txt").read_bytes())
        assert service.index_files([folder], tenant_id="office", tags=["ops"])["chunks_written"] == 0

    def test_document_id_of_another_tenant_is_a_separate_document(self, service):
        # Ids are per tenant (docs/contract.md "Document ids"): globex's "seeded" leaves the other tenant's alone.
        seeded = {"field": "meta.document_id", "operator": "==", "value": "seeded"}
        before = {(d.meta["tenant_id"], d.id, d.content) for d in service.document_store.filter_documents(seeded)}
        result = service.index_texts(
            [{"content": "mine now", "tenant_id": "globex", "tags": ["x"], "document_id": "seeded"}]
        )
        assert result["documents"][0]["status"] == "indexed" and result["chunks_written"] == 1
        after = {(d.meta["tenant_id"], d.id, d.content) for d in service.document_store.filter_documents(seeded)}
        assert before and after == before | {("globex", "seeded:0", "mine now")}


@pytest.mark.integration
class TestIndexingPipelineYaml:
    def test_yaml_round_trips_and_names_the_edge_store(self, service):
        from haystack import Pipeline

        from components.services.pipeline_loader import ALLOWED_MODULES

        dumped = service.pipeline.dumps()
        assert "components.document_stores.qdrant_edge.document_store.QdrantEdgeDocumentStore" in dumped
        reloaded = Pipeline.loads(dumped, allowed_modules=ALLOWED_MODULES)
        assert set(dict(reloaded.walk())) == set(dict(service.pipeline.walk()))
        assert IndexingService(reloaded).document_store.path == service.document_store.path

    def test_service_needs_the_indexing_components(self):
        from haystack import Pipeline

        with pytest.raises(ValueError, match="lacks SourceRouter, DocumentIdentifier, LifecycleDocumentWriter"):
            IndexingService(Pipeline())

    def test_empty_folder_is_an_error(self, service, tmp_path):
        assert_rejected_and_unchanged(
            service, lambda: service.index_files([tmp_path], tenant_id="acme", tags=["hr"]), "no files to index"
        )


@pytest.mark.integration
class TestExtractedTextLimit:
    def test_a_source_expanding_past_the_limit_is_rejected_before_anything_runs(self, tmp_path):
        from components.services.indexing_service import IndexingService, IndexingValidationError
        from components.services.pipeline_loader import load_pipeline

        service = IndexingService(
            load_pipeline("indexing", env={"SOURCEBOUND_DATA_DIR": str(tmp_path)}), max_document_chars=1000
        )
        source = tmp_path / "long.txt"
        source.write_text("word " * 400, encoding="utf-8")  # 2000 characters in a 2 KB file
        with pytest.raises(IndexingValidationError, match="over the limit of 1000"):
            service.validate_files([source], tenant_id="acme", tags=["ops"])
        with pytest.raises(IndexingValidationError, match="over the limit of 1000"):
            service.validate_texts([{"content": "x" * 1001, "tenant_id": "acme", "tags": ["ops"]}])

    def test_rejects_a_non_positive_limit(self, tmp_path):
        from components.services.indexing_service import IndexingService
        from components.services.pipeline_loader import load_pipeline

        with pytest.raises(ValueError, match="max_document_chars"):
            IndexingService(
                load_pipeline("indexing", env={"SOURCEBOUND_DATA_DIR": str(tmp_path)}), max_document_chars=0
            )

import re

import pytest
from haystack import Document

from components.core.document_identity import (
    CHUNK_META_FIELDS,
    DOCUMENT_ID_PATTERN,
    IndexingValidationError,
    content_hash,
)
from components.validators.document_identifier import DocumentIdentifier

ACME = {"tenant_id": "acme", "tags": ["hr"]}


def identify(*documents: Document, **init) -> list[Document]:
    return DocumentIdentifier(**init).run(documents=[list(documents)])["documents"]


@pytest.mark.unit
class TestDocumentIdentifier:
    def test_init(self):
        identifier = DocumentIdentifier(allowed_domains="Example.com, help.org")
        assert identifier.embedding_model == "sentence-transformers/all-MiniLM-L6-v2"
        assert identifier._domains == ["example.com", "help.org"]
        with pytest.raises(ValueError):
            DocumentIdentifier(embedding_model="")

    def test_to_dict(self):
        assert DocumentIdentifier(allowed_domains=["example.com"]).to_dict() == {
            "type": "components.validators.document_identifier.DocumentIdentifier",
            "init_parameters": {
                "embedding_model": "sentence-transformers/all-MiniLM-L6-v2",
                "allowed_domains": ["example.com"],
            },
        }

    def test_from_dict(self):
        restored = DocumentIdentifier.from_dict(
            DocumentIdentifier(embedding_model="m", allowed_domains="a.com").to_dict()
        )
        assert (restored.embedding_model, restored.allowed_domains) == ("m", "a.com")

    def test_run_completes_source_meta(self):
        [document] = identify(Document(content="Hello", meta={**ACME, "tags": "hr, eng", "language": "en"}))
        meta = document.meta
        assert re.fullmatch(DOCUMENT_ID_PATTERN, meta["document_id"])
        assert meta["tags"] == ["hr", "eng"] and meta["scope"] == "tenant" and meta["source_type"] == "text"
        assert meta["source_hash"] == content_hash("Hello") and meta["language"] == "en"
        assert meta["verified"] is False and meta["tainted"] is False
        assert meta["embedding_model"] == "sentence-transformers/all-MiniLM-L6-v2"
        source_fields = set(CHUNK_META_FIELDS) - {"chunk_index", "chunk_hash", "token_count", "indexed_at"}
        assert source_fields <= set(meta)

    def test_run_keeps_given_document_id(self):
        [document] = identify(Document(content="x", meta={**ACME, "document_id": "vacation-2024"}))
        assert document.meta["document_id"] == "vacation-2024"

    def test_run_url_variants_collapse_to_one_document(self):
        variants = [
            Document(content="Same page", meta={**ACME, "source_uri": "https://Help.Example.com/a/?utm_source=x#top"}),
            Document(content="Same page", meta={**ACME, "source_uri": "https://help.example.com/a"}),
        ]
        documents = identify(*variants)
        assert len(documents) == 1
        assert documents[0].meta["source_uri"] == "https://help.example.com/a"
        alone = identify(Document(content="Same page", meta={**ACME, "source_uri": "https://help.example.com:443/a/"}))
        assert alone[0].meta["document_id"] == documents[0].meta["document_id"]

    def test_run_file_sources_get_file_uri(self, tmp_path):
        [document] = identify(Document(content="x", meta={**ACME, "file_path": str(tmp_path / "a.txt")}))
        assert document.meta["source_uri"] == (tmp_path / "a.txt").resolve().as_uri()
        assert "file_path" not in document.meta

    def test_run_computed_fields_cannot_be_smuggled(self):
        [document] = identify(Document(content="x", meta={**ACME, "chunk_index": 99, "embedding_model": "fake"}))
        assert "chunk_index" not in document.meta and document.meta["embedding_model"] != "fake"

    def test_run_sections_of_one_source_share_identity(self):
        parts = [
            Document(content=f"part {n}", meta={**ACME, "file_path": "/x/g.md", "source_hash": "h", "section": f"S{n}"})
            for n in range(3)
        ]
        documents = identify(*parts)
        assert len(documents) == 3 and len({doc.meta["document_id"] for doc in documents}) == 1

    def test_run_allowlist_rejects_other_domains(self):
        documents = [
            Document(content="x", meta={**ACME, "source_uri": "https://evil.org/a"}),
            Document(content="y", meta={**ACME, "source_uri": "https://docs.example.com/b"}),
        ]
        with pytest.raises(
            IndexingValidationError, match=r"https://evil.org/a is outside the allowed domains \(example.com\)"
        ):
            identify(*documents, allowed_domains=["example.com"])

    def test_run_collects_every_problem(self):
        documents = [
            Document(content="a", meta={"tags": ["hr"]}),
            Document(content="b", meta={"tenant_id": "acme", "tags": []}),
            Document(content="c", meta={**ACME, "document_id": "bad id"}),
            Document(content="   ", meta=ACME),
        ]
        with pytest.raises(IndexingValidationError) as raised:
            identify(*documents)
        assert len(raised.value.problems) == 4

    def test_run_rejects_one_document_id_for_different_content(self):
        documents = [
            Document(content="first", meta={**ACME, "document_id": "same"}),
            Document(content="second", meta={**ACME, "document_id": "same"}),
        ]
        with pytest.raises(IndexingValidationError, match="one document_id is given to 2 different sources"):
            identify(*documents)

    def test_run_drops_exact_duplicates(self):
        document = Document(content="twice", meta={**ACME, "document_id": "t"})
        assert len(identify(document, Document(content="twice", meta={**ACME, "document_id": "t"}))) == 1

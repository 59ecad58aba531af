from datetime import UTC, datetime

import pytest
from haystack import Document

from components.core.document_identity import CHUNK_META_FIELDS, content_hash
from components.preprocessors.chunk_metadata_enricher import ChunkMetadataEnricher
from components.preprocessors.token_chunker import count_tokens


def chunk(document_id: str, text: str, **meta) -> Document:
    return Document(content=text, meta={"tenant_id": "acme", "tags": ["hr"], "document_id": document_id, **meta})


@pytest.mark.unit
class TestChunkMetadataEnricher:
    def test_init(self):
        assert ChunkMetadataEnricher().encoding == "cl100k_base"

    def test_to_dict(self):
        assert ChunkMetadataEnricher().to_dict() == {
            "type": "components.preprocessors.chunk_metadata_enricher.ChunkMetadataEnricher",
            "init_parameters": {"encoding": "cl100k_base"},
        }

    def test_from_dict(self):
        assert ChunkMetadataEnricher.from_dict(ChunkMetadataEnricher().to_dict()).encoding == "cl100k_base"

    def test_run_assigns_ids_indexes_and_full_meta(self):
        chunks = [chunk("a", "one", token_count=7), chunk("b", "two"), chunk("a", "three")]
        enriched = ChunkMetadataEnricher().run(documents=chunks)["documents"]
        assert [doc.id for doc in enriched] == ["a:0", "b:0", "a:1"]
        assert [doc.meta["chunk_index"] for doc in enriched] == [0, 0, 1]
        assert enriched[0].meta["token_count"] == 7  # the chunker's count is kept
        assert enriched[1].meta["token_count"] == count_tokens("two")
        assert enriched[2].meta["chunk_hash"] == content_hash("three")
        for doc in enriched:
            assert set(CHUNK_META_FIELDS) <= set(doc.meta)
            assert doc.meta["tainted"] is False and doc.meta["verified"] is False

    def test_run_stamps_every_chunk_with_one_indexing_time(self):
        before = datetime.now(UTC)
        enriched = ChunkMetadataEnricher().run(documents=[chunk("a", "one"), chunk("b", "two")])["documents"]
        stamps = {doc.meta["indexed_at"] for doc in enriched}
        assert len(stamps) == 1
        assert before <= datetime.fromisoformat(stamps.pop()) <= datetime.now(UTC)

    def test_run_same_document_id_other_tenant_counts_separately(self):
        chunks = [
            chunk("a", "x"),
            Document(content="y", meta={"tenant_id": "globex", "tags": ["t"], "document_id": "a"}),
        ]
        assert [doc.meta["chunk_index"] for doc in ChunkMetadataEnricher().run(documents=chunks)["documents"]] == [0, 0]

    @pytest.mark.parametrize(
        "meta",
        [
            {"tags": ["hr"], "document_id": "a"},
            {"tenant_id": "t", "document_id": "a"},
            {"tenant_id": "t", "tags": ["x"], "document_id": "a b"},
        ],
    )
    def test_run_refuses_chunks_without_access_fields(self, meta):
        with pytest.raises(ValueError, match="DocumentIdentifier"):
            ChunkMetadataEnricher().run(documents=[Document(content="x", meta=meta)])

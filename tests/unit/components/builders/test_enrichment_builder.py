"""EnrichmentBuilder: the enrichment response (context block, sources, tokens, empty reason)."""

import pytest
from haystack import Document

from components.builders.enrichment_builder import EnrichmentBuilder
from components.core.models import EnrichResponse
from components.core.prompts import CONTEXT_CHUNK_TEMPLATE, render_context


def _docs() -> list[Document]:
    return [
        Document(
            id="acme-hr-handbook:2",
            content="Full-time employees receive 27 days of paid annual leave.",
            score=0.62,
            meta={
                "document_id": "acme-hr-handbook",
                "chunk_index": 2,
                "document_name": "Acme Robotics Employee Handbook",
                "section": "Annual leave",
                "source_uri": "https://intranet.example.com/hr/handbook",
            },
        ),
        Document(
            id="acme-travel:0",
            content="Meals up to EUR 45 per day.",
            score=0.41,
            meta={"document_id": "acme-travel", "chunk_index": 0, "page_number": 3, "source_uri": "file:///srv/t.md"},
        ),
    ]


@pytest.mark.unit
class TestEnrichmentBuilder:
    def test_init(self):
        builder = EnrichmentBuilder()
        assert builder.chunk_template == CONTEXT_CHUNK_TEMPLATE and builder.min_similarity == 0.3
        with pytest.raises(ValueError):
            EnrichmentBuilder(chunk_template="no placeholders")
        with pytest.raises(ValueError):
            EnrichmentBuilder(min_similarity="high")

    def test_to_dict(self):
        data = EnrichmentBuilder(min_similarity=0.25).to_dict()
        assert data["type"] == "components.builders.enrichment_builder.EnrichmentBuilder"
        assert data["init_parameters"] == {
            "chunk_template": CONTEXT_CHUNK_TEMPLATE,
            "chunk_separator": "\n\n",
            "none_value": "N/A",
            "min_similarity": 0.25,
        }

    def test_from_dict(self):
        builder = EnrichmentBuilder.from_dict(
            EnrichmentBuilder(chunk_separator="\n---\n", min_similarity=0.5).to_dict()
        )
        assert builder.chunk_separator == "\n---\n" and builder.min_similarity == 0.5

    def test_run_context_block_and_sources(self):
        documents = _docs()
        message = "  how many leave days?  "
        response = EnrichmentBuilder().run(
            message=message, documents=documents, relevant=documents, candidates=documents, context_tokens_used=57
        )["response"]
        EnrichResponse.model_validate(response)
        assert response["message"] == message  # never rewritten
        assert response["context"] == render_context(documents, CONTEXT_CHUNK_TEMPLATE, "\n\n", "N/A")
        assert response["context"].startswith(
            "[SourceId: acme-hr-handbook:2]\n[Document: Acme Robotics Employee Handbook]"
        )
        assert "[SourceId: acme-travel:0]\n[Document: acme-travel]\n[Page: 3] [Section: N/A]" in response["context"]
        assert response["sources"] == [
            {
                "source_id": "acme-hr-handbook:2",
                "document_id": "acme-hr-handbook",
                "document_name": "Acme Robotics Employee Handbook",
                "chunk_index": 2,
                "url": "https://intranet.example.com/hr/handbook",
                "title": "Acme Robotics Employee Handbook",
                "page_number": None,
                "section": "Annual leave",
                "score": 0.62,
            },
            {
                "source_id": "acme-travel:0",
                "document_id": "acme-travel",
                "document_name": "acme-travel",
                "chunk_index": 0,
                "url": None,
                "title": "acme-travel",
                "page_number": 3,
                "section": None,
                "score": 0.41,
            },
        ]
        assert response["context_chunks_used"] == 2 and response["tokens_used"] == 57
        assert response["empty_reason"] is None

    @pytest.mark.parametrize(
        ("candidates", "relevant", "reason"),
        [
            (0, 0, "No document this identity may see matches the message."),
            (7, 0, "None of the 7 retrieved chunks reached the minimum similarity of 0.35 (RAG_MIN_SIMILARITY_SCORE)."),
            (7, 2, "No chunk fitted the context token budget (RAG_MAX_CONTEXT_TOKENS)."),
        ],
    )
    def test_run_empty_result_says_why(self, candidates, relevant, reason):
        documents = _docs()
        response = EnrichmentBuilder(min_similarity=0.35).run(
            message="q",
            documents=[],
            relevant=(documents * 4)[:relevant],
            candidates=(documents * 4)[:candidates],
            context_tokens_used=0,
        )["response"]
        assert response["context"] == "" and response["sources"] == [] and response["tokens_used"] == 0
        assert response["context_chunks_used"] == 0 and response["empty_reason"] == reason

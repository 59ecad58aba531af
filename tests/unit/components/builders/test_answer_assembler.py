"""AnswerAssembler: the RAGResponse contract."""

import pytest
from haystack import Document
from pydantic import ValidationError

from components.builders.answer_assembler import AnswerAssembler
from components.core.models import RAGResponse

CONFIDENCE = {"overall": 80, "retrieval_score": 0.6, "coverage_score": 1.0, "llm_score": None}
CITATION = {
    "source_id": "hr:2",
    "document_id": "hr",
    "document_name": "HR",
    "chunk_index": 2,
    "page_number": None,
    "section": None,
    "relevance_score": 0.6,
    "snippet": "s",
    "snippet_full": "s",
}


def _inputs(**changes):
    inputs = dict(
        answer="27 days. [SourceId: hr:2]",
        model_used="extractive",
        generation_time_ms=1.23456,
        confidence=CONFIDENCE,
        citations=[CITATION],
        action="CITE",
        grounded=True,
        documents=[Document(id="hr:2", content="s")],
        context_tokens_used=42,
        route_to=None,
    )
    inputs.update(changes)
    return inputs


@pytest.mark.unit
class TestAnswerAssembler:
    def test_init(self):
        assert AnswerAssembler().time_decimals == 3

    def test_to_dict(self):
        assert AnswerAssembler().to_dict() == {
            "type": "components.builders.answer_assembler.AnswerAssembler",
            "init_parameters": {"time_decimals": 3},
        }

    def test_from_dict(self):
        assert AnswerAssembler.from_dict(AnswerAssembler(1).to_dict()).time_decimals == 1

    def test_run_builds_a_valid_response(self):
        response = AnswerAssembler().run(**_inputs())["response"]
        assert RAGResponse.model_validate(response)
        assert response["context_chunks_used"] == 1 and response["generation_time_ms"] == 1.235
        assert response["route_to"] is None and response["confidence"]["llm_score"] is None

    def test_run_rejects_a_broken_contract(self):
        with pytest.raises(ValidationError):
            AnswerAssembler().run(**_inputs(action="MAYBE"))

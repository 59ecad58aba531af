"""AnswerAssembler: the RAGResponse contract."""

import pytest
from haystack import Document
from pydantic import ValidationError

from components.builders.answer_assembler import AnswerAssembler, found_documents
from components.core.models import INSUFFICIENT_INFORMATION_ANSWER, RAGResponse

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
        assembler = AnswerAssembler()
        assert assembler.time_decimals == 3 and assembler.include_ungrounded_draft is False

    def test_init_rejects_a_non_boolean_debug_setting(self):
        with pytest.raises(ValueError, match="SOURCEBOUND_DEBUG_UNGROUNDED_DRAFT"):
            AnswerAssembler(include_ungrounded_draft="yes")

    def test_to_dict(self):
        assert AnswerAssembler().to_dict() == {
            "type": "components.builders.answer_assembler.AnswerAssembler",
            "init_parameters": {
                "time_decimals": 3,
                "include_ungrounded_draft": False,
                "include_removed_sentences": False,
            },
        }

    def test_from_dict(self):
        assembler = AnswerAssembler.from_dict(AnswerAssembler(1, include_ungrounded_draft=True).to_dict())
        assert assembler.time_decimals == 1 and assembler.include_ungrounded_draft is True

    def test_removed_sentences_only_when_turned_on(self):
        removed = [{"sentence": "Dogs are welcome. [SourceId: a:1]", "reason": "unsupported", "support": 0.3}]
        plain = AnswerAssembler().run(**_inputs(), removed_sentences=removed)["response"]
        assert "removed_sentences" not in plain
        shown = AnswerAssembler(include_removed_sentences=True).run(**_inputs(), removed_sentences=removed)["response"]
        assert shown["removed_sentences"] == removed and RAGResponse.model_validate(shown)
        assert AnswerAssembler(include_removed_sentences=True).run(**_inputs())["response"]["removed_sentences"] == []
        with pytest.raises(ValueError, match="SOURCEBOUND_DEBUG_REMOVED_SENTENCES"):
            AnswerAssembler(include_removed_sentences="yes")

    def test_run_builds_a_valid_response(self):
        response = AnswerAssembler().run(**_inputs())["response"]
        assert RAGResponse.model_validate(response)
        assert response["context_chunks_used"] == 1 and response["generation_time_ms"] == 1.235
        assert response["route_to"] is None and response["confidence"]["llm_score"] is None
        assert response["answer"] == "27 days. [SourceId: hr:2]" and "ungrounded_draft" not in response

    def test_run_rejects_a_broken_contract(self):
        with pytest.raises(ValidationError):
            AnswerAssembler().run(**_inputs(action="MAYBE"))


ROUTE_TO = {
    "tag": "hr",
    "owner_user_id": "u-maria",
    "owner_email": "maria@acme.example",
    "reason": "Low confidence: 40%",
    "fallback": False,
}
HALLUCINATED = "Employees get 90 days of leave. [SourceId: secret:1]"
CONTEXT = [
    Document(id="hr:2", content="s", meta={"document_id": "hr", "document_name": "HR handbook"}),
    Document(id="hr:3", content="t", meta={"document_id": "hr", "document_name": "HR handbook"}),
    Document(id="leave:0", content="u", meta={"document_id": "leave"}),
]


@pytest.mark.unit
class TestRoutedAnswerIsADecline:
    def test_run_route_replaces_the_draft_with_a_decline(self):
        response = AnswerAssembler().run(
            **_inputs(
                answer=HALLUCINATED, action="ROUTE", grounded=False, route_to=ROUTE_TO, documents=CONTEXT, citations=[]
            )
        )["response"]
        assert response["answer"] == (
            f"{INSUFFICIENT_INFORMATION_ANSWER} Please ask maria@acme.example, the owner of 'hr'. "
            "Documents found that may be related: HR handbook; leave."
        )
        assert "90 days" not in response["answer"] and "SourceId" not in response["answer"]
        assert "ungrounded_draft" not in response and RAGResponse.model_validate(response).action == "ROUTE"

    def test_run_route_fallback_names_the_admin_and_says_nothing_was_found(self):
        fallback = {"tag": "system", "owner_user_id": None, "owner_email": "admin@acme.example",
                    "reason": "No relevant context found - routing to admin", "fallback": True}  # fmt: skip
        response = AnswerAssembler().run(
            **_inputs(
                answer=INSUFFICIENT_INFORMATION_ANSWER,
                action="ROUTE",
                grounded=False,
                route_to=fallback,
                documents=[],
                citations=[],
            )
        )["response"]
        assert response["answer"] == (
            f"{INSUFFICIENT_INFORMATION_ANSWER} Please ask admin@acme.example. "
            "No documents you can access matched the question."
        )

    def test_run_route_debug_setting_returns_the_draft_apart_from_the_answer(self):
        response = AnswerAssembler(include_ungrounded_draft=True).run(
            **_inputs(
                answer=HALLUCINATED, action="ROUTE", grounded=False, route_to=ROUTE_TO, documents=CONTEXT, citations=[]
            )
        )["response"]
        assert response["ungrounded_draft"] == HALLUCINATED and "90 days" not in response["answer"]

    def test_run_route_draft_is_the_models_text_before_verification(self):
        # A verifier that removed every sentence hands on a decline; the debug draft is still the model's own text.
        response = AnswerAssembler(include_ungrounded_draft=True).run(
            **_inputs(
                answer=INSUFFICIENT_INFORMATION_ANSWER, draft=HALLUCINATED, action="ROUTE", grounded=False,
                route_to=ROUTE_TO, documents=CONTEXT, citations=[],
            )
        )["response"]  # fmt: skip
        assert response["ungrounded_draft"] == HALLUCINATED and "90 days" not in response["answer"]

    def test_run_cite_never_carries_a_draft_field(self):
        response = AnswerAssembler(include_ungrounded_draft=True).run(**_inputs())["response"]
        assert "ungrounded_draft" not in response and response["answer"] == "27 days. [SourceId: hr:2]"

    def test_found_documents_are_distinct_and_limited(self):
        many = [Document(content="x", meta={"document_id": f"d{i}"}) for i in range(9)]
        assert found_documents(many) == ["d0", "d1", "d2", "d3", "d4"]
        assert found_documents(CONTEXT) == ["HR handbook", "leave"]

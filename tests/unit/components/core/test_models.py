"""Request and response models (docs/contract.md, "Response fields")."""

import pytest
from pydantic import ValidationError

from components.core.models import (
    INSUFFICIENT_INFORMATION_ANSWER,
    MAX_QUERY_CHARS,
    ConfidenceScore,
    RAGRequest,
    RAGResponse,
    SearchMode,
    SearchRequest,
    SearchResponse,
)

BASE = {"query": "How many vacation days?", "tenant_id": "acme", "user_tags": ["hr"]}


@pytest.mark.unit
class TestRAGRequest:
    def test_minimal_request_uses_pipeline_defaults(self):
        request = RAGRequest.model_validate(BASE)
        assert request.model is None and request.max_context_chunks is None and request.chat_history is None

    def test_full_request(self):
        request = RAGRequest.model_validate(
            {
                **BASE,
                "user_id": "u1",
                "project_id": "p1",
                "chat_history": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}],
                "model": "qwen3:8b",
                "max_context_chunks": 3,
                "filters": {"verified_only": True},
            }
        )
        assert request.chat_history[1].role == "assistant"
        assert request.filters.verified_only is True and request.filters.exclude_tainted is None
        assert request.filters.language is None
        assert RAGRequest.model_validate({**BASE, "filters": {"language": "zh"}}).filters.language == "zh"

    @pytest.mark.parametrize(
        "change",
        [
            {"query": ""},
            {"query": "   \n\t"},
            {"query": "x" * (MAX_QUERY_CHARS + 1)},
            {"query": "what\x00now"},
            {"tenant_id": ""},
            {"tenant_id": " "},
            {"user_tags": []},
            {"user_tags": [""]},
            {"user_tags": "hr"},
            {"max_context_chunks": 0},
            {"max_context_chunks": 21},
            {"chat_history": [{"role": "robot", "content": "x"}]},
            {"unknown_field": 1},
            {"filters": {"tenant_id": "globex"}},
            {"filters": {"operator": "OR", "conditions": []}},
            {"filters": {"verified_only": "yes please"}},
            {"filters": {"language": "German"}},
            {"filters": {"language": "DE"}},
            {"filters": {"language": "de-DE"}},
        ],
    )
    def test_invalid_requests_are_rejected(self, change):
        with pytest.raises(ValidationError):
            RAGRequest.model_validate({**BASE, **change})


@pytest.mark.unit
class TestSearchRequest:
    def test_defaults(self):
        request = SearchRequest.model_validate(BASE)
        assert request.search_mode is SearchMode.HYBRID and request.k is None and request.max_tokens == 2000

    @pytest.mark.parametrize(
        "change", [{"k": 0}, {"k": -1}, {"k": 10**6}, {"search_mode": "fuzzy"}, {"max_tokens": 50}]
    )
    def test_invalid_search_requests(self, change):
        with pytest.raises(ValidationError):
            SearchRequest.model_validate({**BASE, **change})


@pytest.mark.unit
class TestResponses:
    def test_confidence_llm_score_optional(self):
        score = ConfidenceScore(overall=70, retrieval_score=0.6, coverage_score=0.9)
        assert score.llm_score is None
        with pytest.raises(ValidationError):
            ConfidenceScore(overall=101, retrieval_score=0.6, coverage_score=0.9)

    def test_rag_response_round_trip(self):
        response = RAGResponse(
            answer=INSUFFICIENT_INFORMATION_ANSWER,
            confidence={"overall": 0, "retrieval_score": 0.0, "coverage_score": 0.0, "llm_score": None},
            citations=[],
            action="ROUTE",
            route_to={
                "tag": "system",
                "owner_user_id": None,
                "owner_email": "admin@x.example",
                "reason": "r",
                "fallback": True,
            },
            model_used="extractive",
            context_chunks_used=0,
            context_tokens_used=0,
            generation_time_ms=0.1,
            grounded=False,
        )
        dumped = response.to_json()
        assert set(dumped) == {
            "answer",
            "confidence",
            "citations",
            "action",
            "route_to",
            "model_used",
            "context_chunks_used",
            "context_tokens_used",
            "generation_time_ms",
            "grounded",
            "glossary_terms",
        }
        assert RAGResponse.model_validate(dumped) == response
        # The debug-only draft of a routed answer appears only when set, and apart from `answer`.
        debug = response.model_copy(update={"ungrounded_draft": "draft"}).to_json()
        assert set(debug) == set(dumped) | {"ungrounded_draft"} and debug["answer"] == INSUFFICIENT_INFORMATION_ANSWER
        # A server-side conversation's id likewise appears only when the turn was recorded in one.
        assert set(response.model_copy(update={"conversation_id": "conv-1"}).to_json()) == set(dumped) | {
            "conversation_id"
        }

    def test_search_response_shape(self):
        response = SearchResponse(
            results=[],
            context="",
            tokens_used=0,
            search_mode="keyword",
            metadata={"vector_results": 0, "keyword_results": 0, "latency_ms": 0.2},
        )
        assert response.model_dump(mode="json")["search_mode"] == "keyword"

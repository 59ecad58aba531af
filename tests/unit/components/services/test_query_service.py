"""QueryService: request validation, input mapping by the pipeline's declaration, typed errors."""

from typing import Any

import pytest
from haystack import Pipeline, component
from haystack.document_stores.errors import DocumentStoreError
from pydantic import ValidationError

from components.core.errors import ContextError, ModelNotAllowedError
from components.services.query_service import CONTEXT_TAG, QueryService, declared_io

RESPONSE = {
    "answer": "a",
    "confidence": {"overall": 0, "retrieval_score": 0.0, "coverage_score": 0.0, "llm_score": None},
    "citations": [],
    "action": "ROUTE",
    "route_to": {"tag": "system", "owner_user_id": None, "owner_email": "a@b.example", "reason": "r", "fallback": True},
    "model_used": "extractive",
    "context_chunks_used": 0,
    "context_tokens_used": 0,
    "generation_time_ms": 0.0,
    "grounded": False,
    "glossary_terms": [],
}


@component
class Recorder:
    """Answers with a fixed RAGResponse and records what it received, or raises ``error``."""

    def __init__(self, error: str | None = None) -> None:
        self.error = error
        self.seen: list[dict[str, Any]] = []

    @component.output_types(response=dict[str, Any])
    def run(
        self,
        query: str,
        tenant_id: str,
        user_tags: list[str],
        model: str | None = None,
        chat_history: list[dict[str, Any]] | None = None,
        filters: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        self.seen.append(
            {
                "query": query,
                "tenant_id": tenant_id,
                "user_tags": user_tags,
                "model": model,
                "chat_history": chat_history,
                "filters": filters,
            }
        )
        errors = {
            "model": ModelNotAllowedError("Model 'x' not in allowlist."),
            "store": DocumentStoreError("shard gone"),
            "other": KeyError("boom"),
        }
        if self.error:
            raise errors[self.error]
        return {"response": dict(RESPONSE)}


INPUTS = {
    "query": ["recorder.query"],
    "tenant_id": ["recorder.tenant_id"],
    "user_tags": ["recorder.user_tags"],
    "model": ["recorder.model"],
    "chat_history": ["recorder.chat_history"],
    "filters": ["recorder.filters"],
}


def _pipeline(error: str | None = None, metadata: bool = True) -> Pipeline:
    pipeline = Pipeline(metadata={"inputs": INPUTS, "outputs": {"response": "recorder.response"}} if metadata else {})
    pipeline.add_component("recorder", Recorder(error))
    return pipeline


@pytest.mark.unit
class TestQueryService:
    def test_maps_a_validated_request_onto_declared_inputs(self):
        pipeline = _pipeline()
        service = QueryService(pipeline)
        response = service.rag(
            {
                "query": "q?",
                "tenant_id": "acme",
                "user_tags": ["hr"],
                "filters": {"verified_only": True},
                "chat_history": [{"role": "user", "content": "hi"}],
            }
        )
        assert response == RESPONSE
        assert pipeline.get_component("recorder").seen == [
            {
                "query": "q?",
                "tenant_id": "acme",
                "user_tags": ["hr"],
                "model": None,
                "chat_history": [{"role": "user", "content": "hi"}],
                "filters": {"verified_only": True},
            }
        ]

    def test_invalid_request_never_reaches_the_pipeline(self):
        pipeline = _pipeline()
        with pytest.raises(ValidationError):
            QueryService(pipeline).rag({"query": "", "tenant_id": "acme", "user_tags": ["hr"]})
        with pytest.raises(ValidationError):
            QueryService(pipeline).rag(
                {"query": "q", "tenant_id": "acme", "user_tags": ["hr"], "filters": {"tenant_id": "x"}}
            )
        assert pipeline.get_component("recorder").seen == []

    @pytest.mark.parametrize(
        "error,expected", [("model", ModelNotAllowedError), ("store", ContextError), ("other", KeyError)]
    )
    def test_component_errors_surface_typed(self, error, expected):
        with pytest.raises(expected):
            QueryService(_pipeline(error)).rag({"query": "q", "tenant_id": "acme", "user_tags": ["hr"]})

    def test_declaration_is_checked(self):
        with pytest.raises(ValueError, match="declares no"):
            QueryService(_pipeline(metadata=False))
        with pytest.raises(ValueError, match="does not have"):
            declared_io(_pipeline(), inputs={"query": ["recorder.nope"]})
        explicit = QueryService(_pipeline(metadata=False), rag_inputs=INPUTS, rag_output="recorder.response")
        assert explicit.rag({"query": "q", "tenant_id": "acme", "user_tags": ["hr"]}) == RESPONSE

    def test_search_needs_a_search_pipeline(self):
        with pytest.raises(RuntimeError, match="without a search pipeline"):
            QueryService(_pipeline()).search({"query": "q", "tenant_id": "acme", "user_tags": ["hr"]})


@component
class TagSource:
    """Stands in for the tag router: an output named ``primary_tag`` the YAML leaves unconnected."""

    @component.output_types(primary_tag=str | None)
    def run(self, query: str) -> dict:
        return {"primary_tag": "hr" if "leave" in query else None}


@pytest.mark.unit
class TestQueryServiceContextTag:
    def test_the_routers_primary_tag_comes_beside_the_response(self):
        pipeline = _pipeline()
        pipeline.add_component("router", TagSource())
        inputs = {**INPUTS, "query": ["recorder.query", "router.query"]}
        service = QueryService(pipeline, rag_inputs=inputs, rag_output="recorder.response")
        assert service.rag({"query": "leave?", "tenant_id": "acme", "user_tags": ["hr"]}) == {
            **RESPONSE,
            CONTEXT_TAG: "hr",
        }
        assert service.rag({"query": "vpn?", "tenant_id": "acme", "user_tags": ["hr"]})[CONTEXT_TAG] is None

    def test_a_pipeline_without_a_tag_router_adds_nothing(self):
        assert CONTEXT_TAG not in QueryService(_pipeline()).rag(
            {"query": "q", "tenant_id": "acme", "user_tags": ["hr"]}
        )

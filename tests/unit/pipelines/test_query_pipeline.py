"""
The query side end to end through the YAML pipelines: part of the sample corpus is indexed with
``pipelines/indexing.yml`` into a temporary data dir, then ``pipelines/query.yml`` (extractive) and
``pipelines/search.yml`` answer through ``QueryService``.

Covers docs/contract.md end to end for the embedded backend (full pipeline, low confidence routes,
no context, token budget, health, model override) and the query side's acceptance checks: a sample
question gets a cited CITE answer, an absent topic gets "not enough information" and ROUTE, a
cross-tenant question never sees the other tenant's text, and the same corpus/config/request gives
identical top-3 results and an identical answer.
"""

import asyncio
from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from components.core.errors import ModelNotAllowedError, TokenBudgetExceededError
from components.core.models import INSUFFICIENT_INFORMATION_ANSWER, RAGResponse, SearchResponse
from components.services.query_service import QueryService
from components.stores.tag_directory import TagDirectory

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SAMPLE = Path(__file__).resolve().parents[3] / "examples" / "sample_corpus"
INDEXED = {
    "acme-hr-handbook",
    "acme-expense-policy",
    "acme-onboarding-priya",
    "acme-atlas-design",
    "globex-employee-handbook",
}
ACME_HR = {"tenant_id": "acme", "user_tags": ["hr"]}
LEAVE_QUESTION = "How many days of paid annual leave do full-time employees get?"


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory) -> Path:
    """A data dir with part of the sample corpus indexed by the indexing pipeline, plus its tag directory."""
    from components.services.indexing_service import IndexingService

    data_dir = tmp_path_factory.mktemp("query-pipeline")
    indexing = IndexingService.from_yaml(env={"SOURCEBOUND_DATA_DIR": str(data_dir)})
    manifest = yaml.safe_load((SAMPLE / "manifest.yml").read_text(encoding="utf-8"))
    for entry in manifest["documents"]:
        if entry["document_id"] not in INDEXED:
            continue
        result = indexing.index_files(
            [SAMPLE / entry["path"]],
            tenant_id=entry["tenant_id"],
            tags=entry["tags"],
            scope=entry.get("scope", "tenant"),
            user_id=entry.get("user_id"),
            project_id=entry.get("project_id"),
            document_id=entry["document_id"],
            document_name=entry.get("document_name"),
        )
        assert result["documents"][0]["status"] == "indexed", result
    indexing.index_texts(
        [
            {
                "content": (
                    "The quarantine procedure for returned XR-9 grippers takes exactly 11 days in the clean room."
                ),
                "tenant_id": "acme",
                "tags": ["hr"],
                "document_id": "acme-tainted-note",
                "document_name": "Tainted note",
            },
        ]
    )
    indexing.document_store.update_by_filter(
        {"field": "meta.document_id", "operator": "==", "value": "acme-tainted-note"}, {"tainted": True}
    )
    TagDirectory(data_dir / "tags.sqlite").load_from_yaml(SAMPLE / "directory.yml")
    return data_dir


@pytest.fixture(scope="module")
def service(data_dir) -> QueryService:
    service = QueryService.from_yaml(rag="query", search="search", env={"SOURCEBOUND_DATA_DIR": str(data_dir)})
    service.warm_up()
    return service


def _store_ids(service: QueryService) -> dict[str, dict]:
    store = service.rag_pipeline.get_component("retriever").document_store
    return {doc.id: doc.meta for doc in store.filter_documents()}


class TestQueryPipeline:
    def test_generate_full_pipeline(self, service):
        response = service.rag({"query": LEAVE_QUESTION, **ACME_HR})
        RAGResponse.model_validate(response)
        assert response["action"] == "CITE" and response["grounded"] is True and response["route_to"] is None
        assert "27 days" in response["answer"]
        assert response["model_used"] == "extractive" and response["confidence"]["llm_score"] is None
        # Coverage is the reader's support (docs/reader.md): an answer stands at or above the decline boundary.
        assert response["confidence"]["overall"] >= 60 and response["confidence"]["coverage_score"] >= 0.8
        assert 1 <= response["context_chunks_used"] <= 5 and response["context_tokens_used"] > 0
        stored = _store_ids(service)
        assert response["citations"]
        for citation in response["citations"]:
            assert citation["source_id"] in stored and f"[SourceId: {citation['source_id']}]" in response["answer"]
            assert stored[citation["source_id"]]["tenant_id"] == "acme"
            assert citation["document_id"] == "acme-hr-handbook" and citation["section"] == "Annual leave"

    def test_absent_topic_not_enough_information_and_route(self, service):
        response = service.rag(
            {
                "query": "What is the company policy on bringing dogs to work?",
                "tenant_id": "acme",
                "user_tags": ["hr", "all-staff", "finance"],
            }
        )
        # A routed answer is a decline naming whom to ask (docs/contract.md "Routed answers").
        assert response["answer"].startswith(INSUFFICIENT_INFORMATION_ANSWER)
        assert f"Please ask {response['route_to']['owner_email']}" in response["answer"]
        assert response["action"] == "ROUTE" and response["grounded"] is False and response["citations"] == []
        assert response["route_to"]["reason"]

    def test_generate_no_context(self, service):
        response = service.rag({"query": LEAVE_QUESTION, "tenant_id": "acme", "user_tags": ["tag-nobody-has"]})
        assert response["context_chunks_used"] == 0 and response["context_tokens_used"] == 0
        assert response["answer"] == (
            f"{INSUFFICIENT_INFORMATION_ANSWER} Please ask admin@company.com. "
            "No documents you can access matched the question."
        )
        assert response["action"] == "ROUTE"
        assert response["route_to"] == {
            "tag": "system",
            "owner_user_id": None,
            "owner_email": "admin@company.com",
            "reason": "No relevant context found - routing to admin",
            "fallback": True,
        }
        assert response["confidence"]["overall"] == 0

    def test_generate_low_confidence_routes_to_tag_owner(self, data_dir):
        strict = QueryService.from_yaml(
            search=None,
            env={
                "SOURCEBOUND_DATA_DIR": str(data_dir),
                "RAG_CONFIDENCE_THRESHOLD": "99",
                "SOURCEBOUND_ADMIN_EMAIL": "ops@acme.example",
            },
        )
        response = strict.rag({"query": LEAVE_QUESTION, **ACME_HR})
        assert response["action"] == "ROUTE" and response["grounded"] is False
        assert response["route_to"] == {
            "tag": "hr",
            "owner_user_id": "u-acme-maria",
            "owner_email": "maria.lopez@acme.example",
            "reason": f"Low confidence: {response['confidence']['overall']}%, routing to hr owner",
            "fallback": False,
        }
        # A tag without an owner falls back to the configured admin.
        response = strict.rag({"query": LEAVE_QUESTION, "tenant_id": "acme", "user_tags": ["all-staff"]})
        assert response["route_to"]["tag"] == "all-staff" and response["route_to"]["fallback"] is True
        assert response["route_to"]["owner_email"] == "ops@acme.example"

    def test_generate_token_budget(self, service):
        history = []
        for turn in range(40):
            history.append({"role": "user", "content": f"Question {turn}: " + "please tell me more about leave " * 20})
            history.append({"role": "assistant", "content": f"Answer {turn}: " + "the handbook says a lot " * 20})
        history.append({"role": "user", "content": "the most recent user turn"})
        data = service._rag_data({"query": LEAVE_QUESTION, **ACME_HR, "chat_history": history}, None)
        result = service.rag_pipeline.run(data, include_outputs_from={"budgeter", "assembler"})
        budget = result["budgeter"]["budget"]
        kept = result["budgeter"]["chat_history"]
        assert 0 < len(kept) < len(history) and kept[-1] == history[-1] and kept == history[-len(kept) :]
        assert budget["history_tokens"] <= min(1000, budget["history_budget"])
        assert result["assembler"]["response"]["context_tokens_used"] <= 3000
        assert result["assembler"]["response"]["action"] == "CITE"

    def test_token_budget_exceeded_is_a_typed_error(self, data_dir):
        cramped = QueryService.from_yaml(
            search=None, env={"SOURCEBOUND_DATA_DIR": str(data_dir), "RAG_SYSTEM_PROMPT_TOKENS": "7300"}
        )
        with pytest.raises(TokenBudgetExceededError, match="window"):
            cramped.rag({"query": "leave " * 200, **ACME_HR})

    def test_model_override(self, service):
        assert service.rag({"query": LEAVE_QUESTION, **ACME_HR, "model": "extractive"})["model_used"] == "extractive"
        with pytest.raises(ModelNotAllowedError, match="Available: \\['extractive'\\]"):
            service.rag({"query": LEAVE_QUESTION, **ACME_HR, "model": "llama3.2"})

    def test_health_check(self, service):
        health = service.health()
        assert health["generator"] == {"backend": "extractive", "model": "extractive", "reachable": True}
        assert health["store"]["points"] > 20

    def test_determinism(self, service, data_dir):
        request = {
            "query": "Who approves expenses above EUR 500?",
            "tenant_id": "acme",
            "user_tags": ["finance", "all-staff"],
        }
        first = service.rag(request)
        again = QueryService.from_yaml(env={"SOURCEBOUND_DATA_DIR": str(data_dir)})
        for other in (service.rag(request), again.rag(request)):
            assert other["answer"] == first["answer"] and other["citations"] == first["citations"]
            assert other["confidence"] == first["confidence"] and other["action"] == first["action"]
        search = {**request, "k": 3}
        top3 = [r["source_id"] for r in service.search(search)["results"]]
        assert len(top3) == 3
        for _ in range(3):
            assert [r["source_id"] for r in again.search(search)["results"]] == top3

    def test_cross_tenant_never_sees_other_tenant(self, service):
        stored = _store_ids(service)
        globex = {"tenant_id": "globex", "user_tags": ["people", "everyone", "hr", "all-staff", "finance"]}
        for query in [
            "How many weeks of parental leave does Acme Robotics offer?",
            LEAVE_QUESTION,
            "Acme expense approval limits",
        ]:
            response = service.rag({"query": query, **globex})
            assert "Acme" not in response["answer"] and "27 days" not in response["answer"]
            assert all(stored[c["source_id"]]["tenant_id"] == "globex" for c in response["citations"])
            results = service.search({"query": query, **globex, "k": 10})["results"]
            assert results and all(stored[r["source_id"]]["tenant_id"] == "globex" for r in results)
        acme_answer = service.rag(
            {
                "query": "How many weeks of paid parental leave do parents get?",
                "tenant_id": "acme",
                "user_tags": ["hr", "people", "everyone"],
            }
        )
        assert "20 weeks" in acme_answer["answer"] and "16 weeks" not in acme_answer["answer"]

    def test_scopes(self, service):
        priya = "What is the name of Priya's onboarding buddy?"
        stored = _store_ids(service)

        def documents(response):
            return {stored[c["source_id"]]["document_id"] for c in response["citations"]}

        as_other = service.rag(
            {"query": priya, "tenant_id": "acme", "user_tags": ["all-staff"], "user_id": "u-acme-other"}
        )
        as_priya = service.rag(
            {"query": priya, "tenant_id": "acme", "user_tags": ["all-staff"], "user_id": "u-acme-priya"}
        )
        assert "acme-onboarding-priya" not in documents(as_other) and "acme-onboarding-priya" in documents(as_priya)
        atlas = "When is Project Atlas general availability planned?"
        without = service.search({"query": atlas, "tenant_id": "acme", "user_tags": ["engineering"], "k": 10})
        # Project documents are private to their owner within the project (docs/contract.md "Access rule").
        within = service.search(
            {
                "query": atlas,
                "tenant_id": "acme",
                "user_tags": ["engineering"],
                "project_id": "atlas",
                "user_id": "u-acme-sven",
                "k": 10,
            }
        )
        other_member = service.search(
            {
                "query": atlas,
                "tenant_id": "acme",
                "user_tags": ["engineering"],
                "project_id": "atlas",
                "user_id": "u-acme-other",
                "k": 10,
            }
        )
        assert not any(r["document_id"] == "acme-atlas-design" for r in without["results"])
        assert not any(r["document_id"] == "acme-atlas-design" for r in other_member["results"])
        assert within["results"][0]["document_id"] == "acme-atlas-design"
        only_project = service.search(
            {
                "query": atlas,
                "tenant_id": "acme",
                "user_tags": ["engineering"],
                "project_id": "atlas",
                "user_id": "u-acme-sven",
                "scope": "project",
                "k": 10,
            }
        )
        assert {r["document_id"] for r in only_project["results"]} == {"acme-atlas-design"}

    def test_tainted_excluded_unless_asked(self, service):
        request = {"query": "How long is the quarantine procedure for returned XR-9 grippers?", **ACME_HR, "k": 3}
        assert not any(r["document_id"] == "acme-tainted-note" for r in service.search(request)["results"])
        with_tainted = service.search({**request, "filters": {"exclude_tainted": False}})
        assert with_tainted["results"][0]["document_id"] == "acme-tainted-note"
        assert service.search({**request, "filters": {"verified_only": True}})["results"] == []

    def test_request_filters_cannot_widen_access(self, service):
        for smuggled in (
            {"tenant_id": "globex"},
            {"operator": "OR", "conditions": []},
            {"field": "meta.tags", "value": "x"},
        ):
            with pytest.raises(ValidationError):
                service.rag({"query": LEAVE_QUESTION, **ACME_HR, "filters": smuggled})
            with pytest.raises(ValidationError):
                service.search({"query": LEAVE_QUESTION, **ACME_HR, "filters": smuggled})

    def test_clarification_folds_history_into_retrieval(self, service):
        history = [
            {"role": "user", "content": "How much paid annual leave do full-time employees get?"},
            {"role": "assistant", "content": "27 days. [SourceId: acme-hr-handbook:2]"},
        ]
        response = service.rag({"query": "And what about part-time employees?", **ACME_HR, "chat_history": history})
        assert "Part-time employees receive leave in proportion" in response["answer"]
        assert response["action"] == "CITE"

    def test_async_gives_the_same_answer(self, service):
        request = {"query": LEAVE_QUESTION, **ACME_HR}
        sync = service.rag(request)
        async_response = asyncio.run(service.rag_async(request))
        assert async_response["answer"] == sync["answer"] and async_response["citations"] == sync["citations"]
        assert (
            asyncio.run(service.search_async({**request, "k": 3}))["results"]
            == service.search({**request, "k": 3})["results"]
        )


class TestSearchPipeline:
    @pytest.mark.parametrize("mode", ["vector", "keyword", "hybrid"])
    def test_search_modes(self, service, mode):
        response = service.search({"query": "parental leave weeks", **ACME_HR, "search_mode": mode, "k": 4})
        SearchResponse.model_validate(response)
        assert response["search_mode"] == mode and 1 <= len(response["results"]) <= 4
        assert response["results"][0]["source_id"] == "acme-hr-handbook:4"
        for result in response["results"]:
            assert -1.0 <= result["score"] <= 1.0 and "hr" in result["tags"] and len(result["snippet"]) <= 203
        metadata = response["metadata"]
        if mode == "vector":  # one retrieval runs: every result is its
            assert (metadata["vector_results"], metadata["keyword_results"]) == (len(response["results"]), 0)
        if mode == "keyword":
            assert (metadata["vector_results"], metadata["keyword_results"]) == (0, len(response["results"]))
        if mode == "hybrid":  # the top hit is found by both stages of the fusion
            assert metadata["vector_results"] >= 1 and metadata["keyword_results"] >= 1
        assert metadata["latency_ms"] > 0

    @pytest.mark.parametrize("mode", ["vector", "keyword", "hybrid"])
    def test_search_runs_one_retrieval(self, service, mode):
        data = service._search_data({"query": "parental leave weeks", **ACME_HR, "search_mode": mode, "k": 4})
        retrievers = {"vector_retriever", "keyword_retriever", "hybrid_retriever"}
        result = service.search_pipeline.run(data, include_outputs_from=retrievers)
        assert {name for name in retrievers if name in result} == {f"{mode}_retriever"}

    def test_hybrid_search_counts_the_stages_that_found_each_result(self, service):
        request = {"query": "parental leave weeks", **ACME_HR, "k": 5}
        hybrid = service.search({**request, "search_mode": "hybrid"})
        vector = {hit["source_id"] for hit in service.search({**request, "search_mode": "vector", "k": 40})["results"]}
        keyword = {
            hit["source_id"] for hit in service.search({**request, "search_mode": "keyword", "k": 40})["results"]
        }
        # Each stage of the fusion takes the top max(4 * fetch_top_k, 40) = 40 of its ranking: the k=40 searches.
        in_vector = sum(1 for hit in hybrid["results"] if hit["source_id"] in vector)
        in_keyword = sum(1 for hit in hybrid["results"] if hit["source_id"] in keyword)
        assert (hybrid["metadata"]["vector_results"], hybrid["metadata"]["keyword_results"]) == (in_vector, in_keyword)
        assert hybrid["metadata"]["vector_results"] >= 1 and hybrid["metadata"]["keyword_results"] >= 1

    def test_search_context_within_max_tokens(self, service):
        response = service.search(
            {"query": "expenses", "tenant_id": "acme", "user_tags": ["finance"], "k": 10, "max_tokens": 300}
        )
        assert 0 < response["tokens_used"] <= 300
        assert response["context"].startswith(f"[SourceId: {response['results'][0]['source_id']}]")

    def test_search_minimum_similarity_and_empty_reason(self, data_dir, service):
        # docs/contract.md, "Retrieval quality controls": results below RAG_SEARCH_MIN_SIMILARITY are dropped, and
        # an empty list says why.
        request = {"query": "expenses", "tenant_id": "acme", "user_tags": ["finance"]}
        found = service.search(request)
        assert found["results"] and found["empty_reason"] is None
        assert all(result["score"] >= 0.1 for result in found["results"])
        strict = QueryService.from_yaml(
            rag="query",
            search="search",
            env={"SOURCEBOUND_DATA_DIR": str(data_dir), "RAG_SEARCH_MIN_SIMILARITY": "0.99"},
        )
        empty = strict.search(request)
        assert empty["results"] == [] and "minimum similarity of 0.99" in empty["empty_reason"]
        unseen = service.search({**request, "user_tags": ["nobody-has-this"]})
        assert (
            unseen["results"] == [] and unseen["empty_reason"] == "No document this identity may see matches the query."
        )

    def test_search_defaults(self, service):
        response = service.search({"query": "expenses", "tenant_id": "acme", "user_tags": ["finance"]})
        assert response["search_mode"] == "hybrid" and len(response["results"]) == 5

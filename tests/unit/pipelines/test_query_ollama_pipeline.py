"""
``pipelines/query_ollama.yml`` end to end, against the Ollama test double (or a real Ollama when
OLLAMA_BASE_URL answers; the scripted cases then skip).

Covers docs/contract.md end to end with an LLM: full pipeline, low confidence routes, no
context, token budget, health check and model override, plus the LLM faults: Ollama down, too slow,
a model that is not pulled, a reply without citations and an unparsable confidence rating.
"""

import asyncio
import time

import pytest
from support.query_corpus import sample_corpus_chunks, write_store

from components.core.errors import LLMConnectionError, LLMTimeoutError, ModelNotAllowedError, ModelUnavailableError
from components.core.models import INSUFFICIENT_INFORMATION_ANSWER, RAGResponse
from components.core.prompts import CONFIDENCE_PROMPT, QUERY_CLASSIFIER_PROMPT
from components.services.query_service import QueryService
from components.stores.tag_directory import TagDirectory

pytestmark = [pytest.mark.integration, pytest.mark.ollama]

ACME_HR = {"tenant_id": "acme", "user_tags": ["hr"]}
LEAVE_QUESTION = "How many days of paid annual leave do full-time employees get?"


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("ollama-pipeline")
    chunks = [
        doc
        for doc in sample_corpus_chunks()
        if doc.meta["document_id"] in {"acme-hr-handbook", "globex-employee-handbook"}
    ]
    write_store(data_dir / "qdrant", chunks)
    directory = TagDirectory(data_dir / "tags.sqlite")
    directory.add_user("u-acme-maria", "maria.lopez@acme.example")
    directory.set_tag_owner("acme", "hr", "u-acme-maria")
    return data_dir


@pytest.fixture
def make_service(data_dir, ollama_target):
    def make(**env) -> QueryService:
        variables = {
            "SOURCEBOUND_DATA_DIR": str(data_dir),
            "OLLAMA_BASE_URL": ollama_target.url,
            "CHAT_MODEL": ollama_target.model,
        }
        return QueryService.from_yaml(rag="query_ollama", search=None, env={**variables, **env})

    return make


class TestQueryOllamaPipeline:
    def test_generate_full_pipeline(self, make_service, ollama_target):
        response = make_service().rag({"query": LEAVE_QUESTION, **ACME_HR})
        RAGResponse.model_validate(response)
        assert response["model_used"] == ollama_target.model
        assert response["context_chunks_used"] >= 1 and response["context_tokens_used"] > 0
        assert response["generation_time_ms"] > 0
        for citation in response["citations"]:
            assert f"[SourceId: {citation['source_id']}]" in response["answer"]
            assert citation["document_id"] == "acme-hr-handbook"
        double = ollama_target.require_double()
        assert response["action"] == "CITE" and response["grounded"] is True
        assert response["answer"].endswith("[SourceId: acme-hr-handbook:2]") and "27 days" in response["answer"]
        assert response["confidence"]["llm_score"] == 90
        # What Ollama was sent: the classifier prompt, the answer prompt with num_ctx, the rating prompt.
        assert double.chat_requests("classify")[-1]["messages"][-1]["content"] == QUERY_CLASSIFIER_PROMPT.format(
            query=LEAVE_QUESTION
        )
        answer_request = double.chat_requests("answer")[-1]
        assert answer_request["options"] == {"temperature": 0.1, "num_ctx": 8192, "num_predict": 1024}
        system = answer_request["messages"][0]["content"]
        assert "[SourceId: acme-hr-handbook:2]" in system and "based ONLY on the provided context" in system
        rating_prompt = double.chat_requests("rating")[-1]["messages"][-1]["content"]
        assert (
            rating_prompt.startswith(CONFIDENCE_PROMPT.split("{context_summary}")[0])
            and response["answer"] in rating_prompt
        )

    def test_model_override(self, make_service, ollama_target):
        double = ollama_target.require_double()
        response = make_service().rag({"query": LEAVE_QUESTION, **ACME_HR, "model": "qwen3:8b"})
        assert response["model_used"] == "qwen3:8b"
        answer_request = double.chat_requests("answer")[-1]
        assert answer_request["model"] == "qwen3:8b"
        assert answer_request["options"]["num_ctx"] == 32768 and answer_request["options"]["num_predict"] == 1024
        assert {r["model"] for r in double.chat_requests("classify") + double.chat_requests("rating")} == {"qwen3:8b"}
        # RAG_MAX_RESPONSE_TOKENS raises the cap up to the model's own maximum.
        make_service(RAG_MAX_RESPONSE_TOKENS="4096").rag({"query": LEAVE_QUESTION, **ACME_HR, "model": "qwen3:8b"})
        assert double.chat_requests("answer")[-1]["options"]["num_predict"] == 2048

    def test_model_not_allowed(self, make_service, ollama_target):
        with pytest.raises(ModelNotAllowedError, match="not in allowlist"):
            make_service().rag({"query": LEAVE_QUESTION, **ACME_HR, "model": "gpt-4"})
        if ollama_target.double:
            assert ollama_target.double.chat_requests("answer") == []

    def test_model_not_pulled(self, make_service, ollama_target):
        double = ollama_target.require_double()
        double.models = ["llama3.2:latest"]
        with pytest.raises(ModelUnavailableError, match="Run: ollama pull deepseek-r1:32b"):
            make_service().rag({"query": LEAVE_QUESTION, **ACME_HR, "model": "deepseek-r1:32b"})

    def test_generate_low_confidence_routes(self, make_service, ollama_target):
        double = ollama_target.require_double()
        double.reply = "The office has a rooftop swimming pool open to all staff. [SourceId: acme-hr-handbook:2]"
        double.rating = "5"
        response = make_service().rag({"query": LEAVE_QUESTION, **ACME_HR})
        assert response["confidence"]["overall"] < 60 and response["confidence"]["llm_score"] == 5
        assert response["action"] == "ROUTE" and response["grounded"] is False
        assert (
            response["route_to"]["owner_email"] == "maria.lopez@acme.example"
            and response["route_to"]["fallback"] is False
        )
        assert response["route_to"]["reason"].startswith("Low confidence")
        # The hallucinated draft is replaced by a decline naming the owner (docs/contract.md "Routed answers").
        assert "swimming pool" not in response["answer"] and "ungrounded_draft" not in response
        assert "Please ask maria.lopez@acme.example, the owner of 'hr'." in response["answer"]

    def test_reply_without_citations_is_removed_and_routes(self, make_service, ollama_target):
        # docs/contract.md, "Answers": an uncited sentence is removed; nothing supported left -> decline.
        double = ollama_target.require_double()
        double.reply = "Full-time employees receive 27 days of paid annual leave per calendar year."
        double.rating = "95"
        response = make_service().rag({"query": LEAVE_QUESTION, **ACME_HR})
        assert response["citations"] == [] and response["grounded"] is False and response["action"] == "ROUTE"
        assert response["confidence"]["coverage_score"] == 0.0
        assert "27 days" not in response["answer"] and response["answer"].startswith(INSUFFICIENT_INFORMATION_ANSWER)
        assert "removed_sentences" not in response  # a debug field, off by default

    def test_citations_outside_the_context_are_dropped(self, make_service, ollama_target):
        double = ollama_target.require_double()
        double.reply = (
            "Employees receive 27 days of paid annual leave. [SourceId: acme-hr-handbook:2] "
            "Globex gives 22 days. [SourceId: globex-employee-handbook:1]"
        )
        response = make_service(SOURCEBOUND_DEBUG_REMOVED_SENTENCES="true").rag({"query": LEAVE_QUESTION, **ACME_HR})
        assert [c["source_id"] for c in response["citations"]] == ["acme-hr-handbook:2"]
        # The sentence citing a chunk outside the context cites nothing valid: removed, the rest is grounded.
        assert "Globex" not in response["answer"] and response["grounded"] is True and response["action"] == "CITE"
        assert [(r["reason"], r["source_ids"]) for r in response["removed_sentences"]] == [("uncited", [])]

    def test_unsupported_sentence_is_removed(self, make_service, ollama_target):
        double = ollama_target.require_double()
        double.reply = (
            "Full-time employees receive 27 days of paid annual leave per calendar year. "
            "[SourceId: acme-hr-handbook:2] "
            "Employees may also bring their dogs to the office on Fridays. [SourceId: acme-hr-handbook:2]"
        )
        response = make_service(SOURCEBOUND_DEBUG_REMOVED_SENTENCES="true").rag({"query": LEAVE_QUESTION, **ACME_HR})
        assert "27 days" in response["answer"] and "dogs" not in response["answer"]
        assert response["action"] == "CITE" and response["grounded"] is True
        removed = response["removed_sentences"]
        assert len(removed) == 1 and removed[0]["reason"] == "unsupported" and "dogs" in removed[0]["sentence"]
        assert removed[0]["support"] < 0.6 and removed[0]["source_ids"] == ["acme-hr-handbook:2"]

    def test_a_number_the_cited_chunk_does_not_hold_is_unsupported(self, make_service, ollama_target):
        double = ollama_target.require_double()
        double.reply = "Full-time employees receive 44 days of paid annual leave. [SourceId: acme-hr-handbook:2]"
        response = make_service(SOURCEBOUND_DEBUG_REMOVED_SENTENCES="true").rag({"query": LEAVE_QUESTION, **ACME_HR})
        assert response["action"] == "ROUTE" and "44 days" not in response["answer"]
        assert [r["reason"] for r in response["removed_sentences"]] == ["unsupported"]

    def test_unparsable_rating_renormalises(self, make_service, ollama_target):
        double = ollama_target.require_double()
        double.rating = "Very well supported!"
        response = make_service().rag({"query": LEAVE_QUESTION, **ACME_HR})
        confidence = response["confidence"]
        assert confidence["llm_score"] is None
        expected = int(round(100 * (30 * confidence["retrieval_score"] + 40 * confidence["coverage_score"]) / 70, 6))
        assert abs(confidence["overall"] - expected) <= 1

    def test_generate_no_context(self, make_service, ollama_target):
        response = make_service().rag({"query": LEAVE_QUESTION, "tenant_id": "acme", "user_tags": ["nobody-has-this"]})
        assert response["context_chunks_used"] == 0 and response["action"] == "ROUTE"
        assert response["route_to"]["fallback"] is True and response["citations"] == []
        double = ollama_target.require_double()
        assert response["answer"] == (
            f"{INSUFFICIENT_INFORMATION_ANSWER} Please ask admin@company.com. "
            "No documents you can access matched the question."
        )
        assert double.chat_requests("rating") == []  # nothing to rate without context

    def test_generate_token_budget(self, make_service, ollama_target):
        double = ollama_target.require_double()
        history = [
            {
                "role": "user" if i % 2 == 0 else "assistant",
                "content": f"turn {i} " + "lorem ipsum dolor sit amet " * 40,
            }
            for i in range(30)
        ]
        make_service().rag({"query": LEAVE_QUESTION, **ACME_HR, "chat_history": history})
        system = double.chat_requests("answer")[-1]["messages"][0]["content"]
        assert "turn 29 " in system and "turn 0 " not in system

    def test_ollama_down(self, make_service, ollama_target):
        double = ollama_target.require_double()
        service = make_service()
        double.go_down()
        started = time.perf_counter()
        with pytest.raises(LLMConnectionError, match="Cannot connect to Ollama"):
            service.rag({"query": LEAVE_QUESTION, **ACME_HR})
        assert time.perf_counter() - started < 1.0
        assert service.health()["generator"]["reachable"] is False

    def test_ollama_too_slow(self, make_service, ollama_target):
        double = ollama_target.require_double()
        double.delay = 1.5
        with pytest.raises(LLMTimeoutError):
            make_service(RAG_TIMEOUT_SECONDS="1").rag({"query": LEAVE_QUESTION, **ACME_HR})

    def test_streaming(self, make_service, ollama_target):
        service = make_service()
        assert service.supports_streaming
        pieces = []
        response = service.rag(
            {"query": LEAVE_QUESTION, **ACME_HR}, streaming_callback=lambda chunk: pieces.append(chunk.content)
        )
        assert "".join(pieces).strip() == response["answer"]

    def test_health_check(self, make_service, ollama_target):
        health = make_service().health()
        assert health["generator"]["backend"] == "ollama" and health["generator"]["reachable"] is True
        assert health["generator"]["model"] == ollama_target.model and health["generator"]["model_available"] is True
        assert health["store"]["points"] > 0

    def test_async(self, make_service, ollama_target):
        service = make_service()
        response = asyncio.run(service.rag_async({"query": LEAVE_QUESTION, **ACME_HR}))
        assert response["model_used"] == ollama_target.model
        if ollama_target.double:
            assert response == {
                **service.rag({"query": LEAVE_QUESTION, **ACME_HR}),
                "generation_time_ms": response["generation_time_ms"],
            }

    def test_real_model_cites_the_sample_corpus(self, make_service, ollama_target):
        ollama_target.require_real()
        response = make_service().rag({"query": LEAVE_QUESTION, **ACME_HR})
        assert "27" in response["answer"] and response["citations"]

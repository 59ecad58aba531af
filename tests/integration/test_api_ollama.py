"""
The API with the Ollama answer backend (``pipelines/query_ollama.yml``) against the local Ollama
test double (``tests/ollama_double.py``): answers, streaming, and the LLM failure codes
(503 down / model not pulled, 504 timeout, 400 model not allowed, 413 token budget).

The server runs with ``RAG_TIMEOUT_SECONDS=1`` and ``RAG_SYSTEM_PROMPT_TOKENS=7000`` so that a
slow reply and an oversized query are quick to provoke (llama3.2's window is 8192 tokens:
7000 reserved for the system prompt + 1024 for the response leave 168 for the query).
"""

import time

import openai
import pytest
from support.api_server import ApiServer, error_of
from support.ollama_double import ollama_server_env

pytestmark = [pytest.mark.integration, pytest.mark.ollama, pytest.mark.slow]

IDENTITY = {"tenant_id": "acme", "user_tags": ["hr"]}
QUESTION = "How many days of paid annual leave do employees get?"
POLICY = (
    "Full-time employees get 27 days of paid annual leave per calendar year. "
    "Part-time employees get a pro-rata share. Unused days may be carried over until 1 July."
)


@pytest.fixture(scope="module")
def server(tmp_path_factory, ollama):
    env = ollama_server_env(ollama.url, RAG_TIMEOUT_SECONDS="1", RAG_SYSTEM_PROMPT_TOKENS="7000")
    with ApiServer(tmp_path_factory.mktemp("ollama") / "data", env=env) as running:
        document = {
            "content": POLICY,
            "tenant_id": "acme",
            "tags": ["hr"],
            "document_id": "leave-policy",
            "document_name": "Leave policy",
        }
        assert running.client.post("/index/run", json={"documents": [document]}).status_code == 200
        yield running


@pytest.fixture(autouse=True)
def reset_double(ollama):
    ollama.delay, ollama.reply, ollama.models = 0.0, None, ["llama3.2:latest"]
    yield


def rag(server, **extra):
    return server.client.post("/rag/run", json={"query": QUESTION, **IDENTITY, **extra})


class TestAnswers:
    def test_health_names_ollama(self, server, ollama):
        generator = server.client.get("/health").json()["generator"]
        assert (
            generator["backend"] == "ollama"
            and generator["reachable"] is True
            and generator["model"].startswith("llama3.2")
        )

    def test_readiness_needs_the_configured_chat_model(self, server, ollama):
        # docs/api.md, "GET /health": Ollama answers but the chat model is not pulled -> degraded, not ready (503).
        time.sleep(2.1)  # past the generator probe's cache
        assert server.client.get("/health/ready").status_code == 200
        ollama.models = ["qwen3:8b"]
        time.sleep(2.1)
        health = server.client.get("/health")
        assert health.status_code == 200 and health.json()["status"] == "degraded"
        assert health.json()["generator"]["model_available"] is False
        ready = server.client.get("/health/ready")
        assert ready.status_code == 503 and ready.json()["ready"] is False
        assert "is not pulled" in ready.json()["reason"] and "ollama pull llama3.2" in ready.json()["reason"]
        ollama.models = ["llama3.2:latest"]
        time.sleep(2.1)
        assert server.client.get("/health/ready").json() == {"ready": True, "status": "healthy", "reason": None}

    def test_cited_answer_from_the_llm(self, server, ollama):
        response = rag(server)
        assert response.status_code == 200, response.text
        result = response.json()["result"]
        assert result["citations"] and result["citations"][0]["source_id"].startswith("leave-policy:")
        assert result["model_used"].startswith("llama3.2") and result["confidence"]["llm_score"] is not None
        assert ollama.chat_requests()

    def test_chat_completion_streams(self, server):
        client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="unused", max_retries=0)
        chunks = list(
            client.chat.completions.create(
                model="rag", messages=[{"role": "user", "content": QUESTION}], stream=True, extra_body=IDENTITY
            )
        )
        assert "[SourceId: leave-policy:" in "".join(chunk.choices[0].delta.content or "" for chunk in chunks)
        assert chunks[-1].model_extra["sourcebound"]["model_used"].startswith("llama3.2")

    def test_reply_without_citations_routes(self, server, ollama):
        ollama.reply = "Employees get plenty of leave."
        result = rag(server).json()["result"]
        assert result["grounded"] is False and result["action"] == "ROUTE"


class TestFailures:
    def test_model_outside_the_allowlist_is_400(self, server):
        assert "mistral" in error_of(rag(server, model="mistral"), 400, "model_not_allowed")

    def test_model_not_pulled_is_503_naming_the_pull(self, server):
        assert "ollama pull qwen3:8b" in error_of(rag(server, model="qwen3:8b"), 503, "model_unavailable")

    def test_slow_llm_is_504(self, server, ollama):
        ollama.delay = 3.0
        started = time.monotonic()
        error_of(rag(server), 504, "llm_timeout")
        assert time.monotonic() - started < 8

    def test_query_over_the_token_budget_is_413(self, server):
        long_query = " ".join(f"word{index}" for index in range(400))
        response = server.client.post("/rag/run", json={"query": long_query, **IDENTITY})
        error_of(response, 413, "token_budget_exceeded")

    def test_search_needs_no_llm(self, server, ollama):
        ollama.delay = 3.0
        response = server.client.post("/search/run", json={"query": "annual leave", **IDENTITY})
        assert response.status_code == 200 and response.json()["result"]["results"]


@pytest.fixture(scope="module")
def server_without_ollama(tmp_path_factory):
    """A server whose OLLAMA_BASE_URL has nothing listening (a fresh process: no pooled connections)."""
    from support.api_server import free_port

    env = ollama_server_env(f"http://127.0.0.1:{free_port()}")
    with ApiServer(tmp_path_factory.mktemp("ollama-down") / "data", env=env) as running:
        yield running


class TestOllamaDown:
    def test_llm_down_is_503_within_a_second(self, server_without_ollama):
        server = server_without_ollama
        started = time.monotonic()
        assert "Ollama" in error_of(rag(server), 503, "llm_unavailable")
        assert time.monotonic() - started < 1.0
        health = server.client.get("/health").json()
        assert health["status"] == "degraded" and health["generator"]["reachable"] is False
        client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="unused", max_retries=0)
        with pytest.raises(openai.InternalServerError) as caught:
            client.chat.completions.create(
                model="rag", messages=[{"role": "user", "content": QUESTION}], extra_body=IDENTITY
            )
        assert caught.value.status_code == 503

    def test_search_still_works(self, server_without_ollama):
        response = server_without_ollama.client.post("/search/run", json={"query": "annual leave", **IDENTITY})
        assert response.status_code == 200 and response.json()["result"]["results"] == []

"""
Server-side conversations on the Ollama backend (``pipelines/query_ollama.yml``) against the Ollama test
double: the configured generator writes the rolling summary, and the next answer's prompt carries it as the
previous conversation once the raw turns are gone (docs/contract.md, "Conversations").
"""

import pytest
from support.api_server import ApiServer
from support.ollama_double import grounded_reply, ollama_server_env

pytestmark = [pytest.mark.integration, pytest.mark.ollama, pytest.mark.slow]

IDENTITY = {"tenant_id": "acme", "user_tags": ["finance"], "user_id": "u-acme-sam"}
POLICY = (
    "When travelling for business you may claim meals up to a daily per diem of EUR 45 within the Netherlands "
    "and EUR 60 abroad. Alcohol is not reimbursed."
)
LLM_SUMMARY = "The user asked about the daily meal per diem for business travel in the Netherlands: EUR 45."


def reply(payload):
    prompt = "\n".join(message.get("content", "") for message in payload.get("messages", []))
    if "running summary of a conversation" in prompt:
        return LLM_SUMMARY
    return grounded_reply(payload)


@pytest.fixture(scope="module")
def server(tmp_path_factory, ollama):
    env = ollama_server_env(
        ollama.url,
        SOURCEBOUND_CONVERSATION_RETENTION="summaries_only",
        SOURCEBOUND_CONVERSATION_SUMMARY_THRESHOLD_CHARS="0",
        SOURCEBOUND_CONVERSATION_RECENT_MESSAGES="0",
    )
    with ApiServer(tmp_path_factory.mktemp("conversations-ollama") / "data", env=env) as running:
        document = {"content": POLICY, "tenant_id": "acme", "tags": ["finance"], "document_id": "expenses"}
        assert running.client.post("/index/run", json={"documents": [document]}).status_code == 200
        yield running


class TestOllamaSummaries:
    def test_the_generator_summarises_and_the_prompt_carries_the_summary(self, server, ollama):
        ollama.reply, ollama.delay, ollama.models = reply, 0.0, ["llama3.2:latest"]
        http = server.client
        owner = {"tenant_id": "acme", "user_id": "u-acme-sam"}
        conversation_id = http.post("/conversations", json=owner).json()["conversation_id"]
        question = "What is the daily meal per diem within the Netherlands?"
        first = http.post("/rag/run", json={"query": question, **IDENTITY, "conversation_id": conversation_id})
        assert first.status_code == 200, first.text
        summary_requests = [
            request
            for request in ollama.chat_requests("answer")
            if "running summary of a conversation" in request["messages"][-1]["content"]
        ]
        assert len(summary_requests) == 1 and summary_requests[0]["model"].startswith("llama3.2")
        assert question in summary_requests[0]["messages"][-1]["content"]
        stored = http.get(f"/conversations/{conversation_id}", params=owner).json()
        assert stored["summary"] == LLM_SUMMARY and stored["messages"] == []

        follow_up = http.post("/rag/run", json={"query": "And abroad?", **IDENTITY, "conversation_id": conversation_id})
        assert follow_up.status_code == 200, follow_up.text
        answers = [
            request
            for request in ollama.chat_requests("answer")
            if "running summary of a conversation" not in request["messages"][-1]["content"]
        ]
        system = next(m["content"] for m in answers[-1]["messages"] if m["role"] == "system")
        previous = system.split("PREVIOUS CONVERSATION:", 1)[1]
        assert LLM_SUMMARY in previous and question not in previous.replace(LLM_SUMMARY, "")

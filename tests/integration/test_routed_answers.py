"""
Routed answers are declines (docs/contract.md "Routed answers"), over real HTTP with the
Ollama double as the only stand-in: when the router says ROUTE (uncited reply, hallucinated
citations, low confidence, no context) neither ``/rag/run`` nor the chat completion (plain or
streamed) carries a word of the LLM's draft; the answer names the tag owner's contact and the
documents found. With ``SOURCEBOUND_DEBUG_UNGROUNDED_DRAFT=true`` the draft comes back, but
only in the separate ``ungrounded_draft`` field.

The streamed chat buffers the answer until the router has decided; the first-token latency
this costs is measured here against the double with a scripted generation time.
"""

import json
import statistics
import time

import httpx
import pytest
from support.api_server import ApiServer
from support.ollama_double import INSUFFICIENT, ollama_server_env

pytestmark = [pytest.mark.integration, pytest.mark.ollama, pytest.mark.slow]

IDENTITY = {"tenant_id": "acme", "user_tags": ["hr"]}
QUESTION = "How many days of paid annual leave do employees get?"
POLICY = (
    "Full-time employees get 27 days of paid annual leave per calendar year. "
    "Part-time employees get a pro-rata share. Unused days may be carried over until 1 July."
)
OWNER = "maria.lopez@acme.example"
# An uncited reply and a hallucinated one (a made-up claim citing a chunk that does not exist).
UNCITED = "Employees get a generous 45 days of leave plus a sabbatical."
HALLUCINATED = "Employees get 45 days of leave and a sabbatical. [SourceId: secret-plan:7]"
DRAFT_WORDS = ("45", "sabbatical", "generous", "secret-plan")


def _index(server: ApiServer) -> None:
    from components.stores.tag_directory import TagDirectory

    document = {
        "content": POLICY,
        "tenant_id": "acme",
        "tags": ["hr"],
        "document_id": "leave-policy",
        "document_name": "Leave policy",
    }
    assert server.client.post("/index/run", json={"documents": [document]}).status_code == 200
    directory = TagDirectory(server.data_dir / "tags.sqlite")
    directory.add_user("u-acme-maria", OWNER)
    directory.set_tag_owner("acme", "hr", "u-acme-maria")


@pytest.fixture(scope="module")
def server(tmp_path_factory, ollama):
    with ApiServer(tmp_path_factory.mktemp("routed") / "data", env=ollama_server_env(ollama.url)) as running:
        _index(running)
        yield running


@pytest.fixture(autouse=True)
def reset_double(ollama):
    ollama.delay, ollama.reply, ollama.rating = 0.0, None, "90"
    yield


def rag(server: ApiServer) -> dict:
    response = server.client.post("/rag/run", json={"query": QUESTION, **IDENTITY})
    assert response.status_code == 200, response.text
    return response.json()["result"]


def chat_body(stream: bool) -> dict:
    return {"model": "rag", "stream": stream, "messages": [{"role": "user", "content": QUESTION}], **IDENTITY}


def streamed(server: ApiServer) -> tuple[str, dict, float]:
    """The streamed content, the final ``sourcebound`` object and the seconds to the first content token."""
    started, first_token, content, sourcebound = time.monotonic(), None, [], None
    with httpx.stream("POST", f"{server.url}/v1/chat/completions", json=chat_body(True), timeout=30) as response:
        assert response.status_code == 200, response.read()
        for line in response.iter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[len("data: ") :])
            piece = chunk["choices"][0]["delta"].get("content")
            if piece:
                first_token = first_token if first_token is not None else time.monotonic() - started
                content.append(piece)
            sourcebound = chunk.get("sourcebound", sourcebound)
    return "".join(content), sourcebound, first_token


def assert_decline(answer: str) -> None:
    assert answer.startswith(INSUFFICIENT), answer
    assert f"Please ask {OWNER}, the owner of 'hr'." in answer and "Leave policy" in answer
    assert not any(word in answer for word in DRAFT_WORDS), answer
    assert "[SourceId:" not in answer


class TestRagRun:
    def test_grounded_reply_is_cited_unchanged(self, server):
        result = rag(server)
        assert result["action"] == "CITE" and "[SourceId: leave-policy:0]" in result["answer"]
        assert "ungrounded_draft" not in result

    @pytest.mark.parametrize("reply", [UNCITED, HALLUCINATED], ids=["uncited", "hallucinated"])
    def test_routed_reply_is_a_decline(self, server, ollama, reply):
        ollama.reply = reply
        result = rag(server)
        assert result["action"] == "ROUTE" and result["grounded"] is False and result["citations"] == []
        assert result["route_to"]["owner_email"] == OWNER
        assert_decline(result["answer"])
        assert "ungrounded_draft" not in result

    def test_low_confidence_cited_reply_is_a_decline(self, server, ollama):
        ollama.reply, ollama.rating = "Employees get 45 days of leave. [SourceId: leave-policy:0]", "0"
        result = rag(server)
        assert result["action"] == "ROUTE" and result["route_to"]["reason"].startswith("Low confidence")
        assert_decline(result["answer"])


class TestChat:
    @pytest.mark.parametrize("reply", [UNCITED, HALLUCINATED], ids=["uncited", "hallucinated"])
    def test_completion_is_a_decline(self, server, ollama, reply):
        ollama.reply = reply
        response = server.client.post("/v1/chat/completions", json=chat_body(False))
        assert response.status_code == 200, response.text
        body = response.json()
        assert_decline(body["choices"][0]["message"]["content"])
        assert body["sourcebound"]["action"] == "ROUTE" and "ungrounded_draft" not in body["sourcebound"]

    @pytest.mark.parametrize("reply", [UNCITED, HALLUCINATED], ids=["uncited", "hallucinated"])
    def test_stream_never_carries_a_draft_token(self, server, ollama, reply):
        ollama.reply = reply
        content, sourcebound, first_token = streamed(server)
        assert_decline(content)
        assert sourcebound["action"] == "ROUTE" and sourcebound["route_to"]["owner_email"] == OWNER
        assert first_token is not None

    def test_first_token_waits_for_the_router(self, server, ollama):
        # The double takes 0.3 s per LLM call; nothing may be streamed before the answer is routed,
        # so the first token comes after the generation, and the whole decline follows at once.
        ollama.reply, ollama.delay = UNCITED, 0.3
        latencies = []
        for _ in range(3):
            content, _, first_token = streamed(server)
            assert_decline(content)
            latencies.append(first_token)
        assert min(latencies) >= 0.3, latencies
        ollama.delay = 0.0
        instant = [streamed(server)[2] for _ in range(5)]
        print(
            "\nfirst-token latency of a routed stream: "
            f"median {statistics.median(instant) * 1000:.0f} ms with an instant double, "
            f"{statistics.median(latencies) * 1000:.0f} ms with 0.3 s per LLM call"
        )


def test_debug_setting_returns_the_draft_apart(tmp_path, ollama):
    env = ollama_server_env(ollama.url, SOURCEBOUND_DEBUG_UNGROUNDED_DRAFT="true")
    with ApiServer(tmp_path / "data", env=env) as debug_server:
        _index(debug_server)
        ollama.reply = HALLUCINATED
        result = rag(debug_server)
        assert result["action"] == "ROUTE" and result["ungrounded_draft"] == HALLUCINATED
        assert_decline(result["answer"])
        # The stream stays a decline: the draft travels only in the final `sourcebound` object.
        content, sourcebound, _ = streamed(debug_server)
        assert_decline(content)
        assert sourcebound["ungrounded_draft"] == HALLUCINATED

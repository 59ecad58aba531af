"""
Server-side conversations and per-tenant glossaries over real HTTP (docs/api.md, "Conversations" and
"Glossary"; docs/contract.md, "Conversations" and "Glossary").

A trusted-mode server on the bundled sample corpus summarises after every turn and keeps summaries only
(``SOURCEBOUND_CONVERSATION_RETENTION=summaries_only``), so a follow-up ("And abroad?") must be answered
from the stored summary alone. An ``api_key``-mode server checks that identities come from the keys: one
user's conversation is a 404 for another user and another tenant, and only a tenant's admin key loads its
glossary.
"""

import openai
import pytest
from support.api_server import REPO, ApiServer, error_of

from components.stores import key_store

pytestmark = [pytest.mark.integration, pytest.mark.slow]

GLOSSARIES = REPO / "evaluation" / "datasets" / "glossaries"
SAM = {"tenant_id": "acme", "user_tags": ["all-staff"], "user_id": "u-acme-sam"}
EVA = {"tenant_id": "acme", "user_tags": ["all-staff"], "user_id": "u-acme-eva"}
JOE = {"tenant_id": "globex", "user_tags": ["everyone"], "user_id": "u-acme-sam"}  # same user id, other tenant
MEAL = "What is the daily meal per diem for business travel within the Netherlands?"
FOLLOW_UP = "And abroad?"
SUMMARY_ENV = {
    "SOURCEBOUND_CONVERSATION_RETENTION": "summaries_only",
    "SOURCEBOUND_CONVERSATION_SUMMARY_THRESHOLD_CHARS": "0",
    "SOURCEBOUND_CONVERSATION_RECENT_MESSAGES": "0",
}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with ApiServer(tmp_path_factory.mktemp("conversations") / "data", env=SUMMARY_ENV) as running:
        yield running


@pytest.fixture(scope="module")
def http(server):
    return server.client


def owner(identity):
    return {"tenant_id": identity["tenant_id"], "user_id": identity["user_id"]}


def start(http, identity):
    response = http.post("/conversations", json=owner(identity))
    assert response.status_code == 200, response.text
    return response.json()["conversation_id"]


def ask(http, identity, query, **extra):
    return http.post("/rag/run", json={"query": query, **identity, **extra})


def rag(http, identity, query, **extra):
    response = ask(http, identity, query, **extra)
    assert response.status_code == 200, response.text[:1000]
    return response.json()["result"]


def search(http, identity, query):
    response = http.post("/search/run", json={"query": query, "k": 5, **identity})
    assert response.status_code == 200, response.text[:1000]
    return response.json()["result"]


def read(http, conversation_id, identity):
    return http.get(f"/conversations/{conversation_id}", params=owner(identity))


class TestConversations:
    def test_follow_up_is_answered_from_the_summary_after_the_raw_turns_are_gone(self, http):
        conversation_id = start(http, SAM)
        first = rag(http, SAM, MEAL, conversation_id=conversation_id)
        assert first["conversation_id"] == conversation_id and "EUR 45" in first["answer"]
        stored = read(http, conversation_id, SAM).json()
        # summaries only: the question and answer were folded into the summary and deleted.
        assert stored["messages"] == [] and stored["retention"] == "summaries_only"
        assert "meal per diem" in stored["summary"] and len(stored["summaries"][-1]["message_ids"]) == 2

        follow_up = rag(http, SAM, FOLLOW_UP, conversation_id=conversation_id)
        assert follow_up["action"] == "CITE" and "EUR 60" in follow_up["answer"], follow_up["answer"]
        assert "acme-expense-policy" in {citation["document_id"] for citation in follow_up["citations"]}
        # The same follow-up without the conversation has nothing to refer back to.
        alone = rag(http, SAM, FOLLOW_UP)
        assert "EUR 60" not in alone["answer"]
        assert "conversation_id" not in alone
        stored = read(http, conversation_id, SAM).json()
        assert stored["messages"] == [] and len(stored["summaries"]) == 2
        assert stored["summary"].splitlines()[0].startswith("User asked: What is the daily meal per diem")
        assert stored["summary"].splitlines()[-1].startswith("User asked: And abroad?")

    def test_chat_completions_carry_the_conversation(self, server, http):
        conversation_id = start(http, SAM)
        client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="unused-in-trusted-mode", max_retries=0)
        identity = {**SAM, "conversation_id": conversation_id}
        completion = client.chat.completions.create(
            model="rag", messages=[{"role": "user", "content": MEAL}], extra_body=identity
        )
        assert "EUR 45" in completion.choices[0].message.content
        assert completion.model_extra["sourcebound"]["conversation_id"] == conversation_id
        # The client's earlier messages are ignored: the server's summary is the history.
        follow_up = client.chat.completions.create(
            model="rag",
            messages=[
                {"role": "user", "content": "How do I reset my password?"},
                {"role": "assistant", "content": "Use Keyvault."},
                {"role": "user", "content": FOLLOW_UP},
            ],
            extra_body=identity,
        )
        assert "EUR 60" in follow_up.choices[0].message.content
        assert "meal per diem" in read(http, conversation_id, SAM).json()["summary"]

    def test_another_users_or_tenants_conversation_is_not_found(self, http):
        conversation_id = start(http, SAM)
        rag(http, SAM, MEAL, conversation_id=conversation_id)
        before = read(http, conversation_id, SAM).json()
        unknown = error_of(ask(http, SAM, MEAL, conversation_id="conv-does-not-exist"), 404, "not_found")
        for stranger in (EVA, JOE):
            refused = ask(http, stranger, FOLLOW_UP, conversation_id=conversation_id)
            # Not found, exactly as an unknown id: nothing tells "someone else's" from "does not exist".
            message = error_of(refused, 404, "not_found")
            assert message == unknown.replace("conv-does-not-exist", conversation_id)
            assert "meal" not in refused.text.lower()
            assert read(http, conversation_id, stranger).status_code == 404
            deleted = http.delete(f"/conversations/{conversation_id}", params=owner(stranger))
            assert deleted.status_code == 404
        assert read(http, conversation_id, SAM).json() == before

    def test_chat_history_and_conversation_id_together_are_rejected(self, http):
        conversation_id = start(http, SAM)
        history = [{"role": "user", "content": "hi"}]
        response = ask(http, SAM, MEAL, conversation_id=conversation_id, chat_history=history)
        assert "conversation_id" in error_of(response, 422, "validation_error")
        assert read(http, conversation_id, SAM).json()["summaries"] == []
        assert "conversation_id" in error_of(ask(http, SAM, MEAL, conversation_id="not a valid id!"), 422)

    def test_delete_removes_the_conversation(self, http):
        conversation_id = start(http, SAM)
        rag(http, SAM, MEAL, conversation_id=conversation_id)
        response = http.delete(f"/conversations/{conversation_id}", params=owner(SAM))
        assert response.status_code == 200 and response.json()["summaries"] == 1
        assert read(http, conversation_id, SAM).status_code == 404
        error_of(ask(http, SAM, FOLLOW_UP, conversation_id=conversation_id), 404, "not_found")


@pytest.fixture(scope="class")
def glossaries(http):
    for tenant in ("acme", "globex"):
        csv = (GLOSSARIES / f"{tenant}.csv").read_text(encoding="utf-8")
        response = http.post("/glossary", json={"tenant_id": tenant, "csv": csv})
        assert response.status_code == 200, response.text
    yield
    for tenant in ("acme", "globex"):
        http.delete("/glossary", params={"tenant_id": tenant})


class TestGlossary:
    def test_alias_finds_the_document_and_is_reported(self, http, glossaries):
        result = search(http, SAM, "Can I use Navan?")
        assert result["metadata"]["glossary_terms"] == ["TripHarbor"]
        assert "acme-travel-policy" in [hit["document_id"] for hit in result["results"]]
        answer = rag(http, SAM, "Can I use Navan?")
        assert answer["glossary_terms"] == ["TripHarbor"]

    def test_each_tenant_gets_only_its_own_glossary(self, http, glossaries):
        # The same alias means each tenant's own tool, and no acme document reaches globex.
        globex = search(http, {**JOE, "user_tags": ["everyone"]}, "Can I use Navan?")
        assert globex["metadata"]["glossary_terms"] == ["FlyRight Travel"]
        assert {hit["document_id"] for hit in globex["results"]} <= {
            "globex-employee-handbook",
            "globex-expense-policy",
            "globex-incident-response",
            "globex-warehouse-safety",
        }
        # An acme-only term means nothing in globex.
        assert search(http, JOE, "How long is the proeftijd?")["metadata"]["glossary_terms"] == []
        assert search(http, SAM, "How long is the proeftijd?")["metadata"]["glossary_terms"] == ["probation"]

    def test_glossary_can_be_read_replaced_and_removed(self, http, glossaries):
        shown = http.get("/glossary", params={"tenant_id": "acme"}).json()
        assert {item["term"] for item in shown["vocabulary"]["terms"]} >= {"TripHarbor", "Peoplebase"}
        bad = http.post("/glossary", json={"tenant_id": "acme", "csv": "term,aliases\n,orphan alias\n"})
        assert "row 2" in error_of(bad, 422, "validation_error")
        assert http.get("/glossary", params={"tenant_id": "acme"}).json() == shown  # unchanged
        removed = http.delete("/glossary", params={"tenant_id": "acme"})
        assert removed.status_code == 200 and removed.json()["removed"] is True
        assert http.get("/glossary", params={"tenant_id": "acme"}).status_code == 404
        assert search(http, SAM, "Can I use Navan?")["metadata"]["glossary_terms"] == []
        csv = (GLOSSARIES / "acme.csv").read_text(encoding="utf-8")
        assert http.post("/glossary", json={"tenant_id": "acme", "csv": csv}).status_code == 200
        assert search(http, SAM, "Can I use Navan?")["metadata"]["glossary_terms"] == ["TripHarbor"]


# ---------------------------------------------------------------------- api_key mode


@pytest.fixture(scope="module")
def keyed(tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("conversations-keys") / "data"
    data_dir.mkdir(parents=True)
    keys_file = data_dir / "api_keys.json"
    grants = {
        "sam": {"tenant_id": "acme", "tags": ["hr"], "user_id": "u-sam"},
        "eva": {"tenant_id": "acme", "tags": ["hr"], "user_id": "u-eva"},
        "writer": {"tenant_id": "acme", "tags": ["hr"], "permissions": ["read", "write"]},
        "admin": {"tenant_id": "acme", "tags": ["hr"], "permissions": ["admin"]},
        "globex": {"tenant_id": "globex", "tags": ["hr"], "user_id": "u-sam", "permissions": ["admin"]},
    }
    keys = {name: key_store.register_key(keys_file, **grant)[0] for name, grant in grants.items()}
    env = {"SOURCEBOUND_AUTH_MODE": "api_key", "SOURCEBOUND_BOOTSTRAP_CORPUS": "false", **SUMMARY_ENV}
    with ApiServer(data_dir, env=env) as running:
        document = {
            "content": "Leave requests go through Peoplebase. Full-time employees get 27 days of annual leave.",
            "tenant_id": "acme",
            "tags": ["hr"],
            "document_id": "leave",
        }
        indexed = running.client.post("/index/run", json={"documents": [document]}, headers=bearer(keys["writer"]))
        assert indexed.status_code == 200, indexed.text
        yield running, keys


def bearer(key):
    return {"Authorization": f"Bearer {key}"}


class TestApiKeyIdentity:
    def test_conversations_belong_to_the_keys_user(self, keyed):
        server, keys = keyed
        http = server.client
        created = http.post("/conversations", json={}, headers=bearer(keys["sam"]))
        assert created.status_code == 200, created.text
        conversation_id = created.json()["conversation_id"]
        body = {"query": "How many days of annual leave?", "conversation_id": conversation_id}
        answered = http.post("/rag/run", json=body, headers=bearer(keys["sam"]))
        assert answered.status_code == 200 and "27 days" in answered.json()["result"]["answer"]
        for other in ("eva", "globex"):
            assert http.post("/rag/run", json=body, headers=bearer(keys[other])).status_code == 404
            assert http.get(f"/conversations/{conversation_id}", headers=bearer(keys[other])).status_code == 404
        # A tenant named in the query string does not replace the key's identity.
        spoofed = http.get(
            f"/conversations/{conversation_id}", params={"tenant_id": "acme"}, headers=bearer(keys["eva"])
        )
        assert spoofed.status_code == 404
        mine = http.get(f"/conversations/{conversation_id}", headers=bearer(keys["sam"]))
        assert mine.status_code == 200 and "annual leave" in mine.json()["summary"]

    def test_only_the_tenants_admin_loads_its_glossary(self, keyed):
        server, keys = keyed
        http = server.client
        body = {"tenant_id": "acme", "csv": "term,aliases\nPeoplebase,HRIS\n"}
        assert http.post("/glossary", json=body, headers=bearer(keys["sam"])).status_code == 403
        assert http.post("/glossary", json=body, headers=bearer(keys["writer"])).status_code == 403
        assert http.post("/glossary", json=body, headers=bearer(keys["globex"])).status_code == 403
        assert http.post("/glossary", json=body, headers=bearer(keys["admin"])).status_code == 200
        query = {"query": "Where is the HRIS?", "k": 3}
        mine = http.post("/search/run", json=query, headers=bearer(keys["sam"])).json()["result"]
        assert mine["metadata"]["glossary_terms"] == ["Peoplebase"]
        theirs = http.post("/search/run", json=query, headers=bearer(keys["globex"])).json()["result"]
        assert theirs["metadata"]["glossary_terms"] == [] and theirs["results"] == []

    def test_deleting_the_tenant_removes_its_conversations_and_glossary(self, keyed):
        import sqlite3

        server, keys = keyed
        http = server.client
        assert http.post("/conversations", json={}, headers=bearer(keys["globex"])).status_code == 200
        deleted = http.post("/delete_tenant/run", json={"tenant_id": "acme"}, headers=bearer(keys["admin"]))
        assert deleted.status_code == 200, deleted.text
        removed = deleted.json()["result"]["removed"]
        assert removed["conversations"] >= 1 and removed["glossary"] == 1
        with sqlite3.connect(server.data_dir / "conversations.sqlite") as connection:
            tenants = {row[0] for row in connection.execute("SELECT tenant_id FROM rag_conversations")}
            summaries = {row[0] for row in connection.execute("SELECT tenant_id FROM rag_conversation_summaries")}
        assert tenants == {"globex"} and summaries <= {"globex"}
        with sqlite3.connect(server.data_dir / "glossary.sqlite") as connection:
            assert connection.execute("SELECT COUNT(*) FROM glossary_vocabularies").fetchone() == (0,)

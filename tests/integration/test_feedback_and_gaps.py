"""
Feedback, knowledge gaps and the console's routes over real HTTP (docs/api.md, "Feedback", "Knowledge gaps", "The
console"): the real server on a copy of the sample corpus, a real RabbitMQ node receiving ``question.routed``,
and an ``api_key`` server whose keys decide what each route answers.
"""

import json
import shutil
import time

import pika
import pytest
from support.api_server import REPO, ApiServer

from components.stores import key_store

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROUTED = "How much bereavement leave do employees get?"  # hr: routed to maria
MEAL = "What is the daily meal per diem when travelling for business within the Netherlands?"  # finance: cited
ACME_HR = {"tenant_id": "acme", "user_tags": ["hr"]}
ACME_FINANCE = {"tenant_id": "acme", "user_tags": ["finance"]}


def ask(server, query, identity, headers=None, **fields):
    response = server.client.post("/rag/run", json={"query": query, **identity, **fields}, headers=headers or {})
    assert response.status_code == 200, response.text
    return response.json()["result"]


def bearer(key):
    return {"Authorization": f"Bearer {key}"}


def gap_groups(server, tenant="acme", headers=None):
    response = server.client.get("/insights/gaps", params={"tenant_id": tenant}, headers=headers or {})
    assert response.status_code == 200, response.text
    return {group["tag"]: group for group in response.json()["result"]["tags"]}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """A copy of the sample corpus: the server indexes it and the stale check reads it."""
    folder = tmp_path_factory.mktemp("corpus") / "sample_corpus"
    shutil.copytree(REPO / "examples" / "sample_corpus", folder)
    return folder


@pytest.fixture(scope="module")
def routed_queue(rabbitmq):
    """A queue bound to ``question.routed`` on the events exchange (what an owner's tool would declare)."""
    connection = pika.BlockingConnection(pika.URLParameters(rabbitmq.url))
    channel = connection.channel()
    channel.exchange_declare("task.events", exchange_type="topic", durable=True)
    queue = channel.queue_declare("", exclusive=True).method.queue
    channel.queue_bind(queue, "task.events", routing_key="question.routed")
    yield channel, queue
    connection.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory, corpus, rabbitmq, routed_queue):
    env = {
        "SOURCEBOUND_KEEP_UNANSWERED_QUESTIONS": "true",
        "SOURCEBOUND_SAMPLE_CORPUS_DIR": str(corpus),
        "SOURCEBOUND_EVENTS_URL": rabbitmq.url,
    }
    with ApiServer(tmp_path_factory.mktemp("gaps") / "data", env=env) as running:
        yield running


def next_routed_event(routed_queue, timeout=10.0):
    channel, queue = routed_queue
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        method, properties, body = channel.basic_get(queue, auto_ack=True)
        if method is not None:
            return properties, json.loads(body)
        time.sleep(0.05)
    raise AssertionError("no question.routed event arrived")


class TestQueryIds:
    def test_every_answer_search_enrichment_and_chat_reply_carries_its_own(self, server):
        answer = ask(server, MEAL, ACME_FINANCE)
        search = server.client.post("/search/run", json={"query": "meal allowance", **ACME_FINANCE}).json()["result"]
        enrich = server.client.post("/enrich/run", json={"message": "meal allowance", **ACME_FINANCE}).json()
        chat = server.client.post(
            "/v1/chat/completions",
            json={"model": "rag", "messages": [{"role": "user", "content": MEAL}], **ACME_FINANCE},
        ).json()
        ids = [answer["query_id"], search["query_id"], enrich["result"]["query_id"], chat["sourcebound"]["query_id"]]
        assert len(set(ids)) == 4 and all(len(query_id) == 32 for query_id in ids)
        assert "context_tag" not in answer and "context_tag" not in chat["sourcebound"]
        with server.client.stream(
            "POST",
            "/v1/chat/completions",
            json={"model": "rag", "stream": True, "messages": [{"role": "user", "content": MEAL}], **ACME_FINANCE},
        ) as streamed:
            events = [
                line[6:] for line in streamed.iter_lines() if line.startswith("data: ") and line != "data: [DONE]"
            ]
        assert len(json.loads(events[-1])["sourcebound"]["query_id"]) == 32


class TestFeedback:
    def test_only_the_asker_may_rate_and_nothing_tells_their_id_from_an_unknown_one(self, server):
        query_id = ask(server, MEAL, {**ACME_FINANCE, "user_id": "u-sam"})["query_id"]
        refusals = []
        for who in ({"tenant_id": "globex", "user_id": "u-sam"}, {"tenant_id": "acme", "user_id": "u-eva"},
                    {"tenant_id": "acme"}):  # fmt: skip
            response = server.client.post("/feedback", json={"query_id": query_id, "rating": "up", **who})
            assert response.status_code == 404, who
            refusals.append(response.json()["message"].replace(query_id, "ID"))
        unknown = server.client.post("/feedback", json={"query_id": "0" * 32, "rating": "up", "tenant_id": "acme"})
        assert unknown.status_code == 404 and {unknown.json()["message"].replace("0" * 32, "ID")} == set(refusals)
        ok = server.client.post(
            "/feedback", json={"query_id": query_id, "rating": "up", "tenant_id": "acme", "user_id": "u-sam"}
        )
        assert ok.status_code == 200 and ok.json()["result"]["rating"] == "up"

    @pytest.mark.parametrize(
        "body,field",
        [
            ({"rating": "sideways"}, "rating"),
            ({"rating": "up", "comment": "x" * 2001}, "comment"),
            ({"rating": "up", "stars": 5}, "stars"),
            ({"rating": "up", "query_id": "not an id!"}, "query_id"),
        ],
    )
    def test_bad_feedback_is_a_422_naming_the_field(self, server, body, field):
        response = server.client.post("/feedback", json={"query_id": "a" * 32, "tenant_id": "acme", **body})
        assert response.status_code == 422 and field in response.json()["message"]

    def test_a_thumbs_down_files_the_question_under_its_tag_with_the_owner_and_comment(self, server):
        answer = ask(server, MEAL, ACME_FINANCE)
        assert answer["action"] == "CITE"
        rated = {"query_id": answer["query_id"], "rating": "down", "comment": "Raised to EUR 50", "tenant_id": "acme"}
        assert server.client.post("/feedback", json=rated).json()["result"]["question_kept"] is True
        finance = gap_groups(server)["finance"]
        assert finance["owner"]["owner_email"] == "jonas.berg@acme.example"
        (entry,) = [q for q in finance["questions"] if q["query_id"] == answer["query_id"]]
        assert (entry["kind"], entry["question"], entry["comment"]) == ("thumbs_down", MEAL, "Raised to EUR 50")
        listed = server.client.get("/insights/feedback", params={"tenant_id": "acme"}).json()["result"]["feedback"]
        assert listed[0]["comment"] == "Raised to EUR 50" and listed[0]["question"] == MEAL
        metrics = server.client.get("/metrics").text
        assert 'rag_feedback_total{rating="down",tag="finance",tenant="acme"}' in metrics


class TestKnowledgeGaps:
    def test_a_routed_question_shows_with_its_owner_within_a_second_and_is_published(self, server, routed_queue):
        answer = ask(server, ROUTED, ACME_HR)
        answered = time.monotonic()
        assert answer["action"] == "ROUTE" and answer["route_to"]["owner_email"] == "maria.lopez@acme.example"
        while True:
            hr = gap_groups(server).get("hr")
            if hr and any(q["query_id"] == answer["query_id"] for q in hr["questions"]):
                break
            assert time.monotonic() - answered < 1.0, "the routed question did not show within a second"
            time.sleep(0.05)
        assert time.monotonic() - answered < 1.0
        assert hr["owner"] == {
            "tag": "hr", "owner_user_id": "u-acme-maria", "owner_email": "maria.lopez@acme.example", "fallback": False,
        }  # fmt: skip
        entry = next(q for q in hr["questions"] if q["query_id"] == answer["query_id"])
        assert (entry["kind"], entry["question"]) == ("routed", ROUTED)
        globex = gap_groups(server, "globex")  # another tenant's view never shows it
        assert all(q["query_id"] != answer["query_id"] for group in globex.values() for q in group["questions"])
        properties, event = next_routed_event(routed_queue)
        assert properties.message_id == event["event_id"] == answer["query_id"]
        data = event["data"]
        assert (data["tenant_id"], data["tag"], data["owner_email"], data["question"]) == (
            "acme", "hr", "maria.lopez@acme.example", ROUTED,
        )  # fmt: skip
        metrics = server.client.get("/metrics").text
        assert 'rag_quality_answers_total{result="routed",tag="hr",tenant="acme"}' in metrics
        assert 'rag_routed_events_total{outcome="published"}' in metrics

    def test_a_changed_source_file_makes_its_document_stale(self, server, corpus):
        before = server.client.get("/documents", params={"tenant_id": "acme"}).json()["result"]
        travel = next(doc for doc in before["documents"] if doc["document_id"] == "acme-travel-policy")
        assert travel["stale"] == [] and travel["chunks"] >= 1 and travel["source"] == "travel-policy.txt"
        path = corpus / "acme" / "travel-policy.txt"
        original = path.read_bytes()
        try:
            path.write_bytes(original + b"\nTaxis are reimbursed up to EUR 80.\n")
            after = server.client.get("/documents", params={"tenant_id": "acme"}).json()["result"]
            stale = next(doc for doc in after["documents"] if doc["document_id"] == "acme-travel-policy")
            assert stale["stale"] == ["source_changed"] and after["stale"]["source_changed"] == 1
            view = server.client.get("/insights/gaps", params={"tenant_id": "acme"}).json()["result"]
            assert [doc["document_id"] for doc in view["stale_documents"]["documents"]] == ["acme-travel-policy"]
        finally:
            path.write_bytes(original)


@pytest.fixture(scope="module")
def key_server(tmp_path_factory):
    """``api_key`` mode on the sample corpus: an admin key, a reader key of acme, and globex's admin."""
    data_dir = tmp_path_factory.mktemp("console-keys") / "data"
    data_dir.mkdir(parents=True)
    keys_file = data_dir / "api_keys.json"
    keys = {
        "admin": key_store.register_key(keys_file, tenant_id="acme", tags=["hr", "finance", "all-staff"],
                                        permissions=["read", "admin"], label="console")[0],
        "reader": key_store.register_key(keys_file, tenant_id="acme", tags=["hr", "finance"], user_id="u-sam")[0],
        "globex": key_store.register_key(keys_file, tenant_id="globex", tags=["ops"], permissions=["admin"])[0],
    }  # fmt: skip
    env = {"SOURCEBOUND_AUTH_MODE": "api_key", "SOURCEBOUND_KEEP_UNANSWERED_QUESTIONS": "true"}
    with ApiServer(data_dir, env=env) as running:
        running.keys = keys
        yield running


CONSOLE_ROUTES = ("/documents", "/keys", "/tags", "/sources", "/insights/gaps", "/insights/feedback")


class TestConsoleRoutes:
    @pytest.mark.parametrize("path", CONSOLE_ROUTES)
    def test_only_an_admin_key_of_the_tenant_is_answered(self, key_server, path):
        client = key_server.client
        assert client.get(path).status_code == 401
        refused = client.get(path, headers=bearer(key_server.keys["reader"]))
        assert refused.status_code == 403 and "admin" in refused.json()["message"]
        other = client.get(path, params={"tenant_id": "globex"}, headers=bearer(key_server.keys["admin"]))
        assert other.status_code == 403
        answered = client.get(path, headers=bearer(key_server.keys["admin"]))
        assert answered.status_code == 200 and answered.json()["result"]["tenant_id"] == "acme", answered.text

    def test_documents_and_tags_of_the_tenant_only(self, key_server):
        admin = bearer(key_server.keys["admin"])
        documents = key_server.client.get("/documents", headers=admin).json()["result"]["documents"]
        assert documents and all(doc["document_id"].startswith("acme-") for doc in documents)
        tags = key_server.client.get("/tags", headers=admin).json()["result"]["tags"]
        assert {"tag": "hr", "owner_user_id": "u-acme-maria", "owner_email": "maria.lopez@acme.example"} in tags
        assert all(tag["owner_user_id"] is None or tag["owner_user_id"].startswith("u-acme-") for tag in tags)

    def test_keys_are_created_once_listed_without_tokens_and_revoked(self, key_server):
        client, admin = key_server.client, bearer(key_server.keys["admin"])
        created = client.post("/keys", json={"tags": ["hr"], "permissions": ["read"], "label": "bot"}, headers=admin)
        assert created.status_code == 200, created.text
        key = created.json()["result"]
        token = key.pop("token")
        assert client.post("/search/run", json={"query": "leave"}, headers=bearer(token)).status_code == 200
        listed = client.get("/keys", headers=admin).json()["result"]["keys"]
        assert key in listed and token not in json.dumps(listed)
        stronger = client.post("/keys", json={"tags": ["engineering"]}, headers=admin)
        assert stronger.status_code == 403 and "tags" in stronger.json()["message"]
        public = client.post("/keys", json={"tags": ["hr"], "permissions": ["public"]}, headers=admin)
        assert public.status_code == 403
        someone = client.post("/keys", json={"tags": ["hr"], "user_id": "u-eva"}, headers=admin)
        assert someone.status_code == 403 and "u-eva" in someone.json()["message"]
        globex_key = client.get("/keys", headers=bearer(key_server.keys["globex"])).json()["result"]["keys"][0]
        foreign = client.delete(f"/keys/{globex_key['key_id']}", headers=admin)
        assert foreign.status_code == 404
        assert client.delete(f"/keys/{key['key_id']}", headers=admin).json()["result"]["revoked"] is True
        deadline = time.monotonic() + 5  # the server re-reads the keys file when it changes
        while client.post("/search/run", json={"query": "leave"}, headers=bearer(token)).status_code != 401:
            assert time.monotonic() < deadline
            time.sleep(0.1)

    def test_feedback_belongs_to_the_key_that_asked(self, key_server):
        client = key_server.client
        reader, admin = bearer(key_server.keys["reader"]), bearer(key_server.keys["admin"])
        answer = client.post("/rag/run", json={"query": MEAL}, headers=reader).json()["result"]
        by_admin = client.post("/feedback", json={"query_id": answer["query_id"], "rating": "down"}, headers=admin)
        assert by_admin.status_code == 404
        by_reader = client.post("/feedback", json={"query_id": answer["query_id"], "rating": "down"}, headers=reader)
        assert by_reader.status_code == 200
        listed = client.get("/insights/feedback", headers=admin).json()["result"]["feedback"]
        assert [entry["query_id"] for entry in listed] == [answer["query_id"]]

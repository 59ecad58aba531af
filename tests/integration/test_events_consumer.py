"""
The RabbitMQ event consumer against a real broker and a real server (docs/events.md).

One private ``rabbitmq-server`` node serves the session (``support.rabbitmq``); each test has its own
exchange and queue on it and a server started with ``SOURCEBOUND_EVENTS_CONSUMER=true``. What an
event changed is read through ``POST /search/run`` and the real ``records.sqlite``.
"""

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from support.api_server import ApiServer
from support.events_support import (
    EXCHANGE,
    QUEUE,
    applied,
    consumer_env,
    dead_letters,
    index_events,
    queue_state,
    wait_for_consumer,
    wait_until,
)

from hayhooks_app.events.publisher import EventPublisher

pytestmark = [pytest.mark.integration, pytest.mark.slow]

READER = {"tenant_id": "acme", "user_tags": ["hr"]}
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _document(document_id: str, text: str, **extra) -> dict:
    return {"content": text, "tenant_id": "acme", "tags": ["hr"], "document_id": document_id, **extra}


def _found(server: ApiServer, query: str, **filters) -> set[str]:
    body = {"query": query, **READER, "k": 10, "search_mode": "keyword"}
    if filters:
        body["filters"] = filters
    response = server.client.post("/search/run", json=body)
    assert response.status_code == 200, response.text
    return {result["document_id"] for result in response.json()["result"]["results"]}


@pytest.fixture(scope="module")
def consuming(rabbitmq, tmp_path_factory):
    base = tmp_path_factory.mktemp("events")
    (base / "shared").mkdir()
    env = consumer_env(rabbitmq, tenants="acme", SOURCEBOUND_EVENTS_FILES_DIR=str(base / "shared"))
    with ApiServer(base / "data", env=env) as server:
        wait_for_consumer(rabbitmq.url, env[QUEUE])
        with EventPublisher(rabbitmq.url, env[EXCHANGE]) as publisher:
            yield server, publisher, env


def _wait_handled(server: ApiServer, *event_ids: str) -> dict:
    return wait_until(
        lambda: (rows := applied(server.data_dir)) and all(event_id in rows for event_id in event_ids) and rows,
        what=f"events {event_ids} handled",
    )


class TestEventsChangeTheIndex:
    def test_upsert_duplicate_taint_verify_and_delete_are_visible_in_search(self, consuming):
        server, publisher, _ = consuming
        text = "The zephyrine cafeteria serves lentil soup every Tuesday at noon."
        first = publisher.publish("document.upsert", _document("menu", text), occurred_at=T0)
        rows = _wait_handled(server, first)
        assert rows[first]["outcome"] == "applied" and rows[first]["details"]["status"] == "indexed"
        assert _found(server, "zephyrine lentil soup") == {"menu"}
        chunks = rows[first]["details"]["chunks"]
        points = server.client.get("/health").json()["store"]["points"]

        # The same event again (a duplicate publish) and the same content under a new id change nothing.
        publisher.publish("document.upsert", _document("menu", text), event_id=first, occurred_at=T0)
        again = publisher.publish("document.upsert", _document("menu", text), occurred_at=T0 + timedelta(seconds=1))
        rows = _wait_handled(server, again)
        assert rows[again]["outcome"] == "applied" and rows[again]["details"]["status"] == "unchanged"
        assert server.client.get("/health").json()["store"]["points"] == points
        assert [row["event_id"] for row in rows.values()].count(first) == 1
        assert sum(1 for event in index_events(server.data_dir) if event["event"] == "index") == 2

        taint = publisher.publish(
            "document.flags",
            {"tenant_id": "acme", "document_ids": ["menu"], "tainted": True, "reason": "qa"},
            occurred_at=T0 + timedelta(seconds=2),
        )
        _wait_handled(server, taint)
        assert _found(server, "zephyrine lentil soup") == set()
        assert _found(server, "zephyrine lentil soup", exclude_tainted=False) == {"menu"}
        verify = publisher.publish(
            "document.flags",
            {"tenant_id": "acme", "document_ids": ["menu"], "tainted": False, "verified": True},
            occurred_at=T0 + timedelta(seconds=3),
        )
        _wait_handled(server, verify)
        assert _found(server, "zephyrine lentil soup", verified_only=True) == {"menu"}

        delete = publisher.publish(
            "document.delete", {"tenant_id": "acme", "document_ids": ["menu"]}, occurred_at=T0 + timedelta(seconds=4)
        )
        rows = _wait_handled(server, delete)
        assert rows[delete]["details"]["chunks_removed"] == chunks
        assert _found(server, "zephyrine lentil soup", exclude_tainted=False) == set()

    def test_the_later_event_wins_whatever_the_delivery_order(self, consuming):
        server, publisher, _ = consuming
        newer = publisher.publish(
            "document.upsert",
            _document("rota", "The quillwort rota assigns Dana to the night shift."),
            occurred_at=T0 + timedelta(hours=2),
        )
        # Published after, but happened before: it must not overwrite the newer content.
        older = publisher.publish(
            "document.upsert",
            _document("rota", "The quillwort rota assigns Lee to the morning shift."),
            occurred_at=T0 + timedelta(hours=1),
        )
        rows = _wait_handled(server, newer, older)
        assert rows[newer]["outcome"] == "applied" and rows[older]["outcome"] == "superseded"
        assert _found(server, "quillwort Dana night") == {"rota"}
        assert _found(server, "quillwort Lee morning") <= {"rota"}
        response = server.client.post(
            "/search/run", json={"query": "quillwort rota shift", **READER, "k": 5, "search_mode": "keyword"}
        )
        snippets = " ".join(result["snippet"] for result in response.json()["result"]["results"])
        assert "Dana" in snippets and "Lee" not in snippets

    def test_a_documents_events_in_one_batch_apply_in_publish_order(self, consuming):
        server, publisher, _ = consuming
        steps = [
            ("document.upsert", _document("log", "The heliotrope log version one mentions copper.")),
            ("document.upsert", _document("log", "The heliotrope log version two mentions silver.")),
            ("document.delete", {"tenant_id": "acme", "document_ids": ["log"]}),
            ("document.upsert", _document("log", "The heliotrope log version three mentions cobalt.")),
            ("document.flags", {"tenant_id": "acme", "document_ids": ["log"], "tainted": True}),
        ]
        # Published back to back: the consumer takes them in one prefetched batch (or a few).
        ids = [
            publisher.publish(key, data, occurred_at=T0 + timedelta(days=1, seconds=n))
            for n, (key, data) in enumerate(steps)
        ]
        rows = _wait_handled(server, *ids)
        assert [rows[event_id]["outcome"] for event_id in ids] == ["applied"] * 5
        assert _found(server, "heliotrope cobalt") == set()  # tainted last
        response = server.client.post(
            "/search/run",
            json={"query": "heliotrope log", **READER, "k": 10, "search_mode": "keyword",
                  "filters": {"exclude_tainted": False}},
        )  # fmt: skip
        results = response.json()["result"]["results"]
        assert {result["document_id"] for result in results} == {"log"}
        snippets = " ".join(result["snippet"] for result in results)
        assert "cobalt" in snippets and "copper" not in snippets and "silver" not in snippets

    def test_task_validated_and_artifact_tainted_with_a_cascade(self, consuming):
        server, publisher, _ = consuming
        validated = publisher.publish(
            "task.validated",
            {"artifact_id": "art-7", "content": "Artifact seven: the marigold valve is torqued to 40 Nm.",
             "tenant_id": "acme", "tags": ["hr"]},
            occurred_at=T0,
        )  # fmt: skip
        _wait_handled(server, validated)
        assert _found(server, "marigold valve torqued") == {"art-7"}
        tainted = publisher.publish(
            "artifact.tainted",
            {"tenant_id": "acme", "artifact_ids": ["art-7"], "cascade_id": "cascade-42"},
            occurred_at=T0 + timedelta(seconds=1),
        )
        rows = _wait_handled(server, tainted)
        assert rows[tainted]["details"]["invalidated"] == 1 and rows[tainted]["details"]["cascade_id"] == "cascade-42"
        assert _found(server, "marigold valve torqued", exclude_tainted=False) == set()
        invalidations = [event for event in index_events(server.data_dir) if event["event"] == "invalidate"]
        assert invalidations[-1]["cascade_id"] == "cascade-42" and invalidations[-1]["reason"] == "upstream_taint"
        assert invalidations[-1]["key_id"] == "events"


class TestFileReferences:
    def test_a_file_under_the_files_dir_is_indexed_and_escapes_are_dead_lettered(self, consuming, rabbitmq, tmp_path):
        server, publisher, env = consuming
        shared = Path(env["SOURCEBOUND_EVENTS_FILES_DIR"])
        (shared / "guides").mkdir()
        (shared / "guides" / "parking.md").write_text("# Parking\n\nThe tamarack garage opens at 05:30 for staff.\n")
        (tmp_path / "outside.md").write_text("# Outside\n\nThe obsidian vault code is 1234.\n")
        (shared / "escape.md").symlink_to(tmp_path / "outside.md")
        fields = {"tenant_id": "acme", "tags": ["hr"]}
        good = publisher.publish(
            "document.upsert_file", {"file": "guides/parking.md", "document_id": "parking", **fields}, occurred_at=T0
        )
        escape = publisher.publish("document.upsert_file", {"file": "escape.md", "document_id": "esc", **fields})
        missing = publisher.publish("document.upsert_file", {"file": "nope.md", "document_id": "nope", **fields})
        rows = _wait_handled(server, good, escape, missing)
        assert rows[good]["outcome"] == "applied" and rows[good]["details"]["status"] == "indexed"
        assert _found(server, "tamarack garage staff") == {"parking"}
        assert rows[escape]["outcome"] == rows[missing]["outcome"] == "dead_lettered"
        assert "a symbolic link" in rows[escape]["details"]["detail"]
        assert "no such file" in rows[missing]["details"]["detail"]
        assert _found(server, "obsidian vault code", exclude_tainted=False) == set()
        letters = wait_until(lambda: dead_letters(rabbitmq.url, env[QUEUE]) or None)
        assert {letter["headers"]["x-sourcebound-event-id"] for letter in letters} <= {escape, missing}


class TestPoisonMessages:
    def test_poison_goes_to_the_dead_letter_queue_and_never_blocks(self, consuming, rabbitmq):
        server, publisher, env = consuming
        bad_json = publisher.publish("document.upsert", body=b'{"event_id": "bad-json", "data": ')
        missing_tags = publisher.publish(
            "document.upsert",
            {"content": "No tags here.", "tenant_id": "acme", "document_id": "untagged"},
            event_id="missing-tags",
        )
        foreign = publisher.publish(
            "document.upsert", {**_document("intruder", "Planted text."), "tenant_id": "globex"}, event_id="foreign"
        )
        reserved = publisher.publish(
            "document.upsert", _document("meta-doc", "Text.", meta={"tenant_id": "globex"}), event_id="reserved-meta"
        )
        unknown = publisher.publish("document.frobnicate", {"tenant_id": "acme"}, event_id="unknown-key")
        good = publisher.publish(
            "document.upsert", _document("after-poison", "The saffron printer is on floor nine."), occurred_at=T0
        )
        rows = _wait_handled(server, good, missing_tags, foreign, reserved, unknown)
        assert rows[good]["outcome"] == "applied"
        assert _found(server, "saffron printer floor") == {"after-poison"}
        letters = wait_until(lambda: dead_letters(rabbitmq.url, env[QUEUE]) or None, what="dead letters")
        while len(letters) < 5:
            letters += wait_until(lambda: dead_letters(rabbitmq.url, env[QUEUE]) or None, what="more dead letters")
        by_id = {letter["headers"].get("x-sourcebound-event-id"): letter for letter in letters}
        assert by_id[None]["headers"]["x-sourcebound-reason"] == "invalid" and bad_json  # no usable id in bad JSON
        assert by_id["missing-tags"]["headers"]["x-sourcebound-reason"] == "invalid"
        assert "data.tags" in by_id["missing-tags"]["headers"]["x-sourcebound-detail"]
        assert by_id["foreign"]["headers"]["x-sourcebound-reason"] == "unauthorised_tenant"
        assert by_id["reserved-meta"]["headers"]["x-sourcebound-reason"] == "invalid"
        assert by_id["unknown-key"]["headers"]["x-sourcebound-reason"] == "unknown_routing_key"
        assert by_id["foreign"]["routing_key"] == "document.upsert" and b'"globex"' in by_id["foreign"]["body"]
        assert all(rows[event_id]["outcome"] == "dead_lettered" for event_id in (missing_tags, foreign, unknown))
        # Nothing of the refused events reached the index, and the queue is empty: nothing is stuck.
        assert _found(server, "Planted text", exclude_tainted=False) == set()
        assert queue_state(rabbitmq.url, env[QUEUE])[0] == 0
        assert server.process.poll() is None
        exposition = server.client.get("/metrics").text
        assert 'rag_events_total{outcome="dead_lettered",routing_key="document.upsert"}' in exposition
        assert 'rag_events_total{outcome="dead_lettered",routing_key="other"}' in exposition

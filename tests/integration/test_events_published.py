"""
The events the service publishes (docs/events.md, "Published events"), received from a real RabbitMQ node.

A subscriber queue bound to ``embedding.*`` on the server's exchange receives ``embedding.completed`` after an
embed over HTTP and after a ``task.validated`` event, and ``embedding.invalidated`` after ``DELETE
/api/v1/embeddings/{id}``, a batch invalidation and an ``artifact.tainted`` event, which finds the artifact's
documents whatever their ``document_id``. Each message carries its ``event_id`` (also the AMQP ``message_id``);
a change made by a consumed event that is applied again publishes the same id. With the broker down, a change
still succeeds and its event waits in the outbox; once the broker is back the event arrives (at least once).
"""

import json
import sqlite3
import time
from datetime import UTC, datetime, timedelta

import pika
import pytest
from support.api_server import ApiServer
from support.events_support import EXCHANGE, QUEUE, applied, consumer_env, wait_for_consumer, wait_until
from support.rabbitmq import RabbitMQNode

from hayhooks_app.events.publisher import EventPublisher

pytestmark = [pytest.mark.integration, pytest.mark.slow]

T0 = datetime(2026, 1, 1, tzinfo=UTC)


class Subscriber:
    """A durable queue bound to ``embedding.*`` on the exchange; reads what arrived."""

    def __init__(self, url: str, exchange: str, queue: str) -> None:
        self.url, self.exchange, self.queue = url, exchange, queue
        with pika.BlockingConnection(pika.URLParameters(url)) as connection:
            channel = connection.channel()
            channel.exchange_declare(exchange, exchange_type="topic", durable=True)
            channel.queue_declare(queue, durable=True)
            channel.queue_bind(queue, exchange, routing_key="embedding.*")

    def drain(self) -> list[dict]:
        messages = []
        with pika.BlockingConnection(pika.URLParameters(self.url)) as connection:
            channel = connection.channel()
            while True:
                method, properties, body = channel.basic_get(self.queue, auto_ack=True)
                if method is None:
                    return messages
                messages.append(
                    {
                        "routing_key": method.routing_key,
                        "message_id": properties.message_id,
                        "persistent": properties.delivery_mode == 2,
                        **json.loads(body),
                    }
                )

    def wait_for(self, count: int, timeout: float = 60) -> list[dict]:
        received: list[dict] = []
        wait_until(lambda: received.extend(self.drain()) or len(received) >= count, timeout=timeout,
                   what=f"{count} published events")  # fmt: skip
        time.sleep(0.3)
        return received + self.drain()


def _env(node, **extra) -> dict[str, str]:
    return consumer_env(
        node, tenants="acme", SOURCEBOUND_EVENTS_PUBLISH="true", SOURCEBOUND_DEFAULT_TENANT="acme",
        SOURCEBOUND_DEFAULT_TAGS="hr", **extra,
    )  # fmt: skip


@pytest.fixture(scope="module")
def publishing(rabbitmq, tmp_path_factory):
    env = _env(rabbitmq)
    subscriber = Subscriber(rabbitmq.url, env[EXCHANGE], f"subscriber-{env[QUEUE]}")
    with ApiServer(tmp_path_factory.mktemp("published") / "data", env=env) as server:
        wait_for_consumer(rabbitmq.url, env[QUEUE])
        with EventPublisher(rabbitmq.url, env[EXCHANGE]) as publisher:
            yield server, subscriber, publisher


def _sources(server: ApiServer, query: str) -> list[str]:
    response = server.client.post("/api/v1/query", json={"query": query, "filters": {"exclude_tainted": False}})
    assert response.status_code == 200, response.text
    return [source["artifact_id"] for source in response.json()["sources"]]


class TestPublishedEvents:
    def test_embed_then_delete_publish_completed_and_invalidated(self, publishing):
        server, subscriber, _ = publishing
        subscriber.drain()
        body = {
            "content": "The heliotrope pump is rated for 12 bar at 60 degrees.",
            "metadata": {"artifact_id": "run/7_out", "provenance_id": "prov-7", "document_id": "pump-notes"},
        }
        embedded = server.client.post("/api/v1/embed", json=body)
        assert embedded.status_code == 200, embedded.text
        (completed,) = subscriber.wait_for(1)
        assert completed["routing_key"] == completed["type"] == "embedding.completed" and completed["persistent"]
        assert completed["message_id"] == completed["event_id"]
        data = completed["data"]
        assert (data["artifact_id"], data["status"], data["chunks"]) == ("run/7_out", "indexed", 1)
        assert (data["document_id"], data["provenance_id"], data["tenant_id"]) == ("pump-notes", "prov-7", "acme")
        # Embedding the same content again is still "indexed" (unchanged), and published again with a new id.
        assert server.client.post("/api/v1/embed", json=body).json()["changed"] is False
        (again,) = subscriber.wait_for(1)
        assert again["data"]["changed"] is False and again["data"]["chunks"] == 1
        assert again["event_id"] != completed["event_id"]

        deleted = server.client.delete("/api/v1/embeddings/run/7_out")
        assert deleted.status_code == 200, deleted.text
        assert deleted.json()["removed_chunks"] == 1 and _sources(server, "heliotrope pump rated") == []
        (invalidated,) = subscriber.wait_for(1)
        assert invalidated["routing_key"] == "embedding.invalidated"
        assert invalidated["data"]["artifact_ids"] == ["run/7_out"] and invalidated["data"]["chunks_removed"] == 1
        # An unknown artifact is a 404 and publishes nothing.
        assert server.client.delete("/api/v1/embeddings/run/7_out").status_code == 404
        time.sleep(1.5)
        assert subscriber.drain() == []

    def test_consumed_events_publish_with_ids_derived_from_theirs(self, publishing):
        server, subscriber, publisher = publishing
        subscriber.drain()
        validated = publisher.publish(
            "task.validated",
            {"artifact_id": "art-55", "document_id": "valve-doc", "tenant_id": "acme", "tags": ["hr"],
             "content": "Artifact fifty-five: the saffron valve opens at 3 bar."},
            occurred_at=T0,
        )  # fmt: skip
        (completed,) = subscriber.wait_for(1)
        assert completed["data"]["artifact_id"] == "art-55" and completed["data"]["document_id"] == "valve-doc"
        assert _sources(server, "saffron valve opens") == ["art-55"]
        # artifact.tainted names the artifact, not the document id: the document goes anyway.
        tainted = publisher.publish(
            "artifact.tainted", {"tenant_id": "acme", "artifact_id": "art-55", "cascade_id": "cascade-9"},
            occurred_at=T0 + timedelta(seconds=1),
        )  # fmt: skip
        (invalidated,) = subscriber.wait_for(1)
        assert invalidated["data"]["artifact_ids"] == ["art-55"] and invalidated["data"]["cascade_id"] == "cascade-9"
        assert invalidated["data"]["invalidated"] == 1 and _sources(server, "saffron valve opens") == []
        rows = wait_until(lambda: (found := applied(server.data_dir)) and tainted in found and found)
        assert rows[validated]["outcome"] == rows[tainted]["outcome"] == "applied"
        assert rows[tainted]["details"]["document_ids"] == ["valve-doc"]

    def test_batch_invalidation_publishes_even_when_nothing_was_there(self, publishing):
        server, subscriber, _ = publishing
        subscriber.drain()
        response = server.client.post(
            "/api/v1/embeddings/batch-invalidate",
            json={"artifact_ids": ["gone-1", "gone-2"], "reason": "upstream_taint", "cascade_id": "cascade-0"},
        )
        assert response.json() == {"invalidated": 0, "chunks_removed": 0, "cascade_id": "cascade-0",
                                   "not_found": ["gone-1", "gone-2"]}  # fmt: skip
        (event,) = subscriber.wait_for(1)
        assert event["data"]["cascade_id"] == "cascade-0" and event["data"]["not_found"] == ["gone-1", "gone-2"]


def _outbox_rows(data_dir) -> list[tuple]:
    with sqlite3.connect(data_dir / "event_outbox.sqlite") as connection:
        return connection.execute("SELECT event_id, routing_key FROM event_outbox").fetchall()


def test_events_wait_in_the_outbox_while_the_broker_is_down(tmp_path):
    node = RabbitMQNode(tmp_path / "broker", name="sbpublish").start()
    try:
        env = _env(node, SOURCEBOUND_EVENTS_CONSUMER="false")
        subscriber = Subscriber(node.url, env[EXCHANGE], "subscriber-outage")
        with ApiServer(tmp_path / "data", env=env) as server:
            body = {"content": "The juniper gate closes at dusk.", "metadata": {"artifact_id": "art-j"}}
            assert server.client.post("/api/v1/embed", json=body).status_code == 200
            (first,) = subscriber.wait_for(1)
            node.stop()
            # The broker is away: the change still succeeds; its event waits in the outbox.
            batch = {"artifact_ids": ["art-j"], "cascade_id": "cascade-outage"}
            response = server.client.post("/api/v1/embeddings/batch-invalidate", json=batch)
            assert response.status_code == 200 and response.json()["chunks_removed"] == 1
            ((waiting, routing_key),) = _outbox_rows(server.data_dir)
            assert routing_key == "embedding.invalidated"
            node.start()
            (event,) = subscriber.wait_for(1, timeout=90)
            assert event["data"]["cascade_id"] == "cascade-outage"
            assert event["event_id"] == event["message_id"] == waiting  # the outbox row's id, the idempotency key
            wait_until(lambda: _outbox_rows(server.data_dir) == [], what="the outbox emptied")
            assert first["data"]["artifact_id"] == "art-j"
    finally:
        node.stop()

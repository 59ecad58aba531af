"""
Faults of the event consumer with real processes (docs/events.md, "Delivery guarantees").

* The server consuming events is killed with SIGKILL in the middle of a batch and started again: every
  document ends with exactly its chunks (none lost, none doubled) and every event is recorded once.
* The broker is killed (SIGKILL) while the consumer is working through the queue and started again: the
  consumer reconnects by itself, what was not acknowledged is redelivered, nothing is doubled.
"""

import signal
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from support.api_server import ApiServer
from support.events_support import EXCHANGE, QUEUE, applied, consumer_env, queue_state, wait_for_consumer, wait_until
from support.rabbitmq import RabbitMQNode
from support.reliability_support import live_snapshot

from hayhooks_app.events.publisher import EventPublisher

pytestmark = [pytest.mark.integration, pytest.mark.slow]

T0 = datetime(2026, 3, 1, tzinfo=UTC)
LINES = 30  # several chunks per document


def _corpus(count: int, prefix: str) -> list[dict]:
    documents = []
    for number in range(count):
        text = " ".join(
            f"Record {prefix}{number} line {line}: pump {number} holds pressure step {line * 7 % 31}."
            for line in range(LINES)
        )
        documents.append({"content": text, "tenant_id": "acme", "tags": ["ops"], "document_id": f"{prefix}-{number}"})
    return documents


def _publish_all(publisher: EventPublisher, documents: list[dict]) -> list[str]:
    return [
        publisher.publish("document.upsert", document, occurred_at=T0 + timedelta(milliseconds=position))
        for position, document in enumerate(documents)
    ]


def _assert_exact_chunks(data_dir: Path, documents: list[dict], prefix: str) -> dict[str, int]:
    """Every document present once: chunk indexes 0..n-1 without repeats, every line of its text in them."""
    snapshot = live_snapshot(data_dir)
    counts = {}
    for document in documents:
        chunks = [
            chunk
            for chunk in snapshot.documents
            if chunk.meta.get("tenant_id") == "acme" and chunk.meta.get("document_id") == document["document_id"]
        ]
        indexes = sorted(int(chunk.meta["chunk_index"]) for chunk in chunks)
        assert indexes == list(range(len(indexes))) and indexes, f"{document['document_id']}: chunk indexes {indexes}"
        text = " ".join(chunk.content for chunk in chunks)
        number = document["document_id"].rsplit("-", 1)[1]
        missing = [line for line in range(LINES) if f"Record {prefix}{number} line {line}:" not in text]
        assert not missing, f"{document['document_id']}: lines {missing} lost"
        counts[document["document_id"]] = len(chunks)
    assert len({chunk.id for chunk in snapshot.documents}) == snapshot.points
    return counts


class TestConsumerKilled:
    def test_sigkill_mid_batch_then_restart_loses_and_doubles_nothing(self, rabbitmq, tmp_path):
        documents = _corpus(24, "k")
        env = consumer_env(rabbitmq, SOURCEBOUND_EVENTS_PREFETCH="6")
        data_dir = tmp_path / "data"
        server = ApiServer(data_dir, env=env).start()
        try:
            wait_for_consumer(rabbitmq.url, env[QUEUE])
            with EventPublisher(rabbitmq.url, env[EXCHANGE]) as publisher:
                event_ids = _publish_all(publisher, documents)
            # Kill once the first batch is recorded: the consumer is then inside the next batch.
            before_kill = wait_until(lambda: len(applied(data_dir)) >= 6 and len(applied(data_dir)), 300, 0.05)
            server.process.send_signal(signal.SIGKILL)
            server.process.wait(timeout=30)
        finally:
            server.stop()
        recorded = len(applied(data_dir))
        unacknowledged = wait_until(lambda: queue_state(rabbitmq.url, env[QUEUE])[0], 30)
        assert recorded < len(documents), "the kill came after the last batch"
        # The broker kept what was not acknowledged (an event is recorded before it is acknowledged).
        assert unacknowledged >= len(documents) - recorded

        with ApiServer(data_dir, env=env) as server:
            rows = wait_until(
                lambda: (rows := applied(data_dir)) and all(e in rows for e in event_ids) and rows, 600, 0.5
            )
            assert {rows[e]["outcome"] for e in event_ids} == {"applied"}
            statuses = [rows[e]["details"]["status"] for e in event_ids]
            # A redelivered event whose write landed before the kill finds its content unchanged.
            assert set(statuses) <= {"indexed", "unchanged"}
            assert queue_state(rabbitmq.url, env[QUEUE])[0] == 0
            counts = _assert_exact_chunks(data_dir, documents, "k")
            assert server.client.get("/health").json()["store"]["points"] == sum(counts.values())
            response = server.client.post(
                "/search/run",
                json={"query": "Record k23 line 4 pump 23", "tenant_id": "acme", "user_tags": ["ops"], "k": 3},
            )
            assert response.json()["result"]["results"][0]["document_id"] == "k-23"
        print(
            f"SIGKILL after {before_kill}/{len(documents)} events recorded; {unacknowledged} redelivered; "
            f"after restart: {statuses.count('indexed')} indexed, {statuses.count('unchanged')} unchanged "
            f"(written before the kill, not yet recorded); {sum(counts.values())} chunks, none doubled or lost"
        )


class TestBrokerRestart:
    def test_broker_restart_while_consuming_reconnects_and_redelivers(self, tmp_path):
        node = RabbitMQNode(tmp_path / "broker", name="sbrestart").start()
        try:
            documents = _corpus(16, "b")
            env = consumer_env(node, SOURCEBOUND_EVENTS_PREFETCH="4")
            data_dir = tmp_path / "data"
            with ApiServer(data_dir, env=env) as server:
                wait_for_consumer(node.url, env[QUEUE])
                with EventPublisher(node.url, env[EXCHANGE]) as publisher:
                    first_ids = _publish_all(publisher, documents[:12])
                before_stop = wait_until(lambda: len(applied(data_dir)) >= 2 and len(applied(data_dir)), 300, 0.05)
                node.kill()  # the broker crashes: no clean shutdown, the consumer's connection just drops
                stopped_with = len(applied(data_dir))
                assert stopped_with < 12, "the broker went down after the last batch"
                node.start()
                with EventPublisher(node.url, env[EXCHANGE]) as publisher:
                    later_ids = _publish_all(publisher, documents[12:])
                wait_for_consumer(node.url, env[QUEUE])
                rows = wait_until(
                    lambda: (rows := applied(data_dir)) and all(e in rows for e in first_ids + later_ids) and rows,
                    600,
                    0.5,
                )
                assert {rows[e]["outcome"] for e in first_ids + later_ids} == {"applied"}
                assert server.process.poll() is None
                counts = _assert_exact_chunks(data_dir, documents, "b")
                assert server.client.get("/health").json()["store"]["points"] == sum(counts.values())
                assert "reconnecting" in server.log_tail(400)
            print(
                f"broker killed after {before_stop}/12 events recorded ({stopped_with} when it was down); the "
                f"consumer reconnected and applied the rest and 4 published after the restart; "
                f"{sum(counts.values())} chunks, none doubled or lost"
            )
        finally:
            node.stop()

"""
Faults of the event consumer with real processes (docs/events.md, "Delivery guarantees").

* The server consuming events is killed with SIGKILL in the middle of a batch and started again: every
  document ends with exactly its chunks (none lost, none doubled) and every event is recorded once.
* An event whose every delivery is cut short by SIGKILL is dead-lettered once its attempts are spent.
* ``python -m hayhooks_app events`` consumes on its own and stops cleanly on SIGTERM.
* The broker is killed (SIGKILL) while the consumer is working through the queue and started again: the
  consumer reconnects by itself, what was not acknowledged is redelivered, nothing is doubled.
"""

import os
import signal
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from support.api_server import REPO, ApiServer
from support.events_support import (
    EXCHANGE,
    QUEUE,
    applied,
    attempts,
    consumer_env,
    dead_letters,
    queue_state,
    wait_for_consumer,
    wait_until,
)
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


class TestRetriesAreBounded:
    def test_an_event_that_kills_the_consumer_each_time_is_dead_lettered(self, rabbitmq, tmp_path):
        env = consumer_env(rabbitmq, SOURCEBOUND_EVENTS_PREFETCH="1", SOURCEBOUND_EVENTS_MAX_ATTEMPTS="1")
        data_dir = tmp_path / "data"
        # Large enough that embedding it takes a while: the kill lands while it is being applied.
        big = {
            "content": " ".join(f"Heavy line {n}: turbine {n % 13} logged {n * 7 % 101} rpm." for n in range(4000)),
            "tenant_id": "acme", "tags": ["ops"], "document_id": "heavy",
        }  # fmt: skip
        server = ApiServer(data_dir, env=env).start()
        try:
            wait_for_consumer(rabbitmq.url, env[QUEUE])
            with EventPublisher(rabbitmq.url, env[EXCHANGE]) as publisher:
                heavy = publisher.publish("document.upsert", big, occurred_at=T0)
                after = publisher.publish("document.upsert", _corpus(1, "a")[0], occurred_at=T0)
            wait_until(lambda: attempts(data_dir).get(heavy) == 1, 120, 0.02, "the first attempt")
            server.process.send_signal(signal.SIGKILL)
            server.process.wait(timeout=30)
            assert heavy not in applied(data_dir)
        finally:
            server.stop()
        with ApiServer(data_dir, env=env):
            rows = wait_until(lambda: (rows := applied(data_dir)) and {heavy, after} <= set(rows) and rows, 300, 0.5)
            assert rows[heavy]["outcome"] == "dead_lettered"
            assert rows[heavy]["details"]["reason"] == "retries_exhausted"
            assert rows[after]["outcome"] == "applied"  # the queue moved on
            letters = dead_letters(rabbitmq.url, env[QUEUE])
            assert [letter["headers"]["x-sourcebound-reason"] for letter in letters] == ["retries_exhausted"]
            assert "1 attempts failed" in letters[0]["headers"]["x-sourcebound-detail"]
        print("an event whose delivery was cut by SIGKILL, with SOURCEBOUND_EVENTS_MAX_ATTEMPTS=1: dead-lettered")


class TestStandaloneConsumer:
    def test_events_command_consumes_and_stops_on_sigterm(self, rabbitmq, tmp_path):
        data_dir = tmp_path / "data"
        env = consumer_env(rabbitmq, SOURCEBOUND_DATA_DIR=str(data_dir))
        env.pop("SOURCEBOUND_EVENTS_CONSUMER")
        process_env = {k: v for k, v in os.environ.items() if not k.startswith(("SOURCEBOUND_", "HAYHOOKS_"))}
        process_env.update(env, PYTHONUNBUFFERED="1")
        documents = _corpus(3, "s")
        log = tmp_path / "events.log"
        with open(log, "wb") as output:
            process = subprocess.Popen(
                [sys.executable, "-m", "hayhooks_app", "events"], cwd=REPO, env=process_env, stdout=output,
                stderr=subprocess.STDOUT,
            )  # fmt: skip
        try:
            wait_for_consumer(rabbitmq.url, env[QUEUE], timeout=180)
            with EventPublisher(rabbitmq.url, env[EXCHANGE]) as publisher:
                ids = _publish_all(publisher, documents)
                ids.append(
                    publisher.publish(
                        "document.delete", {"tenant_id": "acme", "document_ids": ["s-2"]}, occurred_at=T0 + timedelta(1)
                    )
                )
            wait_until(lambda: set(ids) <= set(applied(data_dir)), 300, 0.3, "the command to apply the events")
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=60) == 0, log.read_text()
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
        assert "consuming" in log.read_text()
        # A server on the same data dir (after the consumer let go of the store) sees what the events did.
        with ApiServer(data_dir, env={"SOURCEBOUND_BOOTSTRAP_CORPUS": "false"}) as server:
            reader = {"tenant_id": "acme", "user_tags": ["ops"], "k": 10, "search_mode": "keyword"}
            found = server.client.post("/search/run", json={"query": "Record pump holds pressure", **reader})
            assert {result["document_id"] for result in found.json()["result"]["results"]} == {"s-0", "s-1"}

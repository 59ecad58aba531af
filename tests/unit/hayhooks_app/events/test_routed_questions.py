"""
RoutedQuestionPublisher without a broker: the outcomes of a publish (published, unroutable, failed after retries,
dropped when the queue is full) and that a request never waits. The real broker: tests/integration/
test_feedback_and_gaps.py.
"""

import threading
import time

import pika.exceptions
import pytest

from hayhooks_app.events.routed_questions import ROUTING_KEY, RoutedQuestionPublisher, publish_routed_questions
from hayhooks_app.events.settings import EventSettings


class FakePublisher:
    """Records publishes; raises what the test asks for."""

    def __init__(self, errors):
        self.errors = errors
        self.published = []
        self.closed = False
        self.connection = self

    def process_data_events(self, _time_limit):
        return None

    def publish(self, routing_key, data, *, event_id):
        if self.errors:
            raise self.errors.pop(0)
        self.published.append((routing_key, data, event_id))

    def close(self):
        self.closed = True


def publisher_with(errors, **options):
    outcomes, connections = [], []

    def connect(url, exchange):
        connection = FakePublisher(errors)
        connections.append(connection)
        return connection

    publisher = RoutedQuestionPublisher(
        "amqp://x", "task.events", on_outcome=outcomes.append, connect=connect, **options
    )
    return publisher, outcomes, connections


def wait_for(condition, timeout=5.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


@pytest.mark.unit
class TestRoutedQuestionPublisher:
    def test_publishes_with_the_query_id_as_event_id(self):
        publisher, outcomes, connections = publisher_with([])
        publisher({"query_id": "q-1", "tenant_id": "acme"})
        wait_for(lambda: outcomes == ["published"])
        assert connections[0].published == [(ROUTING_KEY, {"query_id": "q-1", "tenant_id": "acme"}, "q-1")]
        publisher.close()
        assert connections[0].closed

    def test_unroutable_is_counted_not_retried(self):
        publisher, outcomes, connections = publisher_with([pika.exceptions.UnroutableError([])])
        publisher({"query_id": "q-1"})
        wait_for(lambda: outcomes == ["unroutable"])
        assert len(connections) == 1
        publisher.close()

    def test_a_broken_connection_is_reopened_and_a_lasting_failure_counted(self):
        errors = [pika.exceptions.AMQPConnectionError("down")]
        publisher, outcomes, connections = publisher_with(errors)
        publisher({"query_id": "q-1"})
        wait_for(lambda: outcomes == ["published"])
        assert len(connections) == 2 and connections[0].closed  # reconnected after the failure
        publisher.close()
        failing = [pika.exceptions.AMQPConnectionError("down")] * 3
        publisher, outcomes, _ = publisher_with(failing, attempts=3)
        publisher({"query_id": "q-2"})
        wait_for(lambda: outcomes == ["failed"])
        publisher.close()

    def test_a_full_queue_drops_without_blocking_the_request(self):
        release = threading.Event()

        def stuck(url, exchange):
            release.wait(5)
            return FakePublisher([])

        outcomes = []
        publisher = RoutedQuestionPublisher("amqp://x", "e", on_outcome=outcomes.append, connect=stuck, max_queued=1)
        started = time.monotonic()
        for number in range(5):
            publisher({"query_id": f"q-{number}"})
        assert time.monotonic() - started < 0.5
        assert outcomes.count("dropped") >= 3
        release.set()
        publisher.close()

    def test_the_server_publishes_only_with_a_configured_broker(self):
        class Container:
            gaps = type("Gaps", (), {"publish": None})()

        container = Container()
        assert publish_routed_questions(container, EventSettings()) is None and container.gaps.publish is None
        settings = EventSettings(url="amqp://guest:guest@127.0.0.1:1/%2F", broker_configured=True)
        publisher = publish_routed_questions(container, settings)
        assert container.gaps.publish is publisher
        publisher.close(timeout=1)

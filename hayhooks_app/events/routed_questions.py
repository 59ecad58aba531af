"""
``question.routed`` events (docs/events.md, "Published events"): every routed answer is published to the events
exchange when the broker is configured (``SOURCEBOUND_EVENTS_URL``), so an owner's tool can pick the question up.

Publishing never slows or fails an answer: the request queues the event (at most ``max_queued``; more are
dropped and counted) and one background thread publishes it, persistent and confirmed, with the ``query_id`` as
its ``event_id`` (a consumer can de-duplicate). A broker that is down is retried with back-off; an event still
unpublished after ``attempts`` tries is counted as ``failed``; one no queue is bound for as ``unroutable``.

Usage:

```python
from hayhooks_app.events.routed_questions import RoutedQuestionPublisher, publish_routed_questions

publisher = RoutedQuestionPublisher("amqp://guest:guest@127.0.0.1:5672/%2F", "task.events")
publisher({"query_id": "5f0c...", "tenant_id": "acme", "tag": "hr", ...})
publisher.close()

handle = publish_routed_questions(container)   # the server's: None unless SOURCEBOUND_EVENTS_URL is set
```
"""

import logging
import queue
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pika.exceptions

from hayhooks_app.events.publisher import EventPublisher
from hayhooks_app.events.settings import EventSettings
from hayhooks_app.metrics import metrics

if TYPE_CHECKING:  # the container imports this package's consumer; the type is all that is needed here
    from hayhooks_app.container import ServiceContainer

logger = logging.getLogger(__name__)

ROUTING_KEY = "question.routed"
_IDLE_S = 10.0  # how often an idle connection services its heartbeats


class RoutedQuestionPublisher:
    """
    :param url: AMQP URL of the broker.
    :param exchange: The topic exchange (the consumer's, ``SOURCEBOUND_EVENTS_EXCHANGE``).
    :param on_outcome: Told each event's outcome (``published``, ``unroutable``, ``failed``, ``dropped``).
    :param max_queued: Events waiting at most; more are dropped.
    :param attempts: Tries per event before it is counted as failed.
    :param connect: Opens a publisher (tests replace it).
    """

    def __init__(
        self,
        url: str,
        exchange: str,
        *,
        on_outcome: Callable[[str], None] | None = None,
        max_queued: int = 1000,
        attempts: int = 5,
        connect: Callable[[str, str], EventPublisher] = EventPublisher,
    ) -> None:
        self.url = url
        self.exchange = exchange
        self.on_outcome = on_outcome or (lambda outcome: None)
        self.attempts = attempts
        self._connect = connect
        self._queue: queue.Queue[dict[str, Any] | None] = queue.Queue(max_queued)
        self._publisher: EventPublisher | None = None
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="routed-question-publisher", daemon=True)
        self._thread.start()

    def __call__(self, event: dict[str, Any]) -> None:
        """Queue one event (never blocks: a full queue drops it)."""
        try:
            self._queue.put_nowait(dict(event))
        except queue.Full:
            logger.warning("question.routed queue full: event for query %s dropped.", event.get("query_id"))
            self.on_outcome("dropped")

    def _run(self) -> None:
        while True:
            try:
                event = self._queue.get(timeout=_IDLE_S)
            except queue.Empty:
                self._keep_alive()
                continue
            if event is None:
                return
            self.on_outcome(self._publish(event))

    def _keep_alive(self) -> None:
        if self._publisher is None:
            return
        try:
            self._publisher.connection.process_data_events(0)
        except pika.exceptions.AMQPError:
            self._disconnect()

    def _publish(self, event: dict[str, Any]) -> str:
        delay = 0.2
        for attempt in range(1, self.attempts + 1):
            try:
                if self._publisher is None:
                    self._publisher = self._connect(self.url, self.exchange)
                self._publisher.publish(ROUTING_KEY, event, event_id=str(event["query_id"]))
                return "published"
            except pika.exceptions.UnroutableError:
                logger.info("question.routed for query %s: no queue is bound for it.", event.get("query_id"))
                return "unroutable"
            except (pika.exceptions.AMQPError, OSError) as error:
                self._disconnect()
                logger.warning("Publishing question.routed failed (attempt %d): %s", attempt, error)
                if attempt == self.attempts or self._stopping.wait(delay):
                    break
                delay = min(delay * 2, 5.0)
        return "failed"

    def _disconnect(self) -> None:
        publisher, self._publisher = self._publisher, None
        if publisher is not None:
            try:
                publisher.close()
            except (pika.exceptions.AMQPError, OSError):
                pass

    def close(self, timeout: float = 10.0) -> None:
        """Publish what is queued (within ``timeout``), then close the connection."""
        try:
            self._queue.put(None, timeout=timeout)
        except queue.Full:
            self._stopping.set()
        self._thread.join(timeout)
        self._stopping.set()
        self._disconnect()


def publish_routed_questions(
    container: "ServiceContainer", settings: EventSettings | None = None
) -> RoutedQuestionPublisher | None:
    """
    Give the container's knowledge gaps a ``question.routed`` publisher when ``SOURCEBOUND_EVENTS_URL`` is set
    (the exchange is the consumer's); ``None`` otherwise. Close the publisher with the server.
    """
    settings = settings or EventSettings.from_env()
    if not settings.broker_configured:
        return None
    publisher = RoutedQuestionPublisher(
        settings.url, settings.exchange, on_outcome=lambda outcome: metrics.routed_events.labels(outcome).inc()
    )
    container.gaps.publish = publisher
    logger.info("Routed questions are published as %s events to %s.", ROUTING_KEY, settings.exchange)
    return publisher

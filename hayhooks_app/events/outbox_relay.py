"""
The relay of published events: takes the oldest rows of the event outbox
(:class:`components.stores.event_outbox.EventOutbox`) and publishes them to the consumer's broker and exchange
(``SOURCEBOUND_EVENTS_URL``, ``SOURCEBOUND_EVENTS_EXCHANGE``) with publisher confirms and persistent delivery,
removing each row only after the broker confirmed it (docs/events.md, "Published events").

* At least once: a row leaves the outbox after its confirmation; a crash, a lost connection or a nack keeps it,
  and it is published again later with the same ``event_id`` (also the AMQP ``message_id``), which subscribers
  use to drop duplicates.
* Published after the change is durable: rows are added by the request service once the store holds the change.
* Never blocks a request: the relay is a thread; while the broker is away rows wait in the outbox and the relay
  retries with backoff (0.5 s doubling to 10 s).
* Messages are not ``mandatory``: an event nobody has bound a queue for yet is dropped by the exchange, as with
  any topic subscription; bind the subscriber's queue (``embedding.*``) before the events it needs.

Usage:

```python
from hayhooks_app.events.outbox_relay import start_relay

relay = start_relay(container)        # None unless SOURCEBOUND_EVENTS_PUBLISH=true
...
if relay is not None:
    relay.stop()
```
"""

import logging
import threading
from typing import TYPE_CHECKING, Any

import pika
from pika.exceptions import AMQPChannelError, AMQPConnectionError, NackError, UnroutableError
from prometheus_client import Counter

from hayhooks_app.events.settings import EventSettings
from hayhooks_app.metrics import metrics

if TYPE_CHECKING:
    from components.stores.event_outbox import EventOutbox
    from hayhooks_app.container import ServiceContainer

logger = logging.getLogger(__name__)

BATCH_ROWS = 100
POLL_SECONDS = 1.0
PUBLISH_ERRORS = (AMQPConnectionError, AMQPChannelError, NackError, UnroutableError, OSError)
EVENTS_PUBLISHED = Counter(
    "rag_events_published",
    "Events the broker confirmed, by routing key (docs/events.md, Published events).",
    ["routing_key"],
    registry=metrics.registry,
)


class OutboxRelay:
    """
    Publish an outbox's rows until stopped.

    :param outbox: The event outbox.
    :param settings: The broker URL and exchange (the consumer's).
    """

    def __init__(self, outbox: "EventOutbox", settings: EventSettings) -> None:
        self.outbox = outbox
        self.settings = settings
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._connection: pika.BlockingConnection | None = None
        self._channel: Any = None
        self.published = 0
        outbox.on_added(self._wake.set)

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()

    def run(self) -> None:
        """Publish what the outbox holds, then wait for more (or the next poll); reconnect with backoff."""
        failures = 0
        while not self._stop.is_set():
            self._wake.clear()
            try:
                if self.drain():
                    failures = 0
                    continue  # there may be more
            except PUBLISH_ERRORS as error:
                failures += 1
                delay = min(10.0, 0.5 * 2 ** min(failures - 1, 5))
                logger.warning("Publishing events failed (%s); retrying in %.1f s.", error or type(error), delay)
                self._disconnect()
                self._stop.wait(delay)
                continue
            except Exception:  # the outbox database, a bug: keep relaying, the rows stay
                failures += 1
                logger.exception("The event relay failed; retrying.")
                self._disconnect()
                self._stop.wait(min(10.0, 0.5 * 2 ** min(failures - 1, 5)))
                continue
            self._wake.wait(POLL_SECONDS)
        self._disconnect()

    def drain(self) -> int:
        """Publish one batch of waiting rows; returns how many were confirmed."""
        rows = self.outbox.claim(limit=BATCH_ROWS)
        if not rows:
            return 0
        done = 0
        try:
            channel = self._connect()
            for row in rows:
                channel.basic_publish(
                    self.settings.exchange,
                    row["routing_key"],
                    row["body"].encode("utf-8"),
                    pika.BasicProperties(
                        content_type="application/json",
                        delivery_mode=pika.DeliveryMode.Persistent,
                        message_id=row["event_id"],
                        type=row["routing_key"],
                    ),
                )  # returns once the broker confirmed it (confirm_delivery); raises on a nack
                self.outbox.remove([row["event_id"]])
                EVENTS_PUBLISHED.labels(row["routing_key"]).inc()
                done += 1
        except BaseException as error:
            self.outbox.release([row["event_id"] for row in rows[done:]], f"{type(error).__name__}: {error}")
            raise
        self.published += done
        return done

    def _connect(self) -> Any:
        if self._channel is not None and self._channel.is_open:
            return self._channel
        self._disconnect()
        self._connection = pika.BlockingConnection(pika.URLParameters(self.settings.url))
        channel = self._connection.channel()
        channel.exchange_declare(self.settings.exchange, exchange_type="topic", durable=True)
        channel.confirm_delivery()
        self._channel = channel
        return channel

    def _disconnect(self) -> None:
        connection, self._connection, self._channel = self._connection, None, None
        if connection is not None and connection.is_open:
            try:
                connection.close()
            except PUBLISH_ERRORS:
                pass


class RelayThread:
    """A relay running in a daemon thread."""

    def __init__(self, relay: OutboxRelay) -> None:
        self.relay = relay
        self.thread = threading.Thread(target=relay.run, name="sourcebound-event-relay", daemon=True)

    def stop(self, timeout: float = 30.0) -> None:
        self.relay.stop()
        self.thread.join(timeout)


def start_relay(container: "ServiceContainer", settings: EventSettings | None = None) -> RelayThread | None:
    """Start the relay thread when ``SOURCEBOUND_EVENTS_PUBLISH`` is true (the container's outbox)."""
    outbox = container.outbox
    if outbox is None:
        return None
    settings = settings or EventSettings.from_env()
    handle = RelayThread(OutboxRelay(outbox, settings))
    handle.thread.start()
    logger.info("Publishing index events to the exchange %s.", settings.exchange)
    return handle

"""
The RabbitMQ event consumer: at-least-once, idempotent, ordered per document (docs/events.md).

For each batch of up to ``prefetch`` deliveries, in delivery order:

1. parse and authorise (:func:`hayhooks_app.events.messages.parse_event`); a message that can never
   succeed is copied to the dead-letter queue with the reason in its headers, then acknowledged;
2. skip an event whose id is already in ``applied_events`` (a redelivery or a duplicate);
3. skip, as ``superseded``, a document an event published later has already changed (the later wins);
4. apply it through the service container, consecutive upserts of distinct documents in one
   indexing run; a failure is retried in place with exponential backoff (so a document's later
   events wait), up to ``max_attempts`` deliveries counted across restarts, then dead-lettered;
5. record the event (``applied_events``, the document positions) and only then acknowledge it:
   the change is already durable in the store (its write-ahead log), so a crash before the
   acknowledgement means a redelivery, which the content hash and the event id make harmless.

Connection losses (a broker restart) end the batch without acknowledging; the consumer reconnects
with backoff and the broker redelivers what was not acknowledged.

Usage:

```python
from hayhooks_app.events.consumer import EventConsumer
from hayhooks_app.events.settings import EventSettings
from hayhooks_app.container import get_container

consumer = EventConsumer(get_container(), EventSettings.from_env())
consumer.run()             # until consumer.stop() (from another thread or a signal handler)
```
"""

import logging
import threading
import time
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

import pika
from pika.adapters.blocking_connection import BlockingChannel
from pika.exceptions import AMQPChannelError, AMQPConnectionError, ChannelClosed, ConnectionClosed, StreamLostError
from prometheus_client import Counter

from components.core.access_rule import WriteRule
from components.core.document_identity import IndexingValidationError
from components.core.errors import WriteForbiddenError
from components.runtime.files_beneath import UnsafeFileError, read_file_beneath
from components.services.document_lifecycle import LifecycleError
from hayhooks_app.container import ServiceContainer
from hayhooks_app.events.messages import ROUTING_KEYS, Command, PoisonMessage, parse_event
from hayhooks_app.events.settings import EventSettings
from hayhooks_app.metrics import metrics

logger = logging.getLogger(__name__)

REASON_HEADER = "x-sourcebound-reason"
DETAIL_HEADER = "x-sourcebound-detail"
BROKER_ERRORS = (AMQPConnectionError, AMQPChannelError, ConnectionClosed, ChannelClosed, StreamLostError)
# Input the services refuse is permanent: retrying cannot help.
PERMANENT_ERRORS = (IndexingValidationError, LifecycleError, WriteForbiddenError)
# On the service's registry, so GET /metrics of a server running the consumer shows it.
EVENTS_HANDLED = Counter(
    "rag_events",
    "Events handled by routing key and outcome (applied, superseded, duplicate, dead_lettered).",
    ["routing_key", "outcome"],
    registry=metrics.registry,
)


def _count(routing_key: str, outcome: str) -> None:
    EVENTS_HANDLED.labels(routing_key if routing_key in ROUTING_KEYS else "other", outcome).inc()


@dataclass
class Delivery:
    tag: int
    routing_key: str
    body: bytes


class BrokerLost(Exception):
    """The connection or channel closed while handling a batch; what was not acknowledged is redelivered."""


class EventConsumer:
    """
    Consume ``settings.queue`` into the container's index.

    :param container: The service container (its indexing service, store and records).
    :param settings: The event settings.
    """

    def __init__(self, container: ServiceContainer, settings: EventSettings):
        self.container = container
        self.settings = settings
        self._stop = threading.Event()
        self.connected = threading.Event()
        self.handled = 0

    def stop(self) -> None:
        """Finish the current batch and return from :meth:`run`."""
        self._stop.set()

    # ------------------------------------------------------------------ connection

    def declare(self, channel: BlockingChannel) -> None:
        """The exchange, the queue and its bindings, and the dead-letter exchange and queue (all durable)."""
        settings = self.settings
        channel.exchange_declare(settings.exchange, exchange_type="topic", durable=True)
        channel.exchange_declare(settings.dead_letter_exchange, exchange_type="fanout", durable=True)
        channel.queue_declare(settings.dead_letter_queue, durable=True)
        channel.queue_bind(settings.dead_letter_queue, settings.dead_letter_exchange)
        # Messages the broker itself dead-letters (rejections, expiry) reach the same queue.
        channel.queue_declare(
            settings.queue, durable=True, arguments={"x-dead-letter-exchange": settings.dead_letter_exchange}
        )
        for routing_key in ROUTING_KEYS:
            channel.queue_bind(settings.queue, settings.exchange, routing_key=routing_key)
        # Unknown document.* keys reach the queue too, to be dead-lettered with a reason rather than lost.
        channel.queue_bind(settings.queue, settings.exchange, routing_key="document.*")

    def _connect(self) -> tuple[pika.BlockingConnection, BlockingChannel]:
        parameters = pika.URLParameters(self.settings.url)
        # Heartbeats are answered only between batches: allow a slow batch (embedding on a busy CPU).
        parameters.heartbeat = max(parameters.heartbeat or 0, 600)
        parameters.blocked_connection_timeout = 300
        connection = pika.BlockingConnection(parameters)
        channel = connection.channel()
        channel.confirm_delivery()  # a dead-lettered copy is confirmed by the broker before the original is acked
        self.declare(channel)
        channel.basic_qos(prefetch_count=self.settings.prefetch)
        return connection, channel

    def run(self) -> None:
        """Consume until :meth:`stop`; reconnect with backoff whenever the broker goes away."""
        failures = 0
        while not self._stop.is_set():
            connection = None
            try:
                connection, channel = self._connect()
                failures = 0
                logger.info("Consuming events from %s (queue %s).", self.settings.exchange, self.settings.queue)
                self.connected.set()
                self._consume(connection, channel)
            except (*BROKER_ERRORS, BrokerLost, OSError) as error:
                self.connected.clear()
                failures += 1
                delay = min(10.0, 0.5 * 2 ** min(failures - 1, 5))
                logger.warning("Event broker unavailable (%s); reconnecting in %.1f s.", error or type(error), delay)
                self._stop.wait(delay)
            except Exception:
                # Anything else (the records database, a bug) must not end the consumer: the broker
                # redelivers what was not acknowledged, and the attempt count bounds a repeating failure.
                self.connected.clear()
                failures += 1
                delay = min(10.0, 0.5 * 2 ** min(failures - 1, 5))
                logger.exception("The event consumer failed; reconnecting in %.1f s.", delay)
                self._stop.wait(delay)
            finally:
                if connection is not None and connection.is_open:
                    try:
                        connection.close()
                    except BROKER_ERRORS:
                        pass
        self.connected.clear()

    def _consume(self, connection: pika.BlockingConnection, channel: BlockingChannel) -> None:
        buffer: list[Delivery] = []

        def receive(_channel, method, _properties, body: bytes) -> None:
            buffer.append(Delivery(method.delivery_tag, method.routing_key, body))

        channel.basic_consume(self.settings.queue, on_message_callback=receive)
        while not self._stop.is_set():
            before = len(buffer)
            connection.process_data_events(time_limit=self.settings.batch_wait_s or 0.05)
            arrived = len(buffer) > before
            if buffer and (len(buffer) >= self.settings.prefetch or not arrived):
                batch = list(buffer)
                buffer.clear()
                self.handle_batch(connection, channel, batch)

    # ------------------------------------------------------------------ a batch

    def handle_batch(
        self, connection: pika.BlockingConnection, channel: BlockingChannel, batch: list[Delivery]
    ) -> None:
        """Handle deliveries in order (see the module doc); each ends acknowledged (unacknowledged on a crash)."""
        records = self.container.records
        group: list[tuple[Delivery, Command]] = []
        for delivery in batch:
            try:
                command = parse_event(
                    delivery.routing_key, delivery.body, self.settings.tenants, self.settings.allow_public
                )
            except PoisonMessage as poison:
                if poison.event_id and records.event_outcome(poison.event_id) is not None:
                    self._ack(channel, delivery)  # already handled (a redelivery after a crash)
                    _count(delivery.routing_key, "duplicate")
                    continue
                self._dead_letter(channel, delivery, poison)
                continue
            if any(queued.event_id == command.event_id for _, queued in group):
                self._apply(connection, channel, group)  # the first copy is handled (and recorded) first
                group = []
            if records.event_outcome(command.event_id) is not None:
                self._ack(channel, delivery)
                _count(delivery.routing_key, "duplicate")
                continue
            if command.kind == "upsert" and not any(
                queued.tenant_id == command.tenant_id and queued.document_ids == command.document_ids
                for _, queued in group
            ):
                group.append((delivery, command))
                continue
            self._apply(connection, channel, group)
            group = []
            if command.kind == "upsert":
                group = [(delivery, command)]
            else:
                self._apply(connection, channel, [(delivery, command)])
        self._apply(connection, channel, group)

    def _apply(
        self, connection: pika.BlockingConnection, channel: BlockingChannel, items: list[tuple[Delivery, Command]]
    ) -> None:
        """Apply a unit (one command, or upserts of distinct documents) with bounded retries."""
        records = self.container.records
        attempt = 0
        while items:
            attempt += 1
            pending = []
            for delivery, command in items:
                attempts = records.count_event_attempt(command.event_id)
                if attempts > self.settings.max_attempts:
                    last = command.last_error or "a crash or an unknown failure"
                    poison = PoisonMessage(
                        "retries_exhausted",
                        f"{attempts - 1} attempts failed (SOURCEBOUND_EVENTS_MAX_ATTEMPTS); last: {last}",
                        command.event_id,
                        command.tenant_id,
                    )
                    self._dead_letter(channel, delivery, poison)
                else:
                    pending.append((delivery, command))
            if not pending:
                return
            try:
                outcomes = self._execute([command for _, command in pending])
            except PERMANENT_ERRORS as error:
                if len(pending) > 1:  # find which one: apply each alone
                    for item in pending:
                        self._apply(connection, channel, [item])
                    return
                delivery, command = pending[0]
                self._dead_letter(
                    channel, delivery, PoisonMessage("invalid", str(error), command.event_id, command.tenant_id)
                )
                return
            except Exception as error:  # the store, a model or the records: transient until the bound
                logger.warning("Applying %d event(s) failed (attempt %d): %s", len(pending), attempt, error)
                for _, command in pending:
                    command.last_error = f"{type(error).__name__}: {error}"
                items = pending
                self._sleep(connection, self.settings.retry_delay(attempt))
                continue
            done = [(delivery, command) for delivery, command in pending if command.event_id in outcomes]
            records.record_events([outcomes[command.event_id] for _, command in done])
            for delivery, command in done:
                self._ack(channel, delivery)
                _count(command.routing_key, outcomes[command.event_id]["outcome"])
            self.handled += len(done)
            items = [(delivery, command) for delivery, command in pending if command.event_id not in outcomes]
            if items:
                self._sleep(connection, self.settings.retry_delay(attempt))

    def _execute(self, commands: list[Command]) -> dict[str, dict[str, Any]]:
        """
        Apply commands to the index. Returns the record of each command that succeeded (a command left out
        failed for its own document and is retried); raises for a failure of the whole unit.
        """
        container, key_id = self.container, self.settings.identity
        # The consumer's reach is configuration (docs/contract.md, "Events"): its tenants with full authority, and
        # public documents only when allowed; the write rule applies it to stored documents too ("Write rule").
        writer = WriteRule.operator(self.settings.tenants, public=self.settings.allow_public)
        fresh: dict[str, list[str]] = {}
        outcomes: dict[str, dict[str, Any]] = {}
        for command in commands:
            positions = container.records.event_positions(command.tenant_id, command.document_ids)
            fresh[command.event_id] = [
                document_id
                for document_id in command.document_ids
                if positions.get(document_id, -1) <= command.occurred_at_us
            ]
            if not fresh[command.event_id]:
                outcomes[command.event_id] = self._record(command, "superseded", [], {"positions": positions})
        live = [command for command in commands if fresh[command.event_id]]
        if not live:
            return outcomes
        if live[0].kind == "upsert":
            result = container.requests.index_documents(
                [command.arguments for command in live],
                key_id=key_id,
                event_ids=[command.event_id for command in live],
                writer=writer,
            )
            by_document = {(entry.get("tenant_id"), entry.get("document_id")): entry for entry in result["documents"]}
            by_id = {entry.get("document_id"): entry for entry in result["documents"]}
            for command in live:
                entry = by_document.get((command.tenant_id, command.document_ids[0])) or by_id.get(
                    command.document_ids[0]
                )
                if entry is None or entry.get("status") == "error":
                    command.last_error = str((entry or {}).get("error", "no result"))
                    continue
                details = {"status": entry.get("status"), "chunks": entry.get("chunks")}
                outcomes[command.event_id] = self._record(command, "applied", command.document_ids, details)
            return outcomes
        (command,) = live
        ids = fresh[command.event_id]
        if command.kind == "upsert_file":
            result = container.requests.index_streams([self._file_stream(command)], key_id=key_id, writer=writer)
            entry = (result.get("documents") or [{}])[0]
            if entry.get("status") not in {"indexed", "unchanged"}:
                command.last_error = str(entry.get("error", "no result"))
                return outcomes
            details = {"status": entry.get("status"), "chunks": entry.get("chunks")}
            outcomes[command.event_id] = self._record(command, "applied", ids, details)
            return outcomes
        if command.kind == "invalidate":
            result = container.requests.invalidate(
                command.tenant_id, ids, key_id=key_id, writer=writer, **command.arguments
            )
        elif command.kind == "invalidate_artifacts":
            # Found by artifact id, whatever their document_id (docs/events.md); the published event's id derives
            # from this one's, so a redelivery that applies again publishes the same event.
            outcome = container.requests.invalidate_artifacts(
                command.tenant_id, ids, key_id=key_id, event_id=command.event_id, writer=writer, **command.arguments
            )
            result = {key: outcome[key] for key in ("invalidated", "chunks_removed", "cascade_id", "document_ids")}
        else:
            result = container.requests.set_flags(
                command.tenant_id, ids, key_id=key_id, writer=writer, **command.arguments
            )
        outcomes[command.event_id] = self._record(command, "applied", ids, result)
        return outcomes

    def _file_stream(self, command: Command) -> Any:
        """The referenced file as a byte stream with upload meta; bad references are permanent errors."""
        from haystack.dataclasses import ByteStream

        from components.core.document_identity import source_type_for_path

        root = self.settings.files_dir
        if root is None:
            raise IndexingValidationError(["file references are off: set SOURCEBOUND_EVENTS_FILES_DIR"])
        name = command.arguments["file"]
        # Opened once, component by component without following links, then checked: a link swapped in after a
        # check cannot lead the read out of the folder (docs/events.md, "Events").
        try:
            data = read_file_beneath(root, name, self.container.indexing.max_file_bytes)
        except UnsafeFileError as error:
            raise IndexingValidationError([f"{name}: {error} (under SOURCEBOUND_EVENTS_FILES_DIR)"]) from None
        file_name = PurePosixPath(name).name
        meta = {
            **command.arguments["meta"],
            "document_name": command.arguments["meta"].get("document_name") or file_name,
        }
        if source_type := source_type_for_path(file_name):
            meta["source_type"] = source_type
        return ByteStream(data=data, meta=meta)

    @staticmethod
    def _record(command: Command, outcome: str, document_ids: list[str], details: dict[str, Any]) -> dict[str, Any]:
        return {
            "event_id": command.event_id,
            "routing_key": command.routing_key,
            "tenant_id": command.tenant_id,
            "document_ids": document_ids,
            "occurred_at": command.occurred_at_us,
            "outcome": outcome,
            "details": details,
        }

    # ------------------------------------------------------------------ broker operations

    def _sleep(self, connection: pika.BlockingConnection, seconds: float) -> None:
        """Wait between retries while answering the broker (heartbeats); stop early when asked to stop."""
        deadline = time.monotonic() + seconds
        while not self._stop.is_set() and time.monotonic() < deadline:
            try:
                connection.sleep(min(0.2, max(0.0, deadline - time.monotonic())))
            except BROKER_ERRORS as error:
                raise BrokerLost(str(error)) from error

    def _ack(self, channel: BlockingChannel, delivery: Delivery) -> None:
        try:
            channel.basic_ack(delivery.tag)
        except BROKER_ERRORS as error:
            raise BrokerLost(str(error)) from error

    def _dead_letter(self, channel: BlockingChannel, delivery: Delivery, poison: PoisonMessage) -> None:
        """Copy a message to the dead-letter exchange with the reason in its headers, record it, then ack it."""
        logger.warning("Dead-lettering a %s event: %s", delivery.routing_key, poison)
        headers = {
            REASON_HEADER: poison.reason,
            DETAIL_HEADER: poison.detail[:1000],
            "x-sourcebound-routing-key": delivery.routing_key,
        }
        if poison.event_id:
            headers["x-sourcebound-event-id"] = poison.event_id
        try:
            channel.basic_publish(
                self.settings.dead_letter_exchange,
                delivery.routing_key,
                delivery.body,
                pika.BasicProperties(headers=headers, delivery_mode=pika.DeliveryMode.Persistent),
                mandatory=True,
            )
        except BROKER_ERRORS as error:
            raise BrokerLost(str(error)) from error
        if poison.event_id:
            self.container.records.record_events(
                [
                    {
                        "event_id": poison.event_id,
                        "routing_key": delivery.routing_key,
                        "tenant_id": poison.tenant_id,
                        "document_ids": [],
                        "occurred_at": 0,
                        "outcome": "dead_lettered",
                        "details": {"reason": poison.reason, "detail": poison.detail[:1000]},
                    }
                ]
            )
        self._ack(channel, delivery)
        _count(delivery.routing_key, "dead_lettered")
        self.handled += 1

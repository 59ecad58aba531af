"""
Publish events the consumer reads (docs/events.md), with publisher confirms and persistent messages.

Usage:

```python
from hayhooks_app.events.publisher import EventPublisher

with EventPublisher("amqp://guest:guest@127.0.0.1:5672/%2F", exchange="task.events") as publisher:
    publisher.publish("document.upsert", {"content": "...", "tenant_id": "acme", "tags": ["hr"], "document_id": "d-1"})
```
"""

import json
import uuid
from datetime import UTC, datetime
from typing import Any

import pika


def event_body(
    data: dict[str, Any], event_id: str | None = None, occurred_at: datetime | None = None, **extra: Any
) -> bytes:
    """The JSON body of one event (a random ``event_id`` and the current time unless given)."""
    envelope = {
        "event_id": event_id or uuid.uuid4().hex,
        "occurred_at": (occurred_at or datetime.now(UTC)).isoformat(),
        "data": data,
        **extra,
    }
    return json.dumps(envelope).encode("utf-8")


class EventPublisher:
    """
    A blocking publisher on one connection; each ``publish`` returns once the broker has the message.

    :param url: AMQP URL.
    :param exchange: The topic exchange (declared durable if missing).
    """

    def __init__(self, url: str, exchange: str = "task.events"):
        self.url = url
        self.exchange = exchange
        self.connection = pika.BlockingConnection(pika.URLParameters(url))
        self.channel = self.connection.channel()
        self.channel.exchange_declare(exchange, exchange_type="topic", durable=True)
        self.channel.confirm_delivery()

    def publish(
        self,
        routing_key: str,
        data: dict[str, Any] | None = None,
        *,
        event_id: str | None = None,
        occurred_at: datetime | None = None,
        body: bytes | None = None,
        mandatory: bool = True,
    ) -> str:
        """
        Publish one event (or a raw ``body``); returns its event id.

        :param mandatory: Refuse a message no queue is bound for (``False``: the broker drops it silently).
        :raises pika.exceptions.UnroutableError: When ``mandatory`` and no queue is bound for the routing key.
        """
        event_id = event_id or uuid.uuid4().hex
        payload = body if body is not None else event_body(data or {}, event_id, occurred_at)
        self.channel.basic_publish(
            self.exchange,
            routing_key,
            payload,
            pika.BasicProperties(
                content_type="application/json", delivery_mode=pika.DeliveryMode.Persistent, message_id=event_id
            ),
            mandatory=mandatory,
        )
        return event_id

    def close(self) -> None:
        if self.connection.is_open:
            self.connection.close()

    def __enter__(self) -> "EventPublisher":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

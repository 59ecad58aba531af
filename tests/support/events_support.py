"""
Helpers of the event consumer tests: a server consuming from a private queue, and reading what it did.

``consumer_env(node)`` is the environment of a server that runs the consumer beside the API on its own
exchange and queue of the node (tests share one broker node); ``wait_for_consumer`` waits until that
queue has its consumer, ``applied`` reads ``applied_events`` from the real ``records.sqlite`` and
``dead_letters`` drains the dead-letter queue with its headers.

Usage:

```python
env = consumer_env(rabbitmq, tenants="acme")
with ApiServer(tmp_path / "data", env=env) as server, EventPublisher(rabbitmq.url, env[EXCHANGE]) as publisher:
    wait_for_consumer(rabbitmq.url, env[QUEUE])
    event_id = publisher.publish("document.upsert", {...})
    wait_until(lambda: event_id in applied(server.data_dir))
```
"""

import json
import sqlite3
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pika

EXCHANGE, QUEUE = "SOURCEBOUND_EVENTS_EXCHANGE", "SOURCEBOUND_EVENTS_QUEUE"


def consumer_env(node: Any, tenants: str = "acme", **extra: str) -> dict[str, str]:
    """A server environment with the consumer on a fresh exchange and queue of ``node``."""
    name = uuid.uuid4().hex[:10]
    return {
        "SOURCEBOUND_BOOTSTRAP_CORPUS": "false",
        "SOURCEBOUND_EVENTS_CONSUMER": "true",
        "SOURCEBOUND_EVENTS_URL": node.url,
        "SOURCEBOUND_EVENTS_TENANTS": tenants,
        EXCHANGE: f"test.events.{name}",
        QUEUE: f"test-events-{name}",
        "SOURCEBOUND_EVENTS_RETRY_BASE_MS": "100",
        **extra,
    }


def wait_until(predicate: Callable[[], Any], timeout: float = 120, interval: float = 0.2, what: str = "") -> Any:
    """Poll ``predicate`` until it returns something truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what or predicate}")


def queue_state(url: str, queue: str) -> tuple[int, int] | None:
    """``(ready messages, consumers)`` of a queue, or ``None`` while it does not exist."""
    connection = pika.BlockingConnection(pika.URLParameters(url))
    try:
        channel = connection.channel()
        try:
            frame = channel.queue_declare(queue, passive=True)
        except pika.exceptions.ChannelClosedByBroker:
            return None
        return frame.method.message_count, frame.method.consumer_count
    finally:
        if connection.is_open:
            connection.close()


def wait_for_consumer(url: str, queue: str, timeout: float = 120) -> None:
    """Wait until the consumer has declared its queue and subscribed to it."""
    wait_until(lambda: (queue_state(url, queue) or (0, 0))[1] >= 1, timeout, 0.3, f"a consumer on {queue}")


def applied(data_dir: Path) -> dict[str, dict[str, Any]]:
    """``applied_events`` of a data dir's ``records.sqlite``, by event id (read-only; empty before it exists)."""
    path = Path(data_dir) / "records.sqlite"
    if not path.exists():
        return {}
    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)
    try:
        connection.row_factory = sqlite3.Row
        try:
            rows = connection.execute("SELECT * FROM applied_events").fetchall()
        except sqlite3.OperationalError:  # the table is not created yet
            return {}
    finally:
        connection.close()
    result = {}
    for row in rows:
        entry = dict(row)
        for column in ("document_ids", "details"):
            entry[column] = json.loads(entry[column]) if entry[column] else None
        result[entry["event_id"]] = entry
    return result


def attempts(data_dir: Path) -> dict[str, int]:
    """``event_attempts`` of a data dir: deliveries of events not yet handled, by event id."""
    path = Path(data_dir) / "records.sqlite"
    if not path.exists():
        return {}
    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)
    try:
        return dict(connection.execute("SELECT event_id, attempts FROM event_attempts").fetchall())
    except sqlite3.OperationalError:
        return {}
    finally:
        connection.close()


def index_events(data_dir: Path) -> list[dict[str, Any]]:
    """Every ``index_events`` row of a data dir, oldest first."""
    connection = sqlite3.connect(f"file:{Path(data_dir) / 'records.sqlite'}?mode=ro", uri=True, timeout=10)
    try:
        connection.row_factory = sqlite3.Row
        return [dict(row) for row in connection.execute("SELECT * FROM index_events ORDER BY id").fetchall()]
    finally:
        connection.close()


def dead_letters(url: str, queue: str) -> list[dict[str, Any]]:
    """Take every message from the dead-letter queue of ``queue``: ``{routing_key, headers, body}`` each."""
    connection = pika.BlockingConnection(pika.URLParameters(url))
    taken = []
    try:
        channel = connection.channel()
        while True:
            method, properties, body = channel.basic_get(f"{queue}.dead-letter", auto_ack=True)
            if method is None:
                return taken
            taken.append({"routing_key": method.routing_key, "headers": dict(properties.headers or {}), "body": body})
    finally:
        connection.close()

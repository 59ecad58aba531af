"""
Event consumer benchmark: how many ``document.upsert`` events per second the consumer sustains into the
embedded store (docs/events.md).

A private RabbitMQ node is started (the tests' ``support.rabbitmq.RabbitMQNode``; ``--url`` uses a running
broker instead). ``--events`` upsert events (distinct documents of ~``--sentences`` sentences each, one
tenant) are published with confirms onto a fresh queue first; then the consumer starts on an empty data
dir (the embedding model loaded beforehand) and the clock runs until every event is recorded in
``applied_events``: the figure is the consumer's sustained rate with a full queue, embedding, store write,
records and acknowledgement included. The same documents are then published again under new event ids
(content unchanged: the hash check) and consumed again, for the rate of redelivered / duplicate traffic.

Usage:
    .venv/bin/python -m bench.events_bench [--events 200] [--sentences 12] [--prefetch 32] [--url amqp://...]
"""

import argparse
import os
import sys
import tempfile
import threading
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _documents(count: int, sentences: int, run: str) -> list[dict]:
    return [
        {
            "content": " ".join(
                f"Bench {run} document {number} sentence {line}: valve {number % 17} reads {line * 13 % 97} bar."
                for line in range(sentences)
            ),
            "tenant_id": "bench",
            "tags": ["ops"],
            "document_id": f"bench-{number}",
        }
        for number in range(count)
    ]


def _consume(container, settings, expected: set[str]) -> float:
    from hayhooks_app.events.consumer import EventConsumer

    consumer = EventConsumer(container, settings)
    started = time.perf_counter()
    thread = threading.Thread(target=consumer.run, daemon=True)
    thread.start()
    while True:
        rows = container.records.applied_events(limit=len(expected) * 3)
        if expected <= {row["event_id"] for row in rows}:
            elapsed = time.perf_counter() - started
            break
        time.sleep(0.05)
    consumer.stop()
    thread.join(30)
    return elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.events_bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=200, help="upsert events (distinct documents)")
    parser.add_argument("--sentences", type=int, default=12, help="sentences per document")
    parser.add_argument("--prefetch", type=int, default=32, help="SOURCEBOUND_EVENTS_PREFETCH")
    parser.add_argument("--url", help="a running broker (default: start a private rabbitmq-server node)")
    args = parser.parse_args(argv)

    scratch = Path(tempfile.mkdtemp(prefix="sourcebound-events-bench-"))
    os.environ.update(SOURCEBOUND_DATA_DIR=str(scratch / "data"), SOURCEBOUND_BOOTSTRAP_CORPUS="false")
    from components.runtime.offline import configure_offline, keep_torch_out

    keep_torch_out()
    configure_offline()
    node = None
    if args.url is None:
        sys.path.insert(0, str(REPO / "tests"))
        from support.rabbitmq import RabbitMQNode

        node = RabbitMQNode(scratch / "broker", name="sbbench").start()
    url = args.url or node.url
    try:
        from hayhooks_app.config import Settings
        from hayhooks_app.container import ServiceContainer
        from hayhooks_app.events.publisher import EventPublisher
        from hayhooks_app.events.settings import EventSettings

        name = uuid.uuid4().hex[:8]
        settings = EventSettings(
            tenants=frozenset({"bench"}), url=url, exchange=f"bench.{name}", queue=f"bench-{name}",
            prefetch=args.prefetch,
        )  # fmt: skip
        container = ServiceContainer(Settings.from_env())
        container.indexing.warm_up()
        # Declare the queue before publishing (the consumer would, on its first connection).
        import pika

        from hayhooks_app.events.consumer import EventConsumer

        with pika.BlockingConnection(pika.URLParameters(url)) as connection:
            EventConsumer(container, settings).declare(connection.channel())

        figures = {}
        for label in ("new documents", "unchanged (hash) re-publish"):
            documents = _documents(args.events, args.sentences, "v1")
            started = time.perf_counter()
            with EventPublisher(url, settings.exchange) as publisher:
                base = datetime.now(UTC)
                ids = {
                    publisher.publish("document.upsert", document, occurred_at=base + timedelta(microseconds=n))
                    for n, document in enumerate(documents)
                }
            publish_s = time.perf_counter() - started
            consume_s = _consume(container, settings, ids)
            figures[label] = (publish_s, consume_s)
        points = container.store.count_documents()
        print(f"events bench: {args.events} upsert events of {args.sentences} sentences, prefetch {args.prefetch}")
        print(f"{'run':<30} {'publish ev/s':>13} {'consume ev/s':>13} {'consume s':>10}")
        for label, (publish_s, consume_s) in figures.items():
            print(f"{label:<30} {args.events / publish_s:>13.1f} {args.events / consume_s:>13.1f} {consume_s:>10.2f}")
        print(f"chunks in the store: {points} ({points / figures['new documents'][1]:.1f} chunks/s on the first run)")
        print(f"load average: {', '.join(f'{value:.2f}' for value in os.getloadavg())}; cpus: {os.cpu_count()}")
        container.indexing.close()
        container.close()
    finally:
        if node is not None:
            node.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())

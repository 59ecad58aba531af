"""
Running the event consumer: as its own process, or as a thread of the server.

* ``python -m hayhooks_app events`` (also ``sourcebound events``): the consumer alone, on the data dir
  and pipelines of ``SOURCEBOUND_*``; SIGTERM or Ctrl-C finishes the batch in hand and exits. With the
  embedded store it must not share the data dir with a running server (the store has one writer
  process); with the Qdrant-server profile any number of servers and consumers can run.
* ``SOURCEBOUND_EVENTS_CONSUMER=true`` on ``serve``: the consumer runs in the server process beside
  the HTTP API, on the same container (what makes events visible to ``/search/run`` with the
  embedded store).

Usage:

```python
from hayhooks_app.events.runner import start_beside_server

handle = start_beside_server(container)     # None unless SOURCEBOUND_EVENTS_CONSUMER=true
...
if handle is not None:
    handle.stop()
```
"""

import argparse
import logging
import signal
import sys
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hayhooks_app.events.settings import EventSettings

if TYPE_CHECKING:  # imported where used: the CLI registers this command before `serve` keeps torch out
    from hayhooks_app.container import ServiceContainer
    from hayhooks_app.events.consumer import EventConsumer

logger = logging.getLogger(__name__)


@dataclass
class ConsumerThread:
    """A consumer running in a daemon thread."""

    consumer: "EventConsumer"
    thread: threading.Thread

    def stop(self, timeout: float = 30.0) -> None:
        self.consumer.stop()
        self.thread.join(timeout)


def start_beside_server(container: "ServiceContainer", settings: EventSettings | None = None) -> ConsumerThread | None:
    """Start the consumer thread when ``SOURCEBOUND_EVENTS_CONSUMER`` is true (the container is built)."""
    settings = settings or EventSettings.from_env()
    if not settings.in_server:
        return None
    if not settings.tenants:
        logger.warning("SOURCEBOUND_EVENTS_TENANTS is empty: every event will be dead-lettered as unauthorised.")
    from hayhooks_app.events.consumer import EventConsumer

    consumer = EventConsumer(container, settings)
    thread = threading.Thread(target=consumer.run, name="sourcebound-events", daemon=True)
    thread.start()
    return ConsumerThread(consumer, thread)


def run_consumer(args: argparse.Namespace) -> int:
    """The ``events`` command: consume until SIGTERM / SIGINT."""
    import os

    if getattr(args, "data_dir", None):
        os.environ["SOURCEBOUND_DATA_DIR"] = args.data_dir
    from components.runtime.offline import keep_torch_out

    keep_torch_out()  # embeddings run on ONNX Runtime (docs/embeddings.md)
    from hayhooks_app.config import ConfigError, Settings

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        settings, events = Settings.from_env(), EventSettings.from_env()
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if not events.tenants:
        print("error: SOURCEBOUND_EVENTS_TENANTS names no tenant: the consumer could change nothing.", file=sys.stderr)
        return 2
    from hayhooks_app.container import ServiceContainer
    from hayhooks_app.events.consumer import EventConsumer

    container = ServiceContainer(settings)
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    container.indexing.warm_up()
    consumer = EventConsumer(container, events)
    from hayhooks_app.events.outbox_relay import start_relay

    relay = start_relay(container, events)  # what the events change is published too (SOURCEBOUND_EVENTS_PUBLISH)

    def finish(_signum, _frame) -> None:
        consumer.stop()

    signal.signal(signal.SIGTERM, finish)
    signal.signal(signal.SIGINT, finish)
    print(
        f"sourcebound: consuming {events.queue} from {events.exchange} for tenants {', '.join(sorted(events.tenants))} "
        f"(data dir {settings.data_dir})",
        flush=True,
    )
    try:
        consumer.run()
    finally:
        if relay is not None:
            relay.stop()
        container.indexing.close()
        container.close()
    return 0


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the ``events`` command (settings: ``SOURCEBOUND_EVENTS_*``, docs/configuration.md)."""
    parser = subparsers.add_parser("events", help="consume index events from RabbitMQ (docs/events.md)")
    parser.add_argument("--data-dir", help="data folder (default SOURCEBOUND_DATA_DIR or ./data)")
    parser.set_defaults(func=run_consumer)
    return parser

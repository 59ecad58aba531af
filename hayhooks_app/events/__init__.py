"""
Event-driven ingestion and invalidation over RabbitMQ (docs/events.md).

* :mod:`hayhooks_app.events.settings`: the ``SOURCEBOUND_EVENTS_*`` settings.
* :mod:`hayhooks_app.events.messages`: the routing keys, their JSON schemas and the parsed commands.
* :mod:`hayhooks_app.events.consumer`: the consumer (at-least-once, idempotent, ordered per document,
  dead-lettering, bounded retries) over the service container.
* :mod:`hayhooks_app.events.runner`: ``python -m hayhooks_app events`` / ``sourcebound events`` and the
  consumer thread beside the server (``SOURCEBOUND_EVENTS_CONSUMER=true``).
* :mod:`hayhooks_app.events.publisher`: publishing events (tests, benchmarks, source systems in Python).
"""

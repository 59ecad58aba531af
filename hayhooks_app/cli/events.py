"""``sourcebound events``: the RabbitMQ event consumer (``hayhooks_app.events.runner``, docs/events.md)."""

from hayhooks_app.events.runner import register

__all__ = ["register"]

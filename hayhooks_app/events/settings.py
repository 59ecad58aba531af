"""
The event consumer's settings, read from ``SOURCEBOUND_EVENTS_*`` (docs/configuration.md, "Events").

Usage:

```python
from hayhooks_app.events.settings import EventSettings

settings = EventSettings.from_env()     # raises ConfigError naming a bad variable
settings.queue                          # "rag-service-events"
```
"""

import os
from dataclasses import dataclass, field
from pathlib import Path

from components.runtime.environment import ConfigError, env_bool, env_int

DEFAULT_URL = "amqp://guest:guest@127.0.0.1:5672/%2F"


@dataclass(frozen=True)
class EventSettings:
    """
    Where the consumer reads events and what it may change.

    :param tenants: The tenants events may change: the consumer's service identity (docs/contract.md,
        "Events"). Empty: every event is dead-lettered as unauthorised.
    :param url: AMQP URL of the broker.
    :param exchange: The topic exchange events are published to.
    :param queue: The durable queue the consumer reads.
    :param allow_public: Whether events may write ``scope: public`` documents (visible to every tenant).
    :param prefetch: Unacknowledged messages the broker hands out at once (and the largest batch).
    :param batch_wait_s: How long a partial batch waits for more messages.
    :param max_attempts: Deliveries of one event before it is dead-lettered (counted across restarts).
    :param retry_base_s: First retry delay; doubled per attempt up to ``retry_max_s``.
    :param retry_max_s: Longest retry delay.
    :param in_server: Run the consumer in the server process (``python -m hayhooks_app serve``).
    :param identity: The key id events are recorded under in ``index_events``.
    :param files_dir: Where ``document.upsert_file`` paths point (a shared volume); ``None`` refuses them.
    :param broker_configured: ``SOURCEBOUND_EVENTS_URL`` is set: the server publishes ``question.routed`` events
        there (docs/events.md, "Published events"); unset, nothing is published.
    """

    tenants: frozenset[str] = field(default_factory=frozenset)
    url: str = DEFAULT_URL
    exchange: str = "task.events"
    queue: str = "rag-service-events"
    allow_public: bool = False
    prefetch: int = 32
    batch_wait_s: float = 0.2
    max_attempts: int = 5
    retry_base_s: float = 0.5
    retry_max_s: float = 30.0
    in_server: bool = False
    identity: str = "events"
    files_dir: Path | None = None
    broker_configured: bool = False

    @property
    def dead_letter_exchange(self) -> str:
        return f"{self.exchange}.dead-letter"

    @property
    def dead_letter_queue(self) -> str:
        return f"{self.queue}.dead-letter"

    def retry_delay(self, attempt: int) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based)."""
        return min(self.retry_max_s, self.retry_base_s * 2 ** max(0, attempt - 1))

    @classmethod
    def from_env(cls) -> "EventSettings":
        """Read the settings; raise ``ConfigError`` naming a bad variable."""
        tenants = frozenset(
            part.strip() for part in os.environ.get("SOURCEBOUND_EVENTS_TENANTS", "").split(",") if part.strip()
        )
        if "*" in tenants:
            raise ConfigError("SOURCEBOUND_EVENTS_TENANTS lists tenants by name; '*' is not accepted.")
        names = {}
        for variable, default in (("EXCHANGE", "task.events"), ("QUEUE", "rag-service-events")):
            value = os.environ.get(f"SOURCEBOUND_EVENTS_{variable}", "").strip() or default
            if len(value) > 200 or not all(char.isalnum() or char in "._-:" for char in value):
                raise ConfigError(f"SOURCEBOUND_EVENTS_{variable} must be 1..200 of [A-Za-z0-9._:-], got {value!r}.")
            names[variable.lower()] = value
        return cls(
            tenants=tenants,
            url=os.environ.get("SOURCEBOUND_EVENTS_URL", "").strip() or DEFAULT_URL,
            broker_configured=bool(os.environ.get("SOURCEBOUND_EVENTS_URL", "").strip()),
            allow_public=env_bool("SOURCEBOUND_EVENTS_ALLOW_PUBLIC", False),
            prefetch=env_int("SOURCEBOUND_EVENTS_PREFETCH", 32, 1),
            batch_wait_s=env_int("SOURCEBOUND_EVENTS_BATCH_WAIT_MS", 200, 0) / 1000,
            max_attempts=env_int("SOURCEBOUND_EVENTS_MAX_ATTEMPTS", 5, 1),
            retry_base_s=env_int("SOURCEBOUND_EVENTS_RETRY_BASE_MS", 500, 0) / 1000,
            retry_max_s=env_int("SOURCEBOUND_EVENTS_RETRY_MAX_MS", 30000, 0) / 1000,
            in_server=env_bool("SOURCEBOUND_EVENTS_CONSUMER", False),
            files_dir=Path(files_dir).resolve()
            if (files_dir := os.environ.get("SOURCEBOUND_EVENTS_FILES_DIR", "").strip())
            else None,
            **names,
        )

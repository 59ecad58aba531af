import pytest

from hayhooks_app.config import ConfigError
from hayhooks_app.events.settings import DEFAULT_URL, EventSettings

pytestmark = pytest.mark.unit


@pytest.fixture
def env(monkeypatch):
    for name in list(__import__("os").environ):
        if name.startswith("SOURCEBOUND_EVENTS_"):
            monkeypatch.delenv(name)
    return monkeypatch


class TestEventSettings:
    def test_defaults(self, env):
        settings = EventSettings.from_env()
        assert settings.tenants == frozenset() and settings.url == DEFAULT_URL and not settings.in_server
        assert (settings.exchange, settings.queue) == ("task.events", "rag-service-events")
        assert settings.dead_letter_exchange == "task.events.dead-letter"
        assert settings.dead_letter_queue == "rag-service-events.dead-letter"
        assert (settings.prefetch, settings.max_attempts, settings.allow_public) == (32, 5, False)

    def test_reads_the_environment(self, env):
        env.setenv("SOURCEBOUND_EVENTS_TENANTS", " acme, globex ,,")
        env.setenv("SOURCEBOUND_EVENTS_CONSUMER", "true")
        env.setenv("SOURCEBOUND_EVENTS_PREFETCH", "8")
        env.setenv("SOURCEBOUND_EVENTS_BATCH_WAIT_MS", "50")
        env.setenv("SOURCEBOUND_EVENTS_QUEUE", "q-1")
        settings = EventSettings.from_env()
        assert settings.tenants == {"acme", "globex"} and settings.in_server and settings.prefetch == 8
        assert settings.batch_wait_s == 0.05 and settings.queue == "q-1"

    @pytest.mark.parametrize(
        ("name", "value", "message"),
        [
            ("SOURCEBOUND_EVENTS_TENANTS", "*", "'*' is not accepted"),
            ("SOURCEBOUND_EVENTS_PREFETCH", "0", "SOURCEBOUND_EVENTS_PREFETCH must be >= 1"),
            ("SOURCEBOUND_EVENTS_MAX_ATTEMPTS", "many", "must be an integer"),
            ("SOURCEBOUND_EVENTS_CONSUMER", "maybe", "must be true or false"),
            ("SOURCEBOUND_EVENTS_QUEUE", "a queue", "SOURCEBOUND_EVENTS_QUEUE must be"),
        ],
    )
    def test_bad_values_name_the_variable(self, env, name, value, message):
        env.setenv(name, value)
        with pytest.raises(ConfigError, match=message):
            EventSettings.from_env()

    def test_retry_delay_doubles_up_to_the_max(self):
        settings = EventSettings(retry_base_s=0.5, retry_max_s=3.0)
        assert [settings.retry_delay(n) for n in (1, 2, 3, 4, 5)] == [0.5, 1.0, 2.0, 3.0, 3.0]

    def test_the_broker_is_configured_only_by_an_explicit_url(self, env):
        assert EventSettings.from_env().broker_configured is False  # the default URL publishes nothing
        env.setenv("SOURCEBOUND_EVENTS_URL", "amqp://u:p@broker:5672/%2F")
        assert EventSettings.from_env().broker_configured is True

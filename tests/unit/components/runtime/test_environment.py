"""Numbers from environment variables (docs/configuration.md): one parser, messages that name the variable."""

import pytest

from hayhooks_app.config import ConfigError, env_number
from hayhooks_app.identity import key_cache_seconds


@pytest.mark.unit
class TestEnvNumber:
    def test_unset_or_blank_is_the_default(self, monkeypatch):
        monkeypatch.delenv("SB_TEST_NUMBER", raising=False)
        assert env_number("SB_TEST_NUMBER", 7) == 7
        monkeypatch.setenv("SB_TEST_NUMBER", "  ")
        assert env_number("SB_TEST_NUMBER", 2.5, kind=float) == 2.5

    def test_values_are_parsed_as_their_kind(self, monkeypatch):
        monkeypatch.setenv("SB_TEST_NUMBER", " 12 ")
        assert env_number("SB_TEST_NUMBER", 1) == 12
        monkeypatch.setenv("SB_TEST_NUMBER", "0.25")
        assert env_number("SB_TEST_NUMBER", 1.0, kind=float) == 0.25

    @pytest.mark.parametrize(
        ("raw", "kind", "message"),
        [("many", int, "must be an integer"), ("1.5", int, "must be an integer"), ("soon", float, "must be a number"),
         ("-1", int, "must be >= 0")],
    )  # fmt: skip
    def test_bad_values_name_the_variable(self, monkeypatch, raw, kind, message):
        monkeypatch.setenv("SB_TEST_NUMBER", raw)
        with pytest.raises(ConfigError, match=f"SB_TEST_NUMBER {message}"):
            env_number("SB_TEST_NUMBER", 1, kind=kind)

    def test_the_key_cache_setting_uses_it(self, monkeypatch):
        monkeypatch.setenv("SOURCEBOUND_KEY_CACHE_SECONDS", "0.5")
        assert key_cache_seconds() == 0.5
        monkeypatch.setenv("SOURCEBOUND_KEY_CACHE_SECONDS", "-2")
        with pytest.raises(ConfigError, match="SOURCEBOUND_KEY_CACHE_SECONDS must be >= 0"):
            key_cache_seconds()

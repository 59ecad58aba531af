"""Settings from environment variables (docs/configuration.md): one parser each, messages that name the variable."""

import pytest

from components.runtime.environment import ConfigError, env_bool, env_choice, env_int, env_number


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


@pytest.mark.unit
class TestEnvChoiceAndBool:
    def test_env_int_is_an_integer_with_a_minimum(self, monkeypatch):
        monkeypatch.setenv("SB_TEST_NUMBER", "3")
        assert env_int("SB_TEST_NUMBER", 9, minimum=1) == 3
        monkeypatch.setenv("SB_TEST_NUMBER", "0")
        with pytest.raises(ConfigError, match="SB_TEST_NUMBER must be >= 1, got 0"):
            env_int("SB_TEST_NUMBER", 9, minimum=1)

    def test_a_choice_outside_the_list_names_the_choices(self, monkeypatch):
        monkeypatch.delenv("SB_TEST_CHOICE", raising=False)
        assert env_choice("SB_TEST_CHOICE", "keep", ("keep", "drop")) == "keep"
        monkeypatch.setenv("SB_TEST_CHOICE", " drop ")
        assert env_choice("SB_TEST_CHOICE", "keep", ("keep", "drop")) == "drop"
        monkeypatch.setenv("SB_TEST_CHOICE", "maybe")
        with pytest.raises(ConfigError, match="SB_TEST_CHOICE must be one of keep, drop; got 'maybe'"):
            env_choice("SB_TEST_CHOICE", "keep", ("keep", "drop"))

    @pytest.mark.parametrize(("raw", "value"), [("1", True), ("Yes", True), ("on", True), ("0", False), ("OFF", False)])
    def test_booleans_take_the_usual_spellings(self, monkeypatch, raw, value):
        monkeypatch.setenv("SB_TEST_FLAG", raw)
        assert env_bool("SB_TEST_FLAG", not value) is value

    def test_a_bad_boolean_names_the_variable(self, monkeypatch):
        monkeypatch.setenv("SB_TEST_FLAG", "perhaps")
        with pytest.raises(ConfigError, match="SB_TEST_FLAG must be true or false, got 'perhaps'"):
            env_bool("SB_TEST_FLAG", True)

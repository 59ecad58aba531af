"""The model allowlist (specification test_validate_model_allowed / _not_allowed; Ollama's side is in
test_ollama_answerer)."""

import pytest

from components.core.errors import ModelNotAllowedError
from components.core.model_allowlist import DEFAULT_MODEL_ALLOWLIST, resolve_model, validate_allowlist


@pytest.mark.unit
class TestModelAllowlist:
    def test_specification_table(self):
        assert DEFAULT_MODEL_ALLOWLIST == {
            "llama3.2": {"context_window": 8192, "max_response": 1024},
            "qwen3:8b": {"context_window": 32768, "max_response": 2048},
            "deepseek-r1:32b": {"context_window": 65536, "max_response": 4096},
        }

    @pytest.mark.parametrize(
        "model,expected", [("llama3.2", "llama3.2"), ("llama3.2:latest", "llama3.2"), ("qwen3:8b", "qwen3:8b")]
    )
    def test_validate_model_allowed(self, model, expected):
        name, limits = resolve_model(model, DEFAULT_MODEL_ALLOWLIST)
        assert name == expected and limits == DEFAULT_MODEL_ALLOWLIST[expected]

    @pytest.mark.parametrize("model", ["gpt-4", "llama3", "qwen3:8b:latest", "", None])
    def test_validate_model_not_allowed(self, model):
        with pytest.raises(ModelNotAllowedError, match="not in allowlist. Available: \\['llama3.2'"):
            resolve_model(model, DEFAULT_MODEL_ALLOWLIST)

    def test_extendable_and_checked(self):
        extended = validate_allowlist(
            {**DEFAULT_MODEL_ALLOWLIST, "mistral:7b": {"context_window": 32768, "max_response": 2048}}
        )
        assert resolve_model("mistral:7b", extended)[0] == "mistral:7b"
        with pytest.raises(ValueError, match="max_response"):
            validate_allowlist({"m": {"context_window": 100, "max_response": 100}})
        with pytest.raises(ValueError):
            validate_allowlist({"m": {"context_window": "big"}})

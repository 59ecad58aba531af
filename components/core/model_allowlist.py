"""
The model allowlist (docs/contract.md, "Token budget" and "Errors"), shared by the
token budgeter and the Ollama components.

Each entry gives the model's context window and its maximum response size. The
pipelines repeat the table in YAML (``models:``), where a deployment extends it.
A request may name a model with Ollama's ``:latest`` tag (``llama3.2:latest``); it
resolves to the allowlisted ``llama3.2``.
"""

from collections.abc import Mapping
from typing import Any

from components.core.errors import ModelNotAllowedError

DEFAULT_MODEL_ALLOWLIST: dict[str, dict[str, int]] = {
    "llama3.2": {"context_window": 8192, "max_response": 1024},
    "qwen3:8b": {"context_window": 32768, "max_response": 2048},
    "deepseek-r1:32b": {"context_window": 65536, "max_response": 4096},
}


def validate_allowlist(models: Mapping[str, Any]) -> dict[str, dict[str, int]]:
    """
    Check an allowlist table from config.

    :raises ValueError: If an entry lacks a positive ``context_window``/``max_response`` or the response does not fit.
    """
    if not isinstance(models, Mapping) or not models:
        raise ValueError("models must be a non-empty mapping of model name -> {context_window, max_response}.")
    checked: dict[str, dict[str, int]] = {}
    for name, limits in models.items():
        if not isinstance(name, str) or not name:
            raise ValueError(f"Model names must be non-empty strings, got {name!r}.")
        if not isinstance(limits, Mapping):
            raise ValueError(f"Model {name!r} needs {{context_window, max_response}}, got {limits!r}.")
        window, response = limits.get("context_window"), limits.get("max_response")
        for field, value in (("context_window", window), ("max_response", response)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"Model {name!r}: {field} must be a positive integer, got {value!r}.")
        if response >= window:
            raise ValueError(
                f"Model {name!r}: max_response ({response}) must be smaller than context_window ({window})."
            )
        checked[name] = {"context_window": window, "max_response": response}
    return checked


def resolve_model(model: str, models: Mapping[str, Mapping[str, int]]) -> tuple[str, dict[str, int]]:
    """
    The allowlisted name and limits of ``model``.

    :raises ModelNotAllowedError: If the model (with or without ``:latest``) is not in the allowlist.
    """
    if isinstance(model, str):
        if model in models:
            return model, dict(models[model])
        base = model[: -len(":latest")] if model.endswith(":latest") else None
        # Only an untagged name has an implicit `:latest` (llama3.2 == llama3.2:latest; qwen3:8b is already tagged).
        if base and ":" not in base and base in models:
            return base, dict(models[base])
    raise ModelNotAllowedError(f"Model '{model}' not in allowlist. Available: {list(models)}")


def allowlist_with_default(default_model: str, models: Mapping[str, Any] | None) -> dict[str, dict[str, int]]:
    """
    The checked allowlist (``DEFAULT_MODEL_ALLOWLIST`` when ``models`` is ``None``), which must allow ``default_model``.

    :raises ValueError: If the table is malformed (see :func:`validate_allowlist`).
    :raises ModelNotAllowedError: If ``default_model`` is not in it.
    """
    checked = validate_allowlist(models if models is not None else DEFAULT_MODEL_ALLOWLIST)
    resolve_model(default_model, checked)
    return checked

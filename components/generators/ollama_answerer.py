"""
``OllamaAnswerer``: the LLM answer backend (docs/contract.md, "Answers"), through ollama-haystack's
``OllamaChatGenerator``.

* Temperature ``RAG_TEMPERATURE`` (0.1) and timeout ``RAG_TIMEOUT_SECONDS`` (30 s).
* ``num_ctx`` (the model's window, from the token budgeter) and ``num_predict``
  (the reserved response) are sent with every request, so Ollama neither
  truncates the prompt to its small default window nor overruns the budget.
* Before generating, the model is validated against the allowlist
  (:class:`ModelNotAllowedError`) and Ollama's ``/api/tags``, with or without
  ``:latest`` (:class:`ModelUnavailableError`: "... Run: ollama pull <model>").
* A refused connection is :class:`LLMConnectionError`, a slow reply
  :class:`LLMTimeoutError`. It never falls back to the extractive backend.
"""

import logging
from collections.abc import Callable
from typing import Any

from haystack import component, default_from_dict, default_to_dict
from haystack.dataclasses import ChatMessage, StreamingChunk

from components.core.model_allowlist import allowlist_with_default, resolve_model
from components.core.span_tags import tag_span
from components.generators.ollama_chat import OllamaChat, validate_ollama_settings

logger = logging.getLogger(__name__)


@component
class OllamaAnswerer:
    """
    Usage:
    ```python
    answerer = OllamaAnswerer(model="llama3.2", url="http://localhost:11434")
    out = answerer.run(messages=prompt_messages, num_ctx=8192, max_response_tokens=1024)
    out["answer"], out["model_used"], out["generation_time_ms"]
    ```
    """

    def __init__(
        self,
        model: str = "llama3.2",
        url: str = "http://localhost:11434",
        temperature: float = 0.1,
        timeout: float = 30.0,
        models: dict[str, dict[str, int]] | None = None,
        keep_alive: float | str | None = None,
        think: bool = False,
        seed: int | None = None,
        check_availability: bool = True,
    ) -> None:
        """
        :param model: Default model (``CHAT_MODEL``); must be in the allowlist.
        :param url: Ollama's base URL (``OLLAMA_BASE_URL``).
        :param temperature: Sampling temperature (``RAG_TEMPERATURE``).
        :param timeout: Seconds before a request times out (``RAG_TIMEOUT_SECONDS``).
        :param models: The model allowlist ``{name: {context_window, max_response}}``.
        :param keep_alive: How long Ollama keeps the model loaded.
        :param think: Let thinking models think; their reasoning is stripped from the answer either way.
        :param seed: Fixed sampling seed, for reproducible answers.
        :param check_availability: Check ``/api/tags`` before each generation (docs/contract.md, "Errors").
        """
        validate_ollama_settings(url, timeout)
        self.models = allowlist_with_default(model, models)
        if not isinstance(temperature, (int, float)) or not 0.0 <= float(temperature) <= 2.0:
            raise ValueError(f"temperature must be within 0-2, got {temperature!r}.")
        self.model = model
        self.url = url
        self.temperature = float(temperature)
        self.timeout = float(timeout)
        self.keep_alive = keep_alive
        self.think = bool(think)
        self.seed = seed
        self.check_availability = bool(check_availability)
        self._chat = OllamaChat(url, self.timeout, keep_alive=keep_alive, think=self.think)

    def to_dict(self) -> dict[str, Any]:
        """Serialize the component."""
        return default_to_dict(
            self,
            model=self.model,
            url=self.url,
            temperature=self.temperature,
            timeout=self.timeout,
            models=self.models,
            keep_alive=self.keep_alive,
            think=self.think,
            seed=self.seed,
            check_availability=self.check_availability,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "OllamaAnswerer":
        """Deserialize the component."""
        return default_from_dict(cls, data)

    def health(self) -> dict[str, Any]:
        """Reachability of Ollama and availability of the default model; never raises."""
        return self._chat.health(self.model)

    def _request(
        self, model: str | None, num_ctx: int | None, max_response_tokens: int | None
    ) -> tuple[str, dict[str, Any]]:
        """The allowlisted model name and the Ollama options of one generation (shared by ``run`` and ``run_async``)."""
        name, limits = resolve_model(model or self.model, self.models)
        options: dict[str, Any] = {
            "temperature": self.temperature,
            "num_ctx": num_ctx or limits["context_window"],
            "num_predict": max_response_tokens or limits["max_response"],
        }
        if self.seed is not None:
            options["seed"] = self.seed
        return name, options

    @component.output_types(answer=str, model_used=str, generation_time_ms=float)
    def run(
        self,
        messages: list[ChatMessage],
        model: str | None = None,
        num_ctx: int | None = None,
        max_response_tokens: int | None = None,
        streaming_callback: Callable[[StreamingChunk], None] | None = None,
    ) -> dict[str, Any]:
        """
        :param messages: The prompt (system with SourceId context, then the user query).
        :param model: Model override (allowlisted); defaults to ``model``.
        :param num_ctx: Context window to request from Ollama (from the token budgeter).
        :param max_response_tokens: Generation limit (from the token budgeter).
        :param streaming_callback: Receives each streamed chunk; the full answer is still returned.
        :returns: ``answer``, ``model_used`` and ``generation_time_ms``.
        :raises ModelNotAllowedError, ModelUnavailableError, LLMConnectionError, LLMTimeoutError:
        """
        name, options = self._request(model, num_ctx, max_response_tokens)
        if self.check_availability:
            self._chat.ensure_available(name)
        answer, elapsed = self._chat.chat(name, messages, options, streaming_callback)
        _tag_generation(name, options)
        return {"answer": answer, "model_used": name, "generation_time_ms": elapsed}

    @component.output_types(answer=str, model_used=str, generation_time_ms=float)
    async def run_async(
        self,
        messages: list[ChatMessage],
        model: str | None = None,
        num_ctx: int | None = None,
        max_response_tokens: int | None = None,
        streaming_callback: Callable[[StreamingChunk], None] | None = None,
    ) -> dict[str, Any]:
        """Async :meth:`run`."""
        name, options = self._request(model, num_ctx, max_response_tokens)
        if self.check_availability:
            await self._chat.ensure_available_async(name)
        answer, elapsed = await self._chat.chat_async(name, messages, options, streaming_callback)
        _tag_generation(name, options)
        return {"answer": answer, "model_used": name, "generation_time_ms": elapsed}


def _tag_generation(model: str, options: dict[str, Any]) -> None:
    tag_span(
        {
            "sourcebound.model": model,
            "sourcebound.llm_called": True,
            "sourcebound.tokens.num_ctx": options["num_ctx"],
            "sourcebound.tokens.max_response": options["num_predict"],
        }
    )

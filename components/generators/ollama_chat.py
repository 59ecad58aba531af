"""
Talking to Ollama, in one place, for every Ollama-backed component (answerer,
support rater, classifier).

* Chat goes through ollama-haystack's ``OllamaChatGenerator`` (one per model,
  created on first use and reused).
* Model validation follows docs/contract.md, "Errors": the allowlist first
  (:class:`ModelNotAllowedError`), then Ollama's ``/api/tags``, accepting the model
  with or without a ``:latest`` suffix (:class:`ModelUnavailableError` naming
  ``ollama pull <model>``).
* Failures map onto the typed errors: a refused or broken connection is
  :class:`LLMConnectionError`, a read that outlives ``timeout`` is
  :class:`LLMTimeoutError`, a 404 for the model is :class:`ModelUnavailableError`.
  Nothing falls back to another backend.
"""

import asyncio
import functools
import logging
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import httpx
from haystack.dataclasses import ChatMessage, StreamingChunk

from components.core.errors import LLMConnectionError, LLMTimeoutError, ModelUnavailableError, RAGServiceError
from components.core.url_credentials import redact_url_credentials, strip_userinfo

logger = logging.getLogger(__name__)

_THINK_RE = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
TAGS_TIMEOUT_SECONDS = 5.0


def strip_thinking(text: str) -> str:
    """A reply without a reasoning model's ``<think>...</think>`` block."""
    return _THINK_RE.sub("", text or "").strip()


@functools.lru_cache(maxsize=1)
def _ssl_context():
    return httpx.create_ssl_context()


def _available(model: str, names: list[str]) -> bool:
    return model in names or f"{model}:latest" in names or (model.endswith(":latest") and model[:-7] in names)


@contextmanager
def ollama_errors(url: str, model: str, timeout: float) -> Iterator[None]:
    """Translate ollama/httpx failures into the service's typed errors (no URL credentials in their messages)."""
    from ollama import ResponseError

    url = strip_userinfo(url)  # an OLLAMA_BASE_URL password is never shown (docs/contract.md, "Errors")
    try:
        yield
    except RAGServiceError:
        raise
    except ResponseError as error:
        if error.status_code == 404:
            raise ModelUnavailableError(f"Model '{model}' not available in Ollama. Run: ollama pull {model}") from error
        raise LLMConnectionError(
            redact_url_credentials(f"Ollama at {url} answered with HTTP {error.status_code}: {error.error}")
        ) from error
    except httpx.TimeoutException as error:
        raise LLMTimeoutError(
            f"Ollama at {url} did not answer within {timeout:g} s (model '{model}'); "
            "raise RAG_TIMEOUT_SECONDS or use a smaller model."
        ) from error
    except (ConnectionError, httpx.TransportError) as error:
        raise LLMConnectionError(
            redact_url_credentials(
                f"Cannot connect to Ollama at {url}: {error}. Start Ollama (`ollama serve`) or set OLLAMA_BASE_URL."
            )
        ) from error


class OllamaChat:
    """
    Chat with Ollama models through ``OllamaChatGenerator``, with the service's validation and errors.

    :param url: Ollama's base URL.
    :param timeout: Seconds before a request counts as timed out.
    :param keep_alive: How long Ollama keeps the model loaded (Ollama's default when ``None``).
    :param think: Let thinking models think (their reasoning is never part of the answer).
    """

    def __init__(self, url: str, timeout: float, keep_alive: float | str | None = None, think: bool = False) -> None:
        self.url = url.rstrip("/")
        self.timeout = timeout
        self.keep_alive = keep_alive
        self.think = think
        self._generators: dict[str, Any] = {}
        self._async_generators: dict[str, tuple[Any, Any]] = {}
        self._client: httpx.Client | None = None
        self._lock = threading.Lock()

    def _new_generator(self, model: str):
        from haystack_integrations.components.generators.ollama import OllamaChatGenerator

        return OllamaChatGenerator(
            model=model, url=self.url, timeout=self.timeout, keep_alive=self.keep_alive, think=self.think
        )

    def generator(self, model: str):
        """The (cached) ``OllamaChatGenerator`` for ``model``, for synchronous calls."""
        with self._lock:
            if model not in self._generators:
                self._generators[model] = self._new_generator(model)
            return self._generators[model]

    def async_generator(self, model: str):
        """
        The ``OllamaChatGenerator`` for ``model`` for the running event loop: its async client is bound to
        the loop it was created in, so a new loop (another ``asyncio.run``) gets a new generator.
        """
        loop = asyncio.get_running_loop()
        with self._lock:
            cached = self._async_generators.get(model)
            if cached is None or cached[0] is not loop:
                cached = (loop, self._new_generator(model))
                self._async_generators[model] = cached
            return cached[1]

    def _tags_timeout(self) -> float:
        return min(TAGS_TIMEOUT_SECONDS, float(self.timeout))

    def _http(self) -> httpx.Client:
        # One client per OllamaChat: building an httpx client loads an SSL context (~30 ms).
        with self._lock:
            if self._client is None:
                self._client = httpx.Client(timeout=self._tags_timeout(), verify=_ssl_context())
            return self._client

    def available_models(self) -> list[str]:
        """Model names Ollama has pulled (``/api/tags``)."""
        with ollama_errors(self.url, "?", self._tags_timeout()):
            response = self._http().get(f"{self.url}/api/tags")
            response.raise_for_status()
        return [entry.get("name") or entry.get("model") for entry in response.json().get("models", [])]

    async def available_models_async(self) -> list[str]:
        """Async :meth:`available_models`."""
        with ollama_errors(self.url, "?", self._tags_timeout()):
            async with httpx.AsyncClient(timeout=self._tags_timeout(), verify=_ssl_context()) as client:
                response = await client.get(f"{self.url}/api/tags")
                response.raise_for_status()
        return [entry.get("name") or entry.get("model") for entry in response.json().get("models", [])]

    @staticmethod
    def _check(model: str, names: list[str]) -> None:
        if not _available(model, names):
            raise ModelUnavailableError(f"Model '{model}' not available in Ollama. Run: ollama pull {model}")

    def ensure_available(self, model: str) -> None:
        """
        :raises ModelUnavailableError: If Ollama has not pulled ``model`` (nor ``model:latest``).
        :raises LLMConnectionError: If Ollama cannot be reached.
        """
        self._check(model, self.available_models())

    async def ensure_available_async(self, model: str) -> None:
        """Async :meth:`ensure_available`."""
        self._check(model, await self.available_models_async())

    def health(self, model: str) -> dict[str, Any]:
        """``{"backend": "ollama", "model", "reachable", "model_available", "url"}``; never raises."""
        try:
            names = self.available_models()
        except RAGServiceError as error:
            return {
                "backend": "ollama",
                "model": model,
                "url": strip_userinfo(self.url),
                "reachable": False,
                "model_available": False,
                "error": str(error),
            }
        return {
            "backend": "ollama",
            "model": model,
            "url": strip_userinfo(self.url),
            "reachable": True,
            "model_available": _available(model, names),
        }

    def chat(
        self,
        model: str,
        messages: list[ChatMessage],
        options: dict[str, Any],
        streaming_callback: Callable[[StreamingChunk], None] | None = None,
    ) -> tuple[str, float]:
        """
        One chat completion.

        :returns: The reply text (reasoning removed) and the time it took in milliseconds.
        """
        generator = self.generator(model)
        started = time.perf_counter()
        with ollama_errors(self.url, model, self.timeout):
            result = generator.run(messages=messages, generation_kwargs=options, streaming_callback=streaming_callback)
        return strip_thinking(result["replies"][0].text or ""), (time.perf_counter() - started) * 1000.0

    async def chat_async(
        self,
        model: str,
        messages: list[ChatMessage],
        options: dict[str, Any],
        streaming_callback: Callable[[StreamingChunk], Any] | None = None,
    ) -> tuple[str, float]:
        """Async :meth:`chat`."""
        generator = self.async_generator(model)
        started = time.perf_counter()
        with ollama_errors(self.url, model, self.timeout):
            result = await generator.run_async(
                messages=messages, generation_kwargs=options, streaming_callback=streaming_callback
            )
        return strip_thinking(result["replies"][0].text or ""), (time.perf_counter() - started) * 1000.0


def validate_ollama_settings(url: str, timeout: float) -> None:
    """Check Ollama init parameters early."""
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise ValueError(f"url must be an http(s) URL of Ollama, got {url!r}.")
    if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or timeout <= 0:
        raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}.")

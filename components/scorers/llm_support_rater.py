"""
``LLMSupportRater``: the LLM part of the hybrid confidence (docs/contract.md,
"Confidence and routing"). It asks Ollama, with the contract's ``CONFIDENCE_PROMPT``
(docs/contract.md, "Prompts"), how well the answer is supported by the context, and
returns the 0-100 rating.

Parsing: reasoning (``<think>``) and "/100", "out of 100" and "%" are removed, and
the first integer of the reply is the rating if it lies within 0-100. A reply
without one (or with a number outside 0-100) is *unparsable*: it is logged as a
warning and the rating is ``None``, which makes the confidence renormalise over
retrieval and coverage. With no context there is nothing to rate, so no request
is made and the rating is ``None``.

Connection failures and timeouts raise the typed errors: confidence is never
silently computed without the LLM when the LLM is down.
"""

import logging
import re
from typing import Any

from haystack import component, default_from_dict, default_to_dict
from haystack.dataclasses import ChatMessage

from components.core.model_allowlist import allowlist_with_default, resolve_model
from components.core.prompts import CONFIDENCE_PROMPT, validate_template
from components.generators.ollama_chat import OllamaChat, strip_thinking, validate_ollama_settings

logger = logging.getLogger(__name__)

_SCALE_RE = re.compile(r"(?:/\s*100|out\s+of\s+100|%)", re.IGNORECASE)
_INTEGER_RE = re.compile(r"(?<![\d.])-?\d+(?:\.\d+)?")


def parse_rating(reply: str) -> int | None:
    """The 0-100 rating in an LLM reply, or ``None`` when there is none."""
    text = _SCALE_RE.sub(" ", strip_thinking(reply))
    match = _INTEGER_RE.search(text)
    if match is None:
        return None
    value = float(match.group(0))
    if not 0 <= value <= 100:
        return None
    return int(round(value))


@component
class LLMSupportRater:
    """
    Usage:
    ```python
    rater = LLMSupportRater(model="llama3.2", url="http://localhost:11434")
    rater.run(query=q, answer=a, context=context)["llm_score"]  # 85, or None when unparsable
    ```
    """

    def __init__(
        self,
        model: str = "llama3.2",
        url: str = "http://localhost:11434",
        timeout: float = 30.0,
        temperature: float = 0.0,
        prompt: str = CONFIDENCE_PROMPT,
        models: dict[str, dict[str, int]] | None = None,
        keep_alive: float | str | None = None,
        check_availability: bool = False,
    ) -> None:
        """
        :param model: Default model; must be in the allowlist.
        :param url: Ollama's base URL.
        :param timeout: Seconds before the rating request times out.
        :param temperature: Sampling temperature for the rating (0: most repeatable).
        :param prompt: The rating prompt (``{context_summary}``, ``{query}``, ``{answer}``).
        :param models: The model allowlist.
        :param keep_alive: How long Ollama keeps the model loaded.
        :param check_availability: Check ``/api/tags`` first (off: the answerer just did).
        """
        validate_ollama_settings(url, timeout)
        validate_template(prompt, {"context_summary", "query", "answer"}, {"query", "answer"}, "prompt")
        self.models = allowlist_with_default(model, models)
        self.model = model
        self.url = url
        self.timeout = float(timeout)
        self.temperature = float(temperature)
        self.prompt = prompt
        self.keep_alive = keep_alive
        self.check_availability = bool(check_availability)
        self._chat = OllamaChat(url, self.timeout, keep_alive=keep_alive)

    def to_dict(self) -> dict[str, Any]:
        """Serialize the component."""
        return default_to_dict(
            self,
            model=self.model,
            url=self.url,
            timeout=self.timeout,
            temperature=self.temperature,
            prompt=self.prompt,
            models=self.models,
            keep_alive=self.keep_alive,
            check_availability=self.check_availability,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "LLMSupportRater":
        """Deserialize the component."""
        return default_from_dict(cls, data)

    def _request(self, query: str, answer: str, context: str, model: str | None, num_ctx: int | None):
        name, limits = resolve_model(model or self.model, self.models)
        messages = [ChatMessage.from_user(self.prompt.format(context_summary=context, query=query, answer=answer))]
        options = {"temperature": self.temperature, "num_ctx": num_ctx or limits["context_window"], "num_predict": 16}
        return name, messages, options

    def _parse(self, reply: str, model: str) -> int | None:
        rating = parse_rating(reply)
        if rating is None:
            logger.warning(
                "Unparsable support rating from %s: %r; confidence renormalises without it.", model, reply[:200]
            )
        return rating

    @component.output_types(llm_score=int | None)
    def run(
        self, query: str, answer: str, context: str, model: str | None = None, num_ctx: int | None = None
    ) -> dict[str, Any]:
        """
        :param query: The user's question.
        :param answer: The answer to rate.
        :param context: The context the answer was generated from (the prompt's "CONTEXT SUMMARY").
        :param model: Model override (allowlisted).
        :param num_ctx: Context window to request from Ollama.
        :returns: ``llm_score``: 0-100, or ``None`` (no context, or an unparsable reply).
        """
        if not context.strip():
            return {"llm_score": None}
        name, messages, options = self._request(query, answer, context, model, num_ctx)
        if self.check_availability:
            self._chat.ensure_available(name)
        reply, _ = self._chat.chat(name, messages, options)
        return {"llm_score": self._parse(reply, name)}

    @component.output_types(llm_score=int | None)
    async def run_async(
        self, query: str, answer: str, context: str, model: str | None = None, num_ctx: int | None = None
    ) -> dict[str, Any]:
        """Async :meth:`run`."""
        if not context.strip():
            return {"llm_score": None}
        name, messages, options = self._request(query, answer, context, model, num_ctx)
        if self.check_availability:
            await self._chat.ensure_available_async(name)
        reply, _ = await self._chat.chat_async(name, messages, options)
        return {"llm_score": self._parse(reply, name)}

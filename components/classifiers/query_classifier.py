"""
``QueryClassifier``: FACTUAL, PROCEDURAL, CLARIFICATION or GREETING (the
``QUERY_CLASSIFIER_PROMPT`` of docs/contract.md, "Prompts").

Classification only shapes retrieval: every query still goes through retrieval
(the contract has no DIRECT path; docs/contract.md, "Answers"). A CLARIFICATION folds the last user
turn of the history (or, with none, the last line of a conversation summary) into the retrieval query
("what about part-timers?" after "how many vacation days do employees get?" retrieves with both), so the
follow-up finds the same documents; the prompt still carries the original query.

Backends:

* ``rules`` (no LLM, deterministic): a greeting is a query that opens with a
  greeting or thanks and has no other content word; a clarification needs chat
  history and either a follow-up opener ("what about", "and", "why", "explain",
  "tell me more", ...) or a short query (at most 3 content words) that refers
  back with a pronoun (it, that, this, they, ...); a procedural query asks how to
  do something ("how do/can/should I", "how to", "steps", "procedure", ...);
  everything else is factual.
* ``ollama``: the classifier prompt of docs/contract.md, "Prompts" (the last two
  history messages are sent before it, so CLARIFICATION can be judged). A reply naming no category is
  logged and the rules decide; connection failures raise the typed errors.
"""

import logging
import re
from typing import Any

from haystack import component, default_from_dict, default_to_dict
from haystack.dataclasses import ChatMessage

from components.core.model_allowlist import DEFAULT_MODEL_ALLOWLIST, resolve_model, validate_allowlist
from components.core.models import QueryType
from components.core.prompts import QUERY_CLASSIFIER_PROMPT, validate_template
from components.core.span_tags import tag_span
from components.core.text_analysis import content_words, words
from components.generators.ollama_chat import OllamaChat, strip_thinking, validate_ollama_settings

logger = logging.getLogger(__name__)

BACKENDS = ("rules", "ollama")

# Words a pure greeting or thanks may contain besides stopwords (normalised forms).
_GREETING_WORDS = frozenset(
    "hi hello hey hiya howdy greeting morning afternoon evening good thank thx cheers bye goodbye welcome great "
    "nice day ok okay everyone folk help lot meet".split()
)
_GREETING_OPENERS = re.compile(
    r"^\s*(hi|hello|hey|hiya|howdy|greetings|good\s+(morning|afternoon|evening|day)|thanks|thank\s+you|thx|cheers|"
    r"bye|goodbye|how\s+are\s+you|nice\s+to\s+meet)\b",
    re.IGNORECASE,
)
_FOLLOW_UP_OPENERS = re.compile(
    r"^\s*(what\s+about|how\s+about|and\b|also\b|what\s+else|why\b|explain|elaborate|tell\s+me\s+more|more\s+(about|on|detail)|"
    r"can\s+you\s+(explain|elaborate|clarify)|what\s+do(es)?\s+(you|that|it)\s+mean|which\s+one|is\s+that|does\s+that|"
    r"what\s+if|same\s+for|in\s+that\s+case)",
    re.IGNORECASE,
)
_BACK_REFERENCES = frozenset("it its that this those these they them their there such".split())
_PROCEDURAL = re.compile(
    r"^\s*(how\s+(do|can|should|would|could|does\s+one|to|may)\b)|\b(steps?\s+(to|for)|procedure|process\s+(for|to|of)|"
    r"instructions?|step[\s-]by[\s-]step|guide\s+(to|for)|what\s+(are\s+the\s+)?steps|walk\s+me\s+through)\b",
    re.IGNORECASE,
)


def last_user_turn(chat_history: list[dict[str, Any]] | None) -> str | None:
    """The content of the most recent user message in the history, if any."""
    for message in reversed(chat_history or []):
        if message.get("role") == "user" and str(message.get("content", "")).strip():
            return str(message["content"]).strip()
    return None


def follow_up_context(chat_history: list[dict[str, Any]] | None) -> str | None:
    """
    What a follow-up refers back to: the last user turn, or, when the history has none (a server-side
    conversation whose raw turns were summarised away), the last line of the newest ``system`` message,
    which holds the summary's most recent topic (docs/contract.md, "Conversations").
    """
    previous = last_user_turn(chat_history)
    if previous is not None:
        return previous
    for message in reversed(chat_history or []):
        if message.get("role") == "system":
            lines = [line.strip() for line in str(message.get("content", "")).splitlines() if line.strip()]
            if lines:
                return lines[-1]
    return None


def classify_by_rules(query: str, chat_history: list[dict[str, Any]] | None = None) -> QueryType:
    """The rule-based classification (module doc)."""
    tokens = words(query)
    if _GREETING_OPENERS.match(query) and all(word in _GREETING_WORDS for word in content_words(query)):
        return QueryType.GREETING
    if chat_history:
        if _FOLLOW_UP_OPENERS.match(query):
            return QueryType.CLARIFICATION
        if len(content_words(query)) <= 3 and _BACK_REFERENCES & set(tokens):
            return QueryType.CLARIFICATION
    if _PROCEDURAL.search(query):
        return QueryType.PROCEDURAL
    return QueryType.FACTUAL


def parse_category(reply: str) -> QueryType | None:
    """The first category named in an LLM reply, or ``None``."""
    match = re.search(r"\b(FACTUAL|PROCEDURAL|CLARIFICATION|GREETING)\b", strip_thinking(reply).upper())
    return QueryType(match.group(1)) if match else None


@component
class QueryClassifier:
    """
    Usage:
    ```python
    classifier = QueryClassifier()  # rules
    history = [{"role": "user", "content": "How many vacation days?"}]
    out = classifier.run(query="what about part-timers?", chat_history=history)
    out["query_type"]       # "CLARIFICATION"
    out["retrieval_query"]  # "How many vacation days? what about part-timers?"
    ```
    """

    def __init__(
        self,
        backend: str = "rules",
        model: str = "llama3.2",
        url: str = "http://localhost:11434",
        timeout: float = 30.0,
        prompt: str = QUERY_CLASSIFIER_PROMPT,
        models: dict[str, dict[str, int]] | None = None,
        keep_alive: float | str | None = None,
    ) -> None:
        """
        :param backend: ``rules`` (no LLM) or ``ollama`` (the classifier prompt of docs/contract.md, "Prompts").
        :param model: Default Ollama model (``ollama`` backend).
        :param url: Ollama's base URL (``ollama`` backend).
        :param timeout: Seconds before the classification request times out.
        :param prompt: The classification prompt (``{query}``).
        :param models: The model allowlist.
        :param keep_alive: How long Ollama keeps the model loaded.
        """
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}.")
        validate_ollama_settings(url, timeout)
        validate_template(prompt, {"query"}, {"query"}, "prompt")
        self.models = validate_allowlist(models if models is not None else DEFAULT_MODEL_ALLOWLIST)
        if backend == "ollama":
            resolve_model(model, self.models)
        self.backend = backend
        self.model = model
        self.url = url
        self.timeout = float(timeout)
        self.prompt = prompt
        self.keep_alive = keep_alive
        self._chat = OllamaChat(url, self.timeout, keep_alive=keep_alive) if backend == "ollama" else None

    def to_dict(self) -> dict[str, Any]:
        """Serialize the component."""
        return default_to_dict(
            self,
            backend=self.backend,
            model=self.model,
            url=self.url,
            timeout=self.timeout,
            prompt=self.prompt,
            models=self.models,
            keep_alive=self.keep_alive,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "QueryClassifier":
        """Deserialize the component."""
        return default_from_dict(cls, data)

    def _messages(self, query: str, chat_history: list[dict[str, Any]] | None) -> list[ChatMessage]:
        earlier = []
        for message in (chat_history or [])[-2:]:
            content = str(message.get("content", ""))
            if content.strip() and message.get("role") in ("user", "assistant"):
                earlier.append(
                    ChatMessage.from_user(content) if message["role"] == "user" else ChatMessage.from_assistant(content)
                )
        return [*earlier, ChatMessage.from_user(self.prompt.format(query=query))]

    def _result(self, query: str, chat_history: list[dict[str, Any]] | None, query_type: QueryType) -> dict[str, Any]:
        retrieval_query = query
        if query_type is QueryType.CLARIFICATION:
            previous = follow_up_context(chat_history)
            if previous and previous != query.strip():
                retrieval_query = f"{previous} {query}"
        tag_span({"sourcebound.query_type": query_type.value})
        return {"query_type": query_type.value, "retrieval_query": retrieval_query}

    def _from_reply(self, reply: str, query: str, chat_history: list[dict[str, Any]] | None) -> QueryType:
        category = parse_category(reply)
        if category is None:
            category = classify_by_rules(query, chat_history)
            logger.warning("Unparsable query category %r; the rules classified it as %s.", reply[:100], category.value)
        return category

    @component.output_types(query_type=str, retrieval_query=str)
    def run(
        self, query: str, chat_history: list[dict[str, Any]] | None = None, model: str | None = None
    ) -> dict[str, Any]:
        """
        :param query: The user's question.
        :param chat_history: Earlier messages ``{"role", "content"}``, oldest first.
        :param model: Model override for the ``ollama`` backend (allowlisted; ignored by ``rules``).
        :returns: ``query_type`` and ``retrieval_query`` (the query, with the last user turn folded in for a
            clarification).
        """
        if self._chat is None:
            return self._result(query, chat_history, classify_by_rules(query, chat_history))
        name, _ = resolve_model(model or self.model, self.models)
        reply, _ = self._chat.chat(name, self._messages(query, chat_history), {"temperature": 0.0, "num_predict": 8})
        return self._result(query, chat_history, self._from_reply(reply, query, chat_history))

    @component.output_types(query_type=str, retrieval_query=str)
    async def run_async(
        self, query: str, chat_history: list[dict[str, Any]] | None = None, model: str | None = None
    ) -> dict[str, Any]:
        """Async :meth:`run`."""
        if self._chat is None:
            return self._result(query, chat_history, classify_by_rules(query, chat_history))
        name, _ = resolve_model(model or self.model, self.models)
        reply, _ = await self._chat.chat_async(
            name, self._messages(query, chat_history), {"temperature": 0.0, "num_predict": 8}
        )
        return self._result(query, chat_history, self._from_reply(reply, query, chat_history))

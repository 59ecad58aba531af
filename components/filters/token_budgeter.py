"""
``TokenBudgeter``: explicit token budgets per model (docs/contract.md, "Token
budget"), counted with tiktoken.

For the chosen model (the request's override or the default, checked against
the allowlist) with window ``W`` and maximum response ``R``:

1. **System prompt**, never truncated: ``S = max(RAG_SYSTEM_PROMPT_TOKENS, tokens of
   the template with empty context and history)``.
2. **Response** reserved: ``min(R, RAG_MAX_RESPONSE_TOKENS)``; also passed on as
   the generation limit.
3. **Query**: its user message. If ``S + query + response > W`` the request cannot
   be served at all: :class:`TokenBudgetExceededError`.
4. ``available = W - S - response - query``.
5. **History**: newest messages first, stopping at the first that does not fit, within
   ``min(available // 3, RAG_MAX_HISTORY_TOKENS)``; what it uses leaves ``available``.
6. **Context**: within ``min(available, RAG_MAX_CONTEXT_TOKENS)``, the lowest-scored
   chunks are dropped first until the rendered context fits; the kept chunks keep
   their rank order.

It reports ``context_tokens_used`` (the rendered context) and ``num_ctx`` (``W``) so
Ollama is told the real window and does not silently truncate the prompt.

tiktoken's ``cl100k_base`` approximates the Llama/Qwen tokenizers (typically within
10-15%); with the default caps a llama3.2 prompt uses at most ~4.6k of its 8k tokens.
"""

import logging
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict

from components.core.errors import TokenBudgetExceededError
from components.core.model_allowlist import allowlist_with_default, resolve_model
from components.core.prompts import (
    CONTEXT_CHUNK_TEMPLATE,
    RAG_SYSTEM_PROMPT,
    USER_PROMPT_TEMPLATE,
    rag_template_parameters,
    render_context,
    render_history,
    validate_rag_templates,
)
from components.core.span_tags import documents_in_out, tag_span
from components.core.text_analysis import count_tokens, truncate_tokens, validate_encoding

logger = logging.getLogger(__name__)


def _positive_int(name: str, value: Any, allow_zero: bool = False) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < (0 if allow_zero else 1):
        raise ValueError(f"{name} must be a {'non-negative' if allow_zero else 'positive'} integer, got {value!r}.")
    return value


@component
class TokenBudgeter:
    """
    Fits history and context into the chosen model's window.

    Usage:
    ```python
    budgeter = TokenBudgeter(default_model="llama3.2")
    history = [{"role": "user", "content": "hi"}]
    out = budgeter.run(query="How many vacation days?", documents=chunks, chat_history=history)
    out["documents"], out["chat_history"], out["context_tokens_used"], out["num_ctx"]
    ```
    """

    # run() changes none of its inputs and keeps none of them: the planned pipeline passes them without a defensive
    # copy (docs/contract.md, "Pipeline runs").
    reads_inputs_only = True

    def __init__(
        self,
        default_model: str = "llama3.2",
        models: dict[str, dict[str, int]] | None = None,
        system_prompt: str = RAG_SYSTEM_PROMPT,
        user_prompt: str = USER_PROMPT_TEMPLATE,
        chunk_template: str = CONTEXT_CHUNK_TEMPLATE,
        chunk_separator: str = "\n\n",
        max_context_tokens: int = 3000,
        max_history_tokens: int = 1000,
        max_response_tokens: int = 1024,
        system_prompt_tokens: int = 500,
        encoding: str = "cl100k_base",
    ) -> None:
        """
        :param default_model: Model when the request names none (``CHAT_MODEL``).
        :param models: Allowlist ``{name: {context_window, max_response}}``; defaults to ``DEFAULT_MODEL_ALLOWLIST``.
        :param system_prompt: The system prompt template (``{context}``, ``{chat_history}``), as in the prompt builder.
        :param user_prompt: The user message template (``{query}``), as in the prompt builder.
        :param chunk_template: The context-chunk template, as in the prompt builder.
        :param chunk_separator: Text between chunks, as in the prompt builder.
        :param max_context_tokens: Cap on context tokens (``RAG_MAX_CONTEXT_TOKENS``).
        :param max_history_tokens: Cap on history tokens (``RAG_MAX_HISTORY_TOKENS``).
        :param max_response_tokens: Cap on the reserved response (``RAG_MAX_RESPONSE_TOKENS``).
        :param system_prompt_tokens: Minimum reservation for the system prompt (``RAG_SYSTEM_PROMPT_TOKENS``).
        :param encoding: tiktoken encoding name.
        """
        self.models = allowlist_with_default(default_model, models)
        validate_rag_templates(system_prompt, user_prompt, chunk_template)
        validate_encoding(encoding)
        self.default_model = default_model
        self.system_prompt = system_prompt
        self.user_prompt = user_prompt
        self.chunk_template = chunk_template
        self.chunk_separator = chunk_separator
        self.max_context_tokens = _positive_int("max_context_tokens", max_context_tokens)
        self.max_history_tokens = _positive_int("max_history_tokens", max_history_tokens, allow_zero=True)
        self.max_response_tokens = _positive_int("max_response_tokens", max_response_tokens)
        self.system_prompt_tokens = _positive_int("system_prompt_tokens", system_prompt_tokens, allow_zero=True)
        self.encoding = encoding

    def to_dict(self) -> dict[str, Any]:
        """Serialize the component."""
        return default_to_dict(
            self,
            default_model=self.default_model,
            models=self.models,
            **rag_template_parameters(self),
            max_context_tokens=self.max_context_tokens,
            max_history_tokens=self.max_history_tokens,
            max_response_tokens=self.max_response_tokens,
            system_prompt_tokens=self.system_prompt_tokens,
            encoding=self.encoding,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "TokenBudgeter":
        """Deserialize the component."""
        return default_from_dict(cls, data)

    def count(self, text: str) -> int:
        """Tokens of ``text`` in this budgeter's encoding."""
        return count_tokens(text, self.encoding)

    def truncate_history(self, history: list[dict[str, Any]], max_tokens: int) -> tuple[list[dict[str, Any]], int]:
        """
        Keep the most recent messages within ``max_tokens`` (newest first, stop at the first that does not fit),
        and always the newest user message (docs/contract.md, "Token budget"): its place is reserved first, so a
        long question is never dropped for the replies around it; when it alone exceeds the budget it is cut to
        the budget's length (its start kept).

        :returns: The kept messages in chronological order, and the tokens of their rendered form.
        """
        if not history or max_tokens <= 0:
            return [], 0
        newest_user = next((i for i in range(len(history) - 1, -1, -1) if history[i].get("role") == "user"), None)
        kept: dict[int, dict[str, Any]] = {}
        used = 0
        if newest_user is not None:
            message = history[newest_user]
            if self.count(render_history([message])) > max_tokens:
                prefix = self.count(render_history([{**message, "content": ""}]))
                content = truncate_tokens(str(message.get("content", "")), max_tokens - prefix, self.encoding)
                message = {**message, "content": content}
                # Cutting at a token boundary can re-tokenise one longer: trim until the line fits.
                while content and self.count(render_history([message])) > max_tokens:
                    content = truncate_tokens(content, self.count(content) - 1, self.encoding)
                    message = {**message, "content": content}
            kept[newest_user] = message
            used = self.count(render_history([message]))
        for index in range(len(history) - 1, -1, -1):
            if index in kept:
                continue
            # +1 for the line break that joins this message to the others.
            cost = self.count(render_history([history[index]])) + 1
            if used + cost > max_tokens:
                break
            kept[index] = history[index]
            used += cost
        messages = [kept[index] for index in sorted(kept)]
        return messages, (self.count(render_history(messages)) if messages else 0)

    def fit_context(self, documents: list[Document], max_tokens: int) -> tuple[list[Document], int]:
        """
        Drop the lowest-scored chunks until the rendered context fits ``max_tokens``.

        :returns: The kept chunks in their original order, and the rendered context's tokens.
        """
        kept = list(documents)
        # Lowest score first; among equal scores the lower-ranked (later) chunk goes first.
        drop_order = sorted(range(len(kept)), key=lambda i: (kept[i].score if kept[i].score is not None else 0.0, -i))
        dropped: set[int] = set()
        indexed = list(enumerate(documents))
        for index in [None, *drop_order]:
            if index is not None:
                dropped.add(index)
            current = [doc for i, doc in indexed if i not in dropped]
            tokens = self.count(render_context(current, self.chunk_template, self.chunk_separator)) if current else 0
            if tokens <= max_tokens:
                return current, tokens
        return [], 0

    @component.output_types(
        documents=list[Document],
        chat_history=list[dict[str, Any]],
        context_tokens_used=int,
        num_ctx=int,
        max_response_tokens=int,
        model=str,
        budget=dict[str, Any],
    )
    def run(
        self,
        query: str,
        documents: list[Document],
        chat_history: list[dict[str, Any]] | None = None,
        model: str | None = None,
    ) -> dict[str, Any]:
        """
        :param query: The user's question (as sent to the model).
        :param documents: Context candidates in rank order, ``score`` = similarity.
        :param chat_history: Earlier messages ``{"role", "content"}``, oldest first.
        :param model: Model override; must be in the allowlist.
        :returns: ``documents`` and ``chat_history`` that fit; ``context_tokens_used``; ``num_ctx`` (the model's
            window, for Ollama); ``max_response_tokens`` (the reserved response); ``model`` (the allowlisted name);
            ``budget`` (the full breakdown).
        :raises ModelNotAllowedError: If the model is not allowlisted.
        :raises TokenBudgetExceededError: If the query and system prompt alone do not fit.
        """
        model_name, limits = resolve_model(model or self.default_model, self.models)
        window = limits["context_window"]
        response = min(limits["max_response"], self.max_response_tokens)
        system_tokens = max(
            self.system_prompt_tokens, self.count(self.system_prompt.format(context="", chat_history=""))
        )
        query_tokens = self.count(self.user_prompt.format(query=query))
        available = window - system_tokens - response - query_tokens
        if available < 0:
            raise TokenBudgetExceededError(
                f"The query ({query_tokens} tokens) and the system prompt ({system_tokens}) with the reserved response "
                f"({response}) exceed the {window}-token window of '{model_name}'. Shorten the query or choose a model "
                f"with a larger window: {sorted(self.models, key=lambda m: self.models[m]['context_window'])}."
            )

        history = list(chat_history or [])
        history_budget = min(available // 3, self.max_history_tokens)
        kept_history, history_tokens = self.truncate_history(history, history_budget)
        if len(kept_history) < len(history):
            logger.info(
                "Chat history truncated: kept the %d most recent of %d messages.", len(kept_history), len(history)
            )
        available -= history_tokens

        context_budget = min(available, self.max_context_tokens)
        kept_documents, context_tokens = self.fit_context(list(documents), context_budget)
        if len(kept_documents) < len(documents):
            logger.info("Context trimmed to the budget: kept %d of %d chunks.", len(kept_documents), len(documents))

        budget = {
            "model": model_name,
            "context_window": window,
            "system_tokens": system_tokens,
            "query_tokens": query_tokens,
            "response_tokens_reserved": response,
            "history_budget": history_budget,
            "history_tokens": history_tokens,
            "history_messages_dropped": len(history) - len(kept_history),
            "context_budget": context_budget,
            "context_tokens": context_tokens,
            "context_chunks_dropped": len(documents) - len(kept_documents),
        }
        tag_span(
            documents_in_out(documents, kept_documents),
            {
                "sourcebound.model": model_name,
                "sourcebound.tokens.context": context_tokens,
                "sourcebound.tokens.context_budget": context_budget,
                "sourcebound.tokens.query": query_tokens,
                "sourcebound.tokens.system": system_tokens,
                "sourcebound.tokens.history": history_tokens,
                "sourcebound.history.dropped": len(history) - len(kept_history),
            },
        )
        return {
            "documents": kept_documents,
            "chat_history": kept_history,
            "context_tokens_used": context_tokens,
            "num_ctx": window,
            "max_response_tokens": response,
            "model": model_name,
            "budget": budget,
        }

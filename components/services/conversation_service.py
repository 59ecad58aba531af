"""
Server-side conversations (docs/contract.md, "Conversations"): a RAG request carrying ``conversation_id``
gets the conversation's rolling summary and recent turns as its chat history, and its question and answer
are recorded as the next turn.

Every read and write names the caller's tenant and user (from the server-side identity), so another user's or
tenant's conversation id is a :class:`ConversationNotFoundError` (HTTP 404) exactly like an unknown one, never a
leak. The rows live in :class:`components.stores.conversation_store.ConversationStore`
(``$SOURCEBOUND_DATA_DIR/conversations.sqlite`` or the shared database).

Rolling summary: after each turn, when the conversation's unsummarised text passes
``SOURCEBOUND_CONVERSATION_SUMMARY_THRESHOLD_CHARS``, every unsummarised turn except the newest
``SOURCEBOUND_CONVERSATION_RECENT_MESSAGES`` is folded into a new summary by the configured generator
(Ollama) or, in the embedded default, extractively
(:mod:`components.generators.conversation_summarizer`). With ``SOURCEBOUND_CONVERSATION_RETENTION=summaries_only``
the folded raw turns are deleted (the specification's "summaries only"); ``keep`` (default) marks them
summarised and keeps them until the conversation is deleted. A summariser failure is logged and the turns
stay unsummarised (tried again after the next turn): it never fails the answered request.

Usage:

```python
from components.services.conversation_service import ConversationService, ConversationSettings

service = ConversationService("data/conversations.sqlite", ConversationSettings.from_env(), summarizer)
conversation = service.create(identity)
history = service.history(conversation["conversation_id"], identity)   # summary + recent turns
service.record_turn(conversation["conversation_id"], identity, "How many leave days?", "27 days ...")
```
"""

import logging
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from components.core.errors import InvalidRequestError, NotFoundError
from components.core.requester import Identity
from components.runtime.environment import env_choice, env_int
from components.stores.conversation_store import CONVERSATIONS_FILE, ConversationStore, Owner

logger = logging.getLogger(__name__)

RETENTION_MODES = ("keep", "summaries_only")
SUMMARY_HEADER = "Summary of the earlier conversation:"


@dataclass(frozen=True)
class ConversationSettings:
    """
    :param recent_messages: Raw turns kept verbatim (not summarised) at the end of the history.
    :param summary_threshold_chars: Summarise once the unsummarised turns hold more characters than this.
    :param retention: ``keep`` or ``summaries_only`` (delete raw turns once summarised).
    """

    recent_messages: int = 4
    summary_threshold_chars: int = 2000
    retention: str = "keep"

    @classmethod
    def from_env(cls) -> "ConversationSettings":
        return cls(
            recent_messages=env_int("SOURCEBOUND_CONVERSATION_RECENT_MESSAGES", cls.recent_messages, 0),
            summary_threshold_chars=env_int(
                "SOURCEBOUND_CONVERSATION_SUMMARY_THRESHOLD_CHARS", cls.summary_threshold_chars, 0
            ),
            retention=env_choice("SOURCEBOUND_CONVERSATION_RETENTION", cls.retention, RETENTION_MODES),
        )


class ConversationNotFoundError(NotFoundError):
    """The conversation does not exist for this caller: unknown and someone else's read the same."""

    def __init__(self, conversation_id: str) -> None:
        super().__init__(f"Conversation {conversation_id!r} not found.")


def _owner(identity: Identity) -> Owner:
    # The key is part of the owner: another key of the same user (other tags) must not read what this one was
    # answered (docs/contract.md, "Conversations"); trusted mode has no key.
    return identity.tenant_id, identity.user_id or "", identity.key_id or ""


class ConversationService:
    """
    :param path: The SQLite file (created on first use) when no shared database is configured.
    :param settings: Summary and retention settings.
    :param summarizer: A component with ``run(messages, previous_summary) -> {"summary": str}``.
    :param database_url: The shared database (default: ``SOURCEBOUND_DATABASE_URL``; none: ``path``).
    """

    def __init__(
        self, path: str | Path, settings: ConversationSettings, summarizer: Any, database_url: str | None = None
    ) -> None:
        self.store = ConversationStore(path, database_url)
        self.settings = settings
        self.summarizer = summarizer

    @property
    def path(self) -> Path:
        """The conversations' SQLite file (unused with a shared database)."""
        return self.store.path

    def close(self) -> None:
        """Release the connections (the service reopens them on next use)."""
        self.store.close()

    # ------------------------------------------------------------------ reads

    def create(self, identity: Identity) -> dict[str, Any]:
        """Start a conversation owned by the caller's tenant and user; returns its id."""
        conversation_id = f"conv-{uuid.uuid4().hex}"
        now = time.time()
        self.store.create(conversation_id, _owner(identity), identity.project_id, now)
        return {"conversation_id": conversation_id, "created_at": now}

    def history(self, conversation_id: str, identity: Identity) -> list[dict[str, str]]:
        """
        The chat history of the next request: the summary (a ``system`` message) and the unsummarised turns.

        :raises ConversationNotFoundError: When the conversation is not the caller's.
        """
        found = self.store.history(conversation_id, _owner(identity))
        if found is None:
            raise ConversationNotFoundError(conversation_id)
        summary, pending = found
        history = [{"role": "system", "content": f"{SUMMARY_HEADER}\n{summary}"}] if summary else []
        return history + [{"role": role, "content": content} for _, role, content in pending]

    def history_for(self, conversation_id: str, identity: Identity, request: dict[str, Any]) -> list[dict[str, str]]:
        """
        :meth:`history` for a RAG request, which may not also carry its own ``chat_history``.

        :raises InvalidRequestError: When the request carries a ``chat_history`` too.
        """
        if request.get("chat_history"):
            raise InvalidRequestError(
                "chat_history: send either chat_history or conversation_id; the server keeps a conversation's history."
            )
        return self.history(conversation_id, identity)

    def get(self, conversation_id: str, identity: Identity) -> dict[str, Any]:
        """
        The conversation's summary, its stored turns and its summaries' message ids.

        :raises ConversationNotFoundError: When the conversation is not the caller's.
        """
        stored = self.store.read(conversation_id, _owner(identity))
        if stored is None:
            raise ConversationNotFoundError(conversation_id)
        return {"conversation_id": conversation_id, **stored, "retention": self.settings.retention}

    # ------------------------------------------------------------------ writes

    def delete(self, conversation_id: str, identity: Identity) -> dict[str, Any]:
        """
        Remove the conversation, its turns and its summaries.

        :raises ConversationNotFoundError: When the conversation is not the caller's.
        """
        removed = self.store.delete(conversation_id, _owner(identity))
        if removed is None:
            raise ConversationNotFoundError(conversation_id)
        messages, summaries = removed
        return {"conversation_id": conversation_id, "deleted": True, "messages": messages, "summaries": summaries}

    def record_turn(self, conversation_id: str, identity: Identity, question: str, answer: str) -> None:
        """
        Store a question and its answer, then summarise older turns when the threshold is passed.

        :raises ConversationNotFoundError: When the conversation is not the caller's.
        """
        if not self.store.append_turn(conversation_id, _owner(identity), question, answer, time.time()):
            raise ConversationNotFoundError(conversation_id)
        self._maybe_summarise(conversation_id, identity)

    def _maybe_summarise(self, conversation_id: str, identity: Identity) -> None:
        pending, previous, latest = self.store.pending(conversation_id)
        volume = sum(len(content) for _, _, content in pending)
        keep = self.settings.recent_messages
        folded = pending[: len(pending) - keep] if keep else pending
        if volume <= self.settings.summary_threshold_chars or not folded:
            return
        messages = [{"role": role, "content": content} for _, role, content in folded]
        try:
            # Outside the store's lock: an LLM summary takes seconds, and other conversations must not wait for it.
            summary = self.summarizer.run(messages=messages, previous_summary=previous)["summary"]
        except Exception:  # the answer was given; the turns stay unsummarised and are tried again next turn
            logger.warning("Summarising conversation %s failed; its turns stay unsummarised.", conversation_id)
            return
        # Not stored when the conversation was deleted meanwhile or a concurrent turn summarised first.
        self.store.add_summary(
            conversation_id, _owner(identity), identity.project_id, summary,
            [message_id for message_id, _, _ in folded], after_summary_id=latest,
            drop_turns=self.settings.retention == "summaries_only", now=time.time(),
        )  # fmt: skip


def conversation_service(data_dir: Path, rag_pipeline: Any) -> ConversationService:
    """
    The service over ``DATA_DIR/conversations.sqlite``: summarised by the RAG pipeline's Ollama answerer (same
    URL, model and timeout) when it has one, else extractively.
    """
    from components.generators.conversation_summarizer import (
        ExtractiveConversationSummarizer,
        OllamaConversationSummarizer,
    )

    summarizer: Any = ExtractiveConversationSummarizer()
    for _name, component in rag_pipeline.walk():
        if type(component).__name__ == "OllamaAnswerer":
            summarizer = OllamaConversationSummarizer(
                url=component.url, model=component.model, timeout=component.timeout
            )
            break
    return ConversationService(Path(data_dir) / CONVERSATIONS_FILE, ConversationSettings.from_env(), summarizer)

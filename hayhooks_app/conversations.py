"""
Server-side conversations (docs/contract.md, "Conversations"): a RAG request carrying ``conversation_id``
gets the conversation's rolling summary and recent turns as its chat history, and its question and answer
are recorded as the next turn.

Storage: the state layer (:mod:`components.core.state`): ``$SOURCEBOUND_DATA_DIR/conversations.sqlite`` by
default, the shared database with ``SOURCEBOUND_DATABASE_URL`` (every replica continues any conversation); the
specification's ``rag_conversation_summaries`` beside the conversations and their raw turns:

```sql
rag_conversations          (id, tenant_id, user_id, project_id, created_at, updated_at)
rag_conversation_messages  (id, conversation_id, role, content, created_at, summarized)
rag_conversation_summaries (id, tenant_id, user_id, project_id, thread_id, summary_text, message_ids, created_at)
```

``thread_id`` is the conversation id; ``message_ids`` (JSON) lists the turns each summary folded in; the
newest row is the conversation's summary. Every read and write names the caller's tenant and user (from
the server-side identity), so another user's or tenant's conversation id is a 404 exactly like an unknown
one, never a leak.

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
from hayhooks_app.conversations import ConversationService, ConversationSettings

service = ConversationService("data/conversations.sqlite", ConversationSettings.from_env(), summarizer)
conversation = service.create(identity)
history = service.history(conversation["conversation_id"], identity)   # summary + recent turns
service.record_turn(conversation["conversation_id"], identity, "How many leave days?", "27 days ...")
```
"""

import json
import logging
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from fastapi import APIRouter, Query, Request
from fastapi.concurrency import run_in_threadpool

from components.core.state import StateDatabase, database_url, open_state
from hayhooks_app.config import _env_choice, _env_int
from hayhooks_app.errors import ApiError, validation_error
from hayhooks_app.identity import Identity, resolve_identity
from hayhooks_app.schemas import Identifier, StrictModel

logger = logging.getLogger(__name__)

CONVERSATIONS_FILE = "conversations.sqlite"
RETENTION_MODES = ("keep", "summaries_only")
SUMMARY_HEADER = "Summary of the earlier conversation:"


def _ids_param(statement: str) -> sa.TextClause:
    return sa.text(statement).bindparams(sa.bindparam("ids", expanding=True))


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
            recent_messages=_env_int("SOURCEBOUND_CONVERSATION_RECENT_MESSAGES", cls.recent_messages, 0),
            summary_threshold_chars=_env_int(
                "SOURCEBOUND_CONVERSATION_SUMMARY_THRESHOLD_CHARS", cls.summary_threshold_chars, 0
            ),
            retention=_env_choice("SOURCEBOUND_CONVERSATION_RETENTION", cls.retention, RETENTION_MODES),
        )


def conversation_not_found(conversation_id: str) -> ApiError:
    # The same answer for an unknown id and for someone else's: nothing tells them apart.
    return ApiError(404, "not_found", f"Conversation {conversation_id!r} not found.")


def _owner(identity: Identity) -> tuple[str, str]:
    return identity.tenant_id, identity.user_id or ""


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
        self.path = Path(path)
        self.settings = settings
        self.summarizer = summarizer
        self.database_url = database_url
        # Turns and summaries of one process never interleave; across replicas the conversation's row lock does it.
        self._lock = threading.RLock()
        self._database: StateDatabase | None = None

    @property
    def database(self) -> StateDatabase:
        """The state database (opened and migrated on first use)."""
        if self._database is None:
            with self._lock:
                if self._database is None:
                    self._database = open_state("conversations", self.path, self.database_url)
        return self._database

    def close(self) -> None:
        """Release the connections (the service reopens them on next use)."""
        with self._lock:
            if self._database is not None:
                self._database.dispose()
                self._database = None

    @staticmethod
    def _check_owner(connection: sa.Connection, conversation_id: str, identity: Identity, lock: bool = False) -> None:
        tenant_id, user_id = _owner(identity)
        # FOR UPDATE (PostgreSQL): two replicas writing one conversation take turns, as one process's lock makes them.
        suffix = " FOR UPDATE" if lock and connection.dialect.name == "postgresql" else ""
        row = connection.execute(
            sa.text(
                "SELECT 1 FROM rag_conversations WHERE id = :id AND tenant_id = :tenant_id AND user_id = :user_id"
                + suffix
            ),
            {"id": conversation_id, "tenant_id": tenant_id, "user_id": user_id},
        ).first()
        if row is None:
            raise conversation_not_found(conversation_id)

    # ------------------------------------------------------------------ reads

    def create(self, identity: Identity) -> dict[str, Any]:
        """Start a conversation owned by the caller's tenant and user; returns its id."""
        conversation_id = f"conv-{uuid.uuid4().hex}"
        now = time.time()
        tenant_id, user_id = _owner(identity)
        with self._lock, self.database.begin(immediate=True) as connection:
            connection.execute(
                sa.text(
                    "INSERT INTO rag_conversations (id, tenant_id, user_id, project_id, created_at, updated_at) "
                    "VALUES (:id, :tenant_id, :user_id, :project_id, :now, :now)"
                ),
                {"id": conversation_id, "tenant_id": tenant_id, "user_id": user_id,
                 "project_id": identity.project_id, "now": now},
            )  # fmt: skip
        return {"conversation_id": conversation_id, "created_at": now}

    @staticmethod
    def _summary(connection: sa.Connection, conversation_id: str) -> tuple[str | None, list[int]]:
        row = connection.execute(
            sa.text(
                "SELECT summary_text, message_ids FROM rag_conversation_summaries WHERE thread_id = :id "
                "ORDER BY id DESC LIMIT 1"
            ),
            {"id": conversation_id},
        ).first()
        return (row[0], json.loads(row[1])) if row else (None, [])

    @staticmethod
    def _pending(connection: sa.Connection, conversation_id: str) -> list[tuple[int, str, str]]:
        return [
            tuple(row)
            for row in connection.execute(
                sa.text(
                    "SELECT id, role, content FROM rag_conversation_messages WHERE conversation_id = :id "
                    "AND summarized = 0 ORDER BY id"
                ),
                {"id": conversation_id},
            ).all()
        ]

    def history(self, conversation_id: str, identity: Identity) -> list[dict[str, str]]:
        """
        The chat history of the next request: the summary (a ``system`` message) and the unsummarised turns.

        :raises ApiError: 404 when the conversation is not the caller's.
        """
        tenant_id, user_id = _owner(identity)
        # One round trip (every RAG request with a conversation pays it): the owner check, the newest summary
        # and the unsummarised turns together; no row at all when the conversation is not the caller's.
        with self.database.connect() as connection:
            rows = connection.execute(
                sa.text(
                    "SELECT m.id, m.role, m.content, (SELECT s.summary_text FROM rag_conversation_summaries s "
                    "WHERE s.thread_id = c.id ORDER BY s.id DESC LIMIT 1) FROM rag_conversations c "
                    "LEFT JOIN rag_conversation_messages m ON m.conversation_id = c.id AND m.summarized = 0 "
                    "WHERE c.id = :id AND c.tenant_id = :tenant_id AND c.user_id = :user_id ORDER BY m.id"
                ),
                {"id": conversation_id, "tenant_id": tenant_id, "user_id": user_id},
            ).all()
        if not rows:
            raise conversation_not_found(conversation_id)
        summary = rows[0][3]
        pending = [(message_id, role, content) for message_id, role, content, _ in rows if message_id is not None]
        history = [{"role": "system", "content": f"{SUMMARY_HEADER}\n{summary}"}] if summary else []
        return history + [{"role": role, "content": content} for _, role, content in pending]

    def history_for(self, conversation_id: str, identity: Identity, request: dict[str, Any]) -> list[dict[str, str]]:
        """:meth:`history` for a RAG request, which may not also carry its own ``chat_history`` (422)."""
        if request.get("chat_history"):
            raise validation_error(
                "chat_history: send either chat_history or conversation_id; the server keeps a conversation's history."
            )
        return self.history(conversation_id, identity)

    def get(self, conversation_id: str, identity: Identity) -> dict[str, Any]:
        """The conversation's summary, its stored turns and its summaries' message ids (404 when not the caller's)."""
        params = {"id": conversation_id}
        with self._lock, self.database.connect() as connection:
            self._check_owner(connection, conversation_id, identity)
            created, updated = connection.execute(
                sa.text("SELECT created_at, updated_at FROM rag_conversations WHERE id = :id"), params
            ).one()
            summary, _ = self._summary(connection, conversation_id)
            messages = connection.execute(
                sa.text(
                    "SELECT id, role, content, summarized, created_at FROM rag_conversation_messages "
                    "WHERE conversation_id = :id ORDER BY id"
                ),
                params,
            ).all()
            summaries = connection.execute(
                sa.text(
                    "SELECT id, message_ids, created_at FROM rag_conversation_summaries WHERE thread_id = :id "
                    "ORDER BY id"
                ),
                params,
            ).all()
        return {
            "conversation_id": conversation_id,
            "created_at": created,
            "updated_at": updated,
            "summary": summary,
            "messages": [
                {"id": mid, "role": role, "content": content, "summarized": bool(done), "created_at": at}
                for mid, role, content, done, at in messages
            ],
            "summaries": [{"id": sid, "message_ids": json.loads(ids), "created_at": at} for sid, ids, at in summaries],
            "retention": self.settings.retention,
        }

    # ------------------------------------------------------------------ writes

    def delete(self, conversation_id: str, identity: Identity) -> dict[str, Any]:
        """Remove the conversation, its turns and its summaries (404 when not the caller's)."""
        params = {"id": conversation_id}
        with self._lock:
            with self.database.begin(immediate=True) as connection:
                self._check_owner(connection, conversation_id, identity, lock=True)
                messages = connection.execute(
                    sa.text("DELETE FROM rag_conversation_messages WHERE conversation_id = :id"), params
                ).rowcount
                summaries = connection.execute(
                    sa.text("DELETE FROM rag_conversation_summaries WHERE thread_id = :id"), params
                ).rowcount
                connection.execute(sa.text("DELETE FROM rag_conversations WHERE id = :id"), params)
            self.database.checkpoint()  # nothing of it left in the log either
        return {"conversation_id": conversation_id, "deleted": True, "messages": messages, "summaries": summaries}

    def record_turn(self, conversation_id: str, identity: Identity, question: str, answer: str) -> None:
        """Store a question and its answer, then summarise older turns when the threshold is passed."""
        now = time.time()
        with self._lock, self.database.begin(immediate=True) as connection:
            self._check_owner(connection, conversation_id, identity, lock=True)
            connection.execute(
                sa.text(
                    "INSERT INTO rag_conversation_messages (conversation_id, role, content, created_at) "
                    "VALUES (:id, :role, :content, :now)"
                ),
                [
                    {"id": conversation_id, "role": "user", "content": question, "now": now},
                    {"id": conversation_id, "role": "assistant", "content": answer, "now": now},
                ],
            )
            connection.execute(
                sa.text("UPDATE rag_conversations SET updated_at = :now WHERE id = :id"),
                {"now": now, "id": conversation_id},
            )
        self._maybe_summarise(conversation_id, identity)

    def _maybe_summarise(self, conversation_id: str, identity: Identity) -> None:
        with self._lock, self.database.connect() as connection:
            pending = self._pending(connection, conversation_id)
            previous, _ = self._summary(connection, conversation_id)
            latest = self._latest_summary_id(connection, conversation_id)
        volume = sum(len(content) for _, _, content in pending)
        keep = self.settings.recent_messages
        folded = pending[: len(pending) - keep] if keep else pending
        if volume <= self.settings.summary_threshold_chars or not folded:
            return
        messages = [{"role": role, "content": content} for _, role, content in folded]
        try:
            # Outside the lock: an LLM summary takes seconds, and other conversations must not wait for it.
            summary = self.summarizer.run(messages=messages, previous_summary=previous)["summary"]
        except Exception:  # the answer was given; the turns stay unsummarised and are tried again next turn
            logger.warning("Summarising conversation %s failed; its turns stay unsummarised.", conversation_id)
            return
        ids = [message_id for message_id, _, _ in folded]
        tenant_id, user_id = _owner(identity)
        with self._lock, self.database.begin(immediate=True) as connection:
            try:
                self._check_owner(connection, conversation_id, identity, lock=True)
            except ApiError:
                return  # deleted meanwhile
            still_pending = connection.execute(
                _ids_param("SELECT COUNT(*) FROM rag_conversation_messages WHERE summarized = 0 AND id IN :ids"),
                {"ids": ids},
            ).scalar_one()
            if self._latest_summary_id(connection, conversation_id) != latest or still_pending != len(ids):
                return  # a concurrent turn of the same conversation summarised first
            connection.execute(
                sa.text(
                    "INSERT INTO rag_conversation_summaries (tenant_id, user_id, project_id, thread_id, summary_text, "
                    "message_ids, created_at) VALUES (:tenant_id, :user_id, :project_id, :thread_id, :summary, "
                    ":message_ids, :now)"
                ),
                {"tenant_id": tenant_id, "user_id": user_id, "project_id": identity.project_id,
                 "thread_id": conversation_id, "summary": summary, "message_ids": json.dumps(ids), "now": time.time()},
            )  # fmt: skip
            if self.settings.retention == "summaries_only":
                connection.execute(_ids_param("DELETE FROM rag_conversation_messages WHERE id IN :ids"), {"ids": ids})
            else:
                connection.execute(
                    _ids_param("UPDATE rag_conversation_messages SET summarized = 1 WHERE id IN :ids"), {"ids": ids}
                )

    @staticmethod
    def _latest_summary_id(connection: sa.Connection, conversation_id: str) -> int | None:
        return connection.execute(
            sa.text("SELECT MAX(id) FROM rag_conversation_summaries WHERE thread_id = :id"), {"id": conversation_id}
        ).scalar()


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


def erase_conversations(path: str | Path, tenant_id: str, user_id: str | None = None) -> int:
    """
    Remove a tenant's conversations (or only one user's, in that tenant or, with ``tenant_id`` ``None``, in
    every tenant) with their turns and summaries; returns how many (docs/contract.md, "Deletion").

    :param path: The conversations SQLite file (ignored with a shared database).
    """
    path = Path(path)
    if database_url() is None and not path.exists():
        return 0
    conditions, params = [], {}
    if tenant_id is not None:
        conditions.append("tenant_id = :tenant_id")
        params["tenant_id"] = tenant_id
    if user_id is not None:
        conditions.append("user_id = :user_id")
        params["user_id"] = user_id
    if not conditions:
        raise ValueError("name a tenant, a user or both")
    where = " AND ".join(conditions)
    database = open_state("conversations", path)
    try:
        # Erased turns are zeroed, not left in free pages (secure_delete) or in the write-ahead log (checkpoint).
        with database.begin(immediate=True) as connection:
            ids = list(
                connection.execute(sa.text(f"SELECT id FROM rag_conversations WHERE {where}"), params).scalars()  # noqa: S608
            )
            if ids:
                connection.execute(
                    _ids_param("DELETE FROM rag_conversation_messages WHERE conversation_id IN :ids"), {"ids": ids}
                )
                connection.execute(
                    _ids_param("DELETE FROM rag_conversation_summaries WHERE thread_id IN :ids"), {"ids": ids}
                )
                connection.execute(_ids_param("DELETE FROM rag_conversations WHERE id IN :ids"), {"ids": ids})
        database.checkpoint()
    finally:
        database.dispose()
    return len(ids)


# ---------------------------------------------------------------------- HTTP


class ConversationCreateBody(StrictModel):
    """``POST /conversations``: identity fields as on ``/rag/run`` (trusted mode; api_key mode takes the key's)."""

    tenant_id: Identifier | None = None
    user_id: Identifier | None = None
    project_id: Identifier | None = None


def _identity(container: Any, request: Request, tenant_id: str | None, user_id: str | None, project_id=None):
    return resolve_identity(
        container.settings.auth_mode,
        container.keys,
        request.headers,
        tenant_id=tenant_id,
        user_tags=None,
        user_id=user_id,
        project_id=project_id,
        require_tags=False,
    )


def conversation_routes(container: Any) -> APIRouter:
    """``POST /conversations``, ``GET`` and ``DELETE /conversations/{conversation_id}`` (docs/api.md)."""
    router = APIRouter(tags=["conversations"])

    @router.post("/conversations", summary="Start a server-side conversation")
    async def create(request: Request, body: ConversationCreateBody) -> dict:
        identity = _identity(container, request, body.tenant_id, body.user_id, body.project_id)
        return await run_in_threadpool(container.conversations.create, identity)

    @router.get("/conversations/{conversation_id}", summary="A conversation's summary and stored turns")
    async def read(
        request: Request,
        conversation_id: str,
        tenant_id: str | None = Query(None, description="Tenant (trusted mode)."),
        user_id: str | None = Query(None, description="User (trusted mode)."),
    ) -> dict:
        identity = _identity(container, request, tenant_id, user_id)
        return await run_in_threadpool(container.conversations.get, conversation_id, identity)

    @router.delete("/conversations/{conversation_id}", summary="Delete a conversation, its turns and summaries")
    async def delete(
        request: Request,
        conversation_id: str,
        tenant_id: str | None = Query(None, description="Tenant (trusted mode)."),
        user_id: str | None = Query(None, description="User (trusted mode)."),
    ) -> dict:
        identity = _identity(container, request, tenant_id, user_id)
        return await run_in_threadpool(container.conversations.delete, conversation_id, identity)

    return router

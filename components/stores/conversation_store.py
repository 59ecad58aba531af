"""
The tables of server-side conversations (docs/contract.md, "Conversations"), in the state layer
(:mod:`components.stores.state`): ``$SOURCEBOUND_DATA_DIR/conversations.sqlite`` by default, the shared database
with ``SOURCEBOUND_DATABASE_URL`` (every replica continues any conversation); the specification's
``rag_conversation_summaries`` beside the conversations and their raw turns:

```sql
rag_conversations          (id, tenant_id, user_id, project_id, created_at, updated_at, owner_key)
rag_conversation_messages  (id, conversation_id, role, content, created_at, summarized)
rag_conversation_summaries (id, tenant_id, user_id, project_id, thread_id, summary_text, message_ids, created_at)
```

``thread_id`` is the conversation id; ``message_ids`` (JSON) lists the turns each summary folded in; the
newest row is the conversation's summary. Every read and write of one conversation names its owner
(tenant, user and the key that started it, ``owner_key``: the API key's id, ``""`` in trusted mode): a
conversation that is not theirs reads as absent (``None``/``False``), exactly like an unknown one. What a
request may see and when to summarise is decided by
:mod:`components.services.conversation_service`.

Usage:

```python
from components.stores.conversation_store import ConversationStore

store = ConversationStore("data/conversations.sqlite")
store.create("conv-1", ("acme", "u-sam", "key-1"), project_id=None, now=time.time())
store.append_turn("conv-1", ("acme", "u-sam", "key-1"), "How many leave days?", "27 days.", now=time.time())
summary, pending = store.history("conv-1", ("acme", "u-sam", "key-1"))
```
"""

import json
import threading
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from components.stores.state import StateDatabase, database_url, open_state

CONVERSATIONS_FILE = "conversations.sqlite"

# (tenant_id, user_id, owner_key): who owns a conversation; a tenant-wide caller owns as user "", trusted mode
# (no key) as key "". Another key of the same user is another owner (docs/contract.md, "Conversations").
Owner = tuple[str, str, str]
# (message id, role, content) of a stored turn.
Turn = tuple[int, str, str]


def _ids_param(statement: str) -> sa.TextClause:
    return sa.text(statement).bindparams(sa.bindparam("ids", expanding=True))


class ConversationStore:
    """
    :param path: The SQLite file (created on first use) when no shared database is configured.
    :param database_url: The shared database (default: ``SOURCEBOUND_DATABASE_URL``; none: ``path``).
    """

    def __init__(self, path: str | Path, database_url: str | None = None) -> None:
        self.path = Path(path)
        self.database_url = database_url
        # Turns and summaries of one process never interleave; across replicas the conversation's row lock does it.
        self.lock = threading.RLock()
        self._database: StateDatabase | None = None

    @property
    def database(self) -> StateDatabase:
        """The state database (opened and migrated on first use)."""
        if self._database is None:
            with self.lock:
                if self._database is None:
                    self._database = open_state("conversations", self.path, self.database_url)
        return self._database

    def close(self) -> None:
        """Release the connections (the store reopens them on next use)."""
        with self.lock:
            if self._database is not None:
                self._database.dispose()
                self._database = None

    @staticmethod
    def _owns(connection: sa.Connection, conversation_id: str, owner: Owner, lock: bool = False) -> bool:
        tenant_id, user_id, owner_key = owner
        # FOR UPDATE (PostgreSQL): two replicas writing one conversation take turns, as one process's lock makes them.
        suffix = " FOR UPDATE" if lock and connection.dialect.name == "postgresql" else ""
        row = connection.execute(
            sa.text(
                "SELECT 1 FROM rag_conversations WHERE id = :id AND tenant_id = :tenant_id AND user_id = :user_id "
                "AND owner_key = :owner_key" + suffix
            ),
            {"id": conversation_id, "tenant_id": tenant_id, "user_id": user_id, "owner_key": owner_key},
        ).first()
        return row is not None

    @staticmethod
    def _summary(connection: sa.Connection, conversation_id: str) -> str | None:
        row = connection.execute(
            sa.text(
                "SELECT summary_text FROM rag_conversation_summaries WHERE thread_id = :id ORDER BY id DESC LIMIT 1"
            ),
            {"id": conversation_id},
        ).first()
        return row[0] if row else None

    @staticmethod
    def _latest_summary_id(connection: sa.Connection, conversation_id: str) -> int | None:
        return connection.execute(
            sa.text("SELECT MAX(id) FROM rag_conversation_summaries WHERE thread_id = :id"), {"id": conversation_id}
        ).scalar()

    # ------------------------------------------------------------------ reads

    def history(self, conversation_id: str, owner: Owner) -> tuple[str | None, list[Turn]] | None:
        """
        The newest summary and the unsummarised turns, oldest first; ``None`` when the conversation is not the
        owner's. One round trip: every RAG request with a conversation pays it.
        """
        tenant_id, user_id, owner_key = owner
        with self.database.connect() as connection:
            rows = connection.execute(
                sa.text(
                    "SELECT m.id, m.role, m.content, (SELECT s.summary_text FROM rag_conversation_summaries s "
                    "WHERE s.thread_id = c.id ORDER BY s.id DESC LIMIT 1) FROM rag_conversations c "
                    "LEFT JOIN rag_conversation_messages m ON m.conversation_id = c.id AND m.summarized = 0 "
                    "WHERE c.id = :id AND c.tenant_id = :tenant_id AND c.user_id = :user_id "
                    "AND c.owner_key = :owner_key ORDER BY m.id"
                ),
                {"id": conversation_id, "tenant_id": tenant_id, "user_id": user_id, "owner_key": owner_key},
            ).all()
        if not rows:
            return None
        pending = [(message_id, role, content) for message_id, role, content, _ in rows if message_id is not None]
        return rows[0][3], pending

    def read(self, conversation_id: str, owner: Owner) -> dict[str, Any] | None:
        """
        The conversation's times, summary, stored turns and summaries' message ids; ``None`` when not the owner's.
        """
        params = {"id": conversation_id}
        with self.lock, self.database.connect() as connection:
            if not self._owns(connection, conversation_id, owner):
                return None
            created, updated = connection.execute(
                sa.text("SELECT created_at, updated_at FROM rag_conversations WHERE id = :id"), params
            ).one()
            summary = self._summary(connection, conversation_id)
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
            "created_at": created,
            "updated_at": updated,
            "summary": summary,
            "messages": [
                {"id": mid, "role": role, "content": content, "summarized": bool(done), "created_at": at}
                for mid, role, content, done, at in messages
            ],
            "summaries": [{"id": sid, "message_ids": json.loads(ids), "created_at": at} for sid, ids, at in summaries],
        }

    def pending(self, conversation_id: str) -> tuple[list[Turn], str | None, int | None]:
        """The unsummarised turns, the newest summary and its id (what a new summary must still find unchanged)."""
        with self.lock, self.database.connect() as connection:
            pending = [
                tuple(row)
                for row in connection.execute(
                    sa.text(
                        "SELECT id, role, content FROM rag_conversation_messages WHERE conversation_id = :id "
                        "AND summarized = 0 ORDER BY id"
                    ),
                    {"id": conversation_id},
                ).all()
            ]
            return (
                pending,
                self._summary(connection, conversation_id),
                self._latest_summary_id(connection, conversation_id),
            )

    # ------------------------------------------------------------------ writes

    def create(self, conversation_id: str, owner: Owner, project_id: str | None, now: float) -> None:
        """Store a new conversation owned by ``owner``."""
        tenant_id, user_id, owner_key = owner
        with self.lock, self.database.begin(immediate=True) as connection:
            connection.execute(
                sa.text(
                    "INSERT INTO rag_conversations (id, tenant_id, user_id, project_id, created_at, updated_at, "
                    "owner_key) VALUES (:id, :tenant_id, :user_id, :project_id, :now, :now, :owner_key)"
                ),
                {"id": conversation_id, "tenant_id": tenant_id, "user_id": user_id, "project_id": project_id,
                 "now": now, "owner_key": owner_key},
            )  # fmt: skip

    def delete(self, conversation_id: str, owner: Owner) -> tuple[int, int] | None:
        """
        Remove the conversation, its turns and its summaries, leaving nothing in the log either.

        :returns: How many turns and summaries went, or ``None`` when the conversation is not the owner's.
        """
        params = {"id": conversation_id}
        with self.lock:
            with self.database.begin(immediate=True) as connection:
                if not self._owns(connection, conversation_id, owner, lock=True):
                    return None
                messages = connection.execute(
                    sa.text("DELETE FROM rag_conversation_messages WHERE conversation_id = :id"), params
                ).rowcount
                summaries = connection.execute(
                    sa.text("DELETE FROM rag_conversation_summaries WHERE thread_id = :id"), params
                ).rowcount
                connection.execute(sa.text("DELETE FROM rag_conversations WHERE id = :id"), params)
            self.database.checkpoint()
        return messages, summaries

    def append_turn(self, conversation_id: str, owner: Owner, question: str, answer: str, now: float) -> bool:
        """Store a question and its answer as the next turn; ``False`` when the conversation is not the owner's."""
        with self.lock, self.database.begin(immediate=True) as connection:
            if not self._owns(connection, conversation_id, owner, lock=True):
                return False
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
        return True

    def add_summary(
        self,
        conversation_id: str,
        owner: Owner,
        project_id: str | None,
        summary: str,
        message_ids: list[int],
        after_summary_id: int | None,
        drop_turns: bool,
        now: float,
    ) -> bool:
        """
        Store a summary folding ``message_ids`` in, and mark those turns summarised (or delete them, with
        ``drop_turns``), unless something changed since the turns were read.

        :param after_summary_id: The newest summary's id when the turns were read; another summary since means a
            concurrent turn summarised first.
        :returns: ``True`` when stored; ``False`` when the conversation is gone or not the owner's, or the turns
            were summarised meanwhile.
        """
        tenant_id, user_id, _ = owner
        with self.lock, self.database.begin(immediate=True) as connection:
            if not self._owns(connection, conversation_id, owner, lock=True):
                return False
            still_pending = connection.execute(
                _ids_param("SELECT COUNT(*) FROM rag_conversation_messages WHERE summarized = 0 AND id IN :ids"),
                {"ids": message_ids},
            ).scalar_one()
            latest = self._latest_summary_id(connection, conversation_id)
            if latest != after_summary_id or still_pending != len(message_ids):
                return False
            connection.execute(
                sa.text(
                    "INSERT INTO rag_conversation_summaries (tenant_id, user_id, project_id, thread_id, summary_text, "
                    "message_ids, created_at) VALUES (:tenant_id, :user_id, :project_id, :thread_id, :summary, "
                    ":message_ids, :now)"
                ),
                {"tenant_id": tenant_id, "user_id": user_id, "project_id": project_id, "thread_id": conversation_id,
                 "summary": summary, "message_ids": json.dumps(message_ids), "now": now},
            )  # fmt: skip
            if drop_turns:
                connection.execute(
                    _ids_param("DELETE FROM rag_conversation_messages WHERE id IN :ids"), {"ids": message_ids}
                )
            else:
                connection.execute(
                    _ids_param("UPDATE rag_conversation_messages SET summarized = 1 WHERE id IN :ids"),
                    {"ids": message_ids},
                )
        return True


def erase_conversations(path: str | Path, tenant_id: str | None, user_id: str | None = None) -> int:
    """
    Remove a tenant's conversations (or only one user's, in that tenant or, with ``tenant_id`` ``None``, in
    every tenant) with their turns and summaries; returns how many (docs/contract.md, "Deletion").

    :param path: The conversations SQLite file (ignored with a shared database).
    :raises ValueError: If neither a tenant nor a user is named.
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

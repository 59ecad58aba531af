"""ConversationService: tenant/user-scoped conversations with rolling summaries in a real SQLite file."""

import json

import pytest
from support.sqlite_files import rows

from components.core.errors import InvalidRequestError, NotFoundError
from components.core.requester import Identity
from components.generators.conversation_summarizer import ExtractiveConversationSummarizer
from components.runtime.environment import ConfigError
from components.services.conversation_service import (
    SUMMARY_HEADER,
    ConversationNotFoundError,
    ConversationService,
    ConversationSettings,
    conversation_service,
)
from components.stores.conversation_store import erase_conversations

SAM = Identity("acme", ("hr",), "u-sam")
EVA = Identity("acme", ("hr",), "u-eva")
GLOBEX_SAM = Identity("globex", ("hr",), "u-sam")
TENANT_ONLY = Identity("acme", ("hr",))
SAM_BY_KEY = Identity("acme", ("hr",), "u-sam", key_id="key-sam-hr")
SAM_OTHER_KEY = Identity("acme", ("finance",), "u-sam", key_id="key-sam-finance")  # the same user, other tags


def service(tmp_path, summarizer=None, **settings):
    return ConversationService(
        tmp_path / "conversations.sqlite",
        ConversationSettings(**settings),
        summarizer or ExtractiveConversationSummarizer(),
    )


class FailingSummarizer:
    def run(self, messages, previous_summary=None):
        raise ConnectionError("summariser down")


@pytest.mark.unit
class TestConversationService:
    def test_the_specifications_summary_table(self, tmp_path):
        conversations = service(tmp_path)
        conversations.create(SAM)
        columns = {
            row[1] for row in rows(tmp_path / "conversations.sqlite", "PRAGMA table_info(rag_conversation_summaries)")
        }
        assert {"id", "user_id", "project_id", "thread_id", "summary_text", "message_ids", "created_at"} <= columns

    def test_recent_turns_are_the_history_until_the_threshold(self, tmp_path):
        conversations = service(tmp_path, summary_threshold_chars=10_000, recent_messages=2)
        conversation_id = conversations.create(SAM)["conversation_id"]
        assert conversations.history(conversation_id, SAM) == []
        conversations.record_turn(conversation_id, SAM, "How many leave days?", "27 days.")
        assert conversations.history(conversation_id, SAM) == [
            {"role": "user", "content": "How many leave days?"},
            {"role": "assistant", "content": "27 days."},
        ]
        assert conversations.get(conversation_id, SAM)["summaries"] == []

    def test_older_turns_fold_into_a_rolling_summary(self, tmp_path):
        conversations = service(tmp_path, summary_threshold_chars=20, recent_messages=2)
        conversation_id = conversations.create(SAM)["conversation_id"]
        conversations.record_turn(conversation_id, SAM, "How many leave days?", "27 days. More text here.")
        # Over the threshold, but only the 2 newest messages exist: nothing older to fold.
        assert conversations.get(conversation_id, SAM)["summaries"] == []
        conversations.record_turn(conversation_id, SAM, "And carry-over?", "5 days until March 31.")
        history = conversations.history(conversation_id, SAM)
        assert history == [
            {"role": "system", "content": f"{SUMMARY_HEADER}\nUser asked: How many leave days? Answer: 27 days."},
            {"role": "user", "content": "And carry-over?"},
            {"role": "assistant", "content": "5 days until March 31."},
        ]
        stored = conversations.get(conversation_id, SAM)
        assert [message["summarized"] for message in stored["messages"]] == [True, True, False, False]
        assert stored["summaries"][0]["message_ids"] == [message["id"] for message in stored["messages"][:2]]
        summary_row = rows(
            tmp_path / "conversations.sqlite",
            "SELECT tenant_id, user_id, thread_id, message_ids FROM rag_conversation_summaries",
        )
        assert summary_row == [("acme", "u-sam", conversation_id, json.dumps(stored["summaries"][0]["message_ids"]))]

    def test_summaries_only_deletes_the_raw_turns(self, tmp_path):
        conversations = service(tmp_path, summary_threshold_chars=0, recent_messages=0, retention="summaries_only")
        conversation_id = conversations.create(SAM)["conversation_id"]
        conversations.record_turn(conversation_id, SAM, "What is the meal per diem?", "EUR 45 at home.")
        assert rows(tmp_path / "conversations.sqlite", "SELECT COUNT(*) FROM rag_conversation_messages") == [(0,)]
        history = conversations.history(conversation_id, SAM)
        assert history == [
            {
                "role": "system",
                "content": f"{SUMMARY_HEADER}\nUser asked: What is the meal per diem? Answer: EUR 45 at home.",
            }
        ]

    def test_a_failing_summariser_keeps_the_turns(self, tmp_path):
        conversations = service(tmp_path, FailingSummarizer(), summary_threshold_chars=0, recent_messages=0)
        conversation_id = conversations.create(SAM)["conversation_id"]
        conversations.record_turn(conversation_id, SAM, "Question?", "Answer.")
        assert [message["role"] for message in conversations.history(conversation_id, SAM)] == ["user", "assistant"]

    def test_a_concurrent_summary_of_the_same_turns_wins_once(self, tmp_path):
        class Reentrant:
            # While the first summary is being written (outside the lock), another turn's summary lands first.
            calls = 0

            def run(self, messages, previous_summary=None):
                Reentrant.calls += 1
                if Reentrant.calls == 1:
                    conversations._maybe_summarise(conversation_id, SAM)
                return {"summary": f"summary {Reentrant.calls}"}

        conversations = service(tmp_path, Reentrant(), summary_threshold_chars=0, recent_messages=0)
        conversation_id = conversations.create(SAM)["conversation_id"]
        conversations.record_turn(conversation_id, SAM, "q?", "a.")
        stored = conversations.get(conversation_id, SAM)
        assert stored["summary"] == "summary 2" and len(stored["summaries"]) == 1
        assert Reentrant.calls == 2

    def test_other_users_and_tenants_get_not_found(self, tmp_path):
        conversations = service(tmp_path)
        conversation_id = conversations.create(SAM)["conversation_id"]
        conversations.record_turn(conversation_id, SAM, "Secret question?", "Secret answer.")
        for stranger in (EVA, GLOBEX_SAM, TENANT_ONLY):
            for call in (
                lambda: conversations.history(conversation_id, stranger),
                lambda: conversations.get(conversation_id, stranger),
                lambda: conversations.delete(conversation_id, stranger),
                lambda: conversations.record_turn(conversation_id, stranger, "q", "a"),
            ):
                with pytest.raises(ConversationNotFoundError) as raised:
                    call()
                assert isinstance(raised.value, NotFoundError)  # HTTP 404 (hayhooks_app.errors)
                assert str(raised.value) == f"Conversation {conversation_id!r} not found." and "Secret" not in str(
                    raised.value
                )
        assert len(conversations.get(conversation_id, SAM)["messages"]) == 2

    def test_another_key_of_the_same_user_gets_not_found(self, tmp_path):
        conversations = service(tmp_path)
        conversation_id = conversations.create(SAM_BY_KEY)["conversation_id"]
        conversations.record_turn(conversation_id, SAM_BY_KEY, "Salary bands?", "Band C.")
        for stranger in (SAM_OTHER_KEY, SAM):  # another key, and the same user without a key (trusted mode)
            with pytest.raises(ConversationNotFoundError):
                conversations.get(conversation_id, stranger)
            with pytest.raises(ConversationNotFoundError):
                conversations.history(conversation_id, stranger)
        assert len(conversations.get(conversation_id, SAM_BY_KEY)["messages"]) == 2

    def test_chat_history_with_a_conversation_is_refused(self, tmp_path):
        conversations = service(tmp_path)
        conversation_id = conversations.create(SAM)["conversation_id"]
        with pytest.raises(InvalidRequestError, match="send either chat_history or conversation_id"):  # HTTP 422
            conversations.history_for(conversation_id, SAM, {"chat_history": [{"role": "user", "content": "x"}]})

    def test_delete_and_erase_a_tenant(self, tmp_path):
        conversations = service(tmp_path, summary_threshold_chars=0, recent_messages=0)
        kept = conversations.create(GLOBEX_SAM)["conversation_id"]
        first = conversations.create(SAM)["conversation_id"]
        second = conversations.create(EVA)["conversation_id"]
        for conversation_id, identity in ((first, SAM), (second, EVA), (kept, GLOBEX_SAM)):
            conversations.record_turn(conversation_id, identity, "q?", "a.")
        deleted = conversations.delete(first, SAM)
        assert deleted == {"conversation_id": first, "deleted": True, "messages": 2, "summaries": 1}
        path = tmp_path / "conversations.sqlite"
        assert erase_conversations(path, "acme") == 1  # beside the service's open connection
        assert rows(path, "SELECT DISTINCT tenant_id FROM rag_conversations") == [("globex",)]
        assert rows(path, "SELECT DISTINCT tenant_id FROM rag_conversation_summaries") == [("globex",)]
        assert rows(path, "SELECT DISTINCT conversation_id FROM rag_conversation_messages") == [(kept,)]


@pytest.mark.unit
class TestConversationServiceFactory:
    def test_the_rag_pipelines_ollama_answerer_summarises_else_extractive(self, tmp_path):
        from haystack import Pipeline

        from components.generators.conversation_summarizer import OllamaConversationSummarizer
        from components.generators.ollama_answerer import OllamaAnswerer

        extractive = conversation_service(tmp_path, Pipeline())
        assert isinstance(extractive.summarizer, ExtractiveConversationSummarizer)
        assert extractive.path == tmp_path / "conversations.sqlite"
        pipeline = Pipeline()
        pipeline.add_component("answerer", OllamaAnswerer(model="llama3.2", url="http://127.0.0.1:11999", timeout=7))
        summarizer = conversation_service(tmp_path, pipeline).summarizer
        assert isinstance(summarizer, OllamaConversationSummarizer)
        assert (summarizer.url, summarizer.model, summarizer.timeout) == ("http://127.0.0.1:11999", "llama3.2", 7.0)


@pytest.mark.unit
class TestEraseConversations:
    def test_a_users_conversations_in_one_tenant_or_all(self, tmp_path):
        conversations = service(tmp_path)
        for identity in (SAM, SAM, EVA, GLOBEX_SAM):
            conversations.create(identity)
        path = tmp_path / "conversations.sqlite"
        assert erase_conversations(path, "acme", "u-sam") == 2
        assert sorted(rows(path, "SELECT tenant_id, user_id FROM rag_conversations")) == [
            ("acme", "u-eva"),
            ("globex", "u-sam"),
        ]
        assert erase_conversations(path, None, "u-sam") == 1
        assert rows(path, "SELECT tenant_id, user_id FROM rag_conversations") == [("acme", "u-eva")]
        assert erase_conversations(tmp_path / "absent.sqlite", "acme") == 0
        with pytest.raises(ValueError, match="name a tenant"):
            erase_conversations(path, None)

    def test_erased_turns_leave_no_bytes_behind(self, tmp_path):
        conversations = service(tmp_path, summary_threshold_chars=0, recent_messages=0, retention="summaries_only")
        conversation_id = conversations.create(SAM)["conversation_id"]
        conversations.record_turn(conversation_id, SAM, "Is the zanzibar merger secret?", "Yes, zanzibar is secret.")
        assert erase_conversations(tmp_path / "conversations.sqlite", "acme") == 1
        conversations.close()
        for path in tmp_path.glob("conversations.sqlite*"):
            assert b"zanzibar" not in path.read_bytes(), path.name

    def test_a_deleted_conversation_leaves_no_bytes_behind(self, tmp_path):
        conversations = service(tmp_path)
        conversation_id = conversations.create(SAM)["conversation_id"]
        conversations.record_turn(conversation_id, SAM, "Is the zanzibar merger secret?", "Yes.")
        conversations.delete(conversation_id, SAM)
        for path in tmp_path.glob("conversations.sqlite*"):
            assert b"zanzibar" not in path.read_bytes(), path.name


@pytest.mark.unit
class TestConversationSettings:
    def test_from_env(self, monkeypatch):
        monkeypatch.setenv("SOURCEBOUND_CONVERSATION_RETENTION", "summaries_only")
        monkeypatch.setenv("SOURCEBOUND_CONVERSATION_RECENT_MESSAGES", "0")
        monkeypatch.setenv("SOURCEBOUND_CONVERSATION_SUMMARY_THRESHOLD_CHARS", "500")
        assert ConversationSettings.from_env() == ConversationSettings(0, 500, "summaries_only")

    def test_bad_values_name_the_variable(self, monkeypatch):
        monkeypatch.setenv("SOURCEBOUND_CONVERSATION_RETENTION", "forever")
        with pytest.raises(ConfigError, match="SOURCEBOUND_CONVERSATION_RETENTION"):
            ConversationSettings.from_env()

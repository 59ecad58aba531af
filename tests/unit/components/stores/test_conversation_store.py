"""ConversationStore on a real SQLite file: every read and write of a conversation names its owner."""

import time

import pytest
from support.sqlite_files import rows

from components.stores.conversation_store import ConversationStore

SAM = ("acme", "u-sam", "key-sam")
EVA = ("acme", "u-eva", "key-eva")
SAM_OTHER_KEY = ("acme", "u-sam", "key-sam-2")  # the same user through another key (other tags)


@pytest.fixture
def store(tmp_path):
    conversations = ConversationStore(tmp_path / "conversations.sqlite")
    conversations.create("conv-1", SAM, project_id="atlas", now=time.time())
    yield conversations
    conversations.close()


@pytest.mark.unit
class TestConversationStore:
    def test_init_opens_nothing_until_used(self, tmp_path):
        conversations = ConversationStore(tmp_path / "conversations.sqlite")
        assert conversations.path == tmp_path / "conversations.sqlite" and not conversations.path.exists()

    def test_turns_and_history_for_the_owner_only(self, store):
        assert store.append_turn("conv-1", SAM, "How many leave days?", "27 days.", now=time.time())
        assert store.history("conv-1", SAM) == (
            None,
            [(1, "user", "How many leave days?"), (2, "assistant", "27 days.")],
        )
        assert store.history("conv-1", EVA) is None and store.history("conv-unknown", SAM) is None
        # Another key of the same user is another owner: it reads, writes and deletes nothing of this conversation.
        assert store.history("conv-1", SAM_OTHER_KEY) is None and store.read("conv-1", SAM_OTHER_KEY) is None
        assert not store.append_turn("conv-1", SAM_OTHER_KEY, "q", "a", now=time.time())
        assert store.delete("conv-1", SAM_OTHER_KEY) is None
        assert not store.append_turn("conv-1", EVA, "q", "a", now=time.time())
        assert store.read("conv-1", EVA) is None and store.delete("conv-1", EVA) is None
        assert len(store.read("conv-1", SAM)["messages"]) == 2

    def test_a_summary_folds_turns_unless_something_changed_since_they_were_read(self, store, tmp_path):
        for question in ("q1", "q2"):
            store.append_turn("conv-1", SAM, question, "a", now=time.time())
        pending, previous, latest = store.pending("conv-1")
        assert [turn[0] for turn in pending] == [1, 2, 3, 4] and previous is None and latest is None
        assert not store.add_summary("conv-1", EVA, None, "s", [1, 2], latest, drop_turns=False, now=time.time())
        assert store.add_summary("conv-1", SAM, "atlas", "first", [1, 2], latest, drop_turns=False, now=time.time())
        # The same turns again, or a summary read before the first one: a concurrent turn got there first.
        assert not store.add_summary("conv-1", SAM, None, "again", [1, 2], latest, drop_turns=False, now=time.time())
        assert not store.add_summary("conv-1", SAM, None, "stale", [3, 4], None, drop_turns=False, now=time.time())
        pending, previous, latest = store.pending("conv-1")
        assert [turn[0] for turn in pending] == [3, 4] and previous == "first" and latest == 1
        assert store.add_summary("conv-1", SAM, None, "second", [3, 4], latest, drop_turns=True, now=time.time())
        path = tmp_path / "conversations.sqlite"
        assert rows(path, "SELECT id, summarized FROM rag_conversation_messages ORDER BY id") == [(1, 1), (2, 1)]
        assert store.history("conv-1", SAM) == ("second", [])
        assert rows(path, "SELECT project_id, thread_id FROM rag_conversation_summaries ORDER BY id") == [
            ("atlas", "conv-1"), (None, "conv-1")
        ]  # fmt: skip

    def test_delete_removes_turns_and_summaries(self, store):
        store.append_turn("conv-1", SAM, "q", "a", now=time.time())
        store.add_summary("conv-1", SAM, None, "s", [1], None, drop_turns=False, now=time.time())
        assert store.delete("conv-1", SAM) == (2, 1)
        assert store.history("conv-1", SAM) is None and store.delete("conv-1", SAM) is None

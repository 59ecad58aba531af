"""
RequestService without HTTP: identity over the body, query-log rows and index events in a real records
database, conversation turns in a real conversations database, index changes on the real Qdrant Edge store,
and what the observer is told.
"""

import threading
from types import SimpleNamespace
from typing import Any

import pytest
from support.indexing_support import stored_chunk

from components.core.errors import InvalidRequestError, ModelNotAllowedError
from components.core.requester import Identity
from components.generators.conversation_summarizer import ExtractiveConversationSummarizer
from components.services.conversation_service import (
    SUMMARY_HEADER,
    ConversationNotFoundError,
    ConversationService,
    ConversationSettings,
)
from components.services.request_observer import RequestObserver
from components.services.request_service import RequestService
from components.stores import key_store
from components.stores.glossary_store import GLOSSARY_FILE, GlossaryStore
from components.stores.record_store import RecordStore
from components.stores.tag_directory import TagDirectory

SAM = Identity("acme", ("hr",), user_id="u-sam", key_id="key-0123456789ab")
ANSWER = {"answer": "27 days.", "action": "CITE", "confidence": {"overall": 80}, "model_used": "extractive",
          "context_chunks_used": 2, "context_tokens_used": 90}  # fmt: skip


class Queries:
    """The query service's two calls: records each payload, answers or raises ``error``."""

    def __init__(self, error: Exception | None = None) -> None:
        self.error = error
        self.payloads: list[dict[str, Any]] = []

    def _answer(self, payload: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
        self.payloads.append(payload)
        if self.error is not None:
            raise self.error
        return dict(result)

    def search(self, payload):
        return self._answer(payload, {"results": [{"id": 1}, {"id": 2}, {"id": 3}], "tokens_used": 40})

    def rag(self, payload):
        return self._answer(payload, ANSWER)


class Observed(RequestObserver):
    """Remembers every call."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def outcome(self, error):
        return type(error).__name__

    def query_failed(self, endpoint, outcome):
        self.calls.append(("failed", endpoint, outcome))

    def query_answered(self, endpoint, mode, latency_s, results, tokens, action=None):
        self.calls.append(("answered", endpoint, mode, results, tokens, action))

    def documents_invalidated(self, reason, documents, chunks):
        self.calls.append(("invalidated", reason, documents, chunks))

    def flags_changed(self, flag, documents):
        self.calls.append(("flags", flag, documents))

    def tenant_deleted(self, chunks):
        self.calls.append(("tenant_deleted", chunks))


@pytest.fixture
def resources(tmp_path):
    records = RecordStore(tmp_path / "records.sqlite")
    conversations = ConversationService(
        tmp_path / "conversations.sqlite", ConversationSettings(), ExtractiveConversationSummarizer()
    )
    parts = SimpleNamespace(
        write_lock=threading.Lock(), queries=Queries(), records=records, conversations=conversations,
        store=None, tag_directory=lambda: None,
    )  # fmt: skip
    yield parts
    records.close()
    conversations.close()


def service(resources, tmp_path, observer=None) -> RequestService:
    return RequestService(resources, data_dir=tmp_path, keys_file=tmp_path / "api_keys.json", observer=observer)


@pytest.mark.unit
class TestRequestServiceReads:
    def test_init_keeps_its_wiring(self, resources, tmp_path):
        requests = service(resources, tmp_path)
        assert requests.resources is resources and requests.data_dir == tmp_path
        assert requests.keys_file == tmp_path / "api_keys.json" and type(requests.observer) is RequestObserver

    def test_search_takes_the_identity_not_the_body_and_logs_the_query(self, resources, tmp_path):
        observer = Observed()
        body = {"query": "leave", "tenant_id": "globex", "user_tags": ["finance"], "project_id": "x", "k": 3}
        result = service(resources, tmp_path, observer).search(body, SAM)
        assert len(result["results"]) == 3
        assert resources.queries.payloads == [
            {"query": "leave", "k": 3, "tenant_id": "acme", "user_tags": ["hr"], "user_id": "u-sam"}
        ]
        assert observer.calls == [("answered", "search", "hybrid", 3, 40, None)]
        resources.records.flush()
        (row,) = resources.records.queries()
        assert (row["endpoint"], row["tenant_id"], row["user_id"], row["scope"], row["key_id"]) == (
            "search", "acme", "u-sam", "user", "key-0123456789ab"
        )  # fmt: skip
        assert (row["query_text"], row["result_count"], row["tokens_used"], row["outcome"]) == ("leave", 3, 40, "ok")

    def test_a_failed_answer_is_logged_with_its_outcome_and_raised(self, resources, tmp_path):
        observer = Observed()
        resources.queries = Queries(error=ModelNotAllowedError("Model 'gpt-4' not in allowlist."))
        with pytest.raises(ModelNotAllowedError):
            service(resources, tmp_path, observer).answer({"query": "q", "model": "gpt-4"}, SAM, endpoint="chat")
        assert observer.calls == [("failed", "chat", "ModelNotAllowedError")]
        resources.records.flush()
        (row,) = resources.records.queries()
        assert (row["endpoint"], row["model"], row["outcome"]) == ("chat", "gpt-4", "ModelNotAllowedError")

    def test_without_an_observer_a_failure_is_an_internal_error(self, resources, tmp_path):
        resources.queries = Queries(error=KeyError("boom"))
        with pytest.raises(KeyError):
            service(resources, tmp_path).search({"query": "q"}, SAM)
        resources.records.flush()
        assert [row["outcome"] for row in resources.records.queries()] == ["internal_error"]

    def test_an_answer_in_a_conversation_uses_its_history_and_records_the_turn(self, resources, tmp_path):
        observer = Observed()
        requests = service(resources, tmp_path, observer)
        conversation_id = resources.conversations.create(SAM)["conversation_id"]
        first = requests.answer({"query": "How many leave days?", "conversation_id": conversation_id}, SAM)
        assert first["conversation_id"] == conversation_id and first["answer"] == "27 days."
        requests.answer({"query": "And in Spain?", "conversation_id": conversation_id}, SAM)
        histories = [payload.get("chat_history") for payload in resources.queries.payloads]
        assert histories == [[], [{"role": "user", "content": "How many leave days?"},
                                  {"role": "assistant", "content": "27 days."}]]  # fmt: skip
        assert all(SUMMARY_HEADER not in str(history) for history in histories)
        turns = resources.conversations.get(conversation_id, SAM)["messages"]
        assert [turn["content"] for turn in turns][-2:] == ["And in Spain?", "27 days."]
        assert observer.calls[-1] == ("answered", "rag", "hybrid", 2, 90, "CITE")

    def test_a_conversation_refuses_a_second_history_and_another_users_id(self, resources, tmp_path):
        requests = service(resources, tmp_path)
        conversation_id = resources.conversations.create(SAM)["conversation_id"]
        with pytest.raises(InvalidRequestError, match="either chat_history or conversation_id"):
            requests.answer(
                {"query": "q", "conversation_id": conversation_id, "chat_history": [{"role": "user", "content": "x"}]},
                SAM,
            )
        with pytest.raises(ConversationNotFoundError):
            requests.answer({"query": "q", "conversation_id": conversation_id}, Identity("acme", ("hr",), "u-eva"))
        assert resources.queries.payloads == []  # refused before the pipeline ran
        resources.records.flush()
        assert resources.records.queries() == []


@pytest.fixture
def indexed(module_store, resources, tmp_path):
    module_store.delete_all_documents()
    module_store.write_documents(
        [stored_chunk("a", index) for index in range(3)]
        + [stored_chunk("b", index) for index in range(2)]
        + [stored_chunk("c", index, tenant_id="globex") for index in range(2)]
    )
    resources.store = module_store
    return module_store


@pytest.mark.integration
class TestRequestServiceIndexChanges:
    def test_invalidate_and_flags_change_the_store_and_leave_events(self, indexed, resources, tmp_path):
        observer = Observed()
        requests = service(resources, tmp_path, observer)
        result = requests.invalidate("acme", ["a"], reason="upstream_taint", cascade_id="c-1", key_id="key-1")
        assert result == {"invalidated": 1, "chunks_removed": 3, "cascade_id": "c-1"}
        flags = requests.set_flags("acme", ["b"], tainted=True, reason="review")
        assert flags == {"documents": 1, "chunks_updated": 2, "tainted": True}
        assert indexed.count_documents() == 4
        assert observer.calls == [("invalidated", "upstream_taint", 1, 3), ("flags", "tainted", 1)]
        events = {event["event"]: event for event in resources.records.events()}
        assert (events["invalidate"]["reason"], events["invalidate"]["cascade_id"]) == ("upstream_taint", "c-1")
        assert events["invalidate"]["key_id"] == "key-1" and events["flags"]["chunks"] == 2

    def test_delete_tenant_goes_through_the_erasure_service(self, indexed, resources, tmp_path):
        observer = Observed()
        directory = TagDirectory(tmp_path / "tags.sqlite")
        directory.add_user("u-lead", "lead@acme.example")
        directory.set_tag_owner("acme", "hr", "u-lead")
        resources.tag_directory = lambda: directory
        key_store.register_key(tmp_path / "api_keys.json", tenant_id="acme", tags=["hr"])
        GlossaryStore(tmp_path / GLOSSARY_FILE).load_csv("acme", "term,aliases\nPTO,leave\n")
        resources.conversations.create(SAM)
        result = service(resources, tmp_path, observer).delete_tenant("acme", key_id="key-admin")
        removed = result["removed"]
        assert result["chunks_removed"] == removed["chunks"] == 5
        assert (removed["tag_owners"], removed["api_keys"], removed["conversations"], removed["glossary"]) == (
            1, 1, 1, 1
        )  # fmt: skip
        assert observer.calls == [("tenant_deleted", 5)]
        assert indexed.count_documents() == 2 and directory.lookup("acme", "hr") is None
        assert key_store.list_keys(tmp_path / "api_keys.json") == []
        assert [event["event"] for event in resources.records.events()] == ["delete_tenant"]

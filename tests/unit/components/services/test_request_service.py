"""
RequestService without HTTP: identity over the body, query-log rows and index events in a real records
database, conversation turns in a real conversations database, index changes on the real Qdrant Edge store,
and what the observer is told.
"""

import json
import threading
from types import SimpleNamespace
from typing import Any

import pytest
from support.indexing_support import stored_chunk

from components.core.access_rule import WriteRule
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
from components.services.request_service import RequestService, answer_result
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

    def test_every_read_carries_a_query_id_logged_with_its_tag(self, resources, tmp_path):
        class Quality(Observed):
            def answer_quality(self, tenant_id, tag, result):
                self.calls.append(("quality", tenant_id, tag, result))

            def search_quality(self, tenant_id, empty):
                self.calls.append(("search_quality", tenant_id, empty))

        observer = Quality()
        resources.queries.rag = lambda payload: {**ANSWER, "context_tag": "hr"}  # what QueryService adds
        requests = service(resources, tmp_path, observer)
        answer = requests.answer({"query": "leave?"}, SAM)
        found = requests.search({"query": "leave"}, SAM)
        assert "context_tag" not in answer  # the service's own record, never a response field
        assert len({answer["query_id"], found["query_id"]}) == 2 and len(answer["query_id"]) == 32
        assert ("quality", "acme", "hr", "cited") in observer.calls
        assert ("search_quality", "acme", False) in observer.calls
        rows = {row["query_id"]: row for row in resources.records.queries()}
        assert rows[answer["query_id"]]["tag"] == "hr" and rows[found["query_id"]]["tag"] is None

    def test_a_routed_answer_is_filed_under_its_route_tag_and_told_to_the_gaps(self, resources, tmp_path):
        routed = {**ANSWER, "action": "ROUTE", "context_chunks_used": 0, "context_tag": None,
                  "route_to": {"tag": "system", "fallback": True, "owner_email": "admin@acme.example"}}  # fmt: skip
        resources.queries.rag = lambda payload: dict(routed)
        told = []

        class Gaps:
            def answered(self, **fields):
                told.append(fields)
                raise RuntimeError("a full disk")  # must not fail the answered request

        requests = RequestService(resources, data_dir=tmp_path, gaps=Gaps())
        answer = requests.answer({"query": "printer?"}, SAM, endpoint="chat")
        assert answer["action"] == "ROUTE"
        (fields,) = told
        assert (fields["query_id"], fields["question"], fields["endpoint"]) == (answer["query_id"], "printer?", "chat")
        (row,) = resources.records.queries()
        assert (row["tag"], row["action"], row["query_id"]) == ("system", "ROUTE", answer["query_id"])

    def test_answer_results_name_cited_routed_declined_and_empty(self):
        assert answer_result("CITE", 3, {}) == "cited"
        assert answer_result("ROUTE", 0, {"fallback": True}) == "empty"
        assert answer_result("ROUTE", 2, {"fallback": True}) == "declined"
        assert answer_result("ROUTE", 2, {"fallback": False}) == "routed"


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


class Outbox:
    """The event outbox's ``add``: remembers the rows."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def add(self, rows):
        self.rows.extend(rows)
        return len(rows)


class Indexing:
    """The indexing service's ``index_texts``: answers each document with the status given per document id."""

    def __init__(self, statuses: dict[str, str]) -> None:
        self.statuses = statuses

    def index_texts(self, documents, writer=None):
        entries = [
            {"document_id": d["document_id"], "tenant_id": d["tenant_id"], "status": self.statuses[d["document_id"]],
             "chunks": 2 if self.statuses[d["document_id"]] == "indexed" else 0, "tokens": 9}
            for d in documents
        ]  # fmt: skip
        return {"documents": entries, "chunks_written": 2, "latency_ms": 1.0}


@pytest.fixture
def artifacts(module_store, resources):
    """Documents indexed under other document ids than their artifacts, in two tenants."""
    module_store.delete_all_documents()
    module_store.write_documents(
        [stored_chunk("doc-x", index, artifact_id="art/1") for index in range(3)]
        + [stored_chunk("doc-y", index, artifact_id="art-2") for index in range(2)]
        + [stored_chunk("doc-z", 0, tenant_id="globex", artifact_id="art/1")]
        + [stored_chunk("art-3", 0)]  # document id equal to an artifact id, but indexed without artifact_id
    )
    resources.store = module_store
    resources.outbox = Outbox()
    return module_store


@pytest.mark.integration
class TestRequestServiceArtifacts:
    def test_invalidate_artifacts_finds_documents_by_artifact_id_in_the_tenant(self, artifacts, resources, tmp_path):
        observer = Observed()
        requests = service(resources, tmp_path, observer)
        result = requests.invalidate_artifacts(
            "acme", ["art/1", "art-3"], reason="upstream_taint", cascade_id="c-7", key_id="key-1"
        )
        assert (result["invalidated"], result["chunks_removed"], result["document_ids"]) == (1, 3, ["doc-x"])
        assert result["not_found"] == ["art-3"]  # a document_id is not an artifact id
        assert {d.meta["document_id"] for d in artifacts.filter_documents()} == {"doc-y", "doc-z", "art-3"}
        assert observer.calls == [("invalidated", "upstream_taint", 1, 3)]
        (event,) = resources.records.events()
        assert event["cascade_id"] == "c-7" and event["chunks"] == 3
        (row,) = resources.outbox.rows
        body = json.loads(row["body"])
        assert row["routing_key"] == body["type"] == "embedding.invalidated" and row["event_id"] == body["event_id"]
        assert body["data"]["artifact_ids"] == ["art/1", "art-3"] and body["data"]["cascade_id"] == "c-7"
        assert body["data"]["chunks_removed"] == 3 and row["tenant_id"] == "acme"

    def test_invalidate_artifacts_changes_only_what_the_writer_may_write(self, artifacts, resources, tmp_path):
        requests = service(resources, tmp_path)
        # docs/contract.md, "Write rule": an artifact whose documents the caller may not write reads as not found.
        finance = WriteRule(tenant_ids=("acme",), tags=("finance",))
        refused = requests.invalidate_artifacts("acme", ["art/1"], publish_empty=False, writer=finance)
        assert (refused["invalidated"], refused["chunks_removed"], refused["not_found"]) == (0, 0, ["art/1"])
        assert len(artifacts.filter_documents()) == 7
        hr = WriteRule(tenant_ids=("acme",), tags=("hr",))
        allowed = requests.invalidate_artifacts("acme", ["art/1"], writer=hr)
        assert (allowed["invalidated"], allowed["chunks_removed"], allowed["document_ids"]) == (1, 3, ["doc-x"])

    def test_an_empty_invalidation_publishes_only_when_asked(self, artifacts, resources, tmp_path):
        requests = service(resources, tmp_path)
        assert requests.invalidate_artifacts("acme", ["nope"], publish_empty=False)["invalidated"] == 0
        assert resources.outbox.rows == []
        requests.invalidate_artifacts("acme", ["nope"], cascade_id="c-1")
        assert json.loads(resources.outbox.rows[0]["body"])["data"]["not_found"] == ["nope"]

    def test_an_event_triggered_invalidation_publishes_a_derived_id(self, artifacts, resources, tmp_path):
        requests = service(resources, tmp_path)
        requests.invalidate_artifacts("acme", ["art-2"], event_id="evt-1")
        requests.invalidate_artifacts("acme", ["art-2"], event_id="evt-1")  # a redelivery applied again
        requests.invalidate_artifacts("acme", ["art-2"])
        first, again, http = (row["event_id"] for row in resources.outbox.rows)
        assert first == again and http != first

    def test_indexed_artifacts_publish_completed_events(self, artifacts, resources, tmp_path):
        resources.indexing = Indexing({"doc-y": "unchanged", "new-1": "indexed", "plain": "indexed"})
        documents = [
            {"content": "y", "tenant_id": "acme", "tags": ["hr"], "document_id": "doc-y",
             "meta": {"artifact_id": "art-2"}},
            {"content": "n", "tenant_id": "acme", "tags": ["hr"], "document_id": "new-1",
             "meta": {"artifact_id": "art-9", "provenance_id": "prov-1"}},
            {"content": "p", "tenant_id": "acme", "tags": ["hr"], "document_id": "plain"},
        ]  # fmt: skip
        result = service(resources, tmp_path).index_documents(documents, event_ids=["evt-a", None, None])
        unchanged, new, plain = result["documents"]
        assert (unchanged["artifact_id"], unchanged["chunks"]) == ("art-2", 2)  # the chunks it holds
        assert new["artifact_id"] == "art-9" and "artifact_id" not in plain
        bodies = [json.loads(row["body"]) for row in resources.outbox.rows]
        assert [body["data"]["artifact_id"] for body in bodies] == ["art-2", "art-9"]
        assert [(b["data"]["chunks"], b["data"]["changed"]) for b in bodies] == [(2, False), (2, True)]
        assert bodies[1]["data"]["provenance_id"] == "prov-1" and bodies[0]["type"] == "embedding.completed"

    def test_without_an_outbox_nothing_is_published(self, artifacts, resources, tmp_path):
        resources.outbox = None
        assert service(resources, tmp_path).invalidate_artifacts("acme", ["art-2"])["chunks_removed"] == 2

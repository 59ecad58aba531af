"""The feedback and kept-question tables of the records database (SQLite), and the query log's new columns."""

import time

import pytest

from components.stores.feedback_store import MAX_COMMENT_CHARS, FeedbackStore
from components.stores.kept_question_store import KeptQuestionStore
from components.stores.record_store import RecordStore


@pytest.fixture
def records(tmp_path):
    store = RecordStore(tmp_path / "records.sqlite")
    yield store
    store.close()


def rate(feedback: FeedbackStore, query_id: str, rating: str = "down", tenant: str = "acme", user: str | None = "u1"):
    return feedback.record(
        query_id=query_id, tenant_id=tenant, user_id=user, key_id=None, rating=rating, comment=f"about {query_id}",
        tag="hr", action="CITE",
    )  # fmt: skip


@pytest.mark.unit
class TestFeedbackStore:
    def test_init_shares_the_records_database(self, records, tmp_path):
        assert FeedbackStore(records.database).database is records.database
        opened = FeedbackStore.open(tmp_path / "records.sqlite")
        assert opened.recent("acme") == []

    def test_record_replaces_an_earlier_rating_of_the_same_query(self, records):
        feedback = FeedbackStore(records.database)
        rate(feedback, "q-1", "up")
        rate(feedback, "q-1", "down")
        (row,) = feedback.recent("acme")
        assert (row["query_id"], row["rating"], row["comment"], row["tag"]) == ("q-1", "down", "about q-1", "hr")

    def test_record_refuses_bad_ratings_and_long_comments(self, records):
        feedback = FeedbackStore(records.database)
        with pytest.raises(ValueError, match="rating"):
            rate(feedback, "q-1", "meh")
        with pytest.raises(ValueError, match="comment"):
            feedback.record(query_id="q", tenant_id="a", user_id=None, key_id=None, rating="up",
                            comment="x" * (MAX_COMMENT_CHARS + 1))  # fmt: skip
        assert feedback.recent("acme") == [] and feedback.recent("a") == []

    def test_recent_for_queries_and_counts_stay_in_the_tenant(self, records):
        feedback = FeedbackStore(records.database)
        rate(feedback, "q-1", "up")
        rate(feedback, "q-2", "down")
        rate(feedback, "q-3", "down", tenant="globex")
        assert [row["query_id"] for row in feedback.recent("acme")] == ["q-2", "q-1"]
        assert set(feedback.for_queries("acme", ["q-1", "q-3"])) == {"q-1"}
        assert feedback.counts("acme", since=0) == {"hr": {"up": 1, "down": 1}}
        assert feedback.counts("acme", since=time.time() + 60) == {}

    def test_erase_and_prune(self, records):
        feedback = FeedbackStore(records.database)
        rate(feedback, "q-1", user="u1")
        rate(feedback, "q-2", user="u2")
        rate(feedback, "q-3", tenant="globex", user="u1")
        assert feedback.erase_user("u1", "acme") == 1
        assert [row["query_id"] for row in feedback.recent("globex")] == ["q-3"]
        assert feedback.erase_user("u1") == 1
        assert feedback.erase_tenant("acme") == 1 and feedback.recent("acme") == []
        rate(feedback, "q-4")
        assert feedback.prune(30) == 0 and feedback.prune(0, now=time.time() + 10**9) == 0
        assert feedback.prune(30, now=time.time() + 31 * 86400) == 1


@pytest.mark.unit
class TestKeptQuestionStore:
    def keep(self, kept, query_id, kind="routed", tenant="acme", user="u1", tag="hr"):
        return kept.keep(query_id=query_id, tenant_id=tenant, user_id=user, kind=kind, tag=tag,
                         question=f"question {query_id}?", endpoint="rag", reason="why")  # fmt: skip

    def test_keep_once_per_query_newest_first(self, records):
        kept = KeptQuestionStore(records.database)
        assert self.keep(kept, "q-1", "routed") is True
        assert self.keep(kept, "q-1", "thumbs_down") is False  # the first kind stays
        assert self.keep(kept, "q-2", "declined", tag="system") is True
        rows = kept.questions("acme")
        assert [(row["query_id"], row["kind"], row["tag"]) for row in rows] == [
            ("q-2", "declined", "system"), ("q-1", "routed", "hr"),
        ]  # fmt: skip
        assert rows[1]["question"] == "question q-1?" and rows[1]["endpoint"] == "rag"
        assert kept.questions("globex") == []

    def test_unknown_kind_is_refused(self, records):
        with pytest.raises(ValueError, match="kind"):
            self.keep(KeptQuestionStore(records.database), "q-1", "maybe")

    def test_erase_and_prune(self, records):
        kept = KeptQuestionStore(records.database)
        self.keep(kept, "q-1", user="u1")
        self.keep(kept, "q-2", user="u2")
        self.keep(kept, "q-3", tenant="globex", user="u1")
        assert kept.erase_user("u1") == 2
        assert kept.erase_tenant("acme") == 1 and kept.questions("acme") == []
        self.keep(kept, "q-4")
        assert kept.prune(0, now=time.time() + 10**9) == 0 and kept.prune(7) == 0
        assert kept.prune(7, now=time.time() + 8 * 86400) == 1


@pytest.mark.unit
class TestQueryLogForFeedback:
    def log(self, records, query_id, **fields):
        values = {"endpoint": "rag", "query": "q", "latency_ms": 1.0, "tenant_id": "acme", "user_id": "u1",
                  "key_id": None, "action": "CITE", "result_count": 3, "query_id": query_id, "tag": "hr"}  # fmt: skip
        records.log_query(**{**values, **fields})

    def test_query_id_and_tag_are_logged(self, records):
        self.log(records, "q-1")
        (row,) = records.queries()
        assert (row["query_id"], row["tag"]) == ("q-1", "hr")

    def test_asked_query_matches_tenant_user_and_key_exactly(self, records):
        self.log(records, "q-user")
        self.log(records, "q-tenant", user_id=None)
        self.log(records, "q-key", key_id="key-1")
        asked = records.asked_query
        assert asked("q-user", tenant_id="acme", user_id="u1", key_id=None)["query_id"] == "q-user"
        assert asked("q-tenant", tenant_id="acme", user_id=None, key_id=None)["query_id"] == "q-tenant"
        assert asked("q-key", tenant_id="acme", user_id="u1", key_id="key-1")["query_id"] == "q-key"
        for query_id, tenant, user, key in (
            ("q-user", "globex", "u1", None),  # another tenant
            ("q-user", "acme", "u2", None),  # another user
            ("q-user", "acme", None, None),  # a tenant-wide asker is not the user
            ("q-tenant", "acme", "u1", None),  # nor the other way round
            ("q-key", "acme", "u1", None),  # the same user without the key
            ("q-key", "acme", "u1", "key-2"),  # another key
            ("nope", "acme", "u1", None),
        ):
            assert asked(query_id, tenant_id=tenant, user_id=user, key_id=key) is None, (query_id, tenant, user, key)

    def test_answer_and_search_quality_per_tag(self, records):
        self.log(records, "q-1")
        self.log(records, "q-2", action="ROUTE", result_count=2)
        self.log(records, "q-3", action="ROUTE", result_count=0, tag="system")
        self.log(records, "q-4", endpoint="chat", action="CITE", tag="finance")
        self.log(records, "q-5", outcome="llm_timeout", action=None)
        self.log(records, "q-6", tenant_id="globex")
        self.log(records, "s-1", endpoint="search", action=None, result_count=0, tag=None)
        self.log(records, "s-2", endpoint="enrich", action=None, result_count=4, tag=None)
        quality = {row["tag"]: row for row in records.answer_quality("acme", since=0)}
        assert quality["hr"] == {"tag": "hr", "answers": 2, "cited": 1, "routed": 1, "empty": 0}
        assert quality["system"] == {"tag": "system", "answers": 1, "cited": 0, "routed": 1, "empty": 1}
        assert quality["finance"]["cited"] == 1 and set(quality) == {"hr", "system", "finance"}
        assert records.answer_quality("acme", since=time.time() + 60) == []
        assert records.search_quality("acme", since=0) == {"searches": 2, "empty": 1}

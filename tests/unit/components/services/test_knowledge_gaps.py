"""
The knowledge gaps and feedback services without HTTP: kept questions, routed events, the view by owner,
feedback on one's own queries, over a real records database, tag directory and Qdrant Edge store.
"""

import time
from types import SimpleNamespace

import pytest
from support.indexing_support import stored_chunk

from components.core.errors import InvalidRequestError
from components.core.requester import Identity
from components.routers.tag_router import TagRouter
from components.services.document_catalog import StaleRule
from components.services.feedback_service import FeedbackNotFoundError, FeedbackService
from components.services.knowledge_gaps import GapSettings, KnowledgeGaps
from components.services.request_observer import RequestObserver
from components.stores.record_store import RecordStore
from components.stores.tag_directory import TagDirectory

SAM = Identity("acme", ("hr", "it"), user_id="u-sam")
ROUTED = {"action": "ROUTE", "context_chunks_used": 2, "route_to": {
    "tag": "hr", "owner_user_id": "u-maria", "owner_email": "maria@acme.example", "fallback": False,
    "reason": "Low confidence: 41%, routing to hr owner"}}  # fmt: skip
DECLINED = {"action": "ROUTE", "context_chunks_used": 1, "route_to": {
    "tag": "it", "owner_user_id": None, "owner_email": "admin@acme.example", "fallback": True,
    "reason": "Low confidence: 30%; no owner for tag 'it' - routing to admin"}}  # fmt: skip
CITED = {"action": "CITE", "context_chunks_used": 3, "route_to": None}


@pytest.fixture
def resources(tmp_path, store):
    directory = TagDirectory(tmp_path / "tags.sqlite")
    directory.add_user("u-maria", "maria@acme.example")
    directory.set_tag_owner("acme", "hr", "u-maria")
    router = TagRouter(directory_path=str(tmp_path / "tags.sqlite"), admin_email="admin@acme.example")
    records = RecordStore(tmp_path / "records.sqlite")
    yield SimpleNamespace(records=records, store=store, owner_of=router.owner_of)
    records.close()


class Counting(RequestObserver):
    def __init__(self):
        self.ratings = []

    def feedback_given(self, tenant_id, tag, rating):
        self.ratings.append((tenant_id, tag, rating))


def log(records, query_id, identity=SAM, action="CITE", tag="hr", result_count=3, key_id=None, text="q?"):
    records.log_query(endpoint="rag", query=text, latency_ms=1.0, tenant_id=identity.tenant_id,
                      user_id=identity.user_id, key_id=key_id, action=action, result_count=result_count,
                      query_id=query_id, tag=tag)  # fmt: skip


@pytest.mark.integration
class TestKnowledgeGaps:
    def test_init_keeps_its_settings(self, resources):
        gaps = KnowledgeGaps(resources, GapSettings(), StaleRule())
        assert gaps.settings.keep_questions is False and gaps.publish is None
        with pytest.raises(ValueError):
            GapSettings(retention_days=-1)

    def test_answered_keeps_routed_and_declined_questions_only_when_keeping_is_on(self, resources):
        off = KnowledgeGaps(resources, GapSettings(keep_questions=False), StaleRule())
        assert off.answered(query_id="q-0", identity=SAM, question="Parental leave?", result=ROUTED,
                            endpoint="rag") == "routed"  # fmt: skip
        assert off.view("acme")["tags"] == []  # nothing kept, nothing logged
        on = KnowledgeGaps(resources, GapSettings(keep_questions=True), StaleRule())
        assert on.answered(query_id="q-1", identity=SAM, question="Parental leave?", result=ROUTED,
                           endpoint="rag") == "routed"  # fmt: skip
        assert on.answered(query_id="q-2", identity=SAM, question="Printer?", result=DECLINED, endpoint="chat") == (
            "declined"
        )
        assert on.answered(query_id="q-3", identity=SAM, question="Leave days?", result=CITED, endpoint="rag") is None
        groups = {group["tag"]: group for group in on.view("acme")["tags"]}
        assert [q["question"] for q in groups["hr"]["questions"]] == ["Parental leave?"]
        assert groups["hr"]["owner"]["owner_email"] == "maria@acme.example" and groups["hr"]["kinds"]["routed"] == 1
        assert groups["it"]["owner"] == {
            "tag": "it", "owner_user_id": None, "owner_email": "admin@acme.example", "fallback": True,
        }  # fmt: skip
        assert groups["it"]["questions"][0]["kind"] == "declined"

    def test_routed_events_carry_the_text_only_when_keeping_is_on(self, resources):
        for keep in (False, True):
            sent = []
            gaps = KnowledgeGaps(resources, GapSettings(keep_questions=keep), StaleRule(), publish=sent.append)
            gaps.answered(query_id=f"q-{keep}", identity=SAM, question="Parental leave?", result=ROUTED, endpoint="rag")
            gaps.answered(query_id="q-cited", identity=SAM, question="Leave?", result=CITED, endpoint="rag")
            (event,) = sent
            assert (event["query_id"], event["tenant_id"], event["kind"], event["tag"]) == (
                f"q-{keep}", "acme", "routed", "hr",
            )  # fmt: skip
            assert event["owner_email"] == "maria@acme.example" and event["fallback"] is False
            assert ("question" in event) is keep

    def test_view_groups_by_tag_newest_first_with_quality_feedback_and_stale_documents(self, resources, store):
        store.write_documents([stored_chunk("old-policy", 0, document_name="Old policy")])  # no indexed_at: stale
        gaps = KnowledgeGaps(resources, GapSettings(keep_questions=True), StaleRule(180))
        feedback = FeedbackService(resources, gaps, Counting())
        log(resources.records, "q-1", action="ROUTE")
        gaps.answered(query_id="q-1", identity=SAM, question="First hr gap?", result=ROUTED, endpoint="rag")
        log(resources.records, "q-2", action="ROUTE")
        gaps.answered(query_id="q-2", identity=SAM, question="Second hr gap?", result=ROUTED, endpoint="rag")
        log(resources.records, "q-3", action="ROUTE", tag="system", result_count=0)
        log(resources.records, "q-4", text="How many leave days?")
        feedback.give("q-4", "down", "It changed in May.", SAM)
        feedback.give("q-2", "down", "Nobody answered.", SAM)
        view = gaps.view("acme")
        assert [group["tag"] for group in view["tags"]][:1] == ["hr"]
        hr = view["tags"][0]
        assert hr["count"] == 3 and hr["kinds"] == {"declined": 0, "routed": 2, "thumbs_down": 1}
        assert [q["question"] for q in hr["questions"]] == ["How many leave days?", "Second hr gap?", "First hr gap?"]
        assert [q["comment"] for q in hr["questions"]] == ["It changed in May.", "Nobody answered.", None]
        assert hr["quality"]["answers"] == 3 and hr["quality"]["cited"] == 1 and hr["quality"]["routed"] == 2
        assert hr["quality"]["route_rate"] == 0.6667 and hr["quality"]["feedback"] == {"up": 0, "down": 2}
        system = next(group for group in view["tags"] if group["tag"] == "system")
        assert system["quality"]["empty"] == 1 and system["owner"]["fallback"] is True
        assert view["quality"]["answers"] == 4 and view["quality"]["empty_rate"] == 0.25
        assert view["quality"]["decline_rate"] == 0.75
        assert view["stale_documents"]["counts"]["not_reindexed"] == 1
        assert view["stale_documents"]["documents"][0]["title"] == "Old policy"
        assert gaps.view("globex")["tags"] == []

    def test_prune_removes_kept_questions_and_feedback_past_retention(self, resources):
        gaps = KnowledgeGaps(resources, GapSettings(keep_questions=True, retention_days=7), StaleRule())
        log(resources.records, "q-1")
        gaps.answered(query_id="q-1", identity=SAM, question="Gap?", result=ROUTED, endpoint="rag")
        FeedbackService(resources, gaps).give("q-1", "up", None, SAM)
        assert gaps.prune(30) == {"kept_questions": 0, "feedback": 0}
        assert gaps.prune(30, now=time.time() + 8 * 86400) == {"kept_questions": 1, "feedback": 0}
        assert gaps.prune(30, now=time.time() + 31 * 86400) == {"kept_questions": 0, "feedback": 1}


@pytest.mark.integration
class TestFeedbackService:
    def test_give_records_counts_and_keeps_a_thumbs_down(self, resources):
        observer = Counting()
        gaps = KnowledgeGaps(resources, GapSettings(keep_questions=True), StaleRule())
        feedback = FeedbackService(resources, gaps, observer)
        log(resources.records, "q-1", text="Per diem in NL?")
        up = feedback.give("q-1", "up", "  ", SAM)
        assert (up["rating"], up["comment"], up["question_kept"]) == ("up", None, False)
        down = feedback.give("q-1", "down", "Wrong figure", SAM)
        assert down["question_kept"] is True
        assert observer.ratings == [("acme", "hr", "up"), ("acme", "hr", "down")]
        (entry,) = gaps.recent_feedback("acme")
        assert (entry["rating"], entry["comment"], entry["question"]) == ("down", "Wrong figure", "Per diem in NL?")

    def test_another_askers_query_is_not_found_like_an_unknown_one(self, resources):
        feedback = FeedbackService(resources, KnowledgeGaps(resources, GapSettings(), StaleRule()))
        log(resources.records, "q-1")
        log(resources.records, "q-key", key_id="key-aaaaaaaaaaaa")
        others = (
            Identity("globex", ("hr",), user_id="u-sam"),
            Identity("acme", ("hr",), user_id="u-other"),
            Identity("acme", ("hr",)),
        )
        messages = set()
        for identity in others:
            with pytest.raises(FeedbackNotFoundError) as refused:
                feedback.give("q-1", "down", None, identity)
            messages.add(str(refused.value).replace("q-1", "ID"))
        with pytest.raises(FeedbackNotFoundError) as unknown:
            feedback.give("q-unknown", "down", None, SAM)
        messages.add(str(unknown.value).replace("q-unknown", "ID"))
        assert len(messages) == 1  # nothing tells another asker's id from an unknown one
        with pytest.raises(FeedbackNotFoundError):
            feedback.give("q-key", "up", None, SAM)  # asked with a key: the same user without it is not the asker
        assert feedback.give("q-key", "up", None, Identity("acme", ("hr",), "u-sam", key_id="key-aaaaaaaaaaaa"))

    def test_bad_ratings_and_comments_are_refused(self, resources):
        feedback = FeedbackService(resources, KnowledgeGaps(resources, GapSettings(), StaleRule()))
        log(resources.records, "q-1")
        with pytest.raises(InvalidRequestError, match="rating"):
            feedback.give("q-1", "sideways", None, SAM)
        with pytest.raises(InvalidRequestError, match="comment"):
            feedback.give("q-1", "down", "x" * 2001, SAM)

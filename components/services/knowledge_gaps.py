"""
What the documents do not answer, by owner (docs/contract.md, "Feedback and knowledge gaps"):

* after each answer (:meth:`KnowledgeGaps.answered`): a routed answer is a ``declined`` question (routed to the
  administrator: no owner for its tag, or no context) or a ``routed`` one (routed to the tag's owner). With
  ``SOURCEBOUND_KEEP_UNANSWERED_QUESTIONS=true`` its text is kept (``components.stores.kept_question_store``);
  with a publisher (the broker configured) a ``question.routed`` event goes out, carrying the text only when
  keeping is on;
* after a thumbs-down (:meth:`KnowledgeGaps.rated_down`): the question is kept as ``thumbs_down`` (same switch),
  filed under the answer's primary context tag;
* the view (:meth:`KnowledgeGaps.view`, ``GET /insights/gaps``): per tag, the owner to ask (the router's rule:
  :meth:`components.routers.tag_router.TagRouter.owner_of`), the kept questions newest first with their feedback,
  the tag's answer quality (answers, cited, declined, empty) and feedback counts; the tenant's search empty-result
  rate and its stale documents.

Usage:

```python
from components.services.knowledge_gaps import GapSettings, KnowledgeGaps

gaps = KnowledgeGaps(resources, GapSettings(keep_questions=True), stale_rule)
gaps.answered(query_id="5f0c...", identity=identity, question="How do I ...?", result=rag_result, endpoint="rag")
gaps.view("acme")["tags"][0]  # {"tag": "hr", "owner": {...}, "count": 1, "questions": [...], "quality": {...}}
```
"""

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from components.core.requester import Identity
from components.routers.tag_router import NO_TAG
from components.services.document_catalog import StaleRule, document_catalog
from components.stores.feedback_store import FeedbackStore
from components.stores.kept_question_store import KINDS, KeptQuestionStore

logger = logging.getLogger(__name__)

ROUTED_EVENT = "question.routed"
# The stale documents the view lists (the counts cover them all).
MAX_STALE_LISTED = 50


@dataclass(frozen=True)
class GapSettings:
    """
    :param keep_questions: Keep the text of declined, routed and thumbs-down questions
        (``SOURCEBOUND_KEEP_UNANSWERED_QUESTIONS``).
    :param retention_days: How long kept questions stay (``SOURCEBOUND_UNANSWERED_QUESTIONS_RETENTION_DAYS``; 0:
        until erased).
    :param window_days: The period the view's quality figures cover (the records' retention).
    """

    keep_questions: bool = False
    retention_days: int = 30
    window_days: int = 30

    def __post_init__(self) -> None:
        if self.retention_days < 0 or self.window_days < 1:
            raise ValueError("retention_days must be >= 0 and window_days >= 1")


class GapResources(Protocol):
    """What the service reads at call time (the wiring builds each part on first use)."""

    @property
    def records(self) -> Any: ...  # RecordStore

    @property
    def store(self) -> Any: ...  # the document store

    def owner_of(self, tenant_id: str, tag: str | None) -> dict[str, Any]: ...  # the router's owner rule


def _rate(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def _figures(answered: dict[str, Any], owner: dict[str, Any]) -> dict[str, int]:
    """
    A tag's answers split as the quality metrics split them: ``cited``, ``routed`` (to the tag's owner),
    ``declined`` (to the administrator: nobody owns the tag) and ``empty`` (no context at all). The query log
    says routed or not; whom to is the tag's owner rule, so the split follows the tag's current owner.
    """
    routed_all, empty = answered.get("routed", 0), answered.get("empty", 0)
    with_context = routed_all - empty
    return {
        "answers": answered.get("answers", 0),
        "cited": answered.get("cited", 0),
        "routed": 0 if owner.get("fallback", True) else with_context,
        "declined": with_context if owner.get("fallback", True) else 0,
        "empty": empty,
    }


def _rates(figures: dict[str, int]) -> dict[str, float | None]:
    """Every routed answer is a decline (docs/contract.md, "Routed answers are declines"): the share not cited."""
    answers = figures["answers"]
    return {
        "decline_rate": _rate(figures["routed"] + figures["declined"] + figures["empty"], answers),
        "route_rate": _rate(figures["routed"], answers),
        "empty_rate": _rate(figures["empty"], answers),
    }


class KnowledgeGaps:
    """
    :param resources: The records, the document store and the owner rule.
    :param settings: Keeping, retention and the view's window.
    :param stale_rule: When a document is stale.
    :param publish: Sends one ``question.routed`` event (``None``: no broker configured).
    """

    def __init__(
        self,
        resources: GapResources,
        settings: GapSettings,
        stale_rule: StaleRule,
        publish: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        self.resources = resources
        self.settings = settings
        self.stale_rule = stale_rule
        self.publish = publish

    def _kept(self) -> KeptQuestionStore:
        return KeptQuestionStore(self.resources.records.database)

    def _feedback(self) -> FeedbackStore:
        return FeedbackStore(self.resources.records.database)

    # ------------------------------------------------------------------ recording

    def answered(
        self, *, query_id: str, identity: Identity, question: str, result: dict[str, Any], endpoint: str
    ) -> str | None:
        """
        Record what an answer says about the documents.

        :returns: ``declined`` or ``routed`` for a routed answer (kept and published as configured), ``None`` for a
            cited one.
        """
        if result.get("action") != "ROUTE":
            return None
        route = result.get("route_to") or {}
        kind = "declined" if route.get("fallback", True) else "routed"
        tag = route.get("tag") or NO_TAG
        if self.settings.keep_questions:
            self._kept().keep(
                query_id=query_id, tenant_id=identity.tenant_id, user_id=identity.user_id, endpoint=endpoint,
                kind=kind, tag=tag, question=question, reason=route.get("reason"),
            )  # fmt: skip
        if self.publish is not None:
            event = {
                "query_id": query_id,
                "tenant_id": identity.tenant_id,
                "kind": kind,
                "tag": tag,
                "owner_user_id": route.get("owner_user_id"),
                "owner_email": route.get("owner_email"),
                "fallback": bool(route.get("fallback", True)),
                "reason": route.get("reason"),
                "asked_at": datetime.now(UTC).isoformat(),
            }
            if self.settings.keep_questions:  # the text leaves the request only when keeping is on
                event["question"] = question
            self.publish(event)
        return kind

    def rated_down(self, query: dict[str, Any]) -> bool:
        """
        Keep the question of a query its asker rated down (a ``query_log`` row). The text is the query log's
        (none when it keeps only hashes: ``SOURCEBOUND_QUERY_LOG_TEXT=hash``).

        :returns: Whether a question was newly kept (``False`` when keeping is off or it was kept already).
        """
        if not self.settings.keep_questions:
            return False
        return self._kept().keep(
            query_id=query["query_id"], tenant_id=query["tenant_id"], user_id=query.get("user_id"),
            endpoint=query.get("endpoint"), kind="thumbs_down", tag=query.get("tag") or NO_TAG,
            question=query.get("query_text"), reason="rated down by its asker",
        )  # fmt: skip

    def prune(self, feedback_retention_days: int, now: float | None = None) -> dict[str, int]:
        """
        Remove questions kept longer than their retention period and feedback older than the records'
        (``feedback_retention_days``; 0 keeps it).

        :returns: ``{"kept_questions": n, "feedback": n}`` removed.
        """
        return {
            "kept_questions": self._kept().prune(self.settings.retention_days, now),
            "feedback": self._feedback().prune(feedback_retention_days, now),
        }

    # ------------------------------------------------------------------ the views

    def recent_feedback(self, tenant_id: str, limit: int = 100) -> list[dict[str, Any]]:
        """The tenant's newest ratings and comments, with the kept question when there is one."""
        rows = self._feedback().recent(tenant_id, limit)
        kept = {row["query_id"]: row for row in self._kept().questions(tenant_id)} if rows else {}
        fields = ("query_id", "created_at", "rating", "comment", "tag", "action", "user_id")
        return [
            {**{field: row[field] for field in fields}, "question": (kept.get(row["query_id"]) or {}).get("question")}
            for row in rows
        ]

    def view(self, tenant_id: str, *, viewer_user_id: str | None = None, now: float | None = None) -> dict[str, Any]:
        """
        The knowledge gaps of a tenant.

        :param tenant_id: The tenant.
        :param viewer_user_id: The operator's own user (their private documents may be listed as stale).
        :param now: The current time (epoch seconds).
        :returns: ``{"tenant_id", "keep_unanswered_questions", "retention_days", "window_days", "tags": [...],
            "quality": {...}, "stale_documents": {...}}`` (docs/api.md, "Knowledge gaps").
        """
        now = now if now is not None else time.time()
        since = now - self.settings.window_days * 86400
        records = self.resources.records
        questions = self._kept().questions(tenant_id)
        feedback = self._feedback().for_queries(tenant_id, [question["query_id"] for question in questions])
        ratings = self._feedback().counts(tenant_id, since)
        quality = {row["tag"] or NO_TAG: row for row in records.answer_quality(tenant_id, since)}
        groups: dict[str, dict[str, Any]] = {}

        def group(tag: str) -> dict[str, Any]:
            if tag not in groups:
                groups[tag] = {"tag": tag, "count": 0, "kinds": dict.fromkeys(KINDS, 0), "questions": []}
            return groups[tag]

        for question in questions:  # newest first
            entry = group(question["tag"])
            rating = feedback.get(question["query_id"]) or {}
            entry["count"] += 1
            entry["kinds"][question["kind"]] += 1
            entry["questions"].append(
                {
                    "query_id": question["query_id"],
                    "asked_at": question["created_at"],
                    "kind": question["kind"],
                    "question": question["question"],
                    "reason": question["reason"],
                    "rating": rating.get("rating"),
                    "comment": rating.get("comment"),
                }
            )
        for tag in quality:
            group(tag)
        for tag in ratings:
            group(tag or NO_TAG)
        totals = dict.fromkeys(("answers", "cited", "routed", "declined", "empty"), 0)
        for tag, entry in groups.items():
            entry["owner"] = self.resources.owner_of(tenant_id, tag)
            figures = _figures(quality.get(tag, {}), entry["owner"])
            for name, value in figures.items():
                totals[name] += value
            entry["quality"] = {
                **figures,
                **_rates(figures),
                "feedback": ratings.get("" if tag == NO_TAG else tag, {"up": 0, "down": 0}),
            }
        ordered = sorted(
            groups.values(),
            key=lambda entry: (
                -entry["count"],
                -(entry["questions"][0]["asked_at"] if entry["questions"] else 0),
                -entry["quality"]["answers"],
                entry["tag"],
            ),
        )
        searches = records.search_quality(tenant_id, since)
        catalog = document_catalog(
            self.resources.store, tenant_id, self.stale_rule, viewer_user_id=viewer_user_id,
            now=datetime.fromtimestamp(now, UTC),
        )  # fmt: skip
        stale = [entry for entry in catalog["documents"] if entry["stale"]]
        return {
            "tenant_id": tenant_id,
            "keep_unanswered_questions": self.settings.keep_questions,
            "retention_days": self.settings.retention_days,
            "window_days": self.settings.window_days,
            "tags": ordered,
            "quality": {
                **totals,
                **_rates(totals),
                "searches": searches["searches"],
                "empty_searches": searches["empty"],
                "search_empty_rate": _rate(searches["empty"], searches["searches"]),
            },
            "stale_documents": {
                "max_age_days": self.stale_rule.max_age_days,
                "counts": catalog["stale"],
                "documents": [
                    {key: entry[key] for key in ("document_id", "title", "source", "indexed_at", "stale")}
                    for entry in stale[:MAX_STALE_LISTED]
                ],
            },
        }

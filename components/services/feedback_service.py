"""
Feedback on answers (docs/contract.md, "Feedback and knowledge gaps"): ``POST /feedback {query_id, rating,
comment}`` records a rating of the asker's own query.

The asker is the identity as every route resolves it (the key in ``api_key`` mode, the body's tenant and user in
trusted mode). A ``query_id`` the same tenant, user and key did not ask is a :class:`FeedbackNotFoundError`
(404), exactly like one that does not exist, so nobody learns whether another asker's id is real. A thumbs-down
keeps the question for the knowledge gaps (when keeping is on); every rating is counted for ``/metrics``.

Usage:

```python
from components.services.feedback_service import FeedbackService

feedback = FeedbackService(resources, gaps, observer)   # resources.records: the RecordStore
feedback.give("5f0c...", "down", "The policy changed in May.", identity)
```
"""

from typing import Any

from components.core.errors import InvalidRequestError, NotFoundError
from components.core.requester import Identity
from components.services.knowledge_gaps import KnowledgeGaps
from components.services.request_observer import RequestObserver
from components.stores.feedback_store import MAX_COMMENT_CHARS, RATINGS, FeedbackStore


class FeedbackNotFoundError(NotFoundError):
    """The query is not the asker's (or does not exist): the two are never told apart."""


class FeedbackService:
    """
    :param resources: Holds ``records`` (the ``RecordStore``: the query log the asker is checked against), read at
        call time (the wiring opens it on first use).
    :param gaps: Keeps a rated-down question.
    :param observer: Counts each rating (metrics).
    """

    def __init__(self, resources: Any, gaps: KnowledgeGaps, observer: RequestObserver | None = None) -> None:
        self.resources = resources
        self.gaps = gaps
        self.observer = observer or RequestObserver()

    def give(self, query_id: str, rating: str, comment: str | None, identity: Identity) -> dict[str, Any]:
        """
        Record the asker's rating of one of their queries.

        :param query_id: The ``query_id`` of an answer (or search, enrichment).
        :param rating: ``up`` or ``down``.
        :param comment: Optional free text (at most 2000 characters).
        :param identity: The asker.
        :returns: ``{"query_id", "rating", "comment", "recorded_at", "question_kept"}``.
        :raises InvalidRequestError: A rating other than ``up``/``down`` or an over-long comment.
        :raises FeedbackNotFoundError: No such query of this asker.
        """
        if rating not in RATINGS:
            raise InvalidRequestError(f"rating: must be one of {', '.join(RATINGS)}, got {rating!r}")
        comment = (comment or "").strip() or None
        if comment is not None and len(comment) > MAX_COMMENT_CHARS:
            raise InvalidRequestError(f"comment: at most {MAX_COMMENT_CHARS} characters")
        records = self.resources.records
        query = records.asked_query(
            query_id, tenant_id=identity.tenant_id, user_id=identity.user_id, key_id=identity.key_id
        )
        if query is None:
            raise FeedbackNotFoundError(f"No query {query_id!r} of yours: feedback is for your own answers.")
        stored = FeedbackStore(records.database).record(
            query_id=query_id, tenant_id=identity.tenant_id, user_id=identity.user_id, key_id=identity.key_id,
            rating=rating, comment=comment, tag=query.get("tag"), action=query.get("action"),
        )  # fmt: skip
        kept = self.gaps.rated_down(query) if rating == "down" else False
        self.observer.feedback_given(identity.tenant_id, query.get("tag"), rating)
        return {
            "query_id": query_id,
            "rating": rating,
            "comment": comment,
            "recorded_at": stored["created_at"],
            "question_kept": kept,
        }

"""
``POST /feedback`` (docs/api.md, "Feedback"): the asker's rating of one of their answers, over
:class:`components.services.feedback_service.FeedbackService`.

The asker is resolved as on every route (the key in ``api_key`` mode; the body's ``tenant_id``/``user_id`` in
trusted mode); a ``query_id`` that is not theirs is a 404 exactly like an unknown one.
"""

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from pydantic import Field, StringConstraints

from components.stores.feedback_store import MAX_COMMENT_CHARS
from hayhooks_app.errors import raise_api_errors
from hayhooks_app.identity import resolve_identity
from hayhooks_app.schemas import Identifier, StrictModel

QueryId = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_-]{1,64}$")]


class FeedbackBody(StrictModel):
    """``POST /feedback``: which answer, the rating, an optional comment; identity fields as on ``/rag/run``."""

    query_id: QueryId = Field(description="The query_id of the answer (every /rag/run result and chat reply has one).")
    rating: Literal["up", "down"] = Field(description="up: the answer helped; down: it did not.")
    comment: Annotated[str, StringConstraints(max_length=MAX_COMMENT_CHARS)] | None = Field(
        default=None, description="What was wrong or missing (kept with the rating; erased with the asker)."
    )
    tenant_id: Identifier | None = Field(default=None, description="Tenant (trusted mode; api_key mode: the key's).")
    user_id: Identifier | None = Field(default=None, description="User (trusted mode; api_key mode: the key's).")


def feedback_routes(container: Any) -> APIRouter:
    """The feedback route over the container's ``FeedbackService``."""
    router = APIRouter(tags=["feedback"])

    @router.post("/feedback", summary="Rate one of your answers (up/down, optional comment)")
    async def give(request: Request, body: FeedbackBody) -> dict:
        identity = resolve_identity(
            container.settings.auth_mode, container.credentials, request.headers, tenant_id=body.tenant_id,
            user_tags=None, user_id=body.user_id, require_tags=False,
        )  # fmt: skip
        give = raise_api_errors(container.feedback.give)
        return {"result": await run_in_threadpool(give, body.query_id, body.rating, body.comment, identity)}

    return router

"""
The knowledge gaps and the feedback of a tenant (docs/api.md, "Knowledge gaps"), for its operators:

* ``GET /insights/gaps?tenant_id=...``: per tag, the owner to ask, the kept questions (declined, routed,
  thumbs-down) newest first with their feedback, the tag's answer quality; the search empty-result rate and the
  stale documents (:meth:`components.services.knowledge_gaps.KnowledgeGaps.view`);
* ``GET /insights/feedback?tenant_id=...``: the newest ratings and comments.

Both need the ``admin`` permission in ``api_key`` mode (the key's own tenant only).
"""

from typing import Any

from fastapi import APIRouter, Query, Request
from fastapi.concurrency import run_in_threadpool

from hayhooks_app.identity import authorize_admin


def insight_routes(container: Any) -> APIRouter:
    """The insight routes over the container's knowledge gaps and records."""
    router = APIRouter(tags=["insights"])

    def admin(request: Request, tenant_id: str | None) -> tuple[str, Any]:
        return authorize_admin(container.settings.auth_mode, container.credentials, request.headers, tenant_id)

    @router.get("/insights/gaps", summary="Knowledge gaps by tag, with the owner to ask (admin)")
    async def gaps(request: Request, tenant_id: str | None = Query(None, description="The tenant.")) -> dict:
        tenant, record = admin(request, tenant_id)
        viewer = record.user_id if record is not None else None
        return {"result": await run_in_threadpool(lambda: container.gaps.view(tenant, viewer_user_id=viewer))}

    @router.get("/insights/feedback", summary="The newest feedback on answers (admin)")
    async def feedback(
        request: Request,
        tenant_id: str | None = Query(None, description="The tenant."),
        limit: int = Query(100, ge=1, le=1000, description="Rows, newest first."),
    ) -> dict:
        tenant, _record = admin(request, tenant_id)
        rows = await run_in_threadpool(container.gaps.recent_feedback, tenant, limit)
        return {"result": {"tenant_id": tenant, "feedback": rows}}

    return router

"""
``POST /conversations``, ``GET`` and ``DELETE /conversations/{conversation_id}`` (docs/api.md, "Conversations"):
server-side conversations over :class:`components.services.conversation_service.ConversationService`.

The caller's tenant and user come from the resolved identity (trusted mode: the body or query; ``api_key``
mode: the key), so a conversation id that is not theirs is a 404 exactly like an unknown one.
"""

from typing import Any

from fastapi import APIRouter, Query, Request
from fastapi.concurrency import run_in_threadpool

from components.core.requester import Identity
from hayhooks_app.errors import raise_api_errors
from hayhooks_app.identity import resolve_identity
from hayhooks_app.schemas import Identifier, StrictModel


class ConversationCreateBody(StrictModel):
    """``POST /conversations``: identity fields as on ``/rag/run`` (trusted mode; api_key mode takes the key's)."""

    tenant_id: Identifier | None = None
    user_id: Identifier | None = None
    project_id: Identifier | None = None


def _identity(
    container: Any, request: Request, tenant_id: str | None, user_id: str | None, project_id: str | None = None
) -> Identity:
    return resolve_identity(
        container.settings.auth_mode,
        container.credentials,
        request.headers,
        tenant_id=tenant_id,
        user_tags=None,
        user_id=user_id,
        project_id=project_id,
        require_tags=False,
    )


def conversation_routes(container: Any) -> APIRouter:
    """The conversation routes over the container's ``ConversationService``."""
    router = APIRouter(tags=["conversations"])

    @router.post("/conversations", summary="Start a server-side conversation")
    async def create(request: Request, body: ConversationCreateBody) -> dict:
        identity = _identity(container, request, body.tenant_id, body.user_id, body.project_id)
        return await run_in_threadpool(raise_api_errors(container.conversations.create), identity)

    @router.get("/conversations/{conversation_id}", summary="A conversation's summary and stored turns")
    async def read(
        request: Request,
        conversation_id: str,
        tenant_id: str | None = Query(None, description="Tenant (trusted mode)."),
        user_id: str | None = Query(None, description="User (trusted mode)."),
    ) -> dict:
        identity = _identity(container, request, tenant_id, user_id)
        return await run_in_threadpool(raise_api_errors(container.conversations.get), conversation_id, identity)

    @router.delete("/conversations/{conversation_id}", summary="Delete a conversation, its turns and summaries")
    async def delete(
        request: Request,
        conversation_id: str,
        tenant_id: str | None = Query(None, description="Tenant (trusted mode)."),
        user_id: str | None = Query(None, description="User (trusted mode)."),
    ) -> dict:
        identity = _identity(container, request, tenant_id, user_id)
        return await run_in_threadpool(raise_api_errors(container.conversations.delete), conversation_id, identity)

    return router

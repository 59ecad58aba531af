"""
The per-tenant glossary over HTTP (docs/api.md, "Glossary"; docs/contract.md, "Glossary"):

* ``POST /glossary`` ``{"tenant_id", "csv"}`` replaces the tenant's glossary (api_key mode: the key needs
  the ``admin`` permission and must be the tenant's); an invalid CSV is a 422 naming the row, and changes
  nothing;
* ``GET /glossary`` shows the caller's tenant's compiled vocabulary (``vocabulary.json``);
* ``DELETE /glossary`` removes it (admin, like ``POST``).

The pipelines' ``GlossaryQueryExpander`` reads the same file (``DATA_DIR/glossary.sqlite``) for the
requester's tenant only, so a glossary loaded here applies to that tenant's next query and to no other's.
"""

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.concurrency import run_in_threadpool
from pydantic import Field, StringConstraints

from components.core.vocabulary import GlossaryError
from hayhooks_app.errors import ApiError, validation_error
from hayhooks_app.identity import authorize_write, resolve_identity
from hayhooks_app.schemas import Identifier, StrictModel


class GlossaryLoadBody(StrictModel):
    """``POST /glossary``: the tenant and its whole glossary CSV (term, aliases, optional definition)."""

    tenant_id: Identifier = Field(description="The tenant whose glossary is replaced.")
    csv: Annotated[str, StringConstraints(max_length=2_000_000)] = Field(
        description="The glossary CSV: a header row naming term, aliases[, definition]; aliases separated by | or ;."
    )


def _admin(container: Any, request: Request, tenant_id: str) -> str | None:
    return authorize_write(
        container.settings.auth_mode, container.credentials, request.headers, tenant_ids={tenant_id}, permission="admin"
    )


def _load(container: Any, tenant_id: str, text: str) -> dict[str, Any]:
    try:
        return container.glossary.load_csv(tenant_id, text)
    except GlossaryError as error:
        raise validation_error(f"csv: {error}") from error


def glossary_routes(container: Any) -> APIRouter:
    """The glossary routes over the container's ``GlossaryStore``."""
    router = APIRouter(tags=["glossary"])

    @router.post("/glossary", summary="Replace a tenant's glossary (admin)")
    async def load(request: Request, body: GlossaryLoadBody) -> dict:
        key_id = _admin(container, request, body.tenant_id)
        result = await run_in_threadpool(_load, container, body.tenant_id, body.csv)
        container.records.log_event(
            "glossary", tenant_id=body.tenant_id, key_id=key_id, details={"terms": result["terms"]}
        )
        return result

    @router.get("/glossary", summary="The caller's tenant's compiled vocabulary")
    async def show(request: Request, tenant_id: str | None = Query(None, description="Tenant (trusted mode).")) -> dict:
        identity = resolve_identity(
            container.settings.auth_mode,
            container.credentials,
            request.headers,
            tenant_id=tenant_id,
            user_tags=None,
            require_tags=False,
        )
        vocabulary = await run_in_threadpool(container.glossary.vocabulary, identity.tenant_id)
        if vocabulary is None:
            raise ApiError(404, "not_found", f"Tenant {identity.tenant_id!r} has no glossary.")
        return {"tenant_id": identity.tenant_id, "vocabulary": vocabulary}

    @router.delete("/glossary", summary="Remove a tenant's glossary (admin)")
    async def remove(request: Request, tenant_id: str = Query(..., description="The tenant.")) -> dict:
        key_id = _admin(container, request, tenant_id)
        removed = await run_in_threadpool(container.glossary.remove, tenant_id)
        container.records.log_event("glossary", tenant_id=tenant_id, key_id=key_id, details={"removed": removed})
        return {"tenant_id": tenant_id, "removed": removed}

    return router

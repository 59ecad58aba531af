"""
The routes the operators' console needs beyond the rest of the API (docs/api.md, "The console"), each for a
tenant's admin (``admin`` permission in ``api_key`` mode, the key's own tenant only; trusted mode: the tenant
named):

* ``GET /documents?tenant_id=``: the tenant's documents (source, chunks, languages, times, flags, staleness;
  ``components.services.document_catalog``). Other users' private documents are counted, not listed;
* ``GET /keys``, ``POST /keys``, ``DELETE /keys/{key_id}``: the tenant's API keys (the token is shown once, at
  creation; a key made here is never stronger than the key asking: ``components.services.key_management``);
* ``GET /tags?tenant_id=``: the tenant's tags and their owners (who routed questions go to).

Invalidating and flagging documents, the glossary, sources and jobs, the knowledge gaps and feedback have their
own routes; the console calls those.
"""

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.concurrency import run_in_threadpool
from pydantic import Field, StringConstraints

from components.services.document_catalog import document_catalog
from components.services.key_management import create_key, revoke_tenant_key, tenant_keys
from hayhooks_app.errors import ApiError, raise_api_errors
from hayhooks_app.identity import authorize_admin
from hayhooks_app.schemas import Identifier, StrictModel


class KeyCreateBody(StrictModel):
    """``POST /keys``: the new key's grants (never beyond the asking key's)."""

    tenant_id: Identifier | None = Field(default=None, description="The tenant (trusted mode; api_key: the key's).")
    tags: list[Identifier] = Field(min_length=1, max_length=100, description="Tags the key may read (and write).")
    permissions: list[str] = Field(default_factory=lambda: ["read"], max_length=4, description="read, write, admin.")
    user_id: Identifier | None = Field(default=None, description="Makes a user key acting as this user.")
    projects: list[Identifier] | None = Field(default=None, max_length=100, description="Allowed project ids.")
    label: Annotated[str, StringConstraints(max_length=200)] = Field(default="", description="A note.")


def console_routes(container: Any) -> APIRouter:
    """The documents, keys and tag-owner routes over the container's store, key store and tag directory."""
    router = APIRouter(tags=["console"])
    settings = container.settings

    def admin(request: Request, tenant_id: str | None):
        return authorize_admin(settings.auth_mode, container.credentials, request.headers, tenant_id)

    def keys_file():
        if settings.api_keys_file is None:
            raise ApiError(404, "not_found", "This server has no API keys file (SOURCEBOUND_API_KEYS_FILE).")
        return settings.api_keys_file

    @router.get("/documents", summary="The tenant's documents, flags and staleness (admin)")
    async def documents(request: Request, tenant_id: str | None = Query(None, description="The tenant.")) -> dict:
        tenant, record = admin(request, tenant_id)
        viewer = record.user_id if record is not None else None
        catalog = await run_in_threadpool(
            lambda: document_catalog(container.store, tenant, container.stale_rule, viewer_user_id=viewer)
        )
        return {"result": catalog}

    @router.get("/keys", summary="The tenant's API keys: ids and grants, never tokens (admin)")
    async def list_keys(request: Request, tenant_id: str | None = Query(None, description="The tenant.")) -> dict:
        tenant, _record = admin(request, tenant_id)
        keys = await run_in_threadpool(tenant_keys, keys_file(), tenant)
        return {"result": {"tenant_id": tenant, "keys": keys}}

    @router.post("/keys", summary="Create an API key of the tenant; the token is shown once (admin)")
    async def add_key(request: Request, body: KeyCreateBody) -> dict:
        tenant, record = admin(request, body.tenant_id)
        create = raise_api_errors(create_key)
        token, key = await run_in_threadpool(
            lambda: create(
                keys_file(),
                tenant,
                tags=body.tags,
                permissions=body.permissions,
                user_id=body.user_id,
                projects=body.projects,
                label=body.label,
                granter=record,
            )  # fmt: skip
        )
        container.records.log_event("key_created", tenant_id=tenant, key_id=record.key_id if record else None,
                                    details={"key_id": key["key_id"]})  # fmt: skip
        return {"result": {**key, "token": token}}

    @router.delete("/keys/{key_id}", summary="Revoke one of the tenant's API keys (admin)")
    async def revoke_key(
        request: Request, key_id: str, tenant_id: str | None = Query(None, description="The tenant.")
    ) -> dict:
        tenant, record = admin(request, tenant_id)
        revoked = await run_in_threadpool(raise_api_errors(revoke_tenant_key), keys_file(), tenant, key_id)
        container.records.log_event("key_revoked", tenant_id=tenant, key_id=record.key_id if record else None,
                                    details={"key_id": key_id})  # fmt: skip
        return {"result": revoked}

    @router.get("/tags", summary="The tenant's tags and their owners (admin)")
    async def tags(request: Request, tenant_id: str | None = Query(None, description="The tenant.")) -> dict:
        tenant, _record = admin(request, tenant_id)
        directory = container.tag_directory()
        owners = await run_in_threadpool(directory.list_tags, tenant) if directory is not None else []
        return {
            "result": {
                "tenant_id": tenant,
                "tags": [
                    {"tag": owner.tag, "owner_user_id": owner.owner_user_id, "owner_email": owner.owner_email}
                    for owner in owners
                ],
            }
        }

    return router

"""
Sign-in routes for the web page (docs/api.md, "Web page" and "Identity"):

* ``GET /auth/config``: the identity mode and, with ``oidc``, the public values of the authorization code flow
  with PKCE (issuer, client id, endpoints, scopes); no secret exists to leak (a public client has none). With
  the provider unreachable, ``sign_in`` is false and ``error`` says why.
* ``GET /auth/me``: what the request's bearer token grants (tenant, user, tags, permissions, expiry), as the
  server resolves it: the page shows this, not what the token says about itself.

Usage:

```python
app.include_router(auth_routes(container))
```
"""

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool

from hayhooks_app.container import ServiceContainer
from hayhooks_app.errors import ApiError
from hayhooks_app.identity import authenticate
from hayhooks_app.oidc.claims import OidcGrant
from hayhooks_app.oidc.provider import IdentityProviderUnavailable


def auth_routes(container: ServiceContainer) -> APIRouter:
    router = APIRouter(tags=["service"])

    @router.get("/auth/config", summary="The identity mode and how the web page signs in")
    async def auth_config() -> dict:
        body: dict = {"auth_mode": container.settings.auth_mode}
        if container.oidc is not None:
            try:
                body["oidc"] = await run_in_threadpool(container.oidc.web_config)
            except IdentityProviderUnavailable as error:  # the page shows why it cannot sign in now
                body["oidc"] = {"sign_in": False, "issuer": container.settings.oidc.issuer, "error": str(error)}
        return body

    @router.get("/auth/me", summary="What the request's bearer token grants")
    async def auth_me(request: Request) -> dict:
        if container.credentials is None:
            raise ApiError(
                404, "not_found", "The server runs in trusted mode: the identity is whatever each request says."
            )
        grant = await run_in_threadpool(authenticate, container.credentials, request.headers)
        token = isinstance(grant, OidcGrant)
        return {
            "credential": "token" if token else "api_key",
            "tenant_id": grant.tenant_id,
            "user_id": grant.user_id,
            "tags": list(grant.tags),
            "permissions": list(grant.permissions),
            "expires_at": grant.expires_at if token else None,
            "key_id": grant.key_id,
        }

    return router

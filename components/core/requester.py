"""
The resolved requester of a request: the only source of access-control values passed to the pipelines
(docs/contract.md, "Identity and delegation"). The HTTP layer resolves it (``hayhooks_app.identity``); the
services take it as given and never read identity from a request body.

Usage:

```python
from components.core.requester import Identity, with_identity

identity = Identity("acme", ("hr",), user_id="alice")
payload = with_identity({"query": "leave", "tenant_id": "globex"}, identity)   # tenant_id is "acme"
```
"""

from dataclasses import dataclass
from typing import Any

IDENTITY_KEYS = ("tenant_id", "user_tags", "user_id", "project_id")


@dataclass(frozen=True)
class Identity:
    """
    The resolved requester, the only source of access-control values passed to the pipelines.

    :param tenant_id: Tenant whose documents may be read or written.
    :param user_tags: Tags the requester holds (never empty for reads).
    :param user_id: Requester's user id (for ``user``-scoped documents).
    :param project_id: Requester's project (for ``project``-scoped documents).
    :param key_id: Id of the API key used, ``None`` in trusted mode.
    :param delegated: A service key acts for ``user_id`` (recorded beside the key id).
    """

    tenant_id: str
    user_tags: tuple[str, ...]
    user_id: str | None = None
    project_id: str | None = None
    key_id: str | None = None
    delegated: bool = False

    @property
    def scope(self) -> str:
        """The most specific scope of the request, as recorded in the query log."""
        if self.project_id:
            return "project"
        if self.user_id:
            return "user"
        return "tenant"


def with_identity(request: dict[str, Any], identity: Identity) -> dict[str, Any]:
    """
    The request with the identity's values in place of whatever the body said: they are the only access input.

    :param request: A search, RAG or enrichment request.
    :param identity: The resolved requester.
    :returns: A new dict; ``user_id`` and ``project_id`` only when the identity has them.
    """
    payload = {key: value for key, value in request.items() if key not in IDENTITY_KEYS}
    payload.update(tenant_id=identity.tenant_id, user_tags=list(identity.user_tags))
    if identity.user_id is not None:
        payload["user_id"] = identity.user_id
    if identity.project_id is not None:
        payload["project_id"] = identity.project_id
    return payload

"""
API keys managed by a tenant's own admin over HTTP (``GET``/``POST /keys``, ``DELETE /keys/{key_id}``; docs/api.md,
"The console"), beside the operator's ``sourcebound keys`` command.

A key made over HTTP is never stronger than the key that made it (docs/contract.md, "Identity and delegation"):

* its tenant is the granter's; its tags are among the granter's;
* its permissions are among the granter's (``admin`` implies ``write``); ``public`` only from a key that has it;
* a user key only for a user the granter may act as (a tenant admin cannot mint a key that reads another user's
  private documents); no ``act_as_users`` grant (service keys are the operator's to issue).

In trusted mode the gateway in front decides (``granter=None``): only the tenant is fixed. The token is returned
once, at creation; the store keeps its hash. Another tenant's key id is a :class:`KeyNotFoundError`, exactly
like an unknown one.

Usage:

```python
from components.services.key_management import create_key, tenant_keys

token, record = create_key(keys_file, "acme", tags=["hr"], permissions=["read"], granter=admin_record)
[key["key_id"] for key in tenant_keys(keys_file, "acme")]
```
"""

from pathlib import Path
from typing import Any

from components.core.errors import InvalidRequestError, NotFoundError, PermissionDeniedError
from components.stores import key_store
from components.stores.key_store import PERMISSIONS, ApiKeyRecord


class KeyNotFoundError(NotFoundError):
    """No key of that id in the caller's tenant."""


class KeyGrantError(PermissionDeniedError):
    """The requested key would be stronger than the key asking for it."""


def describe(record: ApiKeyRecord) -> dict[str, Any]:
    """A key as shown to its tenant's admins: its id and grants, never the token or its hash."""
    return {
        "key_id": record.key_id,
        "kind": record.kind,
        "user_id": record.user_id,
        "tags": list(record.tags),
        "projects": list(record.projects) if record.projects is not None else None,
        "permissions": list(record.permissions),
        "act_as_users": list(record.act_as_users) if record.act_as_users is not None else None,
        "label": record.label,
    }


def tenant_keys(keys_file: Path, tenant_id: str) -> list[dict[str, Any]]:
    """The tenant's keys, by label then id."""
    records = [record for record in key_store.list_keys(keys_file) if record.tenant_id == tenant_id]
    return [describe(record) for record in sorted(records, key=lambda record: (record.label, record.key_id))]


def _check_grant(
    granter: ApiKeyRecord, tags: list[str], permissions: list[str], user_id: str | None, projects: list[str] | None
) -> None:
    held = set(granter.permissions) | ({"write"} if "admin" in granter.permissions else set())
    beyond = sorted(set(permissions) - held)
    if beyond:
        raise KeyGrantError(f"permissions {beyond} are beyond this key's own ({', '.join(granter.permissions)}).")
    outside = sorted(set(tags) - set(granter.tags))
    if outside:
        raise KeyGrantError(f"tags {outside} are not among this key's tags.")
    if user_id is not None and not granter.may_act_as(user_id):
        raise KeyGrantError(
            f"user_id '{user_id}': this key may not act as that user, so it cannot issue that user's key."
        )
    if granter.projects is not None and (projects is None or set(projects) - set(granter.projects)):
        raise KeyGrantError("projects must be among this key's projects.")


def create_key(
    keys_file: Path,
    tenant_id: str,
    *,
    tags: list[str],
    permissions: list[str],
    user_id: str | None = None,
    projects: list[str] | None = None,
    label: str = "",
    granter: ApiKeyRecord | None = None,
) -> tuple[str, dict[str, Any]]:
    """
    Create a key of ``tenant_id``.

    :param granter: The admin key asking (``None`` in trusted mode).
    :returns: The token (shown once) and the key as :func:`describe` shows it.
    :raises InvalidRequestError: No tags, or an unknown permission.
    :raises KeyGrantError: The key would be stronger than the granter.
    """
    tags = list(dict.fromkeys(tags))
    permissions = list(dict.fromkeys(permissions or ["read"]))
    if not tags:
        raise InvalidRequestError("tags: at least one tag is required")
    unknown = sorted(set(permissions) - set(PERMISSIONS))
    if unknown:
        raise InvalidRequestError(f"permissions: unknown {unknown}; use {', '.join(PERMISSIONS)}")
    if granter is not None:
        _check_grant(granter, tags, permissions, user_id, projects)
    token, record = key_store.register_key(
        keys_file, tenant_id=tenant_id, tags=tags, user_id=user_id, projects=projects, permissions=permissions,
        label=label,
    )  # fmt: skip
    return token, describe(record)


def revoke_tenant_key(keys_file: Path, tenant_id: str, key_id: str) -> dict[str, Any]:
    """
    Revoke one of the tenant's keys.

    :raises KeyNotFoundError: No such key in the tenant.
    """
    if not any(record.key_id == key_id and record.tenant_id == tenant_id for record in key_store.list_keys(keys_file)):
        raise KeyNotFoundError(f"No key {key_id!r} in tenant {tenant_id!r}.")
    return {"key_id": key_id, "revoked": key_store.revoke_key(keys_file, key_id)}

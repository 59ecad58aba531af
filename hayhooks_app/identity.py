"""
Who is asking: the two identity modes of the HTTP API (docs/contract.md, "Identity and delegation").

* ``trusted`` (default): ``tenant_id``, ``user_tags``, ``user_id`` and ``project_id`` come from the
  request body. Meant for 127.0.0.1 or behind an authenticating gateway that sets them.
* ``api_key``: ``Authorization: Bearer <key>`` is looked up in the key store
  (:class:`components.stores.key_store.ApiKeyStore`: the keys file ``SOURCEBOUND_API_KEYS_FILE``, or the shared
  database), which keeps only ``sha256(key)`` and maps it to a ``tenant_id``, a ``user_id``, the allowed
  ``tags``, optional allowed ``projects`` and ``permissions`` (``read``; ``write`` for index/invalidate/flags;
  ``admin`` for deleting the tenant). Delegation is an explicit grant (docs/contract.md "Delegation"): a key is
  a *user key* (bound to one ``user_id``), a *service key* (``act_as_users``: user ids or glob patterns it may
  act for, ``["*"]`` for any user of the tenant), or neither (sees only tenant-wide documents).

  - missing or unknown key -> 401;
  - body ``tenant_id`` different from the key's -> 403;
  - body ``user_id``: a user key only its own; a service key any user its grant matches; a key
    with neither never -> 403;
  - body ``user_tags`` are intersected with the key's tags; an empty intersection -> 403;
  - no body ``user_tags`` -> all the key's tags;
  - a write without the permission -> 403.

The result is a :class:`components.core.requester.Identity`, which the services take as given.

Usage:

```python
from components.stores.key_store import ApiKeyStore
from hayhooks_app.identity import resolve_identity

keys = ApiKeyStore(path)
identity = resolve_identity("api_key", keys, {"authorization": "Bearer sb_..."}, tenant_id=None, user_tags=None)
```
"""

from collections.abc import Mapping

from components.core.requester import Identity
from components.stores.key_store import ApiKeyRecord, ApiKeyStore
from hayhooks_app.errors import forbidden, unauthorized, validation_error


def bearer_token(headers: Mapping[str, str] | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header, or ``None``."""
    if not headers:
        return None
    value = headers.get("authorization") or headers.get("Authorization")
    if not value:
        return None
    scheme, _, token = value.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


def authenticate(keys: ApiKeyStore, headers: Mapping[str, str] | None) -> ApiKeyRecord:
    """The key record for the request's Bearer token; 401 when missing or unknown."""
    token = bearer_token(headers)
    if token is None:
        raise unauthorized("Missing API key: send 'Authorization: Bearer <key>' (the server runs in api_key mode).")
    record = keys.lookup(token)
    if record is None:
        raise unauthorized("Unknown API key.")
    return record


def resolve_identity(
    mode: str,
    keys: ApiKeyStore | None,
    headers: Mapping[str, str] | None,
    *,
    tenant_id: str | None,
    user_tags: list[str] | None,
    user_id: str | None = None,
    project_id: str | None = None,
    require_tags: bool = True,
) -> Identity:
    """
    Resolve the identity of a read request (search, RAG, chat).

    :param mode: ``trusted`` or ``api_key``.
    :param keys: The key store (``api_key`` mode).
    :param headers: Request headers (case-insensitive mapping).
    :param tenant_id: ``tenant_id`` from the body, if any.
    :param user_tags: ``user_tags`` from the body, if any.
    :param user_id: ``user_id`` from the body, if any.
    :param project_id: ``project_id`` from the body, if any.
    :param require_tags: Reject an empty tag set (reads: empty tags would see nothing).
    :returns: The identity to pass to the pipelines.
    :raises ApiError: 401, 403 or 422 naming the problem.
    """
    if mode == "trusted":
        if not tenant_id:
            raise validation_error("tenant_id: field required (trusted mode takes the tenant from the body)")
        if require_tags and not user_tags:
            raise validation_error("user_tags: at least one tag is required; with no tags nothing is visible")
        return Identity(tenant_id, tuple(dict.fromkeys(user_tags or ())), user_id, project_id)

    record = authenticate(keys, headers)
    if tenant_id is not None and tenant_id != record.tenant_id:
        raise forbidden(f"tenant_id '{tenant_id}' does not match the API key's tenant.")
    if user_id is not None and not record.may_act_as(user_id):
        raise forbidden(_delegation_refusal(record, user_id))
    if project_id is not None and record.projects is not None and project_id not in record.projects:
        raise forbidden(f"project_id '{project_id}' is not among the API key's projects.")
    if user_tags is None:
        tags = record.tags
    else:
        allowed = set(record.tags)
        tags = tuple(tag for tag in dict.fromkeys(user_tags) if tag in allowed)
    if require_tags and not tags:
        raise forbidden("None of the requested user_tags are allowed for this API key.")
    acting_user = record.user_id if record.user_id is not None else user_id
    return Identity(
        record.tenant_id,
        tags,
        acting_user,
        project_id,
        record.key_id,
        delegated=record.kind == "service" and acting_user is not None,
    )


def _delegation_refusal(record: ApiKeyRecord, user_id: str) -> str:
    """The 403 message for a ``user_id`` the key may not act for (docs/contract.md "Delegation")."""
    if record.kind == "user":
        return f"user_id '{user_id}' does not match the API key's user; a user key acts only as its own user."
    if record.kind == "service":
        return f"user_id '{user_id}' is outside this service key's act_as_users grant."
    return (
        f"This API key is not bound to a user and has no act_as_users grant, so it cannot act as user_id '{user_id}'; "
        "issue a user key (keys add --user) or a service key (keys add --act-as-users)."
    )


def authorize_write(
    mode: str,
    keys: ApiKeyStore | None,
    headers: Mapping[str, str] | None,
    *,
    tenant_ids: set[str],
    tags: set[str] | None = None,
    permission: str = "write",
    user_ids: set[str] | None = None,
    public: bool = False,
) -> str | None:
    """
    Check that the requester may change the given tenants' documents.

    In trusted mode everything is allowed (the gateway decides). In ``api_key`` mode the key needs
    ``permission`` (``admin`` implies ``write``), its tenant must be the only tenant touched, any
    tags written must be among its tags, and any owning ``user_id`` written (user/project-scoped
    documents) must be one the key may act as: nobody writes into another user's private space
    without a grant.

    :returns: The key id (``None`` in trusted mode), for the records.
    :raises ApiError: 401 or 403 naming the problem.
    """
    if mode == "trusted":
        return None
    record = authenticate(keys, headers)
    granted = set(record.permissions)
    if "admin" in granted:
        granted.add("write")
    if permission not in granted:
        raise forbidden(f"This API key lacks the '{permission}' permission.")
    foreign = sorted(tenant_ids - {record.tenant_id})
    if foreign:
        raise forbidden(f"tenant_id {', '.join(repr(t) for t in foreign)} does not match the API key's tenant.")
    outside = sorted((tags or set()) - set(record.tags))
    if outside:
        raise forbidden(f"tags {outside} are not among the API key's tags.")
    for user_id in sorted(user_ids or ()):
        if not record.may_act_as(user_id):
            raise forbidden(_delegation_refusal(record, user_id))
    if public and "public" not in record.permissions:
        raise forbidden("Writing scope 'public' documents (visible to every tenant) needs the 'public' permission.")
    return record.key_id

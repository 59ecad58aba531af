"""
Who is asking: the identity modes of the HTTP API (docs/contract.md, "Identity and delegation").

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
* ``oidc``: ``Authorization: Bearer <JWT>`` from the configured OpenID Connect provider, verified and mapped to
  a grant by :mod:`hayhooks_app.oidc` (tenant, tags and user from its claims, permissions by configuration). The
  grant acts exactly like a user key: only its own user, its tags intersected with the body's, never another
  tenant. ``oidc,api_key`` accepts both (:class:`hayhooks_app.credentials.Credentials` tells them apart); every
  refused token is a 401 naming the problem.

The result of a read is a :class:`components.core.requester.Identity`, which the services take as given; of a
write (:func:`write_authority`) the key id and the caller's :class:`components.core.access_rule.WriteRule`
(docs/contract.md, "Write rule"), which the services apply to every document written, replaced, invalidated or
flagged. In trusted mode the body's ``user_tags`` / ``user_id`` / ``project_id`` name the caller of a write; a
write naming none acts with the tenant's full authority (the gateway's).

Usage:

```python
from components.stores.key_store import ApiKeyStore
from hayhooks_app.identity import resolve_identity

keys = ApiKeyStore(path)
identity = resolve_identity("api_key", keys, {"authorization": "Bearer sb_..."}, tenant_id=None, user_tags=None)
# any mode with bearer credentials: pass the container's Credentials (container.credentials)
```
"""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from components.core.access_rule import WriteRule
from components.core.requester import Identity
from components.stores.key_store import ApiKeyStore
from hayhooks_app.config import auth_methods
from hayhooks_app.credentials import Credentials, Grant, bearer_token
from hayhooks_app.errors import forbidden, validation_error
from hayhooks_app.oidc.claims import OidcGrant

__all__ = [
    "WriteAuthority",
    "authenticate",
    "authorize_admin",
    "authorize_write",
    "bearer_token",
    "resolve_identity",
    "resolve_spec_identity",
    "resolve_spec_writer",
    "write_authority",
]


def authenticate(credentials: Credentials | ApiKeyStore, headers: Mapping[str, str] | None) -> Grant:
    """
    The grant of the request's Bearer token (an API key record or a verified token's grant).

    :param credentials: The container's ``credentials``; a bare key store means ``api_key`` mode.
    :raises ApiError: 401 when missing or refused (the message names why), 503 when the provider is unreachable.
    """
    if isinstance(credentials, ApiKeyStore):
        credentials = Credentials("api_key", keys=credentials)
    return credentials.authenticate(headers)


def _credentials(mode: str, keys: Credentials | ApiKeyStore | None) -> Credentials | ApiKeyStore | None:
    if isinstance(keys, ApiKeyStore) and "oidc" in auth_methods(mode):
        # A caller still passing container.keys would refuse every token as an unknown key: fail loudly instead.
        raise TypeError(f"auth mode {mode!r} needs the container's credentials, not its key store")
    return keys


def _credential(record: Grant) -> str:
    return "token" if isinstance(record, OidcGrant) else "API key"


def resolve_identity(
    mode: str,
    keys: Credentials | ApiKeyStore | None,
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

    :param mode: ``trusted``, or the bearer modes (``api_key``, ``oidc``, ``oidc,api_key``).
    :param keys: The container's ``credentials`` (a bare key store: ``api_key`` mode).
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

    record = authenticate(_credentials(mode, keys), headers)
    credential = _credential(record)
    if tenant_id is not None and tenant_id != record.tenant_id:
        raise forbidden(f"tenant_id '{tenant_id}' does not match the {credential}'s tenant.")
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
        if isinstance(record, OidcGrant) and not record.tags:
            raise forbidden(
                "The token grants no tags: none of its groups or roles map to a tag "
                "(SOURCEBOUND_OIDC_TAGS_CLAIM, SOURCEBOUND_OIDC_TAG_MAP), so nothing would be visible."
            )
        raise forbidden(f"None of the requested user_tags are allowed for this {credential}.")
    acting_user = record.user_id if record.user_id is not None else user_id
    return Identity(
        record.tenant_id,
        tags,
        acting_user,
        project_id,
        record.key_id,
        delegated=record.kind == "service" and acting_user is not None,
    )


def _delegation_refusal(record: Grant, user_id: str) -> str:
    """The 403 message for a ``user_id`` the key may not act for (docs/contract.md "Delegation")."""
    if isinstance(record, OidcGrant):
        return f"user_id '{user_id}' is not the token's user; a signed-in user acts only as itself."
    if record.kind == "user":
        return f"user_id '{user_id}' does not match the API key's user; a user key acts only as its own user."
    if record.kind == "service":
        return f"user_id '{user_id}' is outside this service key's act_as_users grant."
    return (
        f"This API key is not bound to a user and has no act_as_users grant, so it cannot act as user_id '{user_id}'; "
        "issue a user key (keys add --user) or a service key (keys add --act-as-users)."
    )


def _key_rule(record: Grant, user_tags, user_id, project_id) -> WriteRule:
    """
    The write rule of a key (or a token's grant, which acts as a user key), narrowed by the body's caller fields
    exactly as a read narrows its identity.
    """
    credential = _credential(record)
    if user_id is not None and not record.may_act_as(user_id):
        raise forbidden(_delegation_refusal(record, user_id))
    if project_id is not None and record.projects is not None and project_id not in record.projects:
        raise forbidden(f"project_id '{project_id}' is not among the {credential}'s projects.")
    tags = record.tags
    if user_tags is not None:
        tags = tuple(tag for tag in dict.fromkeys(user_tags) if tag in set(record.tags))
        if not tags:
            raise forbidden(f"None of the requested user_tags are allowed for this {credential}.")
    if user_id is not None:
        users, patterns = (user_id,), ()
    elif record.user_id is not None:
        users, patterns = (record.user_id,), ()
    else:
        users, patterns = (), tuple(record.act_as_users or ())
    return WriteRule(
        tenant_ids=(record.tenant_id,),
        tags=tags,
        user_ids=users,
        user_patterns=patterns,
        projects=(project_id,) if project_id is not None else record.projects,
        public="public" in record.permissions,
    )


@dataclass(frozen=True)
class WriteAuthority:
    """
    The resolved writer of a request (docs/contract.md, "Write rule").

    :param key_id: The key used (``None`` in trusted mode), for the records.
    :param rule: The caller's write rule; the services apply it to every document written or changed.
    :param record: The key's record (``None`` in trusted mode), for the wording of refusals.
    """

    key_id: str | None
    rule: WriteRule
    record: Grant | None = None

    def refusal(self, meta: Mapping, complete: bool = True) -> str | None:
        """
        Why the caller may not write a document with ``meta`` (worded for the key kind), or ``None``.

        :param complete: ``meta`` is a whole document's; ``False`` checks only the fields it names.
        """
        whose = f"{_credential(self.record)}'s" if self.record is not None else "caller's"
        outside = self.rule.tags_outside(meta.get("tags") or ())
        if outside:
            return f"tags {outside} are not among the {whose} tags."
        owner = meta.get("user_id")
        if owner is not None and not self.rule.may_act_as(owner):
            if self.record is not None:
                return _delegation_refusal(self.record, owner)
            return f"user_id '{owner}' is not the caller's user_id; a caller writes only its own or tenant documents."
        if not self.rule.allows_project(meta.get("project_id")):
            return f"project_id '{meta.get('project_id')}' is not among the {whose} projects."
        if meta.get("scope") == "public" and not self.rule.public:
            return "Writing scope 'public' documents (visible to every tenant) needs the 'public' permission."
        problem = self.rule.violation(meta) if complete else None
        return f"{problem[0].upper()}{problem[1:]}." if problem else None

    def check_documents(self, documents: Iterable[Mapping]) -> None:
        """403 for the first document about to be written that the caller may not write."""
        for meta in documents:
            problem = self.refusal(meta)
            if problem:
                raise forbidden(problem)


def write_authority(
    mode: str,
    keys: Credentials | ApiKeyStore | None,
    headers: Mapping[str, str] | None,
    *,
    tenant_ids: set[str],
    permission: str = "write",
    user_tags: list[str] | None = None,
    user_id: str | None = None,
    project_id: str | None = None,
) -> WriteAuthority:
    """
    Who is writing (docs/contract.md, "Write rule").

    Bearer modes (``api_key``, ``oidc``): the key or token needs ``permission`` (``admin`` implies ``write``) and
    its tenant must be the only tenant named (a token's grant acts as a user key); the rule is the key's tags, the
    users it may act as, its projects and its ``public`` permission, narrowed by the body's ``user_tags`` /
    ``user_id`` / ``project_id`` as a read is. ``trusted``
    mode: the body's fields are the caller (``user_tags`` required once any is given; ``public`` is the
    gateway's to allow); a body naming none writes with the tenants' full authority.

    :param tenant_ids: The tenants the request names.
    :raises ApiError: 401, 403 or 422 naming the problem.
    """
    if mode == "trusted":
        if user_tags is None and user_id is None and project_id is None:
            return WriteAuthority(None, WriteRule.operator(tenant_ids))
        if not user_tags:
            raise validation_error(
                "user_tags: required when a write names its caller (user_id or project_id); the caller may change "
                "only documents whose tags it holds"
            )
        rule = WriteRule(
            tenant_ids=tuple(tenant_ids),
            tags=tuple(user_tags),
            user_ids=(user_id,) if user_id is not None else (),
            projects=(project_id,) if project_id is not None else None,
            public=True,
        )
        return WriteAuthority(None, rule)
    record = authenticate(_credentials(mode, keys), headers)
    granted = set(record.permissions)
    if "admin" in granted:
        granted.add("write")
    credential = _credential(record)
    if permission not in granted:
        raise forbidden(f"This {credential} lacks the '{permission}' permission.")
    foreign = sorted(tenant_ids - {record.tenant_id})
    if foreign:
        raise forbidden(f"tenant_id {', '.join(repr(t) for t in foreign)} does not match the {credential}'s tenant.")
    return WriteAuthority(record.key_id, _key_rule(record, user_tags, user_id, project_id), record)


def authorize_write(
    mode: str,
    keys: Credentials | ApiKeyStore | None,
    headers: Mapping[str, str] | None,
    *,
    tenant_ids: set[str],
    tags: set[str] | None = None,
    permission: str = "write",
    user_ids: set[str] | None = None,
    public: bool = False,
    projects: set[str] | None = None,
) -> str | None:
    """
    Check that the requester may change the given tenants' documents (the key's :class:`WriteRule`, see
    :func:`write_authority`).

    In trusted mode everything is allowed (the gateway decides). Otherwise the key (or the token's grant) needs
    ``permission`` (``admin`` implies ``write``), its tenant must be the only tenant touched, any
    tags written must be among its tags, and any owning ``user_id`` written (user/project-scoped
    documents) must be one the key may act as: nobody writes into another user's private space
    without a grant.

    :returns: The key id (``oidc`` for a token, ``None`` in trusted mode), for the records.
    :raises ApiError: 401 or 403 naming the problem.
    """
    if mode == "trusted":
        return None
    writer = write_authority(mode, keys, headers, tenant_ids=tenant_ids, permission=permission)
    # The rule's own predicates, each worded for the key (WriteAuthority.refusal).
    tenant = writer.record.tenant_id
    metas = [{"tenant_id": tenant, "tags": sorted(tags or ())}]
    metas += [{"tenant_id": tenant, "user_id": user} for user in sorted(user_ids or ())]
    metas += [{"tenant_id": tenant, "project_id": project} for project in sorted(projects or ())]
    metas += [{"tenant_id": tenant, "scope": "public"}] if public else []
    for meta in metas:
        problem = writer.refusal(meta, complete=False)
        if problem:
            raise forbidden(problem)
    return writer.key_id


def authorize_admin(
    mode: str, keys: Credentials | ApiKeyStore | None, headers: Mapping[str, str] | None, tenant_id: str | None
) -> tuple[str, Grant | None]:
    """
    Check an operator's request on a tenant (the console's routes: documents, keys, tag owners, knowledge gaps,
    feedback). Trusted mode takes the tenant as given (the gateway decides); ``api_key`` mode needs a key with the
    ``admin`` permission, and its tenant is the only tenant.

    :param tenant_id: The tenant named by the request (optional with a key: the key's).
    :returns: The tenant and the key's or token's grant (``None`` in trusted mode).
    :raises ApiError: 401, 403 or 422 naming the problem.
    """
    if mode == "trusted":
        if not tenant_id:
            raise validation_error("tenant_id: field required (trusted mode takes the tenant from the request)")
        return tenant_id, None
    record = authenticate(_credentials(mode, keys), headers)
    credential = _credential(record)
    if "admin" not in record.permissions:
        raise forbidden(f"This {credential} lacks the 'admin' permission (the console's routes are for tenant admins).")
    if tenant_id is not None and tenant_id != record.tenant_id:
        raise forbidden(f"tenant_id '{tenant_id}' does not match the {credential}'s tenant.")
    return record.tenant_id, record


def _trusted_defaults_hint() -> str:
    return (
        "trusted mode takes the identity from the request; send tenant_id and user_tags, or set "
        "SOURCEBOUND_DEFAULT_TENANT and SOURCEBOUND_DEFAULT_TAGS for clients that send none"
    )


def resolve_spec_identity(
    settings,
    keys: Credentials | ApiKeyStore | None,
    headers: Mapping[str, str] | None,
    *,
    tenant_id: str | None,
    user_tags: list[str] | None,
    user_id: str | None = None,
    project_id: str | None = None,
) -> Identity:
    """
    The identity of a read on a specification route (docs/api.md, "Specification routes"): as
    :func:`resolve_identity`, except that in trusted mode the configured defaults (``SOURCEBOUND_DEFAULT_TENANT``,
    ``SOURCEBOUND_DEFAULT_TAGS``) stand in for a tenant or tags the request does not name; a client written to a
    specification sends neither. In bearer modes the key or token decides, exactly as on every other route.

    :param settings: The application settings (``auth_mode``, ``default_tenant``, ``default_tags``).
    :raises ApiError: 401, 403 or 422 naming the problem.
    """
    if settings.auth_mode == "trusted":
        tenant_id = tenant_id or settings.default_tenant
        user_tags = user_tags or (list(settings.default_tags) or None)
        if not tenant_id:
            raise validation_error(f"tenant_id: field required ({_trusted_defaults_hint()})")
        if not user_tags:
            raise validation_error(f"user_tags: at least one tag is required ({_trusted_defaults_hint()})")
    return resolve_identity(
        settings.auth_mode,
        keys,
        headers,
        tenant_id=tenant_id,
        user_tags=user_tags,
        user_id=user_id,
        project_id=project_id,
    )


def resolve_spec_writer(
    settings,
    keys: Credentials | ApiKeyStore | None,
    headers: Mapping[str, str] | None,
    *,
    tenant_id: str | None,
    tags: list[str] | None = None,
    need_tags: bool = True,
) -> tuple[str, tuple[str, ...], WriteAuthority]:
    """
    Who writes on a specification route, and with which tenant and tags: trusted mode takes them from the request,
    else the configured defaults, and writes with that tenant's full authority (as ``/index/run`` naming no caller);
    bearer modes take them from the request within the grant, else the grant's own tenant and tags (documents a key
    writes are visible to that key). The writer is :func:`write_authority`'s, so the route checks the documents it
    writes (:meth:`WriteAuthority.check_documents`) and the services apply its rule (docs/contract.md, "Write rule").

    :param need_tags: Whether the write needs tags (indexing does; invalidation does not).
    :returns: ``(tenant_id, tags, writer)``.
    :raises ApiError: 401, 403 or 422 naming the problem.
    """
    if settings.auth_mode == "trusted":
        tenant = tenant_id or settings.default_tenant
        chosen = tuple(tags or settings.default_tags)
        if not tenant:
            raise validation_error(f"tenant_id: field required ({_trusted_defaults_hint()})")
        if need_tags and not chosen:
            raise validation_error(f"tags: at least one tag is required ({_trusted_defaults_hint()})")
        return tenant, chosen, write_authority("trusted", keys, headers, tenant_ids={tenant})
    writer = write_authority(settings.auth_mode, keys, headers, tenant_ids={tenant_id} if tenant_id else set())
    tenant = tenant_id or writer.record.tenant_id
    chosen = tuple(tags) if tags else tuple(writer.record.tags)
    return tenant, chosen, writer

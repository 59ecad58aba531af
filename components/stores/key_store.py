"""
Who is asking: the two identity modes of the HTTP API.

* ``trusted`` (default): ``tenant_id``, ``user_tags``, ``user_id`` and ``project_id`` come from the
  request body. Meant for 127.0.0.1 or behind an authenticating gateway that sets them.
* ``api_key``: ``Authorization: Bearer <key>`` is looked up in the keys file
  (``SOURCEBOUND_API_KEYS_FILE``), which stores only ``sha256(key)`` and maps it to a
  ``tenant_id``, a ``user_id``, the allowed ``tags``, optional allowed ``projects`` and
  ``permissions`` (``read``; ``write`` for index/invalidate/flags; ``admin`` for deleting the tenant).
  Delegation is an explicit grant (docs/contract.md "Delegation"): a key is a *user key* (bound to
  one ``user_id``), a *service key* (``act_as_users``: user ids or glob patterns it may act for,
  ``["*"]`` for any user of the tenant), or neither (sees only tenant-wide documents).

  - missing or unknown key -> 401;
  - body ``tenant_id`` different from the key's -> 403;
  - body ``user_id``: a user key only its own; a service key any user its grant matches; a key
    with neither never -> 403;
  - body ``user_tags`` are intersected with the key's tags; an empty intersection -> 403;
  - no body ``user_tags`` -> all the key's tags;
  - a write without the permission -> 403.

The keys file is re-read when its modification time changes, so a key added with
``python -m hayhooks_app keys add`` works without a restart. With ``SOURCEBOUND_DATABASE_URL`` the keys live in
the shared database's ``api_keys`` table instead (:class:`SqlApiKeys`), read through a per-key cache of
``SOURCEBOUND_KEY_CACHE_SECONDS`` (default 2; 0 reads the database on every request): a key added or revoked on
one replica works, or stops working, on every replica within that bound (docs/operations.md "Replicas").

Usage:

```python
from hayhooks_app.identity import ApiKeyStore, resolve_identity

keys = ApiKeyStore(path)
identity = resolve_identity("api_key", keys, {"authorization": "Bearer sb_..."}, tenant_id=None, user_tags=None)
```
"""

import fnmatch
import hashlib
import json
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from components.core.state import StateDatabase, open_state
from components.core.state import database_url as shared_database_url
from hayhooks_app.config import env_number
from hayhooks_app.errors import forbidden, unauthorized, validation_error

logger = logging.getLogger(__name__)

# "public": may write scope-"public" documents, which every tenant sees (an operator's grant, not a tenant admin's).
PERMISSIONS = ("read", "write", "admin", "public")


def hash_key(key: str) -> str:
    """The stored form of an API key: hex sha256. Keys are 256-bit random, so no slow hash is needed."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def key_id_for(key_hash: str) -> str:
    """A short, non-secret id for a key (used in records and logs)."""
    return f"key-{key_hash[:12]}"


@dataclass(frozen=True)
class ApiKeyRecord:
    """One entry of the keys file."""

    key_hash: str
    tenant_id: str
    user_id: str | None
    tags: tuple[str, ...]
    projects: tuple[str, ...] | None
    permissions: tuple[str, ...]
    label: str = ""
    # Service keys only: user ids / glob patterns this key may act for; None = no grant.
    act_as_users: tuple[str, ...] | None = None

    @property
    def key_id(self) -> str:
        return key_id_for(self.key_hash)

    @property
    def kind(self) -> str:
        """``user`` (bound to one user), ``service`` (acts for granted users) or ``tenant`` (no user at all)."""
        if self.user_id is not None:
            return "user"
        return "service" if self.act_as_users is not None else "tenant"

    def may_act_as(self, user_id: str) -> bool:
        """Whether a request made with this key may be made on behalf of ``user_id``."""
        if self.user_id is not None:
            return user_id == self.user_id
        # fnmatchcase: the grant's case is the user id's case on every platform.
        return any(fnmatch.fnmatchcase(user_id, pattern) for pattern in self.act_as_users or ())

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "ApiKeyRecord":
        permissions = tuple(data.get("permissions") or ["read"])
        unknown = set(permissions) - set(PERMISSIONS)
        if unknown:
            raise ValueError(f"unknown permissions {sorted(unknown)}; use {', '.join(PERMISSIONS)}")
        projects = data.get("projects")
        act_as_users = data.get("act_as_users")
        if act_as_users is not None:
            if isinstance(act_as_users, str) or not all(isinstance(p, str) and p.strip() for p in act_as_users):
                raise ValueError("act_as_users must be a list of user ids or glob patterns")
            if not act_as_users:
                raise ValueError("act_as_users must name at least one user id or pattern ('*' for any user)")
            if data.get("user_id") is not None:
                raise ValueError("a key is either a user key (user_id) or a service key (act_as_users), not both")
        return cls(
            key_hash=str(data["sha256"]),
            tenant_id=str(data["tenant_id"]),
            user_id=data.get("user_id"),
            tags=tuple(data.get("tags") or ()),
            projects=tuple(projects) if projects is not None else None,
            permissions=permissions,
            label=str(data.get("label", "")),
            act_as_users=tuple(act_as_users) if act_as_users is not None else None,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "sha256": self.key_hash,
            "tenant_id": self.tenant_id,
            "user_id": self.user_id,
            "tags": list(self.tags),
            "projects": list(self.projects) if self.projects is not None else None,
            "permissions": list(self.permissions),
            "label": self.label,
            "act_as_users": list(self.act_as_users) if self.act_as_users is not None else None,
        }


def _json_list(value: tuple[str, ...] | None) -> str | None:
    return json.dumps(list(value)) if value is not None else None


def _record_from_row(row: Mapping[str, Any]) -> ApiKeyRecord:
    def decoded(column: str) -> Any:
        return json.loads(row[column]) if row[column] is not None else None

    return ApiKeyRecord.from_dict(
        {
            "sha256": row["key_hash"],
            "tenant_id": row["tenant_id"],
            "user_id": row["user_id"],
            "tags": decoded("tags"),
            "projects": decoded("projects"),
            "permissions": decoded("permissions"),
            "label": row["label"],
            "act_as_users": decoded("act_as_users"),
        }
    )


class SqlApiKeys:
    """
    The ``api_keys`` table of the state layer: the key store of replicas sharing ``SOURCEBOUND_DATABASE_URL``.

    The first time it is opened beside a data directory's ``api_keys.json`` (written before the shared database),
    the file's keys are copied in (existing ones are kept) and the file is renamed ``api_keys.json.imported``, so a
    key revoked later is never brought back by a second import.

    :param database: The state database (shared).
    :param import_from: A keys file to import once, or ``None``.
    """

    def __init__(self, database: StateDatabase, import_from: Path | None = None) -> None:
        self.database = database
        if import_from is not None and Path(import_from).is_file():
            self._import_file(Path(import_from))

    @classmethod
    def open(cls, keys_file: Path | None = None, url: str | None = None) -> "SqlApiKeys":
        """The shared database's keys (``url`` or ``SOURCEBOUND_DATABASE_URL``), importing ``keys_file`` once."""
        return cls(open_state("keys", None, url), import_from=keys_file)

    def _import_file(self, path: Path) -> None:
        data = json.loads(path.read_text(encoding="utf-8"))
        records = [ApiKeyRecord.from_dict(entry) for entry in data.get("keys", [])]
        with self.database.begin() as connection:
            for record in records:
                self._insert(connection, record, ignore_existing=True)
        path.replace(path.with_name(path.name + ".imported"))
        logger.warning("Imported %d API keys from %s into the shared database.", len(records), path)

    @staticmethod
    def _insert(connection: sa.Connection, record: ApiKeyRecord, ignore_existing: bool = False) -> int:
        return connection.execute(
            sa.text(
                "INSERT INTO api_keys (key_hash, tenant_id, user_id, tags, projects, permissions, label, act_as_users,"
                " created_at) VALUES (:key_hash, :tenant_id, :user_id, :tags, :projects, :permissions, :label,"
                " :act_as_users, :created_at)" + (" ON CONFLICT (key_hash) DO NOTHING" if ignore_existing else "")
            ),
            {
                "key_hash": record.key_hash,
                "tenant_id": record.tenant_id,
                "user_id": record.user_id,
                "tags": _json_list(record.tags),
                "projects": _json_list(record.projects),
                "permissions": _json_list(record.permissions),
                "label": record.label,
                "act_as_users": _json_list(record.act_as_users),
                "created_at": time.time(),
            },
        ).rowcount

    def add(self, record: ApiKeyRecord) -> None:
        """Store a new key; ``ValueError`` if its hash is already stored (the primary key decides, not a read)."""
        try:
            with self.database.begin() as connection:
                self._insert(connection, record)
        except sa.exc.IntegrityError as error:
            raise ValueError("this key is already registered.") from error

    def get(self, key_hash: str) -> ApiKeyRecord | None:
        with self.database.connect() as connection:
            row = (
                connection.execute(sa.text("SELECT * FROM api_keys WHERE key_hash = :key_hash"), {"key_hash": key_hash})
                .mappings()
                .first()
            )
        return _record_from_row(row) if row else None

    def list(self) -> list[ApiKeyRecord]:
        with self.database.connect() as connection:
            rows = connection.execute(sa.text("SELECT * FROM api_keys ORDER BY created_at, key_hash")).mappings().all()
        return [_record_from_row(row) for row in rows]

    def count(self) -> int:
        with self.database.connect() as connection:
            return int(connection.execute(sa.text("SELECT count(*) FROM api_keys")).scalar_one())

    def revoke(self, key_id: str) -> bool:
        """Remove the key with this id (``key-<12 hex>``); ``True`` if one was removed."""
        prefix = key_id.removeprefix("key-")
        if len(prefix) != 12 or not all(char in "0123456789abcdef" for char in prefix):
            return False
        with self.database.begin() as connection:
            return (
                connection.execute(
                    sa.text("DELETE FROM api_keys WHERE key_hash LIKE :prefix"), {"prefix": prefix + "%"}
                ).rowcount
                > 0
            )

    def revoke_where(self, tenant_id: str, user_id: str | None = None) -> int:
        """Remove every key of a tenant (or its keys bound to ``user_id``); returns how many."""
        sql, params = "DELETE FROM api_keys WHERE tenant_id = :tenant_id", {"tenant_id": tenant_id}
        if user_id is not None:
            sql, params = sql + " AND user_id = :user_id", {**params, "user_id": user_id}
        with self.database.begin() as connection:
            return connection.execute(sa.text(sql), params).rowcount


def key_cache_seconds() -> float:
    """``SOURCEBOUND_KEY_CACHE_SECONDS`` (default 2): how long a replica trusts a key lookup it made."""
    return env_number("SOURCEBOUND_KEY_CACHE_SECONDS", 2.0, minimum=0, kind=float)


class ApiKeyStore:
    """
    The hashed API keys of ``api_key`` mode: a JSON file re-read when it changes, or, with a shared database
    (``SOURCEBOUND_DATABASE_URL``), its ``api_keys`` table read through a short per-key cache.

    File shape: ``{"keys": [{"sha256", "tenant_id", "user_id", "tags", "projects", "permissions", "label",
    "act_as_users"}]}``; an entry without ``act_as_users`` (files written before delegation grants) has no grant.

    :param path: The keys file; a missing file means "no keys" (every request gets 401). With a shared database,
        a file found here is imported once (:class:`SqlApiKeys`).
    :param database_url: The shared database (default: ``SOURCEBOUND_DATABASE_URL``; none: the file).
    :param cache_seconds: How long a database lookup is reused (default: ``SOURCEBOUND_KEY_CACHE_SECONDS``).
    :param clock: Monotonic seconds (tests).
    """

    def __init__(
        self,
        path: Path,
        database_url: str | None = None,
        cache_seconds: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.path = Path(path)
        self._lock = threading.Lock()
        self._mtime: float | None = None
        self._records: dict[str, ApiKeyRecord] = {}
        self._url = shared_database_url(database_url)
        self._sql: SqlApiKeys | None = None
        self._cache: dict[str, tuple[float, ApiKeyRecord | None]] = {}
        self._cache_seconds = key_cache_seconds() if cache_seconds is None else cache_seconds
        self._clock = clock

    @property
    def shared(self) -> bool:
        """Whether the keys come from the shared database."""
        return self._url is not None

    def prepare(self) -> None:
        """Open the shared database now, when there is one (start-up: migrations and the keys-file import)."""
        if self.shared:
            self._database_keys()

    def _database_keys(self) -> SqlApiKeys:
        if self._sql is None:
            self._sql = SqlApiKeys.open(self.path, self._url)
        return self._sql

    def _reload_if_changed(self) -> None:
        try:
            mtime = self.path.stat().st_mtime_ns
        except FileNotFoundError:
            mtime = None
        if mtime == self._mtime:
            return
        records: dict[str, ApiKeyRecord] = {}
        if mtime is not None:
            try:
                data = json.loads(self.path.read_text(encoding="utf-8"))
                for entry in data.get("keys", []):
                    record = ApiKeyRecord.from_dict(entry)
                    records[record.key_hash] = record
            except (ValueError, KeyError, TypeError, AttributeError) as error:
                # Keep serving with the last good set rather than locking everybody out.
                logger.error("API keys file %s is invalid (%s); keeping the previous keys.", self.path, error)
                return
        self._records, self._mtime = records, mtime

    def _lookup_shared(self, key_hash: str) -> ApiKeyRecord | None:
        now = self._clock()
        with self._lock:
            cached = self._cache.get(key_hash)
        if cached is not None and now - cached[0] < self._cache_seconds:
            return cached[1]
        record = self._database_keys().get(key_hash)
        with self._lock:
            if len(self._cache) > 10_000:  # bounded: random bearer tokens must not grow it forever
                self._cache.clear()
            self._cache[key_hash] = (now, record)
        return record

    def lookup(self, key: str) -> ApiKeyRecord | None:
        """The record of a presented key, or ``None``."""
        if self.shared:
            return self._lookup_shared(hash_key(key))
        with self._lock:
            self._reload_if_changed()
            return self._records.get(hash_key(key))

    def __len__(self) -> int:
        if self.shared:
            return self._database_keys().count()
        with self._lock:
            self._reload_if_changed()
            return len(self._records)


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

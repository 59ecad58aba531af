"""
Who is asking: the two identity modes of the HTTP API.

* ``trusted`` (default): ``tenant_id``, ``user_tags``, ``user_id`` and ``project_id`` come from the
  request body. Meant for 127.0.0.1 or behind an authenticating gateway that sets them.
* ``api_key``: ``Authorization: Bearer <key>`` is looked up in the keys file
  (``SOURCEBOUND_API_KEYS_FILE``), which stores only ``sha256(key)`` and maps it to a
  ``tenant_id``, a ``user_id``, the allowed ``tags``, optional allowed ``projects`` and
  ``permissions`` (``read``; ``write`` for index/invalidate/flags; ``admin`` for deleting the tenant).

  - missing or unknown key -> 401;
  - body ``tenant_id`` (or ``user_id``) different from the key's -> 403;
  - body ``user_tags`` are intersected with the key's tags; an empty intersection -> 403;
  - no body ``user_tags`` -> all the key's tags;
  - a write without the permission -> 403.

The keys file is re-read when its modification time changes, so a key added with
``python -m hayhooks_app keys add`` works without a restart.

Usage:

```python
from hayhooks_app.identity import ApiKeyStore, resolve_identity

keys = ApiKeyStore(path)
identity = resolve_identity("api_key", keys, {"authorization": "Bearer sb_..."}, tenant_id=None, user_tags=None)
```
"""

import hashlib
import json
import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hayhooks_app.errors import forbidden, unauthorized, validation_error

logger = logging.getLogger(__name__)

PERMISSIONS = ("read", "write", "admin")


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

    @property
    def key_id(self) -> str:
        return key_id_for(self.key_hash)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "ApiKeyRecord":
        permissions = tuple(data.get("permissions") or ["read"])
        unknown = set(permissions) - set(PERMISSIONS)
        if unknown:
            raise ValueError(f"unknown permissions {sorted(unknown)}; use {', '.join(PERMISSIONS)}")
        projects = data.get("projects")
        return cls(
            key_hash=str(data["sha256"]),
            tenant_id=str(data["tenant_id"]),
            user_id=data.get("user_id"),
            tags=tuple(data.get("tags") or ()),
            projects=tuple(projects) if projects is not None else None,
            permissions=permissions,
            label=str(data.get("label", "")),
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
        }


class ApiKeyStore:
    """
    The hashed API keys of ``api_key`` mode, read from a JSON file and re-read when it changes.

    File shape: ``{"keys": [{"sha256", "tenant_id", "user_id", "tags", "projects", "permissions", "label"}]}``.

    :param path: The keys file; a missing file means "no keys" (every request gets 401).
    """

    def __init__(self, path: Path):
        self.path = Path(path)
        self._lock = threading.Lock()
        self._mtime: float | None = None
        self._records: dict[str, ApiKeyRecord] = {}

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

    def lookup(self, key: str) -> ApiKeyRecord | None:
        """The record of a presented key, or ``None``."""
        with self._lock:
            self._reload_if_changed()
            return self._records.get(hash_key(key))

    def __len__(self) -> int:
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
    """

    tenant_id: str
    user_tags: tuple[str, ...]
    user_id: str | None = None
    project_id: str | None = None
    key_id: str | None = None

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
    if user_id is not None and record.user_id is not None and user_id != record.user_id:
        raise forbidden(f"user_id '{user_id}' does not match the API key's user.")
    if project_id is not None and record.projects is not None and project_id not in record.projects:
        raise forbidden(f"project_id '{project_id}' is not among the API key's projects.")
    if user_tags is None:
        tags = record.tags
    else:
        allowed = set(record.tags)
        tags = tuple(tag for tag in dict.fromkeys(user_tags) if tag in allowed)
    if require_tags and not tags:
        raise forbidden("None of the requested user_tags are allowed for this API key.")
    return Identity(record.tenant_id, tags, record.user_id or user_id, project_id, record.key_id)


def authorize_write(
    mode: str,
    keys: ApiKeyStore | None,
    headers: Mapping[str, str] | None,
    *,
    tenant_ids: set[str],
    tags: set[str] | None = None,
    permission: str = "write",
) -> str | None:
    """
    Check that the requester may change the given tenants' documents.

    In trusted mode everything is allowed (the gateway decides). In ``api_key`` mode the key needs
    ``permission`` (``admin`` implies ``write``), its tenant must be the only tenant touched, and any
    tags written must be among its tags.

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
    return record.key_id

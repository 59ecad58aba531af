"""
The API keys of ``api_key`` mode (docs/contract.md, "Identity and delegation"): only ``sha256(key)`` is
stored, with the key's ``tenant_id``, ``user_id``, allowed ``tags`` and ``projects``, ``permissions`` and
delegation grant (``act_as_users``).

Two backends, one record type (:class:`ApiKeyRecord`):

* :class:`ApiKeyFile`: the JSON keys file (``SOURCEBOUND_API_KEYS_FILE``, default ``DATA_DIR/api_keys.json``),
  written whole and renamed into place, mode 0600;
* :class:`SqlApiKeys`: the ``api_keys`` table of the shared database (``SOURCEBOUND_DATABASE_URL``); the first
  time it opens beside a keys file, the file's keys are imported once.

:class:`ApiKeyStore` is what the server reads: the file, re-read when its modification time changes (so a key
added with ``sourcebound keys add`` works without a restart), or the table through a per-key cache of
``SOURCEBOUND_KEY_CACHE_SECONDS`` (default 2; 0 reads the database on every request): a key added or revoked on
one replica works, or stops working, on every replica within that bound (docs/operations.md "Replicas").
:func:`register_key`, :func:`list_keys`, :func:`revoke_key` and :func:`revoke_where` manage keys in whichever
backend is configured (the CLI and the erasure service use them).

Usage:

```python
from components.stores.key_store import ApiKeyStore, register_key

key, record = register_key(keys_file, tenant_id="acme", tags=["hr"], user_id="alice")
keys = ApiKeyStore(keys_file)
assert keys.lookup(key) == record
```
"""

import fnmatch
import hashlib
import json
import logging
import os
import secrets
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from components.runtime.environment import env_number
from components.stores.state import StateDatabase, open_state
from components.stores.state import database_url as shared_database_url

logger = logging.getLogger(__name__)

# "public": may write scope-"public" documents, which every tenant sees (an operator's grant, not a tenant admin's).
PERMISSIONS = ("read", "write", "admin", "public")
KEY_PREFIX = "sb_"


def hash_key(key: str) -> str:
    """The stored form of an API key: hex sha256. Keys are 256-bit random, so no slow hash is needed."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def key_id_for(key_hash: str) -> str:
    """A short, non-secret id for a key (used in records and logs)."""
    return f"key-{key_hash[:12]}"


@dataclass(frozen=True)
class ApiKeyRecord:
    """One stored key: its hash and grants (an entry of the keys file or a row of ``api_keys``)."""

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


class ApiKeyFile:
    """
    The JSON keys file: ``{"keys": [{"sha256", "tenant_id", "user_id", "tags", "projects", "permissions", "label",
    "act_as_users"}]}``. A missing file has no keys; every change rewrites it whole and renames it into place.

    :param path: The keys file.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    def read(self) -> dict:
        """The file's content (``{"keys": []}`` when it does not exist)."""
        if not self.path.exists():
            return {"keys": []}
        data = json.loads(self.path.read_text(encoding="utf-8"))
        if not isinstance(data, dict) or not isinstance(data.get("keys"), list):
            raise ValueError(f"{self.path} is not a keys file (expected an object with a 'keys' list).")
        return data

    def write(self, data: dict) -> None:
        """Replace the file: write-then-rename so a reader never sees half a file; 0600 because it names tenants."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=".keys-", dir=self.path.parent)
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as file:
                json.dump(data, file, indent=2, sort_keys=True)
                file.write("\n")
            os.chmod(temporary, 0o600)
            os.replace(temporary, self.path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise

    def add(self, record: ApiKeyRecord) -> None:
        """Store a new key; ``ValueError`` if its hash is already stored."""
        data = self.read()
        if any(entry.get("sha256") == record.key_hash for entry in data["keys"]):
            raise ValueError("this key is already registered.")
        data["keys"].append(record.to_dict())
        self.write(data)

    def list(self) -> list[ApiKeyRecord]:
        return [ApiKeyRecord.from_dict(entry) for entry in self.read()["keys"]]

    def revoke(self, key_id: str) -> bool:
        """Remove the key with this id (``key-<12 hex>``); ``True`` if one was removed."""
        data = self.read()
        kept = [entry for entry in data["keys"] if ApiKeyRecord.from_dict(entry).key_id != key_id]
        if len(kept) == len(data["keys"]):
            return False
        data["keys"] = kept
        self.write(data)
        return True

    def revoke_where(self, tenant_id: str, user_id: str | None = None) -> int:
        """Remove every key of a tenant (or its keys bound to ``user_id``); the file is rewritten only if some were."""
        if not self.path.exists():
            return 0
        data = self.read()

        def doomed(entry: dict) -> bool:
            return entry.get("tenant_id") == tenant_id and (user_id is None or entry.get("user_id") == user_id)

        kept = [entry for entry in data["keys"] if not doomed(entry)]
        removed = len(data["keys"]) - len(kept)
        if removed:
            data["keys"] = kept
            self.write(data)
        return removed


class SqlApiKeys:
    """
    The ``api_keys`` table of the state layer: the key store of replicas sharing ``SOURCEBOUND_DATABASE_URL``.

    The first time it is opened beside a data directory's ``api_keys.json`` (written before the shared database),
    the file's keys are copied in (existing ones are kept), checked to be there, and the file is deleted, so a key
    revoked later is never brought back by a second import nor kept in a forgotten file (an ``api_keys.json.imported``
    an earlier version left is deleted too).

    :param database: The state database (shared).
    :param import_from: A keys file to import once, or ``None``.
    """

    def __init__(self, database: StateDatabase, import_from: Path | None = None) -> None:
        self.database = database
        if import_from is not None and Path(import_from).is_file():
            self._import_file(Path(import_from))
        if import_from is not None:
            stale = Path(import_from).with_name(Path(import_from).name + ".imported")
            if stale.is_file():
                stale.unlink()  # an earlier version's copy of keys the database has (and may have revoked since)
                logger.warning("Removed %s, left by an earlier import into the shared database.", stale)

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
        with self.database.connect() as connection:
            stored = {row[0] for row in connection.execute(sa.text("SELECT key_hash FROM api_keys")).all()}
        missing = [record.key_hash[:8] for record in records if record.key_hash not in stored]
        if missing:
            raise RuntimeError(
                f"Importing {path} into the shared database left {len(missing)} key(s) out; the file was kept."
            )
        path.unlink()
        logger.warning("Imported %d API keys from %s into the shared database; deleted the file.", len(records), path)

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


# ---------------------------------------------------------------------- management (CLI, erasure)


def managed_keys(keys_file: Path | None) -> SqlApiKeys | ApiKeyFile:
    """
    Where keys are managed: the shared database when ``SOURCEBOUND_DATABASE_URL`` is set (a keys file found at
    ``keys_file`` is then imported once), else the keys file.
    """
    if shared_database_url() is not None:
        return SqlApiKeys.open(Path(keys_file) if keys_file else None)
    return ApiKeyFile(Path(keys_file))


def register_key(
    keys_file: Path,
    tenant_id: str,
    tags: list[str],
    user_id: str | None = None,
    projects: list[str] | None = None,
    permissions: list[str] | None = None,
    label: str = "",
    key: str | None = None,
    act_as_users: list[str] | None = None,
) -> tuple[str, ApiKeyRecord]:
    """
    Create an API key and store its hash.

    :param keys_file: The keys file (created if missing; with a shared database, imported once).
    :param tenant_id: The tenant the key acts for.
    :param tags: The tags the key may read (and write, with ``write``).
    :param user_id: The user the key acts as.
    :param projects: Allowed ``project_id`` values; ``None`` allows any project of the tenant.
    :param permissions: Any of ``read``, ``write``, ``admin`` (default ``read``).
    :param label: A free-text note.
    :param key: Use this key instead of a random one (tests, migrations).
    :param act_as_users: Makes a service key: the user ids or glob patterns (``u-acme-*``; ``*`` for
        any user) it may pass as ``user_id``. Without it a key without ``user_id`` acts for nobody.
    :returns: The key (shown once) and its stored record.
    :raises ValueError: If a required field is missing, a grant is malformed or the key is already stored.
    """
    if not tenant_id:
        raise ValueError("tenant_id is required.")
    if not tags:
        raise ValueError("at least one tag is required.")
    key = key or KEY_PREFIX + secrets.token_urlsafe(32)
    record = ApiKeyRecord.from_dict(
        {
            "sha256": hash_key(key),
            "tenant_id": tenant_id,
            "user_id": user_id,
            "tags": list(dict.fromkeys(tags)),
            "projects": projects,
            "permissions": permissions or ["read"],
            "label": label,
            "act_as_users": list(dict.fromkeys(act_as_users)) if act_as_users is not None else None,
        }
    )
    managed_keys(keys_file).add(record)
    return key, record


def list_keys(keys_file: Path) -> list[ApiKeyRecord]:
    """The stored key records (hashes only)."""
    return managed_keys(keys_file).list()


def revoke_key(keys_file: Path, key_id: str) -> bool:
    """Remove the key with this id (``key-<12 hex>``); ``True`` if one was removed."""
    return managed_keys(keys_file).revoke(key_id)


def revoke_where(keys_file: Path, tenant_id: str, user_id: str | None = None) -> int:
    """
    Remove every key of a tenant (or, with ``user_id``, the tenant's user keys bound to that user).

    :returns: How many keys were removed.
    """
    return managed_keys(keys_file).revoke_where(tenant_id, user_id)

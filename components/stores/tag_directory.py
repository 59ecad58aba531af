"""
The tag-owner directory (docs/contract.md, "Confidence and routing"): two tables in the state layer
(:mod:`components.stores.state`: its own SQLite file by default, the shared database with
``SOURCEBOUND_DATABASE_URL``),

```sql
users (id TEXT PRIMARY KEY, email TEXT NOT NULL)
tags  (tenant_id TEXT NOT NULL, name TEXT NOT NULL, owner_user_id TEXT REFERENCES users(id),
       PRIMARY KEY (tenant_id, name))
```

Tags are per tenant: the same tag name can exist in several tenants with different
owners, and a lookup always names the requester's tenant, so a question is never
routed to (and never discloses) another tenant's owner. Users are global.

Old schema: a database created before tags had a ``tenant_id`` column (``tags``
keyed by name only) cannot say which tenant each tag belongs to, so on first use
its ``tags`` table is dropped and recreated empty (users are kept), with a warning.
Reload the tags from the directory YAML (``sourcebound tags load ...``; the API's
bootstrap does it automatically when the directory has no tags).

managed from the CLI (``sourcebound tags ...``) or a YAML file, and read by the
:class:`components.routers.tag_router.TagRouter` when an answer is routed to a human.
It lives at ``$SOURCEBOUND_DATA_DIR/tags.sqlite`` by default.

Every call takes a pooled connection for one transaction, so one directory object is safe to
share between server threads, CLI processes and replicas (each write is one upsert or one transaction).

YAML format for :meth:`TagDirectory.load_from_yaml`:

```yaml
users:
  - {id: u-hr-lead, email: hr-lead@acme.example}
tags:
  - {tenant_id: acme, name: hr, owner_user_id: u-hr-lead}
  - {tenant_id: acme, name: it}            # no owner: routes to the admin
```
"""

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlalchemy as sa
import yaml

from components.core.errors import SourceboundError
from components.stores.state import StateDatabase, open_state

TAG_DIRECTORY_FILE = "tags.sqlite"

_UPSERT_USER = sa.text(
    "INSERT INTO users (id, email) VALUES (:id, :email) ON CONFLICT (id) DO UPDATE SET email = excluded.email"
)
# One statement, so two replicas setting the same tag's owner at once both succeed (the last one wins).
_UPSERT_TAG = sa.text(
    "INSERT INTO tags (tenant_id, name, owner_user_id) VALUES (:tenant_id, :name, :owner) "
    "ON CONFLICT (tenant_id, name) DO UPDATE SET owner_user_id = excluded.owner_user_id"
)
_USER_EXISTS = sa.text("SELECT 1 FROM users WHERE id = :id")
_SELECT_TAGS = (
    "SELECT tags.name, tags.owner_user_id, users.email, tags.tenant_id FROM tags "
    "LEFT JOIN users ON users.id = tags.owner_user_id"
)


class TagDirectoryError(SourceboundError, ValueError):
    """Bad input to the tag directory (unknown user, malformed YAML, ...)."""


def default_tag_directory_path() -> Path:
    """``$SOURCEBOUND_DATA_DIR/tags.sqlite`` (``./data/tags.sqlite`` by default)."""
    return Path(os.environ.get("SOURCEBOUND_DATA_DIR") or "./data") / TAG_DIRECTORY_FILE


@dataclass(frozen=True)
class TagOwner:
    """A tag and its owner, as found in the directory."""

    tag: str
    owner_user_id: str | None
    owner_email: str | None
    tenant_id: str


def _require_tenant(tenant_id: str) -> None:
    if not tenant_id or not isinstance(tenant_id, str):
        raise TagDirectoryError(f"A tag belongs to a tenant: give a tenant id, got {tenant_id!r}.")


def _tag_owner(row: tuple) -> "TagOwner":
    return TagOwner(tag=row[0], owner_user_id=row[1], owner_email=row[2], tenant_id=row[3])


class TagDirectory:
    """
    Usage:
    ```python
    directory = TagDirectory("data/tags.sqlite")
    directory.add_user("u-hr-lead", "hr-lead@acme.example")
    directory.set_tag_owner("acme", "hr", "u-hr-lead")
    directory.lookup("acme", "hr")
    # TagOwner(tag="hr", owner_user_id="u-hr-lead", owner_email="hr-lead@acme.example", tenant_id="acme")
    directory.lookup("globex", "hr")  # None: tags are per tenant
    ```
    """

    def __init__(self, path: str | os.PathLike, database_url: str | None = None) -> None:
        """
        :param path: The SQLite file; created (with its folder and schema) on first use.
        :param database_url: A shared database instead of the file (default: ``SOURCEBOUND_DATABASE_URL``).
        """
        if not str(path):
            raise ValueError("The tag directory needs a file path.")
        self.path = Path(path)
        self.database_url = database_url
        self._database: StateDatabase | None = None

    @property
    def database(self) -> StateDatabase:
        """The state database (opened and migrated on first use; an old tenant-less tags table is dropped)."""
        if self._database is None:
            self._database = open_state("tags", self.path, self.database_url)
        return self._database

    def add_user(self, user_id: str, email: str) -> None:
        """Add a user, or update the email of an existing one."""
        if not user_id or not email or "@" not in email:
            raise TagDirectoryError(f"A user needs an id and an email address, got id={user_id!r} email={email!r}.")
        with self.database.begin() as connection:
            connection.execute(_UPSERT_USER, {"id": user_id, "email": email})

    def remove_user(self, user_id: str) -> bool:
        """Remove a user; tags it owned keep no owner. Returns whether the user existed."""
        with self.database.begin() as connection:
            return connection.execute(sa.text("DELETE FROM users WHERE id = :id"), {"id": user_id}).rowcount > 0

    def erase_user(self, user_id: str, tenant_id: str | None = None) -> dict[str, int]:
        """
        Erase a user (docs/contract.md "Deletion"): the tags they own (in ``tenant_id``, or in every tenant) keep no
        owner, and their id and email go once they own no tag in any tenant. Freed pages are zeroed
        (``secure_delete``) and the file's journal is emptied.

        :returns: ``{"tag_owners": n, "users": 0 or 1}``: ownerships cleared and user rows removed.
        """
        params: dict[str, Any] = {"user_id": user_id}
        clear = "UPDATE tags SET owner_user_id = NULL WHERE owner_user_id = :user_id"
        if tenant_id is not None:
            _require_tenant(tenant_id)
            clear, params = clear + " AND tenant_id = :tenant_id", {**params, "tenant_id": tenant_id}
        with self.database.begin() as connection:
            owners = connection.execute(sa.text(clear), params).rowcount
            users = connection.execute(
                sa.text(
                    "DELETE FROM users WHERE id = :user_id "
                    "AND NOT EXISTS (SELECT 1 FROM tags WHERE owner_user_id = :user_id)"
                ),
                {"user_id": user_id},
            ).rowcount
        self.database.checkpoint()
        return {"tag_owners": owners, "users": users}

    def set_tag_owner(self, tenant_id: str, tag: str, owner_user_id: str | None) -> None:
        """
        Create a tenant's tag or change its owner (``None`` clears it).

        :raises TagDirectoryError: If the tenant or tag is empty or the owner is not a known user.
        """
        _require_tenant(tenant_id)
        if not tag:
            raise TagDirectoryError("A tag needs a name.")
        with self.database.begin() as connection:
            if owner_user_id is not None and connection.execute(_USER_EXISTS, {"id": owner_user_id}).first() is None:
                raise TagDirectoryError(f"Unknown user {owner_user_id!r}: add it first (`sourcebound tags add-user`).")
            connection.execute(_UPSERT_TAG, {"tenant_id": tenant_id, "name": tag, "owner": owner_user_id})

    def remove_tag(self, tenant_id: str, tag: str) -> bool:
        """Remove a tenant's tag from the directory. Returns whether it existed."""
        _require_tenant(tenant_id)
        with self.database.begin() as connection:
            return (
                connection.execute(
                    sa.text("DELETE FROM tags WHERE tenant_id = :tenant_id AND name = :name"),
                    {"tenant_id": tenant_id, "name": tag},
                ).rowcount
                > 0
            )

    def remove_tenant(self, tenant_id: str) -> int:
        """Remove every tag (and so every tag owner) of a tenant (docs/contract.md "Deletion"). Returns how many."""
        _require_tenant(tenant_id)
        with self.database.begin() as connection:
            removed = connection.execute(
                sa.text("DELETE FROM tags WHERE tenant_id = :tenant_id"), {"tenant_id": tenant_id}
            ).rowcount
        self.database.checkpoint()
        return removed

    def lookup(self, tenant_id: str, tag: str) -> TagOwner | None:
        """
        The owner of ``tag`` in ``tenant_id`` (never another tenant's). ``None`` when the tenant
        has no such tag; a :class:`TagOwner` with ``owner_user_id=None`` when it has no owner;
        ``owner_email=None`` when the owner id names no user.
        """
        _require_tenant(tenant_id)
        with self.database.connect() as connection:
            row = connection.execute(
                sa.text(f"{_SELECT_TAGS} WHERE tags.tenant_id = :tenant_id AND tags.name = :name"),
                {"tenant_id": tenant_id, "name": tag},
            ).first()
        return _tag_owner(row) if row else None

    def list_tags(self, tenant_id: str | None = None) -> list[TagOwner]:
        """The tags of ``tenant_id`` (every tenant's when ``None``) with their owners, sorted by tenant and name."""
        with self.database.connect() as connection:
            if tenant_id is None:
                rows = connection.execute(sa.text(f"{_SELECT_TAGS} ORDER BY tags.tenant_id, tags.name")).all()
            else:
                rows = connection.execute(
                    sa.text(f"{_SELECT_TAGS} WHERE tags.tenant_id = :tenant_id ORDER BY tags.name"),
                    {"tenant_id": tenant_id},
                ).all()
        return [_tag_owner(row) for row in rows]

    def list_users(self) -> list[tuple[str, str]]:
        """Every user as ``(id, email)``, sorted by id."""
        with self.database.connect() as connection:
            return [tuple(row) for row in connection.execute(sa.text("SELECT id, email FROM users ORDER BY id")).all()]

    def load_from_yaml(self, path: str | os.PathLike) -> dict[str, int]:
        """
        Load users and tag owners from a YAML file (format in the module doc), in one transaction.

        :returns: ``{"users": n, "tags": m}`` loaded.
        :raises TagDirectoryError: If the file is malformed or a tag names an unknown owner.
        """
        try:
            data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError) as error:
            raise TagDirectoryError(f"Cannot read tag directory YAML {path}: {error}") from error
        return self.load(data)

    def load(self, data: dict[str, Any]) -> dict[str, int]:
        """
        Load ``{"users": [{id, email}], "tags": [{tenant_id, name, owner_user_id?}]}`` in one transaction
        (``owner`` is accepted for ``owner_user_id``).
        """
        if not isinstance(data, dict):
            raise TagDirectoryError("Tag directory data must be a mapping with `users` and `tags`.")
        users = data.get("users") or []
        entries = data.get("tags") or []
        if not isinstance(users, list) or not isinstance(entries, list):
            raise TagDirectoryError(
                "`users` must be a list of {id, email} and `tags` a list of {tenant_id, name, owner_user_id}."
            )
        tags: list[tuple[str, str, Any]] = []
        for item in entries:
            if not isinstance(item, dict):
                raise TagDirectoryError(f"Each tag must be a mapping {{tenant_id, name, owner_user_id}}, got {item!r}.")
            if not item.get("tenant_id"):
                raise TagDirectoryError(f"Tag {item.get('name')!r} needs a `tenant_id`, got {item!r}.")
            tags.append((str(item["tenant_id"]), item.get("name"), item.get("owner_user_id", item.get("owner"))))
        with self.database.begin() as connection:
            for user in users:
                if not isinstance(user, dict) or not user.get("id") or "@" not in str(user.get("email", "")):
                    raise TagDirectoryError(f"Each user needs an `id` and an `email`, got {user!r}.")
                connection.execute(_UPSERT_USER, {"id": str(user["id"]), "email": str(user["email"])})
            for tenant_id, name, owner in tags:
                if not name:
                    raise TagDirectoryError(f"A tag of tenant {tenant_id!r} needs a name.")
                owner = None if owner is None else str(owner)
                if owner is not None and connection.execute(_USER_EXISTS, {"id": owner}).first() is None:
                    raise TagDirectoryError(
                        f"Tag {name!r} ({tenant_id}) names unknown owner {owner!r}; list it under `users`."
                    )
                connection.execute(_UPSERT_TAG, {"tenant_id": tenant_id, "name": str(name), "owner": owner})
        return {"users": len(users), "tags": len(tags)}

"""
The tag-owner directory (specification v2 "Tag Owner Lookup"): a SQLite file
with the specification's two tables,

```sql
users (id TEXT PRIMARY KEY, email TEXT NOT NULL)
tags  (name TEXT PRIMARY KEY, owner_user_id TEXT REFERENCES users(id))
```

managed from the CLI (``sourcebound tags ...``) or a YAML file, and read by the
:class:`components.tag_router.TagRouter` when an answer is routed to a human.
It lives at ``$SOURCEBOUND_DATA_DIR/tags.sqlite`` by default.

Every call opens its own short connection, so one directory object is safe to
share between server threads and CLI processes (SQLite serialises writers).

YAML format for :meth:`TagDirectory.load_from_yaml`:

```yaml
users:
  - {id: u-hr-lead, email: hr-lead@acme.example}
tags:
  hr: u-hr-lead          # tag: owner user id (or null for no owner)
```
"""

import os
import sqlite3
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

SCHEMA = """
CREATE TABLE IF NOT EXISTS users (
    id TEXT PRIMARY KEY,
    email TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS tags (
    name TEXT PRIMARY KEY,
    owner_user_id TEXT REFERENCES users(id) ON DELETE SET NULL
);
"""

TAG_DIRECTORY_FILE = "tags.sqlite"


class TagDirectoryError(ValueError):
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


class TagDirectory:
    """
    Usage:
    ```python
    directory = TagDirectory("data/tags.sqlite")
    directory.add_user("u-hr-lead", "hr-lead@acme.example")
    directory.set_tag_owner("hr", "u-hr-lead")
    directory.lookup("hr")  # TagOwner(tag="hr", owner_user_id="u-hr-lead", owner_email="hr-lead@acme.example")
    ```
    """

    def __init__(self, path: str | os.PathLike) -> None:
        """
        :param path: The SQLite file; created (with its folder and schema) on first use.
        """
        if not str(path):
            raise ValueError("The tag directory needs a file path.")
        self.path = Path(path)
        self._initialised = False

    def _connect(self) -> sqlite3.Connection:
        if not self._initialised:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        connection = sqlite3.connect(self.path, timeout=10.0)
        connection.execute("PRAGMA foreign_keys = ON")
        if not self._initialised:
            connection.executescript(SCHEMA)
            self._initialised = True
        return connection

    def add_user(self, user_id: str, email: str) -> None:
        """Add a user, or update the email of an existing one."""
        if not user_id or not email or "@" not in email:
            raise TagDirectoryError(f"A user needs an id and an email address, got id={user_id!r} email={email!r}.")
        with closing(self._connect()) as connection, connection:
            connection.execute(
                "INSERT INTO users (id, email) VALUES (?, ?) ON CONFLICT(id) DO UPDATE SET email = excluded.email",
                (user_id, email),
            )

    def remove_user(self, user_id: str) -> bool:
        """Remove a user; tags it owned keep no owner. Returns whether the user existed."""
        with closing(self._connect()) as connection, connection:
            return connection.execute("DELETE FROM users WHERE id = ?", (user_id,)).rowcount > 0

    def set_tag_owner(self, tag: str, owner_user_id: str | None) -> None:
        """
        Create a tag or change its owner (``None`` clears it).

        :raises TagDirectoryError: If the owner is not a known user.
        """
        if not tag:
            raise TagDirectoryError("A tag needs a name.")
        with closing(self._connect()) as connection, connection:
            if owner_user_id is not None and connection.execute("SELECT 1 FROM users WHERE id = ?", (owner_user_id,)).fetchone() is None:
                raise TagDirectoryError(f"Unknown user {owner_user_id!r}: add it first (`sourcebound tags add-user`).")
            connection.execute(
                "INSERT INTO tags (name, owner_user_id) VALUES (?, ?) "
                "ON CONFLICT(name) DO UPDATE SET owner_user_id = excluded.owner_user_id",
                (tag, owner_user_id),
            )

    def remove_tag(self, tag: str) -> bool:
        """Remove a tag from the directory. Returns whether it existed."""
        with closing(self._connect()) as connection, connection:
            return connection.execute("DELETE FROM tags WHERE name = ?", (tag,)).rowcount > 0

    def lookup(self, tag: str) -> TagOwner | None:
        """
        The tag's owner. ``None`` when the tag is not in the directory; a :class:`TagOwner`
        with ``owner_user_id=None`` when it has no owner; ``owner_email=None`` when the owner
        id names no user.
        """
        with closing(self._connect()) as connection:
            row = connection.execute(
                "SELECT tags.name, tags.owner_user_id, users.email FROM tags "
                "LEFT JOIN users ON users.id = tags.owner_user_id WHERE tags.name = ?",
                (tag,),
            ).fetchone()
        return TagOwner(tag=row[0], owner_user_id=row[1], owner_email=row[2]) if row else None

    def list_tags(self) -> list[TagOwner]:
        """Every tag with its owner, sorted by name."""
        with closing(self._connect()) as connection:
            rows = connection.execute(
                "SELECT tags.name, tags.owner_user_id, users.email FROM tags "
                "LEFT JOIN users ON users.id = tags.owner_user_id ORDER BY tags.name"
            ).fetchall()
        return [TagOwner(tag=name, owner_user_id=owner, owner_email=email) for name, owner, email in rows]

    def list_users(self) -> list[tuple[str, str]]:
        """Every user as ``(id, email)``, sorted by id."""
        with closing(self._connect()) as connection:
            return [tuple(row) for row in connection.execute("SELECT id, email FROM users ORDER BY id").fetchall()]

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
        """Load ``{"users": [{id, email}], "tags": {name: owner_id}}`` in one transaction."""
        if not isinstance(data, dict):
            raise TagDirectoryError("Tag directory data must be a mapping with `users` and `tags`.")
        users = data.get("users") or []
        tags = data.get("tags") or {}
        if isinstance(tags, list):  # also accept [{name, owner}]
            tags = {item.get("name"): item.get("owner", item.get("owner_user_id")) for item in tags if isinstance(item, dict)}
        if not isinstance(users, list) or not isinstance(tags, dict):
            raise TagDirectoryError("`users` must be a list of {id, email} and `tags` a mapping of tag -> owner id.")
        with closing(self._connect()) as connection, connection:
            for user in users:
                if not isinstance(user, dict) or not user.get("id") or "@" not in str(user.get("email", "")):
                    raise TagDirectoryError(f"Each user needs an `id` and an `email`, got {user!r}.")
                connection.execute(
                    "INSERT INTO users (id, email) VALUES (?, ?) ON CONFLICT(id) DO UPDATE SET email = excluded.email",
                    (str(user["id"]), str(user["email"])),
                )
            for name, owner in tags.items():
                if not name:
                    raise TagDirectoryError("A tag needs a name.")
                owner = None if owner is None else str(owner)
                if owner is not None and connection.execute("SELECT 1 FROM users WHERE id = ?", (owner,)).fetchone() is None:
                    raise TagDirectoryError(f"Tag {name!r} names unknown owner {owner!r}; list it under `users`.")
                connection.execute(
                    "INSERT INTO tags (name, owner_user_id) VALUES (?, ?) "
                    "ON CONFLICT(name) DO UPDATE SET owner_user_id = excluded.owner_user_id",
                    (str(name), owner),
                )
        return {"users": len(users), "tags": len(tags)}

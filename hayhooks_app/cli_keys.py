"""
Manage the API keys of ``api_key`` mode: ``keys add``, ``keys list``, ``keys revoke``.

Only ``sha256(key)`` is written to the keys file; the key itself is printed once, on creation. With
``SOURCEBOUND_DATABASE_URL`` set, the keys are those of the shared database (every replica sees them;
docs/operations.md "Replicas") and a keys file left in the data directory is imported once.

Usage (either entry point):

```bash
python -m hayhooks_app keys add --tenant acme --user alice --tags hr,engineering
python -m hayhooks_app keys add --tenant acme --tags hr --permissions read,write --label indexer
python -m hayhooks_app keys add --tenant acme --tags hr --act-as-users --label orchestrator       # any user
python -m hayhooks_app keys add --tenant acme --tags hr --act-as-users 'u-acme-*,svc-bot' --label bot
python -m hayhooks_app keys list
python -m hayhooks_app keys revoke key-1a2b3c4d5e6f
```

``register(subparsers)`` adds the same ``keys`` command to another argparse CLI (``sourcebound keys ...``).
"""

import argparse
import json
import os
import secrets
import sys
import tempfile
from pathlib import Path

from sqlalchemy.exc import SQLAlchemyError

from components.core.state import database_url
from hayhooks_app.config import Settings
from hayhooks_app.identity import PERMISSIONS, ApiKeyRecord, SqlApiKeys, hash_key

KEY_PREFIX = "sb_"


def _read(path: Path) -> dict:
    if not path.exists():
        return {"keys": []}
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or not isinstance(data.get("keys"), list):
        raise ValueError(f"{path} is not a keys file (expected an object with a 'keys' list).")
    return data


def _shared(keys_file: Path | None) -> SqlApiKeys | None:
    """The shared database's keys when ``SOURCEBOUND_DATABASE_URL`` is set (the file is then imported once)."""
    return SqlApiKeys.open(Path(keys_file) if keys_file else None) if database_url() else None


def _write(path: Path, data: dict) -> None:
    # Write-then-rename so the server never reads half a file; 0600 because the file names tenants.
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=".keys-", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            json.dump(data, file, indent=2, sort_keys=True)
            file.write("\n")
        os.chmod(temporary, 0o600)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


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
    shared = _shared(keys_file)
    if shared is not None:
        shared.add(record)
        return key, record
    data = _read(Path(keys_file))
    if any(entry.get("sha256") == record.key_hash for entry in data["keys"]):
        raise ValueError("this key is already registered.")
    data["keys"].append(record.to_dict())
    _write(Path(keys_file), data)
    return key, record


def list_keys(keys_file: Path) -> list[ApiKeyRecord]:
    """The stored key records (hashes only)."""
    shared = _shared(keys_file)
    if shared is not None:
        return shared.list()
    return [ApiKeyRecord.from_dict(entry) for entry in _read(Path(keys_file))["keys"]]


def revoke_key(keys_file: Path, key_id: str) -> bool:
    """Remove the key with this id (``key-<12 hex>``); ``True`` if one was removed."""
    shared = _shared(keys_file)
    if shared is not None:
        return shared.revoke(key_id)
    data = _read(Path(keys_file))
    kept = [entry for entry in data["keys"] if ApiKeyRecord.from_dict(entry).key_id != key_id]
    if len(kept) == len(data["keys"]):
        return False
    data["keys"] = kept
    _write(Path(keys_file), data)
    return True


def revoke_where(keys_file: Path, tenant_id: str, user_id: str | None = None) -> int:
    """
    Remove every key of a tenant (or, with ``user_id``, the tenant's user keys bound to that user).

    :returns: How many keys were removed (the file is rewritten only when some were).
    """
    shared = _shared(keys_file)
    if shared is not None:
        return shared.revoke_where(tenant_id, user_id)
    keys_file = Path(keys_file)
    if not keys_file.exists():
        return 0
    data = _read(keys_file)

    def doomed(entry: dict) -> bool:
        return entry.get("tenant_id") == tenant_id and (user_id is None or entry.get("user_id") == user_id)

    kept = [entry for entry in data["keys"] if not doomed(entry)]
    removed = len(data["keys"]) - len(kept)
    if removed:
        data["keys"] = kept
        _write(keys_file, data)
    return removed


def _split(value: str | None) -> list[str] | None:
    if value is None:
        return None
    return [part.strip() for part in value.split(",") if part.strip()]


def _keys_file(args: argparse.Namespace) -> Path:
    return Path(args.keys_file) if args.keys_file else Settings.from_env().api_keys_file


def _run(args: argparse.Namespace) -> int:
    keys_file = _keys_file(args)
    where = "the shared database" if database_url() else keys_file
    try:
        if args.keys_command == "add":
            key, record = register_key(
                keys_file,
                tenant_id=args.tenant,
                tags=_split(args.tags) or [],
                user_id=args.user,
                projects=_split(args.projects),
                permissions=_split(args.permissions),
                label=args.label or "",
                act_as_users=_split(args.act_as_users),
            )
            print(f"Created {record.key_id} for tenant {record.tenant_id} in {where}.")
            print("Store this key now; only its hash is kept:")
            print(key)
        elif args.keys_command == "list":
            for record in list_keys(keys_file):
                print(
                    f"{record.key_id}\ttenant={record.tenant_id}\tuser={record.user_id or '-'}\t"
                    f"act_as_users={','.join(record.act_as_users) if record.act_as_users is not None else '-'}\t"
                    f"tags={','.join(record.tags)}\tpermissions={','.join(record.permissions)}\t{record.label}"
                )
        elif args.keys_command == "revoke":
            if not revoke_key(keys_file, args.key_id):
                print(f"No key {args.key_id} in {where}.", file=sys.stderr)
                return 1
            print(f"Revoked {args.key_id}.")
    except (ValueError, OSError, SQLAlchemyError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """
    Add the ``keys`` command to an argparse CLI; the parsed namespace's ``func`` runs it.

    :param subparsers: The result of ``parser.add_subparsers()``.
    :returns: The ``keys`` parser.
    """
    parser = subparsers.add_parser("keys", help="manage API keys (api_key identity mode)")
    parser.add_argument("--keys-file", help="keys file (default: SOURCEBOUND_API_KEYS_FILE or DATA_DIR/api_keys.json)")
    commands = parser.add_subparsers(dest="keys_command", required=True)

    add = commands.add_parser("add", help="create a key and print it once")
    add.add_argument("--tenant", required=True, help="tenant_id the key acts for")
    add.add_argument("--tags", required=True, help="comma-separated tags the key may use")
    add.add_argument("--user", help="user_id the key acts as (a user key)")
    add.add_argument(
        "--act-as-users",
        nargs="?",
        const="*",
        help="make a service key that may pass user_id on behalf of users: comma-separated user ids or glob "
        "patterns (e.g. 'u-acme-*'); alone: any user of the tenant. Without --user or this, the key sees only "
        "tenant-wide documents",
    )
    add.add_argument("--projects", help="comma-separated project_ids the key may use (default: any)")
    add.add_argument(
        "--permissions", default="read", help=f"comma-separated, any of {', '.join(PERMISSIONS)} (default: read)"
    )
    add.add_argument("--label", help="free-text note")

    commands.add_parser("list", help="list keys (ids and grants; never the keys)")
    revoke = commands.add_parser("revoke", help="remove a key by id")
    revoke.add_argument("key_id", help="id shown by 'keys list', e.g. key-1a2b3c4d5e6f")
    parser.set_defaults(func=_run)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hayhooks_app.cli_keys")
    subparsers = parser.add_subparsers(dest="command", required=True)
    register(subparsers)
    args = parser.parse_args(["keys", *(argv if argv is not None else sys.argv[1:])])
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())

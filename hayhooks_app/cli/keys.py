"""
Manage the API keys of ``api_key`` mode: ``keys add``, ``keys list``, ``keys revoke``.

Only ``sha256(key)`` is written to the keys file; the key itself is printed once, on creation. With
``SOURCEBOUND_DATABASE_URL`` set, the keys are those of the shared database (every replica sees them;
docs/operations.md "Replicas") and a keys file left in the data directory is imported once. The keys are kept
by ``components.stores.key_store``, the store the server reads.

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
import sys
from pathlib import Path

from components.stores.key_store import PERMISSIONS, list_keys, register_key, revoke_key
from components.stores.state import STATE_ERRORS, database_url
from hayhooks_app.config import Settings


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
    except (ValueError, OSError, *STATE_ERRORS) as error:
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
    parser = argparse.ArgumentParser(prog="python -m hayhooks_app.cli.keys")
    subparsers = parser.add_subparsers(dest="command", required=True)
    register(subparsers)
    args = parser.parse_args(["keys", *(argv if argv is not None else sys.argv[1:])])
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())

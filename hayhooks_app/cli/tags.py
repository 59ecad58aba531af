"""
Manage the tag-owner directory (the SQLite file the RAG pipeline's ``TagRouter`` reads to
route low-confidence answers): ``sourcebound tags ...``.

```bash
sourcebound tags add-user u-maria maria.lopez@acme.example
sourcebound tags set-owner --tenant acme hr u-maria   # --none clears the owner (routes to the admin)
sourcebound tags lookup --tenant acme hr
sourcebound tags list [--tenant acme] [--json]         # every tenant's tags without --tenant
sourcebound tags users [--json]
sourcebound tags load examples/sample_corpus/directory.yml
sourcebound tags remove --tenant acme hr
sourcebound tags remove-user u-maria
```

Tags are per tenant (the same tag name can have a different owner in each tenant), so
``set-owner``, ``remove`` and ``lookup`` need ``--tenant``; users are global.

The directory is ``DATA_DIR/tags.sqlite`` (``--data-dir``, default ``SOURCEBOUND_DATA_DIR`` or
``./data``), the path the pipelines' YAML gives the router; ``--directory`` names another file.
Exit codes: 0 success; 1 the file could not be used; 2 invalid input (nothing changed).

``register(subparsers)`` adds the ``tags`` command to the ``sourcebound`` CLI (found automatically in the
``hayhooks_app.cli`` package).
"""

import argparse
import json
import os
import sys
from dataclasses import asdict
from pathlib import Path

from components.stores.state import STATE_ERRORS
from components.stores.tag_directory import TAG_DIRECTORY_FILE, TagDirectory, TagDirectoryError

EXIT_OK, EXIT_FAILED, EXIT_INVALID = 0, 1, 2


def directory_path(args: argparse.Namespace) -> Path:
    """The SQLite file the command works on."""
    if getattr(args, "directory", None):
        return Path(args.directory)
    data_dir = getattr(args, "data_dir", None) or os.environ.get("SOURCEBOUND_DATA_DIR") or "./data"
    return Path(data_dir) / TAG_DIRECTORY_FILE


def _owner_text(owner) -> str:
    if owner.owner_user_id is None:
        return f"{owner.tenant_id}/{owner.tag}: no owner (routes to the admin)"
    return f"{owner.tenant_id}/{owner.tag}: {owner.owner_user_id} <{owner.owner_email or 'unknown user'}>"


def _execute(args: argparse.Namespace, directory: TagDirectory) -> tuple[object, str]:
    command = args.tags_command
    if command == "add-user":
        directory.add_user(args.user_id, args.email)
        return {"user_id": args.user_id, "email": args.email}, f"user {args.user_id} <{args.email}> saved"
    if command == "remove-user":
        removed = directory.remove_user(args.user_id)
        return {
            "user_id": args.user_id,
            "removed": removed,
        }, f"user {args.user_id} {'removed' if removed else 'not found'}"
    if command == "set-owner":
        if (args.user_id is None) == (not args.none):
            raise TagDirectoryError("give an owner USER_ID or --none, not both or neither")
        directory.set_tag_owner(args.tenant, args.tag, None if args.none else args.user_id)
        owner = directory.lookup(args.tenant, args.tag)
        return asdict(owner), _owner_text(owner)
    if command == "remove":
        removed = directory.remove_tag(args.tenant, args.tag)
        return {"tenant_id": args.tenant, "tag": args.tag, "removed": removed}, (
            f"tag {args.tenant}/{args.tag} {'removed' if removed else 'not found'}"
        )
    if command == "lookup":
        owner = directory.lookup(args.tenant, args.tag)
        if owner is None:
            return {"tenant_id": args.tenant, "tag": args.tag, "found": False}, (
                f"{args.tenant}/{args.tag}: not in the directory (routes to the admin)"
            )
        return asdict(owner), _owner_text(owner)
    if command == "list":
        owners = directory.list_tags(args.tenant)
        return [asdict(owner) for owner in owners], "\n".join(_owner_text(owner) for owner in owners) or "(no tags)"
    if command == "users":
        users = directory.list_users()
        return [{"id": user_id, "email": email} for user_id, email in users], (
            "\n".join(f"{user_id} <{email}>" for user_id, email in users) or "(no users)"
        )
    if command == "load":
        counts = directory.load_from_yaml(args.file)
        return counts, f"loaded {counts['users']} users and {counts['tags']} tags from {args.file}"
    raise TagDirectoryError(f"unknown tags command {command!r}")  # pragma: no cover - argparse restricts it


def _run(args: argparse.Namespace) -> int:
    path = directory_path(args)
    try:
        result, text = _execute(args, TagDirectory(path))
    except TagDirectoryError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_INVALID
    except (*STATE_ERRORS, OSError) as error:
        print(f"error: cannot use the tag directory {path}: {error}", file=sys.stderr)
        return EXIT_FAILED
    print(json.dumps(result, indent=2) if args.json else text)
    return EXIT_OK


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """
    Add the ``tags`` command group to an argparse CLI; the parsed namespace's ``func`` runs it.

    :param subparsers: The result of ``parser.add_subparsers()``.
    :returns: The ``tags`` parser.
    """
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--data-dir", help="data folder holding tags.sqlite (default: SOURCEBOUND_DATA_DIR or ./data)")
    common.add_argument("--directory", help="the SQLite tag directory file itself (overrides --data-dir)")
    common.add_argument("--json", action="store_true", help="print the result as JSON")
    tenant = argparse.ArgumentParser(add_help=False)
    tenant.add_argument("--tenant", required=True, help="the tenant the tag belongs to (tags are per tenant)")

    parser = subparsers.add_parser("tags", help="manage tag owners (who low-confidence answers are routed to)")
    commands = parser.add_subparsers(dest="tags_command", required=True, metavar="TAGS_COMMAND")

    add_user = commands.add_parser("add-user", parents=[common], help="add a user or change their email")
    add_user.add_argument("user_id")
    add_user.add_argument("email")
    remove_user = commands.add_parser("remove-user", parents=[common], help="remove a user (their tags keep no owner)")
    remove_user.add_argument("user_id")
    set_owner = commands.add_parser("set-owner", parents=[common, tenant], help="create a tag or change its owner")
    set_owner.add_argument("tag")
    set_owner.add_argument("user_id", nargs="?", help="the owner's user id (added with add-user)")
    set_owner.add_argument("--none", action="store_true", help="clear the owner: the tag routes to the admin")
    remove = commands.add_parser("remove", parents=[common, tenant], help="remove a tag from the directory")
    remove.add_argument("tag")
    lookup = commands.add_parser("lookup", parents=[common, tenant], help="show who a tag routes to")
    lookup.add_argument("tag")
    list_tags = commands.add_parser("list", parents=[common], help="list tags and owners")
    list_tags.add_argument("--tenant", help="only this tenant's tags (default: every tenant's)")
    commands.add_parser("users", parents=[common], help="list users")
    load = commands.add_parser("load", parents=[common], help="load users and tag owners from a YAML file")
    load.add_argument(
        "file",
        help="YAML with `users: [{id, email}]` and `tags: [{tenant_id, name, owner_user_id}]` "
        "(see components/stores/tag_directory.py)",
    )
    parser.set_defaults(func=_run)
    return parser


def main(argv: list[str] | None = None) -> int:
    """``python -m hayhooks_app.cli.tags ...`` (the same as ``sourcebound tags ...``)."""
    parser = argparse.ArgumentParser(prog="python -m hayhooks_app.cli.tags")
    subparsers = parser.add_subparsers(dest="command", required=True)
    register(subparsers)
    args = parser.parse_args(["tags", *(argv if argv is not None else sys.argv[1:])])
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())

"""
``sourcebound backup PATH`` and ``sourcebound restore PATH [--replace]`` (docs/operations.md, "Backup and restore").

```bash
sourcebound backup /backups/sourcebound-$(date +%F)      # online when a server runs: it takes the backup
sourcebound restore /backups/sourcebound-2026-11-24 --data-dir ./data-restored
sourcebound restore /backups/sourcebound-2026-11-24 --replace   # over ./data, its server stopped
```

The work is in ``components.services.data_backup``; this module adds the commands and what they need from the
configuration: the data directory, the indexing pipeline's store, embedding model and dimension.
"""

import argparse
from pathlib import Path
from typing import Any

from hayhooks_app.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    common_options,
    print_error,
    print_result,
    run_guarded,
    store_definition,
)


def index_configuration(pipeline: str) -> dict[str, Any]:
    """
    What a backup records and a restore checks, from the indexing pipeline's YAML (no model is loaded).

    :returns: ``{"embedding": {"model", "dimension", "similarity"}, "sparse": {"model", "config"}, "store"}``.
    """
    from components.services.pipeline_loader import load_pipeline_dict

    components = load_pipeline_dict(pipeline)["components"]
    model = None
    for definition in components.values():
        if definition.get("type", "").endswith("DocumentIdentifier"):
            model = definition.get("init_parameters", {}).get("embedding_model")
    if model is None:
        for definition in components.values():
            if definition.get("type", "").endswith("DocumentEmbedder"):
                model = definition.get("init_parameters", {}).get("model")
    store = store_definition(pipeline)
    parameters = store.get("init_parameters", {})
    return {
        "embedding": {
            "model": model,
            "dimension": parameters.get("embedding_dim", 384),
            "similarity": parameters.get("similarity", "cosine"),
        },
        "sparse": {"model": "bm25 (qdrant_edge.Bm25)", "config": parameters.get("bm25_config") or {}},
        "store": store,
    }


def _size(files: dict[str, Any]) -> str:
    total = sum(entry["size"] for entry in files.values())
    return f"{total / 1e6:.1f} MB"


def _backup(args: argparse.Namespace) -> int:
    def action() -> int:
        from components.services.data_backup import BackupError, create_backup
        from hayhooks_app.cli.common import open_store
        from hayhooks_app.cli.server_link import serving_container
        from hayhooks_app.config import Settings, service_version

        container = serving_container()
        settings = container.settings if container is not None else Settings.from_env()
        pipeline = settings.indexing_pipeline if container is not None else args.pipeline
        configuration = index_configuration(pipeline)
        try:
            manifest = create_backup(
                settings.data_dir,
                Path(args.path),
                open_store(pipeline),
                embedding=configuration["embedding"],
                sparse=configuration["sparse"],
                sourcebound_version=service_version(),
                # In the server: index requests wait too, so none is half in the copy (its store write and its
                # records row land on the same side).
                hold=(lambda: container.write_lock) if container is not None else None,
            )
        except BackupError as error:
            print_error(str(error))
            return EXIT_FAILED
        counts = manifest["counts"]
        text = (
            f"backup written to {manifest['path']}: {counts['chunks']} chunks in {counts['documents']} documents "
            f"of {len(counts['tenants'])} tenant(s), {len(manifest['files'])} files ({_size(manifest['files'])}) "
            f"in {manifest['seconds']:.1f} s; writes paused {manifest['write_pause_s']:.2f} s; "
            f"authenticated with backup key {manifest['key_id']}"
        )
        print_result(args, {key: value for key, value in manifest.items() if key != "files"}, text)
        return EXIT_OK

    return run_guarded(args, action)


def _restore(args: argparse.Namespace) -> int:
    def action() -> int:
        from components.services.data_backup import BackupError, restore_backup
        from hayhooks_app.config import Settings

        settings = Settings.from_env()
        configuration = index_configuration(args.pipeline)
        try:
            result = restore_backup(
                Path(args.path),
                settings.data_dir,
                embedding=configuration["embedding"],
                replace=args.replace,
                store_definition=configuration["store"],
                allow_unauthenticated=args.unauthenticated,
            )
        except BackupError as error:
            print_error(str(error))
            return EXIT_FAILED
        counts = result["counts"]
        text = (
            f"restored {result['backup']} (taken {result['created_at']}) into {result['path']}: "
            f"{counts['chunks']} chunks in {counts['documents']} documents of {len(counts['tenants'])} tenant(s), "
            f"{result['files']} files verified"
            + ("; the previous data directory was replaced" if result["replaced"] else "")
        )
        print_result(args, result, text)
        return EXIT_OK

    return run_guarded(args, action)


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add ``backup PATH`` and ``restore PATH [--replace]``; returns the ``backup`` parser."""
    backup = subparsers.add_parser(
        "backup",
        parents=[common_options()],
        help="write a consistent backup of the data directory to a new folder (online beside a server)",
    )
    backup.add_argument("path", help="the backup folder to create (must not exist; its parent must)")
    backup.set_defaults(func=_backup)
    restore = subparsers.add_parser(
        "restore",
        parents=[common_options()],
        help="restore a verified backup into an empty data directory (or --replace one whose server is stopped)",
    )
    restore.add_argument("path", help="the backup folder")
    restore.add_argument(
        "--replace",
        action="store_true",
        help="replace a non-empty data directory (kept aside until the restore has succeeded)",
    )
    restore.add_argument(
        "--unauthenticated",
        action="store_true",
        help="restore a backup made before backups were authenticated (format 1: no manifest.hmac)",
    )
    # Never forwarded to a server: restoring under a running server is refused (its shard lock says so).
    restore.set_defaults(func=_restore, local_only=True)
    return backup

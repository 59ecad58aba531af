"""
``sourcebound migrate --to-qdrant LOCATION``: copy the embedded store into the Qdrant server profile's collection
without re-embedding (docs/operations.md, "Moving to a Qdrant server").

```bash
sourcebound migrate --to-qdrant http://qdrant:6333 --records-to ./data-server   # resumable: run it again
```

LOCATION is a Qdrant URL or a folder (qdrant-client's local mode). The collection and its settings are those
of the server profile's indexing pipeline (``pipelines/profiles/server/indexing.yml``; ``QDRANT_COLLECTION``).
"""

import argparse
import sys
from pathlib import Path

from hayhooks_app.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    common_options,
    print_error,
    print_result,
    run_guarded,
    store_definition,
)

PROFILE_PIPELINE = "profiles/server/indexing"


def _migrate(args: argparse.Namespace) -> int:
    def action() -> int:
        import contextlib

        from components.services.data_backup import BackupError, copy_state
        from components.services.store_migration import MigrationError, migrate_store, target_store
        from hayhooks_app.cli.common import open_store
        from hayhooks_app.cli.server_link import serving_container
        from hayhooks_app.config import Settings

        if args.records_to and Path(args.records_to).is_dir() and any(Path(args.records_to).iterdir()):
            print_error(f"{args.records_to} is not empty; copy the records into a new or empty directory.")
            return EXIT_FAILED
        container = serving_container()
        settings = container.settings if container is not None else Settings.from_env()
        source = open_store(settings.indexing_pipeline if container is not None else args.pipeline)
        target = target_store(store_definition(args.profile), args.to_qdrant, args.collection)
        bar = None
        if not args.no_progress:
            from tqdm import tqdm

            bar = tqdm(unit="chunk", desc="migrating", file=sys.stderr, disable=None)

        def progress(done: int, total: int) -> None:
            if bar is not None:
                bar.total = total
                bar.update(done - bar.n)

        # One point in time: writers wait (queries go on) while the points and the records are copied.
        hold = container.write_lock if container is not None else contextlib.nullcontext()
        try:
            with hold, source.writes_paused() as shard:
                report = migrate_store(
                    source, target, batch_size=args.batch_size, progress=progress, overwrite=args.overwrite
                )
                if args.records_to:
                    report["records"] = copy_state(settings.data_dir, args.records_to, shard)
        except (MigrationError, BackupError) as error:
            print_error(str(error))
            return EXIT_FAILED
        finally:
            if bar is not None:
                bar.close()
            target.close()
        lines = [
            f"migrated {report['points']} chunks into collection {report['collection']!r} at {args.to_qdrant}: "
            f"{report['copied']} copied, {report['skipped']} already there, {report['seconds']:.1f} s "
            f"({report['chunks_per_s'] or 0:.0f} chunks/s); counts verified for {len(report['tenants'])} tenant(s)"
        ]
        if args.records_to:
            lines.append(f"records copied to {args.records_to}: {', '.join(report['records'])}")
        print_result(args, report, "\n".join(lines))
        return EXIT_OK

    return run_guarded(args, action)


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add ``migrate --to-qdrant LOCATION [--collection C] [--records-to DIR]``."""
    parser = subparsers.add_parser(
        "migrate",
        parents=[common_options()],
        help="copy the embedded store into the Qdrant server profile's collection (no re-embedding)",
    )
    parser.add_argument(
        "--to-qdrant", required=True, metavar="LOCATION", help="Qdrant URL, or a folder for qdrant-client local mode"
    )
    parser.add_argument("--collection", help="collection name (default: the profile's, QDRANT_COLLECTION)")
    parser.add_argument(
        "--profile",
        default=PROFILE_PIPELINE,
        help=f"the server profile's indexing pipeline (default: {PROFILE_PIPELINE})",
    )
    parser.add_argument(
        "--records-to",
        metavar="DIR",
        help="also copy the records, keys and tag owners (every file but the shard) into this new data directory",
    )
    parser.add_argument("--batch-size", type=int, default=256, help="points per upsert (default: 256)")
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="upsert every point, also those a previous run copied (default: skip them, i.e. resume)",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.set_defaults(func=_migrate)
    return parser

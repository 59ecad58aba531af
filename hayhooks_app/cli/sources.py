"""
Sync declared sources into the index on demand: ``sourcebound sync [SOURCE] [--full]``.

```bash
sourcebound sync                     # every source in SOURCEBOUND_SOURCES
sourcebound sync handbook --full     # compare the whole tree, not just the commits since the last sync
sourcebound sync --sources sources.yml --json
```

Each source is fetched into its mirror under ``DATA_DIR/sources/`` and the difference since the
last indexed commit is indexed and invalidated (``components.services.source_sync``); the command
prints what changed. It opens the store, so run it while the server is stopped (a running server
syncs through its webhooks and its reconcile interval).

Exit codes: 0 every source synced; 1 a source failed (its last commit did not advance); 2 invalid
input (no or bad sources file, unknown source).

``register(subparsers)`` adds the ``sync`` command to the ``sourcebound`` CLI.
"""

import argparse
import os
import sys
from pathlib import Path

from hayhooks_app.cli.common import (
    EXIT_FAILED,
    EXIT_INVALID,
    EXIT_OK,
    common_options,
    print_error,
    print_result,
    run_guarded,
)


def _summary(name: str, report: dict) -> str:
    if "error" in report:
        return f"{name}: failed: {report['error']}"
    head = (report.get("to_commit") or "")[:12]
    if report.get("mode") == "unchanged":
        return f"{name}: unchanged at {head}"
    line = (
        f"{name}: {report['mode']} sync to {head}: {len(report['indexed'])} indexed, "
        f"{len(report['unchanged'])} unchanged, {len(report['removed'])} removed, "
        f"{len(report['rejected'])} rejected; {report['chunks_written']} chunks in {report['latency_ms'] / 1000:.1f} s"
    )
    return line + "".join(f"\n  rejected {path}: {reason}" for path, reason in sorted(report["rejected"].items()))


def _sync(args: argparse.Namespace) -> int:
    def action() -> int:
        from components.services.document_lifecycle import invalidate
        from components.services.indexing_service import IndexingService
        from components.services.source_config import SourceConfigError, load_sources
        from components.services.source_sync import SourceSyncer
        from components.stores.sync_state import SYNC_STATE_FILE, SyncState

        sources_file = args.sources or os.environ.get("SOURCEBOUND_SOURCES", "").strip()
        if not sources_file:
            print_error("no sources file: set SOURCEBOUND_SOURCES or pass --sources FILE")
            return EXIT_INVALID
        try:
            sources = load_sources(sources_file)
        except SourceConfigError as error:
            print_error(str(error))
            return EXIT_INVALID
        if args.source and args.source not in sources:
            print_error(f"no source named {args.source!r} in {sources_file}; declared: {', '.join(sources) or 'none'}")
            return EXIT_INVALID
        data_dir = Path(os.environ.get("SOURCEBOUND_DATA_DIR", "").strip() or "./data").resolve()
        service = IndexingService.from_yaml(args.pipeline)
        state = SyncState(data_dir / SYNC_STATE_FILE)
        syncer = SourceSyncer(
            sources,
            state,
            data_dir / "sources",
            index_streams=service.index_streams,
            invalidate=lambda tenant, ids, reason: invalidate(service.document_store, tenant, ids, reason=reason),
            max_file_bytes=service.max_file_bytes,
            batch_files=args.batch_files,
        )
        try:
            names = [args.source] if args.source else list(sources)
            reports = {}
            for name in names:
                try:
                    reports[name] = syncer.sync(name, full=args.full)
                except Exception as error:  # report every source; the failed one keeps its last commit
                    reports[name] = {"source": name, "error": str(error)}
        finally:
            state.close()
            service.close()
        print_result(args, reports, "\n".join(_summary(name, report) for name, report in reports.items()))
        return EXIT_FAILED if any("error" in report for report in reports.values()) else EXIT_OK

    return run_guarded(args, action)


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add ``sync [SOURCE] [--full] [--sources FILE]``."""
    parser = subparsers.add_parser(
        "sync", parents=[common_options()], help="sync declared git sources into the index (SOURCEBOUND_SOURCES)"
    )
    parser.add_argument("source", nargs="?", help="one source's name (default: every source)")
    parser.add_argument("--full", action="store_true", help="compare the whole tree (a full reconcile)")
    parser.add_argument("--batch-files", type=int, default=64, help="files per pipeline run (default: 64)")
    parser.add_argument("--sources", help="the sources YAML file (default: SOURCEBOUND_SOURCES)")
    parser.set_defaults(func=_sync)
    return parser


if __name__ == "__main__":  # pragma: no cover - python -m hayhooks_app.cli.sources
    from hayhooks_app.cli import main

    sys.exit(main(["sync", *sys.argv[1:]]))

"""
Sync declared sources into the index on demand: ``sourcebound sync [SOURCE] [--full]``, and crawl the RAG
Standard's start URLs: ``sourcebound crawl [URL...]`` (``make crawl``).

```bash
sourcebound sync                     # every source in SOURCEBOUND_SOURCES
sourcebound sync handbook --full     # compare the whole tree, not just the commits since the last sync
sourcebound sync docs-site           # re-crawl a web source (conditional requests; --full: unconditional)
sourcebound sync --sources sources.yml --json
sourcebound crawl                    # RAG_CRAWL_START_URLS into tenant RAG_CRAWL_TENANT_ID (default: default)
```

A git source is fetched into its mirror under ``DATA_DIR/sources/`` and the difference since the last indexed
commit is indexed and invalidated (``components.services.source_sync``); a web source is crawled
(``components.services.web_source_sync``); the command prints what changed. Without a server it opens the store
itself; beside a running server it runs in the server (``hayhooks_app.cli.server_link``): a source the server
declares too is synced as one of its jobs (after any job of that source already running), any other through the
server's services.

Exit codes: 0 every source synced; 1 a source failed (its last commit did not advance); 2 invalid
input (no or bad sources file, unknown source, no start URLs).

``register(subparsers)`` adds the ``sync`` and ``crawl`` commands to the ``sourcebound`` CLI.
"""

import argparse
import os
import sys
from pathlib import Path
from typing import Any

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
    if report.get("type") == "web":
        line = (
            f"{name}: {report['mode']} of {report['pages_requested']} page(s): {len(report['indexed'])} indexed, "
            f"{len(report['unchanged'])} unchanged ({report['not_modified']} not modified), "
            f"{len(report['removed'])} removed, {len(report['rejected'])} rejected, "
            f"{len(report['skipped']) + report['skipped_more']} skipped; "
            f"{report['chunks_written']} chunks in {report['latency_ms'] / 1000:.1f} s"
        )
        details = [*(f"removed {url}: {why}" for url, why in report["removed"].items()),
                   *(f"rejected {url}: {why}" for url, why in report["rejected"].items()),
                   *(f"skipped {url}: {why}" for url, why in report["skipped"].items())]  # fmt: skip
        if report["skipped_more"]:
            details.append(f"... and {report['skipped_more']} more skipped")
        return line + "".join(f"\n  {detail}" for detail in details)
    head = (report.get("to_commit") or "")[:12]
    if report.get("mode") == "unchanged":
        return f"{name}: unchanged at {head}"
    line = (
        f"{name}: {report['mode']} sync to {head}: {len(report['indexed'])} indexed, "
        f"{len(report['unchanged'])} unchanged, {len(report['removed'])} removed, "
        f"{len(report['rejected'])} rejected; {report['chunks_written']} chunks in {report['latency_ms'] / 1000:.1f} s"
    )
    return line + "".join(f"\n  rejected {path}: {reason}" for path, reason in sorted(report["rejected"].items()))


def _run_syncs(args: argparse.Namespace, sources: dict, names: list[str]) -> dict[str, dict[str, Any]]:
    """Sync ``names`` here (the store opened by this process) or in the running server; one report each."""
    from components.services.source_sync import SourceSyncer
    from components.stores.sync_state import SYNC_STATE_FILE, SyncState
    from hayhooks_app.cli.server_link import serving_container

    container = serving_container()
    reports: dict[str, dict[str, Any]] = {}
    if container is not None:
        from hayhooks_app.webhooks import running_source_jobs

        jobs = running_source_jobs()
        data_dir = container.settings.data_dir
        index_streams, max_bytes = container.requests.index_streams, container.indexing.max_file_bytes

        def invalidate(tenant, ids, reason):
            return container.requests.invalidate(tenant, ids, reason=reason)

        close = None
    else:
        from components.services.document_lifecycle import invalidate as lifecycle_invalidate
        from components.services.indexing_service import IndexingService

        jobs = None
        data_dir = Path(os.environ.get("SOURCEBOUND_DATA_DIR", "").strip() or "./data").resolve()
        service = IndexingService.from_yaml(args.pipeline)
        index_streams, max_bytes, close = service.index_streams, service.max_file_bytes, service.close

        def invalidate(tenant, ids, reason):
            return lifecycle_invalidate(service.document_store, tenant, ids, reason=reason)

    state = SyncState(data_dir / SYNC_STATE_FILE)
    syncer = SourceSyncer(
        sources, state, data_dir / "sources", index_streams=index_streams, invalidate=invalidate,
        max_file_bytes=max_bytes, batch_files=args.batch_files,
    )  # fmt: skip
    try:
        for name in names:
            try:
                if jobs is not None and jobs.sources.get(name) == sources[name]:
                    job = jobs.run_and_wait(name, "cli", full=args.full)
                    reports[name] = job["result"] if job["status"] == "succeeded" else {
                        "source": name, "error": job.get("error") or f"the job ended {job['status']}"
                    }  # fmt: skip
                else:
                    reports[name] = syncer.sync(name, full=args.full)
            except Exception as error:  # report every source; the failed one keeps its last commit
                reports[name] = {"source": name, "error": str(error)}
    finally:
        state.close()
        if close is not None:
            close()
    return reports


def _print_reports(args: argparse.Namespace, reports: dict[str, dict[str, Any]]) -> int:
    print_result(args, reports, "\n".join(_summary(name, report) for name, report in reports.items()))
    return EXIT_FAILED if any("error" in report for report in reports.values()) else EXIT_OK


def _sync(args: argparse.Namespace) -> int:
    def action() -> int:
        from components.services.source_config import SourceConfigError, load_sources

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
        return _print_reports(args, _run_syncs(args, sources, [args.source] if args.source else list(sources)))

    return run_guarded(args, action)


# Options of ``crawl`` and the environment variables they stand for.
CRAWL_OPTIONS = (
    ("--allowed-domains", "allowed_domains", "RAG_ALLOWLIST_DOMAINS"),
    ("--max-pages", "max_pages", "RAG_MAX_PAGES"),
    ("--max-depth", "max_depth", "RAG_CRAWL_MAX_DEPTH"),
    ("--tenant", "tenant", "RAG_CRAWL_TENANT_ID"),
    ("--tags", "tags", "RAG_CRAWL_TAGS"),
)


def _crawl_argv(args: argparse.Namespace, argv: list[str]) -> list[str]:
    """The ``crawl`` arguments with this shell's ``RAG_*`` settings made explicit (the server has its own env)."""
    carried = list(argv)
    for option, dest, variable in CRAWL_OPTIONS:
        if getattr(args, dest) is None and os.environ.get(variable, "").strip():
            carried += [option, os.environ[variable].strip()]
    if not args.urls and os.environ.get("RAG_CRAWL_START_URLS", "").strip():
        carried += ["--", *(url.strip() for url in os.environ["RAG_CRAWL_START_URLS"].split(",") if url.strip())]
    return carried


def _crawl(args: argparse.Namespace) -> int:
    def action() -> int:
        from components.services.source_config import SourceConfigError, crawl_source

        env = dict(os.environ)
        env.update({variable: str(getattr(args, dest)) for _, dest, variable in CRAWL_OPTIONS
                    if getattr(args, dest) is not None})  # fmt: skip
        try:
            source = crawl_source(env, args.urls or None)
        except SourceConfigError as error:
            print_error(str(error))
            return EXIT_INVALID
        return _print_reports(args, _run_syncs(args, {source.name: source}, [source.name]))

    return run_guarded(args, action)


def register_crawl(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add ``crawl [URL...] [--full]``."""
    parser = subparsers.add_parser(
        "crawl", parents=[common_options()],
        help="crawl RAG_CRAWL_START_URLS (or the URLs given) inside RAG_ALLOWLIST_DOMAINS into the index",
    )  # fmt: skip
    parser.add_argument("urls", nargs="*", metavar="URL", help="start URLs (default: RAG_CRAWL_START_URLS)")
    parser.add_argument("--full", action="store_true", help="request every page unconditionally")
    parser.add_argument("--batch-files", type=int, default=64, help="pages per pipeline run (default: 64)")
    for option, dest, variable in CRAWL_OPTIONS:
        parser.add_argument(option, dest=dest, help=f"default: {variable}")
    parser.set_defaults(func=_crawl, forwarded_argv=_crawl_argv)
    return parser


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add ``sync [SOURCE] [--full] [--sources FILE]``."""
    register_crawl(subparsers)
    parser = subparsers.add_parser(
        "sync", parents=[common_options()], help="sync declared sources into the index (SOURCEBOUND_SOURCES)"
    )
    parser.add_argument("source", nargs="?", help="one source's name (default: every source)")
    parser.add_argument(
        "--full", action="store_true", help="compare the whole tree (git); request every page unconditionally (web)"
    )
    parser.add_argument("--batch-files", type=int, default=64, help="files per pipeline run (default: 64)")
    parser.add_argument("--sources", help="the sources YAML file (default: SOURCEBOUND_SOURCES)")
    parser.set_defaults(func=_sync)
    return parser


if __name__ == "__main__":  # pragma: no cover - python -m hayhooks_app.cli.sources
    from hayhooks_app.cli import main

    sys.exit(main(["sync", *sys.argv[1:]]))

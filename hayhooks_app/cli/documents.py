"""
The document commands of the ``sourcebound`` command line: index files and manage the document lifecycle.

```bash
sourcebound index docs/ handbook.pdf --tenant acme --tags hr,handbook [--scope user --user-id alice]
sourcebound invalidate --tenant acme doc-1a2b3c doc-4d5e6f --reason upstream_taint --cascade-id cascade-123
sourcebound taint --tenant acme doc-1a2b3c          # --undo clears the flag; `verify` works alike
sourcebound delete --tenant acme                     # everything of the tenant (records, tag owners, keys too)
sourcebound delete --user u-alice [--tenant acme]    # a user's private documents, log rows and user keys
sourcebound stats [--tenant acme] [--json]
```

Every command takes ``--data-dir`` (default ``SOURCEBOUND_DATA_DIR`` or ``./data``) and ``--pipeline`` (default
``indexing``, i.e. ``pipelines/indexing.yml``; the store is the one that YAML names). ``--json`` prints the
result as JSON. Deleting goes through the erasure service (``components.services.erasure_service``), as
``/delete_tenant/run`` does.
"""

import argparse
import os
import sys

from hayhooks_app.cli.common import (
    EXIT_FAILED,
    EXIT_INVALID,
    EXIT_OK,
    common_options,
    open_store,
    print_error,
    print_result,
    run_guarded,
)

# ----------------------------------------------------------------------- index


def _index(args: argparse.Namespace) -> int:
    def action() -> int:
        from components.services.indexing_service import IndexingService
        from hayhooks_app.cli.server_link import serving_container

        container = serving_container()
        if container is not None:
            service = container.indexing  # in the server: its loaded pipeline and store
        else:
            if os.environ.get("SOURCEBOUND_TORCH_THREADS"):
                from components.runtime.offline import set_torch_threads

                set_torch_threads()
            from transformers.utils import logging as transformers_logging

            transformers_logging.disable_progress_bar()
            service = IndexingService.from_yaml(args.pipeline)
        files, skipped = service.collect_files(args.paths)
        if skipped and not args.json:
            print(f"skipping {len(skipped)} file(s) of unsupported types inside folders", file=sys.stderr)
        bar = None
        if not args.no_progress:
            from tqdm import tqdm

            bar = tqdm(total=len(files), unit="file", desc="indexing", file=sys.stderr, disable=None)

        def progress(done: int, total: int) -> None:
            if bar is not None:
                bar.update(done - bar.n)

        try:
            result = service.index_files(
                args.paths,
                tenant_id=args.tenant,
                tags=args.tags,
                scope=args.scope,
                user_id=args.user_id,
                project_id=args.project_id,
                force=args.force,
                batch_size=args.batch_size,
                progress=progress,
            )
        finally:
            if bar is not None:
                bar.close()
        lines = []
        counts = {"indexed": 0, "unchanged": 0, "error": 0}
        for entry in result["documents"]:
            counts[entry["status"]] = counts.get(entry["status"], 0) + 1
            where = entry.get("source_uri") or entry.get("document_name") or ""
            line = f"{entry['status']:<9} {entry['document_id']}  {where}  ({entry['chunks']} chunks)"
            lines.append(line + (f": {entry['error']}" if entry.get("error") else ""))
        lines.append(
            f"{counts['indexed']} indexed, {counts['unchanged']} unchanged, {counts['error']} failed; "
            f"{result['chunks_written']} chunks written in {result['latency_ms'] / 1000:.1f} s"
        )
        print_result(args, result, "\n".join(lines))
        return EXIT_FAILED if counts["error"] else EXIT_OK

    return run_guarded(args, action)


def register_index(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add ``index PATH... --tenant T --tags a,b``."""
    parser = subparsers.add_parser(
        "index", parents=[common_options()], help="index files and folders (recursively) for a tenant"
    )
    parser.add_argument(
        "paths", nargs="+", help="files and folders (.txt, .md, .html, .pdf, .docx, .pptx, .xlsx, .csv, .yaml)"
    )
    parser.add_argument("--tenant", required=True, help="tenant_id owning the documents")
    parser.add_argument("--tags", required=True, help="comma-separated tags (at least one)")
    parser.add_argument("--scope", default="tenant", choices=("tenant", "user", "project"), help="default: tenant")
    parser.add_argument("--user-id", help="owner, required with --scope user")
    parser.add_argument("--project-id", help="project, required with --scope project")
    parser.add_argument("--force", action="store_true", help="re-index documents whose content is unchanged")
    parser.add_argument("--batch-size", type=int, default=16, help="files per pipeline run (default: 16)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.set_defaults(func=_index)
    return parser


# ------------------------------------------------------------------- lifecycle


def _invalidate(args: argparse.Namespace) -> int:
    def action() -> int:
        from components.services.document_lifecycle import invalidate

        result = invalidate(open_store(args.pipeline), args.tenant, args.document_ids, args.reason, args.cascade_id)
        text = f"invalidated {result['invalidated']} document(s), removed {result['chunks_removed']} chunk(s)"
        if result["not_found"]:
            text += f"; not found for tenant {args.tenant}: {', '.join(result['not_found'])}"
        print_result(args, result, text)
        return EXIT_OK

    return run_guarded(args, action)


def register_invalidate(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add ``invalidate --tenant T DOC_ID... [--reason R] [--cascade-id C]``."""
    parser = subparsers.add_parser("invalidate", parents=[common_options()], help="remove documents from the index")
    parser.add_argument("document_ids", nargs="+", metavar="DOC_ID", help="document_id values")
    parser.add_argument("--tenant", required=True, help="tenant_id owning the documents")
    parser.add_argument("--reason", help="why, e.g. upstream_taint")
    parser.add_argument("--cascade-id", help="cascade this invalidation belongs to")
    parser.set_defaults(func=_invalidate)
    return parser


def _flag_command(flag: str):
    def command(args: argparse.Namespace) -> int:
        def action() -> int:
            from components.services.document_lifecycle import set_flags

            value = not args.undo
            updated = set_flags(open_store(args.pipeline), args.tenant, args.document_ids, **{flag: value})
            result = {
                "tenant_id": args.tenant,
                "document_ids": args.document_ids,
                flag: value,
                "chunks_updated": updated,
            }
            print_result(args, result, f"{flag}={str(value).lower()} on {updated} chunk(s)")
            return EXIT_OK if updated else EXIT_FAILED

        return run_guarded(args, action)

    return command


def _register_flag(
    subparsers: argparse._SubParsersAction, name: str, flag: str, help_text: str
) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(name, parents=[common_options()], help=help_text)
    parser.add_argument("document_ids", nargs="+", metavar="DOC_ID", help="document_id values")
    parser.add_argument("--tenant", required=True, help="tenant_id owning the documents")
    parser.add_argument("--undo", action="store_true", help=f"set {flag}=false instead")
    parser.set_defaults(func=_flag_command(flag))
    return parser


def register_taint(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add ``taint --tenant T DOC_ID... [--undo]`` (no re-embedding; exit 1 when nothing matched)."""
    return _register_flag(subparsers, "taint", "tainted", "mark documents tainted (excluded by exclude_tainted)")


def register_verify(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add ``verify --tenant T DOC_ID... [--undo]`` (no re-embedding; exit 1 when nothing matched)."""
    return _register_flag(subparsers, "verify", "verified", "mark documents verified (kept by verified_only)")


def _delete(args: argparse.Namespace) -> int:
    def action() -> int:
        from components.services.erasure_service import erase_tenant, erase_user
        from components.stores.record_store import RecordStore
        from components.stores.tag_directory import TagDirectory
        from hayhooks_app.config import Settings

        settings = Settings.from_env()
        store = open_store(args.pipeline)
        records = RecordStore(settings.records_path)
        directory = TagDirectory(settings.data_dir / "tags.sqlite")
        try:
            if args.user is not None:
                removed = erase_user(
                    store, args.user, args.tenant, records=records, keys_file=settings.api_keys_file,
                    data_dir=settings.data_dir, directory=directory,
                )  # fmt: skip
                result, who = {"user_id": args.user, "tenant_id": args.tenant, "removed": removed}, f"user {args.user}"
            else:
                removed = erase_tenant(
                    store, args.tenant, records=records, directory=directory, keys_file=settings.api_keys_file,
                    data_dir=settings.data_dir,
                )  # fmt: skip
                result, who = (
                    {"tenant_id": args.tenant, "chunks_removed": removed["chunks"], "removed": removed},
                    args.tenant,
                )
        finally:
            records.close()
        summary = ", ".join(f"{count} {name.replace('_', ' ')}" for name, count in removed.items())
        print_result(args, result, f"removed {removed['chunks']} chunk(s) of {who} ({summary})")
        return EXIT_OK

    if args.tenant is None and args.user is None:
        print_error("delete needs --tenant T (everything of a tenant) or --user U [--tenant T] (a user's private data)")
        return EXIT_INVALID
    return run_guarded(args, action)


def register_delete(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """
    Add ``delete --tenant T`` (everything of a tenant) and ``delete --user U [--tenant T]`` (a user's private data).
    """
    parser = subparsers.add_parser(
        "delete", parents=[common_options()], help="delete everything of a tenant, or a user's private data"
    )
    parser.add_argument("--tenant", help="tenant_id to delete (with --user: only in this tenant)")
    parser.add_argument(
        "--user", help="user_id whose private documents, query-log rows, user keys, tag ownerships and email to delete"
    )
    parser.set_defaults(func=_delete)
    return parser


def _stats(args: argparse.Namespace) -> int:
    def action() -> int:
        from components.services.document_lifecycle import stats

        result = stats(open_store(args.pipeline), args.tenant)
        lines = [f"{result['chunks']} chunks in {result['documents']} documents ({result['tokens']} tokens)"]
        lines.append(f"tainted chunks: {result['tainted_chunks']}, verified chunks: {result['verified_chunks']}")
        lines += [
            f"  {tenant}: {row['documents']} documents, {row['chunks']} chunks"
            for tenant, row in result["tenants"].items()
        ]
        print_result(args, result, "\n".join(lines))
        return EXIT_OK

    return run_guarded(args, action)


def register_stats(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add ``stats [--tenant T]``."""
    parser = subparsers.add_parser("stats", parents=[common_options()], help="count chunks and documents")
    parser.add_argument("--tenant", help="only this tenant")
    parser.set_defaults(func=_stats)
    return parser


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the document commands, in the order ``sourcebound --help`` lists them."""
    for add in (register_index, register_invalidate, register_taint, register_verify, register_delete, register_stats):
        add(subparsers)

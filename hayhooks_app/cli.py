"""
The ``sourcebound`` command line: index files and manage the document lifecycle.

```bash
sourcebound index docs/ handbook.pdf --tenant acme --tags hr,handbook [--scope user --user-id alice]
sourcebound invalidate --tenant acme doc-1a2b3c doc-4d5e6f --reason upstream_taint --cascade-id cascade-123
sourcebound taint --tenant acme doc-1a2b3c          # --undo clears the flag; `verify` works alike
sourcebound delete --tenant acme                     # everything of the tenant (records, tag owners, keys too)
sourcebound delete --user u-alice [--tenant acme]    # a user's private documents, log rows and user keys
sourcebound stats [--tenant acme] [--json]
sourcebound backup /backups/2026-11-24               # see docs/operations.md, "Backup and restore"
sourcebound restore /backups/2026-11-24 [--replace]
sourcebound migrate --to-qdrant http://qdrant:6333   # into the server profile's collection
```

Beside a running server every command (except ``restore``) runs in that server, found through
``DATA_DIR/server.json`` (``hayhooks_app.server_link``), and prints the same output.

Every command takes ``--data-dir`` (default ``SOURCEBOUND_DATA_DIR`` or ``./data``)
and ``--pipeline`` (default ``indexing``, i.e. ``pipelines/indexing.yml``; the
store is the one that YAML names). ``--json`` prints the result as JSON.

Exit codes: 0 success; 1 an operation failed or a document ended in ``error``;
2 invalid input (nothing was written) or usage.

Commands are registered per module: each ``register(subparsers)`` adds one
command whose parsed namespace carries ``func``. Besides the commands here,
every module ``hayhooks_app/cli_<name>.py`` that defines ``register`` is added
automatically (``keys`` from ``cli_keys``, and e.g. a ``tags`` group), so a new
command needs no edit of this file.
"""

import argparse
import importlib
import json
import logging
import os
import pkgutil
import sys
from pathlib import Path
from typing import Any

import hayhooks_app

EXIT_OK, EXIT_FAILED, EXIT_INVALID = 0, 1, 2


# ---------------------------------------------------------------------- shared


def _common_options() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--data-dir", help="data folder (default: SOURCEBOUND_DATA_DIR or ./data)")
    common.add_argument(
        "--pipeline", default="indexing", help="indexing pipeline name or YAML path (default: indexing)"
    )
    common.add_argument("--json", action="store_true", help="print the result as JSON")
    common.add_argument("-v", "--verbose", action="store_true", help="log progress details")
    return common


def _environment(args: argparse.Namespace) -> None:
    from hayhooks_app.server_link import serving_container

    if serving_container() is not None:
        return  # a command forwarded to the server: its settings and logging stay the server's
    # Model loading draws its own progress bars; the CLI shows one bar, over files.
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    if getattr(args, "data_dir", None):
        os.environ["SOURCEBOUND_DATA_DIR"] = str(Path(args.data_dir).resolve())
    logging.basicConfig(
        level=logging.INFO if getattr(args, "verbose", False) else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )


def _print(args: argparse.Namespace, result: Any, text: str) -> None:
    print(json.dumps(result, indent=2, default=str) if args.json else text)


def _error(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)


def store_definition(pipeline: str = "indexing") -> dict[str, Any]:
    """
    The ``{"type", "init_parameters"}`` of the store the indexing pipeline writes to, from its YAML.

    :raises ValueError: If the YAML has no ``LifecycleDocumentWriter`` with a ``document_store``, or the store type
        is outside the allowed modules.
    """
    from components.services.pipeline_loader import ALLOWED_MODULES, load_pipeline_dict

    for definition in load_pipeline_dict(pipeline)["components"].values():
        store = definition.get("init_parameters", {}).get("document_store")
        if definition.get("type", "").endswith("LifecycleDocumentWriter") and store:
            module_name = store["type"].rpartition(".")[0]
            if not any(module_name == allowed or module_name.startswith(allowed + ".") for allowed in ALLOWED_MODULES):
                raise ValueError(f"The store type {store['type']} is outside the allowed modules {ALLOWED_MODULES}.")
            return store
    raise ValueError(f"Pipeline {pipeline} has no LifecycleDocumentWriter with a document_store.")


def open_store(pipeline: str = "indexing") -> Any:
    """
    The document store the indexing pipeline writes to, built from its YAML without loading any model; inside a
    running server (a command sent to it, see ``hayhooks_app.server_link``) the server's own store.

    :raises ValueError: As ``store_definition``.
    """
    from haystack.utils.type_serialization import thread_safe_import

    from hayhooks_app.server_link import serving_container

    container = serving_container()
    if container is not None:
        return container.store
    store = store_definition(pipeline)
    module_name, _, class_name = store["type"].rpartition(".")
    return getattr(thread_safe_import(module_name), class_name).from_dict(store)


def _run_guarded(args: argparse.Namespace, action) -> int:
    """Run a command body, turning the errors a user can cause into messages and exit codes."""
    from components.core.document_identity import IndexingValidationError
    from components.services.document_lifecycle import LifecycleError
    from components.services.pipeline_loader import PipelineConfigError

    _environment(args)
    try:
        return action()
    except (IndexingValidationError, LifecycleError) as error:
        _error(str(error))
        return EXIT_INVALID
    except PipelineConfigError as error:
        _error(str(error))
        return EXIT_FAILED
    except Exception as error:  # the store (e.g. a shard held by a running server) or a model failed
        from haystack.document_stores.errors import DocumentStoreError

        from components.services.indexing_service import IndexingError

        if isinstance(error, DocumentStoreError | IndexingError | OSError):
            _error(str(error))
            return EXIT_FAILED
        raise


# ----------------------------------------------------------------------- index


def _index(args: argparse.Namespace) -> int:
    def action() -> int:
        from components.services.indexing_service import IndexingService
        from hayhooks_app.server_link import serving_container

        container = serving_container()
        if container is not None:
            service = container.indexing  # in the server: its loaded pipeline and store
        else:
            if os.environ.get("SOURCEBOUND_TORCH_THREADS"):
                from components.core.runtime import set_torch_threads

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
        _print(args, result, "\n".join(lines))
        return EXIT_FAILED if counts["error"] else EXIT_OK

    return _run_guarded(args, action)


def register_index(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add ``index PATH... --tenant T --tags a,b``."""
    parser = subparsers.add_parser(
        "index", parents=[_common_options()], help="index files and folders (recursively) for a tenant"
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
        _print(args, result, text)
        return EXIT_OK

    return _run_guarded(args, action)


def register_invalidate(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add ``invalidate --tenant T DOC_ID... [--reason R] [--cascade-id C]``."""
    parser = subparsers.add_parser("invalidate", parents=[_common_options()], help="remove documents from the index")
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
            _print(args, result, f"{flag}={str(value).lower()} on {updated} chunk(s)")
            return EXIT_OK if updated else EXIT_FAILED

        return _run_guarded(args, action)

    return command


def _register_flag(
    subparsers: argparse._SubParsersAction, name: str, flag: str, help_text: str
) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(name, parents=[_common_options()], help=help_text)
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
        from components.core.tag_directory import TagDirectory
        from hayhooks_app.config import Settings
        from hayhooks_app.erasure import erase_tenant, erase_user
        from hayhooks_app.records import RecordStore

        settings = Settings.from_env()
        store = open_store(args.pipeline)
        records = RecordStore(settings.records_path)
        try:
            if args.user is not None:
                removed = erase_user(
                    store, args.user, args.tenant, records=records, keys_file=settings.api_keys_file,
                    data_dir=settings.data_dir,
                )  # fmt: skip
                result, who = {"user_id": args.user, "tenant_id": args.tenant, "removed": removed}, f"user {args.user}"
            else:
                directory = TagDirectory(settings.data_dir / "tags.sqlite")
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
        _print(args, result, f"removed {removed['chunks']} chunk(s) of {who} ({summary})")
        return EXIT_OK

    if args.tenant is None and args.user is None:
        _error("delete needs --tenant T (everything of a tenant) or --user U [--tenant T] (a user's private data)")
        return EXIT_INVALID
    return _run_guarded(args, action)


def register_delete(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """
    Add ``delete --tenant T`` (everything of a tenant) and ``delete --user U [--tenant T]`` (a user's private data).
    """
    parser = subparsers.add_parser(
        "delete", parents=[_common_options()], help="delete everything of a tenant, or a user's private data"
    )
    parser.add_argument("--tenant", help="tenant_id to delete (with --user: only in this tenant)")
    parser.add_argument("--user", help="user_id whose private documents, query-log rows and user keys to delete")
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
        _print(args, result, "\n".join(lines))
        return EXIT_OK

    return _run_guarded(args, action)


def register_stats(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add ``stats [--tenant T]``."""
    parser = subparsers.add_parser("stats", parents=[_common_options()], help="count chunks and documents")
    parser.add_argument("--tenant", help="only this tenant")
    parser.set_defaults(func=_stats)
    return parser


# ------------------------------------------------------------------------ main

COMMANDS = (register_index, register_invalidate, register_taint, register_verify, register_delete, register_stats)


def plugin_modules() -> list[str]:
    """Modules ``hayhooks_app.cli_<name>`` that add commands through ``register(subparsers)``."""
    return sorted(
        f"hayhooks_app.{module.name}"
        for module in pkgutil.iter_modules(hayhooks_app.__path__)
        if module.name.startswith("cli_")
    )


def build_parser() -> argparse.ArgumentParser:
    """The ``sourcebound`` parser with every command registered."""
    parser = argparse.ArgumentParser(
        prog="sourcebound", description="Index documents and manage the sourcebound index."
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for register in COMMANDS:
        register(subparsers)
    for name in plugin_modules():
        module = importlib.import_module(name)
        if callable(getattr(module, "register", None)):
            module.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    """
    Entry point of the ``sourcebound`` console script. When a server holds the data directory the command runs
    in it (``hayhooks_app.server_link``), else here; a command that sets ``local_only`` always runs here.
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser().parse_args(argv)
    if not getattr(args, "local_only", False):
        from hayhooks_app.server_link import forward_to_server

        code = forward_to_server(args, argv)
        if code is not None:
            return code
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())

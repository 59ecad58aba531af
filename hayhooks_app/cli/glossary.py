"""
Manage the per-tenant glossaries the query expander reads (docs/contract.md, "Glossary"): ``sourcebound glossary ...``.

```bash
sourcebound glossary load glossary.csv --tenant acme            # replace acme's glossary
sourcebound glossary show --tenant acme [--json]                 # the compiled vocabulary
sourcebound glossary remove --tenant acme
sourcebound glossary compile glossary.csv --output vocabulary.json   # compile only, no store
```

The CSV has a header row naming ``term``, ``aliases`` and optionally ``definition``; aliases are
separated by ``|`` or ``;``. The store is ``DATA_DIR/glossary.sqlite`` (``--data-dir``, default
``SOURCEBOUND_DATA_DIR`` or ``./data``), the file the pipelines' YAML gives the expander; a running
server applies a loaded glossary to the tenant's next query. Exit codes: 0 success; 1 a file could not
be used; 2 invalid input (nothing changed).
"""

import argparse
import json
import os
import sys
from pathlib import Path

from components.core.vocabulary import GlossaryError, compile_vocabulary, parse_glossary_csv, vocabulary_json
from components.stores.glossary_store import GLOSSARY_FILE, GlossaryStore
from components.stores.state import STATE_ERRORS

EXIT_OK, EXIT_FAILED, EXIT_INVALID = 0, 1, 2


def store_path(args: argparse.Namespace) -> Path:
    """The SQLite glossary file the command works on."""
    data_dir = getattr(args, "data_dir", None) or os.environ.get("SOURCEBOUND_DATA_DIR") or "./data"
    return Path(data_dir) / GLOSSARY_FILE


def _execute(args: argparse.Namespace) -> tuple[object, str]:
    command = args.glossary_command
    if command == "compile":
        vocabulary = compile_vocabulary(parse_glossary_csv(Path(args.file).read_text(encoding="utf-8")))
        text = vocabulary_json(vocabulary) + "\n"
        if args.output:
            Path(args.output).write_text(text, encoding="utf-8")
            return {"terms": len(vocabulary["terms"]), "output": args.output}, (
                f"compiled {len(vocabulary['terms'])} terms to {args.output}"
            )
        return vocabulary, text.rstrip("\n")
    store = GlossaryStore(store_path(args))
    if command == "load":
        result = store.load_csv(args.tenant, Path(args.file).read_text(encoding="utf-8"))
        return result, f"loaded {result['terms']} terms ({result['aliases']} aliases) for tenant {args.tenant}"
    if command == "show":
        vocabulary = store.vocabulary(args.tenant)
        if vocabulary is None:
            return {"tenant_id": args.tenant, "found": False}, f"tenant {args.tenant} has no glossary"
        lines = [f"{item['term']}: {', '.join(item['aliases']) or '(no aliases)'}" for item in vocabulary["terms"]]
        return {"tenant_id": args.tenant, "vocabulary": vocabulary}, "\n".join(lines)
    if command == "remove":
        removed = store.remove(args.tenant)
        return {"tenant_id": args.tenant, "removed": removed}, (
            f"glossary of tenant {args.tenant} {'removed' if removed else 'not found'}"
        )
    raise GlossaryError(f"unknown glossary command {command!r}")  # pragma: no cover - argparse restricts it


def _run(args: argparse.Namespace) -> int:
    try:
        result, text = _execute(args)
    except GlossaryError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_INVALID
    except (*STATE_ERRORS, OSError, UnicodeDecodeError) as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_FAILED
    print(json.dumps(result, indent=2) if args.json else text)
    return EXIT_OK


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """
    Add the ``glossary`` command group to an argparse CLI; the parsed namespace's ``func`` runs it.

    :param subparsers: The result of ``parser.add_subparsers()``.
    :returns: The ``glossary`` parser.
    """
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--data-dir", help="data folder holding glossary.sqlite (default: SOURCEBOUND_DATA_DIR or ./data)"
    )
    common.add_argument("--json", action="store_true", help="print the result as JSON")
    parser = subparsers.add_parser("glossary", help="manage per-tenant glossaries (query expansion)")
    commands = parser.add_subparsers(dest="glossary_command", required=True, metavar="GLOSSARY_COMMAND")
    load = commands.add_parser("load", parents=[common], help="replace a tenant's glossary with a CSV")
    load.add_argument("file", help="glossary CSV (term, aliases, optional definition)")
    load.add_argument("--tenant", required=True, help="the tenant whose glossary is replaced")
    show = commands.add_parser("show", parents=[common], help="print a tenant's compiled vocabulary")
    show.add_argument("--tenant", required=True)
    remove = commands.add_parser("remove", parents=[common], help="delete a tenant's glossary")
    remove.add_argument("--tenant", required=True)
    compile_parser = commands.add_parser("compile", parents=[common], help="compile a CSV to vocabulary.json")
    compile_parser.add_argument("file", help="glossary CSV")
    compile_parser.add_argument("--output", help="write vocabulary.json here (default: print it)")
    parser.set_defaults(func=_run)
    return parser

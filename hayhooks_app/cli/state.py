"""
The state layer from the command line: ``sourcebound state migrate``, ``state import``, ``state status``.

``migrate`` brings every store's tables to the newest Alembic revision (servers do it on start-up too): the
shared database of ``SOURCEBOUND_DATABASE_URL``, or without it the SQLite files of the data dir.
``import`` copies a data dir's SQLite files and keys file into the shared database (servers do it on start-up;
docs/operations.md "Replicas"). ``status`` prints each store's database and revision.

Usage:

```bash
SOURCEBOUND_DATABASE_URL=postgresql+psycopg://sourcebound@db/sourcebound sourcebound state migrate
sourcebound state import --data-dir ./data
```
"""

import argparse
import json
import os
import sys
from pathlib import Path

EXIT_OK, EXIT_FAILED = 0, 1


def _data_dir(args: argparse.Namespace) -> Path:
    return Path(args.data_dir or os.environ.get("SOURCEBOUND_DATA_DIR", "").strip() or "./data").resolve()


def _run(args: argparse.Namespace) -> int:
    from components.stores.state import STATE_ERRORS, STORES, database_url, open_state
    from components.stores.state.importer import STORE_FILES, import_data_dir
    from components.stores.state.migrations import current

    data_dir = _data_dir(args)
    try:
        if args.state_command == "import":
            if database_url() is None:
                print("error: set SOURCEBOUND_DATABASE_URL to the shared database to import into.", file=sys.stderr)
                return EXIT_FAILED
            from components.stores.key_store import SqlApiKeys
            from components.stores.record_store import RecordStore

            result = import_data_dir(data_dir)
            SqlApiKeys.open(data_dir / "api_keys.json")  # imports the keys file, once
            RecordStore(data_dir / "records.sqlite").close()  # takes over the query-hash key file
            print(json.dumps({"imported_rows": result}, indent=2))
            return EXIT_OK
        report = {}
        for store in STORES:
            if store not in STORE_FILES and database_url() is None:
                continue  # the embedded default keeps keys in api_keys.json
            database = open_state(store, data_dir / STORE_FILES[store][0] if store in STORE_FILES else None)
            report[store] = {"database": database.engine.url.render_as_string(), "revision": current(database, store)}
            database.dispose()
        print(json.dumps(report, indent=2))
    except (*STATE_ERRORS, OSError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the ``state`` command group (``migrate``, ``import``, ``status``)."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--data-dir", help="data folder (default: SOURCEBOUND_DATA_DIR or ./data)")
    parser = subparsers.add_parser("state", help="the state database: migrate, import a data dir, status")
    commands = parser.add_subparsers(dest="state_command", required=True)
    commands.add_parser("migrate", parents=[common], help="bring every store's tables to the newest revision")
    commands.add_parser(
        "import", parents=[common], help="copy the data dir's SQLite files and keys into SOURCEBOUND_DATABASE_URL"
    )
    commands.add_parser("status", parents=[common], help="each store's database and revision (migrates first)")
    parser.set_defaults(func=_run)
    return parser

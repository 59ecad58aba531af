"""
The ``sourcebound`` command line, one module per command group; every command works on the same stores and
services as the server.

| module | commands |
|---|---|
| ``documents`` | ``index``, ``invalidate``, ``taint``, ``verify``, ``delete``, ``stats`` |
| ``backup`` | ``backup``, ``restore`` (docs/operations.md, "Backup and restore") |
| ``events`` | ``events`` (the RabbitMQ consumer, docs/events.md) |
| ``glossary`` | ``glossary load/show/remove/compile`` |
| ``keys`` | ``keys add/list/revoke`` |
| ``migrate`` | ``migrate --to-qdrant URL`` |
| ``sources`` | ``sync`` (declared sources) |
| ``state`` | ``state migrate/import/status`` |
| ``tags`` | ``tags ...`` (the tag-owner directory) |

``common`` holds what the commands share (exit codes, options, the store); ``server_link`` runs a command
inside the server that holds the data directory (found through ``DATA_DIR/server.json``), which prints the
same output. Every module here that defines ``register(subparsers)`` adds its commands (``documents`` first,
then the others by name), so a new command group needs no edit of this file.

Exit codes: 0 success; 1 an operation failed or a document ended in ``error``; 2 invalid input (nothing was
written) or usage.
"""

import argparse
import importlib
import os
import pkgutil
import sys

FIRST_MODULE = "documents"
# Modules that add no commands: what the commands share, and the link to a running server.
SUPPORT_MODULES = frozenset({"common", "server_link"})


def command_modules() -> list[str]:
    """The modules ``hayhooks_app.cli.<name>`` that add commands through ``register(subparsers)``, in help order."""
    names = sorted(
        module.name
        for module in pkgutil.iter_modules(__path__)
        if not module.name.startswith("_") and module.name not in SUPPORT_MODULES
    )
    ordered = [FIRST_MODULE, *(name for name in names if name != FIRST_MODULE)]
    return [f"{__name__}.{name}" for name in ordered if name in names]


def build_parser() -> argparse.ArgumentParser:
    """The ``sourcebound`` parser with every command registered."""
    parser = argparse.ArgumentParser(
        prog="sourcebound", description="Index documents and manage the sourcebound index."
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in command_modules():
        module = importlib.import_module(name)
        if callable(getattr(module, "register", None)):
            module.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    """
    Entry point of the ``sourcebound`` console script. When a server holds the data directory the command runs
    in it (``hayhooks_app.cli.server_link``), else here; a command that sets ``local_only`` always runs here. A
    command whose defaults come from this shell's environment sets ``forwarded_argv(args, argv)``: the arguments
    that carry them to the server.
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser().parse_args(argv)
    if not getattr(args, "local_only", False):
        from hayhooks_app.cli.server_link import forward_to_server

        carry = getattr(args, "forwarded_argv", None)
        code = forward_to_server(args, carry(args, argv) if carry else argv)
        if code is not None:
            return code
    from components.runtime.data_dir import private_umask

    # What a command creates in the data dir is private, as the server's is (docs/operations.md, "Running the
    # service"); restored after, for callers that run commands in-process.
    previous = private_umask()
    try:
        return args.func(args)
    finally:
        os.umask(previous)

"""
What every ``sourcebound`` command shares: exit codes, the common options, output, the document store the
indexing pipeline names, and the mapping of the errors a user can cause to messages and exit codes.

Exit codes: 0 success; 1 an operation failed or a document ended in ``error``; 2 invalid input (nothing was
written) or usage.
"""

import argparse
import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

EXIT_OK, EXIT_FAILED, EXIT_INVALID = 0, 1, 2


def common_options() -> argparse.ArgumentParser:
    """The options of the document commands: ``--data-dir``, ``--pipeline``, ``--json``, ``-v``."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--data-dir", help="data folder (default: SOURCEBOUND_DATA_DIR or ./data)")
    common.add_argument(
        "--pipeline", default="indexing", help="indexing pipeline name or YAML path (default: indexing)"
    )
    common.add_argument("--json", action="store_true", help="print the result as JSON")
    common.add_argument("-v", "--verbose", action="store_true", help="log progress details")
    return common


def environment(args: argparse.Namespace) -> None:
    """Set the data dir and logging of a command run here (a command forwarded to the server keeps the server's)."""
    from hayhooks_app.cli.server_link import serving_container

    if serving_container() is not None:
        return  # a command forwarded to the server: its settings and logging stay the server's
    # Model loading draws its own progress bars; the CLI shows one bar, over files.
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    if getattr(args, "data_dir", None):
        os.environ["SOURCEBOUND_DATA_DIR"] = str(Path(args.data_dir).resolve())
    data_dir = Path(os.environ.get("SOURCEBOUND_DATA_DIR", "").strip() or "./data")
    if data_dir.is_dir():
        from components.runtime.data_dir import tighten_data_dir

        tighten_data_dir(data_dir)
    logging.basicConfig(
        level=logging.INFO if getattr(args, "verbose", False) else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )


def print_result(args: argparse.Namespace, result: Any, text: str) -> None:
    """Print ``result`` as JSON with ``--json``, else ``text``."""
    print(json.dumps(result, indent=2, default=str) if args.json else text)


def print_error(message: str) -> None:
    """``error: <message>`` on stderr."""
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
    running server (a command sent to it, see ``hayhooks_app.cli.server_link``) the server's own store.

    :raises ValueError: As ``store_definition``.
    """
    from haystack.utils.type_serialization import thread_safe_import

    from hayhooks_app.cli.server_link import serving_container

    container = serving_container()
    if container is not None:
        return container.store
    store = store_definition(pipeline)
    module_name, _, class_name = store["type"].rpartition(".")
    return getattr(thread_safe_import(module_name), class_name).from_dict(store)


def run_guarded(args: argparse.Namespace, action) -> int:
    """Run a command body, turning the errors a user can cause into messages and exit codes."""
    from components.core.document_identity import IndexingValidationError
    from components.services.document_lifecycle import LifecycleError
    from components.services.pipeline_loader import PipelineConfigError

    environment(args)
    try:
        return action()
    except (IndexingValidationError, LifecycleError) as error:
        print_error(str(error))
        return EXIT_INVALID
    except PipelineConfigError as error:
        print_error(str(error))
        return EXIT_FAILED
    except Exception as error:  # the store (e.g. a shard held by a running server) or a model failed
        from haystack.document_stores.errors import DocumentStoreError

        from components.services.indexing_service import IndexingError

        if isinstance(error, DocumentStoreError | IndexingError | OSError):
            print_error(str(error))
            return EXIT_FAILED
        raise

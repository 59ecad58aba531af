"""
``python -m hayhooks_app serve`` (what ``make serve`` runs), ``python -m hayhooks_app keys ...`` and
``python -m hayhooks_app events`` (the event consumer, docs/events.md).

``serve`` reads the settings from the environment (``HAYHOOKS_HOST``/``HAYHOOKS_PORT``, default
127.0.0.1:1416; ``SOURCEBOUND_DATA_DIR``, default ``./data``; see ``README.md``),
keeps torch out of the process (embeddings run on ONNX Runtime), and serves the Hayhooks app with uvicorn. On first
start it indexes the bundled sample corpus.
"""

import argparse
import os
import sys

from hayhooks_app.cli import events as cli_events
from hayhooks_app.cli import keys as cli_keys


def build_app(args: argparse.Namespace):
    """
    Prepare the process and build the served app as ``serve`` does (without serving it), so benchmarks profile
    exactly what is served.

    :returns: ``(app, settings, banner)``.
    :raises ConfigError: On invalid settings.
    """
    if args.host:
        os.environ["HAYHOOKS_HOST"] = args.host
    if args.port:
        os.environ["HAYHOOKS_PORT"] = str(args.port)
    if args.data_dir:
        os.environ["SOURCEBOUND_DATA_DIR"] = args.data_dir

    from components.runtime.offline import keep_torch_out
    from hayhooks_app.memory import limit_malloc_arenas

    limit_malloc_arenas()  # before any thread allocates (docs/operations.md, "Memory")

    # Before anything imports Haystack, which would import torch (docs/embeddings.md).
    torch_excluded = keep_torch_out()
    from components.embedders.onnx_embedding import resolve_threads
    from components.services.pipeline_copy import install_fast_input_copy
    from hayhooks_app.config import Settings
    from hayhooks_app.tracing import add_trace_ids, configure_tracing

    settings = Settings.from_env()
    tracing_on = configure_tracing() is not None  # the OTEL_* variables; None: off
    # Query text, conversations and documents: nobody else on the machine reads the data dir, including files
    # created later by SQLite, Qdrant Edge or git (docs/operations.md, "Running the service").
    from components.runtime.data_dir import secure_data_dir

    secure_data_dir(settings.data_dir)
    threads = resolve_threads(None)
    # Haystack's per-component input copies were half of a /search request's CPU (bench/README.md, "Profile").
    install_fast_input_copy()

    from hayhooks.settings import settings as hayhooks_settings

    # Our modules log through the stdlib: route them into Hayhooks' (loguru) log, as uvicorn's are.
    # Done here, not in create_application, so that building the app in tests leaves logging alone.
    for name in ("hayhooks_app", "components"):
        if name not in hayhooks_settings.intercepted_loggers:
            hayhooks_settings.intercepted_loggers.append(name)

    from hayhooks_app.app import create_application
    from hayhooks_app.log_redaction import install_log_redaction

    # Hayhooks would log each request body (query text) at INFO; with tracing, each line names its trace.
    install_log_redaction(*([add_trace_ids] if tracing_on else []))

    app = create_application(settings)
    # The serving process keeps its start-up objects for its lifetime: a full collection need not walk them.
    app.state.freeze_start_up_objects = True
    banner = (
        f"sourcebound: serving on http://{settings.host}:{settings.port} "
        f"(data dir {settings.data_dir}, auth mode {settings.auth_mode}, "
        f"embedder onnxruntime threads {threads}{', torch not loaded' if torch_excluded else ''})"
    )
    return app, settings, banner


def serve(args: argparse.Namespace) -> int:
    from hayhooks_app.config import ConfigError

    try:
        app, settings, banner = build_app(args)
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(banner, flush=True)
    run_server(app, settings.host, settings.port)
    return 0


# The serving stack, named rather than left to uvicorn's "auto" (which falls back to the slower asyncio and h11 when
# a wheel is missing): uvloop's event loop and httptools' HTTP parser. Responses of the
# wrappers' routes are serialised by pydantic-core straight to JSON bytes (FastAPI's dump_json path).
SERVER_LOOP = "uvloop"
SERVER_HTTP = "httptools"


def run_server(app, host: str, port: int) -> None:
    """Serve ``app`` as Hayhooks' ``run_app`` does (its logging, no uvicorn log config, its graceful shutdown), on
    :data:`SERVER_LOOP` and :data:`SERVER_HTTP`."""
    import uvicorn
    from hayhooks.server.logger import intercept_stdlib_logging
    from hayhooks.settings import settings as hayhooks_settings

    intercept_stdlib_logging(
        hayhooks_settings.intercepted_loggers,
        access_log_excluded_path_prefixes=hayhooks_settings.access_log_excluded_path_prefixes,
    )
    uvicorn.run(
        app, host=host, port=port, log_config=None, loop=SERVER_LOOP, http=SERVER_HTTP,
        timeout_graceful_shutdown=hayhooks_settings.graceful_shutdown_timeout,
    )  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hayhooks_app", description="sourcebound's Hayhooks application.")
    commands = parser.add_subparsers(dest="command", required=True)
    serve_parser = commands.add_parser("serve", help="serve the REST and OpenAI-compatible API")
    serve_parser.add_argument("--host", help="bind address (default HAYHOOKS_HOST or 127.0.0.1)")
    serve_parser.add_argument("--port", type=int, help="port (default HAYHOOKS_PORT or 1416)")
    serve_parser.add_argument("--data-dir", help="data folder (default SOURCEBOUND_DATA_DIR or ./data)")
    serve_parser.set_defaults(func=serve)
    cli_keys.register(commands)
    cli_events.register(commands)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())

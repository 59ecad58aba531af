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


def serve(args: argparse.Namespace) -> int:
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
    from hayhooks_app.config import ConfigError, Settings
    from hayhooks_app.tracing import add_trace_ids, configure_tracing

    try:
        settings = Settings.from_env()
        tracing_on = configure_tracing() is not None  # the OTEL_* variables; None: off
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    threads = resolve_threads(None)
    # Haystack's per-component input copies were half of a /search request's CPU (bench/README.md, "Profile").
    install_fast_input_copy()

    from hayhooks.server.app import run_app
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
    print(
        f"sourcebound: serving on http://{settings.host}:{settings.port} "
        f"(data dir {settings.data_dir}, auth mode {settings.auth_mode}, "
        f"embedder onnxruntime threads {threads}{', torch not loaded' if torch_excluded else ''})",
        flush=True,
    )
    run_app(app, host=settings.host, port=settings.port)
    return 0


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

"""
The Hayhooks application: Hayhooks' FastAPI app with our PipelineWrappers, plus ``/health``,
``/metrics``, the multipart upload route, JSON errors and the request guard.

Hayhooks deploys the wrappers in ``hayhooks_app/pipelines/`` (one folder each: ``index``,
``search``, ``rag``, ``enrich``, ``invalidate``, ``delete_tenant``, ``flags``) at start-up, sequentially,
as ``POST /{name}/run``; the ``rag`` wrapper also serves ``POST /v1/chat/completions``. The specifications'
contracts (the DATS ``/api/v1/*``, the plan's ``/rag/query``, ``/rag/enrich``, ``/rag/ingest``, the RAG Standard's
``GET /search`` and ``POST /chat``) are route modules in ``hayhooks_app/routes/`` over the same services.
Every wrapper shares one ``ServiceContainer`` (one set of pipelines loaded from YAML, one
store, one records database).

The search, enrich and rag wrappers are also MCP tools at ``/mcp`` (Streamable HTTP) and ``/sse``
on the same port (``hayhooks_app.mcp_server``), with the identity taken as on REST.

Start-up order (the lifespan): build the container (load and warm the YAML pipelines; a store
held by another process fails here, naming the path) -> Hayhooks deploys the wrappers -> check
every expected wrapper deployed -> index the sample corpus into an empty store and load the tag
directory -> prune old records (and again every ``SOURCEBOUND_RECORDS_PRUNE_INTERVAL_SECONDS``).

The web page (``hayhooks_app/web/``: plain HTML, CSS and JavaScript, no build step) is served at
``GET /`` with its assets under ``/web/``; it talks to the API above (docs/api.md, "Web page").

Hayhooks' runtime deploy/undeploy routes (which would let any caller run code), its draw route
(which calls an external renderer), its file-upload stub and the Responses API (no wrapper
implements it) are removed.

Usage:

```python
from hayhooks_app.app import create_application

app = create_application()       # settings from the environment
```
"""

import asyncio
import logging
import os
import re
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, FastAPI, File, Form, Request, UploadFile
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import FileResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from pydantic import ValidationError

from components.services.document_catalog import stale_counts
from components.services.erasure_service import purge_due
from components.stores.sentence_vector_cache import prune_sentence_vectors
from hayhooks_app.browser_guard import BrowserGuard
from hayhooks_app.cli import build_parser
from hayhooks_app.cli.server_link import LocalAdmin, admin_router
from hayhooks_app.config import EXPECTED_PIPELINES, Settings
from hayhooks_app.container import ServiceContainer, configure
from hayhooks_app.errors import ApiError, describe_validation_errors, install_error_handlers, map_exception
from hayhooks_app.events.outbox_relay import start_relay
from hayhooks_app.events.routed_questions import publish_routed_questions
from hayhooks_app.events.runner import start_beside_server
from hayhooks_app.mcp_server import create_mcp_app, mount_mcp
from hayhooks_app.memory import freeze_start_up_objects, return_freed_memory
from hayhooks_app.metrics import PROMETHEUS_CONTENT_TYPE, metrics
from hayhooks_app.middleware import CHAT_MODEL_NAME, RequestGuard, SSEDoneTerminator
from hayhooks_app.oidc.provider import IdentityProviderUnavailable
from hayhooks_app.routes.auth import auth_routes
from hayhooks_app.routes.console import console_routes
from hayhooks_app.routes.conversations import conversation_routes
from hayhooks_app.routes.dats_api import dats_routes
from hayhooks_app.routes.feedback import feedback_routes
from hayhooks_app.routes.glossary import glossary_routes
from hayhooks_app.routes.insights import insight_routes
from hayhooks_app.routes.rag_standard import standard_routes
from hayhooks_app.routes.service_plan import plan_routes
from hayhooks_app.schemas import IndexResult, UploadForm
from hayhooks_app.tracing import configure_tracing, instrument_app, shutdown_tracing
from hayhooks_app.webhooks import install_sources, queue_status

logger = logging.getLogger(__name__)

WRAPPERS_DIR = Path(__file__).resolve().parent / "pipelines"
WEB_DIR = Path(__file__).resolve().parent / "web"
# The page loads only its own files and talks only to this origin; document text is rendered as text,
# and this policy is the second line should a bug ever render it as HTML (no inline script runs).
WEB_PAGE_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src {connect}; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
WEB_PAGE_HEADERS = {
    "Content-Security-Policy": WEB_PAGE_CSP.format(connect="'self'"),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}
REMOVED_HAYHOOKS_PATHS = frozenset(
    {
        "/deploy-yaml", "/deploy_files", "/undeploy/{pipeline_name}",  # runtime code deployment
        "/draw/{pipeline_name}",  # renders through an external service
        "/v1/files", "/files",  # a stub that stores nothing
        "/v1/responses", "/responses",  # the Responses API: no wrapper implements it (would answer 501)
    }
)  # fmt: skip
_SAFE_FILENAME = re.compile(r"[^A-Za-z0-9._-]+")


def configure_hayhooks(settings: Settings) -> None:
    """Point Hayhooks at our wrappers, with sequential start-up deploy and closed side doors."""
    from hayhooks.settings import StartupDeployStrategy
    from hayhooks.settings import settings as hayhooks_settings

    hayhooks_settings.pipelines_dir = os.environ.get("HAYHOOKS_PIPELINES_DIR") or str(WRAPPERS_DIR)
    # Parallel start-up deploy of wrappers failed on our stack; sequential works
    # (docs/operations.md, "Running the service").
    hayhooks_settings.startup_deploy_strategy = StartupDeployStrategy.SEQUENTIAL
    hayhooks_settings.host = settings.host
    hayhooks_settings.port = settings.port
    # Defaults that suit a tenant-data service; each stays overridable through HAYHOOKS_* variables.
    if "HAYHOOKS_TRACING_ENABLED" not in os.environ:
        # No trace API: then no point capturing every component span of every request either.
        hayhooks_settings.tracing_enabled = False
        hayhooks_settings.tracing_include_haystack_spans = False
    if "HAYHOOKS_MONITORING_ENABLED" not in os.environ:
        hayhooks_settings.monitoring_enabled = False
    if "HAYHOOKS_CORS_ALLOW_ORIGINS" not in os.environ:
        # Browsers on other origins must not read tenant data from a trusted-mode server.
        hayhooks_settings.cors_allow_origins = []
        hayhooks_settings.cors_allow_methods = ["GET", "POST"]
        hayhooks_settings.cors_allow_headers = ["Authorization", "Content-Type"]


def _check_deployed(app: FastAPI) -> None:
    registry = app.state.pipeline_registry
    missing = [name for name in EXPECTED_PIPELINES if registry.get(name) is None]
    if missing:
        raise RuntimeError(
            f"Pipelines {missing} did not deploy from {WRAPPERS_DIR}; the log above has Hayhooks' reason."
        )


def _run_routes_first(app: FastAPI) -> None:
    """
    Put the wrappers' ``POST /{name}/run`` routes first. FastAPI tries routes in order, and Hayhooks adds these when it
    deploys, after ~20 others (and the routers included in them); no other route shares their paths, so the order
    changes nothing but how soon a request finds its route.
    """
    paths = {f"/{name}/run" for name in app.state.pipeline_registry.get_names()}
    routes = app.router.routes
    first = [route for route in routes if getattr(route, "path", None) in paths]
    routes[:] = first + [route for route in routes if getattr(route, "path", None) not in paths]
    if hasattr(app.router, "_mark_routes_changed"):
        app.router._mark_routes_changed()


async def _refresh_stale_documents(container: ServiceContainer) -> None:
    """
    The ``rag_stale_documents`` gauge from one scan of the store's chunk metadata (docs/contract.md, "Feedback and
    knowledge gaps"); a failure is logged and the gauge keeps its last values.
    """
    try:
        counts = await run_in_threadpool(stale_counts, container.store, container.stale_rule)
    except Exception:
        logger.exception("Counting stale documents failed.")
        return
    metrics.set_stale_documents(counts)


async def _prune_periodically(container: ServiceContainer) -> None:
    settings = container.settings
    await _refresh_stale_documents(container)  # here, not in start-up: a large store must not delay serving
    while True:
        await asyncio.sleep(settings.records_prune_interval_s)
        await _refresh_stale_documents(container)
        try:
            removed = await run_in_threadpool(container.prune)
            if any(removed.values()):
                logger.info("Pruned records past their retention: %s", removed)
            # Documents another replica deleted take their sentence vectors out of this one's cache too.
            vectors = await run_in_threadpool(prune_sentence_vectors, settings.data_dir, container.store)
            if vectors:
                logger.info("Pruned %d sentence vectors of deleted documents.", vectors)
        except Exception:
            logger.exception("Pruning the records failed.")
        await _purge_deleted(container)


async def _purge_deleted(container: ServiceContainer) -> None:
    # Invalidated and replaced chunks leave the store's files within SOURCEBOUND_PURGE_AFTER_SECONDS
    # (docs/contract.md, "Deletion"); erasures purged at once.
    try:
        report = await run_in_threadpool(purge_due, container.store, container.settings.purge_after_s)
        if report:
            logger.info("Purged deleted chunks from the store's files: %s", report)
    except Exception:
        logger.exception("Purging deleted chunks from the store failed; the next pruning run tries again.")


def _extend_lifespan(app: FastAPI, container: ServiceContainer, mcp_app, admin: LocalAdmin) -> None:
    hayhooks_lifespan = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        await run_in_threadpool(container.build)
        async with hayhooks_lifespan(app), mcp_app.router.lifespan_context(mcp_app):
            _check_deployed(app)
            _run_routes_first(app)
            from hayhooks_app.bootstrap import bootstrap

            summary = await run_in_threadpool(bootstrap, container)
            if summary["corpus"] or summary["tags_loaded"]:
                logger.info("First start: %s", summary)
            await run_in_threadpool(container.prune)
            await _purge_deleted(container)
            return_freed_memory()  # start-up freed tens of MB the heap would keep
            if getattr(app.state, "freeze_start_up_objects", False):  # set by `serve` (hayhooks_app.__main__)
                logger.info("Start-up objects out of the cyclic collector's passes: %d", freeze_start_up_objects())
            pruning = asyncio.create_task(_prune_periodically(container))
            events = start_beside_server(container)  # SOURCEBOUND_EVENTS_CONSUMER (docs/events.md)
            routed = publish_routed_questions(container)  # SOURCEBOUND_EVENTS_URL (docs/events.md)
            relay = start_relay(container)  # SOURCEBOUND_EVENTS_PUBLISH: the outbox to the broker
            admin.publish()  # the CLI now finds this server (hayhooks_app.cli.server_link)
            try:
                yield
            finally:
                admin.withdraw()
                pruning.cancel()
                if events is not None:
                    await run_in_threadpool(events.stop)
                if routed is not None:
                    container.gaps.publish = None
                    await run_in_threadpool(routed.close)
                if relay is not None:
                    await run_in_threadpool(relay.stop)
        container.close()
        shutdown_tracing()

    app.router.lifespan_context = lifespan


def _routes(container: ServiceContainer) -> APIRouter:
    router = APIRouter()

    @router.get("/health", tags=["service"], summary="Service health: store, embedder, generator")
    async def health(request: Request) -> JSONResponse:
        report = await run_in_threadpool(container.health.report)
        report["embedding_queue"] = queue_status(request.app)  # source sync jobs (hayhooks_app.webhooks)
        if container.oidc is not None:
            report["identity_provider"] = container.oidc.keys.status()
        return JSONResponse(report, status_code=503 if report["status"] == "unhealthy" else 200)

    @router.get("/health/ready", tags=["service"], summary="Readiness: 503 unless every route can answer")
    async def ready() -> JSONResponse:
        # docs/api.md, "GET /health": a load balancer sends no traffic while the chat model is missing.
        report = await run_in_threadpool(container.health.report)
        body = {"ready": report["ready"], "status": report["status"], "reason": report["reason"]}
        return JSONResponse(body, status_code=200 if report["ready"] else 503)

    @router.get("/metrics", tags=["service"], summary="Prometheus metrics", response_class=Response)
    async def prometheus_metrics() -> Response:
        return Response(await run_in_threadpool(metrics.render), media_type=PROMETHEUS_CONTENT_TYPE)

    @router.post("/index/upload", tags=["pipelines"], summary="Index uploaded files (multipart)")
    async def index_upload(
        request: Request,
        files: Annotated[
            list[UploadFile],
            File(description="Files to index (.txt, .md, .html, .pdf, .docx, .pptx, .xlsx, .csv, .yaml)."),
        ],
        tenant_id: Annotated[str, Form(description="Owning tenant.")],
        tags: Annotated[list[str], Form(description="Access tags; repeat the field or separate with commas.")],
        scope: Annotated[str, Form(description="tenant, user, project or public.")] = "tenant",
        user_id: Annotated[str | None, Form(description="Owner for scope=user.")] = None,
        project_id: Annotated[str | None, Form(description="Project for scope=project.")] = None,
        document_id: Annotated[str | None, Form(description="Document id (only with a single file).")] = None,
        document_name: Annotated[str | None, Form(description="Display name (only with a single file).")] = None,
        user_tags: Annotated[
            list[str] | None, Form(description='The caller\'s tags (docs/api.md, "Write rule"); optional.')
        ] = None,
    ) -> dict:
        try:
            form = UploadForm.model_validate(
                {
                    "tenant_id": tenant_id,
                    "tags": _form_list(tags),
                    "scope": scope,
                    "user_id": user_id or None,
                    "project_id": project_id or None,
                    "document_id": document_id or None,
                    "document_name": document_name or None,
                    "files": len(files),
                    "user_tags": _form_list(user_tags) or None,
                }
            )
        except ValidationError as error:
            raise ApiError(422, "validation_error", describe_validation_errors(error.errors())) from error
        from hayhooks_app.identity import write_authority

        named = form.user_tags is not None  # trusted mode: the caller is named by its tags (docs/contract.md)
        writer = write_authority(
            container.settings.auth_mode,
            container.credentials,
            request.headers,
            tenant_ids={form.tenant_id},
            user_tags=form.user_tags,
            user_id=form.user_id if named else None,
            project_id=form.project_id if named else None,
        )
        writer.check_documents([form.stream_meta()])
        result = await _index_uploads(container, files, form, writer)
        return {"result": IndexResult.model_validate(result).model_dump(exclude_none=True)}

    @router.get("/v1/models", tags=["openai"], summary="Models served for chat completions")
    @router.get("/models", tags=["openai"], include_in_schema=False)
    async def list_models() -> dict:
        created = int(container.started_at)
        return {
            "object": "list",
            "data": [
                {
                    "id": CHAT_MODEL_NAME,
                    "name": CHAT_MODEL_NAME,
                    "object": "model",
                    "created": created,
                    "owned_by": "sourcebound",
                }
            ],
        }

    return router


class _WebAssets(StaticFiles):
    """The page's assets, with the page's own security headers (a script or style is a document too)."""

    def __init__(self, container: ServiceContainer, **kwargs) -> None:
        super().__init__(**kwargs)
        self.container = container

    async def get_response(self, path: str, scope) -> Response:
        response = await super().get_response(path, scope)
        response.headers.update(await web_page_headers(self.container))
        return response


async def web_page_headers(container: ServiceContainer) -> dict[str, str]:
    """
    The page's headers. With OpenID Connect sign-in the page exchanges its authorization code at the provider's
    token endpoint, so that one origin joins ``connect-src``; nothing else widens (docs/contract.md, "Web page").
    """
    oidc = container.oidc
    if oidc is None:
        return WEB_PAGE_HEADERS
    try:
        origin = await run_in_threadpool(oidc.token_origin)
    except IdentityProviderUnavailable:  # the page says so when it tries to sign in
        logger.warning("The identity provider's token endpoint is unknown; the page's CSP allows only itself.")
        origin = None
    if origin is None:
        return WEB_PAGE_HEADERS
    return {**WEB_PAGE_HEADERS, "Content-Security-Policy": WEB_PAGE_CSP.format(connect=f"'self' {origin}")}


def _mount_web_page(app: FastAPI, container: ServiceContainer) -> None:
    """
    The page at ``GET /``, the operators' console at ``GET /admin`` and their assets under ``/web/``: no path
    overlaps an API route. The console is a page like the other: it holds no data and calls only the public API,
    whose checks decide what it shows (docs/api.md, "The console").
    """

    @app.api_route("/", methods=["GET", "HEAD"], include_in_schema=False)
    async def web_page() -> FileResponse:
        headers = await web_page_headers(container)
        return FileResponse(WEB_DIR / "index.html", media_type="text/html", headers=headers)

    @app.api_route("/admin", methods=["GET", "HEAD"], include_in_schema=False)
    async def console_page() -> FileResponse:
        headers = await web_page_headers(container)
        return FileResponse(WEB_DIR / "admin.html", media_type="text/html", headers=headers)

    app.mount("/web", _WebAssets(container, directory=WEB_DIR), name="web")


def _form_list(values: list[str] | None) -> list[str]:
    """A repeated form field whose values may also be comma-separated."""
    return [item.strip() for value in values or () for item in value.split(",") if item.strip()]


async def _index_uploads(container: ServiceContainer, files: list[UploadFile], form: UploadForm, writer) -> dict:
    """
    Index uploads as byte streams. Each keeps its (sanitised) file name as ``document_name``, so its
    ``document_id`` derives from tenant + name: uploading a changed file again replaces it.
    """
    from haystack.dataclasses import ByteStream

    from components.core.document_identity import source_type_for_path

    limit = container.settings.limits.max_upload_bytes
    streams, total = [], 0
    for index, upload in enumerate(files):
        content = await upload.read()
        total += len(content)
        if total > limit:
            raise ApiError(
                413, "payload_too_large", f"The uploaded files exceed {limit} bytes (SOURCEBOUND_MAX_UPLOAD_BYTES)."
            )
        name = _SAFE_FILENAME.sub("_", Path(upload.filename or "").name).strip("._") or f"upload-{index}"
        meta = {**form.stream_meta(), "document_name": form.document_name or name}
        source_type = source_type_for_path(name)
        if source_type:
            meta["source_type"] = source_type  # the file's type, whatever display name was given
        else:
            meta["document_name"] = name  # so the "unsupported file type" error names the file
        streams.append(ByteStream(data=content, meta=meta))
    try:
        return await run_in_threadpool(container.requests.index_streams, streams, writer.key_id, writer.rule)
    except Exception as error:
        mapped = map_exception(error)
        if mapped is None:
            raise
        raise mapped from error


def _remove_routes(router: APIRouter, paths: frozenset[str]) -> None:
    """Drop routes with these paths from a router and the routers it includes (FastAPI includes lazily)."""
    kept = []
    for route in router.routes:
        included = getattr(route, "original_router", None)
        if included is not None:
            _remove_routes(included, paths)
            if not included.routes:
                continue
        elif getattr(route, "path", None) in paths:
            continue
        kept.append(route)
    if len(kept) != len(router.routes):
        router.routes[:] = kept
        if hasattr(router, "_mark_routes_changed"):
            router._mark_routes_changed()


def create_application(settings: Settings | None = None) -> FastAPI:
    """
    Build the application: Hayhooks' app, our routes, errors, middleware and lifespan.

    :param settings: Application settings; read from the environment when omitted.
    :returns: The FastAPI app (serve it with uvicorn; pipelines load when its lifespan starts).
    """
    settings = settings or Settings.from_env()
    # The YAML files read the data dir through ${SOURCEBOUND_DATA_DIR}; give them the resolved one.
    os.environ["SOURCEBOUND_DATA_DIR"] = str(settings.data_dir)
    configure_hayhooks(settings)
    # Before Hayhooks builds its app: it then finds Haystack's tracer set and does not install its own.
    tracing_on = configure_tracing() is not None
    container = configure(settings)

    from hayhooks import create_app

    app = create_app()
    app.title = "sourcebound"
    app.description = "Grounded, cited, access-controlled RAG over Haystack pipelines, served by Hayhooks."
    _remove_routes(app.router, REMOVED_HAYHOOKS_PATHS)
    hayhooks_routes = list(app.router.routes)
    app.router.routes[:] = []
    app.include_router(_routes(container))
    app.include_router(auth_routes(container))
    app.include_router(conversation_routes(container))
    app.include_router(glossary_routes(container))
    app.include_router(feedback_routes(container))
    app.include_router(insight_routes(container))
    app.include_router(console_routes(container))
    # The specifications' own contracts (docs/api.md, "Specification routes"): thin routes over the same services.
    app.include_router(dats_routes(container))
    app.include_router(plan_routes(container))
    app.include_router(standard_routes(container))
    admin = LocalAdmin(settings.data_dir, settings.host, settings.port)
    app.include_router(admin_router(container, admin, build_parser))
    # Ours first, so our /v1/models answers before Hayhooks' (which lists every wrapper).
    app.router.routes.extend(hayhooks_routes)
    # MCP tools over the same wrappers, on the same port (hayhooks_app.mcp_server).
    mcp_app = create_mcp_app(app.state.pipeline_registry, settings.allowed_hosts.mcp_security())
    mount_mcp(app, mcp_app)
    _mount_web_page(app, container)
    install_error_handlers(app)
    app.add_middleware(SSEDoneTerminator)
    app.add_middleware(RequestGuard, limits=settings.limits)
    # Outermost: a foreign Host or a cross-site write is refused before anything reads it (browser_guard).
    app.add_middleware(BrowserGuard, hosts=settings.allowed_hosts)
    instrument_app(app, enabled=tracing_on)
    _extend_lifespan(app, container, mcp_app, admin)
    install_sources(app, container)  # webhooks, sync jobs and the reconcile interval (hayhooks_app.webhooks)
    app.state.sourcebound = container
    return app

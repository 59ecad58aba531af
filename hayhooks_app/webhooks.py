"""
Webhooks that keep declared sources current, and the sync jobs they start (docs/api.md, "Webhooks").

* ``POST /webhooks/github/{source}``: a GitHub push event. The ``X-Hub-Signature-256`` header must be
  ``sha256=`` and the hex HMAC-SHA256 of the raw body under the source's ``webhook_secret``, compared in
  constant time (401 otherwise, nothing queued). ``ping`` answers 200. A push to the source's branch
  that touches a path the source indexes answers 202 with a job id at once and syncs in the background;
  other branches, events and paths answer 200 ``ignored``. A delivery id seen before is a no-op (200,
  ``duplicate``, the first delivery's job id).
* ``POST /webhooks/sync``: a generic trigger. ``Authorization: Bearer <JWT>`` signed HS256 with
  ``SOURCEBOUND_WEBHOOK_JWT_SECRET`` or RS256 with the key in ``SOURCEBOUND_WEBHOOK_JWT_PUBLIC_KEY``;
  ``aud`` must be ``SOURCEBOUND_WEBHOOK_JWT_AUDIENCE``, ``exp`` is required, ``nbf`` and ``iat`` are
  checked when present; the ``source`` claim names the source, ``full: true`` asks for a full reconcile,
  and a ``jti`` seen before is a no-op.
* ``GET /jobs/{job_id}``: a job's status and report; in ``api_key`` mode an ``admin`` key of the
  source's tenant (another tenant's job is a 404).

Bodies over ``SOURCEBOUND_WEBHOOK_MAX_BYTES`` get 413, unknown sources 404. The tenant, tags and
scope of what gets indexed come from the sources file only; nothing in a webhook body is used but the
branch, the changed paths and the delivery id (docs/contract.md, "Sources").

``install_sources(app, container)`` adds the routes, starts the jobs with the app and registers the
``embedding_queue`` figures for ``/health`` and ``/metrics``.
"""

import hashlib
import hmac
import json
import logging
import os
from collections.abc import Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import APIRouter, FastAPI, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse
from prometheus_client import Gauge

from components.runtime.environment import ConfigError, env_int
from components.services.source_jobs import SourceJobs, declared_sources
from components.services.source_sync import SourceNotFoundError
from hayhooks_app.errors import ApiError, forbidden, unauthorized
from hayhooks_app.identity import authenticate, authorize_admin
from hayhooks_app.metrics import metrics

logger = logging.getLogger(__name__)

DEFAULT_WEBHOOK_MAX_BYTES = 5 * 1024 * 1024
DEFAULT_JWT_AUDIENCE = "sourcebound"
# GitHub lists at most 20 commits in a push event: past that the path filter cannot see every path.
_GITHUB_MAX_LISTED_COMMITS = 20
_EMPTY_QUEUE = {"jobs_pending": 0, "files_pending": 0, "chunks_pending": 0}
_gauges: dict[str, Gauge] = {}
_current: dict[str, SourceJobs | None] = {"jobs": None}


def queue_status(app: FastAPI) -> dict[str, int]:
    """The ``embedding_queue`` figures (zeros when no sources are declared)."""
    jobs = getattr(app.state, "source_jobs", None)
    return jobs.queue_status() if jobs is not None else dict(_EMPTY_QUEUE)


def _register_gauges() -> None:
    """``rag_embedding_queue_{jobs,files,chunks}_pending`` on the application's registry, once per process."""
    if _gauges:
        return
    for key, text in (
        ("jobs_pending", "Source sync jobs queued or running."),
        ("files_pending", "Files of the running source sync still to index."),
        ("chunks_pending", "Chunks still to index, estimated from the running sync's bytes."),
    ):
        gauge = Gauge(f"rag_embedding_queue_{key}", text, registry=metrics.registry)
        gauge.set_function(lambda key=key: (_current["jobs"].queue_status() if _current["jobs"] else _EMPTY_QUEUE)[key])
        _gauges[key] = gauge


async def _read_limited(request: Request, limit: int) -> bytes:
    too_large = ApiError(
        413, "payload_too_large", f"The webhook body exceeds {limit} bytes (SOURCEBOUND_WEBHOOK_MAX_BYTES)."
    )
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise too_large
    body = bytearray()
    async for piece in request.stream():
        body.extend(piece)
        if len(body) > limit:
            raise too_large
    return bytes(body)


def github_signature_valid(secret: str, body: bytes, header: str | None) -> bool:
    """Whether ``header`` is ``sha256=`` and the HMAC-SHA256 of ``body`` under ``secret`` (constant-time compare)."""
    if not header or not header.startswith("sha256="):
        return False
    expected = "sha256=" + hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected.encode("ascii"), header.strip().encode("ascii", "replace"))


def _pushed_paths(payload: Mapping[str, Any]) -> set[str] | None:
    """Every path a push event lists, or ``None`` when the event cannot list them all (then nothing is filtered)."""
    commits = payload.get("commits")
    if (
        payload.get("forced")
        or not isinstance(commits, list)
        or not commits
        or len(commits) >= _GITHUB_MAX_LISTED_COMMITS
    ):
        return None
    paths: set[str] = set()
    for commit in commits:
        if not isinstance(commit, Mapping):
            return None
        for key in ("added", "modified", "removed"):
            listed = commit.get(key) or []
            if not isinstance(listed, list):
                return None
            paths.update(str(path) for path in listed)
    return paths


class JwtVerifier:
    """
    Checks the generic webhook's JWT: the algorithm picks the key (HS256: the shared secret; RS256: the
    public key), so a token can never make the server verify an HMAC with the public key.
    """

    def __init__(self, secret: str | None, public_key: str | None, audience: str) -> None:
        self.keys = {alg: key for alg, key in (("HS256", secret), ("RS256", public_key)) if key}
        self.audience = audience

    @classmethod
    def from_env(cls) -> "JwtVerifier":
        key_file = os.environ.get("SOURCEBOUND_WEBHOOK_JWT_PUBLIC_KEY", "").strip()
        public_key = None
        if key_file:
            try:
                public_key = Path(key_file).read_text(encoding="utf-8")
            except OSError as error:
                raise ConfigError(f"SOURCEBOUND_WEBHOOK_JWT_PUBLIC_KEY: cannot read {key_file}: {error}") from error
        return cls(
            os.environ.get("SOURCEBOUND_WEBHOOK_JWT_SECRET", "").strip() or None,
            public_key,
            os.environ.get("SOURCEBOUND_WEBHOOK_JWT_AUDIENCE", "").strip() or DEFAULT_JWT_AUDIENCE,
        )

    def claims(self, token: str) -> dict[str, Any]:
        """The verified claims; 401 naming the problem otherwise."""
        import jwt

        try:
            algorithm = jwt.get_unverified_header(token).get("alg")
        except jwt.PyJWTError as error:
            raise unauthorized(f"The token is not a JWT: {error}") from error
        key = self.keys.get(algorithm)
        if key is None:
            raise unauthorized(f"JWT algorithm {algorithm!r} is not accepted; use {' or '.join(self.keys)}.")
        try:
            return jwt.decode(
                token, key, algorithms=[algorithm], audience=self.audience,
                options={"require": ["exp", "aud"], "verify_iat": True}, leeway=30,
            )  # fmt: skip
        except jwt.PyJWTError as error:
            raise unauthorized(f"The token was refused: {error}") from error


def _router(app: FastAPI, container: Any, max_bytes: int, verifier: JwtVerifier) -> APIRouter:
    router = APIRouter(tags=["sources"])

    def jobs_or_404(source: str) -> SourceJobs:
        # One answer for an unknown name whether or not sources are declared, and it lists none of them: the
        # caller is not authenticated yet (the CLI, the operator's, lists them).
        unknown = ApiError(404, "not_found", f"No source named {source!r} is declared here (SOURCEBOUND_SOURCES).")
        jobs = app.state.source_jobs
        if jobs is None:
            raise unknown
        try:
            jobs.syncer.source(source)
        except SourceNotFoundError:
            raise unknown from None
        return jobs

    @router.post("/webhooks/github/{source}", summary="GitHub push webhook for a declared source", status_code=202)
    async def github_webhook(source: str, request: Request) -> JSONResponse:
        body = await _read_limited(request, max_bytes)
        jobs = jobs_or_404(source)
        config = jobs.syncer.source(source)
        if not config.webhook_secret:
            raise unauthorized(
                f"Source {source!r} has no webhook_secret in the sources file; GitHub webhooks are refused."
            )
        if not github_signature_valid(config.webhook_secret, body, request.headers.get("x-hub-signature-256")):
            raise unauthorized("Missing or wrong X-Hub-Signature-256: it must be sha256=HMAC-SHA256(body, secret).")
        event = request.headers.get("x-github-event", "")
        if event == "ping":
            return JSONResponse({"ok": True, "source": source, "event": "ping"}, status_code=200)
        if event != "push":
            return JSONResponse({"ignored": f"event {event!r} is not a push", "source": source}, status_code=200)
        delivery = request.headers.get("x-github-delivery", "").strip()
        if not delivery or len(delivery) > 200:
            raise ApiError(400, "bad_request", "A push needs its X-GitHub-Delivery header (the delivery id).")
        try:
            payload = json.loads(body)
        except ValueError as error:
            raise ApiError(400, "bad_request", f"The push body is not JSON: {error}") from error
        if not isinstance(payload, Mapping):
            raise ApiError(400, "bad_request", "The push body must be a JSON object.")
        if payload.get("ref") != f"refs/heads/{config.branch}":
            return JSONResponse(
                {"ignored": f"push to {payload.get('ref')!r}, not refs/heads/{config.branch}", "source": source},
                status_code=200,
            )
        paths = _pushed_paths(payload)
        if paths is not None and not any(jobs.syncer.indexable(config, path) for path in paths):
            return JSONResponse({"ignored": "no pushed path is one this source indexes", "source": source}, 200)
        return await _queue_once(jobs, source, delivery, "github")

    @router.post("/webhooks/sync", summary="Sync a declared source (signed JWT)", status_code=202)
    async def sync_webhook(request: Request) -> JSONResponse:
        await _read_limited(request, max_bytes)
        if not verifier.keys:
            raise ApiError(
                404, "not_found",
                "POST /webhooks/sync is off: set SOURCEBOUND_WEBHOOK_JWT_SECRET or SOURCEBOUND_WEBHOOK_JWT_PUBLIC_KEY.",
            )  # fmt: skip
        header = request.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise unauthorized("Send the signed JWT as 'Authorization: Bearer <token>'.")
        claims = verifier.claims(token.strip())
        source = claims.get("source")
        if not isinstance(source, str) or not source:
            raise ApiError(400, "bad_request", "The token must name the source in its 'source' claim.")
        jobs = jobs_or_404(source)
        jti = claims.get("jti")
        delivery = f"jwt:{jti}" if isinstance(jti, str) and jti else None
        return await _queue_once(jobs, source, delivery, "jwt", full=claims.get("full") is True)

    @router.get("/sources", summary="The tenant's declared sources and their newest sync jobs (admin)")
    async def list_sources(request: Request, tenant_id: str | None = Query(None, description="The tenant.")) -> dict:
        tenant, _record = authorize_admin(
            container.settings.auth_mode, container.credentials, request.headers, tenant_id
        )
        jobs = app.state.source_jobs
        sources = await run_in_threadpool(jobs.sources_of, tenant) if jobs is not None else []
        return {"result": {"tenant_id": tenant, "sources": sources}}

    @router.get("/jobs/{job_id}", summary="A source sync job's status and report (admin)")
    async def job_status(job_id: str, request: Request) -> dict:
        jobs = app.state.source_jobs
        job = await run_in_threadpool(jobs.job, job_id) if jobs is not None else None
        if container.settings.auth_mode != "trusted":
            record = authenticate(container.credentials, request.headers)
            if "admin" not in record.permissions:
                raise forbidden("Job status needs an API key with the 'admin' permission.")
            if job is not None and job["tenant_id"] != record.tenant_id:
                job = None  # another tenant's job does not exist for this caller
        if job is None:
            raise ApiError(404, "not_found", f"No job {job_id!r}.")
        return job

    return router


async def _queue_once(
    jobs: SourceJobs, source: str, delivery: str | None, trigger: str, full: bool = False
) -> JSONResponse:
    if delivery is not None:
        previous = await run_in_threadpool(jobs.state.record_delivery, source, delivery, None)
        if previous is not None:
            return JSONResponse(
                {"duplicate": True, "delivery": delivery, "job_id": previous or None, "source": source}, status_code=200
            )
    try:
        job_id = await run_in_threadpool(jobs.submit, source, trigger, full)
    except Exception:
        if delivery is not None:  # not queued: a redelivery must not be taken for a duplicate
            await run_in_threadpool(jobs.state.forget_delivery, source, delivery)
        raise
    if delivery is not None:
        await run_in_threadpool(jobs.state.set_delivery_job, source, delivery, job_id)
    return JSONResponse({"job_id": job_id, "status": "queued", "source": source}, status_code=202)


def running_source_jobs() -> SourceJobs | None:
    """The sync jobs of the serving process (``None`` without sources or outside a server)."""
    return _current["jobs"]


def _source_jobs(container: Any) -> SourceJobs | None:
    """The sync jobs of ``SOURCEBOUND_SOURCES`` over the container's request service, or ``None`` without sources."""
    declared = declared_sources()
    if declared is None:
        return None
    sources, interval = declared
    return SourceJobs(
        sources,
        interval,
        container.settings.data_dir,
        index_streams=container.requests.index_streams,
        invalidate=container.requests.invalidate,
        max_file_bytes=container.indexing.max_file_bytes,
        retention_days=container.settings.records_retention_days,
    )


def install_sources(app: FastAPI, container: Any) -> None:
    """
    Add the webhook and job routes, run the source jobs with the app's lifespan (after the container is
    built, stopped before it closes) and register the ``embedding_queue`` gauges.
    """
    max_bytes = env_int("SOURCEBOUND_WEBHOOK_MAX_BYTES", DEFAULT_WEBHOOK_MAX_BYTES, 1024)
    verifier = JwtVerifier.from_env()
    app.state.source_jobs = None
    app.router.routes[:0] = _router(app, container, max_bytes, verifier).routes
    _register_gauges()
    previous = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        async with previous(app):
            jobs = _source_jobs(container)
            app.state.source_jobs = _current["jobs"] = jobs
            if jobs is not None:
                jobs.start()
                logger.info("Sources: %s (reconcile every %d s).", ", ".join(jobs.sources), jobs.reconcile_interval_s)
            try:
                yield
            finally:
                if jobs is not None:
                    await run_in_threadpool(jobs.stop)
                app.state.source_jobs = _current["jobs"] = None

    app.router.lifespan_context = lifespan

"""
The DATS RAG service API at ``/api/v1`` (docs/api.md, "DATS RAG API"), as its specification writes it:
``POST /query``, ``POST /embed``, ``DELETE /embeddings/{artifact_id}``, ``POST /embeddings/batch-invalidate`` and
``GET /health``. Thin routes over the same services as the rest of the API: a query is a search
(``pipelines/search.yml``), an embed is an index request, an invalidation removes documents by artifact id.

Where the specification's model meets ours (decided in docs/api.md):

* identity: ``api_key`` mode takes the key's tenant, tags and grants; trusted mode the request's own ``tenant_id``
  / ``user_tags`` (our fields beside the specification's) or the configured defaults;
* ``project_id`` and ``domain`` on a query are filters (only chunks of that project / domain), never a widening;
* ``filters`` default to ``verified_only: true, exclude_tainted: true`` (the specification's defaults; a key a
  client leaves out of ``filters`` keeps its default), and an embed is ``verified`` unless its metadata says
  ``false``: DATS indexes approved outputs;
* an artifact is a document: ``document_id`` is the ``artifact_id`` when that is a valid document id, else derived
  from it; ``artifact_id`` and ``provenance_id`` are stored on every chunk, and invalidation finds documents by
  ``artifact_id`` whatever their ``document_id``; a source without a ``provenance_id`` reports ``""``.
"""

import time
import uuid
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Body, Path, Query, Request
from fastapi.responses import JSONResponse
from pydantic import Field, StringConstraints, field_validator

from components.core.document_identity import document_id_for
from hayhooks_app.errors import ApiError, validation_error
from hayhooks_app.identity import resolve_spec_identity, resolve_spec_writer
from hayhooks_app.routes.spec_support import build_document, call, split_metadata
from hayhooks_app.schemas import LIMITS, Identifier, MetaValue, ShortText, StrictModel, UserTags, register_request_model
from hayhooks_app.webhooks import queue_status

CascadeId = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_.:-]{1,128}$")]
ArtifactId = Identifier

QUERY_EXAMPLE = {
    "query": "How to implement fibonacci in Python?",
    "project_id": "proj-123",
    "domain": "code-general",
    "max_tokens": 2000,
    "search_mode": "hybrid",
    "filters": {"verified_only": True, "exclude_tainted": True},
}
QUERY_RESPONSE_EXAMPLE = {
    "id": "query-550e8400e29b41d4",
    "query": "How to implement fibonacci in Python?",
    "context": "[SourceId: art-123:0]\n[Document: art-123]\n[Page: N/A] [Section: N/A]\n---\ndef fibonacci(n)...\n---",
    "sources": [
        {
            "artifact_id": "art-123",
            "provenance_id": "prov-456",
            "relevance_score": 0.92,
            "snippet": "def fibonacci(n: int) -> int:...",
            "source_id": "art-123:0",
            "document_id": "art-123",
        }
    ],
    "tokens_used": 1500,
    "search_mode": "hybrid",
    "metadata": {"vector_results": 3, "keyword_results": 2, "latency_ms": 250},
}
EMBED_EXAMPLE = {
    "content": "def fibonacci(n: int) -> int:\n    ...",
    "metadata": {
        "artifact_id": "art-789",
        "provenance_id": "prov-012",
        "task_id": "task-345",
        "project_id": "proj-123",
        "domain": "code-general",
        "doc_type": "output",
        "verified": True,
    },
}
EMBED_RESPONSE_EXAMPLE = {
    "id": "emb-550e8400e29b41d4",
    "artifact_id": "art-789",
    "status": "indexed",
    "chunks": 3,
    "tokens": 450,
    "latency_ms": 1200,
    "document_id": "art-789",
    "changed": True,
}
INVALIDATE_RESPONSE_EXAMPLE = {"artifact_id": "art-789", "removed_chunks": 3, "status": "invalidated"}
BATCH_EXAMPLE = {
    "artifact_ids": ["art-789", "art-790", "art-791"],
    "reason": "upstream_taint",
    "cascade_id": "cascade-123",
}
BATCH_RESPONSE_EXAMPLE = {"invalidated": 3, "chunks_removed": 9, "cascade_id": "cascade-123", "not_found": []}
HEALTH_RESPONSE_EXAMPLE = {
    "status": "healthy",
    "version": "1.0.0",
    "lightrag": {
        "status": "connected",
        "index_size": 15000,
        "embedding_model": "sentence-transformers/all-MiniLM-L6-v2",
    },
    "embedding_queue": {"pending": 5, "processing": 1},
}


def _example(value: dict[str, Any]) -> dict[int | str, dict[str, Any]]:
    return {200: {"content": {"application/json": {"example": value}}}}


class QueryFilters(StrictModel):
    """The specification's filters; a key left out keeps the specification's default (``true``)."""

    verified_only: bool = Field(True, description="Only verified chunks (default true).")
    exclude_tainted: bool = Field(True, description="Leave out tainted chunks (default true).")
    language: Annotated[str, StringConstraints(pattern=r"^[a-z]{2,3}$")] | None = Field(
        None, description="Ours: only chunks in this language (ISO 639 code)."
    )


class QueryRequest(StrictModel):
    """``POST /api/v1/query``: context for a query."""

    query: Annotated[str, StringConstraints(min_length=1, max_length=4000)] = Field(
        description="Natural language query."
    )
    project_id: Identifier | None = Field(None, description="Only chunks of this project (a filter).")
    domain: Identifier | None = Field(None, description="Only chunks of this domain (a filter).")
    max_tokens: int = Field(2000, ge=100, le=10000, description="Token budget of `context`.")
    search_mode: Literal["vector", "keyword", "hybrid"] = Field("hybrid", description="vector, keyword or hybrid.")
    filters: QueryFilters | None = Field(None, description="Default {verified_only: true, exclude_tainted: true}.")
    k: int | None = Field(None, ge=1, le=100, description="Ours: sources to return (default RAG_TOP_K, else 5).")
    tenant_id: Identifier | None = Field(None, description="Ours: the tenant (trusted mode; else the key's).")
    user_tags: UserTags | None = Field(None, description="Ours: the requester's tags (trusted mode).")
    user_id: Identifier | None = Field(None, description="Ours: the requester (sees its user-scoped documents).")

    model_config = {"json_schema_extra": {"examples": [QUERY_EXAMPLE]}}

    @field_validator("query")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip() or any(ord(char) < 32 and char not in "\t\n\r" for char in value):
            raise ValueError("must be non-blank text without control characters")
        return value


class EmbedRequest(StrictModel):
    """``POST /api/v1/embed``: index content for future retrieval."""

    content: Annotated[str, StringConstraints(min_length=10, max_length=LIMITS.max_document_chars)] = Field(
        description="The text to index (at least 10 characters)."
    )
    metadata: Annotated[dict[Annotated[str, StringConstraints(max_length=64)], MetaValue], Field(max_length=72)] = (
        Field(
            description="artifact_id (required), provenance_id, project_id, domain, verified (default true), any "
            "other key; ours: tenant_id, tags, document_id, document_name, source_uri."
        )
    )

    model_config = {"json_schema_extra": {"examples": [EMBED_EXAMPLE]}}


class BatchInvalidateRequest(StrictModel):
    """``POST /api/v1/embeddings/batch-invalidate``: invalidate artifacts (for a cascade)."""

    artifact_ids: Annotated[list[ArtifactId], Field(min_length=1, max_length=LIMITS.max_document_ids)] = Field(
        description="The artifacts whose embeddings are removed."
    )
    reason: ShortText | None = Field(None, description="Why (recorded; default upstream_taint).")
    cascade_id: CascadeId | None = Field(None, description="The cascade this belongs to (recorded, echoed).")
    tenant_id: Identifier | None = Field(None, description="Ours: the tenant (trusted mode; else the key's).")

    model_config = {"json_schema_extra": {"examples": [BATCH_EXAMPLE]}}


# The request guard checks these bodies strictly before the routes run, as every JSON route's.
register_request_model("/api/v1/query", QueryRequest)
register_request_model("/api/v1/embed", EmbedRequest)
register_request_model("/api/v1/embeddings/batch-invalidate", BatchInvalidateRequest)


def _source(result: dict[str, Any]) -> dict[str, Any]:
    """One DATS source from one search result; our own fields beside the specification's."""
    return {
        "artifact_id": result.get("artifact_id") or result["document_id"],
        "provenance_id": result.get("provenance_id") or "",
        "relevance_score": result["score"],
        "snippet": result["snippet"],
        "source_id": result["source_id"],
        "document_id": result["document_id"],
        "title": result.get("title"),
        "url": result.get("url"),
    }


def dats_routes(container: Any) -> APIRouter:
    """The ``/api/v1`` routes over the container's services."""
    router = APIRouter(prefix="/api/v1", tags=["DATS RAG API"])
    settings = container.settings

    @router.post("/query", summary="Query for relevant context", responses=_example(QUERY_RESPONSE_EXAMPLE))
    async def query(request: Request, body: Annotated[QueryRequest, Body(examples=[QUERY_EXAMPLE])]) -> dict:
        identity = resolve_spec_identity(
            settings, container.credentials, request.headers, tenant_id=body.tenant_id, user_tags=body.user_tags,
            user_id=body.user_id, project_id=body.project_id,
        )  # fmt: skip
        options = body.filters or QueryFilters()
        filters: dict[str, Any] = options.model_dump(exclude_none=True)
        for key in ("project_id", "domain"):
            if getattr(body, key) is not None:
                filters[key] = getattr(body, key)
        search = {"query": body.query, "search_mode": body.search_mode, "max_tokens": body.max_tokens}
        if body.k is not None:
            search["k"] = body.k
        result = await call(container.requests.search, {**search, "filters": filters}, identity)
        return {
            "id": result.get("query_id") or f"query-{uuid.uuid4().hex}",
            "query": body.query,
            "context": result["context"],
            "sources": [_source(one) for one in result["results"]],
            "tokens_used": result["tokens_used"],
            "search_mode": result["search_mode"],
            "metadata": result["metadata"],
        }

    @router.post("/embed", summary="Index content for future retrieval", responses=_example(EMBED_RESPONSE_EXAMPLE))
    async def embed(request: Request, body: Annotated[EmbedRequest, Body(examples=[EMBED_EXAMPLE])]) -> dict:
        started = time.perf_counter()
        fields, meta = split_metadata(body.metadata)
        artifact_id = meta.get("artifact_id")
        if not isinstance(artifact_id, str) or not artifact_id.strip() or len(artifact_id) > 256:
            raise validation_error(
                "metadata.artifact_id: field required (a non-blank string of at most 256 characters)"
            )
        if "verified" not in meta or meta["verified"] is None:
            meta["verified"] = True  # DATS embeds approved outputs (docs/api.md, "DATS RAG API")
        tenant_id, tags, writer = resolve_spec_writer(
            settings, container.credentials, request.headers, tenant_id=fields.get("tenant_id"), tags=fields.get("tags")
        )
        prefix = "public-" if fields.get("scope") == "public" else ""
        fields = {**fields, "tenant_id": tenant_id, "tags": list(tags)}
        fields.setdefault("document_id", document_id_for(artifact_id, prefix))
        document = build_document(body.content, fields, meta)
        # As on POST /index/run: the document as written first, then the documents it would replace
        # (docs/contract.md, "Write rule").
        writer.check_documents([document])
        result = await call(container.requests.index_documents, [document], key_id=writer.key_id, writer=writer.rule)
        entry = result["documents"][0]
        if entry.get("status") not in {"indexed", "unchanged"}:
            raise validation_error(f"metadata: {entry.get('error') or 'the document was not indexed'}")
        return {
            "id": f"emb-{uuid.uuid4().hex}",
            "artifact_id": artifact_id,
            "status": "indexed",
            "chunks": int(entry.get("chunks") or 0),
            "tokens": int(entry.get("tokens") or 0),
            "latency_ms": round((time.perf_counter() - started) * 1000, 1),
            "document_id": entry["document_id"],
            "changed": entry["status"] == "indexed",
        }

    @router.delete(
        "/embeddings/{artifact_id:path}",
        summary="Invalidate the embeddings of an artifact",
        responses={**_example(INVALIDATE_RESPONSE_EXAMPLE), 404: {"description": "No embeddings for the artifact."}},
    )
    async def invalidate(
        request: Request,
        artifact_id: Annotated[str, Path(min_length=1, max_length=256, description="The artifact.")],
        tenant_id: Annotated[str | None, Query(description="Ours: the tenant (trusted mode; else the key's).")] = None,
        reason: Annotated[str | None, Query(max_length=512, description="Why (recorded).")] = None,
    ) -> dict:
        if not artifact_id.strip() or any(ord(char) < 32 for char in artifact_id):
            raise validation_error("artifact_id: must be non-blank text without control characters")
        tenant, _, writer = resolve_spec_writer(
            settings, container.credentials, request.headers, tenant_id=tenant_id, need_tags=False
        )
        # Documents the caller may not write read as absent (docs/contract.md, "Write rule").
        outcome = await call(
            container.requests.invalidate_artifacts, tenant, [artifact_id], reason=reason or "invalidated",
            key_id=writer.key_id, publish_empty=False, writer=writer.rule,
        )  # fmt: skip
        if not outcome["invalidated"]:
            # The same answer whether the artifact never existed or belongs to another tenant (no oracle).
            raise ApiError(404, "not_found", f"No embeddings for artifact {artifact_id!r} in this tenant.")
        return {
            "artifact_id": artifact_id,
            "removed_chunks": outcome["chunks_removed"],
            "status": "invalidated",
            "document_ids": outcome["document_ids"],
        }

    @router.post(
        "/embeddings/batch-invalidate",
        summary="Invalidate several artifacts (for a cascade)",
        responses=_example(BATCH_RESPONSE_EXAMPLE),
    )
    async def batch_invalidate(
        request: Request, body: Annotated[BatchInvalidateRequest, Body(examples=[BATCH_EXAMPLE])]
    ) -> dict:
        tenant, _, writer = resolve_spec_writer(
            settings, container.credentials, request.headers, tenant_id=body.tenant_id, need_tags=False
        )
        outcome = await call(
            container.requests.invalidate_artifacts, tenant, body.artifact_ids, reason=body.reason or "upstream_taint",
            cascade_id=body.cascade_id, key_id=writer.key_id, writer=writer.rule,
        )  # fmt: skip
        return {
            "invalidated": outcome["invalidated"],
            "chunks_removed": outcome["chunks_removed"],
            "cascade_id": body.cascade_id,
            "not_found": outcome["not_found"],
        }

    @router.get("/health", summary="Health of the index and the embedder", responses=_example(HEALTH_RESPONSE_EXAMPLE))
    async def health(request: Request) -> JSONResponse:
        report = await call(container.health.report)
        store = report.get("store") or {}
        queue = queue_status(request.app)
        body = {
            "status": report["status"],
            "version": report["version"],
            "lightrag": {
                "status": "connected" if store.get("status") == "ok" else "error",
                "index_size": store.get("points"),
                "embedding_model": (report.get("embedder") or {}).get("model"),
                "backend": store.get("backend"),
            },
            "embedding_queue": {"pending": queue["jobs_pending"], "processing": queue["files_pending"], **queue},
        }
        return JSONResponse(body, status_code=503 if report["status"] == "unhealthy" else 200)

    return router

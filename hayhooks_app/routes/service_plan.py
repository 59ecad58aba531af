"""
The microservice plan's API contract (docs/api.md, "Microservice plan API"): ``POST /rag/query``,
``POST /rag/enrich`` and ``POST /rag/ingest``, thin routes over the search, enrichment and indexing services.

Where the plan's model meets ours (decided in docs/api.md):

* ``scope`` (``project``, ``user``, ``public``; ours also ``tenant``) narrows the access rule to that branch and
  never widens it; ``project`` needs ``user_id`` and ``project_id``, ``user`` needs ``user_id`` (a 422 otherwise,
  as the plan requires them); in ``api_key`` mode the user comes from the key;
* ``mode`` is the search mode (``hybrid``, ``vector``, ``keyword``; ``fts``/``full_text``/``bm25`` mean keyword,
  ``dense``/``semantic`` mean vector);
* an ingested ``source_id`` is the document: ``document_id`` is the ``source_id`` when that is a valid document id,
  else derived from it, so ingesting the same source again replaces it (unchanged content writes nothing); the
  plan's ``source_type`` is kept as ``meta.source_kind`` and ``source_id`` as ``meta.source_id``; a ``source_id``
  ending ``.md``, ``.yaml``, ``.html`` (...) is read as that type (Markdown split at its headings, a YAML spec whole).
"""

from pathlib import PurePosixPath
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Body, Request
from pydantic import Field, StringConstraints, field_validator

from components.core.document_identity import document_id_for, source_type_for_path
from components.core.requester import Identity
from hayhooks_app.errors import validation_error
from hayhooks_app.identity import WriteAuthority, resolve_spec_identity, resolve_spec_writer
from hayhooks_app.routes.spec_support import build_document, call, split_metadata
from hayhooks_app.schemas import (
    LIMITS,
    EnrichRequestBody,
    Identifier,
    MetaValue,
    SearchFiltersBody,
    StrictModel,
    UserTags,
    register_request_model,
)

MODES = {
    "hybrid": "hybrid",
    "vector": "vector",
    "dense": "vector",
    "semantic": "vector",
    "keyword": "keyword",
    "fts": "keyword",
    "full_text": "keyword",
    "bm25": "keyword",
}
# Formats whose structure the converters read from text (sections, whole specs); others are indexed as plain text.
STRUCTURED_TEXT_TYPES = frozenset({"md", "yaml", "html"})

QUERY_EXAMPLE = {
    "scope": "project",
    "user_id": "u-acme-priya",
    "project_id": "atlas",
    "query": "Which decisions did we take about the storage layer?",
    "top_k": 5,
    "mode": "hybrid",
}
ENRICH_EXAMPLE = {
    "scope": "user",
    "user_id": "u-acme-priya",
    "project_id": None,
    "message": "How many days of paid annual leave do full-time employees get?",
    "top_k": 5,
}
INGEST_EXAMPLE = {
    "source_type": "readme",
    "source_id": "atlas/README.md",
    "content": "# Atlas\n\n## Storage\n\nAtlas keeps its data in PostgreSQL with pgvector.",
    "metadata": {"scope": "project", "user_id": "u-acme-priya", "project_id": "atlas", "language": "en"},
}


def _example(value: dict[str, Any]) -> dict[int | str, dict[str, Any]]:
    return {200: {"content": {"application/json": {"example": {"result": value}}}}}


QueryText = Annotated[str, StringConstraints(min_length=1, max_length=4000)]
Scope = Literal["project", "user", "public", "tenant"]


def _text(value: str) -> str:
    if not value.strip() or any(ord(char) < 32 and char not in "\t\n\r" for char in value):
        raise ValueError("must be non-blank text without control characters")
    return value


class PlanQueryRequest(StrictModel):
    """``POST /rag/query``: hits for a query, within a scope."""

    query: QueryText = Field(description="The query (not blank, at most 4000 characters).")
    scope: Scope | None = Field(None, description="project (needs user_id, project_id), user (needs user_id), "
                                "public; ours: tenant. Omitted: everything visible.")  # fmt: skip
    user_id: Identifier | None = Field(None, description="The requester (trusted mode; api_key mode: the key's).")
    project_id: Identifier | None = Field(None, description="The project (for project scope).")
    top_k: int | None = Field(None, ge=1, le=100, description="Hits to return (default RAG_TOP_K, else 5).")
    mode: str | None = Field(None, description="hybrid (default), vector or keyword (aliases: fts, bm25, dense).")
    max_tokens: int = Field(2000, ge=100, le=10000, description="Ours: token budget of `context`.")
    filters: SearchFiltersBody | None = Field(None, description="Ours: verified_only, exclude_tainted, language.")
    tenant_id: Identifier | None = Field(None, description="Ours: the tenant (trusted mode; else the key's).")
    user_tags: UserTags | None = Field(None, description="Ours: the requester's tags (trusted mode).")

    model_config = {"json_schema_extra": {"examples": [QUERY_EXAMPLE]}}

    @field_validator("query")
    @classmethod
    def _query(cls, value: str) -> str:
        return _text(value)

    @field_validator("mode")
    @classmethod
    def _mode(cls, value: str | None) -> str | None:
        if value is not None and value.lower() not in MODES:
            raise ValueError(f"must be one of {', '.join(MODES)}")
        return None if value is None else MODES[value.lower()]


class PlanIngestRequest(StrictModel):
    """``POST /rag/ingest``: index one source's content."""

    source_type: Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9._-]{1,64}$")] = Field(
        description="What the source is (spec, readme, adr, incident, summary, ...); kept as meta.source_kind."
    )
    source_id: Identifier = Field(description="The source's id; the same id replaces the earlier version.")
    content: Annotated[str, StringConstraints(min_length=1, max_length=LIMITS.max_document_chars)] = Field(
        description="The text."
    )
    metadata: (
        Annotated[dict[Annotated[str, StringConstraints(max_length=64)], MetaValue], Field(max_length=72)] | None
    ) = Field(
        None,
        description="scope (project, user, public; ours: tenant), user_id, project_id, tags, tenant_id, "
        "document_name, source_uri, language, any other key (kept in meta).",
    )

    model_config = {"json_schema_extra": {"examples": [INGEST_EXAMPLE]}}

    @field_validator("content")
    @classmethod
    def _content(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty or whitespace only")
        return value


# The request guard checks these bodies strictly before the routes run, as every JSON route's.
register_request_model("/rag/query", PlanQueryRequest)
register_request_model("/rag/ingest", PlanIngestRequest)


def _check_scope(scope: str | None, identity: Identity) -> None:
    """The plan requires the ids its scopes are about (a request without them would see nothing)."""
    if scope == "project" and not (identity.user_id and identity.project_id):
        raise validation_error("scope 'project' needs user_id and project_id")
    if scope == "user" and not identity.user_id:
        raise validation_error("scope 'user' needs user_id")


def plan_routes(container: Any) -> APIRouter:
    """The plan's ``/rag/*`` routes over the container's services."""
    router = APIRouter(prefix="/rag", tags=["Microservice plan API"])
    settings = container.settings

    def identify(request: Request, body: Any) -> Identity:
        return resolve_spec_identity(
            settings, container.credentials, request.headers, tenant_id=body.tenant_id, user_tags=body.user_tags,
            user_id=body.user_id, project_id=body.project_id,
        )  # fmt: skip

    @router.post("/query", summary="Hits for a query within a scope", responses=_example({"results": []}))
    async def query(request: Request, body: Annotated[PlanQueryRequest, Body(examples=[QUERY_EXAMPLE])]) -> dict:
        identity = identify(request, body)
        _check_scope(body.scope, identity)
        search: dict[str, Any] = {"query": body.query, "max_tokens": body.max_tokens, "scope": body.scope}
        if body.top_k is not None:
            search["k"] = body.top_k
        if body.mode is not None:
            search["search_mode"] = body.mode
        if body.filters is not None:
            search["filters"] = body.filters.model_dump(exclude_none=True)
        result = await call(container.requests.search, {k: v for k, v in search.items() if v is not None}, identity)
        empty = None if result["results"] else "Nothing the requester may see in this scope matched the query."
        return {"result": {"query": body.query, "scope": body.scope, **result, "empty_reason": empty}}

    @router.post(
        "/enrich",
        summary="Context for a message within a scope (also POST /enrich/run)",
        responses=_example({"message": "...", "context": "...", "sources": []}),
    )
    async def enrich(request: Request, body: Annotated[EnrichRequestBody, Body(examples=[ENRICH_EXAMPLE])]) -> dict:
        identity = identify(request, body)
        _check_scope(body.scope, identity)
        fields = body.model_dump(mode="json", exclude_none=True)
        return {"result": await call(container.requests.enrich, fields, identity)}

    @router.post("/ingest", summary="Index one source's content", responses=_example({"document_id": "..."}))
    async def ingest(request: Request, body: Annotated[PlanIngestRequest, Body(examples=[INGEST_EXAMPLE])]) -> dict:
        fields, meta = split_metadata(body.metadata)
        scope = fields.get("scope", "tenant")
        tenant_id, tags, writer = resolve_spec_writer(
            settings, container.credentials, request.headers, tenant_id=fields.get("tenant_id"), tags=fields.get("tags")
        )
        fields = {**fields, "tenant_id": tenant_id, "tags": list(tags)}
        fields.setdefault("document_id", document_id_for(body.source_id, "public-" if scope == "public" else ""))
        fields.setdefault("document_name", PurePosixPath(body.source_id).name or body.source_id)
        meta = {**meta, "source_id": body.source_id, "source_kind": body.source_type}
        document = build_document(body.content, fields, meta)
        # As on POST /index/run: the document as written first, then the documents it would replace
        # (docs/contract.md, "Write rule").
        writer.check_documents([document])
        source_type = source_type_for_path(body.source_id)
        if source_type in STRUCTURED_TEXT_TYPES:
            result = await call(_index_as_file, container, document, source_type, writer)
        else:
            result = await call(
                container.requests.index_documents, [document], key_id=writer.key_id, writer=writer.rule
            )
        entry = result["documents"][0]
        if entry.get("status") not in {"indexed", "unchanged"}:
            raise validation_error(f"{body.source_id}: {entry.get('error') or 'the source was not indexed'}")
        return {
            "result": {
                "source_type": body.source_type,
                "source_id": body.source_id,
                **{key: entry.get(key) for key in ("document_id", "status", "chunks", "tokens")},
                "latency_ms": result.get("latency_ms"),
            }
        }

    return router


def _index_as_file(container: Any, document: dict[str, Any], source_type: str, writer: WriteAuthority) -> dict:
    """Index a structured text (Markdown, YAML, HTML) through its converter, as an upload of that file would be."""
    from haystack.dataclasses import ByteStream

    meta = {key: value for key, value in document.items() if key not in {"content", "meta"}}
    meta.update(document.get("meta") or {})
    meta["source_type"] = source_type
    stream = ByteStream(data=document["content"].encode("utf-8"), meta=meta)
    return container.requests.index_streams([stream], key_id=writer.key_id, writer=writer.rule)

"""
The RAG Standard v1 API (docs/api.md, "RAG Standard API"): ``GET /search?q=...&k=5`` and ``POST /chat
{"question": ...}``, as its curl lines call them, over the same search and answer services as ``/search/run`` and
``/rag/run`` (its enhanced ``GET /health`` fields are part of our ``/health``).

Where the Standard's model meets ours (decided in docs/api.md):

* ``chunk_id`` and every citation are our SourceIds (``document_id:chunk_index``); ``citation_map`` gives each
  cited SourceId its document's ``url`` (``null`` for a document without an http(s) address) and ``title``;
* a result's ``glossary_terms`` are the requester's tenant glossary terms the query matched (the same for every
  result of a search);
* identity as on every specification route: the key in ``api_key`` mode; in trusted mode the request's
  ``tenant_id`` and ``user_tags`` (query parameters on ``GET /search``, body fields on ``POST /chat``) or the
  configured defaults.
"""

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Body, Query, Request
from pydantic import Field, StringConstraints, field_validator

from components.core.models import MAX_CONTEXT_CHUNKS
from components.services.pipeline_parts import find_component
from hayhooks_app.errors import validation_error
from hayhooks_app.identity import resolve_spec_identity
from hayhooks_app.routes.spec_support import call
from hayhooks_app.schemas import Identifier, StrictModel, UserTags, register_request_model

SEARCH_RESPONSE_EXAMPLE = {
    "query": "How do I submit a timesheet?",
    "k": 5,
    "results": [
        {
            "url": "https://help.clockify.me/article/submit-timesheet",
            "title": "Submit Timesheet",
            "snippet": "To submit a timesheet, click...",
            "score": 0.92,
            "chunk_id": "clockify-submit-timesheet:3",
            "glossary_terms": ["timesheet"],
        }
    ],
}
CHAT_EXAMPLE = {"question": "How do I submit a weekly timesheet?"}
CHAT_RESPONSE_EXAMPLE = {
    "question": "How do I submit a weekly timesheet?",
    "answer": "Go to the Timesheets tab and click Submit. [SourceId: clockify-submit-timesheet:3]",
    "citations": ["clockify-submit-timesheet:3"],
    "citation_map": {
        "clockify-submit-timesheet:3": {
            "url": "https://help.clockify.me/article/submit-timesheet",
            "title": "Submit Timesheet",
        }
    },
}


def _example(value: dict[str, Any]) -> dict[int | str, dict[str, Any]]:
    return {200: {"content": {"application/json": {"example": value}}}}


class ChatRequest(StrictModel):
    """``POST /chat``: a grounded, cited answer to a question."""

    question: Annotated[str, StringConstraints(min_length=1, max_length=4000)] = Field(
        description="The question (not blank, at most 4000 characters)."
    )
    tenant_id: Identifier | None = Field(None, description="Ours: the tenant (trusted mode; else the key's).")
    user_tags: UserTags | None = Field(None, description="Ours: the requester's tags (trusted mode).")
    user_id: Identifier | None = Field(None, description="Ours: the requester (sees its user-scoped documents).")
    project_id: Identifier | None = Field(None, description="Ours: the requester's project.")
    scope: Literal["project", "user", "tenant", "public"] | None = Field(None, description="Ours: narrow the rule.")
    max_context_chunks: int | None = Field(None, ge=1, le=MAX_CONTEXT_CHUNKS, description="Ours: context chunks.")

    model_config = {"json_schema_extra": {"examples": [CHAT_EXAMPLE]}}

    @field_validator("question")
    @classmethod
    def _question(cls, value: str) -> str:
        if not value.strip() or any(ord(char) < 32 and char not in "\t\n\r" for char in value):
            raise ValueError("must be non-blank text without control characters")
        return value


# The request guard checks these bodies strictly before the routes run, as every JSON route's.
register_request_model("/chat", ChatRequest)


def _tags(values: list[str] | None) -> list[str] | None:
    """
    Tags from repeated or comma-separated query parameters, taken exactly as sent (no trimming: ``" hr"`` is not
    ``"hr"``, as in a JSON body).
    """
    tags = [tag for value in values or [] for tag in value.split(",") if tag]
    return list(dict.fromkeys(tags)) or None


def standard_routes(container: Any) -> APIRouter:
    """``GET /search`` and ``POST /chat`` over the container's services."""
    router = APIRouter(tags=["RAG Standard API"])
    settings = container.settings

    def default_k() -> int:
        planner = find_component(container.pipeline("search"), lambda c: hasattr(c, "default_context_chunks"))
        return int(getattr(planner, "default_context_chunks", 5))

    @router.get("/search", summary="Search (RAG Standard)", responses=_example(SEARCH_RESPONSE_EXAMPLE))
    async def search(
        request: Request,
        q: Annotated[str, Query(min_length=1, max_length=4000, description="The query.")],
        k: Annotated[int | None, Query(ge=1, le=100, description="Results (default RAG_TOP_K, else 5).")] = None,
        tenant_id: Annotated[str | None, Query(max_length=256, description="Ours: the tenant (trusted mode).")] = None,
        user_tags: Annotated[
            list[str] | None, Query(description="Ours: the requester's tags (trusted mode; repeat or comma-separate).")
        ] = None,
        user_id: Annotated[str | None, Query(max_length=256, description="Ours: the requester.")] = None,
        project_id: Annotated[str | None, Query(max_length=256, description="Ours: the requester's project.")] = None,
        search_mode: Annotated[
            Literal["vector", "keyword", "hybrid"] | None, Query(description="Ours: the search mode (default hybrid).")
        ] = None,
    ) -> dict:
        if not q.strip() or any(ord(char) < 32 and char not in "\t\n\r" for char in q):
            raise validation_error("q: must be non-blank text without control characters")
        for name, value in (("tenant_id", tenant_id), ("user_id", user_id), ("project_id", project_id)):
            if value is not None and (not value.strip() or any(ord(char) < 32 for char in value)):
                raise validation_error(f"{name}: must be non-blank text without control characters")
        identity = resolve_spec_identity(
            settings, container.credentials, request.headers, tenant_id=tenant_id, user_tags=_tags(user_tags),
            user_id=user_id, project_id=project_id,
        )  # fmt: skip
        wanted = k if k is not None else default_k()
        body: dict[str, Any] = {"query": q, "k": wanted}
        if search_mode is not None:
            body["search_mode"] = search_mode
        result = await call(container.requests.search, body, identity)
        terms = list(result["metadata"].get("glossary_terms") or [])
        results = [
            {
                "url": one.get("url"),
                "title": one.get("title") or one.get("document_name"),
                "snippet": one["snippet"],
                "score": one["score"],
                "chunk_id": one["source_id"],
                "glossary_terms": terms,
                "document_id": one["document_id"],
                "language": one.get("language"),
            }
            for one in result["results"]
        ]
        return {
            "query": q,
            "k": wanted,
            "results": results,
            "search_mode": result["search_mode"],
            "metadata": result["metadata"],
        }

    @router.post("/chat", summary="A grounded, cited answer (RAG Standard)", responses=_example(CHAT_RESPONSE_EXAMPLE))
    async def chat(request: Request, body: Annotated[ChatRequest, Body(examples=[CHAT_EXAMPLE])]) -> dict:
        identity = resolve_spec_identity(
            settings, container.credentials, request.headers, tenant_id=body.tenant_id, user_tags=body.user_tags,
            user_id=body.user_id, project_id=body.project_id,
        )  # fmt: skip
        question = {"query": body.question, "scope": body.scope, "max_context_chunks": body.max_context_chunks}
        result = await call(
            container.requests.answer, {key: value for key, value in question.items() if value is not None}, identity
        )
        citations = list(dict.fromkeys(citation["source_id"] for citation in result.get("citations") or []))
        by_id = {citation["source_id"]: citation for citation in result.get("citations") or []}
        return {
            "question": body.question,
            "answer": result["answer"],
            "citations": citations,
            "citation_map": {
                source_id: {
                    "url": by_id[source_id].get("url"),
                    "title": by_id[source_id].get("title") or by_id[source_id].get("document_name"),
                }
                for source_id in citations
            },
            **{key: value for key, value in result.items() if key not in {"answer", "citations"}},
            "sources": result.get("citations") or [],
        }

    return router

"""
Request and response models of the HTTP API.

Requests are strict: unknown fields, wrong JSON types (``"5"`` for an int), out-of-range
numbers, blank queries, NUL characters and malformed ids are rejected with a 422 whose
message names the field. The search and RAG bodies are the query side's own models
(``components.core.models``, which own the query/``k``/history bounds) with the identity fields
made optional; the HTTP layer's own size limits (documents per request, upload and body
bytes) come from ``hayhooks_app.config.Limits`` (``SOURCEBOUND_MAX_*``), read once at import.

Access-control values (``tenant_id``, ``user_tags``, ``user_id``, ``project_id``) are optional in
the read models because ``api_key`` mode takes them from the key; ``identity.resolve_identity``
requires them in ``trusted`` mode. The request's own ``filters`` accept only
``verified_only``, ``exclude_tainted`` and ``language``: nothing in a request can widen the access filter.
"""

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints, field_validator, model_validator

from components.core import models as query_models
from components.core.access_fields import IDENTITY_FIELDS
from components.core.document_identity import PUBLIC_ID_PREFIX
from components.core.models import MAX_CONTEXT_CHUNKS, MAX_HISTORY_MESSAGE_CHARS, MAX_HISTORY_MESSAGES, MAX_TAGS
from hayhooks_app.config import Limits

LIMITS = Limits.from_env()

DOCUMENT_ID_PATTERN = r"^[A-Za-z0-9-]{1,128}$"
# Reserved metadata a document's free-form `meta` may not set: access control and chunk identity.
RESERVED_META_KEYS = frozenset({*IDENTITY_FIELDS, "chunk_index", "chunk_hash", "source_hash"})


def _no_control_characters(value: str) -> str:
    if any(ord(char) < 32 and char not in "\t\n\r" for char in value):
        raise ValueError("must not contain NUL or other control characters")
    return value


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty or whitespace only")
    return value


# The query side's identifier rule (1..256 characters, no control characters), shared with indexing.
Identifier = Annotated[query_models.Identifier, AfterValidator(_no_control_characters), AfterValidator(_not_blank)]
DocumentId = Annotated[str, StringConstraints(pattern=DOCUMENT_ID_PATTERN)]
ShortText = Annotated[str, StringConstraints(max_length=512), AfterValidator(_no_control_characters)]
MessageText = Annotated[
    str, StringConstraints(max_length=MAX_HISTORY_MESSAGE_CHARS), AfterValidator(_no_control_characters)
]
ModelName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$")]
UserTags = Annotated[list[Identifier], Field(min_length=1, max_length=MAX_TAGS)]
ConversationId = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_-]{1,64}$")]


class StrictModel(BaseModel):
    """Base of every request model: unknown fields and JSON type coercion are errors."""

    model_config = ConfigDict(extra="forbid", strict=True)


class ResultModel(BaseModel):
    """Base of response models: extra fields from the services pass through."""

    model_config = ConfigDict(extra="allow")


class _ApiIdentityFields:
    """
    Mixin making the query side's identity fields optional: ``api_key`` mode takes them from the key,
    and ``identity.resolve_identity`` requires them in ``trusted`` mode.
    """

    @field_validator("user_tags")
    @classmethod
    def _tags(cls, value: list[str] | None) -> list[str] | None:
        return value  # the Identifier type already checks each tag


# --- search and rag: the query side's models (components.core.models) with optional identity -----


class SearchFiltersBody(query_models.SearchFilters):
    """The query side's filters, with JSON booleans only (no ``"yes"`` for ``true``)."""

    model_config = ConfigDict(extra="forbid", strict=True)


class SearchRequestBody(_ApiIdentityFields, query_models.SearchRequest):
    """``POST /search/run``: retrieval only (``k`` defaults to the search pipeline's ``top_k``)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    tenant_id: Identifier | None = Field(
        None, description="Tenant (required in trusted mode; must match the key in api_key mode)."
    )
    user_tags: UserTags | None = Field(None, description="Tags the requester holds (required in trusted mode).")
    filters: SearchFiltersBody | None = None


class RAGRequestBody(_ApiIdentityFields, query_models.RAGRequest):
    """``POST /rag/run``: a grounded, cited answer."""

    model_config = ConfigDict(extra="forbid", strict=True)

    tenant_id: Identifier | None = Field(
        None, description="Tenant (required in trusted mode; must match the key in api_key mode)."
    )
    user_tags: UserTags | None = Field(None, description="Tags the requester holds (required in trusted mode).")
    filters: SearchFiltersBody | None = None
    conversation_id: ConversationId | None = Field(
        None,
        description="A server-side conversation (POST /conversations): its summary and recent turns are the history.",
    )


class EnrichRequestBody(_ApiIdentityFields, query_models.EnrichRequest):
    """``POST /enrich/run`` (also ``POST /rag/enrich``): context for a message, no answer."""

    model_config = ConfigDict(extra="forbid", strict=True)

    tenant_id: Identifier | None = Field(
        None, description="Tenant (required in trusted mode; must match the key in api_key mode)."
    )
    user_tags: UserTags | None = Field(None, description="Tags the requester holds (required in trusted mode).")
    filters: SearchFiltersBody | None = None


HistoryMessage = query_models.ChatMessage


# --- indexing -----------------------------------------------------------------------------

MetaValue = str | int | float | bool | None | list[str]


class IndexDocumentIn(StrictModel):
    """One document to index."""

    content: Annotated[str, StringConstraints(max_length=LIMITS.max_document_chars), AfterValidator(_not_blank)] = (
        Field(description="The document text.")
    )
    tenant_id: Identifier = Field(description="Owning tenant.")
    tags: UserTags = Field(description="At least one access tag.")
    document_id: DocumentId | None = Field(None, description="[A-Za-z0-9-]+; derived from tenant + source when absent.")
    document_name: ShortText | None = Field(None, description="Display name used in citations.")
    source_uri: Annotated[str, StringConstraints(max_length=2048), AfterValidator(_no_control_characters)] | None = (
        Field(None, description="Where the text came from.")
    )
    scope: Literal["tenant", "user", "project", "public"] = Field(
        "tenant",
        description="tenant, user (needs user_id), project (needs project_id and the owner's user_id) or public "
        "(every tenant sees it; needs the 'public' permission in api_key mode and a document_id starting 'public-').",
    )
    user_id: Identifier | None = Field(None, description="Owner for scope=user and scope=project.")
    project_id: Identifier | None = Field(None, description="Project for scope=project.")
    meta: Annotated[dict[Annotated[str, StringConstraints(max_length=64)], MetaValue], Field(max_length=64)] | None = (
        Field(
            None,
            description=(
                "Extra metadata (e.g. verified, artifact_id, provenance_id, language); access fields are reserved."
            ),
        )
    )

    @model_validator(mode="after")
    def _check_scope_and_meta(self) -> "IndexDocumentIn":
        if self.scope == "user" and not self.user_id:
            raise ValueError("scope 'user' needs user_id")
        if self.scope == "project" and not (self.project_id and self.user_id):
            raise ValueError("scope 'project' needs project_id and user_id (the owner)")
        if self.scope == "public" and not (self.document_id or "").startswith(PUBLIC_ID_PREFIX):
            raise ValueError(f"scope 'public' needs a document_id starting '{PUBLIC_ID_PREFIX}'")
        reserved = sorted(RESERVED_META_KEYS & set(self.meta or {}))
        if reserved:
            raise ValueError(f"meta may not set {', '.join(reserved)}; use the top-level fields")
        return self


class _WriteCallerFields(BaseModel):
    """
    Who makes a write (docs/contract.md, "Write rule"): in trusted mode the caller itself (a write naming none
    acts with the tenant's full authority); in api_key mode they narrow the key, as on a read.
    """

    user_tags: UserTags | None = Field(
        None, description="The caller's tags: only documents whose tags it holds all of are changed."
    )
    user_id: Identifier | None = Field(
        None, description="The caller's user: documents owned by another user are not changed."
    )
    project_id: Identifier | None = Field(None, description="The caller's project: only its project documents.")


class IndexRequest(_WriteCallerFields, StrictModel):
    """``POST /index/run``."""

    documents: Annotated[list[IndexDocumentIn], Field(min_length=1, max_length=LIMITS.max_documents_per_request)] = (
        Field(description=f"1..{LIMITS.max_documents_per_request} documents.")
    )


class UploadForm(StrictModel):
    """The form fields of ``POST /index/upload`` (multipart), checked like a JSON document."""

    tenant_id: Identifier
    tags: UserTags
    scope: Literal["tenant", "user", "project", "public"] = "tenant"
    user_id: Identifier | None = None
    project_id: Identifier | None = None
    document_id: DocumentId | None = None
    document_name: ShortText | None = None
    files: int = Field(ge=1, le=LIMITS.max_upload_files, description="Number of uploaded files.")
    # The caller's tags (docs/contract.md, "Write rule"); in trusted mode they name the caller, whose user and
    # project are then the form's user_id and project_id.
    user_tags: UserTags | None = None

    @model_validator(mode="after")
    def _check(self) -> "UploadForm":
        if self.scope == "user" and not self.user_id:
            raise ValueError("scope 'user' needs user_id")
        if self.scope == "project" and not (self.project_id and self.user_id):
            raise ValueError("scope 'project' needs project_id and user_id (the owner)")
        if self.files > 1 and (self.document_id or self.document_name):
            raise ValueError("document_id and document_name need exactly one file")
        return self

    def stream_meta(self) -> dict[str, Any]:
        """The meta every uploaded file's byte stream carries (``IndexingService.index_streams``)."""
        return self.model_dump(exclude={"files", "user_tags"}, exclude_none=True)


class IndexedDocument(ResultModel):
    document_id: str | None = None
    status: str
    chunks: int = 0
    tokens: int = 0
    error: str | None = None


class IndexResult(ResultModel):
    documents: list[IndexedDocument]
    chunks_written: int
    latency_ms: float


# --- lifecycle ----------------------------------------------------------------------------

DocumentIds = Annotated[list[DocumentId], Field(min_length=1, max_length=LIMITS.max_document_ids)]


class InvalidateRequest(_WriteCallerFields, StrictModel):
    """``POST /invalidate/run``: remove documents (all their chunks) from the index."""

    tenant_id: Identifier = Field(description="Tenant owning the documents.")
    document_ids: DocumentIds = Field(description="Documents to remove.")
    reason: ShortText | None = Field(None, description="Why, e.g. upstream_taint (recorded).")
    cascade_id: Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_.:-]{1,128}$")] | None = Field(
        None, description="Id of the cascade this belongs to (recorded, echoed)."
    )


class InvalidateResult(ResultModel):
    invalidated: int
    chunks_removed: int
    cascade_id: str | None = None


class DeleteTenantRequest(StrictModel):
    """``POST /delete_tenant/run``: remove every chunk of a tenant."""

    tenant_id: Identifier = Field(description="The tenant to delete.")


class DeleteTenantResult(ResultModel):
    tenant_id: str
    chunks_removed: int
    removed: dict[str, int] = Field(
        default_factory=dict,
        description=(
            "What was removed: chunks, query_log_rows, index_events, tag_owners, api_keys, conversations, glossary, "
            "sentence_vectors, feedback, kept_questions."
        ),
    )


class FlagsRequest(_WriteCallerFields, StrictModel):
    """``POST /flags/run``: mark documents tainted and/or verified without re-embedding."""

    tenant_id: Identifier = Field(description="Tenant owning the documents.")
    document_ids: DocumentIds = Field(description="Documents to mark.")
    tainted: bool | None = Field(None, description="Set or clear the tainted flag.")
    verified: bool | None = Field(None, description="Set or clear the verified flag.")
    reason: ShortText | None = Field(None, description="Why (recorded).")

    @model_validator(mode="after")
    def _needs_a_flag(self) -> "FlagsRequest":
        if self.tainted is None and self.verified is None:
            raise ValueError("set at least one of tainted, verified")
        return self


class FlagsResult(ResultModel):
    documents: int
    chunks_updated: int
    tainted: bool | None = None
    verified: bool | None = None


# --- chat completions ---------------------------------------------------------------------


class TextPart(StrictModel):
    type: Literal["text"]
    text: MessageText


class ChatMessageIn(StrictModel):
    """An OpenAI chat message; only text content is supported."""

    role: Literal["system", "user", "assistant"]
    content: MessageText | Annotated[list[TextPart], Field(max_length=32)]
    name: Annotated[str, StringConstraints(max_length=64)] | None = None

    def text(self) -> str:
        if isinstance(self.content, str):
            return self.content
        return "\n".join(part.text for part in self.content)


class ChatCompletionRequest(StrictModel):
    """
    ``POST /v1/chat/completions`` with ``model: "rag"``.

    Our fields travel as extra top-level body fields (openai client: ``extra_body={...}``).
    Sampling knobs of the OpenAI API are accepted for client compatibility and ignored:
    temperature, length and the model come from the server's configuration (``llm_model``
    overrides the LLM within the allowlist).
    """

    model: str
    messages: Annotated[list[ChatMessageIn], Field(min_length=1, max_length=MAX_HISTORY_MESSAGES + 1)]
    stream: bool = False
    tenant_id: Identifier | None = None
    user_tags: UserTags | None = None
    user_id: Identifier | None = None
    project_id: Identifier | None = None
    scope: Literal["project", "user", "tenant", "public"] | None = None
    llm_model: ModelName | None = None
    max_context_chunks: int | None = Field(None, ge=1, le=MAX_CONTEXT_CHUNKS)
    conversation_id: ConversationId | None = None
    # Accepted, ignored (see the class docstring).
    temperature: float | None = Field(None, strict=False)
    top_p: float | None = Field(None, strict=False)
    max_tokens: int | None = None
    max_completion_tokens: int | None = None
    n: Literal[1] | None = None
    stop: str | list[str] | None = None
    presence_penalty: float | None = Field(None, strict=False)
    frequency_penalty: float | None = Field(None, strict=False)
    seed: int | None = None
    user: Annotated[str, StringConstraints(max_length=256)] | None = None
    stream_options: dict[str, bool] | None = None

    @model_validator(mode="after")
    def _last_message_is_from_the_user(self) -> "ChatCompletionRequest":
        if self.messages[-1].role != "user":
            raise ValueError("the last message must have role 'user' (it is the query)")
        return self


# Descriptions of the query side's fields, for the OpenAPI schema (its models carry none).
FIELD_DESCRIPTIONS = {
    "query": "The question or search text (not blank, at most 4000 characters).",
    "message": "The user's message to find context for (not blank, at most 4000 characters); returned unchanged.",
    "top_k": "Context chunks to return, 1..20 (default RAG_TOTAL_CONTEXT_CHUNKS).",
    "user_id": "Requester's user id (sees user-scoped documents; must match the key in api_key mode).",
    "project_id": "Requester's project (sees its own project-scoped documents in that project).",
    "scope": "Narrow to project, user, tenant or public documents (omitted: everything visible); never widens.",
    "filters": "Only verified_only / exclude_tainted (default false / true) and language (ISO 639 code); "
    "the access filter is built server-side.",
    "k": "Number of results, 1..100 (default RAG_TOTAL_CONTEXT_CHUNKS).",
    "search_mode": "vector, keyword or hybrid (RRF fusion; default).",
    "max_tokens": "Token budget of the returned context string, 100..10000.",
    "chat_history": "Earlier messages {role, content}, oldest first (the newest that fit the history budget are kept).",
    "model": "LLM override; must be in the model allowlist (the extractive backend serves only 'extractive').",
    "max_context_chunks": "Context chunks to use, 1..20 (default RAG_TOTAL_CONTEXT_CHUNKS).",
}


# Strict request models by route, checked before Hayhooks parses the body (it ignores unknown fields).
REQUEST_MODELS: dict[str, type[BaseModel]] = {
    "/index/run": IndexRequest,
    "/search/run": SearchRequestBody,
    "/rag/run": RAGRequestBody,
    "/enrich/run": EnrichRequestBody,
    "/rag/enrich": EnrichRequestBody,
    "/invalidate/run": InvalidateRequest,
    "/delete_tenant/run": DeleteTenantRequest,
    "/flags/run": FlagsRequest,
    "/v1/chat/completions": ChatCompletionRequest,
    "/chat/completions": ChatCompletionRequest,
}


def register_request_model(path: str, model: type[BaseModel]) -> None:
    """
    Check ``path``'s raw JSON body strictly with ``model`` in the request guard (``hayhooks_app.middleware``), as the
    routes above are: route modules with their own models (``hayhooks_app/routes``) register them here.
    """
    REQUEST_MODELS[path] = model


def allowed_fields(model: type[BaseModel]) -> dict[str, list[str]]:
    """Field names allowed at each location of a model (its nested models' too), for 'unknown field' messages."""
    result: dict[str, list[str]] = {"": sorted(model.model_fields)}
    for name, field in model.model_fields.items():
        for candidate in (field.annotation, *getattr(field.annotation, "__args__", ())):
            if isinstance(candidate, type) and issubclass(candidate, BaseModel):
                result[name] = sorted(candidate.model_fields)
                break
    return result


def dump_request(model: BaseModel) -> dict[str, Any]:
    """A request model as the plain dict the services take (unset optional fields left out)."""
    return model.model_dump(exclude_none=True)

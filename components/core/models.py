"""
Request and response models of the query side (docs/contract.md, "Response fields";
the requests in docs/api.md), as pydantic v2 models.

Requests forbid unknown fields: a body that tries to smuggle filters or any
other parameter is rejected (``pydantic.ValidationError``, a 422 at the API)
instead of being silently ignored. The only retrieval options a request may
carry are those of :class:`SearchFilters` (two booleans, a language); tenant, tags and scope
always come from the identity fields and are enforced server-side.

Usage:

```python
from components.core.models import RAGRequest, RAGResponse

request = RAGRequest.model_validate({"query": "How many vacation days?", "tenant_id": "acme", "user_tags": ["hr"]})
```
"""

from datetime import datetime
from enum import Enum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_serializer

from components.core.language import LANGUAGE_CODE_PATTERN

# A query longer than this is almost certainly not a question (a pasted file, an
# attack); rejecting it early keeps tokenising and embedding cheap.
MAX_QUERY_CHARS = 4000
MAX_IDENTIFIER_CHARS = 256
MAX_TAGS = 100
MAX_HISTORY_MESSAGES = 200
MAX_HISTORY_MESSAGE_CHARS = 20000
MAX_CONTEXT_CHUNKS = 20
MAX_SEARCH_K = 100

INSUFFICIENT_INFORMATION_ANSWER = "I don't have enough information in the available documents to answer this question."


def _reject_control_characters(value: str, field: str) -> str:
    if "\x00" in value:
        raise ValueError(f"{field} must not contain NUL characters")
    return value


def _identifier(value: str, field: str) -> str:
    _reject_control_characters(value, field)
    if not value.strip():
        raise ValueError(f"{field} must not be empty or whitespace")
    if any(ord(ch) < 32 for ch in value):
        raise ValueError(f"{field} must not contain control characters")
    return value


Identifier = Annotated[str, Field(min_length=1, max_length=MAX_IDENTIFIER_CHARS)]


class QueryType(str, Enum):
    """Query categories of QUERY_CLASSIFIER_PROMPT (docs/contract.md, "Prompts")."""

    FACTUAL = "FACTUAL"
    PROCEDURAL = "PROCEDURAL"
    CLARIFICATION = "CLARIFICATION"
    GREETING = "GREETING"


class SearchMode(str, Enum):
    """Retrieval modes of the search pipeline."""

    VECTOR = "vector"
    KEYWORD = "keyword"
    HYBRID = "hybrid"


SEARCH_MODE_NAMES = tuple(member.value for member in SearchMode)


def search_mode_name(search_mode: Any) -> str:
    """
    The name of a search mode given as a ``SearchMode`` or its string value.

    :raises ValueError: On anything else, naming the valid modes.
    """
    mode = search_mode.value if isinstance(search_mode, SearchMode) else search_mode
    if mode not in SEARCH_MODE_NAMES:
        raise ValueError(f"search_mode must be one of {list(SEARCH_MODE_NAMES)}, got {search_mode!r}.")
    return mode


class ChatMessage(BaseModel):
    """Single message in chat history."""

    model_config = ConfigDict(extra="forbid")

    role: Literal["user", "assistant", "system"]
    content: str = Field(max_length=MAX_HISTORY_MESSAGE_CHARS)
    timestamp: datetime | None = None

    @field_validator("content")
    @classmethod
    def _no_nul(cls, value: str) -> str:
        return _reject_control_characters(value, "chat_history content")


class SearchFilters(BaseModel):
    """
    The only retrieval options a request may set. All narrow the result set;
    nothing here can widen the server-side access filter.
    """

    model_config = ConfigDict(extra="forbid")

    verified_only: bool | None = None
    exclude_tainted: bool | None = None
    language: str | None = Field(
        None, pattern=LANGUAGE_CODE_PATTERN, description="Only chunks in this language (ISO 639 code, e.g. 'de')."
    )
    # Metadata filters (docs/contract.md, "Access rule"): only chunks whose field equals the value. Unlike the
    # top-level project_id (who asks, for project-scoped documents), filters.project_id narrows by the chunk's project.
    project_id: Identifier | None = Field(None, description="Only chunks whose project_id is this.")
    domain: Identifier | None = Field(None, description="Only chunks whose domain is this.")


class _Identity(BaseModel):
    """Who asks: the identity fields every query-side request carries, validated alike."""

    model_config = ConfigDict(extra="forbid")

    tenant_id: Identifier
    user_tags: list[Identifier] = Field(min_length=1, max_length=MAX_TAGS)
    user_id: Identifier | None = None
    project_id: Identifier | None = None
    filters: SearchFilters | None = None

    @field_validator("tenant_id", "user_id", "project_id")
    @classmethod
    def _identifiers(cls, value: str | None, info) -> str | None:
        return None if value is None else _identifier(value, info.field_name)

    @field_validator("user_tags")
    @classmethod
    def _tags(cls, value: list[str]) -> list[str]:
        return [_identifier(tag, "user_tags") for tag in value]


def _text_input(value: str, name: str) -> str:
    _reject_control_characters(value, name)
    if not value.strip():
        raise ValueError(f"{name} must not be empty or whitespace")
    return value


class _IdentityRequest(_Identity):
    query: str = Field(max_length=MAX_QUERY_CHARS)
    # Narrows to one branch of the access rule; omitted: everything visible. It can never widen.
    scope: Literal["project", "user", "tenant", "public"] | None = None

    @field_validator("query")
    @classmethod
    def _query_not_blank(cls, value: str) -> str:
        return _text_input(value, "query")


class RAGRequest(_IdentityRequest):
    """
    Input for RAG generation.

    ``max_context_chunks`` and ``model`` default to the pipeline's YAML
    configuration (``RAG_TOTAL_CONTEXT_CHUNKS``, ``CHAT_MODEL``) when omitted.
    """

    chat_history: list[ChatMessage] | None = Field(default=None, max_length=MAX_HISTORY_MESSAGES)
    model: Annotated[str, Field(min_length=1, max_length=MAX_IDENTIFIER_CHARS)] | None = None
    max_context_chunks: int | None = Field(default=None, ge=1, le=MAX_CONTEXT_CHUNKS)


class SearchRequest(_IdentityRequest):
    """Input for retrieval-only search (DATS ``/query`` shape; docs/api.md, ``POST /search/run``)."""

    k: int | None = Field(default=None, ge=1, le=MAX_SEARCH_K)
    search_mode: SearchMode = SearchMode.HYBRID
    max_tokens: int = Field(default=2000, ge=100, le=10000)


class ConfidenceScore(BaseModel):
    """
    Hybrid confidence with its breakdown.

    ``overall = retrieval_score*30 + coverage_score*40 + llm_score/100*30`` clamped
    to 0-100; when ``llm_score`` is ``None`` the weights renormalise over the
    signals that exist.
    """

    overall: int = Field(ge=0, le=100)
    retrieval_score: float = Field(ge=0.0, le=1.0)
    coverage_score: float = Field(ge=0.0, le=1.0)
    llm_score: int | None = Field(default=None, ge=0, le=100)


class SourceReference(BaseModel):
    """Where a chunk comes from: its SourceId (``{document_id}:{chunk_index}``), document, link, page and section."""

    source_id: str
    document_id: str
    document_name: str
    chunk_index: int
    # The link back to the source and its title (docs/contract.md, "Sources"); no url for uploads.
    url: str | None = None
    title: str | None = None
    page_number: int | None = None
    section: str | None = None


class Citation(SourceReference):
    """Deterministic source citation (SourceId = ``{document_id}:{chunk_index}``)."""

    relevance_score: float = Field(ge=0.0, le=1.0)
    snippet: str
    snippet_full: str
    # A public (shared, every-tenant) document rather than the requester's own tenant's.
    public: bool = False
    # The chunk's language (ISO 639 code; given at indexing or detected), None when unknown.
    language: str | None = None


class RouteTarget(BaseModel):
    """Routing destination when the answer is not cited with confidence."""

    tag: str
    owner_user_id: str | None = None
    owner_email: str | None = None
    reason: str
    fallback: bool


class RAGResponse(BaseModel):
    """Output from RAG generation."""

    answer: str
    confidence: ConfidenceScore
    citations: list[Citation]
    action: Literal["CITE", "ROUTE"]
    route_to: RouteTarget | None = None
    model_used: str
    context_chunks_used: int = Field(ge=0)
    context_tokens_used: int = Field(ge=0)
    generation_time_ms: float = Field(ge=0.0)
    grounded: bool
    # Only with SOURCEBOUND_DEBUG_UNGROUNDED_DRAFT on a ROUTE (docs/contract.md "Routed answers"):
    # the LLM's draft is kept apart from ``answer`` so no client shows it as an answer.
    ungrounded_draft: str | None = None
    # The requester's tenant glossary terms found in the query (docs/contract.md, "Glossary").
    glossary_terms: list[str] = Field(default_factory=list)
    # The server-side conversation the turn was recorded in (docs/contract.md, "Conversations").
    conversation_id: str | None = None
    # Only with SOURCEBOUND_DEBUG_REMOVED_SENTENCES (docs/contract.md, "Answers"): the LLM answer's sentences the
    # verifier removed (uncited or unsupported by the chunk they cite), with the reason and support score.
    removed_sentences: list[dict[str, Any]] | None = None
    # The query-log row of this answer, for ``POST /feedback`` (docs/contract.md, "Feedback and knowledge gaps").
    query_id: str | None = None

    @model_serializer(mode="wrap")
    def _drop_unset_draft(self, handler):  # unannotated: the schema stays the fields' schema
        # Every serialisation (ours, FastAPI's response model) shows these fields only when they are set.
        data = handler(self)
        for name in ("ungrounded_draft", "conversation_id", "removed_sentences", "query_id"):
            if getattr(self, name) is None:
                data.pop(name, None)
        return data

    def to_json(self) -> dict[str, Any]:
        """The JSON-ready dict; the optional fields (draft, conversation, removed sentences, query id) when set."""
        return self.model_dump(mode="json")


class SearchResult(BaseModel):
    """One retrieved chunk. ``score`` is the dense cosine similarity to the query in every mode."""

    source_id: str
    document_id: str
    document_name: str
    chunk_index: int
    url: str | None = None
    title: str | None = None
    score: float
    snippet: str
    tags: list[str]
    # A public (shared, every-tenant) document rather than the requester's own tenant's.
    public: bool = False
    # The chunk's language (ISO 639 code; given at indexing or detected), None when unknown.
    language: str | None = None
    # The artifact and provenance ids the document was indexed with (meta), None when it had none.
    artifact_id: str | None = None
    provenance_id: str | None = None


class SearchMetadata(BaseModel):
    """How many returned results each retrieval side found, the retrieval latency and the glossary terms matched."""

    vector_results: int = Field(ge=0)
    keyword_results: int = Field(ge=0)
    latency_ms: float = Field(ge=0.0)
    glossary_terms: list[str] = Field(default_factory=list)


class SearchResponse(BaseModel):
    """Output of retrieval-only search."""

    results: list[SearchResult]
    context: str
    tokens_used: int = Field(ge=0)
    search_mode: SearchMode
    metadata: SearchMetadata
    # Why ``results`` is empty (nothing visible matched, or nothing reached RAG_SEARCH_MIN_SIMILARITY); null otherwise.
    empty_reason: str | None = None
    # The query-log row of this search, set by the server (docs/contract.md, "Feedback and knowledge gaps").
    query_id: str | None = None

    @model_serializer(mode="wrap")
    def _drop_unset_query_id(self, handler):  # unannotated: the schema stays the fields' schema
        data = handler(self)
        if self.query_id is None:
            data.pop("query_id", None)
        return data


class EnrichRequest(_Identity):
    """
    Input for enrichment: context for a message another service will send to its own model.

    The message is used for retrieval as given and returned unchanged (docs/contract.md, "Enrichment"):
    enrichment adds optional context, it never rewrites the user's input. ``top_k`` defaults to the
    pipeline's ``RAG_TOTAL_CONTEXT_CHUNKS``.
    """

    message: str = Field(max_length=MAX_QUERY_CHARS)
    top_k: int | None = Field(default=None, ge=1, le=MAX_CONTEXT_CHUNKS)
    # Narrows to one branch of the access rule, as on search and RAG; it can never widen.
    scope: Literal["project", "user", "tenant", "public"] | None = None

    @field_validator("message")
    @classmethod
    def _message_not_blank(cls, value: str) -> str:
        return _text_input(value, "message")


class EnrichSource(SourceReference):
    """One chunk of an enrichment context, for the caller to cite."""

    score: float


class EnrichResponse(BaseModel):
    """
    Output of enrichment: a context block in the answer prompt's SourceId format, its sources and tokens.

    ``empty_reason`` says why ``context`` is empty (nothing visible matched, nothing reached the minimum
    similarity, or nothing fitted the token budget); it is ``None`` when there is context.
    """

    message: str
    context: str
    sources: list[EnrichSource]
    context_chunks_used: int = Field(ge=0)
    tokens_used: int = Field(ge=0)
    empty_reason: str | None = None
    # The query-log row of this enrichment, set by the server (docs/contract.md, "Feedback and knowledge gaps").
    query_id: str | None = None

    @model_serializer(mode="wrap")
    def _drop_unset_query_id(self, handler):  # unannotated: the schema stays the fields' schema
        data = handler(self)
        if self.query_id is None:
            data.pop("query_id", None)
        return data


__all__ = [
    "INSUFFICIENT_INFORMATION_ANSWER",
    "ChatMessage",
    "Citation",
    "ConfidenceScore",
    "EnrichRequest",
    "EnrichResponse",
    "EnrichSource",
    "QueryType",
    "RAGRequest",
    "RAGResponse",
    "RouteTarget",
    "SearchFilters",
    "SearchMetadata",
    "SearchMode",
    "SearchRequest",
    "SearchResponse",
    "SearchResult",
]

"""
Identity and metadata rules of an indexed document, shared by the indexing components,
the indexing service and the lifecycle functions (pure functions, no Haystack component).

One place decides:

* which source types exist and which file extensions map to them;
* the chunk metadata fields of the data model (:data:`CHUNK_META_FIELDS`);
* what a valid ``document_id``, ``tenant_id``, ``tags`` and ``scope`` are
  (:func:`access_meta_problems`), so the service rejects a bad batch with the
  same words a component would use;
* how a ``document_id`` is derived when none is given: deterministically from the
  tenant and the canonical source (:func:`derive_document_id`), so re-indexing the
  same source always hits the same chunks;
* how ``source_hash`` and ``chunk_hash`` are computed (:func:`content_hash`).

Usage:

```python
from components.core.document_identity import derive_document_id, access_meta_problems

derive_document_id("acme", "https://help.example.com/vacation")  # 'doc-…' (stable)
access_meta_problems({"tenant_id": "acme", "tags": []})  # ['tags must be a non-empty list of strings']
```
"""

import hashlib
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from components.core.errors import SourceboundError
from components.core.url_canonicalizer import canonicalize_url

# File extension -> source_type. Raw text sent through the API is source_type "text".
SOURCE_TYPE_BY_EXTENSION = {
    ".txt": "txt",
    ".text": "txt",
    ".md": "md",
    ".markdown": "md",
    ".html": "html",
    ".htm": "html",
    ".pdf": "pdf",
    ".docx": "docx",
    ".pptx": "pptx",
    ".xlsx": "xlsx",
    ".csv": "csv",
    ".yaml": "yaml",
    ".yml": "yaml",
}
SOURCE_TYPES = ("txt", "md", "html", "pdf", "docx", "pptx", "xlsx", "csv", "yaml", "text")
SUPPORTED_EXTENSIONS = tuple(sorted(SOURCE_TYPE_BY_EXTENSION))

SCOPES = ("tenant", "user", "project", "public")
DEFAULT_SCOPE = "tenant"
# Public documents are visible to every tenant (docs/contract.md "Access rule"); their ids carry this prefix, and
# no other document's may, so a public SourceId never equals a tenant's own in one result.
PUBLIC_SCOPE = "public"
PUBLIC_ID_PREFIX = "public-"

DOCUMENT_ID_PATTERN = r"[A-Za-z0-9-]+"
_DOCUMENT_ID_RE = re.compile(rf"^{DOCUMENT_ID_PATTERN}$")
MAX_DOCUMENT_ID_CHARS = 128
MAX_IDENTIFIER_CHARS = 256

# The flat chunk meta (docs/contract.md, "Documents, chunks and SourceIds"), in a stable order.
SOURCE_META_FIELDS = (
    "tenant_id",
    "tags",
    "scope",
    "user_id",
    "project_id",
    "document_id",
    "document_name",
    "source_type",
    "source_uri",
    "source_hash",
    "source_updated_at",
    "language",
    "verified",
    "tainted",
    "artifact_id",
    "provenance_id",
    "embedding_model",
)
# ``indexed_at``: when the chunk was written (ISO 8601 UTC), what stale documents are measured by
# (docs/contract.md, "Feedback and knowledge gaps").
CHUNK_ONLY_META_FIELDS = ("chunk_index", "chunk_hash", "token_count", "page_number", "section", "indexed_at")
CHUNK_META_FIELDS = SOURCE_META_FIELDS + CHUNK_ONLY_META_FIELDS
# Fields the pipeline computes; a caller's meta may not set them.
COMPUTED_META_FIELDS = frozenset({"chunk_index", "chunk_hash", "token_count", "embedding_model", "indexed_at"})


class IndexingValidationError(SourceboundError, ValueError):
    """
    Input that cannot be indexed; nothing of the batch was written.

    ``problems`` lists every problem found, one line each; the message joins them.
    """

    def __init__(self, problems: Iterable[str]) -> None:
        self.problems = list(problems)
        count = len(self.problems)
        header = f"Nothing was indexed: {count} problem{'s' if count != 1 else ''} in the batch"
        super().__init__(header + ":\n" + "\n".join(f"- {problem}" for problem in self.problems))


def supported_types_text() -> str:
    """The supported file types, for error messages."""
    return ", ".join(SUPPORTED_EXTENSIONS)


def source_type_for_path(path: str | Path) -> str | None:
    """The source_type of a file name by its extension (case-insensitive), or ``None`` when unsupported."""
    return SOURCE_TYPE_BY_EXTENSION.get(Path(path).suffix.lower())


def content_hash(data: bytes | str) -> str:
    """SHA-256 hex digest of bytes, or of a string's UTF-8 encoding."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    return hashlib.sha256(data).hexdigest()


def file_uri(path: str | Path) -> str:
    """The canonical ``file://`` URI of a local file (absolute, symlinks resolved)."""
    return Path(path).resolve().as_uri()


def canonical_source(meta: Mapping[str, Any]) -> str | None:
    """
    The canonical source of a document: its canonical ``source_uri``, else the ``file://`` URI of
    ``file_path``; ``None`` when the document has neither (raw text without a URI).
    """
    uri = meta.get("source_uri")
    if isinstance(uri, str) and uri.strip():
        return canonicalize_url(uri)
    file_path = meta.get("file_path")
    if isinstance(file_path, str | Path) and str(file_path).strip():
        return file_uri(file_path)
    return None


def derive_document_id(tenant_id: str, source: str) -> str:
    """
    A deterministic ``document_id`` from the tenant and the canonical source (URI or content hash).

    The tenant is part of the input so two tenants indexing the same URL never share chunk ids.

    :returns: ``"doc-"`` and 20 hex characters; matches ``[A-Za-z0-9-]+``.
    """
    digest = hashlib.sha256(f"{tenant_id}\n{source}".encode()).hexdigest()
    return f"doc-{digest[:20]}"


def document_id_for(external_id: str, prefix: str = "") -> str:
    """
    The ``document_id`` of a document another system names (a DATS ``artifact_id``, a plan ``source_id``): the
    id itself when it is a valid document id (with ``prefix``), else a readable slug of it and a hash of it, so
    the same external id always names the same document (docs/api.md, "Specification routes").

    :returns: A string matching ``[A-Za-z0-9-]+`` of at most ``MAX_DOCUMENT_ID_CHARS`` characters.
    """
    candidate = f"{prefix}{external_id}"
    if document_id_problem(candidate) is None:
        return candidate
    slug = re.sub(r"[^A-Za-z0-9]+", "-", external_id).strip("-")[:60].strip("-")
    digest = hashlib.sha256(external_id.encode("utf-8", errors="surrogatepass")).hexdigest()[:16]
    return f"{prefix}{slug}-{digest}" if slug else f"{prefix}id-{digest}"


def document_id_problem(document_id: Any) -> str | None:
    """Why ``document_id`` is invalid, or ``None`` when it is valid."""
    if not isinstance(document_id, str) or not _DOCUMENT_ID_RE.match(document_id):
        return f"document_id {document_id!r} is invalid: use only letters, digits and '-' ([A-Za-z0-9-]+)"
    if len(document_id) > MAX_DOCUMENT_ID_CHARS:
        return f"document_id {document_id[:20]!r}... is longer than {MAX_DOCUMENT_ID_CHARS} characters"
    return None


def normalise_tags(tags: Any) -> list[str] | None:
    """
    Tags as a clean list: a comma-separated string or a list of strings, stripped, de-duplicated in order.

    :returns: The list, or ``None`` when ``tags`` is not a string or a list of strings.
    """
    if isinstance(tags, str):
        tags = tags.split(",")
    if not isinstance(tags, list | tuple) or not all(isinstance(tag, str) for tag in tags):
        return None
    return list(dict.fromkeys(tag.strip() for tag in tags if tag.strip()))


def _identifier_problem(value: Any, field: str, required: bool) -> str | None:
    if value is None or (isinstance(value, str) and not value.strip()):
        return f"{field} is required" if required else None
    if not isinstance(value, str):
        return f"{field} must be a string, got {type(value).__name__}"
    if len(value) > MAX_IDENTIFIER_CHARS or any(ord(char) < 32 for char in value):
        return f"{field} must be at most {MAX_IDENTIFIER_CHARS} printable characters"
    return None


def access_meta_problems(meta: Mapping[str, Any]) -> list[str]:
    """
    Problems with the identity and access fields of one document's meta.

    Checks ``tenant_id`` (required), ``tags`` (at least one), ``scope`` and the
    ``user_id``/``project_id`` it needs, and ``document_id`` when given.

    :returns: One message per problem; empty when the meta is valid.
    """
    problems = []
    for field, required in (("tenant_id", True), ("user_id", False), ("project_id", False)):
        problem = _identifier_problem(meta.get(field), field, required)
        if problem:
            problems.append(problem)
    tags = normalise_tags(meta.get("tags"))
    if not tags:
        problems.append("tags are required: give at least one tag (a non-empty list of strings)")
    elif any(len(tag) > MAX_IDENTIFIER_CHARS for tag in tags):
        problems.append(f"each tag must be at most {MAX_IDENTIFIER_CHARS} characters")
    scope = meta.get("scope") or DEFAULT_SCOPE
    if scope not in SCOPES:
        problems.append(f"scope {scope!r} is invalid: use one of {', '.join(SCOPES)}")
    elif scope == "user" and not meta.get("user_id"):
        problems.append("scope 'user' needs a user_id")
    elif scope == "project" and (not meta.get("project_id") or not meta.get("user_id")):
        problems.append(
            "scope 'project' needs a project_id and a user_id (the owner: project documents are private to their owner)"
        )
    if meta.get("document_id") is not None:
        problem = document_id_problem(meta["document_id"])
        if problem:
            problems.append(problem)
        elif scope == PUBLIC_SCOPE and not str(meta["document_id"]).startswith(PUBLIC_ID_PREFIX):
            problems.append(
                f"a public document's document_id must start with '{PUBLIC_ID_PREFIX}', got {meta['document_id']!r}"
            )
        elif scope != PUBLIC_SCOPE and str(meta["document_id"]).startswith(PUBLIC_ID_PREFIX):
            problems.append(
                f"document_id {meta['document_id']!r}: "
                f"ids starting with '{PUBLIC_ID_PREFIX}' are reserved for scope 'public'"
            )
    for flag in ("verified", "tainted"):
        if meta.get(flag) is not None and not isinstance(meta[flag], bool):
            problems.append(f"{flag} must be true or false")
    return problems


def tenant_document_filter(tenant_id: str, document_ids: str | Iterable[str]) -> dict[str, Any]:
    """Haystack filter for the chunks of one or several documents of one tenant."""
    if isinstance(document_ids, str):
        document_condition = {"field": "meta.document_id", "operator": "==", "value": document_ids}
    else:
        document_condition = {"field": "meta.document_id", "operator": "in", "value": list(document_ids)}
    return {
        "operator": "AND",
        "conditions": [{"field": "meta.tenant_id", "operator": "==", "value": tenant_id}, document_condition],
    }


def tenant_filter(tenant_id: str) -> dict[str, Any]:
    """Haystack filter for every chunk of one tenant."""
    return {"field": "meta.tenant_id", "operator": "==", "value": tenant_id}

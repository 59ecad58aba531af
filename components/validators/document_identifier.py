"""
Gives every source document its identity and source-level meta, before anything is compared or embedded.

For each incoming Document (converted files and raw text from the API alike):

* validates ``tenant_id`` (required), ``tags`` (at least one), ``scope``
  (default ``tenant``; ``user``/``project`` need their id) and a given
  ``document_id`` (``[A-Za-z0-9-]+``);
* canonicalises ``source_uri`` (``components.core.url_canonicalizer``); a file
  without one gets its ``file://`` URI; an HTTP(S) source outside
  ``allowed_domains`` is rejected;
* derives ``document_id`` when none is given, deterministically from the tenant
  and the canonical source (URI, else ``document_name``, else the content hash),
  so re-indexing a source always addresses the same chunks;
* fills ``source_type`` (``text`` for raw text), ``source_hash`` (SHA-256 of the
  content when no converter set it), ``embedding_model``, and the defaults
  ``verified=False``, ``tainted=False`` and ``None`` for the other fields;
* collapses duplicate sources within the batch (URL variants of one page) and
  rejects one ``document_id`` given to different content.

Problems are collected over the whole batch and raised together as one
``IndexingValidationError``, so a bad batch writes nothing.

Usage:

```python
from haystack import Document
from components.validators.document_identifier import DocumentIdentifier

identifier = DocumentIdentifier(allowed_domains=["example.com"])
docs = identifier.run(documents=[[Document(content="Hi", meta={"tenant_id": "acme", "tags": ["hr"]})]])["documents"]
docs[0].meta["document_id"]  # 'doc-…'
```
"""

import logging
from collections import OrderedDict
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict
from haystack.core.component.types import Variadic

from components.core.document_identity import (
    COMPUTED_META_FIELDS,
    DEFAULT_SCOPE,
    PUBLIC_ID_PREFIX,
    PUBLIC_SCOPE,
    SOURCE_META_FIELDS,
    IndexingValidationError,
    access_meta_problems,
    canonical_source,
    content_hash,
    derive_document_id,
    normalise_tags,
)
from components.core.url_canonicalizer import domain_allowed, parse_domain_list
from components.runtime.offline import DEFAULT_EMBEDDING_MODEL_NAME

logger = logging.getLogger(__name__)

# Meta used only on the way in; the canonical source_uri replaces it.
_TRANSIENT_META = ("file_path",)


def document_label(meta: dict[str, Any], position: int) -> str:
    """How error messages name a document: its document_id, file, URI or name, else its batch position."""
    for key in ("document_id", "file_path", "source_uri", "document_name"):
        if meta.get(key):
            return str(meta[key])
    return f"document #{position + 1}"


@component
class DocumentIdentifier:
    """Validates and completes the source-level meta of every document; derives ``document_id``."""

    def __init__(
        self,
        embedding_model: str = DEFAULT_EMBEDDING_MODEL_NAME,
        allowed_domains: list[str] | str | None = None,
    ) -> None:
        """
        Create the identifier.

        :param embedding_model: The embedder's model name, recorded as ``embedding_model`` on every chunk
            (a change re-indexes everything). Keep it in step with the embedder in the YAML.
        :param allowed_domains: Domains (and their subdomains) HTTP(S) sources may come from, as a list or a
            comma-separated string (``RAG_ALLOWLIST_DOMAINS``); empty allows all.
        """
        if not embedding_model or not isinstance(embedding_model, str):
            raise ValueError("embedding_model must be a non-empty model name")
        self.embedding_model = embedding_model
        self.allowed_domains = allowed_domains
        self._domains = parse_domain_list(allowed_domains)

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component."""
        return default_to_dict(self, embedding_model=self.embedding_model, allowed_domains=self.allowed_domains)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "DocumentIdentifier":
        """Deserialise the component."""
        return default_from_dict(cls, data)

    def source_problems(self, meta: dict[str, Any]) -> list[str]:
        """Problems with one source's meta (access fields and the domain allowlist), without the label."""
        problems = access_meta_problems(meta)
        uri = canonical_source(meta)
        if uri and not domain_allowed(uri, self._domains):
            problems.append(f"source {uri} is outside the allowed domains ({', '.join(self._domains)})")
        return problems

    def identify(self, document: Document) -> Document:
        """Return a copy of ``document`` with complete, validated source-level meta (no validation raised)."""
        meta = {key: value for key, value in document.meta.items() if key not in COMPUTED_META_FIELDS}
        meta["tags"] = normalise_tags(meta.get("tags")) or []
        meta["scope"] = meta.get("scope") or DEFAULT_SCOPE
        meta.setdefault("source_type", "text")
        if not meta.get("source_hash"):
            meta["source_hash"] = content_hash(document.content or "")
        canonical = canonical_source(meta)
        if canonical:
            meta["source_uri"] = canonical
        if not meta.get("document_id"):
            if canonical:
                source = canonical
            elif meta.get("document_name"):
                source = f"name:{meta['document_name']}"
            else:
                source = f"sha256:{meta['source_hash']}"
            meta["document_id"] = derive_document_id(str(meta.get("tenant_id")), source)
            if meta["scope"] == PUBLIC_SCOPE:
                meta["document_id"] = PUBLIC_ID_PREFIX + meta["document_id"]
        meta["embedding_model"] = self.embedding_model
        meta["verified"] = bool(meta.get("verified", False))
        meta["tainted"] = bool(meta.get("tainted", False))
        for key in (*SOURCE_META_FIELDS, "page_number", "section"):
            meta.setdefault(key, None)
        for key in _TRANSIENT_META:
            meta.pop(key, None)
        return Document(content=document.content, meta=meta)

    @component.output_types(documents=list[Document])
    def run(self, documents: Variadic[list[Document]]) -> dict[str, list[Document]]:
        """
        Identify the documents of one batch.

        :param documents: Lists of documents (converter outputs and raw text); all sections or pages of one
            source share its identity.
        :returns: ``documents``: the identified documents, duplicates of one source removed.
        :raises IndexingValidationError: Listing every problem of the batch.
        """
        flat = [document for batch in documents for document in batch]
        problems: list[str] = []
        # (tenant, document_id) -> origin -> documents; an origin is one source (its sections or pages).
        groups: OrderedDict[tuple[str, str], OrderedDict[tuple, list[Document]]] = OrderedDict()
        seen: set[tuple] = set()
        for position, document in enumerate(flat):
            source_problems = self.source_problems(document.meta)
            if document.content is None or not document.content.strip():
                source_problems.append("the document is empty or contains only whitespace")
            if source_problems:
                label = document_label(document.meta, position)
                problems.extend(f"{label}: {problem}" for problem in source_problems)
                continue
            origin = (
                document.meta.get("file_path"),
                document.meta.get("source_uri"),
                document.meta.get("source_hash") or content_hash(document.content or ""),
            )
            identified = self.identify(document)
            key = (identified.meta["tenant_id"], identified.meta["document_id"])
            # The same part twice (one raw text sent twice) would give duplicate chunks: keep it once.
            part = (key, origin, identified.content, identified.meta["section"], identified.meta["page_number"])
            if part in seen:
                continue
            seen.add(part)
            groups.setdefault(key, OrderedDict()).setdefault(origin, []).append(identified)

        result: list[Document] = []
        for (tenant_id, document_id), origins in groups.items():
            hashes = {documents_of_origin[0].meta["source_hash"] for documents_of_origin in origins.values()}
            if len(hashes) > 1:
                names = ", ".join(str(origin[0] or origin[1] or f"content {origin[2][:12]}") for origin in origins)
                problems.append(
                    f"{document_id}: one document_id is given to {len(origins)} different sources in this batch "
                    f"({names}); give each source its own document_id"
                )
                continue
            if len(origins) > 1:
                logger.warning(
                    "DocumentIdentifier: %d copies of one source (tenant %s, document %s) in this batch; "
                    "indexing it once.",
                    len(origins),
                    tenant_id,
                    document_id,
                )
            result.extend(next(iter(origins.values())))
        if problems:
            raise IndexingValidationError(problems)
        return {"documents": result}

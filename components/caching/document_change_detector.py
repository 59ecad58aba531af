"""
Decides, before anything is cleaned, chunked or embedded, which documents of a batch need indexing.

Re-indexing must be cheap and idempotent: a source whose ``source_hash`` (and
access meta) equals what the store holds is skipped and reported ``unchanged``,
so it costs one lookup instead of an embedding pass. The comparison reads the
stored first chunk (``chunk_index`` 0) of the same tenant and document: all
chunks of one document share their source-level meta, and the writer replaces a
document's chunks atomically, so chunk 0 speaks for the document.

A document is re-indexed when any of ``compare_fields`` differs: its content
(``source_hash``), who may see it (``tags``, ``scope``, ``user_id``,
``project_id``), how it is cited (``document_name``, ``source_uri``, ...), or the
``embedding_model``, or the index format its chunks were written in (``index_format``: chunk 0's
``meta.index_format`` differs from the detector's, e.g. chunks written before contextual headers;
docs/operations.md, "Re-indexing after an index-format change"). ``source_updated_at`` alone does not
count (a checkout that only touches files must not re-embed them). Flags set later (``verified``,
``tainted``) are not compared: they change through ``document_lifecycle.set_flags``, and an unchanged
re-index keeps them.

Document ids are per tenant (docs/contract.md "Document ids"): on a store whose
point ids derive from the tenant (``ids_per_tenant = True``: the Qdrant Edge store and the server profile's)
another tenant's documents are never looked at, so the plan of a document never
depends on whether another tenant uses its id. On any other store (chunk ids
``document_id:chunk_index`` would collide across tenants) a ``document_id`` that
another tenant already uses stays an ``error`` for that document.

Usage:

```python
from components.caching.document_change_detector import DocumentChangeDetector

detector = DocumentChangeDetector(document_store=store)
result = detector.run(documents=identified_documents)
result["documents"]  # only the documents to index
result["plan"]  # [{"document_id": ..., "status": "pending" | "unchanged" | "error", ...}] in batch order
```
"""

import logging
from collections import OrderedDict
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict
from haystack.document_stores.types import DocumentStore

from components.core.document_identity import tenant_document_filter

logger = logging.getLogger(__name__)

DEFAULT_COMPARE_FIELDS = [
    "source_hash",
    "tags",
    "scope",
    "user_id",
    "project_id",
    "document_name",
    "source_type",
    "source_uri",
    "language",
    "artifact_id",
    "provenance_id",
    "embedding_model",
]


def plan_entry(meta: dict[str, Any], status: str, error: str | None = None) -> dict[str, Any]:
    """One document's line of the indexing result."""
    entry = {
        "document_id": meta.get("document_id"),
        "tenant_id": meta.get("tenant_id"),
        "document_name": meta.get("document_name"),
        "source_uri": meta.get("source_uri"),
        "status": status,
        "chunks": 0,
        "tokens": 0,
    }
    if error:
        entry["error"] = error
    return entry


def _comparable(field: str, value: Any) -> Any:
    if field == "tags" and isinstance(value, list | tuple):
        return sorted(set(value))
    return value


def count_by_filter(store: DocumentStore, filters: dict[str, Any]) -> int:
    """``count_documents_by_filter`` where the store has it, else a filtered read."""
    if hasattr(store, "count_documents_by_filter"):
        return store.count_documents_by_filter(filters)
    return len(store.filter_documents(filters))


@component
class DocumentChangeDetector:
    """Skips documents the store already holds unchanged; plans the rest for indexing."""

    def __init__(
        self, document_store: DocumentStore, compare_fields: list[str] | None = None, index_format: str | None = None
    ) -> None:
        """
        Create the detector.

        :param document_store: The store the writer writes to.
        :param compare_fields: Source-level meta fields whose change triggers re-indexing.
        :param index_format: The format the pipeline writes chunks in (``meta.index_format``, set by
            ``ChunkContextHeader``); a document stored in another format is re-indexed. ``None``: not compared.
        """
        if compare_fields is not None and "source_hash" not in compare_fields:
            raise ValueError("compare_fields must include 'source_hash', or changed content would never be re-indexed")
        if index_format is not None and (not isinstance(index_format, str) or not index_format):
            raise ValueError(f"index_format must be null or a non-empty string, got {index_format!r}.")
        self.document_store = document_store
        self.compare_fields = compare_fields
        self.index_format = index_format
        self._fields = list(compare_fields or DEFAULT_COMPARE_FIELDS)

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component."""
        return default_to_dict(
            self, document_store=self.document_store, compare_fields=self.compare_fields, index_format=self.index_format
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "DocumentChangeDetector":
        """Deserialise the component."""
        return default_from_dict(cls, data)

    def _status(self, meta: dict[str, Any]) -> tuple[str, str | None]:
        tenant_id, document_id = meta["tenant_id"], meta["document_id"]
        if not getattr(self.document_store, "ids_per_tenant", False):
            error = self._other_tenant_error(tenant_id, document_id)
            if error:
                return "error", error
        first_chunk = tenant_document_filter(tenant_id, document_id)
        first_chunk["conditions"].append({"field": "meta.chunk_index", "operator": "==", "value": 0})
        stored = self.document_store.filter_documents(first_chunk)
        if not stored:
            return "pending", None
        previous = stored[0].meta
        if self.index_format is not None and previous.get("index_format") != self.index_format:
            return "pending", None
        changed = [
            field
            for field in self._fields
            if _comparable(field, meta.get(field)) != _comparable(field, previous.get(field))
        ]
        return ("pending", None) if changed else ("unchanged", None)

    def _other_tenant_error(self, tenant_id: str, document_id: str) -> str | None:
        """For stores whose ids are global: refuse an id another tenant holds (it would overwrite its chunks)."""
        other_tenants = {
            "operator": "AND",
            "conditions": [
                {"field": "meta.document_id", "operator": "==", "value": document_id},
                {"field": "meta.tenant_id", "operator": "!=", "value": tenant_id},
            ],
        }
        if count_by_filter(self.document_store, other_tenants):
            return (
                f"document_id {document_id} is already used by another tenant; give this document another document_id"
            )
        return None

    @component.output_types(documents=list[Document], plan=list[dict])
    def run(self, documents: list[Document], force: bool = False) -> dict[str, Any]:
        """
        Plan the batch.

        :param documents: Identified documents (``DocumentIdentifier`` output); the parts of one source share
            ``tenant_id`` and ``document_id``.
        :param force: Re-index every document even when unchanged (after changing the chunker, for example).
        :returns: ``documents``: those to index, in order; ``plan``: one entry per document with status
            ``pending``, ``unchanged`` or ``error``.
        """
        groups: OrderedDict[tuple[str, str], list[Document]] = OrderedDict()
        for document in documents:
            groups.setdefault((document.meta["tenant_id"], document.meta["document_id"]), []).append(document)
        plan: list[dict[str, Any]] = []
        to_index: list[Document] = []
        for parts in groups.values():
            meta = parts[0].meta
            # Even a forced re-index looks first (on a store with global ids it must not overwrite another tenant).
            status, error = self._status(meta)
            if force and status == "unchanged":
                status = "pending"
            plan.append(plan_entry(meta, status, error))
            if status == "pending":
                to_index.extend(parts)
            elif status == "error":
                logger.warning("DocumentChangeDetector: %s", error)
        return {"documents": to_index, "plan": plan}

"""
Writes each document's chunks so that the index holds exactly one version of it.

For every document planned for indexing, the writer calls the store's
``replace_documents(delete_filters={tenant_id == T and document_id == X},
documents=chunks)``: the old chunks are deleted and the new ones written under
one write lock, so a reader never sees both versions, and a shorter new version
leaves no stale tail chunks. Documents are written one at a time: a failure
leaves that document as it was (fully old or fully new) and is reported as its
``error``; the others are still written.

The result merges the change detector's plan (``unchanged`` and ``error``
documents) with what was written, in batch order:
``{"document_id", "status": "indexed" | "unchanged" | "error", "chunks", "tokens", "error"?}``
plus ``document_name``/``source_uri``/``tenant_id`` for logs, and ``chunks_written``.

A store without ``replace_documents`` (Haystack's ``InMemoryDocumentStore``)
works through delete-then-write, which is not atomic; the writer says so once.

Usage:

```python
from components.writers.lifecycle_document_writer import LifecycleDocumentWriter

writer = LifecycleDocumentWriter(document_store=store)
result = writer.run(documents=embedded_chunks, plan=detector_output["plan"])
result["chunks_written"], result["documents"]
```
"""

import logging
from collections import OrderedDict
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict
from haystack.document_stores.types import DocumentStore, DuplicatePolicy

from components.caching.document_change_detector import plan_entry
from components.core.document_identity import tenant_document_filter
from components.core.errors import InsufficientStorageError

logger = logging.getLogger(__name__)


@component
class LifecycleDocumentWriter:
    """Replaces each document's chunks atomically; reports a status per document."""

    def __init__(self, document_store: DocumentStore) -> None:
        """
        Create the writer.

        :param document_store: The store; ``replace_documents`` makes replacement atomic.
        """
        self.document_store = document_store
        if not hasattr(document_store, "replace_documents"):
            logger.warning(
                "LifecycleDocumentWriter: %s has no replace_documents; re-indexing deletes then writes, so a reader "
                "may briefly see neither version. Use components.qdrant_edge.QdrantEdgeDocumentStore in production.",
                type(document_store).__name__,
            )

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component."""
        return default_to_dict(self, document_store=self.document_store)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "LifecycleDocumentWriter":
        """Deserialise the component."""
        return default_from_dict(cls, data)

    def _replace(self, tenant_id: str, document_id: str, chunks: list[Document]) -> int:
        delete_filters = tenant_document_filter(tenant_id, document_id)
        if hasattr(self.document_store, "replace_documents"):
            _deleted, written = self.document_store.replace_documents(delete_filters=delete_filters, documents=chunks)
            return written
        self.document_store.delete_by_filter(delete_filters)
        return self.document_store.write_documents(chunks, policy=DuplicatePolicy.OVERWRITE)

    @component.output_types(documents=list[dict], chunks_written=int)
    def run(self, documents: list[Document], plan: list[dict] | None = None) -> dict[str, Any]:
        """
        Write the chunks of each planned document.

        :param documents: Embedded chunks with ids ``document_id:chunk_index``.
        :param plan: The change detector's plan; without it every document in ``documents`` is written.
        :returns: ``documents``: one result per document in batch order; ``chunks_written``: the total.
        """
        chunks_by_document: OrderedDict[tuple[str, str], list[Document]] = OrderedDict()
        for chunk in documents:
            chunks_by_document.setdefault((chunk.meta["tenant_id"], chunk.meta["document_id"]), []).append(chunk)
        if plan is None:
            plan = [plan_entry(chunks[0].meta, "pending") for chunks in chunks_by_document.values()]

        # A full disk fails the whole request before anything is written (docs/operations.md, "Disk space").
        ensure_free_space = getattr(self.document_store, "ensure_free_space", None)
        if callable(ensure_free_space):
            pending = {(entry["tenant_id"], entry["document_id"]) for entry in plan if entry["status"] == "pending"}
            ensure_free_space([chunk for key in pending for chunk in chunks_by_document.get(key, [])])

        results = []
        chunks_written = 0
        for entry in plan:
            entry = dict(entry)
            if entry["status"] != "pending":
                results.append(entry)
                continue
            chunks = chunks_by_document.get((entry["tenant_id"], entry["document_id"]), [])
            if not chunks:
                entry.update(status="error", error="no text is left after cleaning; the document was not changed")
                results.append(entry)
                continue
            try:
                written = self._replace(entry["tenant_id"], entry["document_id"], chunks)
            except InsufficientStorageError:
                raise  # every later document would fail alike: the request fails
            except Exception as error:  # one document's failure must not stop the others
                logger.warning("LifecycleDocumentWriter: document %s was not written: %s", entry["document_id"], error)
                entry.update(status="error", error=f"{type(error).__name__}: {error}")
                results.append(entry)
                continue
            chunks_written += written
            entry.update(
                status="indexed", chunks=written, tokens=sum(chunk.meta.get("token_count") or 0 for chunk in chunks)
            )
            results.append(entry)
        return {"documents": results, "chunks_written": chunks_written}

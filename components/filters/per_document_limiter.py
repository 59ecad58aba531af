"""
``PerDocumentLimiter``: at most ``max_chunks_per_doc`` chunks per source document,
then the top ``top_k`` overall (docs/contract.md, "Retrieval quality controls":
``RAG_MAX_CHUNKS_PER_DOC`` and ``RAG_TOTAL_CONTEXT_CHUNKS``). Rank order is kept, so each document keeps its
best-ranked chunks.
"""

from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict

from components.core.span_tags import documents_in_out, tag_span
from components.core.text_analysis import document_id_of


@component
class PerDocumentLimiter:
    """
    Caps chunks per document, then keeps the first ``top_k``.

    Usage:
    ```python
    limiter = PerDocumentLimiter(max_chunks_per_doc=3, top_k=5)
    docs = limiter.run(documents=ranked, top_k=4)["documents"]
    ```
    """

    # run() changes none of its inputs and keeps none of them: the planned pipeline passes them without a defensive
    # copy (docs/contract.md, "Pipeline runs").
    reads_inputs_only = True

    def __init__(self, max_chunks_per_doc: int = 3, top_k: int = 5) -> None:
        """
        :param max_chunks_per_doc: Most chunks kept from one document.
        :param top_k: Chunks kept in total when the run does not say.
        """
        for name, value in (("max_chunks_per_doc", max_chunks_per_doc), ("top_k", top_k)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}.")
        self.max_chunks_per_doc = max_chunks_per_doc
        self.top_k = top_k

    def to_dict(self) -> dict[str, Any]:
        """Serialize the component."""
        return default_to_dict(self, max_chunks_per_doc=self.max_chunks_per_doc, top_k=self.top_k)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "PerDocumentLimiter":
        """Deserialize the component."""
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document], top_k: int | None = None) -> dict[str, Any]:
        """
        :param documents: Chunks in rank order.
        :param top_k: Chunks to keep in total (defaults to the init value).
        :returns: ``documents``: the kept chunks, rank order kept.
        """
        limit = self.top_k if top_k is None else top_k
        if not isinstance(limit, int) or limit < 1:
            raise ValueError(f"top_k must be a positive integer, got {limit!r}.")
        per_document: dict[str, int] = {}
        kept: list[Document] = []
        for document in documents:
            key = document_id_of(document)
            if per_document.get(key, 0) >= self.max_chunks_per_doc:
                continue
            per_document[key] = per_document.get(key, 0) + 1
            kept.append(document)
            if len(kept) == limit:
                break
        tag_span(documents_in_out(documents, kept), {"sourcebound.top_k": limit})
        return {"documents": kept}

"""Keyword (BM25) retriever over ``QdrantEdgeDocumentStore``."""

import asyncio
from typing import Any

from haystack import Document, component
from haystack.document_stores.types import FilterPolicy

from components.qdrant_edge.document_store import QdrantEdgeDocumentStore
from components.qdrant_edge.retriever_support import (
    check_init,
    parse_filter_policy,
    resolve_filters,
    retriever_from_dict,
    retriever_to_dict,
)


@component
class QdrantEdgeBM25Retriever:
    """
    Retrieves documents by BM25 over the store's ``bm25`` sparse vectors (IDF over the whole store).

    Score: the BM25 score, the sum over query terms of IDF x saturated term frequency; >= 0 and unbounded, so
    comparable only between the results of one query. A query of only stop words returns no documents.

    Usage:
    ```python
    from components.qdrant_edge import QdrantEdgeBM25Retriever, QdrantEdgeDocumentStore

    store = QdrantEdgeDocumentStore(path="./data/qdrant")
    retriever = QdrantEdgeBM25Retriever(document_store=store, top_k=5)
    documents = retriever.run(query="reset password", filters={"field": "meta.tenant_id", "operator": "==",
                                                              "value": "acme"})["documents"]
    ```
    """

    def __init__(
        self,
        document_store: QdrantEdgeDocumentStore,
        filters: dict[str, Any] | None = None,
        top_k: int = 10,
        filter_policy: str | FilterPolicy = FilterPolicy.REPLACE,
        return_embedding: bool = False,
    ) -> None:
        """
        :param document_store: The store to search.
        :param filters: Filters used when a run passes none (``filter_policy`` REPLACE) or merged with the run's
            (MERGE). Never rely on MERGE for tenant isolation: pass the full access filter at run time.
        :param top_k: Maximum number of documents returned.
        :param filter_policy: ``REPLACE`` (default) or ``MERGE``.
        :param return_embedding: Return each document's dense ``embedding``.
        :raises ValueError: If ``document_store`` or ``top_k`` is invalid.
        :raises FilterError: If ``filters`` is malformed.
        """
        check_init(document_store, filters, top_k)
        self.document_store = document_store
        self.filters = filters
        self.top_k = top_k
        self.filter_policy = parse_filter_policy(filter_policy)
        self.return_embedding = return_embedding

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component to a dict."""
        return retriever_to_dict(self, return_embedding=self.return_embedding)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "QdrantEdgeBM25Retriever":
        """Deserialise the component from a dict."""
        return retriever_from_dict(cls, data)

    @component.output_types(documents=list[Document])
    def run(self, query: str, filters: dict[str, Any] | None = None, top_k: int | None = None) -> dict[str, list[Document]]:
        """
        Retrieve documents by BM25.

        :param query: The query text.
        :param filters: Haystack filters for this run (see ``filter_policy``).
        :param top_k: Overrides the init ``top_k``.
        :returns: ``{"documents": [...]}`` by descending BM25 score, each with ``score``.
        :raises FilterError: If the filters are malformed.
        """
        documents = self.document_store.bm25_retrieval(
            query=query,
            filters=resolve_filters(self.filter_policy, self.filters, filters),
            top_k=top_k or self.top_k,
            return_embedding=self.return_embedding,
        )
        return {"documents": documents}

    @component.output_types(documents=list[Document])
    async def run_async(
        self, query: str, filters: dict[str, Any] | None = None, top_k: int | None = None
    ) -> dict[str, list[Document]]:
        """Like ``run``, off the event loop (a query may wait for a write to finish)."""
        return await asyncio.to_thread(self.run, query, filters, top_k)

"""Keyword (BM25) retriever over ``QdrantEdgeDocumentStore``."""

import asyncio
from typing import Any

from haystack import Document, component

from components.retrievers.qdrant_edge.retriever_support import QdrantEdgeRetrieverBase


@component
class QdrantEdgeBM25Retriever(QdrantEdgeRetrieverBase):
    """
    Retrieves documents by BM25 over the store's ``bm25`` sparse vectors (IDF over the whole store).

    Score: the BM25 score, the sum over query terms of IDF x saturated term frequency; >= 0 and unbounded, so
    comparable only between the results of one query. A query of only stop words returns no documents.

    Init parameters: those of :class:`QdrantEdgeRetrieverBase` (``document_store``, ``filters``, ``top_k``,
    ``filter_policy``, ``return_embedding``).

    Usage:
    ```python
    from components.retrievers.qdrant_edge import QdrantEdgeBM25Retriever
    from components.document_stores.qdrant_edge import QdrantEdgeDocumentStore

    store = QdrantEdgeDocumentStore(path="./data/qdrant")
    retriever = QdrantEdgeBM25Retriever(document_store=store, top_k=5)
    documents = retriever.run(query="reset password", filters={"field": "meta.tenant_id", "operator": "==",
                                                              "value": "acme"})["documents"]
    ```
    """

    @component.output_types(documents=list[Document])
    def run(
        self,
        query: str,
        filters: dict[str, Any] | None = None,
        top_k: int | None = None,
        return_embedding: bool | None = None,
    ) -> dict[str, list[Document]]:
        """
        Retrieve documents by BM25.

        :param query: The query text.
        :param filters: Haystack filters for this run (see ``filter_policy``).
        :param top_k: Overrides the init ``top_k``.
        :param return_embedding: Overrides the init ``return_embedding`` for this run.
        :returns: ``{"documents": [...]}`` by descending BM25 score, each with ``score``.
        :raises FilterError: If the filters are malformed.
        """
        documents = self.document_store.bm25_retrieval(
            query=query, **self._search_arguments(filters, top_k, return_embedding)
        )
        return {"documents": documents}

    @component.output_types(documents=list[Document])
    async def run_async(
        self,
        query: str,
        filters: dict[str, Any] | None = None,
        top_k: int | None = None,
        return_embedding: bool | None = None,
    ) -> dict[str, list[Document]]:
        """Like ``run``, off the event loop (a query may wait for a write to finish)."""
        return await asyncio.to_thread(self.run, query, filters, top_k, return_embedding)

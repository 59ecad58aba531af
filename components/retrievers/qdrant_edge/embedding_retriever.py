"""Dense retriever over ``QdrantEdgeDocumentStore``."""

import asyncio
from typing import Any

from haystack import Document, component
from haystack.document_stores.types import FilterPolicy

from components.document_stores.qdrant_edge.document_store import QdrantEdgeDocumentStore
from components.retrievers.qdrant_edge.retriever_support import QdrantEdgeRetrieverBase


@component
class QdrantEdgeEmbeddingRetriever(QdrantEdgeRetrieverBase):
    """
    Retrieves the documents nearest to a query embedding (the store's ``dense`` vector).

    Score: the store's ``similarity`` between query and document vectors; with the default ``"cosine"`` it is the
    cosine similarity in [-1, 1], higher is closer.

    Usage:
    ```python
    from components.document_stores.qdrant_edge import QdrantEdgeDocumentStore
    from components.retrievers.qdrant_edge import QdrantEdgeEmbeddingRetriever

    store = QdrantEdgeDocumentStore(path="./data/qdrant", embedding_dim=384)
    retriever = QdrantEdgeEmbeddingRetriever(document_store=store, top_k=5)
    access = {"field": "meta.tenant_id", "operator": "==", "value": "acme"}
    documents = retriever.run(query_embedding=[0.1] * 384, filters=access)["documents"]
    ```
    """

    def __init__(
        self,
        document_store: QdrantEdgeDocumentStore,
        filters: dict[str, Any] | None = None,
        top_k: int = 10,
        filter_policy: str | FilterPolicy = FilterPolicy.REPLACE,
        return_embedding: bool = False,
        score_threshold: float | None = None,
    ) -> None:
        """
        Parameters as in :class:`QdrantEdgeRetrieverBase`, plus:

        :param score_threshold: Drop documents with a lower similarity.
        """
        # Explicit base call: @component rebuilds the class, so zero-argument super() would not find it.
        QdrantEdgeRetrieverBase.__init__(self, document_store, filters, top_k, filter_policy, return_embedding)
        self.score_threshold = score_threshold

    def _extra_init_parameters(self) -> dict[str, Any]:
        return {"score_threshold": self.score_threshold}

    @component.output_types(documents=list[Document])
    def run(
        self,
        query_embedding: list[float],
        filters: dict[str, Any] | None = None,
        top_k: int | None = None,
        return_embedding: bool | None = None,
    ) -> dict[str, list[Document]]:
        """
        Retrieve documents by dense similarity.

        :param query_embedding: The query vector (the store's ``embedding_dim``).
        :param filters: Haystack filters for this run (see ``filter_policy``).
        :param top_k: Overrides the init ``top_k``.
        :param return_embedding: Overrides the init ``return_embedding`` for this run.
        :returns: ``{"documents": [...]}`` by descending similarity, each with ``score``.
        :raises EmbeddingDimensionError: If the query vector has the wrong size.
        :raises FilterError: If the filters are malformed.
        """
        documents = self.document_store.embedding_retrieval(
            query_embedding=query_embedding,
            score_threshold=self.score_threshold,
            **self._search_arguments(filters, top_k, return_embedding),
        )
        return {"documents": documents}

    @component.output_types(documents=list[Document])
    async def run_async(
        self,
        query_embedding: list[float],
        filters: dict[str, Any] | None = None,
        top_k: int | None = None,
        return_embedding: bool | None = None,
    ) -> dict[str, list[Document]]:
        """Like ``run``, off the event loop (a query may wait for a write to finish)."""
        return await asyncio.to_thread(self.run, query_embedding, filters, top_k, return_embedding)

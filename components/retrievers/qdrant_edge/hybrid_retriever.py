"""Hybrid (dense + BM25, RRF-fused in the engine) retriever over ``QdrantEdgeDocumentStore``."""

import asyncio
from typing import Any

from haystack import Document, component
from haystack.document_stores.types import FilterPolicy

from components.core.span_tags import tag_span
from components.document_stores.qdrant_edge.document_store import DEFAULT_RRF_K, QdrantEdgeDocumentStore
from components.retrievers.qdrant_edge.retriever_support import QdrantEdgeRetrieverBase


@component
class QdrantEdgeHybridRetriever(QdrantEdgeRetrieverBase):
    """
    Retrieves documents by fusing a dense and a BM25 search with Reciprocal Rank Fusion (one engine batch).

    Each stage takes ``prefetch_limit`` candidates under the same filters, equal scores ordered by id; the RRF
    ranks the union. Score: the RRF score, sum over both rankings of ``1 / (rrf_k + rank)`` (rank from 0), at most
    ``2 / rrf_k``; it orders documents but is no similarity. With ``return_embedding=True`` every returned
    document carries its dense ``embedding``, including documents only the BM25 stage found, so the caller can
    compute each one's cosine similarity to the query. With ``report_sources=True`` each document also says
    which stages found it (``meta["retrieved_by"]``: ``"vector"``, ``"keyword"``; see
    ``QdrantEdgeDocumentStore.hybrid_retrieval``).

    Usage:
    ```python
    from components.document_stores.qdrant_edge import QdrantEdgeDocumentStore
    from components.retrievers.qdrant_edge import QdrantEdgeHybridRetriever

    store = QdrantEdgeDocumentStore(path="./data/qdrant", embedding_dim=384)
    retriever = QdrantEdgeHybridRetriever(document_store=store, top_k=8, return_embedding=True)
    documents = retriever.run(query="reset password", query_embedding=[0.1] * 384,
                              filters={"field": "meta.tenant_id", "operator": "==", "value": "acme"})["documents"]
    ```
    """

    def __init__(
        self,
        document_store: QdrantEdgeDocumentStore,
        filters: dict[str, Any] | None = None,
        top_k: int = 10,
        filter_policy: str | FilterPolicy = FilterPolicy.REPLACE,
        return_embedding: bool = False,
        prefetch_limit: int | None = None,
        rrf_k: int = DEFAULT_RRF_K,
        report_sources: bool = False,
    ) -> None:
        """
        Parameters as in :class:`QdrantEdgeRetrieverBase`, plus:

        :param prefetch_limit: Candidates per stage; ``None`` means ``max(4 * top_k, 40)``.
        :param rrf_k: The RRF constant (60 is the usual choice; lower values favour top ranks more).
        :param report_sources: Mark each document's ``meta["retrieved_by"]`` with the stages that found it.
        :raises ValueError: If ``document_store``, ``top_k``, ``prefetch_limit``, ``rrf_k`` or ``report_sources`` is
            invalid.
        :raises FilterError: If ``filters`` is malformed.
        """
        # Explicit base call: @component rebuilds the class, so zero-argument super() would not find it.
        QdrantEdgeRetrieverBase.__init__(self, document_store, filters, top_k, filter_policy, return_embedding)
        if prefetch_limit is not None and (not isinstance(prefetch_limit, int) or prefetch_limit <= 0):
            raise ValueError(f"prefetch_limit must be a positive integer or None, got {prefetch_limit!r}.")
        if not isinstance(rrf_k, int) or isinstance(rrf_k, bool) or rrf_k <= 0:
            raise ValueError(f"rrf_k must be a positive integer, got {rrf_k!r}.")
        self.prefetch_limit = prefetch_limit
        self.rrf_k = rrf_k
        if not isinstance(report_sources, bool):
            raise ValueError(f"report_sources must be true or false, got {report_sources!r}.")
        self.report_sources = report_sources

    def _extra_init_parameters(self) -> dict[str, Any]:
        return {"prefetch_limit": self.prefetch_limit, "rrf_k": self.rrf_k, "report_sources": self.report_sources}

    @component.output_types(documents=list[Document])
    def run(
        self,
        query: str,
        query_embedding: list[float],
        filters: dict[str, Any] | None = None,
        top_k: int | None = None,
        return_embedding: bool | None = None,
    ) -> dict[str, list[Document]]:
        """
        Retrieve documents by RRF over dense and BM25 rankings.

        :param query: The query text (BM25 stage).
        :param query_embedding: The query vector (dense stage; the store's ``embedding_dim``).
        :param filters: Haystack filters for this run (see ``filter_policy``), applied to both stages.
        :param top_k: Overrides the init ``top_k``.
        :param return_embedding: Overrides the init ``return_embedding`` for this run.
        :returns: ``{"documents": [...]}`` by descending RRF score, each with ``score``.
        :raises EmbeddingDimensionError: If the query vector has the wrong size.
        :raises FilterError: If the filters are malformed.
        """
        documents = self.document_store.hybrid_retrieval(
            query=query,
            query_embedding=query_embedding,
            prefetch_limit=self.prefetch_limit,
            rrf_k=self.rrf_k,
            report_sources=self.report_sources,
            **self._search_arguments(filters, top_k, return_embedding),
        )
        tag_span({"sourcebound.documents.out": len(documents)})
        return {"documents": documents}

    @component.output_types(documents=list[Document])
    async def run_async(
        self,
        query: str,
        query_embedding: list[float],
        filters: dict[str, Any] | None = None,
        top_k: int | None = None,
        return_embedding: bool | None = None,
    ) -> dict[str, list[Document]]:
        """Like ``run``, off the event loop (a query may wait for a write to finish)."""
        return await asyncio.to_thread(self.run, query, query_embedding, filters, top_k, return_embedding)

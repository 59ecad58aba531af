"""Haystack retrievers for ``QdrantEdgeDocumentStore``: dense, BM25 and hybrid (RRF in the engine)."""

from components.retrievers.qdrant_edge.bm25_retriever import QdrantEdgeBM25Retriever
from components.retrievers.qdrant_edge.embedding_retriever import QdrantEdgeEmbeddingRetriever
from components.retrievers.qdrant_edge.hybrid_retriever import QdrantEdgeHybridRetriever

__all__ = ["QdrantEdgeBM25Retriever", "QdrantEdgeEmbeddingRetriever", "QdrantEdgeHybridRetriever"]

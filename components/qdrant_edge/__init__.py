"""
Haystack document store and retrievers on Qdrant Edge, Qdrant's engine embedded in the process.

```python
from components.qdrant_edge import (
    QdrantEdgeDocumentStore, QdrantEdgeEmbeddingRetriever, QdrantEdgeBM25Retriever, QdrantEdgeHybridRetriever,
)
```

``Bm25DocumentEmbedder``/``Bm25TextEmbedder`` produce the same BM25 vectors for a Qdrant server through
qdrant-haystack (``QdrantDocumentStore(use_sparse_embeddings=True, sparse_idf=True)``).
"""

from components.qdrant_edge.bm25_embedders import Bm25DocumentEmbedder, Bm25TextEmbedder, build_bm25
from components.qdrant_edge.bm25_retriever import QdrantEdgeBM25Retriever
from components.qdrant_edge.document_store import QdrantEdgeDocumentStore
from components.qdrant_edge.embedding_retriever import QdrantEdgeEmbeddingRetriever
from components.qdrant_edge.errors import (
    DocumentValidationError,
    DuplicateDocumentError,
    EmbeddingDimensionError,
    FilterError,
    MissingContentError,
    QdrantEdgeStoreError,
    ShardLockedError,
    StoreConfigError,
    TenantConflictError,
)
from components.qdrant_edge.hybrid_retriever import QdrantEdgeHybridRetriever

__all__ = [
    "Bm25DocumentEmbedder",
    "Bm25TextEmbedder",
    "DocumentValidationError",
    "DuplicateDocumentError",
    "EmbeddingDimensionError",
    "FilterError",
    "MissingContentError",
    "QdrantEdgeBM25Retriever",
    "QdrantEdgeDocumentStore",
    "QdrantEdgeEmbeddingRetriever",
    "QdrantEdgeHybridRetriever",
    "QdrantEdgeStoreError",
    "ShardLockedError",
    "StoreConfigError",
    "TenantConflictError",
    "build_bm25",
]

"""
Haystack document store on Qdrant Edge, Qdrant's engine embedded in the process.

```python
from components.document_stores.qdrant_edge import QdrantEdgeDocumentStore
from components.retrievers.qdrant_edge import QdrantEdgeEmbeddingRetriever, QdrantEdgeHybridRetriever
```
"""

from components.document_stores.qdrant_edge.document_store import QdrantEdgeDocumentStore
from components.document_stores.qdrant_edge.errors import (
    DocumentValidationError,
    DuplicateDocumentError,
    EmbeddingDimensionError,
    FilterError,
    InsufficientStorageError,
    MissingContentError,
    QdrantEdgeStoreError,
    ShardLockedError,
    StoreConfigError,
    TenantConflictError,
)

__all__ = [
    "DocumentValidationError",
    "DuplicateDocumentError",
    "EmbeddingDimensionError",
    "FilterError",
    "InsufficientStorageError",
    "MissingContentError",
    "QdrantEdgeDocumentStore",
    "QdrantEdgeStoreError",
    "ShardLockedError",
    "StoreConfigError",
    "TenantConflictError",
]

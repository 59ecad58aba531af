"""
qdrant-haystack's retrievers on the server profile's ``TenantQdrantDocumentStore``.

```python
from components.retrievers.qdrant_server import TenantQdrantHybridRetriever
```
"""

from components.retrievers.qdrant_server.tenant_retrievers import (
    TenantQdrantEmbeddingRetriever,
    TenantQdrantHybridRetriever,
    TenantQdrantSparseEmbeddingRetriever,
)

__all__ = ["TenantQdrantEmbeddingRetriever", "TenantQdrantHybridRetriever", "TenantQdrantSparseEmbeddingRetriever"]

"""
The Qdrant-server profile's document store: qdrant-haystack's ``QdrantDocumentStore`` with per-tenant point ids.

```python
from components.document_stores.qdrant_server import TenantQdrantDocumentStore
```
"""

from components.document_stores.qdrant_server.document_store import (
    QdrantLocalLocationError,
    TenantQdrantDocumentStore,
    tenant_point_id,
)

__all__ = ["QdrantLocalLocationError", "TenantQdrantDocumentStore", "tenant_point_id"]

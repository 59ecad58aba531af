"""
qdrant-haystack's three retrievers, deserialised onto ``TenantQdrantDocumentStore``.

The upstream retrievers rebuild their store with ``QdrantDocumentStore.from_dict``, which refuses
a subclass's type name; these subclasses rebuild the profile's store instead and change nothing
else (queries, filters and fusion are qdrant-haystack's).

Usage:

```python
from components.document_stores.qdrant_server import TenantQdrantDocumentStore
from components.retrievers.qdrant_server import TenantQdrantHybridRetriever

store = TenantQdrantDocumentStore(local_location=":memory:", embedding_dim=384, use_sparse_embeddings=True)
retriever = TenantQdrantHybridRetriever(document_store=store, top_k=5)
documents = retriever.run(query_embedding=dense, query_sparse_embedding=sparse, filters=rule)["documents"]
```
"""

from typing import Any

from haystack import component, default_from_dict
from haystack.document_stores.types import FilterPolicy
from haystack_integrations.components.retrievers.qdrant import (
    QdrantEmbeddingRetriever,
    QdrantHybridRetriever,
    QdrantSparseEmbeddingRetriever,
)

from components.document_stores.qdrant_server import TenantQdrantDocumentStore


def _from_dict(cls: type, data: dict[str, Any]) -> Any:
    parameters = data["init_parameters"]
    parameters["document_store"] = TenantQdrantDocumentStore.from_dict(parameters["document_store"])
    if filter_policy := parameters.get("filter_policy"):
        parameters["filter_policy"] = FilterPolicy.from_str(filter_policy)
    return default_from_dict(cls, data)


@component
class TenantQdrantEmbeddingRetriever(QdrantEmbeddingRetriever):
    """``QdrantEmbeddingRetriever`` (dense) on ``TenantQdrantDocumentStore``."""

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "TenantQdrantEmbeddingRetriever":
        """Deserialise the retriever and its store."""
        return _from_dict(cls, data)


@component
class TenantQdrantSparseEmbeddingRetriever(QdrantSparseEmbeddingRetriever):
    """``QdrantSparseEmbeddingRetriever`` (BM25 sparse vectors) on ``TenantQdrantDocumentStore``."""

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "TenantQdrantSparseEmbeddingRetriever":
        """Deserialise the retriever and its store."""
        return _from_dict(cls, data)


@component
class TenantQdrantHybridRetriever(QdrantHybridRetriever):
    """``QdrantHybridRetriever`` (dense + sparse, RRF fusion in the engine) on ``TenantQdrantDocumentStore``."""

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "TenantQdrantHybridRetriever":
        """Deserialise the retriever and its store."""
        return _from_dict(cls, data)

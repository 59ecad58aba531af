"""
Typed errors of the Qdrant Edge document store.

Every error derives from Haystack's ``DocumentStoreError`` through
``QdrantEdgeStoreError``; the ones a caller can provoke with bad input are also
``ValueError`` (Haystack's conformance suite expects ``ValueError`` for a bad
``write_documents`` argument). ``FilterError`` and ``DuplicateDocumentError``
also derive from Haystack's classes of the same name, so code written against
any Haystack store catches them.
"""

from haystack.document_stores.errors import DocumentStoreError
from haystack.document_stores.errors import DuplicateDocumentError as HaystackDuplicateDocumentError
from haystack.errors import FilterError as HaystackFilterError

from components.core.errors import InsufficientStorageError as CoreInsufficientStorageError
from components.core.errors import SourceboundError


class QdrantEdgeStoreError(SourceboundError, DocumentStoreError):
    """Base class of every error raised by the Qdrant Edge document store and its retrievers."""


class ShardLockedError(QdrantEdgeStoreError):
    """Another process holds the shard: Qdrant Edge allows one process per shard folder."""

    def __init__(self, path: str, holder_pid: str | None = None) -> None:
        self.path = path
        self.holder_pid = holder_pid
        holder = f" (pid {holder_pid})" if holder_pid else ""
        super().__init__(
            f"The Qdrant Edge shard at {path} is held by another process{holder}; only one process may open a shard "
            "folder. Stop the other process that uses it (a running `make serve` or indexing job), or point this "
            "process at another folder (SOURCEBOUND_DATA_DIR). To share one index between several processes or "
            "workers, use the Qdrant server profile (docker-compose) through qdrant-haystack."
        )


class InsufficientStorageError(QdrantEdgeStoreError, CoreInsufficientStorageError):
    """The disk of the shard lacks the space a write needs; nothing was written."""


class StoreConfigError(QdrantEdgeStoreError, ValueError):
    """The store's settings are invalid or do not match the shard already on disk or open in this process."""


class DocumentValidationError(QdrantEdgeStoreError, ValueError):
    """A document in a write batch is invalid; nothing of the batch was written."""


class MissingContentError(DocumentValidationError):
    """A document has no text content: it cannot be searched with BM25 nor cited."""


class EmbeddingDimensionError(DocumentValidationError):
    """A dense vector (a document's or a query's) does not have the store's ``embedding_dim``."""


class FilterError(QdrantEdgeStoreError, HaystackFilterError):
    """A Haystack filter is malformed or uses an operator, field or value the store cannot evaluate."""


class TenantConflictError(QdrantEdgeStoreError, ValueError):
    """An overwrite would replace another tenant's document that has the same id; nothing was written."""


class DuplicateDocumentError(QdrantEdgeStoreError, HaystackDuplicateDocumentError):
    """A document id already exists (or repeats within the batch) under ``DuplicatePolicy.FAIL``/``NONE``."""

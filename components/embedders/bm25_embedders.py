"""
BM25 sparse embedders built on ``qdrant_edge.Bm25`` (no model download).

``Bm25DocumentEmbedder`` and ``Bm25TextEmbedder`` give the Qdrant-server profile
the same keyword half of hybrid search as the embedded store: the vectors are
exactly the ones ``QdrantEdgeDocumentStore`` computes for its ``bm25`` vector.
Documents get term-frequency weights (BM25's ``k``, ``b``, ``avg_len``); queries
get weight 1 per distinct term. The IDF factor is applied by Qdrant at search
time, so qdrant-haystack's store must be created with
``use_sparse_embeddings=True, sparse_idf=True``.

Usage:
```python
from haystack_integrations.document_stores.qdrant import QdrantDocumentStore
from components.embedders.bm25_embedders import Bm25DocumentEmbedder, Bm25TextEmbedder

store = QdrantDocumentStore(url="http://qdrant:6333", embedding_dim=384, use_sparse_embeddings=True, sparse_idf=True)
docs = Bm25DocumentEmbedder().run(documents)["documents"]   # also set a dense `embedding` for hybrid
store.write_documents(docs)
query_sparse = Bm25TextEmbedder().run(text="reset a password")["sparse_embedding"]
```
"""

import dataclasses
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict
from haystack.dataclasses import SparseEmbedding
from qdrant_edge import Bm25, Bm25Config

from components.document_stores.qdrant_edge.converters import to_sparse_embedding
from components.document_stores.qdrant_edge.errors import MissingContentError, StoreConfigError

# Bm25Config options that serialise as plain YAML values.
BM25_CONFIG_TYPES: dict[str, type | tuple[type, ...]] = {
    "k": (int, float),
    "b": (int, float),
    "avg_len": (int, float),
    "language": str,
    "lowercase": bool,
    "ascii_folding": bool,
    "min_token_len": int,
    "max_token_len": int,
}


def build_bm25(config: dict[str, Any] | None = None) -> Bm25:
    """
    Build a ``qdrant_edge.Bm25`` model from a plain dict of ``Bm25Config`` options.

    :param config: Any of ``k`` (1.2), ``b`` (0.75), ``avg_len`` (256 tokens), ``language`` ("english"),
        ``lowercase``, ``ascii_folding``, ``min_token_len``, ``max_token_len``; ``None`` for the defaults.
    :returns: The model.
    :raises StoreConfigError: If an option is unknown, has the wrong type, or the engine rejects its value.
    """
    config = config or {}
    if not isinstance(config, dict):
        raise StoreConfigError(f"bm25_config must be a dict of Bm25Config options, got {config!r}.")
    for key, value in config.items():
        expected = BM25_CONFIG_TYPES.get(key)
        if expected is None:
            raise StoreConfigError(f"Unknown bm25_config option {key!r}; allowed: {', '.join(BM25_CONFIG_TYPES)}.")
        if not isinstance(value, expected) or (expected != bool and isinstance(value, bool)):
            raise StoreConfigError(f"bm25_config option {key!r} has the wrong type: {value!r}.")
    try:
        return Bm25(Bm25Config(**config))
    except ValueError as error:
        raise StoreConfigError(f"Invalid bm25_config {config!r}: {error}") from error


def require_content(document: Document) -> str:
    """Return the document's text, or raise ``MissingContentError`` naming the document."""
    if not isinstance(document.content, str) or not document.content.strip():
        raise MissingContentError(
            f"Document {document.id!r} has no text content (content={document.content!r}); every chunk needs the "
            "text it was embedded from, so it can be searched with BM25 and cited."
        )
    return document.content


class _Bm25Component:
    """The ``bm25_config`` init parameter and (de)serialisation of both BM25 embedders."""

    def __init__(self, bm25_config: dict[str, Any] | None = None) -> None:
        """
        :param bm25_config: ``Bm25Config`` options (see ``build_bm25``); use the same for the document and the text
            embedder, or queries and documents are tokenised differently.
        :raises StoreConfigError: If the options are invalid.
        """
        self.bm25_config = bm25_config
        self._bm25 = build_bm25(bm25_config)

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component to a dict."""
        return default_to_dict(self, bm25_config=self.bm25_config)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Any:
        """Deserialise the component from a dict."""
        return default_from_dict(cls, data)


@component
class Bm25DocumentEmbedder(_Bm25Component):
    """
    Sets each document's ``sparse_embedding`` to the BM25 term weights of its ``content``.

    Usage:
    ```python
    from haystack import Document
    from components.embedders.bm25_embedders import Bm25DocumentEmbedder

    docs = Bm25DocumentEmbedder().run(documents=[Document(content="Reset your password")])["documents"]
    assert docs[0].sparse_embedding is not None
    ```
    """

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document]) -> dict[str, list[Document]]:
        """
        Embed the documents' text as BM25 sparse vectors.

        :param documents: Documents with text ``content``.
        :returns: ``{"documents": [...]}``: copies of the documents with ``sparse_embedding`` set.
        :raises TypeError: If ``documents`` is not a list of Documents.
        :raises MissingContentError: If a document has no text.
        """
        if not isinstance(documents, list) or not all(isinstance(doc, Document) for doc in documents):
            raise TypeError("Bm25DocumentEmbedder expects a list of Documents; for a string use Bm25TextEmbedder.")
        embedded = [
            dataclasses.replace(
                doc, sparse_embedding=to_sparse_embedding(self._bm25.embed_document(require_content(doc)))
            )
            for doc in documents
        ]
        return {"documents": embedded}


@component
class Bm25TextEmbedder(_Bm25Component):
    """
    Embeds a query string as a BM25 sparse vector (weight 1 per distinct term; Qdrant applies IDF).

    Usage:
    ```python
    from components.embedders.bm25_embedders import Bm25TextEmbedder

    sparse = Bm25TextEmbedder().run(text="reset password")["sparse_embedding"]
    ```
    """

    @component.output_types(sparse_embedding=SparseEmbedding)
    def run(self, text: str) -> dict[str, SparseEmbedding]:
        """
        Embed a query.

        :param text: The query text.
        :returns: ``{"sparse_embedding": SparseEmbedding}``; empty when the text has only stop words.
        :raises TypeError: If ``text`` is not a string.
        """
        if not isinstance(text, str):
            raise TypeError("Bm25TextEmbedder expects a string; for documents use Bm25DocumentEmbedder.")
        return {"sparse_embedding": to_sparse_embedding(self._bm25.embed_query(text))}

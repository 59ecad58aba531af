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

from components.document_stores.qdrant_edge.bm25 import build_bm25, require_content
from components.document_stores.qdrant_edge.converters import to_sparse_embedding


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
    Sets each document's ``sparse_embedding`` to the BM25 term weights of its ``content``, read after the values of
    ``meta_fields_to_embed`` (Haystack's embedder convention: a chunk's contextual header, docs/contract.md,
    "Documents, chunks and SourceIds", makes its document's and section's words part of its keyword side).

    Usage:
    ```python
    from haystack import Document
    from components.embedders.bm25_embedders import Bm25DocumentEmbedder

    docs = Bm25DocumentEmbedder().run(documents=[Document(content="Reset your password")])["documents"]
    assert docs[0].sparse_embedding is not None
    ```
    """

    def __init__(
        self,
        bm25_config: dict[str, Any] | None = None,
        meta_fields_to_embed: list[str] | None = None,
        embedding_separator: str = "\n",
    ) -> None:
        """
        :param bm25_config: ``Bm25Config`` options (see ``build_bm25``); the same as the text embedder's.
        :param meta_fields_to_embed: Meta fields whose values are indexed with the content (absent or empty: none).
        :param embedding_separator: Joins the meta values and the content.
        :raises StoreConfigError: If the BM25 options are invalid.
        :raises ValueError: If ``meta_fields_to_embed`` is not a list of names.
        """
        _Bm25Component.__init__(self, bm25_config)  # @component rebuilds the class: no zero-argument super()
        if meta_fields_to_embed is not None and (
            not isinstance(meta_fields_to_embed, list) or not all(isinstance(f, str) for f in meta_fields_to_embed)
        ):
            raise ValueError(f"meta_fields_to_embed must be a list of field names, got {meta_fields_to_embed!r}")
        if not isinstance(embedding_separator, str):
            raise ValueError(f"embedding_separator must be a string, got {embedding_separator!r}")
        self.meta_fields_to_embed = list(meta_fields_to_embed or [])
        self.embedding_separator = embedding_separator

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component to a dict."""
        return default_to_dict(
            self,
            bm25_config=self.bm25_config,
            meta_fields_to_embed=self.meta_fields_to_embed,
            embedding_separator=self.embedding_separator,
        )

    def _text(self, document: Document) -> str:
        content = require_content(document)
        meta = [str(document.meta[key]) for key in self.meta_fields_to_embed if document.meta.get(key)]
        return self.embedding_separator.join([*meta, content])

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
            dataclasses.replace(doc, sparse_embedding=to_sparse_embedding(self._bm25.embed_document(self._text(doc))))
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

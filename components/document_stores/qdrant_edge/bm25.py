"""
The BM25 model of the Qdrant Edge store's ``bm25`` sparse vector (``qdrant_edge.Bm25``, no model download).

The store computes a chunk's BM25 vector with it; ``components.embedders.bm25_embedders`` use the same model
so a Qdrant server gets the same vectors.

The engine's tokenizer splits at spaces and punctuation: Latin, Cyrillic and Greek words (umlauts and ``ß``
included) are tokens as they are, but a Chinese sentence, written without spaces, would be one token that no
query term matches. :class:`SegmentedBm25` therefore cuts Han runs into dictionary words first
(:func:`components.core.text_analysis.keyword_text`), the same way for documents and queries, and leaves every
other text unchanged, so English vectors are the engine's own (docs/contract.md, "Languages").
"""

from typing import Any

from haystack import Document
from qdrant_edge import Bm25, Bm25Config

from components.core.text_analysis import keyword_text
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


class SegmentedBm25:
    """``qdrant_edge.Bm25`` with Han runs segmented into words before tokenising (see the module doc)."""

    def __init__(self, model: Bm25) -> None:
        self.model = model

    def embed_document(self, text: str) -> Any:
        """The document's BM25 term-frequency vector (``qdrant_edge.SparseVector``)."""
        return self.model.embed_document(keyword_text(text))

    def embed_query(self, text: str) -> Any:
        """The query's vector: weight 1 per distinct term (``qdrant_edge.SparseVector``)."""
        return self.model.embed_query(keyword_text(text))


def build_bm25(config: dict[str, Any] | None = None) -> SegmentedBm25:
    """
    Build a ``qdrant_edge.Bm25`` model from a plain dict of ``Bm25Config`` options.

    :param config: Any of ``k`` (1.2), ``b`` (0.75), ``avg_len`` (256 tokens), ``language`` ("english"),
        ``lowercase``, ``ascii_folding``, ``min_token_len``, ``max_token_len``; ``None`` for the defaults.
    :returns: The model, segmenting Han text (:class:`SegmentedBm25`).
    :raises StoreConfigError: If an option is unknown, has the wrong type, or the engine rejects its value.
    """
    config = config or {}
    if not isinstance(config, dict):
        raise StoreConfigError(f"bm25_config must be a dict of Bm25Config options, got {config!r}.")
    for key, value in config.items():
        expected = BM25_CONFIG_TYPES.get(key)
        if expected is None:
            raise StoreConfigError(f"Unknown bm25_config option {key!r}; allowed: {', '.join(BM25_CONFIG_TYPES)}.")
        if not isinstance(value, expected) or (expected is not bool and isinstance(value, bool)):
            raise StoreConfigError(f"bm25_config option {key!r} has the wrong type: {value!r}.")
    try:
        return SegmentedBm25(Bm25(Bm25Config(**config)))
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

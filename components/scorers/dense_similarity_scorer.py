"""
``DenseSimilarityScorer``: re-scores fused candidates by their dense cosine
similarity to the query and drops the weak ones (docs/contract.md, "Retrieval quality
controls").

The hybrid retriever orders candidates by RRF, whose scores (``1/(60+rank)``) say
nothing about relevance. With ``return_embedding: true`` every candidate, also one
found only by BM25, comes back with its stored dense vector, so this component
can give each one its true cosine similarity to the query embedding. That
similarity drives the minimum-similarity filter (``RAG_MIN_SIMILARITY_SCORE``)
and the retrieval part of confidence; fusion only orders: the RRF order is kept.

Determinism: RRF gives equal scores to candidates with mirrored ranks (dense 2 /
BM25 5 and dense 5 / BM25 2), and the engine returns such ties in no fixed order.
So candidates are put in a total order first, fusion score descending, then dense
similarity descending, then id (:func:`deterministic_order`); the retriever fetches
a few more than needed (``RetrievalPlanner.tie_margin``) and ``top_k`` cuts back,
so a tie at the retriever's cut-off cannot change which candidates survive.
"""

import logging
from dataclasses import replace
from typing import Any

import numpy as np
from haystack import Document, component, default_from_dict, default_to_dict

from components.core.errors import ContextError
from components.core.similarity import cosine_similarity
from components.core.span_tags import documents_in_out, tag_span

logger = logging.getLogger(__name__)


def deterministic_order(documents: list[Document], similarities: list[float]) -> list[tuple[Document, float]]:
    """
    ``(document, similarity)`` pairs in a total order: retrieval score descending, then similarity
    descending, then id. Scores are compared at 9 decimals so float noise cannot reorder a tie.
    """
    pairs = list(zip(documents, similarities))
    return sorted(
        pairs,
        key=lambda pair: (
            -round(pair[0].score if pair[0].score is not None else 0.0, 9),
            -round(pair[1], 9),
            str(pair[0].id),
        ),
    )


@component
class DenseSimilarityScorer:
    """
    Sets each document's ``score`` to its cosine similarity with the query embedding,
    keeps the incoming (fusion) order, and drops documents below ``min_similarity``.
    The retriever's own score (RRF, BM25, ...) is kept in ``meta["retriever_score"]``.

    Usage:
    ```python
    scorer = DenseSimilarityScorer(min_similarity=0.3)
    docs = scorer.run(documents=retrieved, query_embedding=embedding)["documents"]
    ```
    """

    # run() changes none of its inputs and keeps none of them: the planned pipeline passes them without a defensive
    # copy (docs/contract.md, "Pipeline runs").
    reads_inputs_only = True

    def __init__(self, min_similarity: float = 0.3, keep_embeddings: bool = False) -> None:
        """
        :param min_similarity: Minimum cosine similarity to keep a candidate (``RAG_MIN_SIMILARITY_SCORE``).
        :param keep_embeddings: Keep the dense vectors on the output documents (off: nothing downstream needs them).
        """
        if not isinstance(min_similarity, (int, float)) or not -1.0 <= float(min_similarity) <= 1.0:
            raise ValueError(f"min_similarity must be a number in [-1, 1], got {min_similarity!r}.")
        self.min_similarity = float(min_similarity)
        self.keep_embeddings = bool(keep_embeddings)

    def to_dict(self) -> dict[str, Any]:
        """Serialize the component."""
        return default_to_dict(self, min_similarity=self.min_similarity, keep_embeddings=self.keep_embeddings)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "DenseSimilarityScorer":
        """Deserialize the component."""
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document], dropped=int)
    def run(self, documents: list[Document], query_embedding: list[float], top_k: int | None = None) -> dict[str, Any]:
        """
        :param documents: Candidates from the retriever (``score`` = fusion score), each with its ``embedding``.
        :param query_embedding: The query's dense embedding.
        :param top_k: Keep at most this many candidates (in the deterministic fusion order) before filtering.
        :returns: ``documents``: kept candidates in fusion order (ties broken by similarity, then id), ``score`` =
            cosine similarity; ``dropped``: how many fell below ``min_similarity``.
        :raises ContextError: If a candidate has no embedding or its dimension differs from the query's.
        """
        if not documents:
            tag_span(documents_in_out(documents, []))
            return {"documents": [], "dropped": 0}
        missing = [doc.id for doc in documents if doc.embedding is None]
        if missing:
            raise ContextError(
                f"Retrieved documents {missing[:3]} have no embedding; set `return_embedding: true` on the retriever "
                "so every candidate can be scored by dense similarity."
            )
        query = np.asarray(query_embedding, dtype=np.float64)
        try:
            vectors = np.asarray([doc.embedding for doc in documents], dtype=np.float64)
            similarities = cosine_similarity(query, vectors)
        except ValueError as error:
            raise ContextError(f"Query and document embeddings do not match in dimension: {error}") from error

        ordered = deterministic_order(documents, [float(value) for value in similarities])
        if top_k is not None:
            if not isinstance(top_k, int) or top_k < 1:
                raise ValueError(f"top_k must be a positive integer, got {top_k!r}.")
            ordered = ordered[:top_k]
        kept: list[Document] = []
        for document, similarity in ordered:
            if similarity < self.min_similarity:
                continue
            meta = {**document.meta, "retriever_score": document.score}
            kept.append(
                replace(
                    document,
                    score=similarity,
                    meta=meta,
                    embedding=document.embedding if self.keep_embeddings else None,
                )
            )
        dropped = len(ordered) - len(kept)
        if dropped:
            logger.debug(
                "Dropped %d of %d candidates below similarity %.2f.", dropped, len(documents), self.min_similarity
            )
        tag_span(
            documents_in_out(documents, kept),
            {"sourcebound.documents.dropped": dropped, "sourcebound.min_similarity": self.min_similarity},
        )
        return {"documents": kept, "dropped": dropped}

"""
``DuplicateChunkFilter``: drops near-duplicate chunks (docs/contract.md, "Retrieval quality controls").

Similarity is the Jaccard index of the chunks' word 3-shingles (lower-cased
word triples, see :mod:`components.core.text_analysis`). It is exact on identical
text, robust to re-flowed whitespace and punctuation, insensitive to where a
chunk boundary fell in an overlapping re-index, and costs O(words) per chunk:
on the 15 candidates of a default query it is far below a millisecond.
"""

from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict

from components.core.span_tags import documents_in_out, tag_span
from components.core.text_analysis import jaccard, jaccard_bound, shingles


@component
class DuplicateChunkFilter:
    """
    Of any two chunks whose text similarity is above ``threshold``, keeps the
    higher-ranked (earlier) one. Input order is kept.

    Usage:
    ```python
    dedup = DuplicateChunkFilter(threshold=0.9)
    docs = dedup.run(documents=ranked)["documents"]
    ```
    """

    # run() changes none of its inputs and keeps none of them: the planned pipeline passes them without a defensive
    # copy (docs/contract.md, "Pipeline runs").
    reads_inputs_only = True

    def __init__(self, threshold: float = 0.9, shingle_size: int = 3) -> None:
        """
        :param threshold: Similarity above which the lower-ranked chunk is dropped (``RAG_CHUNK_OVERLAP_THRESHOLD``).
        :param shingle_size: Words per shingle.
        """
        if not isinstance(threshold, (int, float)) or not 0.0 <= float(threshold) <= 1.0:
            raise ValueError(f"threshold must be in [0, 1], got {threshold!r}.")
        if not isinstance(shingle_size, int) or shingle_size < 1:
            raise ValueError(f"shingle_size must be a positive integer, got {shingle_size!r}.")
        self.threshold = float(threshold)
        self.shingle_size = shingle_size

    def to_dict(self) -> dict[str, Any]:
        """Serialize the component."""
        return default_to_dict(self, threshold=self.threshold, shingle_size=self.shingle_size)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "DuplicateChunkFilter":
        """Deserialize the component."""
        return default_from_dict(cls, data)

    def similarity(self, first: str, second: str) -> float:
        """The text similarity this filter uses, for two texts."""
        return jaccard(shingles(first, self.shingle_size), shingles(second, self.shingle_size))

    @component.output_types(documents=list[Document], dropped=int)
    def run(self, documents: list[Document]) -> dict[str, Any]:
        """
        :param documents: Chunks in rank order.
        :returns: ``documents``: without near-duplicates; ``dropped``: how many were removed.
        """
        kept: list[Document] = []
        kept_shingles: list[frozenset] = []
        for document in documents:
            current = shingles(document.content or "", self.shingle_size)
            # The size bound skips the set intersection for most pairs of chunks of unequal length.
            if any(
                jaccard_bound(current, previous) > self.threshold and jaccard(current, previous) > self.threshold
                for previous in kept_shingles
            ):
                continue
            kept.append(document)
            kept_shingles.append(current)
        tag_span(documents_in_out(documents, kept), {"sourcebound.documents.dropped": len(documents) - len(kept)})
        return {"documents": kept, "dropped": len(documents) - len(kept)}

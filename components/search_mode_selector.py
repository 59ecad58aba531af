"""
``SearchModeSelector``: serves the request's ``search_mode`` from the standard
retrievers of ``pipelines/search.yml``, which
:class:`components.search_mode_router.SearchModeRouter` runs for it:

* ``vector``: the dense retriever's results (cosine);
* ``keyword``: the BM25 retriever's results;
* ``hybrid``: the hybrid retriever's RRF fusion (the query the RAG pipeline runs).

Keeping the retrievers as ordinary pipeline components (instead of one retriever
that talks to the store itself) lets the same YAML run on the Qdrant server
profile, where each is swapped for its qdrant-haystack counterpart.

The selected list is put in a total order (mode score, then dense similarity, then
id; see :func:`components.dense_similarity.deterministic_order`) and cut to
``top_k``. The retrievers fetch a few more (``RetrievalPlanner.tie_margin``)
because the engine returns equal scores (RRF ties, identical BM25 scores) in no
fixed order. Each returned document gets ``meta["retrieved_by"]``: the sides
(``vector``, ``keyword``) whose own result lists hold it. Only the selected list
needs embeddings; the side lists are only counted.
"""

from dataclasses import replace
from typing import Any

import numpy as np
from haystack import Document, component, default_from_dict, default_to_dict

from components.dense_similarity import cosine_similarity, deterministic_order
from components.errors import ContextError
from components.models import SearchMode

SEARCH_MODES = tuple(mode.value for mode in SearchMode)


@component
class SearchModeSelector:
    """
    Usage:
    ```python
    selector = SearchModeSelector(top_k=5)
    out = selector.run(vector_documents=dense, keyword_documents=bm25, query_embedding=embedding,
                       hybrid_documents=fused, search_mode="hybrid")
    out["documents"], out["search_mode"]
    ```
    """

    def __init__(self, top_k: int = 5) -> None:
        """
        :param top_k: Results when the run does not say.
        """
        if not isinstance(top_k, int) or isinstance(top_k, bool) or top_k < 1:
            raise ValueError(f"top_k must be a positive integer, got {top_k!r}.")
        self.top_k = top_k

    def to_dict(self) -> dict[str, Any]:
        """Serialize the component."""
        return default_to_dict(self, top_k=self.top_k)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "SearchModeSelector":
        """Deserialize the component."""
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document], search_mode=str)
    def run(
        self,
        vector_documents: list[Document],
        keyword_documents: list[Document],
        query_embedding: list[float],
        hybrid_documents: list[Document] | None = None,
        search_mode: str = "hybrid",
        top_k: int | None = None,
    ) -> dict[str, Any]:
        """
        :param vector_documents: The dense retriever's results (with embeddings in ``vector`` mode).
        :param keyword_documents: The BM25 retriever's results (with embeddings in ``keyword`` mode).
        :param query_embedding: The query vector, for the similarity tie-break.
        :param hybrid_documents: The hybrid retriever's results (with embeddings); only ``hybrid`` mode needs them.
        :param search_mode: ``vector``, ``keyword`` or ``hybrid``.
        :param top_k: Results to return (defaults to the init ``top_k``).
        :returns: ``documents`` (the mode's results, ordered, with ``meta["retrieved_by"]``) and ``search_mode``.
        :raises ValueError: On an unknown mode or a bad ``top_k``.
        :raises ContextError: If the selected list lacks embeddings, or ``hybrid`` mode got no hybrid results.
        """
        mode = search_mode.value if isinstance(search_mode, SearchMode) else search_mode
        if mode not in SEARCH_MODES:
            raise ValueError(f"search_mode must be one of {list(SEARCH_MODES)}, got {search_mode!r}.")
        limit = self.top_k if top_k is None else top_k
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
            raise ValueError(f"top_k must be a positive integer, got {limit!r}.")
        if mode == "hybrid" and hybrid_documents is None:
            raise ContextError("Hybrid search got no hybrid retriever results; connect one to `hybrid_documents`.")
        selected = {"vector": vector_documents, "keyword": keyword_documents, "hybrid": hybrid_documents}[mode]
        if not selected:
            return {"documents": [], "search_mode": mode}
        if any(doc.embedding is None for doc in selected):
            raise ContextError(
                f"The {mode} results lack embeddings; the retriever serving a mode must return them "
                "(SearchModeRouter's `*_return_embedding` outputs, or `return_embedding: true`)."
            )
        similarities = cosine_similarity(
            np.asarray(query_embedding, dtype=np.float64), np.asarray([doc.embedding for doc in selected], dtype=np.float64)
        )
        ordered = deterministic_order(selected, [float(value) for value in similarities])[:limit]
        sides = (("vector", {doc.id for doc in vector_documents}), ("keyword", {doc.id for doc in keyword_documents}))
        documents = [
            replace(doc, meta={**doc.meta, "retrieved_by": [side for side, ids in sides if doc.id in ids]}) for doc, _ in ordered
        ]
        return {"documents": documents, "search_mode": mode}

"""
``SearchModeSelector``: serves the request's ``search_mode`` from the standard
retrievers of ``pipelines/search.yml``, which
:class:`components.routers.search_mode_router.SearchModeRouter` runs one of, by mode:

* ``vector``: the dense retriever's results (cosine);
* ``keyword``: the BM25 retriever's results;
* ``hybrid``: the hybrid retriever's RRF fusion (the query the RAG pipeline runs).

Keeping the retrievers as ordinary pipeline components (instead of one retriever
that talks to the store itself) lets the same YAML run on the Qdrant server
profile, where each is swapped for its qdrant-haystack counterpart.

The selected list is put in a total order (mode score, then dense similarity, then
id; see :func:`components.scorers.dense_similarity_scorer.deterministic_order`) and cut to
``top_k``. The retrievers fetch a few more (``RetrievalPlanner.tie_margin``)
because the engine returns equal scores (RRF ties, identical BM25 scores) in no
fixed order. Each returned document gets ``meta["retrieved_by"]``: the retrievals
that found it. In ``vector`` and ``keyword`` mode that is the mode itself (one
retrieval runs); in ``hybrid`` mode, the fusion's stages (``vector``, ``keyword``)
whose candidates held it, as the hybrid retriever reports them (``report_sources``;
a hybrid retriever that reports none, such as qdrant-haystack's, leaves it empty).
"""

from dataclasses import replace
from typing import Any

import numpy as np
from haystack import Document, component, default_from_dict, default_to_dict

from components.core.errors import ContextError
from components.core.models import search_mode_name
from components.core.similarity import cosine_similarity
from components.core.span_tags import documents_in_out, tag_span
from components.scorers.dense_similarity_scorer import deterministic_order


@component
class SearchModeSelector:
    """
    Usage:
    ```python
    selector = SearchModeSelector(top_k=5)
    out = selector.run(query_embedding=embedding, search_mode="hybrid", hybrid_documents=fused)
    out["documents"], out["search_mode"]
    ```
    """

    # run() changes none of its inputs and keeps none of them: the planned pipeline passes them without a defensive
    # copy (docs/contract.md, "Pipeline runs").
    reads_inputs_only = True

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
        query_embedding: list[float],
        search_mode: str = "hybrid",
        vector_documents: list[Document] | None = None,
        keyword_documents: list[Document] | None = None,
        hybrid_documents: list[Document] | None = None,
        top_k: int | None = None,
    ) -> dict[str, Any]:
        """
        :param query_embedding: The query vector, for the similarity tie-break.
        :param search_mode: ``vector``, ``keyword`` or ``hybrid``.
        :param vector_documents: The dense retriever's results (``vector`` mode), with embeddings.
        :param keyword_documents: The BM25 retriever's results (``keyword`` mode), with embeddings.
        :param hybrid_documents: The hybrid retriever's results (``hybrid`` mode), with embeddings and, when it
            reports sources, ``meta["retrieved_by"]``.
        :param top_k: Results to return (defaults to the init ``top_k``).
        :returns: ``documents`` (the mode's results, ordered, with ``meta["retrieved_by"]``) and ``search_mode``.
        :raises ValueError: On an unknown mode or a bad ``top_k``.
        :raises ContextError: If the mode's retriever sent nothing, or its documents lack embeddings.
        """
        mode = search_mode_name(search_mode)
        limit = self.top_k if top_k is None else top_k
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
            raise ValueError(f"top_k must be a positive integer, got {limit!r}.")
        selected = {"vector": vector_documents, "keyword": keyword_documents, "hybrid": hybrid_documents}[mode]
        if selected is None:
            raise ContextError(f"{mode} search got no results from its retriever; connect one to `{mode}_documents`.")
        if not selected:
            tag_span(documents_in_out(selected, []), {"sourcebound.search_mode": mode})
            return {"documents": [], "search_mode": mode}
        if any(doc.embedding is None for doc in selected):
            raise ContextError(f"The {mode} results lack embeddings; set `return_embedding: true` on its retriever.")
        similarities = cosine_similarity(
            np.asarray(query_embedding, dtype=np.float64),
            np.asarray([doc.embedding for doc in selected], dtype=np.float64),
        )
        ordered = deterministic_order(selected, [float(value) for value in similarities])[:limit]
        documents = [replace(doc, meta={**doc.meta, "retrieved_by": _sources(doc, mode)}) for doc, _ in ordered]
        tag_span(documents_in_out(selected, documents), {"sourcebound.search_mode": mode})
        return {"documents": documents, "search_mode": mode}


def _sources(document: Document, mode: str) -> list[str]:
    """The retrievals that found a result: the mode's own side, or the hybrid stages the retriever reported."""
    if mode != "hybrid":
        return [mode]
    reported = document.meta.get("retrieved_by")
    return [side for side in ("vector", "keyword") if isinstance(reported, list) and side in reported]

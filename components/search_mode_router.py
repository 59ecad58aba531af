"""
``SearchModeRouter``: sends a search to only the retrievals its ``search_mode`` needs
(``pipelines/search.yml``).

The search response counts, per side, the results that side's own list holds
(``metadata.vector_results`` / ``keyword_results``), so the dense and the BM25
retrievers run in every mode; the hybrid retriever runs only in ``hybrid`` mode.
Only the list the mode serves needs the documents' embeddings (for the similarity
score), so the router tells each retriever whether to return them: a side list
that is only counted comes back without 384 floats per document to convert and
copy between components.

========  ======================  ========================  ==================
mode      dense retriever         BM25 retriever            hybrid retriever
========  ======================  ========================  ==================
vector    runs, with embeddings   runs, ids for the count   does not run
keyword   runs, ids for the count runs, with embeddings     does not run
hybrid    runs, ids for the count runs, ids for the count   runs, with embeddings
========  ======================  ========================  ==================

A retriever whose mandatory inputs the router does not send never runs (Haystack
skips it), so an unused query costs nothing.
"""

from typing import Any

from haystack import component, default_from_dict, default_to_dict

from components.models import SearchMode

SEARCH_MODES = tuple(mode.value for mode in SearchMode)


@component
class SearchModeRouter:
    """
    Usage:
    ```python
    router = SearchModeRouter()
    out = router.run(query="vpn setup", query_embedding=embedding, search_mode="keyword")
    out["keyword_query"], out["keyword_return_embedding"]  # "vpn setup", True
    "hybrid_query" in out  # False: the hybrid retriever does not run
    ```
    """

    def __init__(self, default_mode: str = SearchMode.HYBRID.value) -> None:
        """
        :param default_mode: The mode of a run that names none.
        :raises ValueError: On an unknown mode.
        """
        self.default_mode = _check_mode(default_mode)

    def to_dict(self) -> dict[str, Any]:
        """Serialize the component."""
        return default_to_dict(self, default_mode=self.default_mode)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "SearchModeRouter":
        """Deserialize the component."""
        return default_from_dict(cls, data)

    @component.output_types(
        vector_embedding=list[float],
        vector_return_embedding=bool,
        keyword_query=str,
        keyword_return_embedding=bool,
        hybrid_query=str,
        hybrid_embedding=list[float],
        search_mode=str,
    )
    def run(self, query: str, query_embedding: list[float], search_mode: str | None = None) -> dict[str, Any]:
        """
        :param query: The query text (BM25 and hybrid retrieval).
        :param query_embedding: The query vector (dense and hybrid retrieval).
        :param search_mode: ``vector``, ``keyword`` or ``hybrid``; the init ``default_mode`` when ``None``.
        :returns: The inputs of the retrievers the mode runs (see the module doc) and ``search_mode``.
        :raises ValueError: On an unknown mode.
        """
        mode = _check_mode(self.default_mode if search_mode is None else search_mode)
        routed: dict[str, Any] = {
            "vector_embedding": query_embedding,
            "vector_return_embedding": mode == SearchMode.VECTOR.value,
            "keyword_query": query,
            "keyword_return_embedding": mode == SearchMode.KEYWORD.value,
            "search_mode": mode,
        }
        if mode == SearchMode.HYBRID.value:
            routed.update(hybrid_query=query, hybrid_embedding=query_embedding)
        return routed


def _check_mode(search_mode: Any) -> str:
    mode = search_mode.value if isinstance(search_mode, SearchMode) else search_mode
    if mode not in SEARCH_MODES:
        raise ValueError(f"search_mode must be one of {list(SEARCH_MODES)}, got {search_mode!r}.")
    return mode

"""
``SearchModeRouter``: sends a search to the one retriever its ``search_mode`` names
(``pipelines/search.yml``).

``vector`` runs the dense retriever, ``keyword`` the BM25 retriever, ``hybrid`` the
hybrid retriever; the router sends the query only to that one, and Haystack skips a
component whose mandatory inputs never arrive, so a search costs one engine query.
The hybrid retriever reports which of its stages found each document
(``report_sources``), which is what the response's per-side counts need.

Usage:
```python
router = SearchModeRouter()
out = router.run(query="vpn setup", query_embedding=embedding, search_mode="keyword")
out  # {"keyword_query": "vpn setup", "search_mode": "keyword"}
```
"""

from typing import Any

from haystack import component, default_from_dict, default_to_dict

from components.core.models import SearchMode, search_mode_name


@component
class SearchModeRouter:
    """
    Routes the query to the retriever of the search mode (see the module doc).
    """

    def __init__(self, default_mode: str = SearchMode.HYBRID.value) -> None:
        """
        :param default_mode: The mode of a run that names none.
        :raises ValueError: On an unknown mode.
        """
        self.default_mode = search_mode_name(default_mode)

    def to_dict(self) -> dict[str, Any]:
        """Serialize the component."""
        return default_to_dict(self, default_mode=self.default_mode)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "SearchModeRouter":
        """Deserialize the component."""
        return default_from_dict(cls, data)

    @component.output_types(
        vector_embedding=list[float], keyword_query=str, hybrid_query=str, hybrid_embedding=list[float], search_mode=str
    )
    def run(self, query: str, query_embedding: list[float], search_mode: str | None = None) -> dict[str, Any]:
        """
        :param query: The query text (BM25 and hybrid retrieval).
        :param query_embedding: The query vector (dense and hybrid retrieval).
        :param search_mode: ``vector``, ``keyword`` or ``hybrid``; the init ``default_mode`` when ``None``.
        :returns: The inputs of the mode's retriever (``vector_embedding``; ``keyword_query``; or ``hybrid_query``
            and ``hybrid_embedding``) and ``search_mode``.
        :raises ValueError: On an unknown mode.
        """
        mode = search_mode_name(self.default_mode if search_mode is None else search_mode)
        if mode == SearchMode.VECTOR.value:
            return {"vector_embedding": query_embedding, "search_mode": mode}
        if mode == SearchMode.KEYWORD.value:
            return {"keyword_query": query, "search_mode": mode}
        return {"hybrid_query": query, "hybrid_embedding": query_embedding, "search_mode": mode}

"""
``RetrievalPlanner``: turns the request's ``max_context_chunks`` into the sizes
the query pipeline needs (docs/contract.md, "Retrieval quality controls"): how many candidates are considered
(``over_fetch_factor`` x, 3 by default), how many the retriever fetches (that plus
``tie_margin``, so a fusion-score tie at the retriever's cut-off cannot change the
candidates, see :mod:`components.scorers.dense_similarity_scorer`) and how many chunks the context
keeps. YAML cannot do arithmetic, so this tiny step does it.
"""

from typing import Any

from haystack import component, default_from_dict, default_to_dict


@component
class RetrievalPlanner:
    """
    Usage:
    ```python
    planner = RetrievalPlanner(default_context_chunks=5, over_fetch_factor=3)
    planner.run(max_context_chunks=4)  # {"fetch_top_k": 17, "candidate_top_k": 12, "context_top_k": 4}
    ```
    """

    def __init__(
        self,
        default_context_chunks: int = 5,
        over_fetch_factor: int = 3,
        max_context_chunks: int = 20,
        tie_margin: int = 5,
        raw_candidates: int = 0,
    ) -> None:
        """
        :param default_context_chunks: Context chunks when the request does not say (``RAG_TOTAL_CONTEXT_CHUNKS``).
        :param over_fetch_factor: Candidates considered per context chunk.
        :param max_context_chunks: The most a request may ask for.
        :param tie_margin: Extra candidates fetched beyond those considered, so score ties at the cut-off resolve
            deterministically.
        :param raw_candidates: Fetch at least this many before re-scoring and cutting (``RAG_TOP_K_RAW``); 0: only
            what is considered.
        """
        for name, value in (("tie_margin", tie_margin), ("raw_candidates", raw_candidates)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"{name} must be a non-negative integer, got {value!r}.")
        for name, value in (
            ("default_context_chunks", default_context_chunks),
            ("over_fetch_factor", over_fetch_factor),
            ("max_context_chunks", max_context_chunks),
        ):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}.")
        if default_context_chunks > max_context_chunks:
            raise ValueError("default_context_chunks must not exceed max_context_chunks.")
        self.default_context_chunks = default_context_chunks
        self.over_fetch_factor = over_fetch_factor
        self.max_context_chunks = max_context_chunks
        self.tie_margin = tie_margin
        self.raw_candidates = raw_candidates

    def to_dict(self) -> dict[str, Any]:
        """Serialize the component."""
        return default_to_dict(
            self,
            default_context_chunks=self.default_context_chunks,
            over_fetch_factor=self.over_fetch_factor,
            max_context_chunks=self.max_context_chunks,
            tie_margin=self.tie_margin,
            raw_candidates=self.raw_candidates,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "RetrievalPlanner":
        """Deserialize the component."""
        return default_from_dict(cls, data)

    @component.output_types(fetch_top_k=int, candidate_top_k=int, context_top_k=int)
    def run(self, max_context_chunks: int | None = None) -> dict[str, int]:
        """
        :param max_context_chunks: Context chunks the request wants (defaults to ``default_context_chunks``).
        :returns: ``fetch_top_k`` (to retrieve), ``candidate_top_k`` (to consider) and ``context_top_k`` (to keep).
        :raises ValueError: If the request asks for fewer than 1 or more than ``max_context_chunks``.
        """
        chunks = self.default_context_chunks if max_context_chunks is None else max_context_chunks
        if not isinstance(chunks, int) or isinstance(chunks, bool) or not 1 <= chunks <= self.max_context_chunks:
            raise ValueError(f"max_context_chunks must be between 1 and {self.max_context_chunks}, got {chunks!r}.")
        candidates = chunks * self.over_fetch_factor
        fetched = max(candidates, self.raw_candidates) + self.tie_margin
        return {"fetch_top_k": fetched, "candidate_top_k": candidates, "context_top_k": chunks}

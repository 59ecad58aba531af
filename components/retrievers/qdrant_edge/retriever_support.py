"""
Init checks, filter policy and (de)serialisation shared by the three Qdrant Edge retrievers.

:class:`QdrantEdgeRetrieverBase` holds the init parameters every retriever takes (``document_store``,
``filters``, ``top_k``, ``filter_policy``, ``return_embedding``); a retriever adds its own and its ``run``.
"""

from typing import Any

from haystack import default_from_dict, default_to_dict
from haystack.document_stores.types import FilterPolicy
from haystack.document_stores.types.filter_policy import apply_filter_policy

from components.document_stores.qdrant_edge.document_store import QdrantEdgeDocumentStore
from components.document_stores.qdrant_edge.filters import convert_filters


def check_init(document_store: Any, filters: dict[str, Any] | None, top_k: int) -> None:
    """
    Validate the parameters every retriever takes.

    :raises ValueError: If ``document_store`` is not a ``QdrantEdgeDocumentStore`` or ``top_k`` is not positive.
    :raises FilterError: If ``filters`` is malformed (checked now rather than on the first query).
    """
    if not isinstance(document_store, QdrantEdgeDocumentStore):
        raise ValueError(f"document_store must be a QdrantEdgeDocumentStore, got {type(document_store).__name__}.")
    if not isinstance(top_k, int) or isinstance(top_k, bool) or top_k <= 0:
        raise ValueError(f"top_k must be a positive integer, got {top_k!r}.")
    convert_filters(filters)


def parse_filter_policy(filter_policy: str | FilterPolicy) -> FilterPolicy:
    """Accept a ``FilterPolicy`` or its name (``"replace"``/``"merge"``)."""
    return filter_policy if isinstance(filter_policy, FilterPolicy) else FilterPolicy.from_str(filter_policy)


def resolve_filters(
    policy: FilterPolicy, init_filters: dict[str, Any] | None, runtime_filters: dict[str, Any] | None
) -> dict[str, Any] | None:
    """
    The filters a run uses: REPLACE takes the runtime filters when given, else the init ones; MERGE combines them.

    Tenant isolation must not rest on MERGE (it can drop or overwrite an init-time condition): callers pass the
    complete access filter at run time.
    """
    return apply_filter_policy(policy, init_filters, runtime_filters)


def retriever_to_dict(retriever: Any, **init_parameters: Any) -> dict[str, Any]:
    """Serialise a retriever whose ``document_store``, ``filters``, ``top_k`` and ``filter_policy`` are attributes."""
    return default_to_dict(
        retriever,
        document_store=retriever.document_store.to_dict(),
        filters=retriever.filters,
        top_k=retriever.top_k,
        filter_policy=retriever.filter_policy.value,
        **init_parameters,
    )


def retriever_from_dict(cls: type, data: dict[str, Any]) -> Any:
    """Deserialise a retriever, rebuilding (or sharing) its document store."""
    init_parameters = data.get("init_parameters", {})
    init_parameters["document_store"] = QdrantEdgeDocumentStore.from_dict(init_parameters["document_store"])
    if "filter_policy" in init_parameters:
        init_parameters["filter_policy"] = FilterPolicy.from_str(init_parameters["filter_policy"])
    return default_from_dict(cls, data)


class QdrantEdgeRetrieverBase:
    """The init parameters, (de)serialisation and per-run search arguments common to the retrievers."""

    def __init__(
        self,
        document_store: QdrantEdgeDocumentStore,
        filters: dict[str, Any] | None = None,
        top_k: int = 10,
        filter_policy: str | FilterPolicy = FilterPolicy.REPLACE,
        return_embedding: bool = False,
    ) -> None:
        """
        :param document_store: The store to search.
        :param filters: Filters used when a run passes none (``filter_policy`` REPLACE) or merged with the run's
            (MERGE). Never rely on MERGE for tenant isolation: pass the full access filter at run time.
        :param top_k: Maximum number of documents returned.
        :param filter_policy: ``REPLACE`` (default) or ``MERGE``.
        :param return_embedding: Return each document's dense ``embedding``.
        :raises ValueError: If ``document_store`` or ``top_k`` is invalid.
        :raises FilterError: If ``filters`` is malformed.
        """
        check_init(document_store, filters, top_k)
        self.document_store = document_store
        self.filters = filters
        self.top_k = top_k
        self.filter_policy = parse_filter_policy(filter_policy)
        self.return_embedding = return_embedding

    def _extra_init_parameters(self) -> dict[str, Any]:
        """The init parameters a retriever adds to the common ones (for ``to_dict``)."""
        return {}

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component to a dict."""
        return retriever_to_dict(self, return_embedding=self.return_embedding, **self._extra_init_parameters())

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Any:
        """Deserialise the component from a dict."""
        return retriever_from_dict(cls, data)

    def _search_arguments(
        self, filters: dict[str, Any] | None, top_k: int | None, return_embedding: bool | None = None
    ) -> dict[str, Any]:
        """The store-search arguments of one run: resolved filters, ``top_k`` and ``return_embedding``."""
        return {
            "filters": resolve_filters(self.filter_policy, self.filters, filters),
            "top_k": top_k or self.top_k,
            "return_embedding": self.return_embedding if return_embedding is None else return_embedding,
        }

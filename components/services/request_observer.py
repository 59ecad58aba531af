"""
What the request service reports as it works, for whoever counts it (docs/contract.md, "Errors" names the
outcomes). The HTTP layer's Prometheus metrics implement it (``hayhooks_app.metrics.MetricsObserver``); the
base class does nothing, so a service wired without metrics (tests, scripts) still writes its query-log rows
and index events.

Usage:

```python
from components.services.request_observer import RequestObserver


class Counting(RequestObserver):
    def __init__(self):
        self.answered = []

    def query_answered(self, endpoint, mode, latency_s, results, tokens, action=None):
        self.answered.append((endpoint, results))
```
"""


class RequestObserver:
    """Callbacks of :class:`components.services.request_service.RequestService`; each does nothing here."""

    def outcome(self, error: BaseException) -> str:
        """
        The outcome label of a failed request, for the query log and the counters (the HTTP error type where
        there is one).

        :param error: What the request raised.
        :returns: ``internal_error`` here: without an HTTP layer every failure is one kind.
        """
        return "internal_error"

    def query_failed(self, endpoint: str, outcome: str) -> None:
        """A search, answer or enrichment request failed with ``outcome``."""

    def query_answered(
        self, endpoint: str, mode: str, latency_s: float, results: int, tokens: int, action: str | None = None
    ) -> None:
        """
        A search, answer or enrichment request succeeded.

        :param endpoint: ``search``, ``rag``, ``chat``, ``enrich`` or the MCP tool's endpoint.
        :param mode: The search mode (``hybrid`` for answers and enrichment).
        :param latency_s: Seconds the pipeline took.
        :param results: Results returned (search) or context chunks used.
        :param tokens: Context tokens used.
        :param action: An answer's action (``CITE``, ``ROUTE``, ...), ``None`` otherwise.
        """

    def documents_indexed(self, latency_s: float, chunks: int, statuses: dict[str, int]) -> None:
        """An indexing request wrote ``chunks`` chunks; ``statuses`` counts its documents by status."""

    def documents_invalidated(self, reason: str | None, documents: int, chunks: int) -> None:
        """``documents`` documents (``chunks`` chunks) left the index for ``reason``."""

    def flags_changed(self, flag: str, documents: int) -> None:
        """``flag`` (``tainted``, ``untainted``, ``verified``, ``unverified``) was set on ``documents`` documents."""

    def tenant_deleted(self, chunks: int) -> None:
        """A tenant was deleted with its ``chunks`` chunks."""

    # ------------------------------------------------------------------ quality signals (bounded labels: metrics)

    def answer_quality(self, tenant_id: str, tag: str | None, result: str) -> None:
        """
        An answer's result for the quality metrics (docs/contract.md, "Feedback and knowledge gaps").

        :param tenant_id: The asker's tenant.
        :param tag: The answer's primary context tag (``None``: no context tag).
        :param result: ``cited``, ``routed`` (to the tag's owner), ``declined`` (to the administrator, with
            context) or ``empty`` (no context chunk at all).
        """

    def search_quality(self, tenant_id: str, empty: bool) -> None:
        """A search or enrichment of ``tenant_id`` found nothing (``empty``) or something."""

    def feedback_given(self, tenant_id: str, tag: str | None, rating: str) -> None:
        """An asker rated a query ``up`` or ``down``; ``tag`` is the answer's primary context tag."""

"""
``EnrichmentService``: runs the enrichment pipeline (``pipelines/enrich.yml``) for a validated request.

Like :class:`components.services.query_service.QueryService`, it validates the request with its
pydantic model first (:class:`components.core.models.EnrichRequest`; a bad request raises
``pydantic.ValidationError``, the API's 422), maps it onto the pipeline's declared inputs (the
YAML's ``inputs:``), and surfaces failures as the typed errors of :mod:`components.core.errors`.

Usage:

```python
from components.services.enrichment_service import EnrichmentService

service = EnrichmentService.from_yaml("enrich")
service.enrich({"message": "How many vacation days do I get?", "tenant_id": "acme", "user_tags": ["hr"]})
```
"""

from collections.abc import Mapping
from typing import Any

from haystack import Pipeline
from haystack.core.errors import PipelineRuntimeError

from components.core.models import EnrichRequest, EnrichResponse
from components.services.query_service import QueryService, declared_io


class EnrichmentService:
    """
    Runs the enrichment pipeline.

    :param pipeline: The enrichment pipeline (``pipelines/enrich.yml``).
    :param inputs: Its input declaration when its metadata lacks one.
    :param output: ``"component.socket"`` of its response when its metadata lacks one.
    """

    def __init__(self, pipeline: Pipeline, *, inputs: Mapping[str, Any] | None = None, output: str | None = None):
        self.pipeline = pipeline
        self._inputs, self._output = declared_io(pipeline, inputs, output)

    @classmethod
    def from_yaml(cls, name: str = "enrich", env: Mapping[str, str] | None = None) -> "EnrichmentService":
        """Load the pipeline from ``pipelines/`` (a name or a ``.yml`` path)."""
        from components.services.pipeline_loader import load_pipeline

        return cls(load_pipeline(name, env=env))

    def _pipeline_data(self, request: Mapping[str, Any] | EnrichRequest) -> dict[str, dict[str, Any]]:
        validated = request if isinstance(request, EnrichRequest) else EnrichRequest.model_validate(request)
        values = {
            "message": validated.message,
            "tenant_id": validated.tenant_id,
            "user_tags": list(validated.user_tags),
            "user_id": validated.user_id,
            "project_id": validated.project_id,
            "filters": validated.filters.model_dump(exclude_none=True) if validated.filters else None,
            "top_k": validated.top_k,
        }
        if validated.scope is not None:
            # The query scope narrows the access rule like the other options (docs/contract.md "Access rule").
            values["filters"] = {**(values["filters"] or {}), "scope": validated.scope}
        return QueryService._data(values, self._inputs)

    def enrich(self, request: Mapping[str, Any] | EnrichRequest) -> dict[str, Any]:
        """
        Context for a message, without generation.

        :param request: An ``EnrichRequest`` or its dict (``message``, ``tenant_id``, ``user_tags``, ``user_id``?,
            ``project_id``?, ``filters``?, ``top_k``?, ``scope``?).
        :returns: The ``EnrichResponse`` as a JSON-ready dict.
        :raises pydantic.ValidationError: On an invalid request.
        :raises RAGServiceError: A typed error (token budget, context retrieval).
        """
        data = self._pipeline_data(request)
        component_name, socket = self._output
        try:
            result = self.pipeline.run(data, include_outputs_from={component_name})
        except PipelineRuntimeError as error:
            QueryService._reraise(error)
        return EnrichResponse.model_validate(result[component_name][socket]).model_dump(mode="json")

"""
``POST /enrich/run`` (also ``POST /rag/enrich``): context for another service's prompt through the
enrichment pipeline (``pipelines/enrich.yml``): SourceId-marked chunks, their sources and tokens, no answer.
"""

from starlette.datastructures import Headers

from components.core.models import EnrichResponse
from hayhooks_app.schemas import EnrichRequestBody
from hayhooks_app.wrapper_support import ServiceWrapper, takes


class PipelineWrapper(ServiceWrapper):
    pipeline_kind = "enrich"

    @takes(EnrichRequestBody, returns=EnrichResponse)
    def run_api(self, request: EnrichRequestBody, headers: Headers | None) -> dict:
        """Context for a message from the documents the requester may see, ready to paste into a prompt."""
        identity = self.identify(headers, request)
        return self.container.requests.enrich(request.model_dump(mode="json", exclude_none=True), identity)

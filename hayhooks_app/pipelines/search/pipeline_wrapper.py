"""``POST /search/run``: retrieval only, through ``pipelines/search.yml``."""

from starlette.datastructures import Headers

from components.core.models import SearchResponse
from hayhooks_app.schemas import SearchRequestBody
from hayhooks_app.wrapper_support import ServiceWrapper, takes


class PipelineWrapper(ServiceWrapper):
    pipeline_kind = "search"

    @takes(SearchRequestBody, returns=SearchResponse)
    def run_api(self, request: SearchRequestBody, headers: Headers | None) -> dict:
        """Search the documents the requester may see (vector, keyword or hybrid)."""
        identity = self.identify(headers, request)
        return self.container.requests.search(request.model_dump(mode="json", exclude_none=True), identity)

"""``POST /flags/run``: mark documents tainted and/or verified without re-embedding."""

from starlette.datastructures import Headers

from hayhooks_app.schemas import FlagsRequest, FlagsResult
from hayhooks_app.wrapper_support import ServiceWrapper, takes


class PipelineWrapper(ServiceWrapper):
    pipeline_kind = "indexing"

    @takes(FlagsRequest, returns=FlagsResult)
    def run_api(self, request: FlagsRequest, headers: Headers | None) -> dict:
        """Set or clear the tainted / verified flags of documents (search filters use them)."""
        writer = self.writer(headers, request, {request.tenant_id})
        # Documents the caller may not write are left alone and counted as absent (docs/contract.md, "Write rule").
        return self.container.requests.set_flags(
            request.tenant_id,
            request.document_ids,
            tainted=request.tainted,
            verified=request.verified,
            reason=request.reason,
            key_id=writer.key_id,
            writer=writer.rule,
        )

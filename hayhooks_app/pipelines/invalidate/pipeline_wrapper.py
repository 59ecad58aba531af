"""``POST /invalidate/run``: remove documents from the index (e.g. an upstream taint cascade)."""

from starlette.datastructures import Headers

from hayhooks_app.schemas import InvalidateRequest, InvalidateResult
from hayhooks_app.wrapper_support import ServiceWrapper, takes


class PipelineWrapper(ServiceWrapper):
    pipeline_kind = "indexing"

    @takes(InvalidateRequest, returns=InvalidateResult)
    def run_api(self, request: InvalidateRequest, headers: Headers | None) -> dict:
        """Invalidate documents: every chunk of each is removed; the reason and cascade id are recorded."""
        writer = self.writer(headers, request, {request.tenant_id})
        # Ids the caller may not write are answered as ids that do not exist (docs/contract.md, "Write rule").
        return self.container.requests.invalidate(
            request.tenant_id,
            request.document_ids,
            reason=request.reason,
            cascade_id=request.cascade_id,
            key_id=writer.key_id,
            writer=writer.rule,
        )

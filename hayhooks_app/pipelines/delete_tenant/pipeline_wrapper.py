"""``POST /delete_tenant/run``: remove every chunk of a tenant."""

from starlette.datastructures import Headers

from hayhooks_app.schemas import DeleteTenantRequest, DeleteTenantResult
from hayhooks_app.wrapper_support import ServiceWrapper, takes


class PipelineWrapper(ServiceWrapper):
    pipeline_kind = "indexing"

    @takes(DeleteTenantRequest, returns=DeleteTenantResult)
    def run_api(self, request: DeleteTenantRequest, headers: Headers | None) -> dict:
        """Delete a tenant: all its chunks leave the index (api_key mode needs the admin permission)."""
        key_id = self.authorize_write(headers, tenant_ids={request.tenant_id}, permission="admin")
        return self.container.requests.delete_tenant(request.tenant_id, key_id=key_id)

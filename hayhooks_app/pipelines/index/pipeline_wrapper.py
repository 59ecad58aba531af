"""``POST /index/run``: index JSON documents through ``pipelines/indexing.yml``."""

from starlette.datastructures import Headers

from hayhooks_app.schemas import IndexRequest, IndexResult
from hayhooks_app.wrapper_support import ServiceWrapper, takes


class PipelineWrapper(ServiceWrapper):
    pipeline_kind = "indexing"

    @takes(IndexRequest, returns=IndexResult)
    def run_api(self, request: IndexRequest, headers: Headers | None) -> dict:
        """Index documents: chunk, embed and write them; unchanged content is skipped."""
        documents = [document.model_dump(exclude_none=True) for document in request.documents]
        writer = self.writer(headers, request, {document.tenant_id for document in request.documents})
        # The documents as written first (a 403 worded for the key); the service checks again, with the stored
        # documents they would replace (docs/contract.md, "Write rule").
        writer.check_documents(documents)
        return self.container.requests.index_documents(documents, key_id=writer.key_id, writer=writer.rule)

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
        key_id = self.authorize_write(
            headers,
            tenant_ids={document.tenant_id for document in request.documents},
            tags={tag for document in request.documents for tag in document.tags},
            user_ids={document.user_id for document in request.documents if document.user_id},
            public=any(document.scope == "public" for document in request.documents),
        )
        return self.container.requests.index_documents(documents, key_id=key_id)

"""
``POST /rag/run`` and ``POST /v1/chat/completions`` (model ``rag``): grounded, cited answers
through the RAG pipeline (``pipelines/query.yml`` or ``query_ollama.yml``).
"""

from starlette.datastructures import Headers

from components.core.models import RAGResponse
from hayhooks_app import chat
from hayhooks_app.errors import raise_api_errors
from hayhooks_app.schemas import RAGRequestBody
from hayhooks_app.wrapper_support import ServiceWrapper, takes


class PipelineWrapper(ServiceWrapper):
    pipeline_kind = "rag"

    @takes(RAGRequestBody, returns=RAGResponse)
    def run_api(self, request: RAGRequestBody, headers: Headers | None) -> dict:
        """Answer a question from the documents the requester may see, with citations and confidence."""
        identity = self.identify(headers, request)
        return self.container.requests.answer(request.model_dump(mode="json", exclude_none=True), identity)

    def run_chat_completion(self, model: str, messages: list[dict], body: dict, headers: Headers | None = None):
        """OpenAI-compatible chat: the last user message is the query, earlier ones the history."""
        return raise_api_errors(chat.complete)(self.container, body, headers)

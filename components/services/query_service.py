"""
``QueryService``: the one entry point the REST layer (and the CLI, evaluation and
benchmarks) uses to run the query-side YAML pipelines.

* ``rag(request) -> RAGResponse dict`` runs ``pipelines/query.yml`` (or
  ``query_ollama.yml``), plus ``context_tag`` (:data:`CONTEXT_TAG`: the router's primary context tag, for the
  request service's records; not a response field); ``search(request) -> search response dict`` runs
  ``pipelines/search.yml``. Async twins: ``rag_async``, ``search_async``.
* Requests are validated with the pydantic models first
  (:class:`components.core.models.RAGRequest` / :class:`SearchRequest`): a bad request
  raises ``pydantic.ValidationError`` before anything runs (the API's 422).
* A validated request is mapped onto the pipeline's inputs by the pipeline's own
  declaration (``inputs:`` in the YAML, kept in ``Pipeline.metadata["inputs"]``), so
  editing the YAML never requires editing this module.
* Failures surface as the typed errors of :mod:`components.core.errors`: a component's
  ``RAGServiceError`` is re-raised as itself (not wrapped in Haystack's
  ``PipelineRuntimeError``), a document-store failure becomes
  :class:`ContextError`, anything else is re-raised as its original exception.

Usage:

```python
from components.services.query_service import QueryService

service = QueryService.from_yaml(rag="query", search="search")
service.rag({"query": "How many vacation days do employees get?", "tenant_id": "acme", "user_tags": ["hr"]})
service.search({"query": "vacation", "tenant_id": "acme", "user_tags": ["hr"], "search_mode": "keyword"})
```
"""

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from haystack import Pipeline
from haystack.core.errors import PipelineRuntimeError
from haystack.document_stores.errors import DocumentStoreError

from components.core.errors import ContextError, RAGServiceError
from components.core.models import RAGRequest, RAGResponse, SearchRequest, SearchResponse

logger = logging.getLogger(__name__)

# The key of the RAG result holding the router's primary context tag (``TagRouter``'s ``primary_tag``): what the
# request service files a question under (docs/contract.md, "Feedback and knowledge gaps"). It removes the key
# before the result leaves the service.
CONTEXT_TAG = "context_tag"


def declared_io(pipeline: Pipeline, inputs: Mapping[str, Any] | None = None, output: str | None = None):
    """
    A pipeline's declared inputs ``{name: ["component.socket", ...]}`` and its response output
    ``"component.socket"``, from its metadata unless given.

    :raises ValueError: If the pipeline declares none, or names a socket it does not have.
    """
    metadata = pipeline.metadata or {}
    inputs = dict(inputs or metadata.get("inputs") or {})
    outputs = {"response": output} if output else dict(metadata.get("outputs") or {})
    if not inputs or "response" not in outputs:
        raise ValueError(
            "The pipeline declares no `inputs`/`outputs.response` (in YAML `metadata:`); load it from pipelines/ "
            "with components.services.pipeline_loader.load_pipeline or pass the inputs and output explicitly."
        )
    sockets = pipeline.inputs(include_components_with_connected_inputs=True)
    normalised: dict[str, list[tuple[str, str]]] = {}
    for name, targets in inputs.items():
        targets = [targets] if isinstance(targets, str) else list(targets)
        pairs = []
        for target in targets:
            component_name, _, socket = str(target).partition(".")
            if socket not in sockets.get(component_name, {}):
                raise ValueError(f"Declared input {name!r} targets {target!r}, which the pipeline does not have.")
            pairs.append((component_name, socket))
        normalised[name] = pairs
    component_name, _, socket = str(outputs["response"]).partition(".")
    if component_name not in dict(pipeline.walk()):
        raise ValueError(f"Declared output {outputs['response']!r} names no component of the pipeline.")
    return normalised, (component_name, socket)


def _unwrap(error: PipelineRuntimeError) -> BaseException:
    """The exception a failing component raised, under Haystack's wrapper."""
    cause: BaseException | None = error
    while isinstance(cause, PipelineRuntimeError) and cause.__cause__ is not None:
        cause = cause.__cause__
    return cause or error


class QueryService:
    """
    Runs the RAG and search pipelines for validated requests.

    :param rag_pipeline: The RAG pipeline (``pipelines/query.yml`` or ``query_ollama.yml``).
    :param search_pipeline: The search pipeline (``pipelines/search.yml``); ``None`` disables ``search``.
    :param rag_inputs: Input declaration of the RAG pipeline when its metadata lacks one.
    :param rag_output: ``"component.socket"`` of the RAG response when its metadata lacks one.
    :param search_inputs: Input declaration of the search pipeline when its metadata lacks one.
    :param search_output: ``"component.socket"`` of the search response when its metadata lacks one.
    """

    def __init__(
        self,
        rag_pipeline: Pipeline,
        search_pipeline: Pipeline | None = None,
        *,
        rag_inputs: Mapping[str, Any] | None = None,
        rag_output: str | None = None,
        search_inputs: Mapping[str, Any] | None = None,
        search_output: str | None = None,
    ) -> None:
        self.rag_pipeline = rag_pipeline
        self.search_pipeline = search_pipeline
        self._rag_inputs, self._rag_output = declared_io(rag_pipeline, rag_inputs, rag_output)
        self._search_inputs, self._search_output = (
            declared_io(search_pipeline, search_inputs, search_output) if search_pipeline is not None else ({}, None)
        )
        # Components with a ``primary_tag`` output (the tag router): read beside the response.
        self._tag_sources = {
            name
            for name, sockets in rag_pipeline.outputs(include_components_with_connected_outputs=True).items()
            if "primary_tag" in sockets
        }

    @classmethod
    def from_yaml(
        cls, rag: str = "query", search: str | None = "search", env: Mapping[str, str] | None = None
    ) -> "QueryService":
        """
        Load the pipelines from ``pipelines/`` (names or ``.yml`` paths).

        :param rag: The RAG pipeline: ``"query"`` (extractive) or ``"query_ollama"``.
        :param search: The search pipeline, or ``None``.
        :param env: Variables for ``${...}`` references (defaults to the process environment).
        """
        from components.services.pipeline_loader import load_pipeline

        return cls(load_pipeline(rag, env=env), load_pipeline(search, env=env) if search else None)

    @property
    def supports_streaming(self) -> bool:
        """Whether the RAG pipeline streams answers (the Ollama backend does, the extractive one does not)."""
        return "streaming_callback" in self._rag_inputs

    def warm_up(self) -> None:
        """Load the models (embedder) now instead of on the first request."""
        self.rag_pipeline.warm_up()
        if self.search_pipeline is not None:
            self.search_pipeline.warm_up()

    # ------------------------------------------------------------------ requests -> pipeline data

    @staticmethod
    def _values(request: RAGRequest | SearchRequest) -> dict[str, Any]:
        values: dict[str, Any] = {
            "query": request.query,
            "tenant_id": request.tenant_id,
            "user_tags": list(request.user_tags),
            "user_id": request.user_id,
            "project_id": request.project_id,
            "filters": request.filters.model_dump(exclude_none=True) if request.filters else None,
        }
        if request.scope is not None:
            # The query scope narrows the access rule like the other options (docs/contract.md "Access rule").
            values["filters"] = {**(values["filters"] or {}), "scope": request.scope}
        if isinstance(request, RAGRequest):
            values["chat_history"] = (
                [{"role": message.role, "content": message.content} for message in request.chat_history]
                if request.chat_history
                else None
            )
            values["model"] = request.model
            values["max_context_chunks"] = request.max_context_chunks
        else:
            values["k"] = request.k
            values["search_mode"] = request.search_mode.value
            values["max_tokens"] = request.max_tokens
        return values

    @staticmethod
    def _data(values: Mapping[str, Any], declared: Mapping[str, list[tuple[str, str]]]) -> dict[str, dict[str, Any]]:
        data: dict[str, dict[str, Any]] = {}
        for name, value in values.items():
            if value is None or name not in declared:
                continue  # None: the socket's own default (or the YAML's) applies
            for component_name, socket in declared[name]:
                data.setdefault(component_name, {})[socket] = value
        return data

    @staticmethod
    def _reraise(error: PipelineRuntimeError) -> None:
        cause = _unwrap(error)
        if isinstance(cause, RAGServiceError):
            raise cause from error
        if isinstance(cause, DocumentStoreError):
            raise ContextError(f"Failed to retrieve context: {cause}") from cause
        if cause is not error:
            raise cause from error
        raise error

    # ------------------------------------------------------------------ RAG

    def _rag_data(self, request: Mapping[str, Any] | RAGRequest, streaming_callback: Callable | None) -> dict:
        validated = request if isinstance(request, RAGRequest) else RAGRequest.model_validate(request)
        values = self._values(validated)
        if streaming_callback is not None:
            if not self.supports_streaming:
                logger.debug("The RAG pipeline does not stream; the callback is not used.")
            values["streaming_callback"] = streaming_callback
        return self._data(values, self._rag_inputs)

    def rag(
        self, request: Mapping[str, Any] | RAGRequest, *, streaming_callback: Callable | None = None
    ) -> dict[str, Any]:
        """
        Answer a question.

        :param request: A ``RAGRequest`` or its dict (``query``, ``tenant_id``, ``user_tags``, ``user_id``?,
            ``project_id``?, ``chat_history``?, ``model``?, ``max_context_chunks``?, ``filters``?).
        :param streaming_callback: Receives streamed answer chunks (Ollama backend only).
        :returns: The ``RAGResponse`` as a JSON-ready dict.
        :raises pydantic.ValidationError: On an invalid request.
        :raises RAGServiceError: A typed error (model not allowed/unavailable, Ollama down or slow, budget, context).
        """
        data = self._rag_data(request, streaming_callback)
        component_name, socket = self._rag_output
        try:
            result = self.rag_pipeline.run(data, include_outputs_from={component_name, *self._tag_sources})
        except PipelineRuntimeError as error:
            self._reraise(error)
        return self._rag_response(result)

    async def rag_async(
        self, request: Mapping[str, Any] | RAGRequest, *, streaming_callback: Callable | None = None
    ) -> dict[str, Any]:
        """Async :meth:`rag` (components with ``run_async`` run without blocking the event loop)."""
        data = self._rag_data(request, streaming_callback)
        component_name, socket = self._rag_output
        try:
            result = await self.rag_pipeline.run_async(data, include_outputs_from={component_name, *self._tag_sources})
        except PipelineRuntimeError as error:
            self._reraise(error)
        return self._rag_response(result)

    def _rag_response(self, result: Mapping[str, Any]) -> dict[str, Any]:
        """The ``RAGResponse`` dict of a pipeline result, with the router's primary tag under :data:`CONTEXT_TAG`."""
        component_name, socket = self._rag_output
        response = RAGResponse.model_validate(result[component_name][socket]).to_json()
        if self._tag_sources:  # a pipeline without a tag router has no tag to file questions under
            tags = [result.get(name, {}).get("primary_tag") for name in sorted(self._tag_sources)]
            response[CONTEXT_TAG] = next((tag for tag in tags if tag), None)
        return response

    # ------------------------------------------------------------------ search

    def _search_data(self, request: Mapping[str, Any] | SearchRequest) -> dict:
        if self.search_pipeline is None:
            raise RuntimeError("This QueryService was built without a search pipeline.")
        validated = request if isinstance(request, SearchRequest) else SearchRequest.model_validate(request)
        return self._data(self._values(validated), self._search_inputs)

    def search(self, request: Mapping[str, Any] | SearchRequest) -> dict[str, Any]:
        """
        Retrieve without answering.

        :param request: A ``SearchRequest`` or its dict (``query``, ``tenant_id``, ``user_tags``, ``user_id``?,
            ``project_id``?, ``k``?, ``search_mode``?, ``filters``?, ``max_tokens``?).
        :returns: ``{"results", "context", "tokens_used", "search_mode", "metadata"}``; ``metadata.latency_ms`` is
            the measured wall time of the search.
        :raises pydantic.ValidationError: On an invalid request.
        :raises ContextError: If retrieval fails.
        """
        data = self._search_data(request)
        component_name, socket = self._search_output
        started = time.perf_counter()
        try:
            result = self.search_pipeline.run(data, include_outputs_from={component_name})
        except PipelineRuntimeError as error:
            self._reraise(error)
        return self._search_response(result[component_name][socket], started)

    async def search_async(self, request: Mapping[str, Any] | SearchRequest) -> dict[str, Any]:
        """Async :meth:`search`."""
        data = self._search_data(request)
        component_name, socket = self._search_output
        started = time.perf_counter()
        try:
            result = await self.search_pipeline.run_async(data, include_outputs_from={component_name})
        except PipelineRuntimeError as error:
            self._reraise(error)
        return self._search_response(result[component_name][socket], started)

    @staticmethod
    def _search_response(response: Mapping[str, Any], started: float) -> dict[str, Any]:
        validated = SearchResponse.model_validate(response)
        # The pipeline cannot time itself end to end; the service reports the wall time of the whole search.
        validated.metadata.latency_ms = round((time.perf_counter() - started) * 1000.0, 3)
        return validated.model_dump(mode="json")

    # ------------------------------------------------------------------ health

    def health(self) -> dict[str, Any]:
        """
        ``{"generator": {"backend", "model", "reachable", ...}, "store": {"backend", "points"}}``; never raises.
        The generator part comes from the RAG pipeline's answer backend (Ollama is asked for ``/api/tags``).
        """
        generator: dict[str, Any] = {"backend": "unknown", "model": None, "reachable": False}
        store: dict[str, Any] = {"backend": "unknown", "points": None}
        for _, instance in self.rag_pipeline.walk():
            if callable(getattr(instance, "health", None)):
                generator = instance.health()
            document_store = getattr(instance, "document_store", None)
            if document_store is not None:
                try:
                    store = {"backend": type(document_store).__name__, "points": document_store.count_documents()}
                except Exception as error:  # health must report, not raise
                    store = {"backend": type(document_store).__name__, "points": None, "error": str(error)}
        return {"generator": generator, "store": store}

"""
The process-wide service container: one set of loaded pipelines, one store, one records
database, shared by every Hayhooks wrapper of the process.

Pipelines are loaded from YAML (``components.services.pipeline_loader.load_pipeline``) once, on first
use or at start-up (``ServiceContainer.build``), under a lock, so concurrent first requests
never load a pipeline twice. The Qdrant Edge store is shared through its per-path shard
registry; the container hands the indexing pipeline's store object to the lifecycle
operations and the health check.

The operations here (search, RAG, indexing, invalidation, tenant delete, flags) are the
service layer of the HTTP API: each one calls the query/indexing services, then records
metrics and a query-log or index-event row. Access control is not decided here: the caller
passes an already resolved ``Identity`` (see ``hayhooks_app.identity``).

Usage:

```python
from hayhooks_app.service import get_container

container = get_container()          # built from the environment on first use
result = container.search({"query": "vpn", "k": 3}, identity)
```
"""

import logging
import threading
import time
from collections import Counter as CountOf
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.error import URLError
from urllib.request import urlopen

from haystack import Pipeline
from pydantic import BaseModel

from components.core.sentence_vector_cache import erase_sentence_vectors
from components.core.span_tags import tag_span
from components.core.state import database_url
from components.core.state.importer import import_data_dir
from components.services import document_lifecycle
from components.services.pipeline_loader import load_pipeline
from hayhooks_app.config import Settings, service_version
from hayhooks_app.errors import map_exception
from hayhooks_app.identity import ApiKeyStore, Identity
from hayhooks_app.metrics import metrics, reason_label
from hayhooks_app.records import RecordStore

logger = logging.getLogger(__name__)

PIPELINE_KINDS = ("indexing", "search", "rag", "enrich")


def find_component(pipeline: Pipeline, predicate: Callable[[Any], bool]) -> Any | None:
    """The first component of ``pipeline`` for which ``predicate`` holds."""
    for _name, component in pipeline.walk():
        if predicate(component):
            return component
    return None


def find_document_store(pipeline: Pipeline) -> Any | None:
    """The document store used by a pipeline's writer or retriever."""
    for _name, component in pipeline.walk():
        for attribute in ("document_store", "_document_store"):
            store = getattr(component, attribute, None)
            if store is not None and hasattr(store, "count_documents"):
                return store
    return None


def as_dict(value: Any) -> dict[str, Any]:
    """A service result as a plain JSON-ready dict (pydantic models are dumped)."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    return dict(value)


def _outcome(error: BaseException) -> str:
    mapped = map_exception(error)
    return mapped.error_type if mapped is not None else "internal_error"


class ServiceContainer:
    """
    Everything one serving process shares.

    :param settings: The application settings.
    """

    def __init__(self, settings: Settings):
        self.settings = settings
        self._lock = threading.RLock()
        # Index changes are serialised so that a re-index, an invalidation and a flag update of the
        # same document never interleave; reads never take this lock.
        self.write_lock = threading.Lock()
        self._pipelines: dict[str, Pipeline] = {}
        self._indexing = None
        self._queries = None
        self._enrichment = None
        self._records: RecordStore | None = None
        self._keys: ApiKeyStore | None = None
        self._conversations = None
        self.started_at = time.time()

    # ------------------------------------------------------------------ building

    def pipeline_name(self, kind: str) -> str:
        if kind not in PIPELINE_KINDS:
            raise ValueError(f"unknown pipeline kind {kind!r}; use one of {PIPELINE_KINDS}")
        return getattr(self.settings, f"{kind}_pipeline")

    def pipeline(self, kind: str) -> Pipeline:
        """The loaded, warmed-up pipeline of a kind (``indexing``, ``search``, ``rag`` or ``enrich``)."""
        pipeline = self._pipelines.get(kind)
        if pipeline is not None:
            return pipeline
        with self._lock:
            if kind not in self._pipelines:
                started = time.perf_counter()
                pipeline = load_pipeline(self.pipeline_name(kind))
                pipeline.warm_up()
                self._pipelines[kind] = pipeline
                logger.info(
                    "Loaded the %s pipeline (%s) in %.1f s.",
                    kind,
                    self.pipeline_name(kind),
                    time.perf_counter() - started,
                )
            return self._pipelines[kind]

    @property
    def indexing(self):
        """The ``IndexingService`` over the indexing pipeline."""
        if self._indexing is None:
            with self._lock:
                if self._indexing is None:
                    from components.services.indexing_service import IndexingService

                    self._indexing = IndexingService(
                        self.pipeline("indexing"), max_document_chars=self.settings.limits.max_document_chars
                    )
        return self._indexing

    @property
    def queries(self):
        """The ``QueryService`` over the RAG and search pipelines."""
        if self._queries is None:
            with self._lock:
                if self._queries is None:
                    from components.services.query_service import QueryService

                    self._queries = QueryService(self.pipeline("rag"), self.pipeline("search"))
        return self._queries

    @property
    def enrichment(self):
        """The ``EnrichmentService`` over the enrichment pipeline."""
        if self._enrichment is None:
            with self._lock:
                if self._enrichment is None:
                    from components.services.enrichment_service import EnrichmentService

                    self._enrichment = EnrichmentService(self.pipeline("enrich"))
        return self._enrichment

    @property
    def store(self) -> Any:
        """The document store (the indexing pipeline's; every pipeline shares its shard)."""
        store = find_document_store(self.pipeline("indexing"))
        if store is None:
            raise RuntimeError(f"The indexing pipeline {self.pipeline_name('indexing')!r} has no document store.")
        return store

    @property
    def records(self) -> RecordStore:
        if self._records is None:
            with self._lock:
                if self._records is None:
                    self._records = RecordStore(self.settings.records_path, self.settings.query_log_text)
        return self._records

    @property
    def keys(self) -> ApiKeyStore:
        if self._keys is None:
            with self._lock:
                if self._keys is None:
                    self._keys = ApiKeyStore(self.settings.api_keys_file)
        return self._keys

    @property
    def conversations(self):
        """The server-side conversations (``hayhooks_app.conversations``), summarised by the RAG pipeline's LLM."""
        if self._conversations is None:
            with self._lock:
                if self._conversations is None:
                    from hayhooks_app.conversations import conversation_service

                    self._conversations = conversation_service(self.settings.data_dir, self.pipeline("rag"))
        return self._conversations

    @property
    def glossary(self):
        """The per-tenant glossaries the pipelines' query expander reads (``components.core.glossary_store``)."""
        from components.core.glossary_store import GLOSSARY_FILE, GlossaryStore

        return GlossaryStore(self.settings.data_dir / GLOSSARY_FILE)

    def tag_directory(self) -> Any | None:
        """The tag-owner directory the RAG pipeline's router reads, or ``None``."""
        for _name, component in self.pipeline("rag").walk():
            for attribute in ("tag_directory", "directory", "_directory"):
                candidate = getattr(component, attribute, None)
                if candidate is not None and type(candidate).__name__ == "TagDirectory":
                    return candidate
        return None

    def build(self) -> "ServiceContainer":
        """Load every pipeline and service now (start-up), so the first request pays nothing."""
        self.settings.data_dir.mkdir(parents=True, exist_ok=True)
        if database_url() is not None:
            # A data dir an embedded install wrote moves into the shared database once (docs/operations.md).
            import_data_dir(self.settings.data_dir)
        for kind in PIPELINE_KINDS:
            self.pipeline(kind)
        _ = self.indexing, self.queries, self.enrichment, self.records, self.keys
        metrics.track_index_size(self.store.count_documents)
        metrics.track_query_log(lambda: self.records.dropped_queries, lambda: self.records.writer.queued)
        self.keys.prepare()  # with a shared database: migrate, and import a keys file left in the data dir
        return self

    def close(self) -> None:
        if self._records is not None:
            self._records.close()
        if self._conversations is not None:
            self._conversations.close()

    # ------------------------------------------------------------------ queries

    def _log_query(self, endpoint: str, payload: dict, identity: Identity, latency_ms: float, **fields) -> None:
        try:
            self.records.log_query(
                endpoint=endpoint,
                query=payload.get("query", ""),
                latency_ms=latency_ms,
                tenant_id=identity.tenant_id,
                user_id=identity.user_id,
                project_id=identity.project_id,
                scope=identity.scope,
                key_id=identity.key_id,
                **fields,
            )
        except Exception:  # a full disk must not fail the request that was answered
            logger.exception("Could not write the query log.")

    @staticmethod
    def _with_identity(request: dict[str, Any], identity: Identity) -> dict[str, Any]:
        # The identity's values replace whatever the body said: they are the only access input.
        payload = {
            key: value
            for key, value in request.items()
            if key not in {"tenant_id", "user_tags", "user_id", "project_id"}
        }
        payload.update(tenant_id=identity.tenant_id, user_tags=list(identity.user_tags))
        if identity.user_id is not None:
            payload["user_id"] = identity.user_id
        if identity.project_id is not None:
            payload["project_id"] = identity.project_id
        return payload

    def search(self, request: dict[str, Any], identity: Identity, endpoint: str = "search") -> dict[str, Any]:
        """Retrieval only; records latency, result count and tokens."""
        payload = self._with_identity(request, identity)
        mode = str(payload.get("search_mode") or "hybrid")
        started = time.perf_counter()
        try:
            result = as_dict(self.queries.search(payload))
        except Exception as error:
            latency_ms = (time.perf_counter() - started) * 1000
            metrics.queries.labels(endpoint, _outcome(error)).inc()
            self._log_query(endpoint, payload, identity, latency_ms, search_mode=mode, outcome=_outcome(error))
            raise
        latency_ms = (time.perf_counter() - started) * 1000
        count, tokens = len(result.get("results", [])), int(result.get("tokens_used") or 0)
        metrics.query_latency.labels(endpoint, mode).observe(latency_ms / 1000)
        metrics.query_results.labels(endpoint, mode).observe(count)
        metrics.query_tokens.labels(endpoint).observe(tokens)
        metrics.queries.labels(endpoint, "ok").inc()
        self._log_query(
            endpoint, payload, identity, latency_ms, search_mode=mode, result_count=count, tokens_used=tokens
        )
        # The request's summary on Hayhooks' pipeline-run span (each component tags its own counts).
        tag_span(
            {
                "sourcebound.tenant_id": identity.tenant_id,
                "sourcebound.search_mode": result.get("search_mode") or mode,
                "sourcebound.results": count,
                "sourcebound.tokens.context": tokens,
            }
        )
        return result

    def rag(self, request: dict[str, Any], identity: Identity, endpoint: str = "rag") -> dict[str, Any]:
        """A grounded answer; records latency, chunks and tokens used, action and confidence."""
        request = dict(request)
        conversation_id = request.pop("conversation_id", None)
        if conversation_id is not None:
            # The conversation's summary and recent turns are the history (docs/contract.md, "Conversations").
            request["chat_history"] = self.conversations.history_for(conversation_id, identity, request)
        payload = self._with_identity(request, identity)
        started = time.perf_counter()
        try:
            result = as_dict(self.queries.rag(payload))
        except Exception as error:
            latency_ms = (time.perf_counter() - started) * 1000
            metrics.queries.labels(endpoint, _outcome(error)).inc()
            self._log_query(
                endpoint, payload, identity, latency_ms, model=payload.get("model"), outcome=_outcome(error)
            )
            raise
        latency_ms = (time.perf_counter() - started) * 1000
        count = int(result.get("context_chunks_used") or 0)
        tokens = int(result.get("context_tokens_used") or 0)
        action = result.get("action")
        confidence = (result.get("confidence") or {}).get("overall")
        metrics.query_latency.labels(endpoint, "hybrid").observe(latency_ms / 1000)
        metrics.query_results.labels(endpoint, "hybrid").observe(count)
        metrics.query_tokens.labels(endpoint).observe(tokens)
        metrics.queries.labels(endpoint, "ok").inc()
        if action:
            metrics.answers.labels(action).inc()
        self._log_query(
            endpoint, payload, identity, latency_ms, search_mode="hybrid", model=result.get("model_used"),
            result_count=count, tokens_used=tokens, action=action, confidence=confidence,
        )  # fmt: skip
        tag_span(
            {
                "sourcebound.tenant_id": identity.tenant_id,
                "sourcebound.search_mode": "hybrid",
                "sourcebound.model": result.get("model_used"),
                "sourcebound.context_chunks": count,
                "sourcebound.tokens.context": tokens,
                "sourcebound.action": action,
                "sourcebound.confidence": confidence,
            }
        )
        if conversation_id is not None:
            self.conversations.record_turn(conversation_id, identity, payload["query"], result["answer"])
            result["conversation_id"] = conversation_id
        return result

    def enrich(self, request: dict[str, Any], identity: Identity, endpoint: str = "enrich") -> dict[str, Any]:
        """Context for a message, no answer; records latency, chunks and tokens used."""
        payload = self._with_identity(request, identity)
        logged = {"query": payload.get("message", "")}  # the query log's text column holds the message
        started = time.perf_counter()
        try:
            result = as_dict(self.enrichment.enrich(payload))
        except Exception as error:
            latency_ms = (time.perf_counter() - started) * 1000
            metrics.queries.labels(endpoint, _outcome(error)).inc()
            self._log_query(endpoint, logged, identity, latency_ms, search_mode="hybrid", outcome=_outcome(error))
            raise
        latency_ms = (time.perf_counter() - started) * 1000
        count, tokens = int(result.get("context_chunks_used") or 0), int(result.get("tokens_used") or 0)
        metrics.query_latency.labels(endpoint, "hybrid").observe(latency_ms / 1000)
        metrics.query_results.labels(endpoint, "hybrid").observe(count)
        metrics.query_tokens.labels(endpoint).observe(tokens)
        metrics.queries.labels(endpoint, "ok").inc()
        self._log_query(
            endpoint, logged, identity, latency_ms, search_mode="hybrid", result_count=count, tokens_used=tokens
        )
        return result

    # ------------------------------------------------------------------ index changes

    def _record_indexing(
        self, result: dict[str, Any], tenant_ids: list[str], key_id: str | None, latency_s: float
    ) -> None:
        metrics.embedding_latency.observe(latency_s)
        metrics.chunks_created.inc(int(result.get("chunks_written") or 0))
        documents = result.get("documents", [])
        for status, count in CountOf(str(document.get("status")) for document in documents).items():
            metrics.documents_indexed.labels(status).inc(count)
        # One event per tenant, with that tenant's documents (a batch may span tenants).
        fallback = tenant_ids[0] if len(set(tenant_ids)) == 1 else None
        by_tenant: dict[str | None, list[dict[str, Any]]] = {}
        for document in documents:
            by_tenant.setdefault(document.get("tenant_id") or fallback, []).append(document)
        for tenant_id, entries in sorted(by_tenant.items(), key=lambda item: str(item[0])):
            self.records.log_event(
                "index",
                tenant_id=tenant_id,
                key_id=key_id,
                document_ids=[entry.get("document_id") for entry in entries],
                chunks=sum(int(entry.get("chunks") or 0) for entry in entries),
                details={"statuses": dict(CountOf(str(entry.get("status")) for entry in entries))},
            )

    def index_documents(self, documents: list[dict[str, Any]], key_id: str | None = None) -> dict[str, Any]:
        """Index JSON documents (``IndexingService.index_texts``)."""
        started = time.perf_counter()
        with self.write_lock:
            result = as_dict(self.indexing.index_texts(documents))
        self._record_indexing(result, [d["tenant_id"] for d in documents], key_id, time.perf_counter() - started)
        return result

    def index_streams(self, streams: list[Any], key_id: str | None = None) -> dict[str, Any]:
        """
        Index files given as ``ByteStream`` objects (uploads, the sample corpus) whose meta carries
        ``tenant_id``, ``tags``, a ``document_name`` or ``file_path`` with the extension, and optionally
        ``document_id``, ``scope``, ``user_id``, ``project_id`` (``IndexingService.index_streams``).
        """
        started = time.perf_counter()
        with self.write_lock:
            result = as_dict(self.indexing.index_streams(streams))
        self._record_indexing(
            result, [stream.meta.get("tenant_id") for stream in streams], key_id, time.perf_counter() - started
        )
        return result

    def _locked_lifecycle(self, operation: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run a :mod:`components.services.document_lifecycle` operation on the store under the write lock."""
        with self.write_lock:
            return operation(self.store, *args, **kwargs)

    def invalidate(
        self,
        tenant_id: str,
        document_ids: list[str],
        reason: str | None = None,
        cascade_id: str | None = None,
        key_id: str | None = None,
    ) -> dict[str, Any]:
        """Remove documents from the index; records the reason and cascade id."""
        outcome = self._locked_lifecycle(
            document_lifecycle.invalidate, tenant_id, document_ids, reason=reason, cascade_id=cascade_id
        )
        result = _normalise_invalidation(outcome, document_ids, cascade_id)
        erase_sentence_vectors(self.settings.data_dir, tenant_id, document_ids)
        label = reason_label(reason)
        metrics.invalidations.labels(label).inc(result["invalidated"])
        metrics.invalidated_chunks.labels(label).inc(result["chunks_removed"])
        self.records.log_event(
            "invalidate", tenant_id=tenant_id, key_id=key_id, document_ids=document_ids, reason=reason,
            cascade_id=cascade_id, chunks=result["chunks_removed"], details={"invalidated": result["invalidated"]},
        )  # fmt: skip
        return result

    def delete_tenant(self, tenant_id: str, key_id: str | None = None) -> dict[str, Any]:
        """
        Remove everything of a tenant (docs/contract.md "Deletion"): chunks, query-log rows, index events (one
        tombstone stays), tag owners, API keys, conversations and glossary; the result says how many of each.
        """
        from hayhooks_app.erasure import erase_tenant

        with self.write_lock:
            removed = erase_tenant(
                self.store, tenant_id, records=self.records, directory=self.tag_directory(),
                keys_file=self.settings.api_keys_file, key_id=key_id, data_dir=self.settings.data_dir,
            )  # fmt: skip
        metrics.tenant_deletions.inc()
        metrics.tenant_chunks_removed.inc(removed["chunks"])
        return {"tenant_id": tenant_id, "chunks_removed": removed["chunks"], "removed": removed}

    def set_flags(
        self,
        tenant_id: str,
        document_ids: list[str],
        tainted: bool | None = None,
        verified: bool | None = None,
        reason: str | None = None,
        key_id: str | None = None,
    ) -> dict[str, Any]:
        """Mark documents tainted and/or verified without re-embedding."""
        outcome = self._locked_lifecycle(
            document_lifecycle.set_flags, tenant_id, document_ids, tainted=tainted, verified=verified
        )
        updated = _count(outcome, "chunks_updated", "updated")
        for flag, value in (("tainted", tainted), ("verified", verified)):
            if value is not None:
                metrics.flag_updates.labels(flag if value else f"un{flag}").inc(len(document_ids))
        self.records.log_event(
            "flags", tenant_id=tenant_id, key_id=key_id, document_ids=document_ids, reason=reason, chunks=updated,
            details={"tainted": tainted, "verified": verified},
        )  # fmt: skip
        result: dict[str, Any] = {"documents": len(document_ids), "chunks_updated": updated}
        if tainted is not None:
            result["tainted"] = tainted
        if verified is not None:
            result["verified"] = verified
        return result

    # ------------------------------------------------------------------ health

    def health(self) -> dict[str, Any]:
        """
        Store, embedder and generator status for ``GET /health``.

        ``status`` is ``unhealthy`` when the store fails, ``degraded`` when the LLM is unreachable
        (search still works), else ``healthy``.
        """
        try:
            store = self.store
            info = store.info() if hasattr(store, "info") else {"points": store.count_documents()}
            backend = "qdrant-edge" if type(store).__name__.startswith("QdrantEdge") else "qdrant-server"
            store_status = {"backend": backend, "status": "ok", **info}
        except Exception as error:
            store_status = {"backend": "unknown", "status": "error", "points": None, "error": str(error)}
        generator = self._generator_status()
        if store_status["status"] == "error":
            status = "unhealthy"
        elif generator.get("reachable") is False:
            status = "degraded"
        else:
            status = "healthy"
        return {
            "status": status,
            "version": service_version(),
            "auth_mode": self.settings.auth_mode,
            "uptime_s": round(time.time() - self.started_at, 1),
            "store": store_status,
            "embedder": self._embedder_status(),
            "generator": generator,
            "pipelines": {kind: self.pipeline_name(kind) for kind in PIPELINE_KINDS},
        }

    def _embedder_status(self) -> dict[str, Any]:
        embedder = find_component(
            self.pipeline("search"), lambda c: type(c).__name__.endswith("TextEmbedder") and hasattr(c, "model")
        )
        if embedder is None:
            return {"model": None, "loaded": False}
        model = str(getattr(embedder, "model", ""))
        try:
            from components.core.runtime import DEFAULT_EMBEDDING_MODEL_NAME, embedding_model_path

            packaged = Path(model).resolve() == Path(embedding_model_path()).resolve()
        except Exception:  # the packaged model is optional for a custom YAML
            packaged = False
        return {
            "model": DEFAULT_EMBEDDING_MODEL_NAME if packaged else model,
            "backend": type(embedder).__name__,
            "dim": getattr(self.store, "embedding_dim", None),
            "loaded": True,
        }

    def _generator_status(self) -> dict[str, Any]:
        # Probes may come every second from several load balancers: ask Ollama at most every 2 s.
        cached = getattr(self, "_generator_cache", None)
        if cached is not None and time.monotonic() - cached[0] < 2.0:
            return cached[1]
        queries = self.queries
        if hasattr(queries, "health"):
            status = dict(queries.health().get("generator") or {})
        else:
            status = _introspect_generator(self.pipeline("rag"))
        self._generator_cache = (time.monotonic(), status)
        return status


def _introspect_generator(pipeline: Pipeline) -> dict[str, Any]:
    """Generator backend, model and reachability, read off the RAG pipeline's components."""
    ollama = find_component(pipeline, lambda c: "Ollama" in type(c).__name__ and hasattr(c, "url"))
    if ollama is not None:
        url = str(getattr(ollama, "url", "")).rstrip("/")
        return {
            "backend": "ollama",
            "model": getattr(ollama, "model", None),
            "url": url,
            "reachable": _reachable(f"{url}/api/tags"),
        }
    return {"backend": "extractive", "model": "extractive", "reachable": True}


def _reachable(url: str, timeout: float = 1.0) -> bool:
    try:
        with urlopen(url, timeout=timeout) as response:  # noqa: S310 - configured Ollama URL
            return 200 <= response.status < 500
    except (URLError, OSError, ValueError):
        return False


def _count(outcome: Any, *keys: str) -> int:
    """An integer result of a lifecycle call, whether it returned a number or a dict."""
    if isinstance(outcome, BaseModel):
        outcome = outcome.model_dump()
    if isinstance(outcome, dict):
        for key in keys:
            if key in outcome:
                return int(outcome[key])
        raise TypeError(f"lifecycle result {outcome!r} has none of {keys}")
    return int(outcome)


def _normalise_invalidation(outcome: Any, document_ids: list[str], cascade_id: str | None) -> dict[str, Any]:
    if isinstance(outcome, BaseModel):
        outcome = outcome.model_dump()
    if isinstance(outcome, dict):
        return {
            "invalidated": int(outcome.get("invalidated", len(document_ids))),
            "chunks_removed": _count(outcome, "chunks_removed", "removed"),
            "cascade_id": outcome.get("cascade_id", cascade_id),
        }
    return {"invalidated": len(document_ids), "chunks_removed": int(outcome), "cascade_id": cascade_id}


_container: ServiceContainer | None = None
_container_lock = threading.Lock()


def get_container() -> ServiceContainer:
    """The process's container; built from the environment on first use (thread-safe)."""
    global _container
    if _container is None:
        with _container_lock:
            if _container is None:
                _container = ServiceContainer(Settings.from_env())
    return _container


def configure(settings: Settings) -> ServiceContainer:
    """Install a container for ``settings`` (start-up); wrappers then share it."""
    global _container
    with _container_lock:
        if _container is not None:
            _container.close()
        _container = ServiceContainer(settings)
        return _container

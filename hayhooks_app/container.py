"""
The process-wide service container: the wiring of one serving process. It holds the loaded pipelines, the
stores and the services, each built on first use (or all at start-up by :meth:`ServiceContainer.build`)
under a lock, so concurrent first requests never load a pipeline twice, and shared by every Hayhooks
wrapper, route, the chat and MCP endpoints and the event consumer.

| part | what | from |
|---|---|---|
| ``pipeline(kind)`` | the ``indexing``, ``search``, ``rag`` and ``enrich`` pipelines | ``pipelines/*.yml`` |
| ``indexing``, ``queries``, ``enrichment`` | the services over them | ``components.services`` |
| ``store`` | the document store (the indexing pipeline's; every pipeline shares its shard) | the YAML |
| ``records``, ``keys``, ``glossary``, ``tag_directory()`` | the stores | ``components.stores`` |
| ``credentials`` | what a bearer token grants: API keys and/or OpenID Connect tokens | ``hayhooks_app.credentials`` |
| ``conversations`` | server-side conversations | ``components.services.conversation_service`` |
| ``requests`` | search, answer, enrich, index changes with records and metrics | ``...services.request_service`` |
| ``gaps``, ``feedback`` | knowledge gaps (kept questions, routed events), feedback | ``...services.knowledge_gaps`` |
| ``health`` | ``GET /health`` | ``components.services.health_check`` |
| ``outbox`` | events to publish (``None`` unless ``SOURCEBOUND_EVENTS_PUBLISH``) | ``components.stores.event_outbox`` |

Nothing here decides anything: access control is resolved by the HTTP layer (``hayhooks_app.identity``) and
passed to ``requests`` as an ``Identity``; what a request records is the request service's.

Usage:

```python
from hayhooks_app.container import get_container

container = get_container()          # built from the environment on first use
result = container.requests.search({"query": "vpn", "k": 3}, identity)
```
"""

import logging
import threading
import time
from typing import Any

from haystack import Pipeline

from components.routers.tag_router import NO_TAG, TagRouter
from components.services.conversation_service import ConversationService
from components.services.document_catalog import StaleRule
from components.services.feedback_service import FeedbackService
from components.services.health_check import HealthCheck
from components.services.knowledge_gaps import GapSettings, KnowledgeGaps
from components.services.pipeline_loader import load_pipeline
from components.services.pipeline_parts import find_component, find_document_store, find_tag_directory
from components.services.request_service import RequestService
from components.stores.event_outbox import OUTBOX_FILE, EventOutbox
from components.stores.glossary_store import GLOSSARY_FILE, GlossaryStore
from components.stores.key_store import ApiKeyStore
from components.stores.record_store import RecordStore
from components.stores.state import database_url
from components.stores.state.importer import import_data_dir
from hayhooks_app.config import Settings, service_version
from hayhooks_app.credentials import Credentials
from hayhooks_app.metrics import MetricsObserver, metrics
from hayhooks_app.oidc.authenticator import OidcAuthenticator
from hayhooks_app.oidc.provider import IdentityProviderUnavailable

logger = logging.getLogger(__name__)

PIPELINE_KINDS = ("indexing", "search", "rag", "enrich")


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
        self._credentials: Credentials | None = None
        self._conversations: ConversationService | None = None
        self._outbox: EventOutbox | None = None
        self.started_at = time.time()
        observer = MetricsObserver(metrics, search_budget_ms=settings.search_budget_ms)
        metrics.bound_labels(settings.metrics_max_tenants, settings.metrics_max_tags)
        self.stale_rule = StaleRule(settings.stale_after_days, settings.stale_source_dirs)
        gap_settings = GapSettings(
            keep_questions=settings.keep_unanswered_questions,
            retention_days=settings.unanswered_questions_retention_days,
            window_days=max(1, settings.records_retention_days or 30),
        )
        self.gaps = KnowledgeGaps(self, gap_settings, self.stale_rule)
        self.feedback = FeedbackService(self, self.gaps, observer)
        self.requests = RequestService(
            self, data_dir=settings.data_dir, keys_file=settings.api_keys_file, observer=observer, gaps=self.gaps
        )
        self.health = HealthCheck(
            self,
            version=service_version(),
            auth_mode=settings.auth_mode,
            pipeline_names={kind: self.pipeline_name(kind) for kind in PIPELINE_KINDS},
            started_at=self.started_at,
        )

    def _once(self, attribute: str, build) -> Any:
        """The part held in ``attribute``, built by ``build()`` the first time (under the lock)."""
        if getattr(self, attribute) is None:
            with self._lock:
                if getattr(self, attribute) is None:
                    setattr(self, attribute, build())
        return getattr(self, attribute)

    # ------------------------------------------------------------------ pipelines and their services

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

        def build():
            from components.services.indexing_service import IndexingService

            limit = self.settings.limits.max_document_chars
            return IndexingService(self.pipeline("indexing"), max_document_chars=limit)

        return self._once("_indexing", build)

    @property
    def queries(self):
        """The ``QueryService`` over the RAG and search pipelines."""

        def build():
            from components.services.query_service import QueryService

            return QueryService(self.pipeline("rag"), self.pipeline("search"))

        return self._once("_queries", build)

    @property
    def enrichment(self):
        """The ``EnrichmentService`` over the enrichment pipeline."""

        def build():
            from components.services.enrichment_service import EnrichmentService

            return EnrichmentService(self.pipeline("enrich"))

        return self._once("_enrichment", build)

    @property
    def store(self) -> Any:
        """The document store (the indexing pipeline's; every pipeline shares its shard)."""
        store = find_document_store(self.pipeline("indexing"))
        if store is None:
            raise RuntimeError(f"The indexing pipeline {self.pipeline_name('indexing')!r} has no document store.")
        return store

    # ------------------------------------------------------------------ stores and services

    @property
    def records(self) -> RecordStore:
        """The query log and index events (``components.stores.record_store``)."""
        return self._once("_records", lambda: RecordStore(self.settings.records_path, self.settings.query_log_text))

    @property
    def keys(self) -> ApiKeyStore:
        """The API keys of ``api_key`` mode (``components.stores.key_store``)."""
        return self._once("_keys", lambda: ApiKeyStore(self.settings.api_keys_file))

    @property
    def credentials(self) -> Credentials | None:
        """What a bearer token grants in this identity mode (``None`` in trusted mode)."""
        mode = self.settings.auth_mode
        if mode == "trusted":
            return None

        def build():
            oidc = OidcAuthenticator(self.settings.oidc) if self.settings.oidc is not None else None
            return Credentials(mode, keys=self.keys, oidc=oidc)

        return self._once("_credentials", build)

    @property
    def oidc(self) -> OidcAuthenticator | None:
        """The OpenID Connect verifier (modes with ``oidc``), else ``None``."""
        credentials = self.credentials
        return credentials.oidc if credentials is not None else None

    @property
    def conversations(self) -> ConversationService:
        """The server-side conversations, summarised by the RAG pipeline's LLM."""

        def build():
            from components.services.conversation_service import conversation_service

            return conversation_service(self.settings.data_dir, self.pipeline("rag"))

        return self._once("_conversations", build)

    @property
    def glossary(self) -> GlossaryStore:
        """The per-tenant glossaries the pipelines' query expander reads (``components.stores.glossary_store``)."""
        return GlossaryStore(self.settings.data_dir / GLOSSARY_FILE)

    @property
    def outbox(self) -> EventOutbox | None:
        """The event outbox when events are published (``SOURCEBOUND_EVENTS_PUBLISH``), else ``None``."""
        if not self.settings.publish_events:
            return None
        return self._once("_outbox", lambda: EventOutbox(self.settings.data_dir / OUTBOX_FILE))

    def tag_directory(self) -> Any | None:
        """The tag-owner directory the RAG pipeline's router reads, or ``None``."""
        return find_tag_directory(self.pipeline("rag"))

    def owner_of(self, tenant_id: str, tag: str | None) -> dict[str, Any]:
        """Whom a question filed under ``tag`` goes to: the RAG pipeline's router's rule (``TagRouter.owner_of``)."""
        router = find_component(self.pipeline("rag"), lambda component: isinstance(component, TagRouter))
        if router is None:
            return {"tag": tag or NO_TAG, "owner_user_id": None, "owner_email": None, "fallback": True}
        return router.owner_of(tenant_id, tag)

    # ------------------------------------------------------------------ lifecycle

    def build(self) -> "ServiceContainer":
        """Load every pipeline and service now (start-up), so the first request pays nothing."""
        self.settings.data_dir.mkdir(parents=True, exist_ok=True)
        if database_url() is not None:
            # A data dir an embedded install wrote moves into the shared database once (docs/operations.md).
            import_data_dir(self.settings.data_dir)
        for kind in PIPELINE_KINDS:
            self.pipeline(kind)
        _ = self.indexing, self.queries, self.enrichment, self.records, self.keys, self.outbox
        metrics.track_index_size(self.store.count_documents)
        metrics.track_query_log(lambda: self.records.dropped_queries, lambda: self.records.writer.queued)
        self.keys.prepare()  # with a shared database: migrate, and import a keys file left in the data dir
        if self.oidc is not None:
            try:
                self.oidc.keys.metadata()  # the first token then waits for nothing
            except IdentityProviderUnavailable as error:
                logger.warning("%s Tokens are answered 503 until it is.", error)
        return self

    def prune(self) -> dict[str, int]:
        """Remove records, feedback and kept questions past their retention (start-up and the pruning schedule)."""
        days = self.settings.records_retention_days
        return {**self.records.prune(days), **self.gaps.prune(days)}

    def close(self) -> None:
        if self._records is not None:
            self._records.close()
        if self._conversations is not None:
            self._conversations.close()
        if self._outbox is not None:
            self._outbox.close()


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

"""
The request-level service: what every search, answer, enrichment and index change does around the query,
indexing and lifecycle services, whoever asks (the HTTP wrappers, chat, MCP, the event consumer, source sync).

* reads (:meth:`RequestService.search`, :meth:`RequestService.answer`, :meth:`RequestService.enrich`): the
  requester's identity replaces whatever the body said (``components.core.requester.with_identity``); every
  request, answered or failed, leaves a query-log row (``components.stores.record_store``); an answer with a
  ``conversation_id`` takes the conversation's history and is recorded as its next turn (docs/contract.md,
  "Conversations");
* every read gets a ``query_id`` (in its result and its query-log row: what ``POST /feedback`` names), and an
  answer's quality (cited, routed, declined, empty) goes to the observer and to the knowledge gaps
  (``components.services.knowledge_gaps``; docs/contract.md, "Feedback and knowledge gaps");
* index changes (index, invalidate, flags, tenant delete) run under one write lock, so a re-index, an
  invalidation and a flag update of the same document never interleave, and leave index events;
* with an event outbox (``resources.outbox``), an indexed artifact and an artifact invalidation add their
  published events (``components.services.published_events``) once the change is in the store.

Access control is not decided here: the caller passes an already resolved ``Identity`` (and, for writes, the
key id it checked and its :class:`components.core.access_rule.WriteRule`, which the lifecycle and indexing
services apply under the write lock; ``writer=None`` is the operator: bootstrap, declared sources). What is
counted goes to a :class:`components.services.request_observer.RequestObserver`.

Usage:

```python
from components.services.request_service import RequestService

requests = RequestService(resources, data_dir=Path("data"), keys_file=Path("data/api_keys.json"))
result = requests.search({"query": "vpn", "k": 3}, identity)
answer = requests.answer({"query": "How many leave days?", "conversation_id": "conv-1"}, identity)
```
"""

import logging
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel

from components.core.access_rule import WriteRule
from components.core.requester import Identity, with_identity
from components.core.span_tags import tag_span
from components.services import document_lifecycle, published_events
from components.services.erasure_service import erase_tenant
from components.services.knowledge_gaps import KnowledgeGaps
from components.services.query_service import CONTEXT_TAG
from components.services.request_observer import RequestObserver
from components.stores.sentence_vector_cache import erase_sentence_vectors

logger = logging.getLogger(__name__)


class RequestResources(Protocol):
    """
    What the request service works on. The wiring loads each part on first use (``hayhooks_app.container``), so
    the service reads them as attributes at call time.
    """

    write_lock: threading.Lock

    @property
    def queries(self) -> Any: ...  # QueryService

    @property
    def indexing(self) -> Any: ...  # IndexingService

    @property
    def enrichment(self) -> Any: ...  # EnrichmentService

    @property
    def store(self) -> Any: ...  # the document store

    @property
    def records(self) -> Any: ...  # RecordStore

    @property
    def conversations(self) -> Any: ...  # ConversationService

    def tag_directory(self) -> Any | None: ...  # TagDirectory or None

    @property
    def outbox(self) -> Any | None: ...  # EventOutbox, or None when no events are published


def as_dict(value: Any) -> dict[str, Any]:
    """A service result as a plain JSON-ready dict (pydantic models are dumped)."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    return dict(value)


class RequestService:
    """
    :param resources: The services, stores and write lock of the process (see :class:`RequestResources`).
    :param data_dir: The data dir (sentence vectors, conversations and glossary files for erasure).
    :param keys_file: The API keys file (erased with a tenant), or ``None``.
    :param observer: Told what each request did (metrics); by default nobody is.
    :param gaps: Told what each answer says about the documents (kept questions, routed events); ``None``: nobody.
    """

    def __init__(
        self,
        resources: RequestResources,
        data_dir: Path,
        keys_file: Path | None = None,
        observer: RequestObserver | None = None,
        gaps: KnowledgeGaps | None = None,
    ) -> None:
        self.resources = resources
        self.data_dir = Path(data_dir)
        self.keys_file = keys_file
        self.observer = observer or RequestObserver()
        self.gaps = gaps

    # ------------------------------------------------------------------ reads

    def _log_query(self, endpoint: str, payload: dict, identity: Identity, latency_ms: float, **fields) -> None:
        try:
            self.resources.records.log_query(
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

    def _failed(
        self, error: BaseException, endpoint: str, logged: dict, identity: Identity, started: float, **fields: Any
    ) -> None:
        """Count a failed read and log it with its outcome (the caller re-raises)."""
        latency_ms = (time.perf_counter() - started) * 1000
        outcome = self.observer.outcome(error)
        self.observer.query_failed(endpoint, outcome)
        self._log_query(endpoint, logged, identity, latency_ms, outcome=outcome, **fields)

    def search(self, request: dict[str, Any], identity: Identity, endpoint: str = "search") -> dict[str, Any]:
        """Retrieval only; records latency, result count and tokens."""
        payload = with_identity(request, identity)
        mode = str(payload.get("search_mode") or "hybrid")
        query_id = new_query_id()
        started = time.perf_counter()
        try:
            result = as_dict(self.resources.queries.search(payload))
        except Exception as error:
            self._failed(error, endpoint, payload, identity, started, search_mode=mode, query_id=query_id)
            raise
        latency_ms = (time.perf_counter() - started) * 1000
        count, tokens = len(result.get("results", [])), int(result.get("tokens_used") or 0)
        result["query_id"] = query_id
        self.observer.query_answered(endpoint, mode, latency_ms / 1000, count, tokens)
        self.observer.search_quality(identity.tenant_id, count == 0)
        self._log_query(
            endpoint, payload, identity, latency_ms, search_mode=mode, result_count=count, tokens_used=tokens,
            query_id=query_id,
        )  # fmt: skip
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

    def answer(self, request: dict[str, Any], identity: Identity, endpoint: str = "rag") -> dict[str, Any]:
        """
        A grounded answer (``QueryService.rag``); records latency, chunks and tokens used, action and confidence,
        and, with a ``conversation_id``, answers from the conversation's history and records the turn.

        :raises InvalidRequestError: A ``conversation_id`` beside a ``chat_history``.
        :raises ConversationNotFoundError: A ``conversation_id`` that is not the requester's.
        """
        request = dict(request)
        conversation_id = request.pop("conversation_id", None)
        if conversation_id is not None:
            # The conversation's summary and recent turns are the history (docs/contract.md, "Conversations").
            request["chat_history"] = self.resources.conversations.history_for(conversation_id, identity, request)
        payload = with_identity(request, identity)
        query_id = new_query_id()
        started = time.perf_counter()
        try:
            result = as_dict(self.resources.queries.rag(payload))
        except Exception as error:
            self._failed(error, endpoint, payload, identity, started, model=payload.get("model"), query_id=query_id)
            raise
        latency_ms = (time.perf_counter() - started) * 1000
        count = int(result.get("context_chunks_used") or 0)
        tokens = int(result.get("context_tokens_used") or 0)
        action = result.get("action")
        confidence = (result.get("confidence") or {}).get("overall")
        route = result.get("route_to") or {}
        # The tag a question is filed under: the routed tag, else the router's primary context tag.
        context_tag = result.pop(CONTEXT_TAG, None)
        tag = route.get("tag") if action == "ROUTE" else context_tag
        result["query_id"] = query_id
        self.observer.query_answered(endpoint, "hybrid", latency_ms / 1000, count, tokens, action)
        self.observer.answer_quality(identity.tenant_id, tag, answer_result(action, count, route))
        self._log_query(
            endpoint, payload, identity, latency_ms, search_mode="hybrid", model=result.get("model_used"),
            result_count=count, tokens_used=tokens, action=action, confidence=confidence, query_id=query_id, tag=tag,
        )  # fmt: skip
        if self.gaps is not None:
            try:
                self.gaps.answered(
                    query_id=query_id, identity=identity, question=payload["query"], result=result, endpoint=endpoint
                )
            except Exception:  # the answer was given: keeping its question must not fail it
                logger.exception("Could not record the answer for the knowledge gaps.")
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
            self.resources.conversations.record_turn(conversation_id, identity, payload["query"], result["answer"])
            result["conversation_id"] = conversation_id
        return result

    def enrich(self, request: dict[str, Any], identity: Identity, endpoint: str = "enrich") -> dict[str, Any]:
        """Context for a message, no answer; records latency, chunks and tokens used."""
        payload = with_identity(request, identity)
        logged = {"query": payload.get("message", "")}  # the query log's text column holds the message
        query_id = new_query_id()
        started = time.perf_counter()
        try:
            result = as_dict(self.resources.enrichment.enrich(payload))
        except Exception as error:
            self._failed(error, endpoint, logged, identity, started, search_mode="hybrid", query_id=query_id)
            raise
        latency_ms = (time.perf_counter() - started) * 1000
        count, tokens = int(result.get("context_chunks_used") or 0), int(result.get("tokens_used") or 0)
        result["query_id"] = query_id
        self.observer.query_answered(endpoint, "hybrid", latency_ms / 1000, count, tokens)
        self.observer.search_quality(identity.tenant_id, count == 0)
        self._log_query(
            endpoint, logged, identity, latency_ms, search_mode="hybrid", result_count=count, tokens_used=tokens,
            query_id=query_id,
        )  # fmt: skip
        return result

    # ------------------------------------------------------------------ index changes

    def _record_indexing(
        self, result: dict[str, Any], tenant_ids: list[str], key_id: str | None, latency_s: float
    ) -> None:
        documents = result.get("documents", [])
        statuses = dict(Counter(str(document.get("status")) for document in documents))
        self.observer.documents_indexed(latency_s, int(result.get("chunks_written") or 0), statuses)
        # One event per tenant, with that tenant's documents (a batch may span tenants).
        fallback = tenant_ids[0] if len(set(tenant_ids)) == 1 else None
        by_tenant: dict[str | None, list[dict[str, Any]]] = {}
        for document in documents:
            by_tenant.setdefault(document.get("tenant_id") or fallback, []).append(document)
        for tenant_id, entries in sorted(by_tenant.items(), key=lambda item: str(item[0])):
            self.resources.records.log_event(
                "index",
                tenant_id=tenant_id,
                key_id=key_id,
                document_ids=[entry.get("document_id") for entry in entries],
                chunks=sum(int(entry.get("chunks") or 0) for entry in entries),
                details={"statuses": dict(Counter(str(entry.get("status")) for entry in entries))},
            )

    def index_documents(
        self,
        documents: list[dict[str, Any]],
        key_id: str | None = None,
        event_ids: list[str | None] | None = None,
        writer: WriteRule | None = None,
    ) -> dict[str, Any]:
        """
        Index JSON documents (``IndexingService.index_texts``). A document with ``meta.artifact_id`` that ends up in
        the store (indexed, or unchanged) has its ``embedding.completed`` event added to the outbox, and its result
        entry gains ``artifact_id`` and, when unchanged, the ``chunks`` it holds.

        :param event_ids: Per document, the id of the consumed event that asked for it (``None``: an HTTP request),
            from which the published event's id derives.
        :param writer: The caller's write rule (docs/contract.md, "Write rule"): every document written and every
            stored document it would replace must pass it, else nothing is written (``WriteForbiddenError``).
        """
        started = time.perf_counter()
        with self.resources.write_lock:
            result = as_dict(self.resources.indexing.index_texts(documents, writer=writer))
        self._record_indexing(result, [d["tenant_id"] for d in documents], key_id, time.perf_counter() - started)
        self._complete_artifacts(result, documents, event_ids)
        return result

    def _complete_artifacts(
        self, result: dict[str, Any], documents: list[dict[str, Any]], event_ids: list[str | None] | None
    ) -> None:
        """Mark the artifacts of an indexing result and add their ``embedding.completed`` events."""
        sent = {(d.get("tenant_id"), d.get("document_id")): (d, position) for position, d in enumerate(documents)}
        entries = result.get("documents", [])
        rows = []
        for position, entry in enumerate(entries):
            given, index = sent.get((entry.get("tenant_id"), entry.get("document_id")), (None, position))
            if given is None and len(entries) == len(documents):
                given = documents[position]  # a derived document_id: the batch keeps its order
            artifact_id = ((given or {}).get("meta") or {}).get("artifact_id")
            if not isinstance(artifact_id, str) or entry.get("status") not in {"indexed", "unchanged"}:
                continue
            tenant_id, document_id = entry.get("tenant_id") or given.get("tenant_id"), entry.get("document_id")
            changed = entry.get("status") == "indexed"
            if not changed:
                entry["chunks"] = document_lifecycle.document_chunks(self.resources.store, tenant_id, document_id)
            entry["artifact_id"] = artifact_id
            trigger = event_ids[index] if event_ids is not None and index < len(event_ids) else None
            rows.append(
                published_events.embedding_completed(
                    tenant_id, artifact_id, document_id, chunks=int(entry.get("chunks") or 0), changed=changed,
                    provenance_id=(given.get("meta") or {}).get("provenance_id"), trigger_event_id=trigger,
                )
            )  # fmt: skip
        self._publish(rows)

    def _publish(self, rows: list[dict[str, Any]]) -> None:
        """Add events to the outbox (after the change is in the store); nothing when events are not published."""
        outbox = getattr(self.resources, "outbox", None)
        if outbox is not None and rows:
            outbox.add(rows)

    def index_streams(
        self, streams: list[Any], key_id: str | None = None, writer: WriteRule | None = None
    ) -> dict[str, Any]:
        """
        Index files given as ``ByteStream`` objects (uploads, the sample corpus) whose meta carries
        ``tenant_id``, ``tags``, a ``document_name`` or ``file_path`` with the extension, and optionally
        ``document_id``, ``scope``, ``user_id``, ``project_id`` (``IndexingService.index_streams``).

        :param writer: The caller's write rule, as for :meth:`index_documents`.
        """
        started = time.perf_counter()
        with self.resources.write_lock:
            result = as_dict(self.resources.indexing.index_streams(streams, writer=writer))
        self._record_indexing(
            result, [stream.meta.get("tenant_id") for stream in streams], key_id, time.perf_counter() - started
        )
        return result

    def _locked_lifecycle(self, operation: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run a :mod:`components.services.document_lifecycle` operation on the store under the write lock."""
        with self.resources.write_lock:
            return operation(self.resources.store, *args, **kwargs)

    def invalidate(
        self,
        tenant_id: str,
        document_ids: list[str],
        reason: str | None = None,
        cascade_id: str | None = None,
        key_id: str | None = None,
        writer: WriteRule | None = None,
    ) -> dict[str, Any]:
        """
        Remove documents from the index; records the reason and cascade id.

        :param writer: The caller's write rule: an id it may not change is answered as one that does not exist.
        """
        outcome = self._locked_lifecycle(
            document_lifecycle.invalidate, tenant_id, document_ids, reason=reason, cascade_id=cascade_id,
            writer=writer,
        )  # fmt: skip
        result = _normalise_invalidation(outcome, document_ids, cascade_id)
        # Only the removed documents' vectors: a refused id's document keeps its cache (docs/contract.md, "Write rule").
        removed_ids = _removed_ids(outcome, document_ids)
        if removed_ids:
            erase_sentence_vectors(self.data_dir, tenant_id, removed_ids)
        self.observer.documents_invalidated(reason, result["invalidated"], result["chunks_removed"])
        self.resources.records.log_event(
            "invalidate", tenant_id=tenant_id, key_id=key_id, document_ids=document_ids, reason=reason,
            cascade_id=cascade_id, chunks=result["chunks_removed"], details={"invalidated": result["invalidated"]},
        )  # fmt: skip
        return result

    def invalidate_artifacts(
        self,
        tenant_id: str,
        artifact_ids: list[str],
        reason: str | None = None,
        cascade_id: str | None = None,
        key_id: str | None = None,
        event_id: str | None = None,
        publish_empty: bool = True,
        writer: WriteRule | None = None,
    ) -> dict[str, Any]:
        """
        Remove the documents a tenant indexed with these artifact ids, whatever their ``document_id``
        (``document_lifecycle.invalidate_artifacts``); records it and adds the ``embedding.invalidated`` event.

        :param event_id: The id of the consumed event that asked for it (``None``: an HTTP request).
        :param publish_empty: Publish the event even when no artifact was found (a cascade learns it is done).
        :param writer: The caller's write rule: an artifact whose documents it may not change reads as not found.
        """
        with self.resources.write_lock:
            outcome = document_lifecycle.invalidate_artifacts(
                self.resources.store, tenant_id, artifact_ids, reason=reason, cascade_id=cascade_id, writer=writer
            )
        if outcome["document_ids"]:
            erase_sentence_vectors(self.data_dir, tenant_id, outcome["document_ids"])
        self.observer.documents_invalidated(reason, outcome["invalidated"], outcome["chunks_removed"])
        self.resources.records.log_event(
            "invalidate", tenant_id=tenant_id, key_id=key_id, document_ids=outcome["document_ids"], reason=reason,
            cascade_id=cascade_id, chunks=outcome["chunks_removed"],
            details={"artifact_ids": outcome["artifact_ids"], "invalidated": outcome["invalidated"]},
        )  # fmt: skip
        if outcome["invalidated"] or publish_empty:
            self._publish([published_events.embedding_invalidated(tenant_id, outcome, event_id)])
        return outcome

    def delete_tenant(self, tenant_id: str, key_id: str | None = None) -> dict[str, Any]:
        """
        Remove everything of a tenant (docs/contract.md "Deletion"): chunks, query-log rows, index events (one
        tombstone stays), tag owners, API keys, conversations and glossary; the result says how many of each.
        """
        with self.resources.write_lock:
            removed = erase_tenant(
                self.resources.store, tenant_id, records=self.resources.records,
                directory=self.resources.tag_directory(), keys_file=self.keys_file, key_id=key_id,
                data_dir=self.data_dir,
            )  # fmt: skip
        self.observer.tenant_deleted(removed["chunks"])
        return {"tenant_id": tenant_id, "chunks_removed": removed["chunks"], "removed": removed}

    def set_flags(
        self,
        tenant_id: str,
        document_ids: list[str],
        tainted: bool | None = None,
        verified: bool | None = None,
        reason: str | None = None,
        key_id: str | None = None,
        writer: WriteRule | None = None,
    ) -> dict[str, Any]:
        """
        Mark documents tainted and/or verified without re-embedding.

        :param writer: The caller's write rule: a document it may not change is left alone and counted as absent.
        """
        outcome = self._locked_lifecycle(
            document_lifecycle.set_flags, tenant_id, document_ids, tainted=tainted, verified=verified, writer=writer
        )
        updated = _count(outcome, "chunks_updated", "updated")
        for flag, value in (("tainted", tainted), ("verified", verified)):
            if value is not None:
                self.observer.flags_changed(flag if value else f"un{flag}", len(document_ids))
        self.resources.records.log_event(
            "flags", tenant_id=tenant_id, key_id=key_id, document_ids=document_ids, reason=reason, chunks=updated,
            details={"tainted": tainted, "verified": verified},
        )  # fmt: skip
        result: dict[str, Any] = {"documents": len(document_ids), "chunks_updated": updated}
        if tainted is not None:
            result["tainted"] = tainted
        if verified is not None:
            result["verified"] = verified
        return result


def new_query_id() -> str:
    """A new ``query_id``: 128 random bits, so one asker can never guess another's."""
    return uuid.uuid4().hex


def answer_result(action: str | None, context_chunks: int, route: dict[str, Any]) -> str:
    """
    An answer's quality result (docs/contract.md, "Feedback and knowledge gaps"): ``cited``; ``empty`` (routed with
    no context chunk at all); ``declined`` (routed to the administrator: nobody owns the tag); ``routed`` (to the
    tag's owner).
    """
    if action != "ROUTE":
        return "cited"
    if not context_chunks:
        return "empty"
    return "declined" if route.get("fallback", True) else "routed"


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


def _removed_ids(outcome: Any, document_ids: list[str]) -> list[str]:
    """The ids an invalidation removed chunks of (every id when the operation does not say)."""
    if isinstance(outcome, BaseModel):
        outcome = outcome.model_dump()
    if isinstance(outcome, dict) and isinstance(outcome.get("documents"), list):
        return [entry["document_id"] for entry in outcome["documents"] if entry.get("chunks_removed")]
    return list(document_ids)


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

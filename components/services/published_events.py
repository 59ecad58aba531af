"""
The events the service publishes about its index (docs/events.md, "Published events"), built where the change
happens (:class:`components.services.request_service.RequestService`) and handed to the event outbox
(:class:`components.stores.event_outbox.EventOutbox`), which a relay publishes at least once.

* ``embedding.completed``: a document indexed with an ``artifact_id`` is in the store (also when its content was
  already indexed, unchanged); ``data``: ``artifact_id``, ``chunks``, ``status`` (``indexed``), ``changed``,
  ``tenant_id``, ``document_id``, ``provenance_id``.
* ``embedding.invalidated``: artifacts were invalidated (``DELETE /api/v1/embeddings/{id}``, batch invalidation,
  ``artifact.tainted``); ``data``: ``artifact_ids``, ``cascade_id``, ``tenant_id``, ``reason``, ``invalidated``,
  ``chunks_removed``, ``not_found``.

The body is the envelope the consumer reads (``event_id``, ``occurred_at``, ``type``, ``data``). ``event_id`` is
the subscriber's idempotency key: random for a change an HTTP request made, and derived from the consumed event's
id for a change an event made, so a redelivered event that is applied again publishes the same id.

Usage:

```python
from components.services.published_events import embedding_completed

row = embedding_completed("acme", "art-1", "art-1", chunks=3, changed=True)
row["routing_key"], row["event_id"], row["body"]
```
"""

import json
import uuid
from datetime import UTC, datetime
from typing import Any

EMBEDDING_COMPLETED = "embedding.completed"
EMBEDDING_INVALIDATED = "embedding.invalidated"
PUBLISHED_ROUTING_KEYS = (EMBEDDING_COMPLETED, EMBEDDING_INVALIDATED)
# Fixed namespace of the event ids derived from a consumed event's id (any constant UUID).
_EVENT_NAMESPACE = uuid.UUID("5b0057a7-0e7e-4c11-9a55-6f1e2b8d3c40")


def event_id(routing_key: str, trigger_event_id: str | None, key: str) -> str:
    """A new random id, or (for a change made by a consumed event) one derived from that event's id and ``key``."""
    if trigger_event_id is None:
        return uuid.uuid4().hex
    return uuid.uuid5(_EVENT_NAMESPACE, json.dumps([routing_key, trigger_event_id, key])).hex


def outbox_row(routing_key: str, tenant_id: str, data: dict[str, Any], event: str) -> dict[str, Any]:
    """The outbox row of one event: its id, routing key, tenant and JSON body (the consumer's envelope)."""
    body = {
        "event_id": event,
        "occurred_at": datetime.now(UTC).isoformat(),
        "type": routing_key,
        "data": data,
    }
    return {"event_id": event, "routing_key": routing_key, "tenant_id": tenant_id, "body": json.dumps(body)}


def embedding_completed(
    tenant_id: str,
    artifact_id: str,
    document_id: str,
    *,
    chunks: int,
    changed: bool,
    provenance_id: str | None = None,
    trigger_event_id: str | None = None,
) -> dict[str, Any]:
    """The ``embedding.completed`` outbox row for one indexed artifact."""
    data = {
        "artifact_id": artifact_id,
        "chunks": chunks,
        "status": "indexed",
        "changed": changed,
        "tenant_id": tenant_id,
        "document_id": document_id,
        "provenance_id": provenance_id,
    }
    key = json.dumps([tenant_id, document_id, artifact_id])
    return outbox_row(EMBEDDING_COMPLETED, tenant_id, data, event_id(EMBEDDING_COMPLETED, trigger_event_id, key))


def embedding_invalidated(
    tenant_id: str, result: dict[str, Any], trigger_event_id: str | None = None
) -> dict[str, Any]:
    """The ``embedding.invalidated`` outbox row for an artifact invalidation (``invalidate_artifacts``'s result)."""
    data = {
        "artifact_ids": list(result["artifact_ids"]),
        "cascade_id": result.get("cascade_id"),
        "tenant_id": tenant_id,
        "reason": result.get("reason"),
        "invalidated": int(result.get("invalidated") or 0),
        "chunks_removed": int(result.get("chunks_removed") or 0),
        "not_found": list(result.get("not_found") or []),
    }
    key = json.dumps([tenant_id, data["artifact_ids"]])
    return outbox_row(EMBEDDING_INVALIDATED, tenant_id, data, event_id(EMBEDDING_INVALIDATED, trigger_event_id, key))

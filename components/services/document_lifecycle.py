"""
Lifecycle operations on indexed documents: invalidate, taint/verify, delete a tenant, statistics.

Plain functions over any Haystack document store with ``delete_by_filter``,
``update_by_filter`` and ``count_documents_by_filter`` (the Qdrant Edge store
has all three), used by the CLI and the REST API. Every operation is scoped to
one tenant: a ``document_id`` of another tenant is never touched. Given a ``writer``
(:class:`components.core.access_rule.WriteRule`, docs/contract.md "Write rule"), :func:`invalidate` and
:func:`set_flags` change only the documents it may write (:func:`writable_ids`) and report every other id
exactly like an id that does not exist.

* :func:`invalidate` removes all chunks of one or many documents in one store
  update, so a search right after returns zero results from them;
* :func:`invalidate_artifacts` does the same for the documents indexed with given ``artifact_id`` values,
  whatever their ``document_id`` (:func:`artifact_documents` finds them);
* :func:`set_flags` sets ``tainted``/``verified`` on every chunk of the documents
  without re-embedding (retrieval's ``exclude_tainted``/``verified_only`` read them);
* :func:`delete_tenant` removes everything of a tenant;
* :func:`delete_user` removes a user's private documents (``user`` and ``project`` scope owned by the user);
  both are erasures (:func:`erase_by_filter`): the store's files no longer hold the chunks when they return;
* :func:`stats` counts chunks, documents and flags, per tenant.

Each returns what the API responds and what the index event log records
(``reason``, ``cascade_id``, the documents and their chunk counts, a timestamp).

Usage:

```python
from components.services.document_lifecycle import invalidate, set_flags

invalidate(store, "acme", ["doc-1", "doc-2"], reason="upstream_taint", cascade_id="cascade-123")
# {'invalidated': 2, 'chunks_removed': 9, 'cascade_id': 'cascade-123', ...}
set_flags(store, "acme", ["doc-3"], tainted=True)  # 4 (chunks updated)
```
"""

import inspect
from collections import Counter
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from haystack.document_stores.types import DocumentStore

from components.caching.document_change_detector import count_by_filter
from components.core.access_rule import WriteRule
from components.core.document_identity import (
    document_id_problem,
    tenant_document_filter,
    tenant_filter,
)
from components.core.errors import LifecycleError


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _check_tenant(tenant_id: Any) -> str:
    if not isinstance(tenant_id, str) or not tenant_id.strip():
        raise LifecycleError("tenant_id is required")
    return tenant_id


def _check_document_ids(document_ids: Iterable[str] | str) -> list[str]:
    if isinstance(document_ids, str):
        document_ids = [document_ids]
    ids = list(dict.fromkeys(document_ids or []))
    if not ids:
        raise LifecycleError("document_ids must name at least one document")
    problems = [problem for problem in (document_id_problem(one) for one in ids) if problem]
    if problems:
        raise LifecycleError("; ".join(problems))
    return ids


def writable_ids(store: DocumentStore, tenant_id: str, document_ids: list[str], writer: WriteRule | None) -> list[str]:
    """
    The ids among ``document_ids`` of ``tenant_id`` that ``writer`` may change (docs/contract.md, "Write rule"):
    every stored chunk of such a document passes :meth:`WriteRule.violation`. Ids without chunks stay (there is
    nothing to refuse); ``writer=None`` (the operator) keeps every id. Call it under the store's write lock, so
    nothing changes between the check and the write.
    """
    if writer is None or writer.unlimited or not document_ids:
        return list(document_ids)
    refused = {
        chunk.meta.get("document_id")
        for chunk in store.filter_documents(tenant_document_filter(tenant_id, document_ids))
        if writer.violation(chunk.meta) is not None
    }
    return [one for one in document_ids if one not in refused]


def invalidate(
    store: DocumentStore,
    tenant_id: str,
    document_ids: Iterable[str] | str,
    reason: str | None = None,
    cascade_id: str | None = None,
    writer: WriteRule | None = None,
) -> dict[str, Any]:
    """
    Remove every chunk of the given documents of one tenant, in one store update.

    :param store: The document store.
    :param tenant_id: The tenant owning the documents.
    :param document_ids: One or many ``document_id`` values.
    :param reason: Why (e.g. ``upstream_taint``), recorded by the event log.
    :param cascade_id: The cascade this invalidation belongs to, echoed back.
    :param writer: The caller's write rule; ids it may not change count as not found. ``None``: the operator.
    :returns: ``{"invalidated": documents that had chunks, "chunks_removed", "cascade_id", "reason", "tenant_id",
        "document_ids", "documents": [{"document_id", "chunks_removed"}], "not_found": [...], "at": ISO time}``.
    :raises LifecycleError: If ``tenant_id`` is missing or a ``document_id`` is malformed.
    """
    tenant_id = _check_tenant(tenant_id)
    ids = _check_document_ids(document_ids)
    allowed = set(writable_ids(store, tenant_id, ids, writer))
    per_document = [
        {
            "document_id": one,
            "chunks_removed": count_by_filter(store, tenant_document_filter(tenant_id, one)) if one in allowed else 0,
        }
        for one in ids
    ]
    targets = [one for one in ids if one in allowed]
    # No call at all without a target: an empty id list must never reach the store as a filter.
    removed = store.delete_by_filter(tenant_document_filter(tenant_id, targets)) if targets else 0
    return {
        "invalidated": sum(1 for entry in per_document if entry["chunks_removed"]),
        "chunks_removed": removed,
        "cascade_id": cascade_id,
        "reason": reason,
        "tenant_id": tenant_id,
        "document_ids": ids,
        "documents": per_document,
        "not_found": [entry["document_id"] for entry in per_document if not entry["chunks_removed"]],
        "at": _now(),
    }


def document_chunks(store: DocumentStore, tenant_id: str, document_id: str) -> int:
    """The number of chunks one document of one tenant has in the store."""
    return count_by_filter(store, tenant_document_filter(_check_tenant(tenant_id), document_id))


MAX_ARTIFACT_ID_CHARS = 256


def _check_artifact_ids(artifact_ids: Iterable[str] | str) -> list[str]:
    if isinstance(artifact_ids, str):
        artifact_ids = [artifact_ids]
    ids = list(dict.fromkeys(artifact_ids or []))
    if not ids:
        raise LifecycleError("artifact_ids must name at least one artifact")
    for one in ids:
        if not isinstance(one, str) or not one.strip() or len(one) > MAX_ARTIFACT_ID_CHARS:
            raise LifecycleError(f"artifact id {one!r} must be 1..{MAX_ARTIFACT_ID_CHARS} characters, not blank")
        if any(ord(char) < 32 for char in one):
            raise LifecycleError(f"artifact id {one!r} contains control characters")
    return ids


def artifact_filter(tenant_id: str, artifact_ids: list[str]) -> dict[str, Any]:
    """Haystack filter for the chunks of one tenant indexed with any of ``artifact_ids``."""
    return {
        "operator": "AND",
        "conditions": [
            {"field": "meta.tenant_id", "operator": "==", "value": tenant_id},
            {"field": "meta.artifact_id", "operator": "in", "value": list(artifact_ids)},
        ],
    }


def artifact_documents(store: DocumentStore, tenant_id: str, artifact_ids: Iterable[str] | str) -> dict[str, list[str]]:
    """
    The documents of one tenant indexed with each artifact id (its chunks' ``meta.artifact_id``), whatever their
    ``document_id``.

    :returns: ``{artifact_id: [document_id, ...]}`` for the artifacts found (ids in first-seen order).
    :raises LifecycleError: If ``tenant_id`` is missing or an artifact id is blank or malformed.
    """
    tenant_id = _check_tenant(tenant_id)
    ids = _check_artifact_ids(artifact_ids)
    found: dict[str, dict[str, None]] = {}
    for chunk in store.filter_documents(artifact_filter(tenant_id, ids)):
        artifact, document = chunk.meta.get("artifact_id"), chunk.meta.get("document_id")
        if isinstance(artifact, str) and isinstance(document, str):
            found.setdefault(artifact, {})[document] = None
    return {artifact: list(found[artifact]) for artifact in ids if artifact in found}


def invalidate_artifacts(
    store: DocumentStore,
    tenant_id: str,
    artifact_ids: Iterable[str] | str,
    reason: str | None = None,
    cascade_id: str | None = None,
    writer: WriteRule | None = None,
) -> dict[str, Any]:
    """
    Remove every chunk of the documents one tenant indexed with the given artifact ids, in one store update.

    :param writer: The caller's write rule; a document it may not change stays, and an artifact left with none
        reads as not found (docs/contract.md, "Write rule"). ``None``: the operator.

    :returns: ``{"invalidated": artifacts that had chunks, "chunks_removed", "cascade_id", "reason", "tenant_id",
        "artifact_ids", "document_ids": the documents removed, "artifacts": [{"artifact_id", "document_ids",
        "chunks_removed"}], "not_found": [...], "at": ISO time}``.
    :raises LifecycleError: If ``tenant_id`` is missing or an artifact id is malformed.
    """
    tenant_id = _check_tenant(tenant_id)
    ids = _check_artifact_ids(artifact_ids)
    documents = artifact_documents(store, tenant_id, ids)
    allowed = set(writable_ids(store, tenant_id, [one for found in documents.values() for one in found], writer))
    documents = {artifact: [one for one in found if one in allowed] for artifact, found in documents.items()}
    chunks = {
        document: count_by_filter(store, tenant_document_filter(tenant_id, document))
        for document in dict.fromkeys(one for found in documents.values() for one in found)
    }
    removed = store.delete_by_filter(tenant_document_filter(tenant_id, list(chunks))) if chunks else 0
    per_artifact = [
        {
            "artifact_id": artifact,
            "document_ids": documents.get(artifact, []),
            "chunks_removed": sum(chunks[document] for document in documents.get(artifact, [])),
        }
        for artifact in ids
    ]
    return {
        "invalidated": sum(1 for entry in per_artifact if entry["chunks_removed"]),
        "chunks_removed": removed,
        "cascade_id": cascade_id,
        "reason": reason,
        "tenant_id": tenant_id,
        "artifact_ids": ids,
        "document_ids": list(chunks),
        "artifacts": per_artifact,
        "not_found": [entry["artifact_id"] for entry in per_artifact if not entry["chunks_removed"]],
        "at": _now(),
    }


def set_flags(
    store: DocumentStore,
    tenant_id: str,
    document_ids: Iterable[str] | str,
    tainted: bool | None = None,
    verified: bool | None = None,
    writer: WriteRule | None = None,
) -> int:
    """
    Set ``tainted`` and/or ``verified`` on every chunk of the given documents, without re-embedding.

    :param writer: The caller's write rule; documents it may not change are left as they are and counted like
        documents that do not exist. ``None``: the operator.
    :returns: The number of chunks updated (0 when no such document exists for the tenant or the caller).
    :raises LifecycleError: If no flag is given, a flag is not a bool, or the ids/tenant are invalid.
    """
    tenant_id = _check_tenant(tenant_id)
    ids = _check_document_ids(document_ids)
    flags = {name: value for name, value in (("tainted", tainted), ("verified", verified)) if value is not None}
    if not flags:
        raise LifecycleError("set_flags needs tainted and/or verified")
    if not all(isinstance(value, bool) for value in flags.values()):
        raise LifecycleError("tainted and verified must be true or false")
    targets = writable_ids(store, tenant_id, ids, writer)
    return store.update_by_filter(tenant_document_filter(tenant_id, targets), flags) if targets else 0


def delete_tenant(store: DocumentStore, tenant_id: str) -> int:
    """
    Remove every chunk of a tenant.

    :returns: The number of chunks removed.
    :raises LifecycleError: If ``tenant_id`` is missing.
    """
    return erase_by_filter(store, tenant_filter(_check_tenant(tenant_id)))


def erase_by_filter(store: DocumentStore, filters: dict[str, Any]) -> int:
    """
    Delete the chunks matching ``filters`` as an erasure (docs/contract.md "Deletion"): on a store that can purge
    (the Qdrant Edge store) no file of it holds them when this returns. A Qdrant server reclaims the space of
    deleted points with its own optimiser.

    :returns: The number of chunks removed.
    """
    if "purge" in inspect.signature(store.delete_by_filter).parameters:
        return store.delete_by_filter(filters, purge=True)
    return store.delete_by_filter(filters)


def user_documents_filter(user_id: str, tenant_id: str | None = None) -> dict[str, Any]:
    """
    The chunks private to ``user_id``: ``user`` and ``project`` scope owned by the user (in ``tenant_id`` if given).
    """
    conditions: list[dict[str, Any]] = [
        {"field": "meta.user_id", "operator": "==", "value": user_id},
        {"field": "meta.scope", "operator": "in", "value": ["user", "project"]},
    ]
    if tenant_id is not None:
        conditions.insert(0, tenant_filter(tenant_id))
    return {"operator": "AND", "conditions": conditions}


def delete_user(store: DocumentStore, user_id: str, tenant_id: str | None = None) -> int:
    """
    Remove a user's private documents (docs/contract.md "Deletion"): every ``user``- and ``project``-scoped
    chunk whose ``user_id`` is the user, in one tenant or (``tenant_id=None``) in all. Tenant-wide documents
    the user happened to write stay: they belong to the tenant.

    :returns: The number of chunks removed.
    :raises LifecycleError: If ``user_id`` (or a given ``tenant_id``) is blank.
    """
    if not isinstance(user_id, str) or not user_id.strip():
        raise LifecycleError("user_id is required")
    if tenant_id is not None:
        _check_tenant(tenant_id)
    return erase_by_filter(store, user_documents_filter(user_id, tenant_id))


def stats(store: DocumentStore, tenant_id: str | None = None) -> dict[str, Any]:
    """
    Count what the index holds, for one tenant or all.

    Reads every matching chunk once, so it is meant for operators (CLI, health pages), not per request.

    :returns: ``{"tenant_id", "chunks", "documents", "tokens", "tainted_chunks", "verified_chunks",
        "source_types": {type: documents}, "tenants": {tenant: {"chunks", "documents"}}}``.
    """
    filters = tenant_filter(_check_tenant(tenant_id)) if tenant_id is not None else None
    documents_by_tenant: dict[str, set[str]] = {}
    chunks_by_tenant: Counter = Counter()
    source_types: dict[str, set[tuple[str, str]]] = {}
    tokens = tainted = verified = 0
    for chunk in store.filter_documents(filters):
        meta = chunk.meta
        tenant, document = str(meta.get("tenant_id")), str(meta.get("document_id"))
        chunks_by_tenant[tenant] += 1
        documents_by_tenant.setdefault(tenant, set()).add(document)
        source_types.setdefault(str(meta.get("source_type")), set()).add((tenant, document))
        tokens += meta.get("token_count") or 0
        tainted += bool(meta.get("tainted"))
        verified += bool(meta.get("verified"))
    return {
        "tenant_id": tenant_id,
        "chunks": sum(chunks_by_tenant.values()),
        "documents": sum(len(documents) for documents in documents_by_tenant.values()),
        "tokens": tokens,
        "tainted_chunks": tainted,
        "verified_chunks": verified,
        "source_types": {kind: len(documents) for kind, documents in sorted(source_types.items())},
        "tenants": {
            tenant: {"chunks": chunks_by_tenant[tenant], "documents": len(documents_by_tenant[tenant])}
            for tenant in sorted(chunks_by_tenant)
        },
    }

"""
Copy the embedded Qdrant Edge store into the Qdrant server profile's collection, without re-embedding
(docs/operations.md, "Moving to a Qdrant server").

Every point keeps its dense vector (scaled back to the length it was written with), its BM25 sparse vector (the
same ``qdrant_edge.Bm25`` model the profile's ``Bm25DocumentEmbedder`` uses, weighted by the collection's IDF
modifier) and its document. Points are converted with qdrant-haystack's own converter, so the payload layout
(``id``, ``content``, ``meta``, ...) and the point ids are exactly those the profile's writer would produce for
the same chunk (``profile_point``). Batches are upserted by those deterministic ids: running the migration again
skips the points already there and never duplicates one. At the end the chunk count of every tenant is compared.

Usage:

```python
from components.services.store_migration import migrate_store, target_store

target = target_store(profile_store_definition, "http://qdrant:6333")   # or a local folder for tests
report = migrate_store(edge_store, target, batch_size=256)
```
"""

import time
import uuid
from collections.abc import Callable
from typing import Any

from haystack import Document

from components.core.errors import SourceboundError
from components.document_stores.qdrant_edge.converters import DENSE_VECTOR_NAME, SPARSE_VECTOR_NAME, STORE_PAYLOAD_KEY


class MigrationError(SourceboundError):
    """The migration cannot run or its result does not match the source; the message says what differs."""


def target_store(definition: dict[str, Any], location: str, collection: str | None = None) -> Any:
    """
    The profile's ``QdrantDocumentStore`` (settings from its YAML definition) at ``location``.

    :param definition: ``{"type", "init_parameters"}`` of the profile's store (its indexing pipeline's writer).
    :param location: A Qdrant URL (``http://host:6333``) or a folder for qdrant-client's local mode.
    :param collection: The collection; default the definition's ``index``.
    """
    from haystack.utils.type_serialization import thread_safe_import

    parameters = dict(definition.get("init_parameters") or {})
    for key in ("url", "path", "location", "host"):
        parameters.pop(key, None)
    if location.startswith(("http://", "https://")):
        parameters["url"] = location
    elif location == ":memory:":
        parameters["location"] = location
    else:
        parameters["path"] = location
    if collection:
        parameters["index"] = collection
    parameters["recreate_index"] = False  # never drop what a previous run copied
    module_name, _, class_name = definition["type"].rpartition(".")
    return getattr(thread_safe_import(module_name), class_name).from_dict(
        {"type": definition["type"], "init_parameters": parameters}
    )


def profile_point(document: Document) -> Any:
    """
    The point the profile's writer stores for ``document`` (embedding and ``sparse_embedding`` set): the
    per-tenant point id of ``TenantQdrantDocumentStore``, the document's ``to_dict`` without its vectors as
    payload, the vectors under qdrant-haystack's converter's names.
    """
    return _point(document.id, document.to_dict(flatten=False), document.embedding, document.sparse_embedding)


def _point(haystack_id: str, document_dict: dict[str, Any], dense: Any, sparse: Any) -> Any:
    from haystack_integrations.document_stores.qdrant.converters import DENSE_VECTORS_NAME, SPARSE_VECTORS_NAME
    from qdrant_client.http import models

    from components.document_stores.qdrant_server.document_store import tenant_point_id

    payload = {key: value for key, value in document_dict.items() if key not in ("embedding", "sparse_embedding")}
    vectors: dict[str, Any] = {}
    if dense is not None:
        vectors[DENSE_VECTORS_NAME] = list(dense)
    if sparse is not None:
        vectors[SPARSE_VECTORS_NAME] = models.SparseVector(indices=list(sparse.indices), values=list(sparse.values))
    # The profile's point id: per tenant, as its writer derives it (docs/contract.md, "Document ids").
    point_id = tenant_point_id(haystack_id, (document_dict.get("meta") or {}).get("tenant_id"))
    return models.PointStruct(id=point_id, vector=vectors, payload=payload)


def _record_point(record: Any) -> Any:
    """``profile_point`` of a stored record, without building a ``Document`` (whose ``to_dict`` copies deeply)."""
    payload = record.payload or {}
    vectors = record.vector if isinstance(record.vector, dict) else {}
    dense = vectors.get(DENSE_VECTOR_NAME)
    norm = (payload.get(STORE_PAYLOAD_KEY) or {}).get("embedding_norm")
    if dense is not None and norm and abs(norm - 1.0) > 1e-6:
        dense = [value * norm for value in dense]  # the engine keeps cosine vectors normalised
    document_dict = {
        "id": payload.get("id", ""),
        "content": payload.get("content"),
        "blob": None,
        "meta": payload.get("meta") or {},
        "score": None,
    }
    return _point(document_dict["id"], document_dict, dense, vectors.get(SPARSE_VECTOR_NAME))


def _tenant_filter(tenant: str) -> Any:
    from qdrant_client.http import models

    if tenant == "":
        return models.Filter(must=[models.IsEmptyCondition(is_empty=models.PayloadField(key="meta.tenant_id"))])
    return models.Filter(must=[models.FieldCondition(key="meta.tenant_id", match=models.MatchValue(value=tenant))])


def migrate_store(
    source: Any,
    target: Any,
    *,
    batch_size: int = 256,
    progress: Callable[[int, int], None] | None = None,
    overwrite: bool = False,
) -> dict[str, Any]:
    """
    Copy every point of ``source`` (a ``QdrantEdgeDocumentStore``) into ``target`` (the profile's store).

    :param source: The embedded store; hold its writers back (``writes_paused``) for an exact copy of a live one.
    :param target: A ``QdrantDocumentStore`` from ``target_store``.
    :param batch_size: Points per upsert.
    :param progress: Called with ``(points done, total)`` after each batch.
    :param overwrite: Upsert every point, also those already in the collection (a chunk re-indexed since an
        earlier run then gets its new version); by default those are skipped, so a re-run resumes quickly.
    :returns: ``{"points", "copied", "skipped", "seconds", "chunks_per_s", "tenants": {t: {"chunks", ...}}}``.
    :raises MigrationError: If the target's per-tenant chunk counts differ from the source's at the end.
    """
    started = time.perf_counter()
    expected = source.tenant_counts()
    total = sum(row["chunks"] for row in expected.values())
    target._initialize_client()  # creates the collection (named vectors, IDF, payload indexes) if missing
    client, collection = target._client, target.index
    done = copied = 0
    for records, _offset in source.scroll_points(batch_size=batch_size):
        points = [_record_point(record) for record in records]
        present = set()
        if not overwrite:
            present = {_hex(point.id) for point in client.retrieve(collection, [point.id for point in points])}
        missing = [point for point in points if _hex(point.id) not in present]
        if missing:
            client.upsert(collection_name=collection, points=missing, wait=True)
        copied += len(missing)
        done += len(points)
        if progress is not None:
            progress(done, total)
    found = {
        tenant: client.count(collection, count_filter=_tenant_filter(tenant), exact=True).count for tenant in expected
    }
    differences = {
        tenant: {"source": row["chunks"], "target": found[tenant]}
        for tenant, row in expected.items()
        if found[tenant] != row["chunks"]
    }
    if differences:
        raise MigrationError(
            f"After the migration the collection {collection!r} holds other chunk counts than the embedded store: "
            f"{differences}. Point ids collide when two tenants use the same document id and the profile's ids "
            "are not per tenant; otherwise run the migration again (it resumes)."
        )
    seconds = time.perf_counter() - started
    return {
        "collection": collection,
        "points": done,
        "copied": copied,
        "skipped": done - copied,
        "seconds": round(seconds, 3),
        "chunks_per_s": round(copied / seconds, 1) if seconds else None,
        "tenants": expected,
    }


def _hex(point_id: Any) -> str:
    return uuid.UUID(str(point_id)).hex

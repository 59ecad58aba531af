"""
qdrant-haystack's ``QdrantDocumentStore`` as the Qdrant-server profile needs it.

Three differences from the upstream store, nothing else:

* **Per-tenant point ids** (docs/contract.md, "Document ids"): a document's point id is
  ``uuid5(NS, json([tenant_id, id]))`` when it has a string ``meta.tenant_id`` (upstream:
  ``uuid5(NS, id)``), so the same ``document_id`` in two tenants is two documents, as in the Edge
  store, and the store declares ``ids_per_tenant``. The Haystack id stays in the payload (``id``);
  ``get_documents_by_id`` and ``delete_documents`` select by it (every tenant's copy), duplicate
  policies look at the writer's tenant only. ``replace_documents`` writes a document's new chunks
  and then deletes its old ones that the new version does not overwrite: a reader never sees the
  document missing and no stale tail is left. Every sourcebound operation selects by filter, so a
  collection written with upstream ids is moved over by re-indexing (the filter-based replace
  removes the old points).
* **Hybrid candidates as on the Edge store**: each stage of the RRF fusion takes ``max(4 * top_k, 40)``
  candidates (upstream: Qdrant's default of 10), so both engines fuse the same lists.
* **A local test engine** (``local_location``, from ``SOURCEBOUND_QDRANT_LOCATION``): ``":memory:"``
  or a folder runs qdrant-client's local mode in the process instead of connecting to ``url``. It
  is a pure-Python brute-force engine for tests and trials, never for production. qdrant-client
  lets one client open a folder, and an in-memory client holds its own data, so every store of the
  process with the same ``local_location`` shares one client (the pipelines of a server see one
  index); its calls are serialised by a lock because local mode is not thread-safe.

Usage:

```python
from components.document_stores.qdrant_server import TenantQdrantDocumentStore

store = TenantQdrantDocumentStore(local_location=":memory:", index="sourcebound", embedding_dim=384,
                                  use_sparse_embeddings=True, sparse_idf=True)
store.write_documents(chunks)
```
"""

import inspect
import json
import logging
import threading
import uuid
from pathlib import Path
from typing import Any

from haystack import Document, default_to_dict
from haystack.dataclasses import SparseEmbedding
from haystack.document_stores.errors import DuplicateDocumentError
from haystack.document_stores.types import DuplicatePolicy
from haystack_integrations.document_stores.qdrant import QdrantDocumentStore
from haystack_integrations.document_stores.qdrant.converters import (
    DENSE_VECTORS_NAME,
    SPARSE_VECTORS_NAME,
    UUID_NAMESPACE,
    convert_haystack_documents_to_qdrant_points,
    convert_id,
)
from haystack_integrations.document_stores.qdrant.filters import convert_filters_to_qdrant
from qdrant_client import QdrantClient
from qdrant_client.http import models as rest

from components.core.errors import SourceboundError

logger = logging.getLogger(__name__)

MEMORY = ":memory:"


class QdrantLocalLocationError(SourceboundError, ValueError):
    """The local test engine's location is not ``:memory:`` or a usable folder, or is used asynchronously."""


def tenant_point_id(document_id: str, tenant_id: Any = None) -> str:
    """
    The point id of a Haystack document id within its tenant (docs/contract.md, "Document ids").

    :param document_id: The Haystack id (``document_id:chunk_index`` in sourcebound).
    :param tenant_id: The document's ``meta.tenant_id``; a non-string or empty value keeps qdrant-haystack's id.
    :returns: The point id (hex UUID).
    """
    if isinstance(tenant_id, str) and tenant_id:
        # JSON keeps tenant and id apart whatever characters they contain.
        return uuid.uuid5(UUID_NAMESPACE, json.dumps([tenant_id, document_id], ensure_ascii=False)).hex
    return convert_id(document_id)


def _point_id(document: Document) -> str:
    return tenant_point_id(document.id, (document.meta or {}).get("tenant_id"))


class _LockedClient:
    """A qdrant-client whose method calls hold one re-entrant lock (local mode is not thread-safe)."""

    def __init__(self, client: QdrantClient) -> None:
        self._client = client
        self.lock = threading.RLock()

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._client, name)
        if not callable(attribute):
            return attribute

        def locked(*args: Any, **kwargs: Any) -> Any:
            with self.lock:
                return attribute(*args, **kwargs)

        return locked


class _LocalClients:
    """The process's local-mode clients, one per location, shared by every store naming it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._clients: dict[str, tuple[_LockedClient, int]] = {}

    @staticmethod
    def key(location: str) -> str:
        return MEMORY if location == MEMORY else str(Path(location).expanduser().resolve())

    def acquire(self, location: str) -> _LockedClient:
        key = self.key(location)
        with self._lock:
            entry = self._clients.get(key)
            if entry is None:
                if key == MEMORY:
                    client = QdrantClient(location=MEMORY)
                else:
                    Path(key).mkdir(parents=True, exist_ok=True)
                    # The lock below serialises calls; sqlite may then be used from the server's worker threads.
                    client = QdrantClient(path=key, force_disable_check_same_thread=True)
                logger.warning(
                    "Qdrant local mode at %s: qdrant-client's in-process test engine (brute force, one process). "
                    "Use a Qdrant server (QDRANT_URL) in production.",
                    key,
                )
                entry = (_LockedClient(client), 0)
            self._clients[key] = (entry[0], entry[1] + 1)
            return entry[0]

    def release(self, location: str) -> None:
        key = self.key(location)
        with self._lock:
            client, users = self._clients.get(key, (None, 0))
            if client is None:
                return
            if users > 1:
                self._clients[key] = (client, users - 1)
                return
            del self._clients[key]
        client.close()


_LOCAL_CLIENTS = _LocalClients()


class TenantQdrantDocumentStore(QdrantDocumentStore):
    """qdrant-haystack's store with per-tenant point ids and an optional shared local test engine."""

    ids_per_tenant = True

    def __init__(self, local_location: str | None = None, **kwargs: Any) -> None:
        """
        Create the store.

        :param local_location: ``":memory:"`` or a folder: qdrant-client's local mode, shared by every store of the
            process with this location (a TEST engine). Empty or ``None``: connect as configured (``url``, ...).
        :param kwargs: ``QdrantDocumentStore``'s init parameters (``url``, ``index``, ``embedding_dim``, ...).
        :raises QdrantLocalLocationError: If ``local_location`` is not ``:memory:`` and names an existing file.
        """
        location = (local_location or "").strip() or None
        if location and location != MEMORY and Path(location).expanduser().is_file():
            raise QdrantLocalLocationError(
                f"SOURCEBOUND_QDRANT_LOCATION {location!r} is a file; give ':memory:' or a folder for the local "
                "test engine, or leave it unset to use the Qdrant server at QDRANT_URL."
            )
        super().__init__(**kwargs)
        self.local_location = location
        self._holds_local_client = False

    def to_dict(self) -> dict[str, Any]:
        """Serialise the store (qdrant-haystack's parameters plus ``local_location``)."""
        names = [name for name in inspect.signature(QdrantDocumentStore.__init__).parameters if name != "self"]
        parameters = {name: getattr(self, name) for name in names}
        parameters["api_key"] = self.api_key.to_dict() if self.api_key else None
        return default_to_dict(self, local_location=self.local_location, **parameters)

    # ------------------------------------------------------------------ clients

    def _initialize_client(self) -> None:
        if self._client is not None:
            return
        if not self.local_location:
            super()._initialize_client()
            return
        client = _LOCAL_CLIENTS.acquire(self.local_location)
        with client.lock:  # one store creates the collection; the others find it
            self._client = client
            self._holds_local_client = True
            self._set_up_collection(
                self.index,
                self.embedding_dim,
                self.recreate_index,
                self.similarity,
                self.use_sparse_embeddings,
                self.sparse_idf,
                self.on_disk,
                None,  # local mode has no payload indexes (qdrant-client warns and ignores them)
            )

    async def _initialize_async_client(self) -> None:
        if self.local_location:
            raise QdrantLocalLocationError(
                "The Qdrant local test engine serves the synchronous API only; run the pipeline with run(), or use "
                "a Qdrant server (QDRANT_URL)."
            )
        await super()._initialize_async_client()

    def close(self) -> None:
        """Release the client (the shared local client closes when its last store releases it)."""
        if self._holds_local_client:
            self._client, self._holds_local_client = None, False
            _LOCAL_CLIENTS.release(self.local_location)
            return
        super().close()

    # ------------------------------------------------------------------ per-tenant ids

    def _upsert(self, documents: list[Document]) -> None:
        for start in range(0, len(documents), self.write_batch_size):
            batch = documents[start : start + self.write_batch_size]
            sparse = self.use_sparse_embeddings
            points = convert_haystack_documents_to_qdrant_points(batch, use_sparse_embeddings=sparse)
            for point, document in zip(points, batch, strict=True):
                point.id = _point_id(document)
            self._client.upsert(collection_name=self.index, points=points, wait=self.wait_result_from_api)

    def _existing_point_ids(self, point_ids: list[str]) -> set[str]:
        records = self._client.retrieve(
            collection_name=self.index, ids=point_ids, with_payload=False, with_vectors=False
        )
        return {uuid.UUID(str(record.id)).hex for record in records}

    def write_documents(self, documents: list[Document], policy: DuplicatePolicy = DuplicatePolicy.FAIL) -> int:
        """
        Write documents under per-tenant point ids.

        :param documents: The documents.
        :param policy: ``FAIL`` and ``SKIP`` look for the same id in the document's own tenant only; ``NONE`` and
            ``OVERWRITE`` overwrite it.
        :returns: The number of documents written.
        :raises DuplicateDocumentError: Under ``FAIL``, if one of the ids exists in the document's tenant.
        """
        self._initialize_client()
        for document in documents:
            if not isinstance(document, Document):
                raise ValueError(f"write_documents expects a list of Documents, got an element of {type(document)}.")
        if not documents:
            return 0
        by_point = {_point_id(document): document for document in documents}  # the last one of a batch wins
        if policy in (DuplicatePolicy.SKIP, DuplicatePolicy.FAIL):
            existing = self._existing_point_ids(list(by_point))
            if existing and policy == DuplicatePolicy.FAIL:
                ids = ", ".join(sorted(by_point[point].id for point in existing))
                raise DuplicateDocumentError(f"Documents with ids {ids} already exist in index {self.index!r}.")
            by_point = {point: document for point, document in by_point.items() if point not in existing}
        self._upsert(list(by_point.values()))
        return len(by_point)

    def replace_documents(self, delete_filters: dict[str, Any], documents: list[Document]) -> tuple[int, int]:
        """
        Replace the documents matching ``delete_filters`` by ``documents``.

        The new points are written first, then the matching points they did not overwrite are deleted, so the
        replaced document is never missing and a shorter new version leaves no stale tail. (A Qdrant server has no
        multi-operation transaction: a reader between the two steps may see new chunks beside old tail chunks.)

        :param delete_filters: Selects the old version (``tenant_id`` and ``document_id``).
        :param documents: The new version's chunks.
        :returns: ``(deleted, written)``.
        """
        self._initialize_client()
        self._upsert(documents)
        kept = [_point_id(document) for document in documents]
        old = self._filter_selector(delete_filters, exclude=kept)
        deleted = self._client.count(collection_name=self.index, count_filter=old, exact=True).count
        if deleted:
            self._client.delete(
                collection_name=self.index,
                points_selector=rest.FilterSelector(filter=old),
                wait=self.wait_result_from_api,
            )
        return deleted, len(documents)

    def _filter_selector(self, filters: dict[str, Any], exclude: list[str]) -> rest.Filter:
        selected = convert_filters_to_qdrant(filters)
        if selected is None:
            raise ValueError("replace_documents needs delete_filters that select the old version.")
        return rest.Filter(must=[selected], must_not=[rest.HasIdCondition(has_id=exclude)] if exclude else None)

    def _query_hybrid(
        self,
        query_embedding: list[float],
        query_sparse_embedding: SparseEmbedding,
        filters: dict[str, Any] | rest.Filter | None = None,
        top_k: int = 10,
        return_embedding: bool = False,
        score_threshold: float | None = None,
        group_by: str | None = None,
        group_size: int | None = None,
        rrf_k: int | None = None,
        rrf_weights: list[float] | None = None,
    ) -> list[Document]:
        """
        qdrant-haystack's hybrid query with ``max(4 * top_k, 40)`` candidates per stage, as the Edge store takes.

        Upstream leaves the prefetch limit at Qdrant's default (10), so RRF would fuse fewer candidates than on the
        Edge store and rank differently; grouped queries and the rest of the query are upstream's.
        """
        if group_by or rrf_weights is not None:
            return super()._query_hybrid(
                query_embedding, query_sparse_embedding, filters, top_k, return_embedding, score_threshold,
                group_by, group_size, rrf_k, rrf_weights,
            )  # fmt: skip
        self._initialize_client()
        if not self.use_sparse_embeddings:
            raise ValueError("Hybrid retrieval needs a store created with use_sparse_embeddings=True.")
        qdrant_filter = convert_filters_to_qdrant(filters)
        candidates = max(4 * top_k, 40)
        sparse = rest.SparseVector(indices=query_sparse_embedding.indices, values=query_sparse_embedding.values)
        fusion = rest.RrfQuery(rrf=rest.Rrf(k=rrf_k)) if rrf_k is not None else rest.FusionQuery(fusion=rest.Fusion.RRF)
        points = self._client.query_points(
            collection_name=self.index,
            prefetch=[
                rest.Prefetch(query=sparse, using=SPARSE_VECTORS_NAME, filter=qdrant_filter, limit=candidates),
                rest.Prefetch(query=query_embedding, using=DENSE_VECTORS_NAME, filter=qdrant_filter, limit=candidates),
            ],
            query=fusion,
            limit=top_k,
            score_threshold=score_threshold,
            with_payload=True,
            with_vectors=return_embedding,
        ).points
        return self._process_query_point_results(points)

    def _by_haystack_id(self, ids: list[str]) -> rest.Filter:
        return rest.Filter(must=[rest.FieldCondition(key="id", match=rest.MatchAny(any=list(ids)))])

    def get_documents_by_id(self, ids: list[str]) -> list[Document]:
        """The documents with these Haystack ids, in every tenant."""
        if not ids:
            return []
        return list(self._get_documents_generator(self._by_haystack_id(ids)))

    def delete_documents(self, document_ids: list[str]) -> None:
        """Delete the documents with these Haystack ids in every tenant (sourcebound deletes by tenant filters)."""
        if not document_ids:
            return
        self._initialize_client()
        self._client.delete(
            collection_name=self.index,
            points_selector=rest.FilterSelector(filter=self._by_haystack_id(document_ids)),
            wait=self.wait_result_from_api,
        )

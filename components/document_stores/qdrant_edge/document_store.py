"""
``QdrantEdgeDocumentStore``: a Haystack document store on Qdrant's own engine, in process.

Qdrant Edge (``qdrant-edge-py``) runs the Qdrant server's Rust engine inside
this process on a folder (a "shard"): HNSW and payload indexes, filtered
search, sparse vectors with IDF and fusion queries, with no server to run.
A Qdrant server stays the production option for several processes; it is
used through qdrant-haystack, with ``Bm25DocumentEmbedder``/``Bm25TextEmbedder``
giving it the same BM25 vectors.

What is stored (see ``converters``): one point per document, with a named
dense vector ``dense`` (``embedding_dim``, ``similarity``), a named sparse
vector ``bm25`` with Qdrant's IDF modifier (the document's own
``sparse_embedding``, or BM25 term weights the store computes from
``content`` with ``qdrant_edge.Bm25``), and the payload ``{"id", "content",
"meta"}``. Point ids derive from ``meta.tenant_id`` and the id, so ids are per
tenant (docs/contract.md "Document ids"); a shard written before that is
re-keyed once when it is opened (``POINT_ID_SCHEME_FILE`` marks it done).
Payload indexes: keyword on ``id``, on ``meta.tenant_id`` (``is_tenant``),
``meta.tags``, ``meta.document_id``, ``meta.scope``, ``meta.user_id``,
``meta.project_id`` and ``meta.language``; boolean on ``meta.verified`` and ``meta.tainted``; and
keyword on the derived access keys that answer the contract's access rule in
one index lookup (see ``converters`` and ``filters``).

Guarantees:

- Atomic writes. A batch is validated whole before the shard is touched (a bad
  document, vector or meta value raises a typed error and writes nothing); each
  ``write_documents`` call is then ONE engine update, recorded as one entry in
  the write-ahead log. (Validation first is not only tidy: Qdrant Edge 0.9 logs
  an update before checking it, so a rejected batch would half reappear on the
  next start.)
- Isolation. Every mutation holds the shard's write lock, reads hold it shared,
  so ``replace_documents`` (upsert the new version, then delete the stale
  points) is never seen half done within the process.
- Sharing. Store objects on the same resolved path share one open shard (see
  ``shard``); a second *process* gets ``ShardLockedError`` before the engine
  touches any file.
- Durability. Each update is in the write-ahead log when the call returns, so
  it survives a crash of the process; segments are flushed at most every
  ``FLUSH_INTERVAL_S`` during writes, on ``flush()``, and when the last store
  object on the path is closed (and at interpreter exit).
- Optimisation. Never implicit. Writes go to appendable segments that are
  searched exactly; queries carrying the access rule touch only the points the
  request may see, which keeps them at about 2 ms at 100k chunks without any
  optimisation (see ``bench/store_bench.py``). ``optimize()`` builds HNSW
  graphs, merges segments and reclaims deleted points: about 9 CPU-minutes for
  100k 384-d chunks, blocking. Run it from an admin task after large bulk
  loads or deletions, when unfiltered or tenant-wide dense search matters, never
  per request. Readers keep working while it runs; writers wait.

Usage:
```python
from haystack import Document
from components.document_stores.qdrant_edge import QdrantEdgeDocumentStore

store = QdrantEdgeDocumentStore(path="./data/qdrant", embedding_dim=384)
store.write_documents([Document(id="doc-1:0", content="Reset a password", meta={"tenant_id": "acme", "tags": ["it"]},
                                embedding=[0.1] * 384)])
store.filter_documents({"field": "meta.tenant_id", "operator": "==", "value": "acme"})
```
"""

import logging
import math
import shutil
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
from haystack import Document, default_from_dict, default_to_dict
from haystack.document_stores.types import DuplicatePolicy
from qdrant_edge import (
    CountRequest,
    Distance,
    EdgeConfig,
    EdgeSparseVectorParams,
    EdgeVectorParams,
    Filter,
    KeywordIndexParams,
    Memory,
    Modifier,
    PayloadSchemaType,
    PayloadSelector,
    Point,
    Query,
    QueryBatchRequest,
    QueryRequest,
    ScrollRequest,
    UpdateOperation,
)

from components.core.documents import evolve
from components.core.text_normalization import normalize_text
from components.document_stores.qdrant_edge.bm25 import build_bm25, require_content
from components.document_stores.qdrant_edge.compaction import (
    compact_shard,
    folder_bytes,
    note_deleted,
    read_pending,
    remove_staging,
)
from components.document_stores.qdrant_edge.converters import (
    ACCESS_FIELDS,
    ACCESS_KEYS_PATH,
    DENSE_VECTOR_NAME,
    SPARSE_VECTOR_NAME,
    STORE_PAYLOAD_KEY,
    access_keys,
    document_payload,
    point_id,
    record_to_document,
    to_sparse_vector,
)
from components.document_stores.qdrant_edge.errors import (
    DocumentValidationError,
    DuplicateDocumentError,
    EmbeddingDimensionError,
    FilterError,
    InsufficientStorageError,
    StoreConfigError,
    TenantConflictError,
)
from components.document_stores.qdrant_edge.filters import convert_filters
from components.document_stores.qdrant_edge.shard import SharedShard, acquire_shard, recreate_shard, release_shard

logger = logging.getLogger(__name__)

SIMILARITIES = {"cosine": Distance.Cosine, "dot_product": Distance.Dot, "l2": Distance.Euclid}

# Payload indexes; the access rule and its narrowing options filter on all of these (docs/contract.md, "Access rule").
PAYLOAD_INDEXES: dict[str, Any] = {
    "id": PayloadSchemaType.Keyword,
    "meta.tenant_id": KeywordIndexParams(is_tenant=True),
    "meta.tags": PayloadSchemaType.Keyword,
    "meta.document_id": PayloadSchemaType.Keyword,
    "meta.scope": PayloadSchemaType.Keyword,
    "meta.user_id": PayloadSchemaType.Keyword,
    "meta.project_id": PayloadSchemaType.Keyword,
    "meta.verified": PayloadSchemaType.Bool,
    "meta.tainted": PayloadSchemaType.Bool,
    # The request's optional language narrowing (docs/contract.md, "Languages").
    "meta.language": PayloadSchemaType.Keyword,
    # Artifact lookups (invalidation by artifact id) and the domain narrowing (docs/contract.md, "Access rule").
    "meta.artifact_id": PayloadSchemaType.Keyword,
    "meta.domain": PayloadSchemaType.Keyword,
    ACCESS_KEYS_PATH: PayloadSchemaType.Keyword,
}

SCROLL_PAGE_SIZE = 1024
# In the shard folder once its point ids follow converters.point_id (tenant + id) and its access keys
# converters.access_keys (project chunks keyed by project and owner; v3: keys stored as digests); another content
# triggers the migration.
POINT_ID_SCHEME_FILE = "point_id_scheme"
POINT_ID_SCHEME = "tenant-id-v2 access-v3"
_REKEY_BATCH = 256
DEFAULT_RRF_K = 60
# The stage names a source-reporting hybrid query puts in ``meta["retrieved_by"]`` (dense first, as the engine).
HYBRID_SOURCES = ("vector", "keyword")
# The engine orders points with equal scores arbitrarily (RRF ties are common). Queries fetch this many
# extra points and order each run of equal scores by id, so the same index and query give the same results.
TIE_MARGIN = 5
_MATCH_ALL = Filter()
_SPARSE_INDEX_LIMIT = 2**32
# Bytes a point takes beyond its vector and text (payload keys, indexes, log entry), for the free-space check.
_POINT_OVERHEAD = 2048


class _PreparedPoint(NamedTuple):
    """A validated document's point, with its ids kept on the Python side (reading them off ``Point`` converts)."""

    document_id: str
    point_id: Any
    point: Point
    tenant_id: Any


class QdrantEdgeDocumentStore:
    """
    A Haystack document store on an embedded Qdrant Edge shard (dense + BM25 vectors, payload indexes).

    Scores returned by the retrieval methods:
    - ``embedding_retrieval``: the ``similarity`` of query and document vectors; for ``"cosine"`` (default) the
      cosine similarity in [-1, 1], higher is closer. (``"dot_product"``: the dot product; ``"l2"``: the
      Euclidean distance, lower is closer.)
    - ``bm25_retrieval``: the BM25 score, sum over query terms of IDF x saturated term frequency; >= 0, unbounded,
      comparable only between results of one query.
    - ``hybrid_retrieval``: the Reciprocal Rank Fusion score, sum over the dense and BM25 rankings of
      ``1 / (rrf_k + rank)`` with ranks counted from 0; at most ``2 / rrf_k``. It orders results but says
      nothing about similarity: ask for ``return_embedding=True`` to compute the cosine yourself.

    See the module docstring for layout, atomicity, sharing, durability and when to call ``optimize()``.
    """

    # Point ids derive from meta.tenant_id and the id: the same id in two tenants is two documents.
    ids_per_tenant = True

    def __init__(
        self,
        path: str,
        embedding_dim: int = 384,
        similarity: str = "cosine",
        on_disk: bool = False,
        bm25_config: dict[str, Any] | None = None,
        max_search_threads: int | None = None,
        min_free_disk_mb: int = 64,
    ) -> None:
        """
        Open (or create) the shard at ``path``, sharing it with other store objects on the same path.

        :param path: Folder of the shard; created when missing. Relative paths resolve against the working directory.
        :param embedding_dim: Size of the dense vectors (384 for all-MiniLM-L6-v2).
        :param similarity: ``"cosine"`` (default), ``"dot_product"`` or ``"l2"``.
        :param on_disk: Keep vectors and payload on disk (memory-mapped, read through the page cache) instead of
            cached in RAM. For stores larger than memory.
        :param bm25_config: ``qdrant_edge.Bm25Config`` options (``k``, ``b``, ``avg_len``, ``language``, ...), see
            ``build_bm25``. Queries must use the same options, so the Qdrant-server profile's BM25 embedders
            take the same dict.
        :param max_search_threads: Threads of the engine's search pool; ``None`` derives it from the CPU count.
        :param min_free_disk_mb: Disk space every write leaves free; a write that would leave less is refused with
            ``InsufficientStorageError`` (the engine cannot fail a write into a full disk cleanly).
        :raises StoreConfigError: If a parameter is invalid, or the shard on disk / already open in this process
            has another ``embedding_dim``, ``similarity`` or ``bm25_config``.
        :raises ShardLockedError: If another process holds the shard.
        """
        if not isinstance(path, str) or not path:
            raise StoreConfigError(f"path must be a non-empty folder path string, got {path!r}.")
        if not isinstance(embedding_dim, int) or isinstance(embedding_dim, bool) or embedding_dim <= 0:
            raise StoreConfigError(f"embedding_dim must be a positive integer, got {embedding_dim!r}.")
        if similarity not in SIMILARITIES:
            raise StoreConfigError(f"similarity must be one of {sorted(SIMILARITIES)}, got {similarity!r}.")
        if max_search_threads is not None and (not isinstance(max_search_threads, int) or max_search_threads <= 0):
            raise StoreConfigError(
                f"max_search_threads must be a positive integer or None, got {max_search_threads!r}."
            )
        self.path = path
        self.embedding_dim = embedding_dim
        self.similarity = similarity
        self.on_disk = bool(on_disk)
        self.bm25_config = bm25_config
        self.max_search_threads = max_search_threads
        if not isinstance(min_free_disk_mb, int) or isinstance(min_free_disk_mb, bool) or min_free_disk_mb < 0:
            raise StoreConfigError(f"min_free_disk_mb must be a non-negative integer, got {min_free_disk_mb!r}.")
        self.min_free_disk_mb = min_free_disk_mb

        self._bm25 = build_bm25(bm25_config)
        self._open_lock = threading.Lock()
        self._shared: SharedShard | None = None
        self._shard_state()
        self._migrate_point_ids()
        if (self._shard_state().pending or {}).get("erase"):
            # A process died between an erasure's delete and its compaction: finish it before serving.
            logger.warning("Finishing the compaction of an erasure that did not complete at %s.", self.path)
            self.purge_deleted()

    # ------------------------------------------------------------------ lifecycle

    def _engine_config(self) -> EdgeConfig:
        memory = Memory.Cold if self.on_disk else Memory.Cached
        return EdgeConfig(
            vectors={
                DENSE_VECTOR_NAME: EdgeVectorParams(
                    size=self.embedding_dim, distance=SIMILARITIES[self.similarity], memory=memory
                )
            },
            sparse_vectors={SPARSE_VECTOR_NAME: EdgeSparseVectorParams(modifier=Modifier.Idf)},
            payload_memory=memory,
            max_search_threads=self.max_search_threads,
        )

    def _shard_state(self) -> SharedShard:
        shared = self._shared
        if shared is not None:
            return shared
        with self._open_lock:
            if self._shared is None:
                settings = {
                    "embedding_dim": self.embedding_dim,
                    "similarity": self.similarity,
                    "bm25_config": dict(self.bm25_config or {}),
                }
                self._shared = acquire_shard(
                    self.path, self._engine_config(), settings, PAYLOAD_INDEXES, on_open=_after_open
                )
            return self._shared

    def _migrate_point_ids(self) -> None:
        """
        Re-key the points of a shard written before point ids were per tenant, once (docs/contract.md
        "Document ids"). Each point whose id is not ``point_id(id, tenant_id)`` is upserted under that id with
        its vectors and payload unchanged and its old id deleted; then the scheme marker is written.
        """
        shared = self._shard_state()
        marker = Path(shared.path) / POINT_ID_SCHEME_FILE

        def current() -> bool:
            return marker.exists() and marker.read_text(encoding="utf-8").strip() == POINT_ID_SCHEME

        if current():
            return
        with shared.lock.write():
            if current():
                return
            started = time.perf_counter()
            moves = {}
            rekeyed: dict[tuple[str, ...], list[Any]] = {}
            for record in _scroll_all(shared, None, with_payload=True):
                payload = record.payload or {}
                old_id = record.id  # the binding converts on every access: read once
                meta = payload.get("meta") or {}
                keys = access_keys(meta)
                if keys != list((payload.get(STORE_PAYLOAD_KEY) or {}).get("access") or []):
                    rekeyed.setdefault(tuple(keys), []).append(old_id)
                new_id = point_id(str(payload.get("id", "")), meta.get("tenant_id"))
                if str(old_id) != str(new_id):
                    moves[old_id] = new_id
            # Access keys first (on the old ids), so the moved points carry the new keys.
            for keys, ids in rekeyed.items():
                shared.shard.update(UpdateOperation.set_payload(ids, {"access": list(keys)}, key=STORE_PAYLOAD_KEY))
            old_ids = list(moves)
            for start in range(0, len(old_ids), _REKEY_BATCH):
                batch = old_ids[start : start + _REKEY_BATCH]
                records = {str(record.id): record for record in shared.shard.retrieve(batch, True, True)}
                points = []
                for old in batch:
                    record = records[str(old)]
                    points.append(Point(id=moves[old], vector=record.vector, payload=record.payload))
                # Upsert first: a crash in between leaves a point twice (the next open finishes), never lost.
                shared.shard.update(UpdateOperation.upsert_points(points))
                shared.shard.update(UpdateOperation.delete_points(batch))
            shared.flush()
            marker.write_text(POINT_ID_SCHEME + "\n", encoding="utf-8")
            if old_ids or rekeyed:
                logger.warning(
                    "Migrated %s: %d points to per-tenant point ids, %d access-key sets recomputed, "
                    "in %.1f s (one-time).",
                    shared.path,
                    len(old_ids),
                    sum(len(ids) for ids in rekeyed.values()),
                    time.perf_counter() - started,
                )

    def close(self) -> None:
        """
        Release this object's hold on the shard; the last holder on the path flushes and closes it.

        The store reopens the shard on its next use, so closing is always safe.
        """
        with self._open_lock:
            shared, self._shared = self._shared, None
        if shared is not None:
            release_shard(shared)

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: S110 - never raise from a finaliser
            pass

    def flush(self) -> None:
        """Flush pending changes to the segment files (each write is already durable through the WAL)."""
        shared = self._shard_state()
        with shared.lock.read():
            shared.flush()

    @contextmanager
    def writes_paused(self) -> Iterator[str]:
        """
        Hold writers and ``optimize`` back, flush, and yield the shard folder: its files stay as they are until the
        block ends, so copying them gives a loadable shard of one point in time (docs/operations.md, "Backup").
        Queries go on meanwhile; writers wait and then proceed. Do not write from inside the block.

        :returns: A context manager yielding the resolved shard folder.
        """
        shared = self._shard_state()
        with shared.optimize_lock, shared.lock.writes_paused():
            shared.flush()
            yield shared.path

    def tenant_counts(self) -> dict[str, dict[str, int]]:
        """
        Chunks and documents (distinct ``meta.document_id``) per ``meta.tenant_id``; reads two payload fields of
        every point, so it is for operators (backups, migrations), not requests.

        :returns: ``{tenant: {"chunks": n, "documents": m}}``, tenants sorted; points without a string tenant are
            counted under ``""``.
        """
        shared = self._shard_state()
        chunks: dict[str, int] = {}
        documents: dict[str, set[str]] = {}
        selector = PayloadSelector.Include(["meta.tenant_id", "meta.document_id"])
        with shared.lock.read():
            offset = None
            while True:
                page, offset = shared.shard.scroll(
                    ScrollRequest(offset=offset, limit=SCROLL_PAGE_SIZE * 8, with_payload=selector)
                )
                for record in page:
                    meta = (record.payload or {}).get("meta") or {}
                    tenant = meta.get("tenant_id")
                    tenant = tenant if isinstance(tenant, str) else ""
                    chunks[tenant] = chunks.get(tenant, 0) + 1
                    documents.setdefault(tenant, set()).add(str(meta.get("document_id")))
                if offset is None:
                    break
        return {tenant: {"chunks": chunks[tenant], "documents": len(documents[tenant])} for tenant in sorted(chunks)}

    def scroll_points(self, batch_size: int = 256, offset: Any = None) -> Iterator[tuple[list[Any], Any]]:
        """
        Every point with its vectors and payload, a page at a time, for copying the store elsewhere.

        Each page is read under the shared lock; writes between pages may show (pause writers for one state).

        :param batch_size: Points per page.
        :param offset: Point id to start from (the engine's page offset), ``None`` for the first page.
        :returns: An iterator of ``(records, next_offset)``: engine records with ``id``, ``vector`` (``dense`` list,
            ``bm25`` sparse vector) and ``payload`` (``id``, ``content``, ``meta`` and the store's ``_store`` keys);
            ``next_offset`` is ``None`` after the last page.
        """
        shared = self._shard_state()
        while True:
            with shared.lock.read():
                page, offset = shared.shard.scroll(
                    ScrollRequest(offset=offset, limit=batch_size, with_payload=True, with_vector=True)
                )
            yield page, offset
            if offset is None:
                return

    def optimize(self) -> bool:
        """
        Build HNSW indexes and merge segments; blocks until the engine has nothing left to optimise.

        Call it after bulk indexing, never per request: at 100k 384-d chunks it takes minutes on 2 cores.
        Reads continue while it runs; writes wait for it.

        :returns: Whether any segment was optimised.
        """
        shared = self._shard_state()
        with shared.optimize_lock, shared.lock.read():
            started = time.perf_counter()
            changed = shared.shard.optimize()
            shared.flush()
        logger.info("Optimised the Qdrant Edge shard at %s in %.1f s.", shared.path, time.perf_counter() - started)
        return changed

    def pending_deletions(self) -> dict[str, Any] | None:
        """
        Deleted points whose data the shard's files still hold (docs/contract.md, "Deletion").

        :returns: ``{"points": n, "since": epoch seconds of the first, "erase": bool}``, or ``None`` when no file
            holds a deleted point.
        """
        pending = self._shard_state().pending
        return dict(pending) if pending else None

    def purge_deleted(self, older_than_s: float | None = None) -> dict[str, Any] | None:
        """
        Rewrite the shard from its live points (the folder swapped atomically, the write-ahead log started afresh)
        so that no file keeps a deleted point's text or vectors. Writers wait meanwhile; queries go on except for
        the swap itself. Erasures call it through ``delete_by_filter(..., purge=True)``.

        :param older_than_s: Only when the first pending deletion is at least this old; ``None``: whenever any is
            pending.
        :returns: The compaction's report (``points``, ``bytes_before``, ``bytes_after``, ``seconds``), or ``None``
            when nothing was due.
        :raises InsufficientStorageError: If the disk cannot hold a second copy of the shard; nothing changes.
        """
        shared = self._shard_state()
        with shared.optimize_lock, shared.lock.writes_paused():
            pending = shared.pending
            if not pending:
                return None
            if older_than_s is not None and time.time() - float(pending.get("since", 0.0)) < older_than_s:
                return None
            self._ensure_compaction_space(shared)
            return compact_shard(shared, self._engine_config(), PAYLOAD_INDEXES)

    def _ensure_compaction_space(self, shared: SharedShard) -> None:
        # The copy takes at most what the shard's files take now.
        needed = folder_bytes(shared.path) + self.min_free_disk_mb * 2**20
        free = shutil.disk_usage(shared.path).free
        if free < needed:
            raise InsufficientStorageError(
                f"Only {free / 2**20:.1f} MiB are free on the disk of {shared.path}; purging deleted points rewrites "
                f"the shard and needs {needed / 2**20:.1f} MiB (a copy plus min_free_disk_mb={self.min_free_disk_mb}). "
                "Nothing was deleted. Free disk space or move the data directory to a larger disk."
            )

    def info(self) -> dict[str, Any]:
        """
        Statistics for health checks.

        :returns: ``path`` (resolved), ``points``, ``segments``, ``indexed_vectors``, ``embedding_dim``,
            ``similarity`` and ``payload_indexes`` (field -> number of points with the field).
        """
        shared = self._shard_state()
        with shared.lock.read():
            engine_info = shared.shard.info()
        return {
            "path": shared.path,
            "points": engine_info.points_count,
            "segments": engine_info.segments_count,
            "indexed_vectors": engine_info.indexed_vectors_count,
            "embedding_dim": self.embedding_dim,
            "similarity": self.similarity,
            "payload_indexes": {name: index.points for name, index in engine_info.payload_schema.items()},
        }

    # ------------------------------------------------------------------ serialisation

    def to_dict(self) -> dict[str, Any]:
        """Serialise the store's settings (not its data) to a dict."""
        return default_to_dict(
            self,
            path=self.path,
            embedding_dim=self.embedding_dim,
            similarity=self.similarity,
            on_disk=self.on_disk,
            bm25_config=self.bm25_config,
            max_search_threads=self.max_search_threads,
            min_free_disk_mb=self.min_free_disk_mb,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "QdrantEdgeDocumentStore":
        """Deserialise the store from a dict; opens (or shares) the shard."""
        return default_from_dict(cls, data)

    # ------------------------------------------------------------------ reads

    def count_documents(self) -> int:
        """Number of documents in the store."""
        return self.count_documents_by_filter(None)

    def count_documents_by_filter(self, filters: dict[str, Any] | None) -> int:
        """
        Number of documents matching Haystack ``filters`` (all documents for ``None``/``{}``).

        :raises FilterError: If the filter is malformed.
        """
        engine_filter = convert_filters(filters)
        shared = self._shard_state()
        with shared.lock.read():
            return shared.shard.count(CountRequest(exact=True, filter=engine_filter))

    def filter_documents(self, filters: dict[str, Any] | None = None) -> list[Document]:
        """
        Return the documents matching Haystack ``filters``, complete with embeddings, in point-id order.

        :param filters: ``id``, ``content`` and ``meta.<name>`` fields, ``== != > >= < <= in not in`` and nested
            ``AND``/``OR``/``NOT``; ``None`` or ``{}`` returns every document.
        :returns: The documents (``score`` is ``None``).
        :raises FilterError: If the filter is malformed.
        """
        engine_filter = convert_filters(filters)
        shared = self._shard_state()
        documents: list[Document] = []
        with shared.lock.read():
            offset = None
            while True:
                records, offset = shared.shard.scroll(
                    ScrollRequest(
                        offset=offset, limit=SCROLL_PAGE_SIZE, filter=engine_filter, with_payload=True, with_vector=True
                    )
                )
                documents.extend(record_to_document(record) for record in records)
                if offset is None:
                    return documents

    def filter_meta(self, filters: dict[str, Any] | None = None) -> Iterator[dict[str, Any]]:
        """
        The ``meta`` of every matching chunk, without content or vectors, a page at a time: what operator views
        (document lists, stale documents) read, at a fraction of :meth:`filter_documents`' memory.

        :param filters: As for :meth:`filter_documents`.
        :returns: An iterator of meta dicts (each page read under the shared lock).
        """
        engine_filter = convert_filters(filters)
        shared = self._shard_state()
        offset = None
        while True:
            with shared.lock.read():
                request = ScrollRequest(
                    offset=offset, limit=SCROLL_PAGE_SIZE, filter=engine_filter, with_payload=True, with_vector=False
                )
                records, offset = shared.shard.scroll(request)
            for record in records:
                yield dict((record.payload or {}).get("meta") or {})
            if offset is None:
                return

    # ------------------------------------------------------------------ writes

    def write_documents(self, documents: list[Document], policy: DuplicatePolicy = DuplicatePolicy.NONE) -> int:
        """
        Write documents in one atomic engine update.

        :param documents: Documents with text ``content``; ``embedding`` (``embedding_dim`` finite floats) is
            optional, and a missing ``sparse_embedding`` is computed from ``content`` with BM25.
        :param policy: ``OVERWRITE`` replaces existing documents with the same id (the last of repeated ids in the
            batch wins); ``SKIP`` keeps existing ones (and the first of repeated ids); ``FAIL`` and ``NONE`` (the
            default) raise if any id exists or repeats in the batch, writing nothing.
        :returns: The number of documents written.
        :raises DocumentValidationError: (a ``ValueError``) If the batch is not a list of valid documents:
            ``MissingContentError``, ``EmbeddingDimensionError``, a non-finite or (cosine) all-zero vector, or a
            meta value that is not JSON-like. Nothing is written.
        :raises DuplicateDocumentError: Under ``FAIL``/``NONE``, naming the ids. Nothing is written.
        :raises TenantConflictError: Under ``OVERWRITE``, if a stored document with one of the ids has another
            ``tenant_id``. Nothing is written.
        """
        prepared = self._prepare_points(documents)
        shared = self._shard_state()
        with shared.lock.write():
            self._ensure_space(shared, documents)
            points = self._apply_policy(shared, prepared, policy)
            self._upsert(shared, points)
        return len(points)

    def delete_documents(self, document_ids: list[str]) -> None:
        """
        Delete documents by id, in one engine update; ids that do not exist are ignored.

        :raises DocumentValidationError: If ``document_ids`` is not a list of strings.
        """
        if not isinstance(document_ids, list) or not all(isinstance(one, str) for one in document_ids):
            raise DocumentValidationError(
                f"delete_documents expects a list of document id strings, got {document_ids!r}."
            )
        if not document_ids:
            return
        # An id may be a point in several tenants (ids are per tenant): match the stored id, not one point id.
        engine_filter = convert_filters({"field": "id", "operator": "in", "value": document_ids})
        shared = self._shard_state()
        with shared.lock.write():
            self._ensure_space(shared)
            matched = shared.shard.count(CountRequest(exact=True, filter=engine_filter))
            if matched:
                shared.shard.update(UpdateOperation.delete_points_by_filter(engine_filter))
                note_deleted(shared, matched)
                shared.flush_if_due()

    def delete_all_documents(self, recreate_index: bool = False) -> None:
        """
        Delete every document; the configuration and payload indexes stay.

        :param recreate_index: Also drop the shard's files and create it afresh, which returns the disk space of
            deleted points at once (otherwise reclaimed by ``optimize()``). Store objects sharing the shard
            switch to the new one.
        """
        shared = self._shard_state()
        with shared.lock.write():
            if recreate_index:
                recreate_shard(shared, self._engine_config(), PAYLOAD_INDEXES)
            else:
                note_deleted(shared, shared.shard.count(CountRequest(exact=True)))
                shared.shard.update(UpdateOperation.delete_points_by_filter(_MATCH_ALL))
                shared.flush()

    def delete_by_filter(self, filters: dict[str, Any], purge: bool = False) -> int:
        """
        Delete the documents matching ``filters``, in one engine update.

        The deleted points' data stays in the shard's files until a compaction (``purge_deleted``), which
        ``purge=True`` runs before returning: that is an erasure (docs/contract.md, "Deletion").

        :param filters: Non-empty Haystack filters.
        :param purge: Also rewrite the shard so that no file keeps the deleted points (or any deleted before). The
            deletion is recorded first, so a process that dies half way finishes the compaction when it next opens
            the shard.
        :returns: The number of documents deleted.
        :raises FilterError: If the filter is malformed or empty (use ``delete_all_documents()`` to empty the store).
        :raises InsufficientStorageError: If the disk cannot take the write (or, with ``purge``, a copy of the
            shard); nothing is deleted.
        """
        engine_filter = self._required_filter(filters, "delete_by_filter")
        shared = self._shard_state()
        with shared.lock.write():
            self._ensure_space(shared)
            matched = shared.shard.count(CountRequest(exact=True, filter=engine_filter))
            if purge and (matched or shared.pending):
                self._ensure_compaction_space(shared)
                note_deleted(shared, matched, erase=True)  # on disk before the deletion: see the docstring
            else:
                note_deleted(shared, matched)
            if matched:
                shared.shard.update(UpdateOperation.delete_points_by_filter(engine_filter))
                shared.flush_if_due()
        if purge:
            self.purge_deleted()
        return matched

    def update_by_filter(self, filters: dict[str, Any], meta: dict[str, Any]) -> int:
        """
        Merge ``meta`` into the meta of every document matching ``filters``, without touching vectors.

        This is how flags such as ``tainted`` or ``verified`` change without re-embedding.

        :param filters: Haystack filters; ``None``/``{}`` updates every document.
        :param meta: Fields to set; other meta fields stay.
        :returns: The number of documents updated.
        :raises FilterError: If the filter is malformed.
        :raises DocumentValidationError: If ``meta`` is not a non-empty dict of JSON-like values.
        """
        engine_filter = convert_filters(filters) or _MATCH_ALL
        if not isinstance(meta, dict) or not meta or not all(isinstance(key, str) for key in meta):
            raise DocumentValidationError(f"update_by_filter needs a non-empty dict of meta fields, got {meta!r}.")
        try:
            operation = UpdateOperation.set_payload_by_filter(engine_filter, meta, key="meta")
        except (TypeError, ValueError) as error:
            raise DocumentValidationError(f"update_by_filter meta {meta!r} is not JSON-like: {error}") from error
        shared = self._shard_state()
        with shared.lock.write():
            self._ensure_space(shared)
            if ACCESS_FIELDS.isdisjoint(meta):
                matched = shared.shard.count(CountRequest(exact=True, filter=engine_filter))
                if matched:
                    shared.shard.update(operation)
            else:
                matched = self._update_access_fields(shared, engine_filter, operation, meta)
            shared.flush_if_due()
        return matched

    @staticmethod
    def _update_access_fields(shared: SharedShard, engine_filter: Filter, operation: Any, meta: dict[str, Any]) -> int:
        """Apply a meta update that changes access fields, then recompute the access keys of the points it changed."""
        records = _scroll_all(shared, engine_filter, with_payload=True)
        if not records:
            return 0
        keys_by_point: dict[tuple[str, ...], list[Any]] = {}
        for record in records:
            merged = {**((record.payload or {}).get("meta") or {}), **meta}
            keys_by_point.setdefault(tuple(access_keys(merged)), []).append(record.id)
        shared.shard.update(operation)
        for keys, ids in keys_by_point.items():
            shared.shard.update(UpdateOperation.set_payload(ids, {"access": list(keys)}, key=STORE_PAYLOAD_KEY))
        return len(records)

    def replace_documents(self, delete_filters: dict[str, Any], documents: list[Document]) -> tuple[int, int]:
        """
        Replace the documents matching ``delete_filters`` with ``documents``, as one step for readers.

        Typical use: re-indexing a source document, ``delete_filters`` selecting its tenant and ``document_id``.
        Under the write lock the old documents are deleted (one engine update), then the new ones are upserted
        (a second update), so readers in this process see the old version or the new one, never both nor
        neither. Deleting first means a crash between the two updates leaves the document absent (a re-index
        then writes it again), never the new version mixed with stale tail chunks of the old one.

        :param delete_filters: Non-empty Haystack filters selecting the documents to replace.
        :param documents: The new documents (validated as in ``write_documents``; repeated ids: the last wins).
        :returns: ``(deleted, written)``: how many stored documents matched ``delete_filters`` (the old version,
            including ids that were rewritten) and how many documents were written.
        :raises FilterError: If ``delete_filters`` is malformed or empty.
        :raises DocumentValidationError: If a document is invalid; nothing is changed.
        :raises TenantConflictError: If a new document's id belongs to a stored document of another tenant.
        """
        engine_filter = self._required_filter(delete_filters, "replace_documents")
        prepared = self._prepare_points(documents)
        shared = self._shard_state()
        with shared.lock.write():
            self._ensure_space(shared, documents)
            matched = self._matching_point_ids(shared, engine_filter)
            # Checked before anything changes: a tenant conflict must leave the old version in place.
            points = self._apply_policy(
                shared, prepared, DuplicatePolicy.OVERWRITE, counted={str(one) for one in matched}
            )
            if matched:
                shared.shard.update(UpdateOperation.delete_points(list(matched)))
                note_deleted(shared, len(matched))
            self._upsert(shared, points)
        return len(matched), len(points)

    # ------------------------------------------------------------------ retrieval

    def embedding_retrieval(
        self,
        query_embedding: list[float],
        filters: dict[str, Any] | None = None,
        top_k: int = 10,
        return_embedding: bool = False,
        score_threshold: float | None = None,
    ) -> list[Document]:
        """
        Dense nearest-neighbour search.

        :param query_embedding: The query vector (``embedding_dim`` finite floats).
        :param filters: Haystack filters, applied inside the search (payload indexes narrow it first).
        :param top_k: Maximum number of documents.
        :param return_embedding: Return each document's dense ``embedding``.
        :param score_threshold: Drop documents scoring below it (above it for ``"l2"``).
        :returns: Documents by descending similarity; ``score`` as described in the class docstring.
        :raises EmbeddingDimensionError: If the query vector has the wrong size or is not finite.
        :raises FilterError: If the filter is malformed.
        """
        vector = self._query_vector(query_embedding)
        limit = _check_top_k(top_k)
        request = QueryRequest(
            limit=limit + TIE_MARGIN,
            query=Query.Nearest(vector, using=DENSE_VECTOR_NAME),
            filter=convert_filters(filters),
            with_payload=True,
            with_vector=[DENSE_VECTOR_NAME] if return_embedding else False,
            score_threshold=score_threshold,
        )
        return self._run_query(request, limit)

    def bm25_retrieval(
        self, query: str, filters: dict[str, Any] | None = None, top_k: int = 10, return_embedding: bool = False
    ) -> list[Document]:
        """
        Keyword search: BM25 over the ``bm25`` sparse vectors, IDF from the whole store.

        :param query: The query text; a query of only stop words returns no documents.
        :param filters: Haystack filters.
        :param top_k: Maximum number of documents.
        :param return_embedding: Return each document's dense ``embedding``.
        :returns: Documents by descending BM25 score.
        :raises FilterError: If the filter is malformed.
        """
        if not isinstance(query, str):
            raise TypeError(f"bm25_retrieval expects a query string, got {type(query).__name__}.")
        limit = _check_top_k(top_k)
        engine_filter = convert_filters(filters)
        # Query words normalised as the indexed text is (docs/contract.md, "Text normalisation").
        sparse = self._bm25.embed_query(normalize_text(query))
        if not sparse.indices:
            return []
        request = QueryRequest(
            limit=limit + TIE_MARGIN,
            query=Query.Nearest(sparse, using=SPARSE_VECTOR_NAME),
            filter=engine_filter,
            with_payload=True,
            with_vector=[DENSE_VECTOR_NAME] if return_embedding else False,
        )
        return self._run_query(request, limit)

    def hybrid_retrieval(
        self,
        query: str,
        query_embedding: list[float],
        filters: dict[str, Any] | None = None,
        top_k: int = 10,
        return_embedding: bool = False,
        prefetch_limit: int | None = None,
        rrf_k: int = DEFAULT_RRF_K,
        report_sources: bool = False,
    ) -> list[Document]:
        """
        Hybrid search: dense and BM25 candidates fused with Reciprocal Rank Fusion.

        The two stages (dense, BM25) run as one engine batch, ``filters`` in both, so no candidate outside them is
        ever ranked; they are fused here with the engine's ``Fusion.Rrf`` arithmetic (``float32`` sums of
        ``1 / (rrf_k + rank)``, rank from 0, dense first), except that points with equal scores within a stage
        are ranked by point id: the engine orders them by where they sit in the shard, which a re-index or a
        segment merge changes (docs/contract.md, "Retrieval"). Only the returned documents' payloads are read.

        With ``report_sources=True`` each document also says which stages found it: ``meta["retrieved_by"]``
        lists ``"vector"`` and/or ``"keyword"``.

        :param query: The query text (for BM25).
        :param query_embedding: The query vector (for the dense stage).
        :param filters: Haystack filters.
        :param top_k: Maximum number of documents.
        :param return_embedding: Return each document's dense ``embedding``, also for documents only the BM25
            stage found, so callers can compute every candidate's cosine similarity.
        :param prefetch_limit: Candidates per stage; default ``max(4 * top_k, 40)``.
        :param rrf_k: The RRF constant ``k``.
        :param report_sources: Fuse here and mark each document's ``meta["retrieved_by"]`` (see above).
        :returns: Documents by descending RRF score.
        :raises EmbeddingDimensionError: If the query vector has the wrong size or is not finite.
        :raises FilterError: If the filter is malformed.
        """
        if not isinstance(query, str):
            raise TypeError(f"hybrid_retrieval expects a query string, got {type(query).__name__}.")
        limit = _check_top_k(top_k)
        candidates = _check_top_k(prefetch_limit) if prefetch_limit is not None else max(4 * limit, 40)
        if not isinstance(rrf_k, int) or isinstance(rrf_k, bool) or rrf_k <= 0:
            raise ValueError(f"rrf_k must be a positive integer, got {rrf_k!r}.")
        vector = self._query_vector(query_embedding)
        # The filter goes into each stage rather than on the request: the engine would also re-check a request
        # filter on the fused candidates (~25% more work). Fused results only come from the filtered stages.
        engine_filter = convert_filters(filters)
        # Query words normalised as the indexed text is (docs/contract.md, "Text normalisation").
        sparse = self._bm25.embed_query(normalize_text(query))
        stages = {HYBRID_SOURCES[0]: Query.Nearest(vector, using=DENSE_VECTOR_NAME)}
        if sparse.indices:
            stages[HYBRID_SOURCES[1]] = Query.Nearest(sparse, using=SPARSE_VECTOR_NAME)
        return self._fuse_stages(stages, engine_filter, candidates, limit, rrf_k, return_embedding, report_sources)

    # ------------------------------------------------------------------ internals

    def _fuse_stages(
        self,
        stages: dict[str, Any],
        engine_filter: Filter | None,
        candidates: int,
        limit: int,
        rrf_k: int,
        return_embedding: bool,
        report_sources: bool,
    ) -> list[Document]:
        """The hybrid query's stages as one batch, RRF-fused here (optionally marking each document's stages)."""
        batch = QueryBatchRequest(
            [
                # A few more than the stage keeps, so a run of equal scores at its cut is ordered by id too.
                QueryRequest(limit=candidates + TIE_MARGIN, query=query, filter=engine_filter, with_payload=False)
                for query in stages.values()
            ]
        )
        shared = self._shard_state()
        with shared.lock.read():  # the stages and the payloads come from the same state of the shard
            rankings = [_break_ties(points)[:candidates] for points in shared.shard.query_batch(batch)]
            fused = rrf_fuse(dict(zip(stages, rankings)), rrf_k)[:limit]
            records = shared.shard.retrieve(
                [point_id for point_id, _, _ in fused],
                with_payload=True,
                with_vector=[DENSE_VECTOR_NAME] if return_embedding else False,
            )
        by_id = {record.id: record for record in records}
        documents = []
        for fused_id, score, sources in fused:
            document = record_to_document(by_id[fused_id], score=score)
            if report_sources:
                document = evolve(document, meta={**document.meta, "retrieved_by": sources})
            documents.append(document)
        return documents

    def _run_query(self, request: QueryRequest, limit: int) -> list[Document]:
        shared = self._shard_state()
        with shared.lock.read():
            points = shared.shard.query(request)
        return [record_to_document(point, score=point.score) for point in _break_ties(points)[:limit]]

    def _query_vector(self, query_embedding: Any) -> np.ndarray:
        try:
            vector = np.asarray(query_embedding, dtype=np.float32)
        except (TypeError, ValueError) as error:
            raise EmbeddingDimensionError(f"The query embedding is not a list of numbers: {error}") from error
        if vector.shape != (self.embedding_dim,):
            size = vector.shape[0] if vector.ndim == 1 else f"shape {vector.shape} instead of"
            raise EmbeddingDimensionError(
                f"The query embedding has {size} dimensions; this store holds {self.embedding_dim}-dimensional "
                "vectors. Embed the query with the model the documents were embedded with."
            )
        if not np.isfinite(vector).all():
            raise EmbeddingDimensionError("The query embedding contains NaN or infinite values.")
        return vector

    @staticmethod
    def _required_filter(filters: dict[str, Any], operation: str) -> Filter:
        engine_filter = convert_filters(filters)
        if engine_filter is None:
            raise FilterError(
                f"{operation} needs a non-empty filter; to remove every document call delete_all_documents()."
            )
        return engine_filter

    def ensure_free_space(self, documents: list[Document] | None = None) -> None:
        """
        Raise ``InsufficientStorageError`` unless the shard's disk keeps ``min_free_disk_mb`` free after writing
        ``documents`` (estimated). Every mutation checks it; a writer may call it first for a whole batch.
        """
        self._ensure_space(self._shard_state(), documents)

    def _ensure_space(self, shared: SharedShard, documents: list[Document] | None = None) -> None:
        # The engine writes its log and segments through memory maps: on a full disk a write would kill the
        # process (SIGBUS) instead of failing, so a write that could fill the disk is refused before it starts
        # (docs/operations.md, "Disk space").
        estimate = sum(
            _POINT_OVERHEAD + self.embedding_dim * 8 + 4 * len((document.content or "").encode("utf-8"))
            for document in documents or []
            if isinstance(document, Document)
        )
        free = shutil.disk_usage(shared.path).free
        needed = self.min_free_disk_mb * 2**20 + estimate
        if free < needed:
            raise InsufficientStorageError(
                f"Only {free / 2**20:.1f} MiB are free on the disk of {shared.path}; this write needs "
                f"{needed / 2**20:.1f} MiB (its estimate plus min_free_disk_mb={self.min_free_disk_mb} kept free). "
                "Nothing was written. Free disk space or move the data directory to a larger disk."
            )

    def _prepare_points(self, documents: list[Document]) -> list[_PreparedPoint]:
        """Validate the whole batch and build its points; raises before anything touches the shard."""
        if not isinstance(documents, list):
            raise DocumentValidationError(
                f"write_documents expects a list of Documents, got {type(documents).__name__}."
            )
        for index, document in enumerate(documents):
            if not isinstance(document, Document):
                raise DocumentValidationError(
                    f"write_documents expects Documents; item {index} is a {type(document).__name__}: {document!r:.80}."
                )
            require_content(document)
            if document.blob is not None:
                logger.warning(
                    "Document %r has a blob; the Qdrant Edge store keeps only its text and meta.", document.id
                )

        norms = self._validate_embeddings(documents)
        points = []
        for document, norm in zip(documents, norms, strict=True):
            vectors: dict[str, Any] = {}
            if document.embedding is not None:
                vectors[DENSE_VECTOR_NAME] = document.embedding
            if document.sparse_embedding is not None:
                vectors[SPARSE_VECTOR_NAME] = self._document_sparse_vector(document)
            else:
                vectors[SPARSE_VECTOR_NAME] = self._bm25.embed_document(document.content)
            payload = document_payload(
                document,
                embedding_norm=norm if self.similarity == "cosine" else None,
                sparse_from_document=document.sparse_embedding is not None,
            )
            identifier = point_id(document.id, document.meta.get("tenant_id"))
            try:
                point = Point(id=identifier, vector=vectors, payload=payload)
            except (TypeError, ValueError) as error:
                raise DocumentValidationError(
                    f"Document {document.id!r} cannot be stored: its meta must hold only strings, numbers, booleans, "
                    f"None, lists and dicts with string keys (no NaN): {error}"
                ) from error
            points.append(_PreparedPoint(document.id, identifier, point, document.meta.get("tenant_id")))
        return points

    def _validate_embeddings(self, documents: list[Document]) -> list[float | None]:
        """Check sizes and values of all dense vectors at once; return each one's Euclidean length (or None)."""
        rows: list[int] = []
        for index, document in enumerate(documents):
            embedding = document.embedding
            if embedding is None:
                continue
            if not isinstance(embedding, list | tuple | np.ndarray) or len(embedding) != self.embedding_dim:
                size = len(embedding) if hasattr(embedding, "__len__") else type(embedding).__name__
                raise EmbeddingDimensionError(
                    f"Document {document.id!r} has an embedding of dimension {size}; this store holds "
                    f"{self.embedding_dim}-dimensional vectors (embedding_dim). Embed with the store's model, or "
                    "use a store with a matching embedding_dim."
                )
            rows.append(index)
        norms: list[float | None] = [None] * len(documents)
        if not rows:
            return norms
        try:
            matrix = np.asarray([documents[index].embedding for index in rows], dtype=np.float64)
        except (TypeError, ValueError) as error:
            raise DocumentValidationError(f"An embedding in the batch is not a list of numbers: {error}") from error
        finite = np.isfinite(matrix).all(axis=1)
        lengths = np.linalg.norm(matrix, axis=1)
        for position, index in enumerate(rows):
            if not finite[position]:
                raise DocumentValidationError(
                    f"Document {documents[index].id!r} has NaN or infinite values in its embedding."
                )
            if self.similarity == "cosine" and lengths[position] == 0.0:
                raise DocumentValidationError(
                    f"Document {documents[index].id!r} has an all-zero embedding, which has no direction for "
                    "cosine similarity."
                )
            norms[index] = float(lengths[position])
        return norms

    @staticmethod
    def _document_sparse_vector(document: Document) -> Any:
        sparse = document.sparse_embedding
        if not all(
            isinstance(index, int) and not isinstance(index, bool) and 0 <= index < _SPARSE_INDEX_LIMIT
            for index in sparse.indices
        ) or len(set(sparse.indices)) != len(sparse.indices):
            raise DocumentValidationError(
                f"Document {document.id!r} has a sparse_embedding whose indices are not distinct integers "
                "in [0, 2**32)."
            )
        if not all(isinstance(value, int | float) and math.isfinite(value) for value in sparse.values):
            raise DocumentValidationError(f"Document {document.id!r} has a sparse_embedding with non-finite values.")
        return to_sparse_vector(sparse)

    def _apply_policy(
        self,
        shared: SharedShard,
        points: list[_PreparedPoint],
        policy: DuplicatePolicy,
        counted: frozenset[str] | set[str] = frozenset(),
    ) -> list[_PreparedPoint]:
        """
        Resolve repeated and existing ids per ``policy`` (call under the write lock); ``counted``: point ids (as
        strings) whose deletion the caller records itself.
        """
        if policy == DuplicatePolicy.OVERWRITE:
            unique = list({point.point_id: point for point in points}.values())
            # An overwritten point's old text stays in the files until a compaction, like a deleted one.
            existing = self._check_tenants(shared, unique)
            note_deleted(shared, len({str(one) for one in existing} - counted))
            return unique
        if policy == DuplicatePolicy.SKIP:
            unique = list({point.point_id: point for point in reversed(points)}.values())[::-1]
            existing = self._existing_point_ids(shared, [point.point_id for point in unique])
            return [point for point in unique if point.point_id not in existing]
        # FAIL, and NONE as Haystack's in-memory store reads it.
        seen: set[Any] = set()
        repeated = {point.document_id for point in points if point.point_id in seen or seen.add(point.point_id)}
        if repeated:
            raise DuplicateDocumentError(f"Ids repeat within the batch: {sorted(repeated)[:10]}. Nothing was written.")
        existing = self._existing_point_ids(shared, [point.point_id for point in points])
        if existing:
            ids = sorted(point.document_id for point in points if point.point_id in existing)
            raise DuplicateDocumentError(
                f"{len(ids)} document(s) already exist: {ids[:10]}. Nothing was written; use DuplicatePolicy.OVERWRITE "
                "to replace them or SKIP to keep them."
            )
        return points

    @staticmethod
    def _check_tenants(shared: SharedShard, points: list[_PreparedPoint]) -> set[Any]:
        """
        Refuse to overwrite a stored document whose ``tenant_id`` differs: ids collide across tenants. Returns the
        ids of the points that exist.
        """
        if not points:
            return set()
        stored = {
            record.id: ((record.payload or {}).get("meta") or {}).get("tenant_id")
            for record in shared.shard.retrieve(
                [point.point_id for point in points], PayloadSelector.Include(["meta.tenant_id"]), False
            )
        }
        conflicts = [
            (point.document_id, stored[point.point_id], point.tenant_id)
            for point in points
            if point.point_id in stored and stored[point.point_id] != point.tenant_id
        ]
        if conflicts:
            shown = ", ".join(
                f"{doc_id!r} (stored for {old!r}, written for {new!r})" for doc_id, old, new in conflicts[:5]
            )
            raise TenantConflictError(
                f"{len(conflicts)} document id(s) already belong to another tenant: {shown}. "
                "Document ids must be unique "
                "across tenants: derive document_id from the tenant, or delete the other tenant's document first. "
                "Nothing was written."
            )
        return set(stored)

    @staticmethod
    def _existing_point_ids(shared: SharedShard, ids: list[Any]) -> set[Any]:
        if not ids:
            return set()
        return {record.id for record in shared.shard.retrieve(ids, False, False)}

    @staticmethod
    def _matching_point_ids(shared: SharedShard, engine_filter: Filter) -> set[Any]:
        return {record.id for record in _scroll_all(shared, engine_filter, with_payload=False)}

    @staticmethod
    def _upsert(shared: SharedShard, points: list[_PreparedPoint]) -> None:
        if points:
            shared.shard.update(UpdateOperation.upsert_points([prepared.point for prepared in points]))
            shared.flush_if_due()


def _after_open(shared: SharedShard) -> None:
    """On opening a shard: remove what an unfinished compaction left beside it, read its pending deletions."""
    remove_staging(shared.path)
    shared.pending = read_pending(shared.path)


def _scroll_all(shared: SharedShard, engine_filter: Filter | None, with_payload: bool) -> list[Any]:
    """Every record matching the filter, without vectors (call under the lock)."""
    records: list[Any] = []
    offset = None
    while True:
        page, offset = shared.shard.scroll(
            ScrollRequest(offset=offset, limit=SCROLL_PAGE_SIZE * 8, filter=engine_filter, with_payload=with_payload)
        )
        records.extend(page)
        if offset is None:
            return records


def rrf_fuse(rankings: dict[str, list[Any]], rrf_k: int) -> list[tuple[Any, float, list[str]]]:
    """
    Reciprocal Rank Fusion as the engine computes ``Fusion.Rrf``: a point's score is the ``float32`` sum, in
    ranking order, of ``1 / (rrf_k + rank)`` (rank from 0) over the rankings that hold it.

    :param rankings: Stage name -> the stage's points in rank order.
    :param rrf_k: The RRF constant.
    :returns: ``(point id, score, stage names)`` by descending score, equal scores by id (as ``_break_ties``).
    """
    longest = max((len(points) for points in rankings.values()), default=0)
    # Each term as the float32 the engine adds, held in a Python float (exact: a float32 fits in a float64).
    terms = (np.float32(1.0) / (np.float32(rrf_k) + np.arange(longest, dtype=np.float32))).tolist()
    scores: dict[Any, float] = {}
    sources: dict[Any, list[str]] = {}
    for name, points in rankings.items():
        for rank, point in enumerate(points):
            point_id = point.id  # the binding builds a new UUID on every access: read it once
            if point_id in scores:
                # Two float32 summands add exactly in float64; one rounding to float32 is the engine's float32 sum.
                scores[point_id] = float(np.float32(scores[point_id] + terms[rank]))
                sources[point_id].append(name)
            else:
                scores[point_id] = terms[rank]
                sources[point_id] = [name]
    ordered = sorted(scores, key=lambda point_id: (-scores[point_id], str(point_id)))
    return [(point_id, scores[point_id], sources[point_id]) for point_id in ordered]


def _break_ties(points: list[Any]) -> list[Any]:
    """Keep the engine's order, but sort every run of equal scores by point id (deterministic results)."""
    scores = [point.score for point in points]  # read each score once: the binding converts on every access
    ordered: list[Any] = []
    start = 0
    for end in range(1, len(points) + 1):
        if end == len(points) or scores[end] != scores[start]:
            run = points[start:end]
            ordered.extend(run if len(run) == 1 else sorted(run, key=lambda tied: str(tied.id)))
            start = end
    return ordered


def _check_top_k(top_k: Any) -> int:
    if not isinstance(top_k, int) or isinstance(top_k, bool) or top_k <= 0:
        raise ValueError(f"top_k must be a positive integer, got {top_k!r}.")
    return top_k

"""
``SentenceVectorCache``: the reading step's sentence vectors, kept on disk per tenant and document.

The query pipeline's reader compares the query with every sentence of the context (docs/reader.md). Embedding
those ~20 sentences per request costs far more than the rest of a request, so the indexing pipeline embeds a
chunk's sentences once, when it writes the chunk, and the query pipeline reads them from here; a sentence the
cache lacks (a chunk indexed before, a cache lost) is embedded per request and written back.

It is a cache, never a source of truth: the vectors derive from the stored text and the model, so it is local to
one process's data dir (replicas each keep their own), and losing it costs only time. Rows are keyed by tenant,
document and the text's SHA-256, so one tenant never reads another's entry, and deleting a tenant or pruning to
the documents a store still holds removes the vectors with the text (docs/contract.md "Deletion"). The model's
digest is recorded: vectors of another model are dropped on open.

Vectors are stored as float16 (768 bytes for 384 dimensions); the embedder rounds every sentence vector the
same way whether it came from here or was just computed, so an answer never depends on whether a cache hit.

Usage:

```python
cache = SentenceVectorCache("data/sentence_vectors.sqlite", model_key="all-MiniLM-L6-v2@<digest>")
cache.put("acme", [("hr-policy", "Employees get 25 days.", vector)])
cache.get("acme", [("hr-policy", "Employees get 25 days.")])  # {("hr-policy", "Employees get 25 days."): vector}
```
"""

import hashlib
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

SENTENCE_VECTORS_FILE = "sentence_vectors.sqlite"  # in the data dir (pipelines/indexing.yml, query.yml)
STORED_DTYPE = np.float16
# SQLite's default limit of host parameters per statement is 32766; deletions go in slices well below it.
_DELETE_SLICE = 500

_SCHEMA = """
CREATE TABLE IF NOT EXISTS sentence_vectors (
    tenant_id TEXT NOT NULL,
    document_id TEXT NOT NULL,
    text_hash BLOB NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (tenant_id, document_id, text_hash)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS cache_info (name TEXT PRIMARY KEY, value TEXT NOT NULL);
"""

Key = tuple[str, str]  # (document_id, sentence text)
_LOOKUP_BATCH = 500  # hashes per statement, well inside SQLite's limit on bound variables


def text_hash(text: str) -> bytes:
    """The key of a sentence's text (SHA-256: equal texts share it, different texts never do in practice)."""
    return hashlib.sha256(text.encode("utf-8")).digest()


def stored_vector(vector: np.ndarray) -> np.ndarray:
    """``vector`` as the cache keeps it (float16), back in float32 for arithmetic."""
    return np.asarray(vector, dtype=np.float32).astype(STORED_DTYPE).astype(np.float32)


def _weights(model_key: str) -> str:
    """The part of a model key that names the weights: its digest after the last ``@`` (the whole key without one)."""
    return model_key.rpartition("@")[2]


class SentenceVectorCache:
    """Sentence vectors per (tenant, document, text) in one SQLite file; thread-safe."""

    def __init__(self, path: str | Path, model_key: str | None) -> None:
        """
        :param path: The SQLite file (created with its folder when missing).
        :param model_key: Names the model and its weights, ``name@digest``; a file written with other weights (another
            digest) is emptied on open. The name is not compared: one model is named by its install path in a
            served pipeline and ``packaged:...`` elsewhere, and the path moves with every new environment, so
            comparing it would throw away an index's vectors for the same weights.
            ``None`` opens the file for deletions only, whatever model wrote it.
        :raises ValueError: If ``model_key`` is empty.
        """
        if model_key is not None and (not isinstance(model_key, str) or not model_key):
            raise ValueError(f"model_key must name the embedding model, got {model_key!r}")
        self.path = Path(path)
        self.model_key = model_key
        self._lock = threading.Lock()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(self.path), check_same_thread=False, timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        # Deleted vectors are zeroed in the file, and ``truncate_log`` empties the WAL (docs/contract.md, "Deletion").
        self._db.execute("PRAGMA secure_delete=ON")
        self._db.executescript(_SCHEMA)
        self._db.commit()
        row = self._db.execute("SELECT value FROM cache_info WHERE name = 'model'").fetchone()
        if model_key is not None and (row is None or row[0] != model_key):
            with self._db:
                if row is None or _weights(row[0]) != _weights(model_key):
                    self._db.execute("DELETE FROM sentence_vectors")
                self._db.execute("INSERT OR REPLACE INTO cache_info VALUES ('model', ?)", (model_key,))

    def get(self, tenant_id: str, keys: Sequence[Key]) -> dict[Key, np.ndarray]:
        """The stored vectors (float32) of the ``(document_id, text)`` keys this tenant has; missing keys are absent."""
        found: dict[Key, np.ndarray] = {}
        wanted: dict[str, dict[bytes, str]] = {}  # document -> text hash -> text
        for document_id, text in dict.fromkeys(keys):
            wanted.setdefault(document_id, {})[text_hash(text)] = text
        # One statement per document, its hashes in an IN list: the primary key serves each as a point lookup (an OR
        # of (document, hash) pairs would scan the tenant's rows; one statement per sentence cost twice the time).
        with self._lock:
            for document_id, by_hash in wanted.items():
                hashes = list(by_hash)
                for start in range(0, len(hashes), _LOOKUP_BATCH):
                    part = hashes[start : start + _LOOKUP_BATCH]
                    rows = self._db.execute(
                        "SELECT text_hash, vector FROM sentence_vectors WHERE tenant_id = ? AND document_id = ? "
                        f"AND text_hash IN ({', '.join('?' * len(part))})",
                        (tenant_id, document_id, *part),
                    ).fetchall()
                    for digest, vector in rows:
                        found[(document_id, by_hash[digest])] = np.frombuffer(vector, dtype=STORED_DTYPE).astype(
                            np.float32
                        )
        return found

    def put(self, tenant_id: str, entries: Iterable[tuple[str, str, np.ndarray]]) -> int:
        """Store ``(document_id, text, vector)`` entries of a tenant (replacing equal keys); returns how many."""
        rows = [
            (tenant_id, document_id, text_hash(text), np.asarray(vector, dtype=STORED_DTYPE).tobytes())
            for document_id, text, vector in entries
        ]
        if rows:
            with self._lock, self._db:
                self._db.executemany("INSERT OR REPLACE INTO sentence_vectors VALUES (?, ?, ?, ?)", rows)
        return len(rows)

    def delete_tenant(self, tenant_id: str) -> int:
        """Remove every vector of a tenant; returns how many."""
        with self._lock, self._db:
            return self._db.execute("DELETE FROM sentence_vectors WHERE tenant_id = ?", (tenant_id,)).rowcount

    def document_ids(self, tenant_id: str) -> set[str]:
        """The documents of a tenant that have vectors here."""
        with self._lock:
            rows = self._db.execute(
                "SELECT DISTINCT document_id FROM sentence_vectors WHERE tenant_id = ?", (tenant_id,)
            ).fetchall()
        return {row[0] for row in rows}

    def delete_documents(self, tenant_id: str, document_ids: Iterable[str]) -> int:
        """Remove the vectors of some documents of a tenant; returns how many."""
        ids = sorted(set(document_ids))
        removed = 0
        with self._lock, self._db:
            for start in range(0, len(ids), _DELETE_SLICE):
                part = ids[start : start + _DELETE_SLICE]
                marks = ",".join("?" * len(part))
                removed += self._db.execute(
                    f"DELETE FROM sentence_vectors WHERE tenant_id = ? AND document_id IN ({marks})", [tenant_id, *part]
                ).rowcount
        return removed

    def tenants(self) -> set[str]:
        """Every tenant with vectors here."""
        with self._lock:
            return {row[0] for row in self._db.execute("SELECT DISTINCT tenant_id FROM sentence_vectors")}

    def count(self) -> int:
        """How many vectors are stored."""
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM sentence_vectors").fetchone()[0]

    def truncate_log(self) -> None:
        """Copy the write-ahead log into the file and empty it, so that deleted rows leave the log too."""
        with self._lock:
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def close(self) -> None:
        """Close the file."""
        with self._lock:
            self._db.close()


@contextmanager
def _data_dir_cache(data_dir: str | Path) -> Iterator[SentenceVectorCache | None]:
    """The data dir's sentence vector file opened for deletions (any model), or ``None`` when it has none."""
    path = Path(data_dir) / SENTENCE_VECTORS_FILE
    if not path.exists():
        yield None
        return
    cache = SentenceVectorCache(path, model_key=None)
    try:
        yield cache
    finally:
        cache.close()


def erase_sentence_vectors(data_dir: str | Path, tenant_id: str, document_ids: Iterable[str] | None = None) -> int:
    """
    Remove a tenant's sentence vectors from the data dir's file (only ``document_ids`` when given); returns how
    many. Deleting documents deletes their vectors too (docs/contract.md "Deletion").
    """
    with _data_dir_cache(data_dir) as cache:
        if cache is None:
            return 0
        if document_ids is None:
            removed = cache.delete_tenant(tenant_id)
        else:
            removed = cache.delete_documents(tenant_id, document_ids)
        if removed:
            cache.truncate_log()
        return removed


def prune_sentence_vectors(data_dir: str | Path, store: Any, batch: int = 500) -> int:
    """
    Remove the vectors of documents ``store`` no longer holds; returns how many rows went. Deletions served by
    this process remove theirs at once; this catches the ones another replica served (docs/operations.md,
    "Replicas"), on the records pruning schedule.

    :param data_dir: The data dir holding the sentence vector file (nothing to do when it has none).
    :param store: The document store (any Haystack store with ``filter_documents``).
    :param batch: Document ids looked up per store query.
    """
    removed = 0
    with _data_dir_cache(data_dir) as cache:
        for tenant_id in sorted(cache.tenants()) if cache is not None else ():
            cached = sorted(cache.document_ids(tenant_id))
            for start in range(0, len(cached), batch):
                part = cached[start : start + batch]
                conditions = [
                    {"field": "meta.tenant_id", "operator": "==", "value": tenant_id},
                    {"field": "meta.document_id", "operator": "in", "value": part},
                ]
                held = {
                    document.meta.get("document_id")
                    for document in store.filter_documents({"operator": "AND", "conditions": conditions})
                }
                removed += cache.delete_documents(tenant_id, [document for document in part if document not in held])
        if removed:
            cache.truncate_log()
    return removed

"""
Helpers shared by the security and reliability tests (``tests/test_security_*.py``,
``tests/test_reliability_*.py``).

* Canaries: every test document carries one unique token (``zq`` + 12 hex digits), so any
  response text can be scanned for documents it must not show (:func:`canaries_in`).
* :class:`TestDocument` and :func:`visible`: a test's own model of the access rule
  (CONTRACT "Access rule"), written independently of ``components.core.access_rule``, so a bug
  there cannot hide in the oracle.
* :func:`store_snapshot` / :func:`live_snapshot`: the whole index as the store holds it
  (every point's id, content, meta and dense vector), read with ``QdrantEdgeDocumentStore``
  from a stopped server's data dir, or from a copy of a running, idle server's data dir.
* :func:`stable` drops the timing fields of a response, for before/after comparisons.
"""

import hashlib
import json
import math
import random
import re
import shutil
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from support.indexing_support import index_checksum

SAMPLE_DIRECTORY = Path(__file__).resolve().parents[2] / "examples" / "sample_corpus" / "directory.yml"
CANARY_RE = re.compile(r"zq[0-9a-f]{12}")
SOURCE_ID_RE = re.compile(r"\[SourceId:\s*([A-Za-z0-9-]+):(\d+)\]")
INSUFFICIENT = "I don't have enough information in the available documents to answer this question."
# Per-request timings and ids: everything else of a response must be reproducible.
VOLATILE_KEYS = frozenset({"latency_ms", "generation_time_ms", "id", "created", "system_fingerprint", "query_id"})


def new_canary(rng: random.Random) -> str:
    return "zq" + "".join(rng.choice("0123456789abcdef") for _ in range(12))


def canaries_in(value: Any) -> set[str]:
    """Every canary token anywhere in a response (any nesting, any field)."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return set(CANARY_RE.findall(text))


@dataclass
class TestDocument:
    """One indexed test document and the access fields it was indexed with."""

    __test__ = False  # not a pytest test class

    document_id: str
    tenant_id: str
    tags: list[str]
    content: str
    canary: str
    scope: str = "tenant"
    user_id: str | None = None
    project_id: str | None = None
    verified: bool = False
    tainted: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    def body(self) -> dict[str, Any]:
        """The document as a ``POST /index/run`` entry."""
        body: dict[str, Any] = {
            "content": self.content,
            "tenant_id": self.tenant_id,
            "tags": list(self.tags),
            "document_id": self.document_id,
            "document_name": f"name-{self.document_id}",
            "scope": self.scope,
        }
        if self.user_id is not None:
            body["user_id"] = self.user_id
        if self.project_id is not None:
            body["project_id"] = self.project_id
        if self.verified:
            body["meta"] = {"verified": True}
        return body | self.extra


def visible(document: TestDocument, identity: Mapping[str, Any], filters: Mapping[str, Any] | None = None) -> bool:
    """
    The access rule, as the test reads the contract (docs/contract.md "Access rule"): a public document,
    or same tenant, a shared tag and the scope's owner (a project document: its project and its owning
    user; exact string comparisons), narrowed by the identity's query ``scope`` and by
    ``verified_only`` / ``exclude_tainted``.
    """
    filters = filters or {}
    if document.scope not in {"tenant", "user", "project", "public"}:
        return False
    if identity.get("scope") is not None and document.scope != identity["scope"]:
        return False
    if document.scope != "public":
        if document.tenant_id != identity["tenant_id"]:
            return False
        if not set(document.tags) & set(identity["user_tags"]):
            return False
    if document.scope == "user" and document.user_id != identity.get("user_id"):
        return False
    if document.scope == "project" and (
        document.project_id != identity.get("project_id") or document.user_id != identity.get("user_id")
    ):
        return False
    if filters.get("verified_only", False) and not document.verified:
        return False
    if filters.get("exclude_tainted", True) and document.tainted:
        return False
    return True


def normalise_space(text: str) -> str:
    return " ".join(text.split())


def answer_sentences(answer: str) -> list[str]:
    """The sentences of an answer, SourceId markers removed."""
    pieces = []
    for part in SOURCE_ID_RE.split(answer)[::3]:  # split keeps the two groups: every third piece is text
        for sentence in re.split(r"(?<=[.!?])\s+", normalise_space(part)):
            if sentence.strip():
                pieces.append(sentence.strip())
    return pieces


def stable(value: Any) -> Any:
    """A response without its per-request timing and id fields."""
    if isinstance(value, dict):
        return {key: stable(item) for key, item in value.items() if key not in VOLATILE_KEYS}
    if isinstance(value, list):
        return [stable(item) for item in value]
    return value


@dataclass(frozen=True)
class StoreSnapshot:
    """Every point of a store: its count, digests of ids + content + meta and of the vectors, and the points."""

    points: int
    content_digest: str
    vector_digest: str
    documents: tuple  # haystack Documents, in id order

    def chunks_of(self, tenant_id: str, document_id: str) -> dict[int, str]:
        """chunk_index -> content of one document."""
        return {
            int(d.meta["chunk_index"]): d.content
            for d in self.documents
            if d.meta.get("tenant_id") == tenant_id and d.meta.get("document_id") == document_id
        }

    def tenant_digest(self, tenant_id: str) -> str:
        """A digest of one tenant's points: ids, content, meta and dense vectors."""
        rows = [[d.id, d.content, d.meta, d.embedding] for d in self.documents if d.meta.get("tenant_id") == tenant_id]
        return hashlib.sha256(json.dumps(rows, sort_keys=True, default=str).encode()).hexdigest()


def store_snapshot(qdrant_path: Path | str, engine: str = "edge") -> StoreSnapshot:
    """
    Open the shard folder (no server may hold it), read every point, close it again.

    Opening also proves the shard is loadable: after a crash this is where the write-ahead log is replayed.
    ``engine="server-profile"`` reads a local-mode folder of the server profile instead (``support.engines``).
    """
    from components.document_stores.qdrant_edge import QdrantEdgeDocumentStore
    from support.engines import open_local_copy

    if engine == "server-profile":
        store = open_local_copy(Path(qdrant_path))
    else:
        store = QdrantEdgeDocumentStore(path=str(qdrant_path))
    try:
        count, content_digest = index_checksum(store)
        documents = sorted(store.filter_documents(), key=lambda d: d.id)
        assert store.count_documents() == count == len(documents)
    finally:
        store.close()
    vectors = hashlib.sha256()
    for document in documents:
        vectors.update(json.dumps([document.id, document.embedding]).encode())
    return StoreSnapshot(count, content_digest, vectors.hexdigest(), tuple(documents))


def live_snapshot(data_dir: Path) -> StoreSnapshot:
    """
    Snapshot a running server's store without stopping it: copy its shard folder (the server must be
    idle: no request in flight) and open the copy, which replays the copied write-ahead log.
    """
    from support.engines import LOCAL_FOLDER, engine_of

    with tempfile.TemporaryDirectory(prefix="sb-snapshot-") as scratch:
        if engine_of(data_dir) == "server-profile":  # qdrant-client's local mode (support.engines)
            copy = Path(scratch) / LOCAL_FOLDER
            shutil.copytree(Path(data_dir) / LOCAL_FOLDER, copy)
            return store_snapshot(copy, engine="server-profile")
        copy = Path(scratch) / "qdrant"
        shutil.copytree(Path(data_dir) / "qdrant", copy)
        return store_snapshot(copy)


def percentile(values: Iterable[float], q: float) -> float:
    """The q-th percentile (0-100), nearest-rank."""
    ordered = sorted(values)
    if not ordered:
        return 0.0
    rank = max(1, min(len(ordered), math.ceil(q / 100.0 * len(ordered))))
    return ordered[rank - 1]


def pdf_with_compressed_text(characters: int) -> bytes:
    """
    A valid one-page PDF whose Flate-compressed content stream draws about ``characters`` characters
    of text: a few kilobytes on the wire, a long document once extracted (a decompression bomb).
    """
    import zlib

    line = b"BT /F1 12 Tf 72 720 Td (The quick brown fox jumps over the lazy dog again and again) Tj ET\n"
    stream = zlib.compress(line * (characters // 60 + 1), 9)
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    pdf = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(pdf))
        pdf += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(pdf)
    pdf += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    pdf += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    pdf += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(pdf)


def zip_bomb(uncompressed_bytes: int) -> bytes:
    """A zip archive of one file of zeros: tiny compressed, ``uncompressed_bytes`` when extracted."""
    import io
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("bomb.txt", b"0" * uncompressed_bytes)
    return buffer.getvalue()
